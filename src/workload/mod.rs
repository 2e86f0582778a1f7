//! What the virtual users send, as values: generated documents, filters and `$set` updates
//! (`document`), the key space of `_id`s (`keys`), the built-in kinds' names and a group's
//! operation (`op`: the built-in kinds are read as the profile's own operations), the request
//! built from it (`request`); the profile's own operations: the template language of Extended
//! JSON with genny's `^` generators (`template`), each driver operation with its templates and
//! options (`command`), and what templates read from the run (`lookup`: `^Key`, `^Field`).
//!
//! Owns: generating values and proving a profile's documents are ones the server accepts.
//! Never: calls the driver, reads a clock other than the wall clock of `^Now` (once per
//! operation, `lookup::now_ms`), or knows about groups and stages.

// The numeric casts of this module that narrow a value or change its sign are not yet
// reviewed one by one (issue 50): each is to become a checked conversion, or an `allow`
// where it is with its reason, as in `ops`, `metrics` and `executor`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "not yet reviewed site by site"
)]

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
