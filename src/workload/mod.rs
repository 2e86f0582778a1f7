//! What the virtual users send, as values: generated documents, filters and `$set` updates
//! (`document`), the key space of `_id`s (`keys`), operation kinds and specs (`op`), and the
//! request built from them (`request`).
//!
//! Owns: generating values and proving a profile's documents are ones the server accepts.
//! Never: calls the driver, reads a clock, or knows about groups and stages.

pub mod distribution;
pub mod document;
pub mod command;
pub mod keys;
pub mod lookup;
pub mod op;
pub mod request;
pub mod template;

pub use distribution::{Chooser, KeyDist};
pub use document::{DocGen, Gen, GenError};
pub use keys::KeySpace;
pub use op::{OpKind, OpSpec};
pub use request::{from_id, Request};
pub use template::Template;
