//! One operation's request: the document, filter or update a virtual user sends next, built
//! from the generator and the key space before the operation's clock starts.

use mongodb::bson::Document;
use rand::Rng;

use super::distribution::Chooser;
use super::document::DocGen;
use super::keys::KeySpace;
use super::op::{Change, OpKind, OpSpec};

/// One operation's request, built before its clock starts so generation is never timed.
#[derive(Debug, Clone)]
pub enum Request {
    Insert(mongodb::bson::RawDocumentBuf),
    Find {
        filter: Document,
        limit: u32,
        count: bool,
    },
    UpdateById {
        id: Option<i64>,
        update: Document,
    },
    UpdateByFilter {
        filter: Document,
        update: Document,
        many: bool,
    },
    /// Find one matching `filter` at or after `_id` `from` (so concurrent removers spread over
    /// the collection instead of all finding its first match), then delete it by `_id`.
    Remove {
        filter: Document,
        from: Option<i64>,
        /// Where the `_id` it found is put before the delete is sent (the write audit's).
        found: Option<RemovedId>,
    },
    /// A point read by `_id` (None: no document yet).
    Get {
        id: Option<i64>,
    },
    /// Read one by `_id`, then `$set` on it.
    Rmw {
        id: Option<i64>,
        update: Document,
    },
    /// Up to `len` documents from `_id` `from` on, in `_id` order.
    Scan {
        from: Option<i64>,
        len: u32,
    },
    /// One of the profile's own operations.
    Template(super::command::TemplateRequest),
    /// Several of them in order, as one.
    Steps(super::command::StepsRequest),
}

/// The `_id` a remove found and is about to delete, set by the backend, read by the audit
/// however the operation ends (even abandoned at its timeout).
pub type RemovedId = std::sync::Arc<std::sync::OnceLock<mongodb::bson::Bson>>;

/// An insert's documents from a collection's key space and document template.
pub struct CollectionDocs<'a> {
    pub keys: &'a KeySpace,
    pub document: &'a DocGen,
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
    pub fn kind(&self) -> super::op::OpName {
        let kind = match self {
            Request::Insert(_) => OpKind::Insert,
            Request::Find { .. } => OpKind::Find,
            Request::UpdateById { .. } | Request::UpdateByFilter { .. } => OpKind::Update,
            Request::Remove { .. } => OpKind::Remove,
            Request::Get { .. } => OpKind::Get,
            Request::Rmw { .. } => OpKind::Rmw,
            Request::Scan { .. } => OpKind::Scan,
            Request::Template(t) => return t.op.name.clone(),
            Request::Steps(s) => return s.op.name.clone(),
        };
        kind.into()
    }

    /// The `_id` an insert writes.
    pub fn inserted_id(&self) -> Option<i64> {
        match self {
            Request::Insert(doc) => doc.get_i64("_id").ok(),
            _ => None,
        }
    }

    /// The next request of a built-in `op`; existing documents are picked by `pick` (the group's
    /// key distribution). (Templates build with `TemplateOp::build`.)
    pub fn build(
        op: &OpSpec,
        gen: &DocGen,
        keys: &KeySpace,
        pick: &mut Chooser,
        rng: &mut impl Rng,
    ) -> Request {
        let set = |change: &Change, rng: &mut _| {
            let mut u = Document::new();
            if !change.set.is_empty() {
                u.insert("$set", gen.generate_fields(&change.set, rng));
            }
            if !change.inc.is_empty() {
                let inc: Document = change
                    .inc
                    .iter()
                    .map(|f| (f.clone(), 1i32.into()))
                    .collect();
                u.insert("$inc", inc);
            }
            u
        };
        match op {
            OpSpec::Insert => Request::Insert(gen.raw_with_id(keys.issue(), rng)),
            OpSpec::Find {
                filter,
                limit,
                count,
            } => Request::Find {
                filter: gen.generate_filter(filter, pick, rng),
                limit: *limit,
                count: *count,
            },
            OpSpec::UpdateById { change } => Request::UpdateById {
                id: keys.existing(pick, rng),
                update: set(change, rng),
            },
            OpSpec::UpdateByFilter {
                filter,
                change,
                many,
            } => Request::UpdateByFilter {
                filter: gen.generate_filter(filter, pick, rng),
                update: set(change, rng),
                many: *many,
            },
            OpSpec::Remove { filter } => Request::Remove {
                filter: gen.generate_filter(filter, pick, rng),
                from: keys.existing(pick, rng),
                found: None,
            },
            OpSpec::Get => Request::Get {
                id: keys.existing(pick, rng),
            },
            OpSpec::Rmw { change } => Request::Rmw {
                id: keys.existing(pick, rng),
                update: set(change, rng),
            },
            OpSpec::Scan { max } => Request::Scan {
                from: keys.existing(pick, rng),
                len: rng.random_range(1..=(*max).max(1)),
            },
            OpSpec::Template(op) => {
                let mut state = super::template::UserState::default();
                let mut lookup = super::lookup::GroupLookup {
                    keys,
                    pick,
                    document: gen,
                };
                let mut cx = super::template::Cx {
                    rng,
                    lookup: &mut lookup,
                    now_ms: super::lookup::now_ms(),
                    user: 0,
                    state: &mut state,
                };
                Request::Template(op.build(
                    &mut cx,
                    &mut CollectionDocs {
                        keys,
                        document: gen,
                    },
                ))
            }
            // Steps are made by the virtual user, which holds every collection's documents.
            OpSpec::Steps(_) => unreachable!("steps are built by the virtual user"),
        }
    }
}
