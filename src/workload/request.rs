//! One operation's request: the documents, filter or update a virtual user sends next, built
//! from the templates, the generator and the key space before the operation's clock starts.

use mongodb::bson::Document;

use super::document::DocGen;
use super::keys::KeySpace;

/// One operation's request, built before its clock starts so generation is never timed.
#[derive(Debug, Clone)]
pub enum Request {
    /// One operation.
    Template(super::command::TemplateRequest),
    /// Several of them in order, as one.
    Steps(super::command::StepsRequest),
}

/// The `_id` a remove found and is about to delete, set by the backend, read by the audit
/// however the operation ends (even abandoned at its timeout).
pub(crate) type RemovedId = std::sync::Arc<std::sync::OnceLock<mongodb::bson::Bson>>;

/// An insert's documents from a collection's key space and document template.
pub(crate) struct CollectionDocs<'a> {
    pub(crate) keys: &'a KeySpace,
    pub(crate) document: &'a DocGen,
}

impl super::command::Documents for CollectionDocs<'_> {
    fn issue(&mut self) -> i64 {
        self.keys.issue()
    }
    fn fill(&mut self, id: i64, cx: &mut super::template::Cx<'_>) -> mongodb::bson::RawDocumentBuf {
        self.document.raw_doc(id, cx)
    }
}

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
