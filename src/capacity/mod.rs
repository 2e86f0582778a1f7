//! `mongo-stress capacity`: the highest rate the deployment holds within an SLO.
//!
//! Design: a step runs the profile in open loop at an offered rate R (shared among its groups
//! in proportion to their users) for a warm-up and a measured length, like any run, into a run
//! directory of its own. A step holds when every SLO (the `[thresholds]` grammar, `p99<20ms`
//! meaning `TOTAL.p99<20ms`) holds on what it measured, its error % is within `--error-pct`, and
//! it achieved at least 95 % of R. The search doubles R from `--start-rate` until a step fails,
//! then bisects between the last rate that held and the first that failed until they are within
//! 5 % of each other; the knee is the highest rate that held below every rate that failed.
//!
//! Owns: the search and the verdict of a step. Never: runs anything (`app::capacity` does) or
//! formats text (`report::capacity`).

use serde::Serialize;

use crate::error::Error;
use crate::metrics::GroupMetrics;
use crate::plan::thresholds::ThresholdPlan;
use crate::summary::judge;
use crate::summary::{Summary, WarningCode};

/// A step holds only if it achieved this share of its offered rate.
pub(crate) const ACHIEVED_SHARE: f64 = 0.95;
/// The search ends when the rates that held and failed are this close (relative).
pub(crate) const PRECISION: f64 = 0.05;

/// One step's numbers and verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Step {
    pub(crate) offered: f64,
    pub(crate) achieved: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    /// Service time (from the actual start): what the server and the network took.
    pub(crate) svc_p50_ms: f64,
    pub(crate) error_pct: f64,
    /// Average over the step's measured stage, when sampled.
    pub(crate) server_cpu_pct: Option<f64>,
    pub(crate) client_cpu_pct: Option<f64>,
    /// Operations that started behind their schedule (every user busy).
    pub(crate) late: u64,
    pub(crate) held: bool,
    /// Why it did not hold, in words (empty when it held).
    pub(crate) why: Vec<String>,
    /// The load generator may have set the pace (its CPU, or late operations with idle server).
    pub(crate) load_generator: Option<String>,
    /// The step's run directory.
    pub(crate) dir: String,
}

/// The SLO: thresholds on the step's rows.
#[derive(Debug, Clone)]
pub(crate) struct Slo {
    pub(crate) rules: Vec<ThresholdPlan>,
    pub(crate) error_pct: f64,
}

impl Slo {
    /// `--slo` expressions (`p99<20ms`, `find.p99<20ms`, `TOTAL.error_pct<1`), one parser with
    /// `[thresholds]`; a bare metric is the TOTAL row's.
    pub(crate) fn parse(exprs: &[String], groups: &[String], error_pct: f64) -> Result<Slo, Error> {
        let mut rules = Vec::new();
        for e in exprs {
            let at = e.find(['<', '>']).unwrap_or(e.len());
            let key = e[..at].trim();
            // A bare metric (`p99`, `p99.9`) is the TOTAL row's.
            let bare = !key.contains('.') || crate::metrics::Metric::parse(key).is_some();
            let full = if bare {
                format!("TOTAL.{}", e.trim())
            } else {
                e.clone()
            };
            let rule = ThresholdPlan::parse_cli(&full, groups).map_err(|p| {
                Error::Usage(format!(
                    "--slo {e}: {p}\n  fix: write it as a threshold, e.g. --slo 'p99<20ms' (the TOTAL row) or --slo 'find.p99<20ms'"
                ))
            })?;
            if rule.relative.is_some() {
                return Err(Error::Usage(format!(
                    "--slo {e} is a change against a baseline\n  fix: give an absolute limit, e.g. --slo 'p99<20ms'"
                )));
            }
            rules.push(rule);
        }
        if rules.is_empty() {
            return Err(Error::Usage(
                "capacity needs an SLO to search against\n  fix: --slo 'p99<20ms'".into(),
            ));
        }
        Ok(Slo { rules, error_pct })
    }

