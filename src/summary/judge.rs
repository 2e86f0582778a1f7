//! The one judge of a result: a threshold's verdict on the metrics of the row it names, for a
//! run, an interval (an aborting threshold), a merge and a capacity step alike, recorded as data
//! (`ThresholdResult`); and the exit code every command and the report give a result.
//!
//! Owns: which metrics a threshold looks at, whether it holds, what a threshold result records,
//! which gaps are unavailability, whether an invariant holds, and the exit policy. Never: parses threshold text (the plan did), or prints.

use std::borrow::Cow;

use super::ThresholdResult;
use crate::error::exit;
use crate::metrics::availability::{windows, Availability, Window};
use crate::metrics::{GroupMetrics, Label};
use crate::plan::limits::UNAVAILABLE_AFTER;
use crate::plan::thresholds::ThresholdPlan;

/// The metrics a threshold names from the groups' metrics by plan index: its group's, one kind
/// of a mixed group's, or all groups' added up for TOTAL.
pub(crate) fn select<'a>(
    rule: &ThresholdPlan,
    groups: &'a [GroupMetrics],
) -> Cow<'a, GroupMetrics> {
    let m = match rule.group {
        Some(g) => groups
            .get(g)
            .map_or_else(|| Cow::Owned(GroupMetrics::default()), Cow::Borrowed),
        None => {
            let mut all = GroupMetrics::default();
            groups
                .iter()
                .enumerate()
                .filter(|(i, _)| !rule.beside.contains(i))
                .for_each(|(_, m)| all.merge(m));
            Cow::Owned(all)
        }
    };
    match &rule.kind {
        None => m,
        Some(kind) => match m {
            Cow::Borrowed(g) => g
                .kinds
                .get(kind)
                .map_or_else(|| Cow::Owned(GroupMetrics::default()), Cow::Borrowed),
            Cow::Owned(g) => Cow::Owned(g.kinds.get(kind).cloned().unwrap_or_default()),
        },
    }
}

/// How a threshold is judged besides its value.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Judging {
    /// One part of a run in parts, and the metric grows with the load: the merge judges it,
    /// here it passes, marked.
    pub(crate) deferred: bool,
    /// It stopped the run (`abort = true`): it failed, whatever the whole run says.
    pub(crate) aborted: bool,
}

/// The verdicts of a run's absolute thresholds on its groups' metrics (by plan index): in one
/// part of a run in parts, a metric that grows with the load passes, marked, for the merge to
/// judge; the threshold that stopped the run (`aborted_by`, as written) failed; and `lost`
/// fails while an unfinished audit left writes unread (it knows nothing of them).
pub(crate) fn run_thresholds(
    plan: &crate::plan::RunPlan,
    metrics: &[GroupMetrics],
    aborted_by: Option<&str>,
    audit_unfinished: bool,
) -> Vec<ThresholdResult> {
    plan.thresholds
        .iter()
        .filter(|t| t.relative.is_none())
        .map(|t| {
            let how = Judging {
                deferred: plan.part.is_some() && t.metric.scales_with_load(),
                aborted: aborted_by == Some(t.text.as_str()),
            };
            let mut r = judge(t, &select(t, metrics), how);
            if audit_unfinished && t.metric.kind == crate::metrics::MetricKind::Lost {
                r.pass = false;
            }
            r
        })
        .collect()
}

/// The verdict of an absolute threshold on the metrics of its row.
pub(crate) fn judge(rule: &ThresholdPlan, m: &GroupMetrics, how: Judging) -> ThresholdResult {
    let value = rule.metric.value(m);
    ThresholdResult {
        threshold: rule.text.clone(),
        label: Some(rule.label.clone()),
        metric: Some(rule.metric),
        cmp: Some(rule.cmp),
        relative: false,
        value,
        limit: rule.limit,
        unit: rule.metric.unit().to_string(),
        pass: how.passes(holds(rule, value)),
        aborted: how.aborted,
        deferred: how.deferred,
    }
}

impl Judging {
    /// The verdict, by the one rule every threshold is judged by: a deferred one passes, one
    /// that stopped the run failed, any other passes when its value keeps within its limit.
    fn passes(self, holds: bool) -> bool {
        self.deferred || (holds && !self.aborted)
    }
}

