//! The result model: what one run (or `--repeat` runs) measured, ready for every report format.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::{GroupMetrics, Row};
use crate::plan::{RunPlan, StopAt};
use crate::resources::{ResourceSummary, StageSpan};
use crate::sampler::ResourceRow;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub schema_version: u32,
    pub tool: String,
    pub profile: String,
    pub origin: String,
    pub seed: u64,
    pub server: ServerInfo,
    pub groups: Vec<GroupInfo>,
    pub runs: Vec<RunResult>,
    /// Run-to-run spread of throughput per label; empty for a single run.
    pub spread: Vec<Spread>,
    /// Server and client resources per stage of each run (see `resources`).
    pub resources: Vec<ResourceSummary>,
    pub interrupted: bool,
}

impl Summary {
    /// Recomputes the resource summary of every run from the sampler's rows.
    pub fn refresh_resources(&mut self, rows: &[ResourceRow]) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.resources = self
            .runs
            .iter()
            .flat_map(|r| {
                let throughput = |label: &str| {
                    r.rows
                        .iter()
                        .find(|x| x.label == label)
                        .map_or(0.0, |x| x.throughput)
                };
                crate::resources::summarize(r.run, &r.stages, throughput, rows, cores)
            })
            .collect();
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// `embedded` or `external`.
    pub kind: String,
    /// Server program and version as reported (`buildInfo`).
    pub version: String,
    /// Connection string with any password replaced.
    pub uri: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupInfo {
    pub name: String,
    pub stage: String,
    pub op: String,
    pub threads: u32,
    pub loops: Option<u64>,
    pub duration_secs: Option<f64>,
    /// Target operations per second (open loop); None: closed loop.
    pub rate: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub run: u32,
    pub started_at: String,
    pub wall_secs: f64,
    pub interrupted: bool,
    /// Group rows in profile order, a `TOTAL <stage>` row per multi-group stage when the profile
    /// has several stages, then `TOTAL`.
    pub rows: Vec<Row>,
    /// Failures by class, per label.
    pub errors_by_class: BTreeMap<String, BTreeMap<String, u64>>,
    /// Distinct failure messages with counts, over all groups.
    pub error_messages: BTreeMap<String, u64>,
    /// When each stage ran.
    pub stages: Vec<StageSpan>,
    /// Why the run ended before its plan (stop_on_error_pct), if it did.
    pub stopped_early: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub label: String,
    pub runs: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub stddev: f64,
    /// Coefficient of variation, percent.
    pub cv_pct: f64,
}

pub fn group_info(plan: &RunPlan) -> Vec<GroupInfo> {
    plan.stages
        .iter()
        .flat_map(|s| {
            s.groups.iter().map(|g| GroupInfo {
                name: g.name.clone(),
                stage: s.name.clone(),
                op: g.op.kind().to_string(),
                threads: g.threads,
                loops: match g.stop {
                    StopAt::Loops(l) => Some(l),
                    StopAt::Duration(_) => None,
                },
                duration_secs: match g.stop {
                    StopAt::Duration(d) => Some(d.as_secs_f64()),
                    StopAt::Loops(_) => None,
                },
                rate: g.rate,
            })
        })
        .collect()
}

impl RunResult {
    /// Rows from the metrics of each group (indexed as in the plan).
    pub fn new(
        run: u32,
        started_at: String,
        wall_secs: f64,
        interrupted: bool,
        plan: &RunPlan,
        metrics: &[GroupMetrics],
    ) -> Self {
        let mut rows = Vec::new();
        let mut total = GroupMetrics::default();
        let mut errors_by_class = BTreeMap::new();
        let mut error_messages: BTreeMap<String, u64> = BTreeMap::new();
        let several_stages = plan.stages.len() > 1;
        for stage in &plan.stages {
            let mut stage_total = GroupMetrics::default();
            for g in &stage.groups {
                let m = &metrics[g.index];
                rows.push(m.row(&g.name));
                stage_total.merge(m);
                if m.errors > 0 {
                    errors_by_class.insert(
                        g.name.clone(),
                        m.errors_by_class
                            .iter()
                            .map(|(c, n)| (c.as_str().to_string(), *n))
                            .collect(),
                    );
                }
                for (msg, n) in &m.messages {
                    *error_messages.entry(msg.clone()).or_default() += n;
                }
            }
            if several_stages && stage.groups.len() > 1 {
                let label = crate::resources::stage_label(plan, stage);
                rows.push(stage_total.row(&label));
            }
            total.merge(&stage_total);
        }
        rows.push(total.row("TOTAL"));
        RunResult {
            run,
            started_at,
            wall_secs,
            interrupted,
            rows,
            errors_by_class,
            error_messages,
            stages: Vec::new(),
            stopped_early: None,
        }
    }

    pub fn total(&self) -> &Row {
        self.rows.last().expect("a run always has a TOTAL row")
    }
}

/// Throughput spread per label across runs (labels of the first run, in its order).
pub fn spread(runs: &[RunResult]) -> Vec<Spread> {
    if runs.len() < 2 {
        return Vec::new();
    }
    runs[0]
        .rows
        .iter()
        .map(|r| {
            let xs: Vec<f64> = runs
                .iter()
                .filter_map(|run| run.rows.iter().find(|x| x.label == r.label))
                .map(|x| x.throughput)
                .collect();
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let var = if xs.len() > 1 {
                xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
            } else {
                0.0
            };
            let stddev = var.sqrt();
            Spread {
                label: r.label.clone(),
                runs: xs.len(),
                mean,
                min: xs.iter().copied().fold(f64::INFINITY, f64::min),
                max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                stddev,
                cv_pct: if mean > 0.0 {
                    stddev * 100.0 / mean
                } else {
                    0.0
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(throughputs: &[f64]) -> Vec<RunResult> {
        throughputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut row = GroupMetrics::default().row("TOTAL");
                row.throughput = *t;
                RunResult {
                    run: i as u32 + 1,
                    started_at: String::new(),
                    wall_secs: 1.0,
                    interrupted: false,
                    rows: vec![row],
                    errors_by_class: BTreeMap::new(),
                    error_messages: BTreeMap::new(),
                    stages: Vec::new(),
                    stopped_early: None,
                }
            })
            .collect()
    }

    #[test]
    fn spread_uses_the_sample_standard_deviation() {
        let s = spread(&run_with(&[90.0, 100.0, 110.0]));
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].mean, s[0].min, s[0].max), (100.0, 90.0, 110.0));
        assert!((s[0].stddev - 10.0).abs() < 1e-9);
        assert!((s[0].cv_pct - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_single_run_has_no_spread() {
        assert!(spread(&run_with(&[5.0])).is_empty());
    }
}
