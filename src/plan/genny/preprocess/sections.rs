//! genny's sections: Actors, Clients, OnlyActiveInPhases and LoadConfig (the workload files it
//! loads, with their parameters), and the check that every given parameter was read.

use super::*;

impl Parser {
    /// `Actors`: expanded; each must have a `Name` (genny reads every actor's).
    pub(super) fn actors(&mut self, node: &Value) -> Result<Value> {
        let actors = self.parse(node)?;
        let Value::Sequence(list) = &actors else {
            return Err(self.fail(format!(
                "`Actors` must be a list of actors, not {}",
                brief(&actors)
            )));
        };
        for (i, actor) in list.iter().enumerate() {
            if actor.get("Name").is_none() {
                self.at.push(Seg::Index(i));
                return Err(self.fail(format!(
                    "this actor has no `Name` (genny needs one for every actor): {}",
                    brief(actor)
                )));
            }
        }
        Ok(actors)
    }

    /// `Clients`: expanded, each given `NoPreWarm: false` unless it says, and named in scope.
    pub(super) fn clients(&mut self, node: &Value) -> Result<Value> {
        let mut clients = self.parse(node)?;
        let Value::Mapping(mapping) = &mut clients else {
            return Err(self.fail(format!(
                "`Clients` must be a mapping of pool names to pools, not {}",
                brief(&clients)
            )));
        };
        let mut named = Vec::with_capacity(mapping.len());
        for (name, client) in mapping.iter_mut() {
            let Value::Mapping(client) = client else {
                return Err(self.fail(format!(
                    "the client `{}` must be a mapping (`Type`, `QueryOptions`, ...), not {}",
                    key_text(name),
                    brief(client)
                )));
            };
            if !client.contains_key("NoPreWarm") {
                client.insert("NoPreWarm".into(), Value::Bool(false));
            }
            named.push((
                Value::String(format!("client/{}", pyfmt::py_str(name))),
                Value::Mapping(client.clone()),
            ));
        }
        for (name, client) in named {
            self.insert(name, client, Kind::Client);
        }
        Ok(clients)
    }

    /// `OnlyActiveInPhases: {Active, NopInPhasesUpTo, PhaseConfig}`: phases 0 to
    /// `NopInPhasesUpTo`, `PhaseConfig` in the active ones and `{Nop: true}` in the others.
    pub(super) fn only_active(&mut self, node: &Value) -> Result<Value> {
        let node = self.mapping(
            node,
            "`OnlyActiveInPhases` takes a mapping with `Active`, `NopInPhasesUpTo` and \
             `PhaseConfig`",
        )?;
        let field = |key: &str| {
            node.get(key).ok_or_else(|| {
                self.fail(format!(
                    "`OnlyActiveInPhases` has no `{key}`: it takes `Active: [phase, ...]`, \
                     `NopInPhasesUpTo: last phase` and `PhaseConfig: {{...}}`"
                ))
            })
        };
        let (up_to, active, config) = (
            field("NopInPhasesUpTo")?,
            field("Active")?,
            field("PhaseConfig")?,
        );
        self.at.push(Seg::Key("NopInPhasesUpTo".into()));
        let up_to = self.parse(up_to)?;
        let last = match &up_to {
            Value::Number(n) if n.is_i64() => n.as_i64().unwrap_or(0),
            Value::Number(n) if n.is_u64() => i64::MAX,
            Value::Bool(b) => i64::from(*b),
            other => {
                return Err(self.fail(format!(
                    "must be a whole phase number, not {}",
                    brief(other)
                )))
            }
        };
        if last >= MAX_PHASES {
            return Err(self.fail(format!(
                "{last} phases is more than {MAX_PHASES}: is it the last phase's number?"
            )));
        }
        self.at.pop();
        let mut out = Vec::new();
        if last < 0 {
            return Ok(Value::Sequence(out));
        }
        self.at.push(Seg::Key("Active".into()));
        let active = match self.parse(active)? {
            Value::Sequence(items) => items,
            other => {
                return Err(self.fail(format!(
                    "must be a list of phase numbers, not {}",
                    brief(&other)
                )))
            }
        };
        self.at.pop();
        let mut expanded: Option<Value> = None;
        for phase in 0..=last {
            if active.iter().any(|a| same_number(a, phase)) {
                if expanded.is_none() {
                    self.at.push(Seg::Key("PhaseConfig".into()));
                    expanded = Some(self.parse(config)?);
                    self.at.pop();
                }
                out.push(expanded.clone().unwrap_or(Value::Null));
            } else {
                let mut nop = Mapping::new();
                nop.insert("Nop".into(), Value::Bool(true));
                out.push(Value::Mapping(nop));
            }
        }
        Ok(Value::Sequence(out))
    }

