//! The vocabulary every stage speaks: row labels (`Label`), operation kinds and names
//! (`OpKind`, `OpName`), error classes (`ErrorClass`), the server's error codes (`ServerCode`:
//! names, and which say the server could not serve), metric kinds (`MetricKind`), what a change sets
//! (`Setting`) and the list of verbs (`verbs!`).
//!
//! Owns: these names, their one written form and their parsing. Never: imports anything of the
//! crate (it is the bottom of the module order, `tests/fast/module_graph.rs`), measures, or
//! judges.

pub mod error_class;
pub mod label;
pub mod metric;
pub mod op;
pub mod server_code;
pub mod setting;
pub(crate) mod verbs;

pub use error_class::ErrorClass;
pub use label::Label;
pub use metric::Compared;
pub(crate) use metric::MetricKind;
pub(crate) use op::{OpKind, OpName};
pub(crate) use server_code::ServerCode;
pub use setting::Setting;
pub(crate) use verbs::verbs;
