//! What a scheduled fault did and how each series came back after it (`fault` carries the faults
//! out; the summary keeps their events).

use serde::{Deserialize, Serialize};

use crate::plan::fault::FaultKind;

/// What a fault did, and how each series came back after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultEvent {
    pub(crate) kind: FaultKind,
    /// As `--fault` writes it.
    pub(crate) fault: String,
    /// Epoch milliseconds: when it was done, and when it was over (the server listening
    /// again, the pause or the step-down's length over).
    pub(crate) start_ms: u64,
    pub(crate) end_ms: u64,
    /// From the first stage's start.
    pub(crate) offset_secs: f64,
    /// What happened, in words ("pid 4242 killed; pid 4250 listening after 0.62 s").
    pub(crate) detail: String,
    /// It could not be done (whole or in part).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// Per group and TOTAL: seconds from the fault to the first success, and to the
    /// throughput before it.
    #[serde(default)]
    pub(crate) recovery: Vec<Recovery>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Recovery {
    pub(crate) label: crate::metrics::Label,
    /// Successes per second in the (up to) 5 whole seconds before the fault.
    pub(crate) rate_before: f64,
    /// Seconds from the fault to the first success; None: none before the run ended.
    pub(crate) first_success_secs: Option<f64>,
    /// Seconds from the fault to the end of the first whole second with 90 % of
    /// `rate_before` (to the second); None: not within the run.
    pub(crate) throughput_back_secs: Option<f64>,
}

impl FaultEvent {
    pub(crate) fn line(&self) -> String {
        format!(
            "fault {} at +{:.2}s, over after {:.2}s: {}{}",
            self.fault,
            self.offset_secs,
            crate::num::real(self.end_ms.saturating_sub(self.start_ms)) / 1000.0,
            self.detail,
            self.error
                .as_ref()
                .map_or(String::new(), |e| format!(" (failed: {e})"))
        )
    }
}
