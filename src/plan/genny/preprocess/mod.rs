//! genny's preprocessor (its `src/lamplib/src/genny/tasks/preprocess.py`), in Rust: a workload
//! file in, the workload genny's C++ would read out, as one YAML value.
//!
//! The steps are genny's: the workload's YAML (anchors, aliases, `<<` merges) deep-merged onto
//! genny's default `Clients`, then each override file (`-o`) deep-merged onto that, then one walk
//! over the result that replaces `LoadConfig`, `^Parameter`, `ActorTemplates` and
//! `ActorFromTemplate`, `OnlyActiveInPhases`, `^NumExpr`, `^FlattenOnce`,
//! `^PreprocessorFormatString` and `^ClientURI`, keeping everything else (runtime generators such
//! as `^RandomInt` included) as written. Where genny's rules are surprising they are kept:
//!
//! - A `LoadConfig` `Path` is read from the directory of the workload that was run, even inside a
//!   file that was itself loaded (genny's `_phase_config_path` never changes).
//! - Names live in scopes: the workload's, one per `LoadConfig` (its `Parameters`) and one per
//!   `ActorFromTemplate` (its `TemplateParameters`); a `^Parameter` takes the value of the
//!   innermost scope that names it, else its `Default`. `ActorTemplates` are names too, in the
//!   scope where they are read, and a template's `Config` is expanded only where it is used.
//! - Within one mapping the keys are read in order: `^Parameter` (and the other `^` keys,
//!   `ActorFromTemplate`, `OnlyActiveInPhases`) replace what came before them, later keys are
//!   added to what they produced; a `LoadConfig`'s mapping adds only keys not already there.
//!
//! Beyond genny: `-p NAME=VALUE` sets that `^Parameter` everywhere, over every scope and
//! `Default` (a name no `^Parameter` reads is an error); a `^Parameter` needs a `Default` only
//! when nothing gives it a value; `TemplateParameters` may be left out; a `withArgs` that is one
//! value is one argument. genny's internal `PhaseTimingRecorder` actor is not added, and
//! `Clients` get no `URI` (the run's `--uri` is the default): a `^ClientURI` naming a client
//! without one is left as it is, for the caller to put the run's URI in.
//!
//! Owns: genny's preprocessing rules, from files to one value. Never: prints, or reads anything
//! but the workload, the files it loads, and the override files.

mod numexpr;
mod pyfmt;
mod yaml;

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde_yaml::{Mapping, Value};

use numexpr::Num;
use yaml::brief;

/// What the preprocessor could not do: the file, where in it, and what.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub(crate) struct PreprocessError {
    pub(crate) file: PathBuf,
    pub(crate) problem: String,
}

/// The workload at `path`, preprocessed: `overrides` (genny's `-o`) deep-merged onto it first,
/// then `parameters` (`-p NAME=VALUE`) set over its own.
pub(crate) fn preprocess(
    path: &Path,
    parameters: &[(String, String)],
    overrides: &[PathBuf],
) -> Result<serde_yaml::Value, PreprocessError> {
    let workload = read_top(path, "workload")?;
    // genny: OmegaConf.unsafe_merge(DEFAULT_CONFIG, workload), then each override file.
    let mut conf = default_config();
    yaml::deep_merge(&mut conf, workload);
    for file in overrides {
        let overriding = read_top(file, "override file")?;
        yaml::deep_merge(&mut conf, overriding);
    }
    let given = parameters
        .iter()
        .map(|(name, text)| (name.clone(), parameter_value(text)))
        .collect();
    let base_dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut parser = Parser {
        scopes: vec![HashMap::new()],
        base_dir,
        given,
        read: BTreeSet::new(),
        file: path.to_path_buf(),
        at: Vec::new(),
        depth: 0,
    };
    let out = parser.parse(&conf)?;
    parser.check_given()?;
    Ok(out)
}

