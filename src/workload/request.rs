//! One operation's request: the documents, filter or update a virtual user sends next, built
//! from the templates, the generator and the key space before the operation's clock starts.

use mongodb::bson::Document;

/// One operation's request, built before its clock starts so generation is never timed.
#[derive(Debug, Clone)]
pub enum Request {
    /// One operation.
    Template(super::command::TemplateRequest),
    /// Several of them in order, as one.
    Steps(super::command::StepsRequest),
}

pub(crate) use super::command::{CollectionDocs, RemovedId};

/// A remove's filter restricted to `_id`s from `from` on: where its search starts.
pub fn from_id(filter: &Document, from: i64) -> Document {
    let mut after = filter.clone();
    after.insert("_id", mongodb::bson::doc! { "$gte": from });
    after
}

impl Request {
    /// Says which group plan's user sends it (its session is that user's own).
    pub(crate) fn of_group(&mut self, group: usize) {
        match self {
            Request::Template(t) => t.group = group,
            Request::Steps(s) => s.group = group,
        }
    }
}
