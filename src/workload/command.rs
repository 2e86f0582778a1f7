//! The profile's own operations (`[group.find]`, `[[group.ops]]`): each one named as the drivers
//! name it, with its templates (generated per operation) and its constant options, and the
//! request built from them before the operation's clock starts.
//!
//! Owns: what each operation sends, as values. Never: calls the driver (that is
//! `ops::template`), or parses the profile (that is `plan::build::templates`).

use std::sync::Arc;

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};

use super::op::OpName;
use super::template::{Cx, Template};

mod build;

mod steps;
pub use steps::*;

mod wire;
pub(crate) use wire::*;

/// One of the profile's own operations.
#[derive(Debug)]
pub struct TemplateOp {
    /// Its row's name (`lookup` in `app:lookup`), or the operation's name for a group's one.
    pub name: OpName,
    /// The driver's name for it: `find`, `insertMany`, ...
    pub verb: Verb,
    /// Where the profile writes it (`group[1].ops[0].findOne`) and its line, for the server's
    /// refusals.
    pub(crate) at: String,
    pub(crate) line: usize,
    /// The collection it works on: its index in `RunPlan::collections`, and its name.
    pub(crate) collection: usize,
    pub(crate) collection_name: String,
    pub(crate) command: Command,
    /// The built-in kind it was read from (`op = "get"` is a findOne by a drawn `_id`); None for
    /// the profile's own operations.
    pub(crate) desugared: Option<Desugared>,
}

/// What a built-in kind (`op = "insert"`, `"get"`, ...) keeps of itself once read as a verb:
/// its row's name, whether it is sent at all before the collection has a document, and the
/// counters it increments by `_id` (what the write audit checks).
#[derive(Debug, Clone)]
pub(crate) struct Desugared {
    pub(crate) kind: super::op::OpKind,
    /// It works on an existing document by `_id` (get, update by `_id`, rmw, scan): with none
    /// yet, nothing is sent.
    pub(crate) needs_key: bool,
    /// `inc = [...]` of an update or rmw.
    pub(crate) inc: Vec<String>,
}

/// The operations, as mongosh and the drivers name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    InsertOne,
    InsertMany,
    Find,
    FindOne,
    Aggregate,
    CountDocuments,
    EstimatedDocumentCount,
    Distinct,
    UpdateOne,
    UpdateMany,
    ReplaceOne,
    DeleteOne,
    DeleteMany,
    FindOneAndUpdate,
    FindOneAndReplace,
    FindOneAndDelete,
    BulkWrite,
    Command,
    /// Sends nothing: an operation that only counts (genny's `HelloWorld`, `NopMetrics`).
    Nop,
}

