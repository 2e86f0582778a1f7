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

impl TemplateOp {
    /// An estimatedDocumentCount named `name` on collection 0, for tests that need an operation
    /// and do not send it.
    #[cfg(test)]
    pub(crate) fn stub(name: &str) -> Arc<TemplateOp> {
        Arc::new(TemplateOp {
            name: name.into(),
            verb: Verb::EstimatedDocumentCount,
            at: "group[0].estimatedDocumentCount".into(),
            line: 1,
            collection: 0,
            collection_name: "c".into(),
            command: Command::EstimatedCount,
            desugared: None,
        })
    }

    /// Generates one request.
    pub(crate) fn build(
        self: &Arc<Self>,
        cx: &mut Cx<'_>,
        docs: &mut dyn Documents,
    ) -> TemplateRequest {
        let mut issued = Vec::new();
        // A built-in kind on an existing document sends nothing while there is none (its
        // values are still drawn, so the random stream is the same either way).
        let skip = self.desugared.as_ref().is_some_and(|d| d.needs_key) && !cx.lookup.has_key();
        let mut doc = |t: &Option<Template>, cx: &mut Cx<'_>, issued: &mut Vec<i64>| {
            let d = match t {
                Some(t) => {
                    let own = t.generate_doc(cx).unwrap_or_default();
                    if own.contains_key("_id") {
                        own
                    } else {
                        let id = docs.issue();
                        issued.push(id);
                        let mut d = Document::new();
                        d.insert("_id", id);
                        d.extend(own);
                        d
                    }
                }
                None => {
                    // The collection's document, built in its bytes.
                    let id = docs.issue();
                    issued.push(id);
                    return docs.fill(id, cx);
                }
            };
            // Field names were checked when the profile was read; a generated value cannot
            // make a document the encoder refuses.
            RawDocumentBuf::from_document(&d).unwrap_or_default()
        };
        let filter = |t: &Template, cx: &mut Cx<'_>| t.generate_doc(cx).unwrap_or_default();
        let body = match &self.command {
            Command::Insert {
                batch, document, ..
            } => Body::Docs(
                (0..*batch)
                    .map(|_| doc(document, cx, &mut issued))
                    .collect(),
            ),
            Command::Find {
                filter: f,
                page: Some(page),
                ..
            } => {
                let f = filter(f, cx);
                Body::Page(f, page.generate(cx).as_i64().unwrap_or(1))
            }
            Command::Find {
                filter: f,
                shaped: Some(shaped),
                ..
            } => {
                let f = filter(f, cx);
                Body::Shaped(f, shaped.generate_doc(cx).unwrap_or_default())
            }
            Command::Delete {
                filter: f,
                from: Some(from),
                ..
            } => {
                let f = filter(f, cx);
                Body::From(f, from.generate(cx).as_i64())
            }
            Command::Find { filter: f, .. }
            | Command::Count { filter: f, .. }
            | Command::Distinct { filter: f, .. }
            | Command::Delete { filter: f, .. }
            | Command::FindAndModify {
                filter: f,
                change: None,
                ..
            } => Body::Filter(filter(f, cx)),
            Command::Update {
                filter: f, update, ..
            }
            | Command::FindAndModify {
                filter: f,
                change: Some(update),
                ..
            } => Body::FilterAnd(filter(f, cx), update.generate(cx)),
            Command::Replace {
                filter: f,
                replacement,
                ..
            } => Body::FilterAnd(filter(f, cx), replacement.generate(cx)),
            Command::Aggregate { pipeline, .. } => Body::Pipeline(stages(pipeline.generate(cx))),
            Command::EstimatedCount | Command::Nop => Body::Nothing,
            Command::RunCommand { document } => {
                Body::Command(document.generate_doc(cx).unwrap_or_default())
            }
            Command::Bulk { models, .. } => Body::Bulk(
                models
                    .iter()
                    .map(|m| match m {
                        BulkModel::InsertOne(d) => BuiltModel::InsertOne(doc(d, cx, &mut issued)),
                        BulkModel::Update {
                            many,
                            filter: f,
                            update,
                            ..
                        } => BuiltModel::Update {
                            many: *many,
                            filter: filter(f, cx),
                            update: update.generate(cx),
                        },
                        BulkModel::ReplaceOne {
                            filter: f,
                            replacement,
                            ..
                        } => BuiltModel::ReplaceOne {
                            filter: filter(f, cx),
                            replacement: replacement.generate_doc(cx).unwrap_or_default(),
                        },
                        BulkModel::Delete { many, filter: f } => BuiltModel::Delete {
                            many: *many,
                            filter: filter(f, cx),
                        },
                    })
                    .collect(),
            ),
        };
        TemplateRequest {
            user: cx.user,
            group: 0,
            op: Arc::clone(self),
            body: if skip { Body::Skip } else { body },
            issued,
            removed: None,
        }
    }

    /// Does it delete documents (its verb, or one of its bulkWrite's models)?
    pub(crate) fn deletes(&self) -> bool {
        match self.verb.audit() {
            AuditAs::Deletes => true,
            AuditAs::ByModel => self.models().any(|m| matches!(m, BulkModel::Delete { .. })),
            AuditAs::Nothing | AuditAs::Inserts | AuditAs::Updates => false,
        }
    }

    /// Does it update or replace documents (its verb, or one of its bulkWrite's models)?
    pub(crate) fn updates(&self) -> bool {
        match self.verb.audit() {
            AuditAs::Updates => true,
            AuditAs::ByModel => self
                .models()
                .any(|m| matches!(m, BulkModel::Update { .. } | BulkModel::ReplaceOne { .. })),
            AuditAs::Nothing | AuditAs::Inserts | AuditAs::Deletes => false,
        }
    }

    /// A bulkWrite's models (none for any other command).
    fn models(&self) -> impl Iterator<Item = &BulkModel> {
        match &self.command {
            Command::Bulk { models, .. } => models.iter(),
            _ => [].iter(),
        }
    }

    /// Does it insert documents with `_id`s from the collection's key space (so `^Key` has
    /// something to draw)?
    pub(crate) fn inserts_keyed(&self) -> bool {
        match &self.command {
            Command::Insert { .. } => true,
            Command::Bulk { models, .. } => {
                models.iter().any(|m| matches!(m, BulkModel::InsertOne(_)))
            }
            _ => false,
        }
    }

    /// Its templates, to check what they draw (`uses_key`, `field_paths`).
    pub(crate) fn templates(&self) -> Vec<&Template> {
        let mut out: Vec<&Template> = Vec::new();
        match &self.command {
            Command::Insert { document, .. } => out.extend(document.as_ref()),
            Command::Find { filter, shaped, .. } => {
                out.push(filter);
                out.extend(shaped.as_deref());
            }
            Command::Count { filter, .. }
            | Command::Distinct { filter, .. }
            | Command::Delete { filter, .. } => out.push(filter),
            Command::Update { filter, update, .. } => out.extend([filter, update]),
            Command::Replace {
                filter,
                replacement,
                ..
            } => out.extend([filter, replacement]),
            Command::FindAndModify { filter, change, .. } => {
                out.push(filter);
                out.extend(change.as_ref());
            }
            Command::Aggregate { pipeline, .. } => out.push(pipeline),
            Command::EstimatedCount | Command::Nop => {}
            Command::RunCommand { document } => out.push(document),
            Command::Bulk { models, .. } => {
                for m in models {
                    match m {
                        BulkModel::InsertOne(d) => out.extend(d.as_ref()),
                        BulkModel::Update { filter, update, .. } => out.extend([filter, update]),
                        BulkModel::ReplaceOne {
                            filter,
                            replacement,
                            ..
                        } => out.extend([filter, replacement]),
                        BulkModel::Delete { filter, .. } => out.push(filter),
                    }
                }
            }
        }
        out
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

/// Several operations run in order as one (`[[group.steps]]`): one sample from the first step's
/// start to the last one's end. A step that matches nothing ends the operation there.
#[derive(Debug)]
pub struct StepsOp {
    pub(crate) name: OpName,
    /// `group[2].steps`, for messages.
    pub at: String,
    pub steps: Vec<Arc<TemplateOp>>,
    /// Per step: does it read an earlier step's result (`^Step`)? Such a step is generated at
    /// its turn, inside the operation's time; the others before the clock starts.
    pub(crate) late: Vec<bool>,
    /// `[group.bind]`: generated once per operation before the clock, read with `^Bind`.
    pub(crate) bind: Vec<(String, Template)>,
    /// The steps in one transaction (`transaction = true`).
    pub transaction: bool,
}

/// The documents of each collection of the run, for a late step that inserts (by
/// `RunPlan::collections` index).
pub(crate) type CollectionsDocs = Arc<[(Arc<super::KeySpace>, Arc<super::DocGen>)]>;

/// A request of several steps: the bound values, the steps made before the clock, and what the
/// late ones need to be made at their turn.
#[derive(Debug, Clone)]
pub struct StepsRequest {
    pub op: Arc<StepsOp>,
    pub(crate) bound: Vec<(String, Bson)>,
    /// Per step: its request when it could be made before the clock.
    pub(crate) built: Vec<Option<TemplateRequest>>,
    /// The late steps' own random stream.
    pub(crate) seed: u64,
    /// The virtual user and its group plan's index, as in `TemplateRequest`.
    pub(crate) user: u32,
    pub(crate) group: usize,
    pub(crate) collections: CollectionsDocs,
    /// The `_id`s early steps on other collections than the group's issued, acknowledged when
    /// the last copy of the request is dropped.
    pub acks: Arc<Vec<super::keys::Acks>>,
    /// The group's collection and the one this operation drew (`collections = [...]`; the
    /// same without): a step on the first goes to the second.
    pub(crate) on: (usize, usize),
}

impl StepsRequest {
    /// The collection step `collection` works on in this operation.
    pub(crate) fn collection_of(&self, collection: usize) -> usize {
        if collection == self.on.0 {
            self.on.1
        } else {
            collection
        }
    }
}

/// What a late step reads: the bound values and the earlier steps' results.
pub(crate) struct StepLookup<'a> {
    pub(crate) bound: &'a [(String, Bson)],
    pub(crate) results: &'a [Option<Document>],
}