/// genny's `DEFAULT_CONFIG`, which every workload is merged onto.
fn default_config() -> Value {
    let client = |kind: &str| {
        let mut query_options = Mapping::new();
        query_options.insert("maxPoolSize".into(), 100.into());
        let mut client = Mapping::new();
        client.insert("Type".into(), kind.into());
        client.insert("QueryOptions".into(), Value::Mapping(query_options));
        Value::Mapping(client)
    };
    let mut clients = Mapping::new();
    clients.insert("Default".into(), client("mongo"));
    clients.insert("Stream".into(), client("mongostream"));
    let mut top = Mapping::new();
    top.insert("Clients".into(), Value::Mapping(clients));
    Value::Mapping(top)
}

/// The workload or an override file: a mapping (an empty file is an empty one).
fn read_top(path: &Path, what: &str) -> Result<Value, PreprocessError> {
    let error = |problem: String| PreprocessError {
        file: path.to_path_buf(),
        problem,
    };
    let value = read_yaml(path)?;
    match value {
        Value::Null => Ok(Value::Mapping(Mapping::new())),
        Value::Mapping(_) => Ok(value),
        other => Err(error(format!(
            "the {what} is {}, not a mapping: a genny workload is a mapping with `Actors` (or \
             `LoadConfig`)",
            kind_of(&other)
        ))),
    }
}

fn read_yaml(path: &Path) -> Result<Value, PreprocessError> {
    let error = |problem: String| PreprocessError {
        file: path.to_path_buf(),
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read it: {e}")))?;
    yaml::parse(&text).map_err(error)
}

/// A `-p` value: a YAML scalar (`1e5` a number, `true` a bool, `perf` a string); text that is
/// not YAML is a string.
fn parameter_value(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::String(text.to_string());
    }
    yaml::parse(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// What a name stands for in a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Parameter,
    ActorTemplate,
    Client,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Parameter => "parameter",
            Kind::ActorTemplate => "actor template",
            Kind::Client => "client",
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    value: Value,
    kind: Kind,
    /// Where the value was written (a template's `Config` is expanded from there).
    file: PathBuf,
    at: Vec<Seg>,
}

/// One step of a location inside a file.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

struct Location<'a>(&'a [Seg]);

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(key) if i == 0 => write!(f, "{key}")?,
                Seg::Key(key) => write!(f, ".{key}")?,
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// How deep expansions may nest: far beyond any workload, well within a thread's stack.
const MAX_DEPTH: usize = 256;

/// The most phases `OnlyActiveInPhases` writes out.
const MAX_PHASES: i64 = 100_000;

struct Parser {
    /// Innermost last: genny's `_Context`.
    scopes: Vec<HashMap<Value, Entry>>,
    /// The directory every `LoadConfig` `Path` is read from: the workload's.
    base_dir: PathBuf,
    /// `-p NAME=VALUE`.
    given: HashMap<String, Value>,
    /// The names `^Parameter`s asked for.
    read: BTreeSet<String>,
    /// The file being read, and where in it.
    file: PathBuf,
    at: Vec<Seg>,
    depth: usize,
}

type Result<T, E = PreprocessError> = std::result::Result<T, E>;

impl Parser {
    fn fail(&self, problem: impl fmt::Display) -> PreprocessError {
        let problem = if self.at.is_empty() {
            problem.to_string()
        } else {
            format!("{}: {problem}", Location(&self.at))
        };
        PreprocessError {
            file: self.file.clone(),
            problem,
        }
    }

