//! `history`: many runs as series, one per profile, plan, label and metric, and the change points
//! in each (`edivisive`: E-Divisive means with Hunter's t-test, as Apache Otava computes them).
//! `input`: the runs read from run directories (whole, merged, a sweep's or a capacity search's
//! steps) and from the TSV file `run --tsv FILE --append` grows (`ledger`).
//!
//! Owns: which runs make one series (the same profile and plan: a changed plan starts a new
//! series), the order of the runs, the change points with their sides and direction, and the
//! gate `--fail-on-new`. Never: prints, writes a file, or decides a number's format (`report`).

pub mod edivisive;
pub mod input;
pub mod ledger;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Error;
pub(crate) use input::RunRecord;

/// A metric a series follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMetric {
    Throughput,
    P50,
    P90,
    P99,
    ErrorPct,
    /// Microseconds of server CPU per operation: the server's CPU over the stage divided by the
    /// operations the tool completed in it.
    ServerCpuPerOp,
    /// The load generator's own CPU, percent of one core.
    ClientCpu,
}

impl HistoryMetric {
    pub const ALL: [HistoryMetric; 7] = [
        HistoryMetric::Throughput,
        HistoryMetric::P50,
        HistoryMetric::P90,
        HistoryMetric::P99,
        HistoryMetric::ErrorPct,
        HistoryMetric::ServerCpuPerOp,
        HistoryMetric::ClientCpu,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            HistoryMetric::Throughput => "throughput",
            HistoryMetric::P50 => "p50",
            HistoryMetric::P90 => "p90",
            HistoryMetric::P99 => "p99",
            HistoryMetric::ErrorPct => "error_pct",
            HistoryMetric::ServerCpuPerOp => "server_cpu_per_op",
            HistoryMetric::ClientCpu => "client_cpu",
        }
    }

    pub(crate) fn unit(self) -> &'static str {
        match self {
            HistoryMetric::Throughput => "ops/s",
            HistoryMetric::P50 | HistoryMetric::P90 | HistoryMetric::P99 => "ms",
            HistoryMetric::ErrorPct => "%",
            HistoryMetric::ServerCpuPerOp => "µs CPU/op",
            HistoryMetric::ClientCpu => "% CPU",
        }
    }

    /// More is better (throughput); for every other, less is.
    pub(crate) fn higher_is_better(self) -> bool {
        self == HistoryMetric::Throughput
    }

    pub(crate) fn parse(name: &str) -> Result<HistoryMetric, Error> {
        let name = name.trim();
        let name = if name == "median" { "p50" } else { name };
        HistoryMetric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--metric {name:?} is not a metric history follows\n  fix: one or more of {}",
                    HistoryMetric::ALL.map(HistoryMetric::name).join(", ")
                ))
            })
    }
}

/// How the runs are put in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Order {
    /// By when each run started.
    Time,
    /// By a tag's value: as numbers when every run's value is one, else as text.
    Tag(String),
}

/// What `history` was asked.
#[derive(Debug, Clone)]
pub struct Settings {
    pub(crate) metrics: Vec<HistoryMetric>,
    /// Only these labels (all when empty).
    pub(crate) labels: Vec<String>,
    pub(crate) search: edivisive::Settings,
    pub(crate) order: Order,
}

/// A run as history shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunPoint {
    /// Its position in the order, from 1.
    pub(crate) number: usize,
    /// Where it came from: a run directory, or the name in a TSV file's Run column.
    pub(crate) id: String,
    pub(crate) started_at: String,
    pub(crate) tags: BTreeMap<String, String>,
    /// Its report.html, as a path relative to the history's own directory once `report` places
    /// it (absolute here), when the run directory is there to link to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) report: Option<String>,
}

/// A change point of a series.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Found {
    /// The position in the series of its first run after the change (0-based), and that run's
    /// number among all runs.
    pub(crate) at: usize,
    pub(crate) run: usize,
    pub(crate) mean_before: f64,
    pub(crate) mean_after: f64,
    /// (after - before) / before, percent; None when before is 0.
    pub(crate) change_pct: Option<f64>,
    pub(crate) pvalue: f64,
    /// For this metric, the change is for the better.
    pub(crate) better: bool,
}

