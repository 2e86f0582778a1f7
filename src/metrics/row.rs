//! One summary row as numbers: JMeter's Aggregate Report columns, then ours, and a row's
//! transactions (`TxCounts`). Text and column names are the report's business
//! (`report::columns`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    pub transactions: Option<TxCounts>,
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

/// Transactions of a row: committed, aborted, in doubt; retries of whole transactions and of
/// commits; and how many transactions took each number of retries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxCounts {
    pub committed: u64,
    pub aborted: u64,
    pub in_doubt: u64,
    pub(crate) retries: u64,
    pub(crate) commit_retries: u64,
    /// Retries of the whole transaction -> transactions that took that many.
    pub(crate) retried: BTreeMap<u32, u64>,
}

impl TxCounts {
    pub(crate) fn add_op(&mut self, t: &super::sample::TxSample) {
        use super::sample::TxState;
        match t.state {
            TxState::Committed => self.committed += 1,
            TxState::Aborted => self.aborted += 1,
            TxState::InDoubt => self.in_doubt += 1,
        }
        self.retries += u64::from(t.retries);
        self.commit_retries += u64::from(t.commit_retries);
        *self.retried.entry(u32::from(t.retries)).or_default() += 1;
    }

    pub(crate) fn add(&mut self, o: &TxCounts) {
        self.committed += o.committed;
        self.aborted += o.aborted;
        self.in_doubt += o.in_doubt;
        self.retries += o.retries;
        self.commit_retries += o.commit_retries;
        for (k, n) in &o.retried {
            *self.retried.entry(*k).or_default() += n;
        }
    }

    pub(crate) fn any(&self) -> bool {
        self.committed + self.aborted + self.in_doubt > 0
    }
}
