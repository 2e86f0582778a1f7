//! Unavailability, measured: per group and for the whole run (any group), the gaps between
//! successful operations (or the server's refusals, which are answers too) longer than a bound, with the error classes seen in them, and the
//! successes per second, from which the time from a fault to the first success and to the
//! throughput before it are read. Fed by the recorder with every sample (a few comparisons
//! each); judged after the run, when each group's median latency is known.

use super::{real, real_len};
use serde::{Deserialize, Serialize};

use super::sample::{ErrorClass, Sample};
use super::Label;

/// Gaps a series keeps at most (a slow open loop gaps between each operation).
const MAX_GAPS: usize = 1 << 20;

/// A gap with no success, as recorded: microseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gap {
    pub(crate) start_us: u64,
    pub(crate) end_us: u64,
    /// The error classes seen in it (`ErrorClass::bit`).
    pub(crate) classes: u16,
    /// Still without a success when the run ended.
    pub(crate) open: bool,
}

/// One series' successes and gaps.
#[derive(Debug, Clone, Default)]
pub(crate) struct Track {
    first_start_us: Option<u64>,
    last_ok_us: Option<u64>,
    last_end_us: u64,
    /// Error classes since the last success.
    since: u16,
    pub(crate) gaps: Vec<Gap>,
    /// Successes per second from `t0`.
    pub(crate) ok_per_sec: Vec<u32>,
}

impl Track {
    fn observe(&mut self, s: &Sample, t0_us: u64, min_gap_us: u64) {
        let end = s.end_us();
        self.first_start_us.get_or_insert(s.start_us);
        self.last_end_us = self.last_end_us.max(end);
        // A refusal (a duplicate key, a bad value) is the server's answer: it ends a gap as a
        // success does. An error of the tool's own side says nothing of the server.
        match s.error.as_deref().map(|e| e.class) {
            Some(c) if c.unavailable() => self.since |= c.bit(),
            Some(c) if !c.answered() => {}
            _ => {
                let from = match self.last_ok_us {
                    Some(last) => Some(last),
                    // Failures before the first success: the gap runs from the first start.
                    None if self.since != 0 => self.first_start_us,
                    None => None,
                };
                if let Some(from) = from.filter(|f| end > f + min_gap_us) {
                    if self.gaps.len() >= MAX_GAPS {
                        // An open loop slow enough to gap every operation: keep the longest.
                        self.gaps.retain(|g| g.end_us - g.start_us >= 1_000_000);
                    }
                    self.gaps.push(Gap {
                        start_us: from,
                        end_us: end,
                        classes: self.since,
                        open: false,
                    });
                }
                self.last_ok_us = Some(self.last_ok_us.map_or(end, |l| l.max(end)));
                self.since = 0;
                let sec =
                    usize::try_from(end.saturating_sub(t0_us) / 1_000_000).unwrap_or(usize::MAX);
                if self.ok_per_sec.len() <= sec {
                    self.ok_per_sec.resize(sec + 1, 0);
                }
                self.ok_per_sec[sec] += 1;
            }
        }
    }

    fn finish(&mut self, min_gap_us: u64) {
        let from = self.last_ok_us.or(self.first_start_us);
        if let Some(from) = from {
            if self.since != 0 && self.last_end_us > from + min_gap_us {
                self.gaps.push(Gap {
                    start_us: from,
                    end_us: self.last_end_us,
                    classes: self.since,
                    open: true,
                });
            }
        }
    }

    /// The end of the first success after a fault from `at_us` to `over_us`: the end of the
    /// longest gap that covers the fault's start or begins before it is over (operations in
    /// flight may still end just after the fault began), else `at_us` itself (no gap of the
    /// recorded minimum followed it).
    pub(crate) fn first_success_after(&self, at_us: u64, over_us: u64) -> Option<u64> {
        let until = over_us.max(at_us + 1_000_000);
        let gap = self
            .gaps
            .iter()
            .filter(|g| g.end_us > at_us && g.start_us <= until)
            .max_by_key(|g| g.end_us - g.start_us);
        match gap {
            Some(g) if g.open => None,
            Some(g) => Some(g.end_us),
            None if self.last_ok_us.is_some_and(|l| l >= at_us) => Some(at_us),
            None => None,
        }
    }
}

