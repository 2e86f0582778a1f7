//! `capture`: a deployment's own workload as a profile. A source (the database profiler, or
//! MongoDB 4.4+ JSON log lines) gives `Observed` operations one at a time to a `Sink`
//! (`emit::Collector` counts them as they come, grouping transactions with `txn`, so a capture
//! holds seconds of its source, not all of it); `shape` turns each into a shape
//! (namespace, operation, arguments with every literal a typed slot) and its slot values;
//! `fit` turns the values seen in a slot, or a field, into a generator; `emit` writes the
//! profile, `shapes.tsv` and `capture.json`.
//!
//! Owns: reading the sources (`log`, `profiler`: the profiler's settings are put back whatever
//! happens), shapes, fitted generators, the captured profile's text and the account of what was
//! left out. Never: runs load, or writes an observed literal value unless asked
//! (`Options::keep_values`).

pub(crate) mod emit;
pub(crate) mod fit;
pub(crate) mod log;
pub(crate) mod profiler;
pub(crate) mod shape;
pub(crate) mod txn;

use std::collections::BTreeMap;

use mongodb::bson::{Bson, Document};

/// One operation as the source recorded it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observed {
    /// When it ended (the profiler's `ts`, the log line's `t`), ms since the epoch.
    pub(crate) ts_ms: i64,
    pub(crate) db: String,
    pub(crate) coll: String,
    /// The source's name for it: the profiler's `op` or the log's `attr.type` (`command`,
    /// `query`, `update`, `remove`, `insert`, `getmore`).
    pub(crate) op_type: String,
    /// The command, or for an update or delete logged per statement, the statement (`q`, `u`,
    /// `multi`, `upsert` / `q`, `limit`).
    pub(crate) command: Document,
    pub(crate) millis: f64,
    pub(crate) app: Option<String>,
    /// The connection (`conn12`) when the source names it.
    pub(crate) conn: Option<String>,
    pub(crate) client: Option<String>,
    pub(crate) plan: Option<String>,
    pub(crate) keys_examined: Option<i64>,
    pub(crate) docs_examined: Option<i64>,
    pub(crate) nreturned: Option<i64>,
    pub(crate) ninserted: Option<i64>,
    /// The cursor the operation opened or continued (`cursorid`), so a getMore's documents
    /// count for the find or aggregate that opened it.
    pub(crate) cursor_id: Option<i64>,
    /// The command was cut by the source (`$truncated`).
    pub(crate) truncated: bool,
    /// `lsid` and `txnNumber` where the source gives them beside the command (an entry whose
    /// command is a statement without its session).
    pub(crate) session: Option<Document>,
}

/// Where a source puts each operation it reads, as it reads it (a capture does not keep them:
/// `emit::Collector` counts them as they come).
pub(crate) trait Sink {
    fn take(&mut self, o: Observed);
}

impl Sink for Vec<Observed> {
    fn take(&mut self, o: Observed) {
        self.push(o);
    }
}

/// What a collection looked like on the live server, when one was reachable.
#[derive(Debug, Clone, Default)]
pub(crate) struct CollectionInfo {
    pub(crate) count: Option<u64>,
    pub(crate) avg_size: Option<f64>,
    /// `listIndexes`: each index's `key` and options (the `_id` index left out).
    pub(crate) indexes: Vec<Document>,
    /// A `$sample` of documents.
    pub(crate) sample: Vec<Document>,
    /// The collection's `_id`s, up to `profiler::IDS` of them (all of them when `count` is no
    /// more): what a value of another collection's field is matched against to find references.
    pub(crate) ids: Vec<Bson>,
    /// How often each value of the fields the captured reads select by occurs in the
    /// collection: read from at most `Options::sample_docs` documents.
    pub(crate) values: BTreeMap<String, FieldData>,
    /// Why the documents could not be read (the user may not `find` on the collection), when
    /// they could not: its fields are fitted from the operations alone.
    pub(crate) unreadable: Option<String>,
    /// Why reading the documents failed otherwise (a timeout, a lost connection).
    pub(crate) sampling_failed: Option<String>,
}

/// The data distribution of one field in the source collection: its values' frequencies in the
/// documents read.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldData {
    /// Documents read (all of them when `whole`).
    pub(crate) read: u64,
    /// Each value (strings, ObjectIds, numbers) with the documents read that hold it (each
    /// element of an array), the most frequent first.
    pub(crate) counts: Vec<(Bson, u64)>,
    /// Every document of the collection was read: the counts are the collection's own.
    pub(crate) whole: bool,
    /// The collection's distinct values, from `distinct` where an index leads with the field
    /// (it reads the index's keys, not the documents).
    pub(crate) distinct: Option<u64>,
    /// Per date field the captured reads also select by: each document read's value of this
    /// field and its date (ms since the epoch), for the two fitted together.
    pub(crate) dated: BTreeMap<String, Vec<(Bson, i64)>>,
}

/// What one read did in one call: documents returned, examined (explain's `executionStats`),
/// and counted (a count's value, or the documents that entered an aggregate's first `$group`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Call {
    pub(crate) returned: u64,
    pub(crate) docs_examined: Option<u64>,
    pub(crate) keys_examined: Option<u64>,
    pub(crate) counted: Option<u64>,
}

