//! The run's `abort` thresholds judged by the coordinator on the whole run as it goes: each
//! merged interval's histograms added into the run's totals per group, the rules checked after
//! each interval, as a single run's threshold abort checks its own totals.
//!
//! From histograms alone: percentiles, the maximum and minimum, errors and throughput are the
//! run's own; an average is the histogram's (within its 0.1 % resolution). A rule on one kind of
//! a mixed group is left to the merge after the run, and said so.

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
            },
            notes,
        )
    }

    /// Whether there is a rule to judge as the run goes.
    pub(super) fn judges(&self) -> bool {
        !self.rules.is_empty()
    }

    /// A merged interval added; the first rule it breaks, said, once.
    pub(super) fn interval(
        &mut self,
        start_us: u64,
        length_us: u64,
        series: &MergedSeries,
    ) -> Option<String> {
        if self.rules.is_empty() {
            return None;
        }
        let began = *self.began_us.get_or_insert(start_us);
        let end_us = start_us + length_us;
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