impl Verb {
    pub const ALL: [Verb; 19] = [
        Verb::InsertOne,
        Verb::InsertMany,
        Verb::Find,
        Verb::FindOne,
        Verb::Aggregate,
        Verb::CountDocuments,
        Verb::EstimatedDocumentCount,
        Verb::Distinct,
        Verb::UpdateOne,
        Verb::UpdateMany,
        Verb::ReplaceOne,
        Verb::DeleteOne,
        Verb::DeleteMany,
        Verb::FindOneAndUpdate,
        Verb::FindOneAndReplace,
        Verb::FindOneAndDelete,
        Verb::BulkWrite,
        Verb::Command,
        Verb::Nop,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Verb::InsertOne => "insertOne",
            Verb::InsertMany => "insertMany",
            Verb::Find => "find",
            Verb::FindOne => "findOne",
            Verb::Aggregate => "aggregate",
            Verb::CountDocuments => "countDocuments",
            Verb::EstimatedDocumentCount => "estimatedDocumentCount",
            Verb::Distinct => "distinct",
            Verb::UpdateOne => "updateOne",
            Verb::UpdateMany => "updateMany",
            Verb::ReplaceOne => "replaceOne",
            Verb::DeleteOne => "deleteOne",
            Verb::DeleteMany => "deleteMany",
            Verb::FindOneAndUpdate => "findOneAndUpdate",
            Verb::FindOneAndReplace => "findOneAndReplace",
            Verb::FindOneAndDelete => "findOneAndDelete",
            Verb::BulkWrite => "bulkWrite",
            Verb::Command => "command",
            Verb::Nop => "nop",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Verb> {
        Self::ALL.into_iter().find(|v| v.name() == s)
    }

    /// `insertOne, insertMany, ...`, for error texts.
    pub(crate) fn listed() -> String {
        Self::ALL.map(|v| v.name()).join(", ")
    }

    /// The arguments it takes, as the drivers name them (the profile's operation tables).
    pub(crate) fn arguments(self) -> &'static [&'static str] {
        match self {
            Verb::InsertOne => &["document"],
            Verb::InsertMany => &["batch", "ordered", "document"],
            Verb::Find => &[
                "filter",
                "projection",
                "sort",
                "skip",
                "limit",
                "batchSize",
                "hint",
                "collation",
                "maxTimeMS",
                "let",
            ],
            Verb::FindOne => &[
                "filter",
                "projection",
                "sort",
                "skip",
                "hint",
                "collation",
                "maxTimeMS",
                "let",
            ],
            Verb::Aggregate => &["pipeline", "allowDiskUse", "batchSize", "hint", "maxTimeMS"],
            Verb::CountDocuments => &["filter", "skip", "limit", "hint"],
            Verb::EstimatedDocumentCount => &[],
            Verb::Distinct => &["key", "filter"],
            Verb::UpdateOne | Verb::UpdateMany => &[
                "filter",
                "update",
                "upsert",
                "arrayFilters",
                "hint",
                "collation",
            ],
            Verb::ReplaceOne => &["filter", "replacement", "upsert", "hint", "collation"],
            Verb::DeleteOne | Verb::DeleteMany => &["filter", "hint", "collation"],
            Verb::FindOneAndUpdate => &[
                "filter",
                "update",
                "sort",
                "projection",
                "returnDocument",
                "upsert",
                "arrayFilters",
                "hint",
            ],
            Verb::FindOneAndReplace => &[
                "filter",
                "replacement",
                "sort",
                "projection",
                "returnDocument",
                "upsert",
                "hint",
            ],
            Verb::FindOneAndDelete => &["filter", "sort", "projection", "hint"],
            Verb::BulkWrite => &["ordered", "requests"],
            Verb::Command | Verb::Nop => &[],
        }
    }

    /// Does it write documents (insert, update, replace or delete any)? A `command`'s effect is
    /// not known, so no.
    pub(crate) fn writes(self) -> bool {
        match self {
            Verb::InsertOne
            | Verb::InsertMany
            | Verb::UpdateOne
            | Verb::UpdateMany
            | Verb::ReplaceOne
            | Verb::DeleteOne
            | Verb::DeleteMany
            | Verb::FindOneAndUpdate
            | Verb::FindOneAndReplace
            | Verb::FindOneAndDelete
            | Verb::BulkWrite => true,
            Verb::Find
            | Verb::FindOne
            | Verb::Aggregate
            | Verb::CountDocuments
            | Verb::EstimatedDocumentCount
            | Verb::Distinct
            | Verb::Command
            | Verb::Nop => false,
        }
    }

    /// Can it go at write concern 0? The driver has no unacknowledged writes, so a write goes
    /// as its database command with `writeConcern: { w: 0 }`; those whose reply is their result
    /// (findOneAnd*, bulkWrite) cannot. Reads are not affected.
    pub(crate) fn at_w0(self) -> bool {
        match self {
            Verb::InsertOne
            | Verb::InsertMany
            | Verb::UpdateOne
            | Verb::UpdateMany
            | Verb::ReplaceOne
            | Verb::DeleteOne
            | Verb::DeleteMany => true,
            Verb::FindOneAndUpdate
            | Verb::FindOneAndReplace
            | Verb::FindOneAndDelete
            | Verb::BulkWrite => false,
            Verb::Find
            | Verb::FindOne
            | Verb::Aggregate
            | Verb::CountDocuments
            | Verb::EstimatedDocumentCount
            | Verb::Distinct
            | Verb::Command
            | Verb::Nop => true,
        }
    }