/// One figure per call over several calls: its mean and the mean's standard error.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub(crate) struct PerCall {
    pub(crate) mean: f64,
    pub(crate) se: f64,
}

impl PerCall {
    fn of(xs: &[u64]) -> Option<PerCall> {
        if xs.is_empty() {
            return None;
        }
        let n = crate::num::real_len(xs.len());
        let mean = xs.iter().map(|&x| crate::num::real(x)).sum::<f64>() / n;
        let var = if xs.len() > 1 {
            xs.iter()
                .map(|&x| (crate::num::real(x) - mean).powi(2))
                .sum::<f64>()
                / (n - 1.0)
        } else {
            0.0
        };
        Some(PerCall {
            mean,
            se: (var / n).sqrt(),
        })
    }
}

/// The work a read does per call over `calls` calls (a figure is there when every call said
/// it).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub(crate) struct Work {
    pub(crate) calls: u32,
    pub(crate) returned: PerCall,
    pub(crate) docs_examined: Option<PerCall>,
    pub(crate) keys_examined: Option<PerCall>,
    pub(crate) counted: Option<PerCall>,
}

impl Work {
    /// The figures of `calls`; None for none.
    pub(crate) fn of(calls: &[Call]) -> Option<Work> {
        let n = u32::try_from(calls.len()).ok().filter(|&n| n > 0)?;
        let figure = |f: &dyn Fn(&Call) -> Option<u64>| -> Option<PerCall> {
            let xs: Option<Vec<u64>> = calls.iter().map(f).collect();
            xs.and_then(|xs| PerCall::of(&xs))
        };
        Some(Work {
            calls: n,
            returned: figure(&|c| Some(c.returned)).unwrap_or_default(),
            docs_examined: figure(&|c| c.docs_examined),
            keys_examined: figure(&|c| c.keys_examined),
            counted: figure(&|c| c.counted),
        })
    }
}

/// How a capture is turned into a profile.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Fraction (0..=1) of the operations the emitted shapes must cover.
    pub(crate) coverage: f64,
    pub(crate) max_shapes: usize,
    pub(crate) group_by: GroupBy,
    pub(crate) scale: f64,
    pub(crate) keep_values: bool,
    /// The profiler's sample rate: the rates seen are divided by it.
    pub(crate) sample_rate: f64,
    /// Largest `preload` written (the real count goes in a comment).
    pub(crate) preload_cap: u64,
    /// The window's length in seconds when the source knows it (`--for`), else from the first
    /// and last operation.
    pub(crate) window_s: Option<f64>,
    /// Documents read per collection for the values' frequencies (`--sample-docs`).
    pub(crate) sample_docs: u64,
    /// Documents of the source are read (not `--no-sample-data`).
    pub(crate) sample_data: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            coverage: 0.95,
            max_shapes: 50,
            group_by: GroupBy::App,
            scale: 1.0,
            keep_values: false,
            sample_rate: 1.0,
            preload_cap: 100_000,
            window_s: None,
            sample_docs: 10_000,
            sample_data: true,
        }
    }
}

/// One thread group per client application, per namespace, or one for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupBy {
    App,
    Namespace,
    None,
}

/// What the source held that is not an operation of the profile, counted.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct LeftOut {
    /// Lines that are not JSON.
    pub(crate) not_json: u64,
    /// JSON lines that are not slow-operation lines (id 51803).
    pub(crate) not_operations: u64,
    /// Outside `--since` / `--until`.
    pub(crate) outside_window: u64,
    /// Driver and monitoring commands (`hello`, `ping`, `saslStart`, ...), by name.
    pub(crate) driver: BTreeMap<String, u64>,
    /// DDL, admin commands and change streams, by name.
    pub(crate) other: BTreeMap<String, u64>,
    /// getMore folded into the find or aggregate that opened the cursor.
    pub(crate) getmore_folded: u64,
    /// Command lines of updates and deletes whose statements were logged apart.
    pub(crate) double_logged: u64,
    /// Commands the source cut (`$truncated`): kept as far as they go.
    pub(crate) truncated: u64,
    /// Complete transactions, emitted as transactions of steps (one operation each).
    pub(crate) transactions: u64,
    /// Transactions seen only in part, or aborted: their statements captured one by one.
    pub(crate) partial_transactions: u64,
    pub(crate) aborted_transactions: u64,
    /// commitTransaction / abortTransaction commands.
    pub(crate) transaction_control: u64,
    /// Shapes beyond the coverage or `--max-shapes`, and their operations.
    pub(crate) shapes_not_emitted: u64,
    pub(crate) operations_not_emitted: u64,
}

impl LeftOut {
    pub(crate) fn driver_total(&self) -> u64 {
        self.driver.values().sum()
    }
    pub(crate) fn other_total(&self) -> u64 {
        self.other.values().sum()
    }
}

/// A number from a BSON value of any numeric type.
pub(crate) fn as_f64(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(crate::num::real_signed(*n)),
        Bson::Double(n) => Some(*n),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

/// An integer from a BSON value of any numeric type.
pub(crate) fn as_i64(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => {
            Some(crate::num::whole_signed(*n))
        }
        _ => None,
    }
}
