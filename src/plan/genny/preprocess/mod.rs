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

mod keywords;

mod sections;

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
