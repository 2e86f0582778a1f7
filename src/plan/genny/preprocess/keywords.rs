//! genny's keywords: ^Parameter, ^NumExpr, ^FlattenOnce, ^FormatString, ^ClientURI, and
//! templates (ActorTemplates and their instances).

use super::*;

impl Parser {
    /// `^Parameter: {Name, Default}`: `-p`, else the innermost scope's value, else `Default`.
    pub(super) fn parameter(&mut self, node: &Value) -> Result<Value> {
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
    pub(super) fn numexpr(&mut self, node: &Value) -> Result<Value> {
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
    pub(super) fn flatten_once(&mut self, node: &Value) -> Result<Value> {
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
    pub(super) fn format_string(&mut self, node: &Value) -> Result<Value> {
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
    pub(super) fn client_uri(&mut self, node: &Value) -> Result<Value> {
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
    pub(super) fn templates(&mut self, node: &Value) -> Result<()> {
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
    pub(super) fn expand_template(&mut self, node: &Value) -> Result<Value> {
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
}
