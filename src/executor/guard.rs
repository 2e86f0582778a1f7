//! The error-rate stop (`stop_on_error_pct`): a `Watch` on the recorder that stops the run when
//! too many recent operations failed.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::metrics::{Flow, Output, RunEvent, Sample, Watch};
use crate::plan::thresholds::ThresholdPlan;
use crate::summary::judge;

/// Why a run stopped before its plan (the result model's type: the session hands it over as
/// measured).
pub(crate) use crate::summary::Stopped as StopReason;

/// Stops the run once `pct` percent of the recent operations failed: the last
/// `GUARD_WINDOW_OPS` that completed within `GUARD_WINDOW`, at least `GUARD_MIN_OPS` of them.
/// Recent, so a server that dies late in a long run stops it soon, however well it did before.
pub(crate) struct ErrorGuard {
    pub(crate) pct: f64,
    pub(crate) stop: CancellationToken,
    /// Why the run stopped early, once it has.
    pub(crate) reason: Arc<OnceLock<StopReason>>,
    recent: VecDeque<(u64, bool)>,
}

pub(crate) use crate::plan::limits::{GUARD_MIN_OPS, GUARD_WINDOW, GUARD_WINDOW_OPS};

impl ErrorGuard {
    pub(crate) fn new(
        pct: f64,
        stop: CancellationToken,
        reason: Arc<OnceLock<StopReason>>,
    ) -> Self {
        ErrorGuard {
            pct,
            stop,
            reason,
            recent: VecDeque::with_capacity(GUARD_WINDOW_OPS),
        }
    }

    fn observe_one(&mut self, s: &Sample) {
        if self.recent.len() == GUARD_WINDOW_OPS {
            self.recent.pop_front();
        }
        self.recent.push_back((s.end_us(), s.error.is_some()));
    }

    /// Checks the window ending at `now_us`; on tripping, records why and stops the run.
    fn check_window(&mut self, now_us: u64) -> bool {
        let window_us = u64::try_from(GUARD_WINDOW.as_micros()).unwrap_or(u64::MAX);
        let horizon = now_us.saturating_sub(window_us);
        while self.recent.front().is_some_and(|(end, _)| *end < horizon) {
            self.recent.pop_front();
        }
        let n = self.recent.len();
        let failed = self.recent.iter().filter(|(_, f)| *f).count();
        // Operations ended within a few seconds: far below 2^52, exact as f64.
        #[allow(clippy::cast_precision_loss)]
        let failed_pct = failed as f64 * 100.0 / n.max(1) as f64;
        if n < GUARD_MIN_OPS || failed_pct < self.pct {
            return false;
        }
        let _ = self.reason.set(StopReason {
            message: format!(
                "stopped early: {failed} of the last {n} operations failed ({:.1} %), at or over stop_on_error_pct = {}",
                failed_pct,
                self.pct
            ),
            threshold: None,
        });
        self.stop.cancel();
        true
    }
}

impl Watch for ErrorGuard {
    fn observe(&mut self, s: &Sample) {
        self.observe_one(s);
    }

    fn check(&mut self, now_us: u64) -> bool {
        self.check_window(now_us)
    }
}

/// Thresholds with `abort = true`: checked on the run's totals at the end of every interval
/// once their `after` has passed; the first that fails stops the run, like k6's `abortOnFail`.
pub(crate) struct ThresholdAbort {
    pub(crate) rules: Vec<ThresholdPlan>,
    pub(crate) stop: CancellationToken,
    /// Why the run stopped early, once it has.
    pub(crate) reason: Arc<OnceLock<StopReason>>,
}

impl Output for ThresholdAbort {
    fn name(&self) -> &'static str {
        "the threshold abort"
    }

    /// The run's totals at each interval's end; done once it has stopped the run.
    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        let RunEvent::Interval(closed) = event else {
            return Flow::More;
        };
        let elapsed = closed.elapsed;
        for rule in self.rules.iter().filter(|r| elapsed >= r.after) {
            let m = judge::select(rule, closed.totals);
            if m.samples == 0 {
                continue;
            }
            let value = rule.metric.value(&m);
            if !judge::holds(rule, value) {
                let _ = self.reason.set(StopReason {
                    message: format!(
                        "stopped early: threshold `{}` failed {:.1} s into the run ({value:.2}{})",
                        rule.text,
                        elapsed.as_secs_f64(),
                        rule.metric.unit()
                    ),
                    threshold: Some(rule.text.clone()),
                });
                self.stop.cancel();
                return Flow::Done;
            }
        }
        Flow::More
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ErrorClass, OpError};

    fn sample(end_us: u64, failed: bool) -> Sample {
        Sample {
            error: failed.then(|| {
                Box::new(OpError {
                    class: ErrorClass::Network,
                    code: None,
                    message: "gone".into(),
                })
            }),
            ..Sample::at(end_us - 10, 10)
        }
    }

    fn guard(pct: f64) -> ErrorGuard {
        ErrorGuard::new(pct, CancellationToken::new(), Arc::new(OnceLock::new()))
    }

    #[test]
    fn the_guard_trips_on_recent_failures_however_many_successes_came_before() {
        let mut g = guard(50.0);
        let t = 100_000_000_000;
        for i in 0..10_000 {
            g.observe_one(&sample(t + i, false));
        }
        assert!(!g.check_window(t + 10_000));
        // The server dies: 4 users fail once a second for a few seconds.
        for i in 0..60 {
            g.observe_one(&sample(t + 10_000 + i * 250_000, true));
        }
        assert!(g.check_window(t + 10_000 + 60 * 250_000));
        assert!(g.stop.is_cancelled());
        assert!(g
            .reason
            .get()
            .unwrap()
            .message
            .contains("stop_on_error_pct = 50"));
    }

    #[test]
    fn the_guard_needs_a_few_recent_operations_and_forgets_old_ones() {
        let mut g = guard(50.0);
        let t = 100_000_000_000;
        g.observe_one(&sample(t, true));
        g.observe_one(&sample(t + 1, true));
        assert!(!g.check_window(t + 2), "two failures are not yet a pattern");
        // Failures older than the window do not count.
        for i in 0..5 {
            g.observe_one(&sample(t + i, true));
        }
        assert!(!g.check_window(t + 11_000_000 + u64::try_from(GUARD_WINDOW.as_micros()).unwrap()));
        assert!(!g.stop.is_cancelled());
    }
}