impl super::template::Lookup for StepLookup<'_> {
    fn key(&mut self, _rng: &mut dyn rand::RngCore) -> Option<Bson> {
        None
    }
    fn field(&mut self, _path: &str, _rng: &mut dyn rand::RngCore) -> Option<Bson> {
        None
    }
    fn bind(&mut self, name: &str) -> Option<Bson> {
        self.bound
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
    fn step(&mut self, index: usize, path: &str) -> Option<Bson> {
        let doc = self.results.get(index)?.as_ref()?;
        if path.is_empty() {
            return Some(Bson::Document(doc.clone()));
        }
        let mut at = doc;
        let mut parts = path.split('.').peekable();
        while let Some(p) = parts.next() {
            let v = at.get(p)?;
            if parts.peek().is_none() {
                return Some(v.clone());
            }
            match v {
                Bson::Document(d) => at = d,
                _ => return None,
            }
        }
        None
    }
}

impl StepsOp {
    /// Binds its values and makes every step that does not read an earlier one's result; a
    /// step on another collection than the group's draws that collection's `_id`s and
    /// documents. `on`: the group's collection and the one this operation drew (`docs` are
    /// the drawn one's), as in `StepsRequest::on`.
    pub(crate) fn build(
        self: &Arc<Self>,
        cx: &mut Cx<'_>,
        docs: &mut dyn Documents,
        on: (usize, usize),
        collections: &CollectionsDocs,
        issued: &mut Vec<i64>,
    ) -> StepsRequest {
        let mut acks = Vec::new();
        let bound: Vec<(String, Bson)> = self
            .bind
            .iter()
            .map(|(n, t)| (n.clone(), t.generate(cx)))
            .collect();
        let mut built = Vec::with_capacity(self.steps.len());
        for (step, late) in self.steps.iter().zip(&self.late) {
            if *late {
                built.push(None);
                continue;
            }
            let mut lookup = BoundLookup {
                bound: &bound,
                inner: &mut *cx.lookup,
            };
            let c = if step.collection == on.0 {
                on.1
            } else {
                step.collection
            };
            let other = (c != on.1).then(|| collections.get(c)).flatten();
            let mut on_other;
            let lookup: &mut dyn super::template::Lookup = match other {
                Some((keys, gen)) => {
                    on_other = super::lookup::OtherCollection {
                        keys,
                        document: gen,
                        inner: &mut lookup,
                    };
                    &mut on_other
                }
                None => &mut lookup,
            };
            let mut step_cx = Cx {
                rng: &mut *cx.rng,
                lookup,
                now_ms: cx.now_ms,
                user: cx.user,
                state: &mut *cx.state,
            };
            let req = match other {
                Some((keys, gen)) => {
                    let req = step.build(
                        &mut step_cx,
                        &mut super::request::CollectionDocs {
                            keys,
                            document: gen,
                        },
                    );
                    acks.push(super::keys::Acks(Arc::clone(keys), req.issued.clone()));
                    req
                }
                None => {
                    let req = step.build(&mut step_cx, docs);
                    issued.extend(&req.issued);
                    req
                }
            };
            built.push(Some(req));
        }
        StepsRequest {
            op: Arc::clone(self),
            bound,
            built,
            seed: cx.rng.next_u64(),
            user: cx.user,
            group: 0,
            collections: Arc::clone(collections),
            acks: Arc::new(acks),
            on,
        }
    }
}