/// A `lag_max` threshold when no member's lag was measured (`lag` none) fails: nothing shows
/// that its limit held (a `members` warning says why).
pub(crate) fn unmeasured_lag(t: &mut ThresholdResult, lag: Option<f64>) {
    if lag.is_none()
        && t.metric
            .is_some_and(|m| m.kind == crate::vocab::MetricKind::LagMax)
    {
        t.pass = false;
    }
}

/// Does `value` keep within the rule's limit? (An aborting threshold asks this per interval.)
pub(crate) fn holds(rule: &ThresholdPlan, value: f64) -> bool {
    rule.cmp.holds(value, rule.limit)
}

/// The verdict of a relative threshold (`find.p99 <= +10%`): `compare`'s gate against the
/// baseline, its change in percent and whether it passed.
pub(crate) fn judge_relative(
    rule: &ThresholdPlan,
    change_pct: Option<f64>,
    pass: bool,
) -> ThresholdResult {
    ThresholdResult {
        threshold: rule.text.clone(),
        label: Some(rule.label.clone()),
        metric: Some(rule.metric),
        cmp: Some(rule.cmp),
        relative: true,
        value: change_pct.unwrap_or(0.0),
        limit: rule.limit,
        unit: "% change".into(),
        pass,
        aborted: false,
        deferred: false,
    }
}

impl ThresholdResult {
    /// The threshold again, from what this result recorded (a merge judges it on the merged
    /// rows); None for a relative one (it needs its baseline) or one recorded before the
    /// thresholds were data.
    pub(crate) fn rule(&self, groups: &[String]) -> Option<ThresholdPlan> {
        let (label, metric, cmp) = (self.label.clone()?, self.metric?, self.cmp?);
        if self.relative {
            return None;
        }
        let group = match label.group_row() {
            Some(g) => Some(groups.iter().position(|x| g.is(x))?),
            None => None,
        };
        let kind = match &label {
            Label::Kind { kind, .. } => Some(kind.clone()),
            _ => None,
        };
        Some(ThresholdPlan {
            beside: Vec::new(),
            text: self.threshold.clone(),
            label,
            group,
            kind,
            metric,
            cmp,
            limit: self.limit,
            abort: false,
            after: std::time::Duration::ZERO,
            relative: None,
        })
    }
}

/// What a result's exit code is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Outcome {
    /// Stopped by the user (Ctrl-C, SIGTERM): what completed is shown.
    pub(crate) interrupted: bool,
    /// A threshold, a gate or an SLO search's limit failed.
    pub(crate) threshold_failed: bool,
    /// Some operations failed, the run stopped on its error rate, an output was not written
    /// whole, or a part of the tool failed.
    pub(crate) failed: bool,
    /// The audit found acknowledged writes the server did not keep.
    pub(crate) data_lost: bool,
}

impl Outcome {
    /// SPEC's exit codes: 130 interrupted, 5 acknowledged data lost (before 4 and 1), 4 a
    /// threshold failed (before 1), 1 failed, 0 done.
    pub(crate) fn exit_code(self) -> i32 {
        if self.interrupted {
            exit::INTERRUPTED
        } else if self.data_lost {
            exit::DATA_LOST
        } else if self.threshold_failed {
            exit::THRESHOLD
        } else if self.failed {
            exit::ERRORS
        } else {
            exit::OK
        }
    }

    /// The exit code with what it means, as the report's header says it.
    pub(crate) fn words(self) -> String {
        let code = self.exit_code();
        let what = match code {
            exit::INTERRUPTED => "interrupted: what completed is shown",
            exit::DATA_LOST => "the audit found acknowledged data lost",
            exit::THRESHOLD => "a threshold failed",
            exit::ERRORS => "some operations failed, or a part of the tool did",
            _ => "done",
        };
        format!("{code} ({what})")
    }
}

