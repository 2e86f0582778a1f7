//! The runs `history` reads from directories: run directories (a run, a merged run), a
//! directory holding run directories, a sweep's or a capacity search's steps (with `--steps`).
//! (The TSV file `run --tsv FILE --append` grows is `ledger`'s; `read_paths` reads both.) Each
//! becomes a `RunRecord`: one point per invocation, its `--repeat` runs averaged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{plan_words, HistoryMetric};
use crate::error::Error;
use crate::rundir::{Depth, RunDir, SweepDir};
use crate::summary::Summary;

/// One run (one invocation of `run`, or one merged run).
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// Its directory as given, or the name in a TSV file's Run column.
    pub(crate) id: String,
    pub(crate) started_at: String,
    /// `started_at` in seconds since the Unix epoch (0 when it cannot be read).
    pub(crate) epoch: f64,
    pub tags: BTreeMap<String, String>,
    pub profile: String,
    /// `plan_words` of its groups.
    pub plan: String,
    /// Its report.html, when the run directory is there.
    pub(crate) report: Option<PathBuf>,
    /// Per label, each metric's value (the mean over its `--repeat` runs).
    pub values: BTreeMap<String, BTreeMap<HistoryMetric, f64>>,
}

fn is_run(dir: &Path) -> bool {
    crate::rundir::File::SummaryJson.path(dir).is_file()
}

/// A sweep's (`sweep.json`, steps under `steps/`) or a capacity search's (`capacity.json`,
/// steps beside it) directory: its steps' directories.
fn steps_of(dir: &Path) -> Option<(&'static str, Vec<PathBuf>)> {
    let (what, under) = if SweepDir::is_sweep(dir) {
        ("a sweep", dir.join("steps"))
    } else if dir.join("capacity.json").is_file() {
        ("a capacity search", dir.to_path_buf())
    } else {
        return None;
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(&under)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| is_run(p))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    Some((what, found))
}

pub(super) fn read_dir(
    dir: &Path,
    steps: bool,
    given: bool,
    out: &mut Vec<RunRecord>,
    skipped: &mut Vec<String>,
) -> Result<(), Error> {
    if is_run(dir) {
        match from_dir(dir) {
            Ok(r) => out.push(r),
            Err(e) if !given => skipped.push(format!(
                "left out {}: {}",
                dir.display(),
                e.to_string().lines().next().unwrap_or("")
            )),
            Err(e) => return Err(e),
        }
        return Ok(());
    }
    if let Some((what, found)) = steps_of(dir) {
        if !steps {
            if given {
                return Err(Error::Usage(format!(
                    "{} is {what}: its steps are runs at other threads or rates, one series each\n  fix: pass --steps to read them",
                    dir.display()
                )));
            }
            return Ok(());
        }
        for s in found {
            read_dir(&s, steps, false, out, skipped)?;
        }
        return Ok(());
    }
    if !given {
        return Ok(());
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    children.sort();
    let before = out.len();
    for c in children {
        read_dir(&c, steps, false, out, skipped)?;
    }
    if out.len() == before {
        return Err(Error::Usage(format!(
            "{} holds no run directory (none of it or its subdirectories has summary.json){}\n  fix: give the directories `mongo-stress run` wrote (their --out)",
            dir.display(),
            if steps { "" } else { "; sweeps and capacity searches are read with --steps" }
        )));
    }
    Ok(())
}

/// A run directory, read for its summaries.
pub fn from_dir(dir: &Path) -> Result<RunRecord, Error> {
    let run = RunDir::read(dir, Depth::Summaries)?;
    let report = crate::rundir::File::Report.path(dir);
    Ok(RunRecord {
        id: dir.display().to_string(),
        epoch: crate::rundir::epoch_secs(&run.run_info.started_at),
        started_at: run.run_info.started_at.clone(),
        tags: run.run_info.tags.clone(),
        profile: run.summary.profile.clone(),
        plan: plan_words(&run.summary.groups),
        report: report.is_file().then_some(report),
        values: values(&run.summary),
    })
}

/// Per label, each metric's values added up and counted: a run's `--repeat` runs averaged.
#[derive(Debug, Default)]
pub(crate) struct Means(BTreeMap<String, BTreeMap<HistoryMetric, (f64, u32)>>);

impl Means {
    /// Counts a value (one that is not a finite number is left out).
    pub(crate) fn add(&mut self, label: &str, m: HistoryMetric, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            let e = self
                .0
                .entry(label.to_string())
                .or_default()
                .entry(m)
                .or_default();
            e.0 += v;
            e.1 += 1;
        }
    }

    pub(crate) fn means(self) -> BTreeMap<String, BTreeMap<HistoryMetric, f64>> {
        self.0
            .into_iter()
            .map(|(l, m)| {
                (
                    l,
                    m.into_iter()
                        .map(|(k, (s, n))| (k, s / f64::from(n)))
                        .collect(),
                )
            })
            .collect()
    }
}

/// Per label, each metric, averaged over the runs of `--repeat`.
pub(crate) fn values(s: &Summary) -> BTreeMap<String, BTreeMap<HistoryMetric, f64>> {
    let mut m = Means::default();
    for run in &s.runs {
        for row in &run.rows {
            let label = row.label.to_string();
            m.add(&label, HistoryMetric::Throughput, Some(row.throughput));
            m.add(&label, HistoryMetric::P50, Some(row.median_ms));
            m.add(&label, HistoryMetric::P90, Some(row.p90_ms));
            m.add(&label, HistoryMetric::P99, Some(row.p99_ms));
            m.add(&label, HistoryMetric::ErrorPct, Some(row.error_pct));
        }
    }
    for r in &s.resources {
        let label = r.label.to_string();
        let (cpu, per_op) = resource_values(r);
        m.add(&label, HistoryMetric::ServerCpuPerOp, per_op);
        m.add(&label, HistoryMetric::ClientCpu, cpu);
    }
    m.means()
}

/// A stage's client CPU % and server CPU µs per operation, when it was sampled (an average is
/// None for a stage too short to sample).
pub(crate) fn resource_values(
    r: &crate::summary::resources::ResourceSummary,
) -> (Option<f64>, Option<f64>) {
    let per_op = r
        .server_cpu_pct
        .avg
        .filter(|_| r.client_ops_s > 0.0)
        .map(|pct| pct / 100.0 * 1e6 / r.client_ops_s);
    (r.client_cpu_pct.avg, per_op)
}
