//! One summary row as numbers: JMeter's Aggregate Report columns, then ours. Text and column
//! names are the report's business (`report::columns`).

use serde::{Deserialize, Serialize};

use super::Label;

/// One line of the summary table: JMeter's Aggregate Report columns, then ours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub label: Label,
    pub samples: u64,
    pub average_ms: f64,
    pub median_ms: f64,
    pub p90_ms: f64,
    pub(crate) p95_ms: f64,
    pub p99_ms: f64,
    pub(crate) min_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) error_pct: f64,
    /// Samples per second from first start to last end.
    pub throughput: f64,
    pub(crate) received_kb_sec: f64,
    pub(crate) sent_kb_sec: f64,
    pub p999_ms: f64,
    pub(crate) stddev_ms: f64,
    pub errors: u64,
    pub(crate) matched: u64,
    pub(crate) modified: u64,
    /// Documents returned (cursors read to their end), inserted, upserted and deleted, and all
    /// of them per second (over the same span as Throughput).
    #[serde(default)]
    pub(crate) returned: u64,
    #[serde(default)]
    pub(crate) inserted: u64,
    #[serde(default)]
    pub(crate) updated: u64,
    #[serde(default)]
    pub(crate) upserted: u64,
    #[serde(default)]
    pub(crate) deleted: u64,
    #[serde(default)]
    pub(crate) docs_per_sec: f64,
    /// Transactions (`transaction = true`): committed, aborted, in doubt, retries, and how many
    /// took each number of retries. Absent for rows without transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<super::group::TxCounts>,
    /// Service time (from the actual start); equal to the latency columns in closed loop.
    pub(crate) service_average_ms: f64,
    pub(crate) service_median_ms: f64,
    pub(crate) service_p90_ms: f64,
    pub(crate) service_p99_ms: f64,
    pub(crate) service_max_ms: f64,
    /// Operations that could not start on time because their user was still busy.
    pub(crate) late: u64,
    /// Largest delay of an actual start behind its intended start.
    pub(crate) max_behind_ms: f64,
    /// Scheduled operations that never started before the group's time ran out.
    pub(crate) missed: u64,
    /// The raw facts the rates above come from, so that parts can be merged exactly: first
    /// start and last end (microseconds since the Unix epoch), and payload bytes.
    #[serde(default)]
    pub(crate) first_start_us: u64,
    #[serde(default)]
    pub(crate) last_end_us: u64,
    #[serde(default)]
    pub(crate) sent_bytes: u64,
    #[serde(default)]
    pub(crate) received_bytes: u64,
    /// The whole run's latency histogram (HdrHistogram V2 + deflate, base64), from which every
    /// percentile above can be recomputed exactly; in summaries, not in live lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
    /// The same for service time, in open loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) service_hdr: Option<String>,
}
