//! What the virtual users send, as values, in layers that import only downward:
//! - `template`: the template language of Extended JSON with genny's `^` generators, and what
//!   a template reads from the run through its `Lookup` (it knows no document generator,
//!   operation or request);
//! - `document`: the collection's document generator (`[document]`), built on templates, with
//!   its filters and fresh `$set` values for the built-in kinds; `keys`: the key space of
//!   `_id`s; `distribution`: how an existing one is drawn;
//! - `lookup`: `^Key` and `^Field` from the group's key space and document;
//! - `command`: the profile's own operations, one type per family of verbs, and the request each
//!   builds (`Built`); the built-in kinds are read as these (`plan::build::operations`);
//! - `op`: a group's operation (one, or steps); `request`: what a user sends next.
//!
//! Owns: generating values and proving a profile's documents are ones the server accepts.
//! Never: calls the driver, reads a clock other than the wall clock of `^Now` (once per
//! operation, `template::now_ms`), or knows about groups and stages.

pub mod command;
pub(crate) mod distribution;
pub(crate) mod document;
pub(crate) mod keys;
pub(crate) mod lookup;
pub(crate) mod op;
pub(crate) mod request;
pub(crate) mod size;
pub(crate) mod template;

pub(crate) use distribution::{Chooser, KeyDist};
pub use document::{DocGen, Gen, GenError};
pub use keys::KeySpace;
pub use op::{OpKind, OpSpec};
pub use request::{from_id, Request};
pub(crate) use template::Template;
