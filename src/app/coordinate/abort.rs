//! The run's `abort` thresholds judged by the coordinator on the whole run as it goes: each
//! merged interval's histograms added into the run's totals per group, the rules checked after
//! each interval, as a single run's threshold abort checks its own totals.
//!
//! From histograms alone: percentiles, the maximum and minimum, errors and throughput are the
//! run's own; an average is the histogram's (within its 0.1 % resolution). A rule on one kind of
//! a mixed group is left to the merge after the run, and said so.
//!
//! `stop_on_error_pct` too: a single run judges the last `GUARD_WINDOW_OPS` operations that ended
//! within `GUARD_WINDOW`; the coordinator, which sees intervals, not operations, judges the most
//! recent merged intervals that hold at least `GUARD_WINDOW_OPS` operations (the last one alone
//! when it holds that many), within `GUARD_WINDOW`, once they hold `GUARD_MIN_OPS`.

use hdrhistogram::Histogram;

use crate::coordinate::hub::MergedSeries;
use crate::metrics::interval::Tag;
use crate::metrics::{GroupMetrics, Label};
use crate::plan::thresholds::ThresholdPlan;
use crate::plan::RunPlan;
use crate::summary::judge;

pub(super) struct WholeAbort {
    rules: Vec<ThresholdPlan>,
    /// Each group's row as the interval log tags it, by the plan's group index.
    tags: Vec<String>,
    totals: Vec<GroupMetrics>,
    /// The first merged interval's start.
    began_us: Option<u64>,
    /// `stop_on_error_pct`, and the recent merged intervals: (start, operations, failed).
    error_pct: Option<f64>,
    /// The groups that send load (not the change-stream listeners): their counted and warm-up
    /// tags.
    loading: Vec<(String, String)>,
    recent: std::collections::VecDeque<(u64, u64, u64)>,
}

impl WholeAbort {
    /// The plan's aborting rules; each one judged only after the run is said.
    pub(super) fn new(plan: &RunPlan) -> (WholeAbort, Vec<String>) {
        let (rules, later): (Vec<ThresholdPlan>, Vec<ThresholdPlan>) = plan
            .thresholds
            .iter()
            .filter(|t| t.abort)
            .cloned()
            .partition(|t| t.kind.is_none());
        let notes = later
            .iter()
            .map(|t| {
                format!(
                    "note: the abort threshold `{}` is on one kind of a mixed group, which the parts' intervals do not carry: it is judged after the run, on the merged run",
                    t.text
                )
            })
            .collect();
        let tags: Vec<String> = plan
            .groups()
            .map(|g| Tag::latency(Label::group(&g.name)).to_string())
            .collect();
        let totals = tags.iter().map(|_| GroupMetrics::default()).collect();
        (
            WholeAbort {
                rules,
                tags,
                totals,
                began_us: None,
                error_pct: plan.stop_on_error_pct,
                loading: plan
                    .groups()
                    .filter(|g| g.watch.is_none())
                    .map(|g| {
                        let label = Label::group(&g.name);
                        let warm = Tag::new(
                            label.clone(),
                            crate::metrics::interval::Series::Latency,
                            true,
                        );
                        (Tag::latency(label).to_string(), warm.to_string())
                    })
                    .collect(),
                recent: std::collections::VecDeque::new(),
            },
            notes,
        )
    }

    /// Whether there is a rule to judge as the run goes.
    pub(super) fn judges(&self) -> bool {
        !self.rules.is_empty() || self.error_pct.is_some()
    }

    /// `stop_on_error_pct` on the recent merged intervals, the one ending at `end_us` the last.
    fn errors(&mut self, start_us: u64, end_us: u64, series: &MergedSeries) -> Option<String> {
        use crate::plan::limits::{GUARD_MIN_OPS, GUARD_WINDOW, GUARD_WINDOW_OPS};
        let pct = self.error_pct?;
        // As a single run's guard: every operation of the groups that send load, its warm-up's
        // too (a group's errors count both).
        let len = |tag: &str| series.hists.get(tag).map_or(0, Histogram::len);
        let (mut ops, mut failed) = (0, 0);
        for (tag, warmup) in &self.loading {
            ops += len(tag) + len(warmup);
            failed += series.errors.get(tag).copied().unwrap_or(0);
        }
        self.recent.push_back((start_us, ops, failed));
        let horizon = end_us.saturating_sub(u64::try_from(GUARD_WINDOW.as_micros()).unwrap_or(0));
        while self.recent.front().is_some_and(|r| r.0 < horizon) {
            self.recent.pop_front();
        }
        let (mut n, mut bad) = (0u64, 0u64);
        for (_, ops, failed) in self.recent.iter().rev() {
            n += ops;
            bad += failed;
            if n >= u64::try_from(GUARD_WINDOW_OPS).unwrap_or(u64::MAX) {
                break;
            }
        }
        let share = crate::num::real(bad) * 100.0 / crate::num::real(n.max(1));
        if n < u64::try_from(GUARD_MIN_OPS).unwrap_or(0) || share < pct {
            return None;
        }
        self.error_pct = None;
        Some(format!(
            "{bad} of the whole run's last {n} operations failed ({share:.1} %), at or over stop_on_error_pct = {pct}"
        ))
    }

    /// A merged interval added; the first rule it breaks, said, once.
    pub(super) fn interval(
        &mut self,
        start_us: u64,
        length_us: u64,
        series: &MergedSeries,
    ) -> Option<String> {
        let end_us = start_us + length_us;
        if let Some(why) = self.errors(start_us, end_us, series) {
            return Some(why);
        }
        if self.rules.is_empty() {
            return None;
        }
        let began = *self.began_us.get_or_insert(start_us);
        for (tag, m) in self.tags.iter().zip(&mut self.totals) {
            let Some(h) = series.hists.get(tag) else {
                continue;
            };
            if h.is_empty() {
                continue;
            }
            let t = &mut m.latency;
            if t.hist.add(h).is_err() {
                continue;
            }
            t.sum_us += u128::from(crate::num::whole(h.mean() * crate::num::real(h.len())));
            t.min_us = t.min_us.min(h.min());
            t.max_us = t.max_us.max(h.max());
            m.samples += h.len();
            m.errors += series.errors.get(tag).copied().unwrap_or(0);
            if m.first_start_us == 0 {
                m.first_start_us = start_us;
            }
            m.last_end_us = end_us;
        }
        let elapsed = std::time::Duration::from_micros(end_us.saturating_sub(began));
        let broken = self.rules.iter().find_map(|rule| {
            if elapsed < rule.after {
                return None;
            }
            let m = judge::select(rule, &self.totals);
            if m.samples == 0 {
                return None;
            }
            let value = rule.metric.value(&m);
            (!judge::holds(rule, value)).then(|| {
                format!(
                    "threshold `{}` failed on the whole run {:.1} s into it ({value:.2}{})",
                    rule.text,
                    elapsed.as_secs_f64(),
                    rule.metric.unit()
                )
            })
        });
        if broken.is_some() {
            self.rules.clear();
        }
        broken
    }
}