    /// The verdict on one step's summary (its first run).
    pub(crate) fn judge(&self, summary: &Summary, offered: f64, dir: String) -> Step {
        let run = summary.runs.first();
        let rows = run.map(|r| r.rows.as_slice()).unwrap_or_default();
        let total = rows.last();
        // Group metrics rebuilt from the rows' histograms, so every metric of the grammar works.
        let by_group: Vec<GroupMetrics> = summary
            .groups
            .iter()
            .map(|g| GroupMetrics::from_rows(rows, &g.name).unwrap_or_default())
            .collect();
        let mut why = Vec::new();
        for rule in &self.rules {
            let judged = judge::judge(rule, &judge::select(rule, &by_group), Default::default());
            if !judged.pass {
                why.push(format!(
                    "{} was {:.2}{}",
                    rule.text, judged.value, judged.unit
                ));
            }
        }
        let achieved = total.map_or(0.0, |t| t.throughput);
        let error_pct = total.map_or(0.0, |t| t.error_pct);
        if error_pct > self.error_pct {
            why.push(format!(
                "{error_pct:.2} % errors, above --error-pct {}",
                self.error_pct
            ));
        }
        if achieved < ACHIEVED_SHARE * offered {
            why.push(format!(
                "achieved {achieved:.1}/s of the {offered:.1}/s offered"
            ));
        }
        if run.is_none() {
            why.push("the step did not run".into());
        }
        let resources = summary.resources.first();
        let load_generator = summary
            .warnings
            .iter()
            .find(|w| w.code == WarningCode::LoadGenerator)
            .map(|w| w.message.clone());
        Step {
            offered,
            achieved,
            p50_ms: total.map_or(0.0, |t| t.median_ms),
            p99_ms: total.map_or(0.0, |t| t.p99_ms),
            svc_p50_ms: total.map_or(0.0, |t| t.service_median_ms),
            error_pct,
            server_cpu_pct: resources.and_then(|r| r.server_cpu_pct.avg),
            client_cpu_pct: resources.and_then(|r| r.client_cpu_pct.avg),
            late: total.map_or(0, |t| t.late),
            held: why.is_empty(),
            why,
            load_generator,
            dir,
        }
    }
}

/// The search over the steps run so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Search {
    pub(crate) start: f64,
    pub(crate) max: f64,
}

impl Search {
    /// The highest rate that held below every rate that failed.
    pub(crate) fn knee(steps: &[Step]) -> Option<f64> {
        let first_bad = steps
            .iter()
            .filter(|s| !s.held)
            .map(|s| s.offered)
            .fold(f64::INFINITY, f64::min);
        steps
            .iter()
            .filter(|s| s.held && s.offered < first_bad)
            .map(|s| s.offered)
            .reduce(f64::max)
    }

    /// The next rate to offer, or None when the search is done.
    pub(crate) fn next(&self, steps: &[Step]) -> Option<f64> {
        let Some(last) = steps.last() else {
            return Some(self.start);
        };
        let bad = steps
            .iter()
            .filter(|s| !s.held)
            .map(|s| s.offered)
            .fold(f64::INFINITY, f64::min);
        if bad.is_infinite() {
            // Nothing failed yet: double, up to the ceiling.
            return (last.offered < self.max).then(|| (last.offered * 2.0).min(self.max));
        }
        match Self::knee(steps) {
            // Even the lowest rate failed: halve, down to the floor.
            None => {
                let next = bad / 2.0;
                (next >= crate::plan::limits::MIN_RATE.max(self.start / 64.0)).then_some(next)
            }
            Some(good) if (bad - good) / good <= PRECISION => None,
            Some(good) => Some((good + bad) / 2.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered: f64, capacity: f64) -> Step {
        Step {
            offered,
            achieved: offered.min(capacity),
            p50_ms: 1.0,
            p99_ms: 1.0,
            svc_p50_ms: 1.0,
            error_pct: 0.0,
            server_cpu_pct: None,
            client_cpu_pct: None,
            late: 0,
            held: offered <= capacity,
            why: Vec::new(),
            load_generator: None,
            dir: String::new(),
        }
    }

    /// Runs the search against a deployment that holds exactly `capacity`.
    fn search(capacity: f64) -> (Option<f64>, Vec<f64>) {
        let s = Search {
            start: 50.0,
            max: 1e6,
        };
        let mut steps = Vec::new();
        while let Some(r) = s.next(&steps) {
            steps.push(step(r, capacity));
            assert!(steps.len() < 40, "the search ends");
        }
        (
            Search::knee(&steps),
            steps.iter().map(|s| s.offered).collect(),
        )
    }

    #[test]
    fn doubling_then_bisecting_ends_within_five_percent_below_the_capacity() {
        for capacity in [60.0, 381.0, 400.0, 1234.5, 50_000.0] {
            let (knee, offered) = search(capacity);
            let knee = knee.unwrap();
            assert!(
                knee <= capacity && knee >= capacity * (1.0 - PRECISION) - 1e-9,
                "{capacity}: {knee} after {offered:?}"
            );
        }
        let (_, offered) = search(381.0);
        assert_eq!(&offered[..5], &[50.0, 100.0, 200.0, 400.0, 300.0]);
    }

    #[test]
    fn a_deployment_that_holds_nothing_has_no_knee_and_one_that_holds_everything_stops_at_the_ceiling(
    ) {
        let (knee, offered) = search(0.1);
        assert_eq!(knee, None);
        assert!(offered.len() < 10, "{offered:?}");
        let s = Search {
            start: 50.0,
            max: 300.0,
        };
        let mut steps = Vec::new();
        while let Some(r) = s.next(&steps) {
            steps.push(step(r, 1e9));
        }
        assert_eq!(Search::knee(&steps), Some(300.0));
    }
}
