//! Templates: values written in MongoDB Extended JSON (relaxed or canonical, as TOML tables or a
//! TOML string of JSON) with genny-style generators (`{ "^RandomInt" = { min = 1, max = 9 } }`)
//! anywhere inside, compiled once from the profile and generated per operation into BSON.
//!
//! Owns: the generator language (names, arguments, their checks with located errors and
//! did-you-mean) and generating values. Never: calls the driver, reads the key space itself (a
//! `Lookup` gives `^Key` and `^Field` their values), or knows about operations and groups.
//!
//! The reference of every generator is `docs/workload-generators.md`.

mod compile;
mod convert;
mod dataset;
mod dist;
mod format;
mod generators;
mod time;
mod value;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;

use mongodb::bson::{Bson, Document};
use rand::RngCore;

use generators::Gen;

/// How a template is read: as a mongo-stress profile's (the default) or as a genny workload's.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompileOptions {
    /// genny's own defaults and leniency, for a workload of genny run unconverted: `^Inc` starts
    /// at 1, `^RandomDate` leaves out its `max`, and an argument a generator does not know is
    /// ignored (as genny ignores it) instead of refused.
    pub(crate) genny: bool,
    /// The directory a relative `^ChooseFromDataset` path is looked for from first (the
    /// workload's directory); the current directory is searched after it.
    pub(crate) base_dir: Option<PathBuf>,
}

/// A generator problem: the key path (from `document`) and what is wrong.
#[derive(Debug)]
pub struct GenError {
    pub(crate) key: String,
    pub(crate) problem: String,
    pub(crate) expected: String,
}

/// A compiled template: a constant, or a tree with generators in it.
#[derive(Debug, Clone)]
pub struct Template {
    node: Node,
}

/// A compiled value: constant subtrees are one `Const`, cloned at generation.
#[derive(Debug, Clone)]
enum Node {
    Const(Bson),
    /// A document with at least one generated value, keys in the order written.
    Doc(Vec<(String, Node)>),
    /// An array with at least one generated element.
    Arr(Vec<Node>),
    Gen(Box<Gen>),
}

/// What a template needs from the run to generate: an existing `_id` (`^Key`) and fresh values
/// of the collection's document template (`^Field`).
pub(crate) trait Lookup {
    /// An existing document's `_id`, drawn by the group's key distribution; None when the
    /// collection has none (or the group has no key space).
    fn key(&mut self, rng: &mut dyn RngCore) -> Option<Bson>;
    /// A fresh value of the collection's document template at the dotted `path`.
    fn field(&mut self, path: &str, rng: &mut dyn RngCore) -> Option<Bson>;
    /// The operation's bound value `name` (`{ "^Bind" = "name" }`, from `[group.bind]`); None
    /// when there is none (the default).
    fn bind(&mut self, name: &str) -> Option<Bson> {
        let _ = name;
        None
    }
    /// The value at dotted `path` (the whole result when empty) of the result of the
    /// operation's earlier step `index` (`{ "^Step" = { index = 0, path = "customer" } }`); None
    /// when there is none (the default).
    fn step(&mut self, index: usize, path: &str) -> Option<Bson> {
        let _ = (index, path);
        None
    }
    /// The group's key distribution, for a step on another collection's `_id`s; None when
    /// there is none (the default).
    fn chooser(&mut self) -> Option<&mut super::distribution::Chooser> {
        None
    }
    /// Does the collection have a document for `^Key` to draw (true unless known to be empty)?
    fn has_key(&self) -> bool {
        true
    }
}

/// Milliseconds since the Unix epoch now (`^Now`'s and relative dates' time).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A `Lookup` with nothing to give: every `^Key`, `^Field`, `^Bind` and `^Step` is null.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NoLookup;

impl Lookup for NoLookup {
    fn key(&mut self, _rng: &mut dyn RngCore) -> Option<Bson> {
        None
    }
    fn field(&mut self, _path: &str, _rng: &mut dyn RngCore) -> Option<Bson> {
        None
    }
}

/// One operation's generation: the user's random stream, its lookups, the time and its own
/// `^Inc` counters.
pub(crate) struct Cx<'a> {
    pub(crate) rng: &'a mut dyn RngCore,
    pub(crate) lookup: &'a mut dyn Lookup,
    /// Milliseconds since the Unix epoch, read once per operation (`^Now`, relative dates).
    pub(crate) now_ms: i64,
    /// The virtual user (0-based) whose operation this is.
    pub(crate) user: u32,
    pub(crate) state: &'a mut UserState,
}