    /// What it does that the write audit must know of: inserts it can recompute (the `_id`s
    /// sent), deletes and updates it cannot tell from a loss (a bulkWrite's are its models').
    pub(crate) fn audit(self) -> AuditAs {
        match self {
            Verb::InsertOne | Verb::InsertMany => AuditAs::Inserts,
            Verb::BulkWrite => AuditAs::ByModel,
            Verb::DeleteOne | Verb::DeleteMany | Verb::FindOneAndDelete => AuditAs::Deletes,
            Verb::UpdateOne
            | Verb::UpdateMany
            | Verb::ReplaceOne
            | Verb::FindOneAndUpdate
            | Verb::FindOneAndReplace => AuditAs::Updates,
            Verb::Find
            | Verb::FindOne
            | Verb::Aggregate
            | Verb::CountDocuments
            | Verb::EstimatedDocumentCount
            | Verb::Distinct
            | Verb::Command
            | Verb::Nop => AuditAs::Nothing,
        }
    }
}

/// What a verb is to the write audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuditAs {
    /// Reads, or a command: nothing to check.
    Nothing,
    /// Inserts: the `_id`s it sends are checked after the run.
    Inserts,
    /// A bulkWrite: as its models (inserts checked, deletes and updates as below).
    ByModel,
    /// Deletes: a document it deleted would look lost.
    Deletes,
    /// Updates or replaces: its changes would look like lost or phantom increments.
    Updates,
}

/// Options of a find (and of `findOne`, which is a find with limit 1).
#[derive(Debug, Clone, Default)]
pub(crate) struct FindArgs {
    pub(crate) projection: Option<Document>,
    /// `let`: variables the filter reads as `$$name`.
    pub(crate) let_vars: Option<Document>,
    pub(crate) sort: Option<Document>,
    pub(crate) skip: Option<u64>,
    pub(crate) limit: Option<i64>,
    pub(crate) batch_size: Option<u32>,
    pub(crate) hint: Option<Bson>,
    pub(crate) collation: Option<Document>,
    pub(crate) max_time_ms: Option<u64>,
}

impl FindArgs {
    /// These options with the `projection` and `let` an operation made (`Body::Shaped`).
    pub(crate) fn shaped(&self, shape: &Document) -> FindArgs {
        let mut args = self.clone();
        if let Ok(p) = shape.get_document("projection") {
            args.projection = Some(p.clone());
        }
        if let Ok(l) = shape.get_document("let") {
            args.let_vars = Some(l.clone());
        }
        args
    }
}

/// Options of an update, replace or delete.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteArgs {
    pub(crate) upsert: Option<bool>,
    pub(crate) array_filters: Option<Vec<Document>>,
    pub(crate) hint: Option<Bson>,
    pub(crate) collation: Option<Document>,
}

/// Options of a findOneAnd*.
#[derive(Debug, Clone, Default)]
pub(crate) struct FindAndModifyArgs {
    pub(crate) sort: Option<Document>,
    pub(crate) projection: Option<Document>,
    /// `returnDocument = "after"`.
    pub(crate) return_after: bool,
    pub(crate) upsert: Option<bool>,
    pub(crate) array_filters: Option<Vec<Document>>,
    pub(crate) hint: Option<Bson>,
}

/// One write model of a `bulkWrite`, as mongosh writes it.
#[derive(Debug)]
pub(crate) enum BulkModel {
    InsertOne(Option<Template>),
    Update {
        many: bool,
        filter: Template,
        update: Template,
        args: WriteArgs,
    },
    ReplaceOne {
        filter: Template,
        replacement: Template,
        args: WriteArgs,
    },
    Delete {
        many: bool,
        filter: Template,
    },
}