/// One series: a label's metric over the runs of one profile and plan.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub(crate) profile: String,
    /// The plan in words: each group's threads and rate.
    pub(crate) plan: String,
    pub(crate) label: String,
    pub(crate) metric: HistoryMetric,
    /// The runs in it (their numbers), in order, and the metric's value in each.
    pub(crate) runs: Vec<usize>,
    pub(crate) values: Vec<f64>,
    pub(crate) change_points: Vec<Found>,
    /// The mean since the last change point (of all values without one).
    pub(crate) stable_mean: f64,
    /// The spread of that stretch: its standard deviation over its mean, percent (None with
    /// fewer than 2 runs or a mean of 0). Changes of about this size are its noise: the
    /// `--min-change` to set.
    pub(crate) noise_pct: Option<f64>,
    /// The run its last stable stretch begins at.
    pub(crate) stable_since: usize,
}

impl Series {
    pub(crate) fn key(&self) -> String {
        format!(
            "{} [{}] {} {}",
            self.profile,
            self.plan,
            self.label,
            self.metric.name()
        )
    }
}

/// A gate of `--fail-on-new`: a series whose newest run starts a change for the worse.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NewChange {
    pub(crate) series: String,
    pub(crate) run: usize,
    pub(crate) mean_before: f64,
    pub(crate) mean_after: f64,
    pub(crate) change_pct: Option<f64>,
    pub(crate) pvalue: f64,
    /// The noise of the runs before it (their standard deviation over their mean, percent);
    /// None with fewer than 2 of them.
    pub(crate) noise_pct: Option<f64>,
    /// Within NOISE_MULTIPLE times that noise: said, not failed.
    pub(crate) within_noise: bool,
}

/// Everything `history` found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct History {
    pub(crate) runs: Vec<RunPoint>,
    pub(crate) series: Vec<Series>,
    /// What the reader must know: plans that changed, runs that lack a metric.
    pub(crate) notes: Vec<String>,
    pub(crate) method: String,
    pub(crate) pvalue: f64,
    pub(crate) min_change: f64,
    pub(crate) window: usize,
    pub(crate) order: String,
    /// The newest run's changes for the worse that fail the gate (filled by `gate`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) new_changes: Vec<NewChange>,
    /// The newest run's changes for the worse within the noise of the runs before them:
    /// said, not failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) within_noise: Vec<NewChange>,
}

