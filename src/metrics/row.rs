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
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub error_pct: f64,
    /// Samples per second from first start to last end.
    pub throughput: f64,
    pub received_kb_sec: f64,
    pub sent_kb_sec: f64,
    pub p999_ms: f64,
    pub stddev_ms: f64,
    pub errors: u64,
    pub matched: u64,
    pub modified: u64,
    /// Documents returned (cursors read to their end), inserted, upserted and deleted, and all
    /// of them per second (over the same span as Throughput).
    #[serde(default)]
    pub returned: u64,
    #[serde(default)]
    pub inserted: u64,
    #[serde(default)]
    pub updated: u64,
    #[serde(default)]
    pub upserted: u64,
    #[serde(default)]
    pub deleted: u64,
    #[serde(default)]
    pub docs_per_sec: f64,
    /// Transactions (`transaction = true`): committed, aborted, in doubt, retries, and how many
    /// took each number of retries. Absent for rows without transactions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<super::group::TxCounts>,
    /// Service time (from the actual start); equal to the latency columns in closed loop.
    pub service_average_ms: f64,
    pub service_median_ms: f64,
    pub service_p90_ms: f64,
    pub service_p99_ms: f64,
    pub service_max_ms: f64,
    /// Operations that could not start on time because their user was still busy.
    pub late: u64,
    /// Largest delay of an actual start behind its intended start.
    pub max_behind_ms: f64,
    /// Scheduled operations that never started before the group's time ran out.
    pub missed: u64,
    /// The raw facts the rates above come from, so that parts can be merged exactly: first
    /// start and last end (microseconds since the Unix epoch), and payload bytes.
    #[serde(default)]
    pub first_start_us: u64,
    #[serde(default)]
    pub last_end_us: u64,
    #[serde(default)]
    pub sent_bytes: u64,
    #[serde(default)]
    pub received_bytes: u64,
    /// The whole run's latency histogram (HdrHistogram V2 + deflate, base64), from which every
    /// percentile above can be recomputed exactly; in summaries, not in live lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
    /// The same for service time, in open loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_hdr: Option<String>,
}
