//! What each group's operation is made of: one template, or steps. Its names are the vocabulary's (`vocab::op`).

pub use crate::vocab::op::OpKind;
pub(crate) use crate::vocab::op::OpName;

/// A group's operation: one of the profile's own operations (a built-in kind is read as one,
/// `plan::build::operations`), or several of them in order as one.
#[derive(Debug, Clone)]
pub enum OpSpec {
    /// One operation (`op = "get"`, `[group.find]`, `[[group.ops]]`).
    Template(std::sync::Arc<super::command::TemplateOp>),
    /// Several of them in order as one (`[[group.steps]]`).
    Steps(std::sync::Arc<super::command::StepsOp>),
}

impl OpSpec {
    /// The name of its row (a built-in kind, or a template's name).
    pub(crate) fn kind(&self) -> OpName {
        match self {
            OpSpec::Template(t) => t.name.clone(),
            OpSpec::Steps(s) => s.name.clone(),
        }
    }
}