/// What each operation sends: templates generated per operation, options fixed. A `document`
/// of None is the collection's document template (with an `_id` from its key space).
#[derive(Debug)]
#[allow(
    clippy::enum_variant_names,
    reason = "RunCommand is the verb's name in MongoDB and genny"
)]
pub(crate) enum Command {
    Insert {
        /// 1 for insertOne.
        batch: u32,
        ordered: bool,
        document: Option<Template>,
    },
    Find {
        filter: Template,
        args: Box<FindArgs>,
        /// Count the matches first (`count = true` of the built-in find), timed with the find.
        count_first: bool,
        /// The limit drawn per operation (the built-in scan's length), over `args.limit`.
        page: Option<Template>,
        /// A generated `projection` and `let` (genny's find `Options`), a document of those
        /// keys made per operation, over `args`'s.
        shaped: Option<Box<Template>>,
    },
    Aggregate {
        pipeline: Template,
        allow_disk_use: Option<bool>,
        batch_size: Option<u32>,
        hint: Option<Bson>,
        max_time_ms: Option<u64>,
    },
    Count {
        filter: Template,
        skip: Option<u64>,
        limit: Option<u64>,
        hint: Option<Bson>,
    },
    EstimatedCount,
    Distinct {
        key: String,
        filter: Template,
    },
    Update {
        filter: Template,
        /// A document of operators, or a pipeline (an array).
        update: Template,
        args: WriteArgs,
        /// Read the document first and update it only when found (the built-in rmw, timed as
        /// one, like YCSB's F).
        read_first: bool,
    },
    Replace {
        filter: Template,
        replacement: Template,
        args: WriteArgs,
    },
    Delete {
        filter: Template,
        hint: Option<Bson>,
        collation: Option<Document>,
        /// The built-in remove: find one match at or after this drawn `_id` (so concurrent
        /// removers spread over the collection), from the start when none is, then delete it
        /// by its `_id`.
        from: Option<Template>,
    },
    FindAndModify {
        filter: Template,
        /// The update (findOneAndUpdate) or replacement (findOneAndReplace); None: delete.
        change: Option<Template>,
        args: FindAndModifyArgs,
    },
    Bulk {
        ordered: bool,
        models: Vec<BulkModel>,
    },
    RunCommand {
        document: Template,
    },
    /// Sends nothing.
    Nop,
}

/// One operation's generated values, in the shape its command takes.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Docs(Vec<RawDocumentBuf>),
    Filter(Document),
    /// A filter and an update (operators or a pipeline) or a replacement.
    FilterAnd(Document, Bson),
    Pipeline(Vec<Document>),
    Nothing,
    Command(Document),
    Bulk(Vec<BuiltModel>),
    /// A find with its limit drawn for this operation.
    Page(Document, i64),
    /// A find with its `projection` and `let` (the keys present) made for this operation.
    Shaped(Document, Document),
    /// A remove's filter and the `_id` its search starts at (None: from the start).
    From(Document, Option<i64>),
    /// Nothing to send: the operation needs an existing document and the collection has none
    /// yet.
    Skip,
}

#[derive(Debug, Clone)]
pub(crate) enum BuiltModel {
    InsertOne(RawDocumentBuf),
    Update {
        many: bool,
        filter: Document,
        update: Bson,
    },
    ReplaceOne {
        filter: Document,
        replacement: Document,
    },
    Delete {
        many: bool,
        filter: Document,
    },
}

/// A request of one of the profile's own operations.
#[derive(Debug, Clone)]
pub struct TemplateRequest {
    pub op: Arc<TemplateOp>,
    pub(crate) body: Body,
    /// `_id`s it inserts from the collection's key space, acknowledged when it ends.
    pub(crate) issued: Vec<i64>,
    /// The virtual user (0-based) whose operation it is, and its group plan's index
    /// (`Request::of_group`): its session, when it has one.
    pub(crate) user: u32,
    pub(crate) group: usize,
    /// Where a remove puts the `_id` it found before the delete goes out (the write audit's).
    pub(crate) removed: Option<super::request::RemovedId>,
}

/// What an insert's documents come from: the collection's key space (an `_id` for each
/// document that does not set its own, so `^Key` and the other groups find it) and its
/// document template.
pub(crate) trait Documents {
    fn issue(&mut self) -> i64;
    /// The collection's document with `_id` `id`, in BSON's bytes.
    fn fill(&mut self, id: i64, cx: &mut Cx<'_>) -> RawDocumentBuf;
}

/// A generated pipeline's stages (its documents; anything else was refused when it was read).
pub(crate) fn stages(pipeline: Bson) -> Vec<Document> {
    match pipeline {
        Bson::Array(a) => a
            .into_iter()
            .filter_map(|s| match s {
                Bson::Document(d) => Some(d),
                _ => None,
            })
            .collect(),
        Bson::Document(d) => vec![d],
        _ => Vec::new(),
    }
}