/// A virtual user's own generator state: what each stateful generator (by its compile-time id)
/// has given this user (`^Inc` counters, `^Cycle`'s values, `^Repeat`'s held value, ...), and the
/// user's actor number (`^ActorId`). genny keeps this state per actor thread; here each virtual
/// user has its own.
#[derive(Debug, Default, Clone)]
pub(crate) struct UserState {
    slots: HashMap<usize, generators::Slot>,
    actor: Option<i64>,
}

thread_local! {
    /// The `_id` of the document being made, while the key space's document is filled (`^Id`):
    /// kept beside the user's state, not in it, so an idle user stays as small as it was (the
    /// fill never awaits, so the thread is the document's).
    static OWN_ID: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `id` as the `_id` `^Id` gives, then puts back the one before.
pub(crate) fn with_own_id<R>(id: i64, f: impl FnOnce() -> R) -> R {
    let held = OWN_ID.with(|c| c.replace(Some(id)));
    let out = f();
    OWN_ID.with(|c| c.set(held));
    out
}

/// The `_id` of the document being made, if one is (`^Id`).
pub(crate) fn own_id() -> Option<i64> {
    OWN_ID.with(std::cell::Cell::get)
}

impl UserState {
    /// A user whose `^ActorId` (and `^Inc`'s and `^IncDate`'s `multiplier`) is `actor`: genny's
    /// actor id, from 1 and unique across every thread of the workload. Without it, a user's actor
    /// number is its number in its group (from 0).
    #[cfg(test)]
    pub(crate) fn with_actor(actor: i64) -> UserState {
        UserState {
            slots: HashMap::new(),
            actor: Some(actor),
        }
    }

    /// The user's actor number: the one it was made with, else `user` (its number in its group).
    fn actor(&self, user: u32) -> i64 {
        self.actor.unwrap_or(i64::from(user))
    }
}

thread_local! {
    /// The options `compile` reads: a genny workload's while its plan is built (`with_options`).
    static IN_EFFECT: std::cell::RefCell<CompileOptions> = Default::default();
}

/// Runs `f` with `options` as the ones `Template::compile` reads (the build of a genny
/// workload's plan), then puts the previous ones back.
pub(crate) fn with_options<R>(options: CompileOptions, f: impl FnOnce() -> R) -> R {
    let before = IN_EFFECT.with(|o| o.replace(options));
    let out = f();
    IN_EFFECT.with(|o| o.replace(before));
    out
}

impl Template {
    /// Compiles a profile value; `key` is its dotted path in the profile (`group[0].find.filter`),
    /// used to name the place of an error. A TOML string is a string literal.
    pub(crate) fn compile(value: &toml::Value, key: &str) -> Result<Template, GenError> {
        IN_EFFECT.with(|o| Template::compile_with(value, key, &o.borrow()))
    }

    /// Compiles a value as `compile` does, read as `options` say (a genny workload's, a base
    /// directory for datasets).
    pub(crate) fn compile_with(
        value: &toml::Value,
        key: &str,
        options: &CompileOptions,
    ) -> Result<Template, GenError> {
        let v = value::V::from_toml(value, key)?;
        Ok(Template {
            node: compile::node(&v, key, options)?,
        })
    }

    /// Compiles an operation's argument: a TOML table or array as `compile`, a TOML string as
    /// Extended JSON text (a query pasted from mongosh or a log), which may hold generators.
    pub(crate) fn compile_arg(value: &toml::Value, key: &str) -> Result<Template, GenError> {
        match value {
            toml::Value::String(s) => Template::compile_json(s, key),
            other => Template::compile(other, key),
        }
    }

    /// Compiles Extended JSON text (canonical or relaxed), which may hold generators.
    pub(crate) fn compile_json(text: &str, key: &str) -> Result<Template, GenError> {
        let json: serde_json::Value = serde_json::from_str(text).map_err(|e| GenError {
            key: key.to_string(),
            problem: format!("the string is not valid JSON: {e}"),
            expected: r#"Extended JSON text such as '{"status": "open", "n": {"$gte": 5}}', or a TOML table"#
                .into(),
        })?;
        Ok(Template {
            node: IN_EFFECT
                .with(|o| compile::node(&value::V::from_json(json), key, &o.borrow()))?,
        })
    }

    /// A constant template (no generator in it).
    pub fn from_bson(value: Bson) -> Template {
        Template {
            node: Node::Const(value),
        }
    }

    /// `{ _id: <an existing _id> }`, or with `from`, `{ _id: { $gte: <an existing _id> } }`.
    pub(crate) fn by_key(from: bool) -> Template {
        let key = Node::Gen(Box::new(Gen::Key));
        let id = if from {
            Node::Doc(vec![("$gte".to_string(), key)])
        } else {
            key
        };
        Template {
            node: Node::Doc(vec![("_id".to_string(), id)]),
        }
    }

    /// The value when the template has no generator in it.
    pub(crate) fn constant(&self) -> Option<&Bson> {
        match &self.node {
            Node::Const(b) => Some(b),
            _ => None,
        }
    }

    /// Does it draw existing `_id`s (`^Key`)?
    pub(crate) fn uses_key(&self) -> bool {
        let mut found = false;
        self.node.visit(&mut |n| {
            if let Node::Gen(g) = n {
                found |= matches!(**g, Gen::Key);
            }
        });
        found
    }

    /// The `^Field` paths it reads, to check against the collection's document template (each
    /// once, in the order written).
    pub(crate) fn field_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        self.node.visit(&mut |n| {
            if let Node::Gen(g) = n {
                if let Gen::Field(p) = &**g {
                    if !paths.contains(p) {
                        paths.push(p.clone());
                    }
                }
            }
        });
        paths
    }

    /// The `^Bind` names it reads (each once, in the order written).
    pub(crate) fn bind_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        self.node.visit(&mut |n| {
            if let Node::Gen(g) = n {
                if let Gen::Bind(name) = &**g {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
            }
        });
        names
    }

    /// The `^Step` references it reads: (step index, path), each once, in the order written.
    pub(crate) fn step_refs(&self) -> Vec<(usize, String)> {
        let mut refs: Vec<(usize, String)> = Vec::new();
        self.node.visit(&mut |n| {
            if let Node::Gen(g) = n {
                if let Gen::Step(i, p) = &**g {
                    if !refs.iter().any(|(j, q)| j == i && q == p) {
                        refs.push((*i, p.clone()));
                    }
                }
            }
        });
        refs
    }

    /// Does every value it generates be a document (a filter, an update, a document to insert)?
    /// False when it may make something else (or when a `^Key`, `^Field`, `^Bind` or `^Step`
    /// decides).
    pub fn makes_document(&self) -> bool {
        self.node.types() == generators::ty::DOC
    }

    /// Generates one value.
    pub(crate) fn generate(&self, cx: &mut Cx<'_>) -> Bson {
        self.node.generate(cx)
    }

    /// How many values a `^Choose` written as the whole template chooses among; None for any
    /// other template.
    pub(crate) fn choices(&self) -> Option<usize> {
        match &self.node {
            Node::Gen(g) => match &**g {
                Gen::Choose(c) => Some(c.from.len()),
                _ => None,
            },
            _ => None,
        }
    }

    /// A `^Choose` written as the whole template: the index it drew and the value, with the
    /// same draws as `generate`; None for any other template.
    pub(crate) fn generate_choice(&self, cx: &mut Cx<'_>) -> Option<(usize, Bson)> {
        match &self.node {
            Node::Gen(g) => match &**g {
                Gen::Choose(c) => {
                    let i = generators::choose_index(c, cx);
                    Some((i, c.from[i].generate(cx)))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Generates one value that is a document (a filter, an update's operators, a document to
    /// insert); None when the template makes something else.
    pub(crate) fn generate_doc(&self, cx: &mut Cx<'_>) -> Option<Document> {
        match self.generate(cx) {
            Bson::Document(d) => Some(d),
            _ => None,
        }
    }
}

impl Node {
    fn generate(&self, cx: &mut Cx<'_>) -> Bson {
        match self {
            Node::Const(b) => b.clone(),
            Node::Doc(fields) => {
                let mut doc = Document::new();
                for (k, n) in fields {
                    doc.insert(k.clone(), n.generate(cx));
                }
                Bson::Document(doc)
            }
            Node::Arr(items) => Bson::Array(items.iter().map(|n| n.generate(cx)).collect()),
            Node::Gen(g) => g.generate(cx),
        }
    }

    /// Calls `f` on this node and every node inside it.
    fn visit(&self, f: &mut dyn FnMut(&Node)) {
        f(self);
        match self {
            Node::Const(_) => {}
            Node::Doc(fields) => fields.iter().for_each(|(_, n)| n.visit(f)),
            Node::Arr(items) => items.iter().for_each(|n| n.visit(f)),
            Node::Gen(g) => g.children().into_iter().for_each(|n| n.visit(f)),
        }
    }

    /// The BSON types it may make (a `generators::ty` mask).
    fn types(&self) -> u16 {
        match self {
            Node::Const(b) => generators::ty::of(b),
            Node::Doc(_) => generators::ty::DOC,
            Node::Arr(_) => generators::ty::ARRAY,
            Node::Gen(g) => g.types(),
        }
    }
}