    /// genny's `_recursive_parse`.
    fn parse(&mut self, node: &Value) -> Result<Value> {
        if self.depth >= MAX_DEPTH {
            return Err(self.fail(format!(
                "expansions nest deeper than {MAX_DEPTH} levels: an ActorTemplate or a \
                 LoadConfig that includes itself?"
            )));
        }
        self.depth += 1;
        let out = match node {
            Value::Mapping(mapping) => {
                let mut out = Value::Mapping(Mapping::new());
                for (key, value) in mapping {
                    self.at.push(Seg::Key(key_text(key)));
                    out = self.key(key, value, out)?;
                    self.at.pop();
                }
                out
            }
            Value::Sequence(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.at.push(Seg::Index(i));
                    out.push(self.parse(item)?);
                    self.at.pop();
                }
                Value::Sequence(out)
            }
            scalar => scalar.clone(),
        };
        self.depth -= 1;
        Ok(out)
    }

    /// genny's `_preprocess`: one key of a mapping, onto what the keys before it made.
    fn key(&mut self, key: &Value, value: &Value, out: Value) -> Result<Value> {
        match key.as_str() {
            Some("^Parameter") => self.parameter(value),
            Some("^NumExpr") => self.numexpr(value),
            Some("^FlattenOnce") => self.flatten_once(value),
            Some("^PreprocessorFormatString") => self.format_string(value),
            Some("^ClientURI") => self.client_uri(value),
            Some("ActorTemplates") => {
                self.templates(value)?;
                Ok(out)
            }
            Some("ActorFromTemplate") => self.expand_template(value),
            Some("Actors") => {
                let actors = self.actors(value)?;
                self.add(out, key, actors)
            }
            Some("Clients") => {
                let clients = self.clients(value)?;
                self.add(out, key, clients)
            }
            Some("OnlyActiveInPhases") => self.only_active(value),
            Some("LoadConfig") => match self.load_config(value)? {
                Value::Mapping(loaded) => {
                    let mut out = out;
                    for (key, value) in loaded {
                        match &mut out {
                            Value::Mapping(mapping) => {
                                if !mapping.contains_key(&key) {
                                    mapping.insert(key, value);
                                }
                            }
                            other => return Err(self.replaced(other, &key)),
                        }
                    }
                    Ok(out)
                }
                other => Ok(other),
            },
            _ => {
                let value = self.parse(value)?;
                self.add(out, key, value)
            }
        }
    }

    /// `out[key] = value`, when `out` is still a mapping.
    fn add(&self, mut out: Value, key: &Value, value: Value) -> Result<Value> {
        match &mut out {
            Value::Mapping(mapping) => {
                mapping.insert(key.clone(), value);
                Ok(out)
            }
            other => Err(self.replaced(other, key)),
        }
    }

    fn replaced(&self, out: &Value, key: &Value) -> PreprocessError {
        self.fail(format!(
            "`{}` follows a key that replaced this mapping with {} (a `^Parameter`, `^NumExpr`, \
             `ActorFromTemplate`, `OnlyActiveInPhases` or `LoadConfig` of something not a \
             mapping): move `{}` before it, or into its own mapping",
            key_text(key),
            brief(out),
            key_text(key)
        ))
    }

    /// The entry for `name` in the innermost scope that has one, which must be of `kind`.
    fn lookup(&self, name: &Value, kind: Kind) -> Result<Option<Entry>> {
        for scope in self.scopes.iter().rev() {
            if let Some(entry) = scope.get(name) {
                if entry.kind != kind {
                    return Err(self.fail(format!(
                        "`{}` names {} here, not {}: rename one of them",
                        brief(name),
                        with_article(entry.kind.name()),
                        with_article(kind.name())
                    )));
                }
                return Ok(Some(entry.clone()));
            }
        }
        Ok(None)
    }

    fn insert(&mut self, name: Value, value: Value, kind: Kind) {
        let entry = Entry {
            value,
            kind,
            file: self.file.clone(),
            at: self.at.clone(),
        };
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name, entry);
        }
    }

    fn names_of(&self, kind: Kind) -> String {
        let names: BTreeSet<String> = self
            .scopes
            .iter()
            .flat_map(|scope| scope.iter())
            .filter(|(_, entry)| entry.kind == kind)
            .map(|(name, _)| brief(name))
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.into_iter().collect::<Vec<_>>().join(", ")
        }
    }

    fn mapping<'v>(&self, value: &'v Value, what: &str) -> Result<&'v Mapping> {
        value
            .as_mapping()
            .ok_or_else(|| self.fail(format!("{what}, not {}", brief(value))))
    }

    /// `^Parameter: {Name, Default}`: `-p`, else the innermost scope's value, else `Default`.
    fn parameter(&mut self, node: &Value) -> Result<Value> {
        let node = self.mapping(
            node,
            "`^Parameter` takes a mapping with `Name` and `Default`",
        )?;
        let Some(name) = node.get("Name") else {
            return Err(self.fail(format!(
                "`^Parameter` {} has no `Name`: write `{{^Parameter: {{Name: ..., Default: ...}}}}`",
                brief(&Value::Mapping(node.clone()))
            )));
        };
        if let Some(text) = name.as_str() {
            self.read.insert(text.to_string());
            if let Some(value) = self.given.get(text).cloned() {
                return self.parse(&value);
            }
        }
        if let Some(entry) = self.lookup(name, Kind::Parameter)? {
            // genny: a parameter set to null falls back to the Default.
            if !entry.value.is_null() {
                return self.parse(&entry.value);
            }
        }
        match node.get("Default") {
            Some(default) => {
                self.at.push(Seg::Key("Default".into()));
                let value = self.parse(default)?;
                self.at.pop();
                Ok(value)
            }
            None => Err(self.fail(format!(
                "`^Parameter` `{name}` has no `Default` and nothing gives it a value: add \
                 `Default:` beside its `Name`, or give it with `-p {name}=VALUE`",
                name = brief(name)
            ))),
        }
    }

    /// `^NumExpr: {withExpression, andValues}`.
    fn numexpr(&mut self, node: &Value) -> Result<Value> {
        let node = self.mapping(
            node,
            "`^NumExpr` takes a mapping with `withExpression` (and `andValues`)",
        )?;
        let expression = match node.get("withExpression") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => {
                return Err(self.fail(format!(
                    "`^NumExpr` `withExpression` must be a string, not {}",
                    brief(other)
                )))
            }
            None => {
                return Err(self.fail(
                    "`^NumExpr` has no `withExpression`: write `{^NumExpr: {withExpression: \
                     \"a * b\", andValues: {a: 1, b: 2}}}`",
                ))
            }
        };
        let mut variables = HashMap::new();
        if let Some(values) = node.get("andValues") {
            self.at.push(Seg::Key("andValues".into()));
            let values = self.parse(values)?;
            let Value::Mapping(values) = values else {
                return Err(self.fail(format!(
                    "`andValues` must be a mapping of names to numbers, not {}",
                    brief(&values)
                )));
            };
            for (name, value) in &values {
                let number = match value {
                    Value::Number(n) => match n.as_i64() {
                        Some(i) => Num::Int(i),
                        None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
                    },
                    other => {
                        return Err(self.fail(format!(
                            "`{}` is {}: `^NumExpr` takes numbers only",
                            key_text(name),
                            brief(other)
                        )))
                    }
                };
                variables.insert(key_text(name), number);
            }
            self.at.pop();
        }
        match numexpr::evaluate(&expression, &variables) {
            Ok(Num::Int(i)) => Ok(Value::from(i)),
            Ok(Num::Float(f)) => Ok(Value::from(f)),
            Ok(Num::Bool(b)) => Ok(Value::Bool(b)),
            Err(problem) => Err(self.fail(format!("`^NumExpr` `{expression}`: {problem}"))),
        }
    }

    /// `^FlattenOnce: [...]`: items that are lists give their items.
    fn flatten_once(&mut self, node: &Value) -> Result<Value> {
        let parsed = self.parse(node)?;
        let items = match parsed {
            Value::Sequence(items) => items,
            // Python iterates a string by character and a dict by key.
            Value::String(text) => text.chars().map(|c| Value::String(c.into())).collect(),
            Value::Mapping(mapping) => mapping.into_keys().collect(),
            other => {
                return Err(self.fail(format!(
                    "`^FlattenOnce` takes a list, not {}",
                    brief(&other)
                )))
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::Sequence(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        Ok(Value::Sequence(out))
    }

    /// `^PreprocessorFormatString: {format, withArgs}`: Python's `format % tuple(withArgs)`.
    fn format_string(&mut self, node: &Value) -> Result<Value> {
        let node = self.mapping(
            node,
            "`^PreprocessorFormatString` takes a mapping with `format` (and `withArgs`)",
        )?;
        let format = match node.get("format") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => {
                return Err(self.fail(format!(
                    "`^PreprocessorFormatString` `format` must be a string, not {}",
                    brief(other)
                )))
            }
            None => {
                return Err(self.fail(
                    "`^PreprocessorFormatString` has no `format`: write `{format: \"%s-%d\", \
                     withArgs: [a, 1]}`",
                ))
            }
        };
        let args = match node.get("withArgs") {
            None => Vec::new(),
            Some(args) => {
                self.at.push(Seg::Key("withArgs".into()));
                let args = self.parse(args)?;
                self.at.pop();
                match args {
                    Value::Sequence(items) => items,
                    Value::Mapping(mapping) => mapping.into_keys().collect(),
                    one => vec![one],
                }
            }
        };
        pyfmt::percent_format(&format, &args)
            .map(Value::String)
            .map_err(|problem| {
                self.fail(format!("`^PreprocessorFormatString` `{format}`: {problem}"))
            })
    }

    /// `^ClientURI: {Name}`: the named client's `URI`; without one, left for the run's URI.
    fn client_uri(&mut self, node: &Value) -> Result<Value> {
        let mapping = self.mapping(node, "`^ClientURI` takes a mapping with `Name`")?;
        let name = match mapping.get("Name") {
            Some(name) if !is_falsy(name) => name.clone(),
            _ => {
                return Err(self.fail(
                    "`^ClientURI` has no `Name`: name one of the workload's `Clients` \
                     (`{^ClientURI: {Name: Default}}`)",
                ))
            }
        };
        let key = Value::String(format!("client/{}", pyfmt::py_str(&name)));
        let Some(client) = self.lookup(&key, Kind::Client)? else {
            let clients = self.names_of(Kind::Client).replace("client/", "");
            return Err(self.fail(format!(
                "`^ClientURI` names the client `{}`, which `Clients` does not define (it has: \
                 {clients})",
                brief(&name)
            )));
        };
        match client.value.get("URI") {
            Some(uri) if !is_falsy(uri) => Ok(uri.clone()),
            _ => {
                let mut unchanged = Mapping::new();
                unchanged.insert("^ClientURI".into(), node.clone());
                Ok(Value::Mapping(unchanged))
            }
        }
    }

    /// `ActorTemplates: [{TemplateName, Config}]`: names in the current scope, not output.
    fn templates(&mut self, node: &Value) -> Result<()> {
        let Value::Sequence(templates) = node else {
            return Err(self.fail(format!(
                "`ActorTemplates` must be a list of `{{TemplateName, Config}}`, not {}",
                brief(node)
            )));
        };
        for (i, template) in templates.iter().enumerate() {
            self.at.push(Seg::Index(i));
            let (Some(name), Some(config)) = (template.get("TemplateName"), template.get("Config"))
            else {
                return Err(self.fail(format!(
                    "an actor template needs `TemplateName` and `Config`, and this one is {}",
                    brief(template)
                )));
            };
            self.at.push(Seg::Key("Config".into()));
            self.insert(name.clone(), config.clone(), Kind::ActorTemplate);
            self.at.pop();
            self.at.pop();
        }
        Ok(())
    }

    /// `ActorFromTemplate: {TemplateName, TemplateParameters}`: the template's `Config`, expanded
    /// in a scope of its own with the parameters.
    fn expand_template(&mut self, node: &Value) -> Result<Value> {
        let node = self.mapping(
            node,
            "`ActorFromTemplate` takes a mapping with `TemplateName` and `TemplateParameters`",
        )?;
        let Some(name) = node.get("TemplateName") else {
            return Err(self.fail(format!(
                "`ActorFromTemplate` has no `TemplateName`: name one of the workload's \
                 ActorTemplates ({})",
                self.names_of(Kind::ActorTemplate)
            )));
        };
        self.scopes.push(HashMap::new());
        self.at.push(Seg::Key("TemplateName".into()));
        let name = self.parse(name)?;
        self.at.pop();
        let Some(template) = self.lookup(&name, Kind::ActorTemplate)? else {
            return Err(self.fail(format!(
                "no actor template named `{}`: the workload's ActorTemplates are {}",
                brief(&name),
                self.names_of(Kind::ActorTemplate)
            )));
        };
        match node.get("TemplateParameters") {
            None | Some(Value::Null) => {}
            Some(Value::Mapping(parameters)) => {
                self.at.push(Seg::Key("TemplateParameters".into()));
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
                    "`TemplateParameters` must be a mapping of parameter names to values, not {}",
                    brief(other)
                )))
            }
        }
        // The Config is expanded where it was written.
        let file = std::mem::replace(&mut self.file, template.file);
        let at = std::mem::replace(&mut self.at, template.at);
        let actor = self.parse(&template.value)?;
        self.file = file;
        self.at = at;
        self.scopes.pop();
        Ok(actor)
    }

    /// `Actors`: expanded; each must have a `Name` (genny reads every actor's).
    fn actors(&mut self, node: &Value) -> Result<Value> {
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
    fn clients(&mut self, node: &Value) -> Result<Value> {
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
    fn only_active(&mut self, node: &Value) -> Result<Value> {
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
    fn load_config(&mut self, node: &Value) -> Result<Value> {
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
        let at_file = |problem: String| PreprocessError {
            file: loaded_file.clone(),
            problem,
        };
        let version = match loaded.as_mapping_mut() {
            Some(top) => top.shift_remove("SchemaVersion"),
            None => None,
        };
        match version {
            None => {
                return Err(at_file(
                    "no `SchemaVersion` at the top level: a file that LoadConfig loads starts \
                     with `SchemaVersion: 2018-07-01`"
                        .into(),
                ))
            }
            Some(version) if pyfmt::py_str(&version) != "2018-07-01" => {
                return Err(at_file(format!(
                    "`SchemaVersion: {}`: genny loads only `SchemaVersion: 2018-07-01`",
                    brief(&version)
                )))
            }
            Some(_) => {}
        }
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
    fn check_given(&self) -> Result<()> {
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

/// A mapping key as text, for a location or a message.
fn key_text(key: &Value) -> String {
    match key {
        Value::String(text) => text.clone(),
        other => brief(other),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn with_article(noun: &str) -> String {
    if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {noun}")
    } else {
        format!("a {noun}")
    }
}

/// Python's truth of a value: `None`, `False`, `0`, `""`, `[]`, `{}` are false.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Sequence(items) => items.is_empty(),
        Value::Mapping(mapping) => mapping.is_empty(),
        Value::Tagged(_) => false,
    }
}

/// Python's `value == phase` for a phase number.
fn same_number(value: &Value, phase: i64) -> bool {
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(i) => i == phase,
            #[allow(clippy::cast_precision_loss)]
            None => n.as_f64() == Some(phase as f64),
        },
        Value::Bool(b) => i64::from(*b) == phase,
        _ => false,
    }
}

/// `path` with `.` and `a/..` taken out, for a message.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let at_root = matches!(out.components().next_back(), Some(Component::RootDir));
                let climbed = matches!(
                    out.components().next_back(),
                    None | Some(Component::ParentDir)
                );
                if climbed {
                    out.push("..");
                } else if !at_root {
                    out.pop();
                }
            }
            other => out.push(other),
        }
    }
    out
}
