//! `sweep --watchers LIST`: the cost of listening. Each step runs the profile as written (its
//! writers at their own rates and lengths) with every watch group at N listeners; a step's
//! numbers are the writers' (the TOTAL row, which a watch group's events stand beside) and the
//! listeners' lag and delivery.

use serde::{Deserialize, Serialize};

use crate::metrics::Label;
use crate::summary::Summary;

/// One step: N listeners per watch group, what the writers did and what the listeners saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WatchStep {
    pub(crate) listeners: u32,
    /// The writers: every group but the watch groups.
    pub(crate) writes_per_s: f64,
    pub(crate) write_p50_ms: f64,
    pub(crate) write_p99_ms: f64,
    pub(crate) write_error_pct: f64,
    /// The listeners' lag (none without listeners).
    pub(crate) lag_p50_ms: Option<f64>,
    pub(crate) lag_p99_ms: Option<f64>,
    /// None when a watch group's filter cannot be read for the writes (not judged).
    pub(crate) expected: Option<u64>,
    pub(crate) delivered: u64,
    /// None when not judged, as `expected`.
    pub(crate) missing: Option<u64>,
    /// The step's run directory.
    pub(crate) dir: String,
}

/// The sweep over listeners, whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WatchSweep {
    pub(crate) profile: String,
    pub(crate) steps: Vec<WatchStep>,
    /// Interrupted, or a step failed: why the steps end where they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stopped: Option<String>,
}

impl WatchStep {
    /// The step with `listeners` per watch group, from its run's summary.
    pub(crate) fn measure(summary: &Summary, listeners: u32, dir: String) -> WatchStep {
        let mut step = WatchStep {
            listeners,
            dir,
            ..WatchStep::default()
        };
        let Some(run) = summary.runs.first() else {
            return step;
        };
        let total = run.total();
        step.writes_per_s = total.throughput;
        step.write_p50_ms = total.median_ms;
        step.write_p99_ms = total.p99_ms;
        step.write_error_pct = total.error_pct;
        // The lag over every watch group: the largest group's percentiles (one group, in the
        // bundled profile and the usual case).
        let lag = run
            .streams
            .iter()
            .filter_map(|s| {
                let label = Label::group(&s.group);
                run.rows.iter().find(|r| r.label == label)
            })
            .filter(|r| r.samples > 0)
            .max_by_key(|r| r.samples);
        step.lag_p50_ms = lag.map(|r| r.median_ms);
        step.lag_p99_ms = lag.map(|r| r.p99_ms);
        let judged = run.streams.iter().all(|s| s.expected.is_some());
        step.expected = judged.then(|| run.streams.iter().filter_map(|s| s.expected).sum());
        step.missing = judged.then(|| run.streams.iter().map(|s| s.missing).sum());
        step.delivered = run.streams.iter().map(|s| s.delivered).sum();
        step
    }
}
