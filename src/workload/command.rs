//! The profile's own operations (`[group.find]`, `[[group.ops]]`): each one named as the drivers
//! name it, with its templates (generated per operation) and its constant options, and the
//! request built from them before the operation's clock starts.
//!
//! One type per family of verbs (`Find`, `Update`, ...) holds what its command needs; a
//! `Command` is one of them, and `TemplateOp::build` makes a `Built` that carries the family's
//! own options beside the values generated for this operation, so each sender takes one
//! `Built` variant and no sender can be handed another family's values.
//!
//! Owns: what each operation sends, as values. Never: calls the driver (that is
//! `ops::template`), or parses the profile (that is `plan::build::templates`).

use std::sync::Arc;

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};

use super::document::DocGen;
use super::keys::KeySpace;
use super::template::{Cx, Template};
use crate::vocab::op::{OpKind, OpName};

mod build;

mod steps;
pub use steps::*;

mod verb;
pub(crate) use verb::AuditAs;
pub use verb::Verb;

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
    pub(crate) kind: OpKind,
    /// It works on an existing document by `_id` (get, update by `_id`, rmw, scan): with none
    /// yet, nothing is sent.
    pub(crate) needs_key: bool,
    /// `inc = [...]` of an update or rmw.
    pub(crate) inc: Vec<String>,
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
    /// These options with the `projection` and `let` an operation made (`Find::shaped`), and
    /// the limit it drew (`Find::page`).
    pub(crate) fn made(&self, shape: Option<&Document>, limit: Option<i64>) -> FindArgs {
        let mut args = self.clone();
        if let Some(shape) = shape {
            if let Ok(p) = shape.get_document("projection") {
                args.projection = Some(p.clone());
            }
            if let Ok(l) = shape.get_document("let") {
                args.let_vars = Some(l.clone());
            }
        }
        if limit.is_some() {
            args.limit = limit;
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

/// A filter: the profile's template, or a built-in kind's (`filter = [...]` of
/// `op = "find"`): these top-level fields of the collection's document, each choice drawn by
/// the group's key distribution.
#[derive(Debug)]
pub(crate) enum Filter {
    Template(Template),
    Fields(Vec<usize>),
}

/// An update: the profile's template (a document of operators, or a pipeline), or a built-in
/// kind's change.
#[derive(Debug)]
pub(crate) enum UpdateBy {
    Template(Template),
    Builtin(Change),
}

/// What a built-in update changes: document fields `$set` to new generated values (indexes into
/// the document's top level), and fields `$inc` by 1 (a counter of updates per document, e.g.
/// `inc = ["updates"]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Change {
    pub(crate) set: Vec<usize>,
    pub(crate) inc: Vec<String>,
}

/// insertOne, insertMany. A `document` of None is the collection's document template (with an
/// `_id` from its key space).
#[derive(Debug)]
pub(crate) struct Insert {
    /// 1 for insertOne.
    pub(crate) batch: u32,
    pub(crate) ordered: bool,
    pub(crate) document: Option<Template>,
}

/// find, findOne.
#[derive(Debug)]
pub(crate) struct Find {
    pub(crate) filter: Filter,
    pub(crate) args: FindArgs,
    /// Count the matches first (`count = true` of the built-in find), timed with the find.
    pub(crate) count_first: bool,
    /// A limit drawn per operation, uniformly from 1 to this (the built-in scan's length), over
    /// `args.limit`.
    pub(crate) page: Option<u32>,
    /// A generated `projection` and `let` (genny's find `Options`), a document of those keys
    /// made per operation, over `args`'s.
    pub(crate) shaped: Option<Template>,
}

#[derive(Debug)]
pub(crate) struct Aggregate {
    pub(crate) pipeline: Template,
    pub(crate) allow_disk_use: Option<bool>,
    pub(crate) batch_size: Option<u32>,
    pub(crate) hint: Option<Bson>,
    pub(crate) max_time_ms: Option<u64>,
}

/// countDocuments.
#[derive(Debug)]
pub(crate) struct Count {
    pub(crate) filter: Template,
    pub(crate) skip: Option<u64>,
    pub(crate) limit: Option<u64>,
    pub(crate) hint: Option<Bson>,
}

#[derive(Debug)]
pub(crate) struct Distinct {
    pub(crate) key: String,
    pub(crate) filter: Template,
}

/// updateOne, updateMany.
#[derive(Debug)]
pub(crate) struct Update {
    pub(crate) filter: Filter,
    pub(crate) update: UpdateBy,
    pub(crate) args: WriteArgs,
    pub(crate) many: bool,
    /// Read the document first and update it only when found (the built-in rmw, timed as one,
    /// like YCSB's F).
    pub(crate) read_first: bool,
}

/// replaceOne.
#[derive(Debug)]
pub(crate) struct Replace {
    pub(crate) filter: Template,
    pub(crate) replacement: Template,
    pub(crate) args: WriteArgs,
}

/// deleteOne, deleteMany.
#[derive(Debug)]
pub(crate) struct Delete {
    pub(crate) filter: Filter,
    pub(crate) hint: Option<Bson>,
    pub(crate) collation: Option<Document>,
    pub(crate) many: bool,
    /// The built-in remove: find one match at or after an existing `_id` drawn per operation
    /// (so concurrent removers spread over the collection), from the start when none is, then
    /// delete it by its `_id`.
    pub(crate) from_key: bool,
}

/// findOneAndUpdate, findOneAndReplace, findOneAndDelete.
#[derive(Debug)]
pub(crate) struct FindAndModify {
    pub(crate) filter: Template,
    pub(crate) change: FindAndChange,
    pub(crate) args: FindAndModifyArgs,
}

/// What a findOneAnd* does to the document it finds.
#[derive(Debug)]
pub(crate) enum FindAndChange {
    /// A document of operators, or a pipeline.
    Update(Template),
    Replace(Template),
    Delete,
}

#[derive(Debug)]
pub(crate) struct Bulk {
    pub(crate) ordered: bool,
    pub(crate) models: Vec<BulkModel>,
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

/// What each operation sends: one family of verbs with its templates (generated per
/// operation) and its options (fixed).
#[derive(Debug)]
pub(crate) enum Command {
    Insert(Arc<Insert>),
    Find(Arc<Find>),
    Aggregate(Arc<Aggregate>),
    Count(Arc<Count>),
    EstimatedCount,
    Distinct(Arc<Distinct>),
    Update(Arc<Update>),
    Replace(Arc<Replace>),
    Delete(Arc<Delete>),
    FindAndModify(Arc<FindAndModify>),
    Bulk(Arc<Bulk>),
    /// A database command (`runCommand`).
    Run(Template),
    /// Two commands whose first batches must agree (genny's AssertiveActor).
    Assert(Arc<Assert>),
    /// One read (`Find`, `Aggregate` or `Count`) of each of a list of collections in turn
    /// (genny's CollectionScanner).
    Scan(Arc<Scan>),
    /// Copies of sampled documents inserted in batches (genny's SamplingLoader).
    InsertSample(Arc<InsertSample>),
    /// A cluster time kept for later point-in-time scans.
    ClusterTime(Arc<KeepClusterTime>),
    /// Sends nothing.
    Nop,
}

/// `scan = { read = { find = {...} }, collections, databases, order, skip, documents, bytes,
/// hold, continuous, megabytes }`: genny's CollectionScanner
/// (`src/cast_core/src/CollectionScanner.cpp`, `collectionScan`/`countScan`): each database's
/// collections (`collections`, or those `listCollections` names at each scan), sorted by
/// `order` with the first `skip` left out, each read in turn to its cursor's end; the scan
/// stops once `documents` were read (exactly) or `bytes` reached; a collection that fails is
/// counted and the next is read. In a transaction, `hold` keeps it open at least that long
/// (asleep, or scanning again with `continuous`). `megabytes` (`N per T`) paces every scan of
/// the run by one shared limiter, a token per megabyte read (genny's `ScanRateMegabytes`).
#[derive(Debug)]
pub(crate) struct Scan {
    /// A `Command::Find`, `Command::Aggregate` or `Command::Count`.
    pub(crate) read: Command,
    /// None: `listCollections` at each scan.
    pub(crate) collections: Option<Vec<String>>,
    /// Empty: the step's database.
    pub(crate) databases: Vec<String>,
    pub(crate) order: ScanOrder,
    pub(crate) skip: usize,
    pub(crate) documents: Option<u64>,
    pub(crate) bytes: Option<u64>,
    pub(crate) hold: Option<std::time::Duration>,
    pub(crate) continuous: bool,
    /// Megabytes per period, shared by every scan of the run (the first scan's rate wins).
    pub(crate) megabytes: Option<(u32, std::time::Duration)>,
    /// A point-in-time scan: each collection's `find` and `getMore`s sent as commands at read
    /// concern snapshot `atClusterTime`, the time the user kept under this name (`clusterTime`),
    /// else one a `ping` answers at the scan.
    pub(crate) at: Option<String>,
}

/// `clusterTime = { keep = "name" }`: a `ping` to admin in a new session, whose operation time
/// the user keeps under the name for its point-in-time scans (genny's `SelectClusterTimeOnly`).
#[derive(Debug)]
pub(crate) struct KeepClusterTime {
    pub(crate) keep: String,
}

/// `insertSample = { size, pipeline, batch, batches, sample }`: genny's SamplingLoader
/// (`src/cast_core/src/SamplingLoader.cpp`): `size` documents sampled once from the step's
/// collection (`[{$sample: {size}}, {$project: {_id: 0}}, ...pipeline]`, at the first operation
/// that needs them, kept for the run under the name `sample`), then each operation inserts
/// `batches` unordered insertMany of `batch` of them, taken in turn from the first.
#[derive(Debug)]
pub(crate) struct InsertSample {
    /// The sample's name: the operations that name it share one sample.
    pub(crate) sample: String,
    pub(crate) size: u32,
    pub(crate) pipeline: Vec<Document>,
    pub(crate) batch: u32,
    pub(crate) batches: u32,
}

/// The order a scan reads its collections in (genny's `CollectionSortOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanOrder {
    /// As listed.
    AsListed,
    /// By the names' bytes.
    Forward,
    Reverse,
}

/// `assert = { expected, actual, ignore }`: both commands sent in turn to the step's
/// database, and the first batch of `actual`'s cursor compared with `expected`'s as genny's
/// AssertiveActor compares them: arrays element by element in order, documents field by field
/// both ways except the `ignore`d fields (default `_id` and `num`), numbers of any type equal
/// within 0.001.
#[derive(Debug)]
pub(crate) struct Assert {
    pub(crate) expected: Template,
    pub(crate) actual: Template,
    pub(crate) ignore: Vec<String>,
}

/// One operation as it goes out: its family's options and the values generated for it.
#[derive(Debug, Clone)]
pub(crate) enum Built {
    Insert {
        of: Arc<Insert>,
        docs: Vec<RawDocumentBuf>,
    },
    Find {
        of: Arc<Find>,
        filter: Document,
        /// `shaped`'s document, when the find has one.
        shape: Option<Document>,
        /// The limit drawn (`page`), when the find has one.
        limit: Option<i64>,
    },
    Aggregate {
        of: Arc<Aggregate>,
        stages: Vec<Document>,
    },
    Count {
        of: Arc<Count>,
        filter: Document,
    },
    EstimatedCount,
    Distinct {
        of: Arc<Distinct>,
        filter: Document,
    },
    Update {
        of: Arc<Update>,
        filter: Document,
        /// A document of operators, or a pipeline (an array).
        update: Bson,
    },
    Replace {
        of: Arc<Replace>,
        filter: Document,
        replacement: Bson,
    },
    Delete {
        of: Arc<Delete>,
        filter: Document,
    },
    /// The built-in remove: its filter, and the `_id` its search starts at (None: from the
    /// start).
    Remove {
        filter: Document,
        from: Option<i64>,
    },
    FindAndModify {
        of: Arc<FindAndModify>,
        filter: Document,
        /// The update or replacement (None: a delete).
        change: Option<Bson>,
    },
    Bulk {
        ordered: bool,
        models: Vec<BuiltModel>,
    },
    Run(Document),
    Assert {
        of: Arc<Assert>,
        expected: Document,
        actual: Document,
    },
    /// The read made once, sent to each collection.
    Scan {
        of: Arc<Scan>,
        read: Box<Built>,
    },
    InsertSample(Arc<InsertSample>),
    ClusterTime(Arc<KeepClusterTime>),
    Nop,
    /// Nothing to send: the operation needs an existing document and the collection has none
    /// yet.
    Skip,
}

/// One generated write model of a `bulkWrite`, with its model's options.
#[derive(Debug, Clone)]
pub(crate) enum BuiltModel {
    InsertOne(RawDocumentBuf),
    Update {
        many: bool,
        filter: Document,
        update: Bson,
        args: WriteArgs,
    },
    ReplaceOne {
        filter: Document,
        replacement: Document,
        args: WriteArgs,
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
    pub(crate) built: Built,
    /// `_id`s it inserts from the collection's key space, acknowledged when it ends.
    pub(crate) issued: Vec<i64>,
    /// The virtual user (0-based) whose operation it is, and its group plan's index
    /// (`Request::of_group`): its session, when it has one.
    pub(crate) user: u32,
    pub(crate) group: usize,
    /// Where a remove puts the `_id` it found before the delete goes out (the write audit's).
    pub(crate) removed: Option<RemovedId>,
}

/// The `_id` a remove found and is about to delete, set by the backend, read by the audit
/// however the operation ends (even abandoned at its timeout).
pub(crate) type RemovedId = Arc<std::sync::OnceLock<Bson>>;

/// What an operation's documents come from: the collection's key space (an `_id` for each
/// document that does not set its own, so `^Key` and the other groups find it) and its
/// document template (an insert's documents, a built-in kind's filter and change).
pub(crate) trait Documents {
    fn issue(&mut self) -> i64;
    /// The collection's document with `_id` `id`, in BSON's bytes.
    fn fill(&mut self, id: i64, cx: &mut Cx<'_>) -> RawDocumentBuf;
    /// A filter on these top-level fields of the collection's document, each choice drawn by
    /// the group's key distribution (`cx.lookup`'s); empty without one.
    fn filter(&mut self, only: &[usize], cx: &mut Cx<'_>) -> Document;
    /// Fresh values of these top-level fields of the collection's document.
    fn fresh(&mut self, only: &[usize], cx: &mut Cx<'_>) -> Document;
}

/// An operation's documents from a collection's key space and document template.
pub(crate) struct CollectionDocs<'a> {
    pub(crate) keys: &'a KeySpace,
    pub(crate) document: &'a DocGen,
}

impl Documents for CollectionDocs<'_> {
    fn issue(&mut self) -> i64 {
        self.keys.issue()
    }
    fn fill(&mut self, id: i64, cx: &mut Cx<'_>) -> RawDocumentBuf {
        self.document.raw_doc(id, cx)
    }
    fn filter(&mut self, only: &[usize], cx: &mut Cx<'_>) -> Document {
        match cx.lookup.chooser() {
            Some(pick) => self.document.generate_filter(only, pick, &mut cx.rng),
            None => Document::new(),
        }
    }
    fn fresh(&mut self, only: &[usize], cx: &mut Cx<'_>) -> Document {
        self.document.generate_fields(only, &mut cx.rng)
    }
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