/// The user's lookups with the operation's bound values.
struct BoundLookup<'a, 'b> {
    bound: &'a [(String, Bson)],
    inner: &'b mut dyn super::template::Lookup,
}

impl super::template::Lookup for BoundLookup<'_, '_> {
    fn key(&mut self, rng: &mut dyn rand::RngCore) -> Option<Bson> {
        self.inner.key(rng)
    }
    fn field(&mut self, path: &str, rng: &mut dyn rand::RngCore) -> Option<Bson> {
        self.inner.field(path, rng)
    }
    fn bind(&mut self, name: &str) -> Option<Bson> {
        self.bound
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
    fn chooser(&mut self) -> Option<&mut super::distribution::Chooser> {
        self.inner.chooser()
    }
}

/// The database command a request is on the wire (what `explain` takes, and what an
/// unacknowledged write is sent as): find, aggregate, count, distinct, insert, update, delete,
/// findAndModify; None for estimatedDocumentCount, bulkWrite and commands.
pub(crate) fn wire_command(op: &TemplateOp, body: Body) -> Option<Document> {
    let coll = op.collection_name.as_str();
    let put = |d: &mut Document, k: &str, v: Option<Bson>| {
        if let Some(v) = v {
            d.insert(k, v);
        }
    };
    let inner = match (&op.command, body) {
        (Command::Find { args, .. }, Body::Shaped(filter, shape)) => {
            find_wire(coll, op.verb, &args.shaped(&shape), filter)
        }
        (Command::Find { args, .. }, Body::Filter(filter)) => {
            find_wire(coll, op.verb, args, filter)
        }
        (
            Command::Aggregate {
                allow_disk_use,
                hint,
                max_time_ms,
                ..
            },
            Body::Pipeline(stages),
        ) => {
            let mut d = doc! { "aggregate": coll, "pipeline": stages, "cursor": {} };
            put(&mut d, "allowDiskUse", allow_disk_use.map(Bson::Boolean));
            put(&mut d, "hint", hint.clone());
            put(
                &mut d,
                "maxTimeMS",
                max_time_ms.map(|n| Bson::Int64(n as i64)),
            );
            d
        }
        (
            Command::Count {
                skip, limit, hint, ..
            },
            Body::Filter(filter),
        ) => {
            let mut d = doc! { "count": coll, "query": filter };
            put(&mut d, "skip", skip.map(|n| Bson::Int64(n as i64)));
            put(&mut d, "limit", limit.map(|n| Bson::Int64(n as i64)));
            put(&mut d, "hint", hint.clone());
            d
        }
        (Command::Distinct { key, .. }, Body::Filter(filter)) => {
            doc! { "distinct": coll, "key": key.as_str(), "query": filter }
        }
        (Command::Update { args, .. }, Body::FilterAnd(filter, update))
        | (Command::Replace { args, .. }, Body::FilterAnd(filter, update)) => {
            let mut u = doc! {
                "q": filter,
                "u": update,
                "multi": op.verb == Verb::UpdateMany,
            };
            put(&mut u, "upsert", args.upsert.map(Bson::Boolean));
            put(
                &mut u,
                "arrayFilters",
                args.array_filters
                    .clone()
                    .map(|f| Bson::Array(f.into_iter().map(Bson::Document).collect())),
            );
            put(&mut u, "hint", args.hint.clone());
            put(
                &mut u,
                "collation",
                args.collation.clone().map(Bson::Document),
            );
            doc! { "update": coll, "updates": [u] }
        }
        (
            Command::Delete {
                hint, collation, ..
            },
            Body::Filter(filter),
        ) => {
            let mut d = doc! {
                "q": filter,
                "limit": if op.verb == Verb::DeleteMany { 0 } else { 1 },
            };
            put(&mut d, "hint", hint.clone());
            put(&mut d, "collation", collation.clone().map(Bson::Document));
            doc! { "delete": coll, "deletes": [d] }
        }
        (Command::FindAndModify { args, change, .. }, body) => {
            let (filter, second) = match body {
                Body::Filter(f) => (f, None),
                Body::FilterAnd(f, s) => (f, Some(s)),
                _ => return None,
            };
            let mut d = doc! { "findAndModify": coll, "query": filter };
            match (change, second) {
                (Some(_), Some(s)) => {
                    d.insert("update", s);
                    d.insert("new", args.return_after);
                }
                _ => {
                    d.insert("remove", true);
                }
            }
            put(&mut d, "sort", args.sort.clone().map(Bson::Document));
            put(
                &mut d,
                "fields",
                args.projection.clone().map(Bson::Document),
            );
            put(&mut d, "upsert", args.upsert.map(Bson::Boolean));
            put(&mut d, "hint", args.hint.clone());
            d
        }
        (Command::Insert { ordered, .. }, Body::Docs(docs)) => {
            let docs: Vec<Bson> = docs
                .into_iter()
                .filter_map(|d| Document::try_from(d.as_ref()).ok().map(Bson::Document))
                .collect();
            doc! { "insert": coll, "documents": docs, "ordered": *ordered }
        }
        _ => return None,
    };
    Some(inner)
}

/// A find's command on the wire: its filter and options.
fn find_wire(coll: &str, verb: Verb, args: &FindArgs, filter: Document) -> Document {
    let put = |d: &mut Document, k: &str, v: Option<Bson>| {
        if let Some(v) = v {
            d.insert(k, v);
        }
    };
    let mut d = doc! { "find": coll, "filter": filter };
    put(
        &mut d,
        "projection",
        args.projection.clone().map(Bson::Document),
    );
    put(&mut d, "let", args.let_vars.clone().map(Bson::Document));
    put(&mut d, "sort", args.sort.clone().map(Bson::Document));
    put(&mut d, "skip", args.skip.map(|n| Bson::Int64(n as i64)));
    put(&mut d, "limit", args.limit.map(Bson::Int64));
    put(&mut d, "hint", args.hint.clone());
    put(
        &mut d,
        "collation",
        args.collation.clone().map(Bson::Document),
    );
    if verb == Verb::FindOne {
        d.insert("singleBatch", true);
    }
    d
}