    /// `LoadConfig: {Path, Key, Parameters}`: the file's content (its `Key`), expanded in a
    /// scope with the `Parameters`.
    pub(super) fn load_config(&mut self, node: &Value) -> Result<Value> {
        let node = self.mapping(
            node,
            "`LoadConfig` takes a mapping with `Path` (and `Key`, `Parameters`)",
        )?;
        self.scopes.push(HashMap::new());
        let Some(path) = node.get("Path") else {
            return Err(self.fail(format!(
                "`LoadConfig` has no `Path`: name the file to load, from the workload's \
                 directory {}",
                self.base_dir.display()
            )));
        };
        self.at.push(Seg::Key("Path".into()));
        let path = self.parse(path)?;
        let Value::String(relative) = path else {
            return Err(self.fail(format!(
                "`LoadConfig` `Path` must be a file name, not {}",
                brief(&path)
            )));
        };
        let full = self.base_dir.join(&relative);
        if !full.is_file() {
            return Err(self.fail(format!(
                "`LoadConfig` `Path: {relative}`: there is no file {} (genny reads every \
                 LoadConfig Path from the workload's directory, {}): correct the Path, or \
                 restore the file",
                normalize(&full).display(),
                self.base_dir.display()
            )));
        }
        self.at.pop();
        let loaded_file = normalize(&full);
        let mut loaded = read_yaml(&full).map_err(|e| PreprocessError {
            file: loaded_file.clone(),
            problem: e.problem,
        })?;
        schema_version(&mut loaded).map_err(|problem| PreprocessError {
            file: loaded_file.clone(),
            problem,
        })?;
        for key in node.keys() {
            if !matches!(key.as_str(), Some("Path" | "Key" | "Parameters")) {
                return Err(self.fail(format!(
                    "`LoadConfig` has `{}`, which it does not take: it takes `Path`, `Key` and \
                     `Parameters`",
                    key_text(key)
                )));
            }
        }
        match node.get("Parameters") {
            None | Some(Value::Null) => {}
            Some(Value::Mapping(parameters)) => {
                self.at.push(Seg::Key("Parameters".into()));
                for (key, value) in parameters {
                    self.at.push(Seg::Key(key_text(key)));
                    let value = self.parse(value)?;
                    self.insert(key.clone(), value, Kind::Parameter);
                    self.at.pop();
                }
                self.at.pop();
            }
            Some(other) => {
                return Err(self.fail(format!(
                    "`LoadConfig` `Parameters` must be a mapping of names to values, not {}",
                    brief(other)
                )))
            }
        }
        let mut inside = Vec::new();
        if let Some(key) = node.get("Key") {
            let Some(value) = loaded
                .as_mapping_mut()
                .and_then(|top| top.shift_remove(key))
            else {
                let keys = loaded
                    .as_mapping()
                    .map(|top| top.keys().map(key_text).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default();
                return Err(self.fail(format!(
                    "`LoadConfig` `Key: {}`: {} has no such top-level key (it has: {keys})",
                    brief(key),
                    loaded_file.display()
                )));
            };
            inside.push(Seg::Key(key_text(key)));
            loaded = value;
        }
        let file = std::mem::replace(&mut self.file, loaded_file);
        let at = std::mem::replace(&mut self.at, inside);
        let out = self.parse(&loaded)?;
        self.file = file;
        self.at = at;
        self.scopes.pop();
        Ok(out)
    }

    /// Every `-p` name must be one a `^Parameter` read.
    pub(super) fn check_given(&self) -> Result<()> {
        let mut unread: Vec<&String> = self
            .given
            .keys()
            .filter(|name| !self.read.contains(*name))
            .collect();
        unread.sort();
        let Some(name) = unread.first() else {
            return Ok(());
        };
        let known = if self.read.is_empty() {
            "it has none".to_string()
        } else {
            format!(
                "it has {}",
                self.read.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        };
        Err(PreprocessError {
            file: self.file.clone(),
            problem: format!(
                "`-p {name}`: no `^Parameter` of this workload is named {name} ({known})"
            ),
        })
    }
}

/// A file LoadConfig loads starts with `SchemaVersion: 2018-07-01`, the one genny loads; it is
/// taken out of the file's content.
fn schema_version(loaded: &mut Value) -> std::result::Result<(), String> {
    let version = match loaded.as_mapping_mut() {
        Some(top) => top.shift_remove("SchemaVersion"),
        None => None,
    };
    match version {
        None => Err(
            "no `SchemaVersion` at the top level: a file that LoadConfig loads starts with \
             `SchemaVersion: 2018-07-01`"
                .into(),
        ),
        Some(version) if pyfmt::py_str(&version) != "2018-07-01" => Err(format!(
            "`SchemaVersion: {}`: genny loads only `SchemaVersion: 2018-07-01`",
            brief(&version)
        )),
        Some(_) => Ok(()),
    }
}
