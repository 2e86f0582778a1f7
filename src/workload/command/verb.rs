//! The verbs, as mongosh and the drivers name them: their names, the arguments each takes, and
//! what each is to a write at `w: 0` and to the write audit.

/// The enum of the verbs, its list and its names, from `vocab::verbs!`'s one list.
macro_rules! verb_enum {
    ([$(($v:ident, $field:ident, $name:tt)),* $(,)?]) => {
        /// The operations, as mongosh and the drivers name them. `Nop` sends nothing: an
        /// operation that only counts (genny's `HelloWorld`, `NopMetrics`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Verb {
            $($v,)*
        }

        impl Verb {
            pub const ALL: [Verb; [$($name),*].len()] = [$(Verb::$v,)*];

            /// Its name as mongosh and the drivers spell it, and the profile writes it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Verb::$v => $name,)*
                }
            }
        }
    };
}
crate::vocab::verbs!(verb_enum;);

impl Verb {
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
            Verb::Assert => &["expected", "actual", "ignore"],
            Verb::InsertSample => &["sample", "size", "pipeline", "batch", "batches"],
            Verb::ClusterTime => &["keep"],
            Verb::Scan => &[
                "read",
                "collections",
                "databases",
                "order",
                "skip",
                "documents",
                "bytes",
                "hold",
                "continuous",
                "megabytes",
                "at",
            ],
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
            | Verb::BulkWrite
            | Verb::InsertSample => true,
            Verb::Find
            | Verb::FindOne
            | Verb::Aggregate
            | Verb::CountDocuments
            | Verb::EstimatedDocumentCount
            | Verb::Distinct
            | Verb::Command
            | Verb::Assert
            | Verb::Scan
            | Verb::ClusterTime
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
            | Verb::BulkWrite
            | Verb::InsertSample => false,
            Verb::Find
            | Verb::FindOne
            | Verb::Aggregate
            | Verb::CountDocuments
            | Verb::EstimatedDocumentCount
            | Verb::Distinct
            | Verb::Command
            | Verb::Assert
            | Verb::Scan
            | Verb::ClusterTime
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
            | Verb::Assert
            | Verb::Scan
            | Verb::InsertSample
            | Verb::ClusterTime
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