/// The whole run's tracks: one per group (by index) and one for any group.
#[derive(Debug, Clone, Default)]
pub struct Availability {
    /// Where the seconds count from (epoch microseconds).
    pub(crate) t0_us: u64,
    /// Gaps shorter than this are not kept.
    pub(crate) min_gap_us: u64,
    pub(crate) groups: Vec<Track>,
    pub(crate) all: Track,
}

impl Availability {
    pub fn new(groups: usize, t0_us: u64, min_gap_us: u64) -> Self {
        Availability {
            t0_us,
            min_gap_us,
            groups: vec![Track::default(); groups],
            all: Track::default(),
        }
    }

    pub(crate) fn observe(&mut self, s: &Sample) {
        let (t0, min) = (self.t0_us, self.min_gap_us);
        if let Some(t) = self.groups.get_mut(usize::from(s.group)) {
            t.observe(s, t0, min);
        }
        self.all.observe(s, t0, min);
    }

    /// No more samples: a gap still open at the end is closed there.
    pub(crate) fn finish(&mut self) {
        let min = self.min_gap_us;
        for t in &mut self.groups {
            t.finish(min);
        }
        self.all.finish(min);
    }
}

/// A window of unavailability, as the summary reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Window {
    /// A group's name, or TOTAL (no group had a success).
    pub(crate) label: Label,
    /// Epoch milliseconds.
    pub(crate) start_ms: u64,
    pub(crate) end_ms: u64,
    pub(crate) secs: f64,
    /// From the run's first stage start.
    pub(crate) offset_secs: f64,
    /// The error classes seen in it (none: the operations only waited).
    pub(crate) classes: Vec<String>,
    /// Still without a success when the run ended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) open: bool,
}

impl Window {
    pub(crate) fn line(&self) -> String {
        format!(
            "{}: unavailable {:.2}s from +{:.2}s{}{}",
            self.label,
            self.secs,
            self.offset_secs,
            if self.classes.is_empty() {
                " (no errors: operations waited)".to_string()
            } else {
                format!(" ({})", self.classes.join(", "))
            },
            if self.open { ", until the end" } else { "" }
        )
    }
}

/// The classes in a set.
pub(crate) fn classes(set: u16) -> Vec<String> {
    ErrorClass::ALL
        .iter()
        .filter(|c| set & c.bit() != 0)
        .map(|c| c.as_str().to_string())
        .collect()
}

/// The gaps of `track` at least `bound_us` long, as windows labelled `label`.
pub(crate) fn windows(track: &Track, label: Label, bound_us: u64, t0_us: u64) -> Vec<Window> {
    track
        .gaps
        .iter()
        .filter(|g| g.end_us - g.start_us >= bound_us)
        .map(|g| Window {
            label: label.clone(),
            start_ms: g.start_us / 1000,
            end_ms: g.end_us / 1000,
            secs: real(g.end_us - g.start_us) / 1e6,
            offset_secs: real(g.start_us.saturating_sub(t0_us)) / 1e6,
            classes: classes(g.classes),
            open: g.open,
        })
        .collect()
}