/// The windows without a success longer than each series' bound (`unavailable_after`, else
/// `UNAVAILABLE_AFTER` or 10x its median latency, or 3 of an open-loop group's intervals, if
/// longer); each group's longest goes into its metrics for `unavailable_max`. The run's own
/// windows (no group had a success) count only where something went wrong: errors in them, or
/// a fault; idle time between stages or before a delayed group is not unavailability.
pub(crate) fn unavailability(
    plan: &crate::plan::RunPlan,
    a: &Availability,
    metrics: &mut [GroupMetrics],
    t0_us: u64,
    faults: &[super::faults::FaultEvent],
) -> Vec<Window> {
    let bound = |median_ms: f64, rate: Option<f64>| -> u64 {
        match plan.unavailable_after {
            Some(d) => u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
            None => {
                let by_rate = rate.filter(|r| *r > 0.0).map_or(0.0, |r| 3e6 / r);
                crate::num::whole(
                    (UNAVAILABLE_AFTER.as_secs_f64() * 1e6)
                        .max(median_ms * 10_000.0)
                        .max(by_rate)
                        .trunc(),
                )
            }
        }
    };
    let mut out = Vec::new();
    let mut all = GroupMetrics::default();
    for g in plan.groups() {
        let Some(track) = a.groups.get(g.index) else {
            continue;
        };
        let m = &mut metrics[g.index];
        let w = windows(
            track,
            Label::group(&g.name),
            bound(m.latency.quantile_ms(0.5), g.rate),
            t0_us,
        );
        m.outage.unavailable_max_us = w
            .iter()
            .map(|w| crate::num::whole((w.secs * 1e6).trunc()))
            .max()
            .unwrap_or(0);
        all.merge(m);
        out.extend(w);
    }
    let rate: f64 = plan.groups().filter_map(|g| g.rate).sum();
    out.extend(
        windows(
            &a.all,
            Label::Total,
            bound(all.latency.quantile_ms(0.5), (rate > 0.0).then_some(rate)),
            t0_us,
        )
        .into_iter()
        .filter(|w| {
            !w.classes.is_empty()
                || faults
                    .iter()
                    .any(|e| e.start_ms <= w.end_ms && w.start_ms <= e.end_ms)
        }),
    );
    out
}

/// An invariant's verdict: the sum kept, and no document below its minimum.
pub(crate) fn invariant(s: super::InvariantSums) -> super::InvariantResult {
    super::InvariantResult {
        holds: s.sum_after == s.sum_before && s.below_min == 0,
        collection: s.collection,
        field: s.field,
        sum_before: s.sum_before,
        sum_after: s.sum_after,
        min: s.min,
        lowest: s.lowest,
        below_min: s.below_min,
        documents: s.documents,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Sample;

    #[test]
    fn the_exit_code_follows_spec_precedence() {
        let o = |interrupted, threshold_failed, failed| Outcome {
            interrupted,
            threshold_failed,
            failed,
            data_lost: false,
        };
        let lost = |interrupted| Outcome {
            interrupted,
            threshold_failed: true,
            failed: true,
            data_lost: true,
        };
        assert_eq!(lost(false).exit_code(), 5);
        assert_eq!(lost(true).exit_code(), 130);
        assert_eq!(o(false, false, false).exit_code(), 0);
        assert_eq!(o(false, false, true).exit_code(), 1);
        assert_eq!(o(false, true, true).exit_code(), 4);
        assert_eq!(o(true, true, true).exit_code(), 130);
        assert_eq!(o(false, true, false).words(), "4 (a threshold failed)");
    }

    #[test]
    fn a_recorded_threshold_is_judged_again_the_same() {
        let groups = vec!["find".to_string(), "mix".to_string()];
        let mut m = GroupMetrics::default();
        for i in 1..=100u64 {
            m.record(&Sample::at(i * 1000, i * 1000));
        }
        for expr in ["find.p99<50ms", "TOTAL.samples>10", "find.median>=40ms"] {
            let rule = ThresholdPlan::parse_cli(expr, &groups).unwrap();
            let first = judge(&rule, &m, Judging::default());
            let again = first.rule(&groups).expect("recorded as data");
            assert_eq!(again.label, rule.label);
            assert_eq!(judge(&again, &m, Judging::default()), first, "{expr}");
        }
        let rule = ThresholdPlan::parse_cli("find.p99<50ms", &groups).unwrap();
        let aborted = judge(
            &rule,
            &m,
            Judging {
                aborted: true,
                ..Judging::default()
            },
        );
        assert!(!aborted.pass && aborted.aborted);
        let deferred = judge(
            &ThresholdPlan::parse_cli("TOTAL.samples>1000", &groups).unwrap(),
            &m,
            Judging {
                deferred: true,
                ..Judging::default()
            },
        );
        assert!(deferred.pass && deferred.deferred);
    }
}