/// The plan in words, as two runs must share it to be one series: each group's threads and
/// rate (compare's test of "the same plan").
pub(crate) fn plan_words(groups: &[crate::summary::GroupInfo]) -> String {
    groups
        .iter()
        .map(|g| match g.rate {
            Some(r) => format!("{} {}x @{r}/s", g.name, g.threads),
            None => format!("{} {}x", g.name, g.threads),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Profile, plan, label and metric.
type SeriesKey = (String, String, String, HistoryMetric);

/// Each `--label` asked is one some run has.
fn labels_asked(asked: &[String], seen: &[String]) -> Result<(), Error> {
    let Some(l) = asked.iter().find(|l| !seen.contains(l)) else {
        return Ok(());
    };
    Err(Error::Usage(if seen.is_empty() {
        format!("--label {l:?}: no run has any row\n  fix: give runs that measured something")
    } else {
        format!(
            "--label {l:?}: no run has that label\n  fix: one of {}",
            seen.join(", ")
        )
    }))
}

/// Orders the runs, splits them into series and finds the change points of each.
pub(crate) fn analyze(mut records: Vec<RunRecord>, s: &Settings) -> Result<History, Error> {
    if records.is_empty() {
        return Err(Error::Usage(
            "no runs to read\n  fix: give run directories, a directory holding them, or a file `run --tsv FILE --append` wrote".into(),
        ));
    }
    order(&mut records, &s.order)?;
    let runs: Vec<RunPoint> = records
        .iter()
        .enumerate()
        .map(|(i, r)| RunPoint {
            number: i + 1,
            id: r.id.clone(),
            started_at: r.started_at.clone(),
            tags: r.tags.clone(),
            report: r.report.as_ref().map(|p| p.display().to_string()),
        })
        .collect();
    let mut notes = plan_changes(&records);
    // (profile, plan) -> label -> metric -> (run numbers, values), in order of first sight.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut by: BTreeMap<SeriesKey, (Vec<usize>, Vec<f64>)> = BTreeMap::new();
    let mut labels_seen: Vec<String> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let key = (r.profile.clone(), r.plan.clone());
        if !keys.contains(&key) {
            keys.push(key.clone());
        }
        for (label, values) in &r.values {
            if !labels_seen.contains(label) {
                labels_seen.push(label.clone());
            }
            if !s.labels.is_empty() && !s.labels.contains(label) {
                continue;
            }
            for m in &s.metrics {
                if let Some(v) = values.get(m).copied().filter(|v| v.is_finite()) {
                    let e = by
                        .entry((key.0.clone(), key.1.clone(), label.clone(), *m))
                        .or_default();
                    e.0.push(i + 1);
                    e.1.push(v);
                }
            }
        }
    }
    labels_asked(&s.labels, &labels_seen)?;
    let mut series = Vec::new();
    for (profile, plan) in &keys {
        for label in &labels_seen {
            for m in &s.metrics {
                let Some((nums, values)) =
                    by.remove(&(profile.clone(), plan.clone(), label.clone(), *m))
                else {
                    continue;
                };
                series.push(one_series(profile, plan, label, *m, nums, values, s.search));
            }
        }
    }
    if series.is_empty() {
        notes.push(format!(
            "no run has {} for the labels asked",
            s.metrics
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(History {
        runs,
        series,
        notes,
        method: format!(
            "E-Divisive means, each change point tested by Student's t-test of its two sides (Hunter / Apache Otava{}): deterministic",
            match s.search.merge {
                edivisive::Merge::Hunter => ", Hunter's merge",
                edivisive::Merge::SmallChangesFirst => "; changes within the minimum dropped first",
            }
        ),
        pvalue: s.search.pvalue,
        min_change: s.search.min_magnitude * 100.0,
        window: s.search.window,
        order: match &s.order {
            Order::Time => "by start time".into(),
            Order::Tag(t) => format!("by tag {t}"),
        },
        new_changes: Vec::new(),
        within_noise: Vec::new(),
    })
}

fn one_series(
    profile: &str,
    plan: &str,
    label: &str,
    metric: HistoryMetric,
    runs: Vec<usize>,
    values: Vec<f64>,
    search: edivisive::Settings,
) -> Series {
    let found: Vec<Found> = edivisive::change_points(&values, search)
        .into_iter()
        .map(|c| {
            let t = c.test;
            let rising = t.mean_after > t.mean_before;
            Found {
                at: c.index,
                run: runs[c.index],
                mean_before: t.mean_before,
                mean_after: t.mean_after,
                change_pct: (t.mean_before != 0.0).then(|| t.forward_change() * 100.0),
                pvalue: t.pvalue,
                better: rising == metric.higher_is_better(),
            }
        })
        .collect();
    let since = found.last().map_or(0, |f| f.at);
    let tail = &values[since..];
    // When the newest run starts the last change, its stretch is one run: the noise is that of
    // the runs before it (the stretch the change is measured against).
    let noisy = if tail.len() < 2 {
        before(&found, found.len().saturating_sub(1), &values)
    } else {
        tail
    };
    Series {
        profile: profile.into(),
        plan: plan.into(),
        label: label.into(),
        metric,
        stable_since: runs[since],
        stable_mean: tail.iter().sum::<f64>() / crate::num::real_len(tail.len()),
        noise_pct: noise_pct(noisy),
        runs,
        values,
        change_points: found,
    }
}

/// The values of the stretch before change point `i` of `found`: from the change point before
/// it (or the first run) up to it.
fn before<'a>(found: &[Found], i: usize, values: &'a [f64]) -> &'a [f64] {
    let Some(f) = found.get(i) else {
        return values;
    };
    let from = i.checked_sub(1).map_or(0, |p| found[p].at);
    &values[from..f.at]
}

/// The sample standard deviation of `xs` (None with fewer than 2).
fn std_dev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let n = crate::num::real_len(xs.len());
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt())
}

fn noise_pct(xs: &[f64]) -> Option<f64> {
    let sd = std_dev(xs)?;
    let mean = xs.iter().sum::<f64>() / crate::num::real_len(xs.len());
    (mean != 0.0).then(|| sd / mean.abs() * 100.0)
}

/// A change at the newest runs fails `--fail-on-new` only when it is more than this many times
/// the noise (standard deviation) of the runs before it, as well as over `--min-change`: one
/// run's wobble in a noisy series is not a regression.
pub(crate) const NOISE_MULTIPLE: f64 = 3.0;

/// Sorts the runs; a tag order needs the tag on every run.
fn order(records: &mut [RunRecord], order: &Order) -> Result<(), Error> {
    match order {
        Order::Time => {
            records.sort_by(|a, b| a.epoch.total_cmp(&b.epoch));
            Ok(())
        }
        Order::Tag(tag) => {
            let lacking: Vec<&str> = records
                .iter()
                .filter(|r| !r.tags.contains_key(tag))
                .map(|r| r.id.as_str())
                .collect();
            if !lacking.is_empty() {
                return Err(Error::Usage(format!(
                    "--order-by {tag}: {} of the runs have no tag {tag} ({}{})\n  fix: order by start time (leave --order-by out), or give every run `--tag {tag}=VALUE`",
                    lacking.len(),
                    lacking[..lacking.len().min(3)].join(", "),
                    if lacking.len() > 3 { ", ..." } else { "" }
                )));
            }
            let numeric = records
                .iter()
                .all(|r| r.tags[tag].parse::<f64>().is_ok_and(f64::is_finite));
            records.sort_by(|a, b| {
                let (x, y) = (&a.tags[tag], &b.tags[tag]);
                let by_tag = if numeric {
                    x.parse::<f64>()
                        .unwrap_or(0.0)
                        .total_cmp(&y.parse::<f64>().unwrap_or(0.0))
                } else {
                    x.cmp(y)
                };
                by_tag.then(a.epoch.total_cmp(&b.epoch))
            });
            Ok(())
        }
    }
}

/// A note for each run whose profile's plan differs from the one before it of that profile.
fn plan_changes(records: &[RunRecord]) -> Vec<String> {
    let mut last: BTreeMap<&str, &str> = BTreeMap::new();
    let mut seen: std::collections::BTreeSet<(&str, &str)> = Default::default();
    let mut notes = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let new = seen.insert((&r.profile, &r.plan));
        if let Some(before) = last.insert(&r.profile, &r.plan) {
            if before != r.plan && new {
                notes.push(format!(
                    "run {} ({}): the plan of {} changed from [{before}] to [{}]: its runs are a new series",
                    i + 1,
                    r.id,
                    r.profile,
                    r.plan
                ));
            }
        }
    }
    notes
}