/// How a series came back after a fault from `at_us` to `over_us`: seconds to its first success (0 when no
/// recorded gap followed it), and to the end of the first whole second after the
/// fault's with at least 90 % of the successes per second of the (up to) 5 whole seconds
/// before it (to the second; 0 for a series the fault left untouched: no gap after it and the
/// next second at that rate).
pub(crate) fn recovery(
    track: &Track,
    t0_us: u64,
    at_us: u64,
    over_us: u64,
) -> (Option<f64>, Option<f64>, f64) {
    let first = track
        .first_success_after(at_us, over_us)
        .map(|t| real(t.saturating_sub(at_us)) / 1e6);
    let sec = usize::try_from(at_us.saturating_sub(t0_us) / 1_000_000).unwrap_or(usize::MAX);
    // Whole seconds before the fault's, leaving out the run's first (it is partial).
    let before: Vec<u32> = (sec.saturating_sub(5).max(1)..sec)
        .map(|s| track.ok_per_sec.get(s).copied().unwrap_or(0))
        .collect();
    let rate = if before.is_empty() {
        0.0
    } else {
        f64::from(before.iter().sum::<u32>()) / real_len(before.len())
    };
    // Whole seconds after the fault's own (which holds successes from before it).
    let back = (rate > 0.0)
        .then(|| {
            (sec + 1..track.ok_per_sec.len().saturating_sub(1))
                .find(|&s| f64::from(track.ok_per_sec[s]) >= 0.9 * rate)
        })
        .flatten()
        .map(|s| {
            // Untouched: no gap after the fault, and the very next second at the rate.
            if first == Some(0.0) && s == sec + 1 {
                0.0
            } else {
                real(
                    (t0_us + (u64::try_from(s).unwrap_or(u64::MAX) + 1) * 1_000_000)
                        .saturating_sub(at_us),
                ) / 1e6
            }
        });
    (first, back, rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OpError;

    fn ok(at_ms: u64) -> Sample {
        Sample::at(at_ms * 1000, 1000)
    }

    fn failed(at_ms: u64, class: ErrorClass) -> Sample {
        let mut s = Sample::at(at_ms * 1000, 1000);
        s.error = Some(Box::new(OpError {
            class,
            code: None,
            message: String::new().into(),
        }));
        s
    }

    #[test]
    fn a_gap_between_successes_is_a_window_with_its_errors() {
        let t0 = 1_000_000_000;
        let mut a = Availability::new(1, t0 * 1000, 1_000_000);
        for ms in (0..3000).step_by(10) {
            a.observe(&ok(t0 + ms));
        }
        // 3 s of refusals, then successes again.
        for ms in (3000..6000).step_by(10) {
            a.observe(&failed(t0 + ms, ErrorClass::NotPrimary));
        }
        for ms in (6000..10000).step_by(10) {
            a.observe(&ok(t0 + ms));
        }
        a.finish();
        let w = windows(&a.groups[0], Label::group("insert"), 1_000_000, t0 * 1000);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!((w[0].secs - 3.01).abs() < 0.02, "{w:?}");
        assert_eq!(w[0].classes, vec!["not_primary"]);
        // A bound above the gap: no window.
        assert!(windows(&a.groups[0], Label::group("insert"), 4_000_000, t0 * 1000).is_empty());
        let (first, back, rate) = recovery(
            &a.groups[0],
            t0 * 1000,
            (t0 + 3000) * 1000,
            (t0 + 6000) * 1000,
        );
        assert!((first.unwrap() - 3.0).abs() < 0.05, "{first:?}");
        assert_eq!(rate, 100.0);
        assert!((back.unwrap() - 4.0).abs() < 0.01, "{back:?}");
    }

    #[test]
    fn failures_to_the_end_leave_an_open_window_and_a_short_gap_none() {
        let t0 = 2_000_000_000;
        let mut a = Availability::new(1, t0 * 1000, 1_000_000);
        a.observe(&ok(t0));
        a.observe(&ok(t0 + 500));
        for ms in (600..2600).step_by(100) {
            a.observe(&failed(t0 + ms, ErrorClass::Network));
        }
        a.finish();
        let w = windows(&a.all, Label::Total, 1_000_000, t0 * 1000);
        assert_eq!(w.len(), 1);
        assert!(w[0].open);
        assert_eq!(w[0].classes, vec!["network"]);
    }
}
