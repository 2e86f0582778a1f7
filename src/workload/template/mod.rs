//! Templates: values written in MongoDB Extended JSON (relaxed or canonical, as TOML tables or a
//! TOML string of JSON) with genny-style generators (`{ "^RandomInt" = { min = 1, max = 9 } }`)
//! anywhere inside, compiled once from the profile and generated per operation into BSON.
//!
//! Owns: the generator language (names, arguments, their checks with located errors and
//! did-you-mean) and generating values. Never: calls the driver, reads the key space itself (a
//! `Lookup` gives `^Key` and `^Field` their values), or knows about operations and groups.

use mongodb::bson::{Bson, Document};
use rand::RngCore;

use super::document::GenError;

/// A compiled template: a constant, or a tree with generators in it.
#[derive(Debug, Clone)]
pub struct Template {
    node: Node,
}

#[derive(Debug, Clone)]
enum Node {
    Const(Bson),
}

/// What a template needs from the run to generate: an existing `_id` (`^Key`) and fresh values
/// of the collection's document template (`^Field`).
pub trait Lookup {
    /// An existing document's `_id`, drawn by the group's key distribution; None when the
    /// collection has none (or the group has no key space).
    fn key(&mut self, rng: &mut dyn RngCore) -> Option<Bson>;
    /// A fresh value of the collection's document template at the dotted `path`.
    fn field(&mut self, path: &str, rng: &mut dyn RngCore) -> Option<Bson>;
}

/// One operation's generation: the user's random stream, its lookups, the time and its own
/// `^Inc` counters.
pub struct Cx<'a> {
    pub rng: &'a mut dyn RngCore,
    pub lookup: &'a mut dyn Lookup,
    /// Milliseconds since the Unix epoch, read once per operation (`^Now`, relative dates).
    pub now_ms: i64,
    /// The virtual user (0-based) whose operation this is.
    pub user: u32,
    pub state: &'a mut UserState,
}

/// A virtual user's own generator state (its per-user `^Inc` counters).
#[derive(Debug, Default)]
pub struct UserState {}

impl Template {
    /// Compiles a profile value; `key` is its dotted path in the profile (`group[0].find.filter`),
    /// used to name the place of an error. A TOML string is a string literal.
    pub fn compile(value: &toml::Value, key: &str) -> Result<Template, GenError> {
        let _ = (value, key);
        todo!()
    }

    /// Compiles an operation's argument: a TOML table or array as `compile`, a TOML string as
    /// Extended JSON text (a query pasted from mongosh or a log), which may hold generators.
    pub fn compile_arg(value: &toml::Value, key: &str) -> Result<Template, GenError> {
        let _ = (value, key);
        todo!()
    }

    /// The value when the template has no generator in it.
    pub fn constant(&self) -> Option<&Bson> {
        match &self.node {
            Node::Const(b) => Some(b),
        }
    }

    /// Does it draw existing `_id`s (`^Key`)?
    pub fn uses_key(&self) -> bool {
        todo!()
    }

    /// The `^Field` paths it reads, to check against the collection's document template.
    pub fn field_paths(&self) -> Vec<String> {
        todo!()
    }

    /// Generates one value.
    pub fn generate(&self, cx: &mut Cx<'_>) -> Bson {
        let _ = cx;
        todo!()
    }

    /// Generates one value that is a document (a filter, an update's operators, a document to
    /// insert); None when the template makes something else.
    pub fn generate_doc(&self, cx: &mut Cx<'_>) -> Option<Document> {
        match self.generate(cx) {
            Bson::Document(d) => Some(d),
            _ => None,
        }
    }
}