impl History {
    /// `--fail-on-new`: the series whose last change point is for the worse and starts at one
    /// of the newest `new_runs` runs of its profile (every change point is beyond the minimum
    /// change already). A series of a plan the profile no longer runs has none of them.
    pub(crate) fn gate(&mut self, new_runs: usize) {
        let mut of_profile: BTreeMap<&str, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for s in &self.series {
            of_profile
                .entry(&s.profile)
                .or_default()
                .extend(s.runs.iter().copied());
        }
        let newest: BTreeMap<&str, Vec<usize>> = of_profile
            .into_iter()
            .map(|(p, runs)| (p, runs.into_iter().rev().take(new_runs.max(1)).collect()))
            .collect();
        let found: Vec<NewChange> = self
            .series
            .iter()
            .filter_map(|s| {
                let last = s.change_points.len().checked_sub(1)?;
                let f = &s.change_points[last];
                let recent = newest.get(s.profile.as_str())?.contains(&f.run);
                (recent && !f.better).then(|| {
                    let was = before(&s.change_points, last, &s.values);
                    // Over NOISE_MULTIPLE times the runs' spread before it (unknown with one
                    // run before it: then --min-change alone, as the search judged it).
                    let within_noise = std_dev(was).is_some_and(|sd| {
                        (f.mean_after - f.mean_before).abs() <= NOISE_MULTIPLE * sd
                    });
                    NewChange {
                        series: s.key(),
                        run: f.run,
                        mean_before: f.mean_before,
                        mean_after: f.mean_after,
                        change_pct: f.change_pct,
                        pvalue: f.pvalue,
                        noise_pct: noise_pct(was),
                        within_noise,
                    }
                })
            })
            .collect();
        (self.within_noise, self.new_changes) = found.into_iter().partition(|c| c.within_noise);
    }
}

/// Every run in `paths`: run directories, directories of them, sweeps and capacity searches
/// (their steps, with `steps`), and `--append` TSV files; and a note for each directory found
/// inside one given that could not be read (a run cut off, say), which is left out. A path
/// given that cannot be read is an error.
pub(crate) fn read_paths(
    paths: &[std::path::PathBuf],
    steps: bool,
) -> Result<(Vec<RunRecord>, Vec<String>), Error> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        if p.is_file() {
            out.extend(ledger::read(p)?);
        } else if p.is_dir() {
            input::read_dir(p, steps, true, &mut out, &mut skipped)?;
        } else {
            return Err(Error::Usage(format!(
                "{}: no such file or directory\n  fix: give run directories, a directory holding them, or a file `run --tsv FILE --append` wrote",
                p.display()
            )));
        }
    }
    Ok((out, skipped))
}

#[cfg(test)]
mod tests;
