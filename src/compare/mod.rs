//! `compare BASE NEW`: two run directories side by side, per label and metric, with the change
//! and a verdict that comes from the data's own noise, and relative gates (`--fail-if`).
//!
//! Values are recomputed from what the runs stored: percentiles from the whole-run histograms in
//! summary.json (several runs of `--repeat` added together), never from rounded cells. Noise:
//! with two or more runs on both sides, from the spread of the per-run values (Welch's t-test at
//! 99 %); otherwise a seeded bootstrap of the per-interval values of the metric in latency.hlog
//! (a 99 % interval of the difference of their means). The latter knows only the noise within
//! each run: two single runs of one plan can differ by more (this shared machine: 20 % and more in
//! latency between consecutive 4 s runs), so a verdict on single runs says the runs differed,
//! not why; `--repeat` on both sides measures the run-to-run noise. `members.rs`: each member of
//! a replica set or cluster in either run, its operations per second and largest lag side by
//! side. `steered.rs`: a run steered live (`--live-control`): the rows that span a change shown,
//! not judged; each change's row judged apart.
//!
//! Owns: the comparison's numbers and verdicts. Never: prints or writes files (`report` does).

pub(crate) mod gate;
pub(crate) mod members;
pub(crate) mod steered;
pub(crate) mod sweeps;

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::error::Error;
use crate::metrics::Label;
use crate::rundir::RunDir;
pub use gate::Gate;
use steered::{Steered, Which};

/// The metrics compared, in column order (the one list: `vocab::Compared::RUN`).
pub const METRICS: [Compared; 9] = Compared::RUN;
pub use crate::vocab::Compared;

/// Compared besides `METRICS` where either run has them: documents per second (the profile's
/// own operations), retries per transaction, acknowledged writes the audit found not kept
/// (`lost`) and the longest window without a success in seconds (`unavailable_max`).
pub const EXTRA: [Compared; 4] = Compared::EXTRA;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    SameWithinNoise,
    /// Not judged (counts, or too little data).
    NotJudged,
    /// Not judged: the row holds operations from before and after a live change of a run (two
    /// loads in one number).
    Steered,
}

impl Verdict {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::SameWithinNoise => "same within noise",
            Verdict::NotJudged => "-",
            Verdict::Steered => "not judged: steered",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub label: Label,
    pub metric: Compared,
    pub base: f64,
    pub(crate) new: f64,
    /// (new - base) / base, percent; None when base is 0.
    pub(crate) change_pct: Option<f64>,
    pub verdict: Verdict,
    /// How the noise was judged: `runs` or `intervals`.
    pub(crate) noise: String,
    /// The base run's row this row was judged against, when its name differs: a change row of
    /// a run steered live against the other run's unsteered group at the same value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) base_label: Option<Label>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub(crate) base: String,
    pub(crate) new: String,
    /// Each run's `--tag`s (run.json).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) base_tags: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) new_tags: BTreeMap<String, String>,
    pub cells: Vec<Cell>,
    pub gates: Vec<gate::GateResult>,
    /// Each member of a replica set or cluster in either run; none when neither had members.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) members: Vec<members::MemberCell>,
    /// What the reader must know first: a run steered live, and how its rows are judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

impl Comparison {
    pub(crate) fn failed(&self) -> bool {
        self.gates.iter().any(|g| !g.pass)
    }
}

/// One side: per label, the whole-run values and the per-run and per-interval series.
struct Side {
    values: BTreeMap<Label, BTreeMap<Compared, f64>>,
    per_run: BTreeMap<Label, BTreeMap<Compared, Vec<f64>>>,
    per_interval: BTreeMap<Label, BTreeMap<Compared, Vec<f64>>>,
}

/// Both sides, and how a difference between them is judged.
struct Sides<'a> {
    b: &'a Side,
    n: &'a Side,
    /// Over the runs (both sides have two or more), or over the intervals.
    by_runs: bool,
    rng: rand::rngs::SmallRng,
}

impl Sides<'_> {
    /// One of `METRICS` of a row: the base's at `base_label`, the new run's at `label`.
    fn cell(&mut self, base_label: &Label, label: &Label, metric: Compared, spans: bool) -> Cell {
        let (bv, nv) = (
            self.b.values[base_label][&metric],
            self.n.values[label][&metric],
        );
        let by_runs = self.by_runs;
        let series = |s: &Side, label: &Label| -> Vec<f64> {
            let from = if by_runs { &s.per_run } else { &s.per_interval };
            from.get(label)
                .and_then(|m| m.get(&metric))
                .cloned()
                .unwrap_or_default()
        };
        let judged = match metric {
            Compared::Samples => None,
            // Errors are judged per run only: intervals carry none.
            Compared::ErrorPct if !by_runs => None,
            _ if spans => None,
            _ => beyond_noise(
                &series(self.b, base_label),
                &series(self.n, label),
                by_runs,
                &mut self.rng,
            ),
        };
        let noise = if by_runs { "runs" } else { "intervals" };
        Cell::judged(
            (base_label, label),
            metric,
            (bv, nv),
            (judged, spans),
            noise,
        )
    }

    /// One of `EXTRA`, where either side has it, judged over runs only.
    fn extra_cell(
        &mut self,
        base_label: &Label,
        label: &Label,
        metric: Compared,
        spans: bool,
    ) -> Option<Cell> {
        let (bv, nv) = (
            self.b.values[base_label].get(&metric),
            self.n.values[label].get(&metric),
        );
        if bv.is_none() && nv.is_none() {
            return None;
        }
        let (bv, nv) = (bv.copied().unwrap_or(0.0), nv.copied().unwrap_or(0.0));
        let judged = if self.by_runs && !spans {
            let series = |s: &Side, label: &Label| {
                s.per_run
                    .get(label)
                    .and_then(|m| m.get(&metric))
                    .cloned()
                    .unwrap_or_default()
            };
            beyond_noise(
                &series(self.b, base_label),
                &series(self.n, label),
                true,
                &mut self.rng,
            )
        } else {
            None
        };
        let cell = Cell::judged(
            (base_label, label),
            metric,
            (bv, nv),
            (judged, spans),
            "runs",
        );
        Some(cell)
    }
}

impl Cell {
    /// A row's metric, base against new, with its verdict: a difference beyond the noise
    /// (`judged`), or none, or not judged (`spans`: the row spans a live change).
    fn judged(
        (base_label, label): (&Label, &Label),
        metric: Compared,
        (bv, nv): (f64, f64),
        (judged, spans): (Option<bool>, bool),
        noise: &str,
    ) -> Cell {
        Cell {
            label: label.clone(),
            metric,
            base: bv,
            new: nv,
            change_pct: members::change_pct(Some(bv), Some(nv)),
            verdict: Verdict::of(judged, spans, (nv > bv) == metric.higher_is_better()),
            noise: noise.into(),
            base_label: (base_label != label).then(|| base_label.clone()),
        }
    }
}

impl Verdict {
    /// A difference beyond the noise (`judged`), or none, or not judged; `better`: the new
    /// value is on the better side.
    fn of(judged: Option<bool>, spans: bool, better: bool) -> Verdict {
        match judged {
            None if spans => Verdict::Steered,
            None => Verdict::NotJudged,
            Some(false) => Verdict::SameWithinNoise,
            Some(true) if better => Verdict::Faster,
            Some(true) => Verdict::Slower,
        }
    }
}

use crate::metrics::timing::quantile_ms as ms;

/// The latency metrics of a histogram, in ms.
fn latency_values(h: &Histogram<u64>) -> [(Compared, f64); 5] {
    [
        (Compared::P50, ms(h, 0.5)),
        (Compared::P90, ms(h, 0.9)),
        (Compared::P99, ms(h, 0.99)),
        (Compared::P999, ms(h, 0.999)),
        (Compared::Max, ms(h, 1.0)),
    ]
}

/// Per label over the runs: histograms added, samples, avg x samples, errors, throughputs
/// added, the exact max.
type Pool = (Histogram<u64>, f64, f64, f64, f64, f64);

type Series = BTreeMap<Compared, Vec<f64>>;

fn side(dir: &RunDir, steered: &Steered, which: Which) -> Result<Side, Error> {
    let bad = |what: String| Error::Usage(format!("{}: {what}", dir.path.display()));
    let mut per_run: BTreeMap<Label, Series> = BTreeMap::new();
    let mut pooled: BTreeMap<Label, Pool> = BTreeMap::new();
    for run in &dir.summary.runs {
        for row in &run.rows {
            let label = row.label.clone();
            let h = row
                .latency_hdr
                .as_deref()
                .ok_or_else(|| bad(format!("summary.json has no histogram for {label} (written before schema 1 had them?)")))
                .and_then(|e| crate::metrics::decode(e).map_err(&bad))?;
            run_values(run, row, &h, per_run.entry(label.clone()).or_default());
            let (samples, errors) = (crate::num::real(row.samples), crate::num::real(row.errors));
            let p = pooled
                .entry(label)
                .or_insert_with(|| (crate::metrics::new_histogram(), 0.0, 0.0, 0.0, 0.0, 0.0));
            p.0.add(&h)
                .map_err(|e| bad(format!("histograms cannot be added: {e:?}")))?;
            p.1 += samples;
            p.2 += row.average_ms * samples;
            p.3 += errors;
            p.4 += row.throughput;
            p.5 = p.5.max(row.max_ms);
        }
    }
    let runs = crate::num::real_len(dir.summary.runs.len().max(1));
    let values: BTreeMap<Label, BTreeMap<Compared, f64>> = pooled
        .into_iter()
        .map(|(label, pool)| {
            let v = whole_values(pool, per_run.get(&label), runs);
            (label, v)
        })
        .collect();
    let labels: Vec<Label> = values.keys().cloned().collect();
    Ok(Side {
        values,
        per_run,
        per_interval: interval_series(dir, steered, which, &labels),
    })
}

/// One run's values of one row, added to its label's series over the runs.
fn run_values(
    run: &crate::summary::RunResult,
    row: &crate::metrics::Row,
    h: &Histogram<u64>,
    runs: &mut Series,
) {
    for (k, v) in [
        (Compared::Samples, crate::num::real(row.samples)),
        (Compared::Throughput, row.throughput),
        (Compared::Avg, row.average_ms),
        (Compared::ErrorPct, row.error_pct),
    ]
    .into_iter()
    .chain(
        latency_values(h)
            .into_iter()
            .filter(|(k, _)| *k != Compared::Max),
    )
    .chain([(Compared::Max, row.max_ms)])
    {
        runs.entry(k).or_default().push(v);
    }
    // Documents per second, and retries per transaction: compared where a side has them.
    if row.docs_per_sec > 0.0 {
        runs.entry(Compared::DocsPerSec)
            .or_default()
            .push(row.docs_per_sec);
    }
    if let Some(t) = &row.transactions {
        let n = crate::num::real((t.committed + t.aborted + t.in_doubt).max(1));
        runs.entry(Compared::RetriesPerTx)
            .or_default()
            .push(crate::num::real(t.retries) / n);
    }
    // The audit's acknowledged writes not kept, by group and TOTAL.
    if let Some(a) = run.audit.as_ref().filter(|a| a.finished) {
        let g = match &row.label {
            Label::Total => Some(&a.total),
            Label::Group(row) => a.groups.iter().find(|g| row.is(&g.group)),
            _ => None,
        };
        if let Some(g) = g {
            runs.entry(Compared::Lost)
                .or_default()
                .push(crate::num::real(g.not_kept()));
        }
    }
    // The longest window without a success (TOTAL: of any group), where a run had faults or
    // windows.
    let whole = matches!(row.label, Label::Total | Label::Group(_));
    if whole && (!run.faults.is_empty() || !run.unavailable.is_empty()) {
        let longest = run
            .unavailable
            .iter()
            .filter(|w| match &row.label {
                Label::Total => w.label != Label::Total,
                l => matches!(l, Label::Group(_)) && w.label == *l,
            })
            .map(|w| w.secs)
            .fold(0.0, f64::max);
        runs.entry(Compared::UnavailableMax)
            .or_default()
            .push(longest);
    }
}

/// A label's whole-run values from its runs pooled (`runs` of them) and its per-run series.
fn whole_values(pool: Pool, per_run: Option<&Series>, runs: f64) -> BTreeMap<Compared, f64> {
    let (h, samples, weighted_avg, errors, throughput, max) = pool;
    let mut v: BTreeMap<Compared, f64> = latency_values(&h).into_iter().collect();
    // The exact max, as the summary has it (the histogram's is its bucket's top).
    v.insert(Compared::Max, max);
    v.insert(Compared::Samples, samples);
    v.insert(Compared::Throughput, throughput / runs);
    // One run: its exact average; several: weighted by their samples.
    let single = per_run
        .and_then(|m| m.get(&Compared::Avg))
        .filter(|a| a.len() == 1);
    let avg = match single {
        Some(a) => a[0],
        None if samples > 0.0 => weighted_avg / samples,
        None => 0.0,
    };
    v.insert(Compared::Avg, avg);
    for extra in EXTRA {
        if let Some(x) = per_run.and_then(|m| m.get(&extra)) {
            v.insert(extra, mean(x));
        }
    }
    v.insert(
        Compared::ErrorPct,
        if samples > 0.0 {
            errors * 100.0 / samples
        } else {
            0.0
        },
    );
    v
}

/// Per-interval series from the interval log, by the row label the tag stands for.
fn interval_series(
    dir: &RunDir,
    steered: &Steered,
    which: Which,
    labels: &[Label],
) -> BTreeMap<Label, Series> {
    let mut per_interval: BTreeMap<Label, Series> = BTreeMap::new();
    for label in labels {
        let tag = crate::metrics::interval::Tag::latency(label.clone()).to_string();
        // A change row has no series of its own: its group's, over the time it ran (one run:
        // with --repeat the rows are judged over the runs).
        let span = steered
            .span_ms(which, label)
            .filter(|_| dir.summary.runs.len() == 1);
        let (list, within) = match &span {
            Some((group, from_ms, until_ms)) => {
                let tag = crate::metrics::interval::Tag::latency(Label::group(group)).to_string();
                let secs = |ms: u64| crate::num::real(ms) / 1000.0 - dir.base_secs;
                let (from, until) = (
                    if *from_ms == 0 {
                        f64::MIN
                    } else {
                        secs(*from_ms)
                    },
                    until_ms.map_or(f64::MAX, secs),
                );
                (dir.intervals.get(&tag), Some((from, until)))
            }
            None => (dir.intervals.get(&tag), None),
        };
        let Some(list) = list else {
            continue;
        };
        // An interval counts for a change row when it lies within its span (a change takes
        // effect at an interval's end; 10 ms for the clocks' rounding).
        let inside = |i: &&crate::rundir::IntervalStats| {
            within.is_none_or(|(from, until)| {
                i.start >= from - 0.01 && i.start + i.length <= until + 0.01
            })
        };
        let s = per_interval.entry(label.clone()).or_default();
        for i in list
            .iter()
            .filter(|i| i.count > 0 && i.length > 0.0)
            .filter(inside)
        {
            for (k, v) in [
                (Compared::Throughput, crate::num::real(i.count) / i.length),
                (Compared::P50, i.p50),
                (Compared::P90, i.p90),
                (Compared::P99, i.p99),
                (Compared::P999, i.p999),
                (Compared::Max, i.max),
                (Compared::Avg, i.mean),
            ] {
                s.entry(k).or_default().push(v);
            }
        }
    }
    per_interval
}

/// Student's t at 99.5 % (a two-sided 99 % interval) for `df` degrees of freedom. At 99 %, one
/// comparison of identical plans in a hundred calls a difference, not one in twenty.
fn t_99(df: f64) -> f64 {
    const T: [f64; 30] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
        2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
        2.771, 2.763, 2.756, 2.750,
    ];
    let d = usize::try_from(crate::num::whole(df.floor().max(1.0))).unwrap_or(usize::MAX);
    T.get(d - 1).copied().unwrap_or(2.576)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / crate::num::real_len(xs.len().max(1))
}

fn var(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / crate::num::real_len(xs.len().max(2) - 1)
}

/// Is the difference of `new` and `base` beyond their noise? Runs: Welch's t-test at 99 %.
/// Intervals: a seeded bootstrap whose 99 % interval of the difference excludes 0.
fn beyond_noise(base: &[f64], new: &[f64], by_runs: bool, rng: &mut impl Rng) -> Option<bool> {
    if base.len() < 2 || new.len() < 2 {
        return None;
    }
    let diff = mean(new) - mean(base);
    if by_runs {
        // Welch's t-test at 99 %, two-sided: few runs make a wide interval, as they should.
        let (vb, vn) = (
            var(base) / crate::num::real_len(base.len()),
            var(new) / crate::num::real_len(new.len()),
        );
        let se = (vb + vn).sqrt();
        if se == 0.0 {
            return Some(diff != 0.0);
        }
        let df = (vb + vn).powi(2)
            / (vb.powi(2) / crate::num::real_len(base.len() - 1)
                + vn.powi(2) / crate::num::real_len(new.len() - 1));
        return Some(diff.abs() > t_99(df) * se);
    }
    const ROUNDS: usize = 2000;
    let mut diffs: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let draw = |xs: &[f64], rng: &mut dyn rand::RngCore| {
                (0..xs.len())
                    .map(|_| xs[rng.random_range(0..xs.len())])
                    .sum::<f64>()
                    / crate::num::real_len(xs.len())
            };
            draw(new, rng) - draw(base, rng)
        })
        .collect();
    diffs.sort_by(f64::total_cmp);
    // A 99 % interval: 0.5 % cut from each end.
    let (lo, hi) = (diffs[ROUNDS / 200], diffs[ROUNDS - 1 - ROUNDS / 200]);
    Some(lo > 0.0 || hi < 0.0)
}

/// What differs between the two runs' plans, in words; empty when they are comparable.
pub(crate) fn differences(base: &RunDir, new: &RunDir) -> Vec<String> {
    let mut out = Vec::new();
    let (b, n) = (&base.summary, &new.summary);
    if b.profile != n.profile {
        out.push(format!("profile {:?} against {:?}", b.profile, n.profile));
    }
    let shown = |rate: Option<f64>| rate.map_or("none".to_string(), |r| r.to_string());
    for g in &b.groups {
        match n.groups.iter().find(|x| x.name == g.name) {
            None => out.push(format!("group {} only in the base run", g.name)),
            Some(x) if x.threads != g.threads => out.push(format!(
                "group {}: {} threads against {}",
                g.name, g.threads, x.threads
            )),
            Some(x) if x.rate != g.rate => out.push(format!(
                "group {}: rate {} against {}",
                g.name,
                shown(g.rate),
                shown(x.rate)
            )),
            _ => {}
        }
    }
    for g in n
        .groups
        .iter()
        .filter(|g| !b.groups.iter().any(|x| x.name == g.name))
    {
        out.push(format!("group {} only in the new run", g.name));
    }
    out
}

/// Compares, judging noise with a generator seeded by `seed`.
pub fn compare(
    base: &RunDir,
    new: &RunDir,
    gates: &[Gate],
    seed: u64,
) -> Result<Comparison, Error> {
    let steered = Steered::of(&base.summary, &new.summary);
    let (b, n) = (
        side(base, &steered, Which::Base)?,
        side(new, &steered, Which::New)?,
    );
    let several = |s: &Side| {
        s.per_run
            .values()
            .next()
            .and_then(|m| m.get(&Compared::Samples))
            .is_some_and(|v| v.len() >= 2)
    };
    let mut sides = Sides {
        by_runs: several(&b) && several(&n),
        b: &b,
        n: &n,
        rng: rand::rngs::SmallRng::seed_from_u64(seed),
    };
    let mut cells = Vec::new();
    let order = pairs(base, new, &steered, (&b, &n));
    for (base_label, label) in &order {
        let spans = steered.spans_a_change(base_label, Which::Base)
            || steered.spans_a_change(label, Which::New);
        for metric in METRICS {
            cells.push(sides.cell(base_label, label, metric, spans));
        }
        // Where a side has them: documents per second and retries per transaction, judged
        // over runs (with --repeat), not over intervals (the interval log has neither).
        for metric in EXTRA {
            cells.extend(sides.extra_cell(base_label, label, metric, spans));
        }
    }
    let gates = gates
        .iter()
        .map(|g| g.judge(&cells))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Comparison {
        base: base.path.display().to_string(),
        new: new.path.display().to_string(),
        base_tags: base.run_info.tags.clone(),
        new_tags: new.run_info.tags.clone(),
        cells,
        gates,
        members: members::compare(&base.summary, &new.summary),
        notes: steered.note(),
    })
}

/// The rows compared, as (base's label, new's label), in the new run's order (groups, stage
/// totals, TOTAL): each label both runs have, and a change row of a steered run against the
/// other run's unsteered row of its group at the same value (a base run's change row after
/// the new run's row of its group).
fn pairs(
    base: &RunDir,
    new: &RunDir,
    steered: &Steered,
    (b, n): (&Side, &Side),
) -> Vec<(Label, Label)> {
    let rows = |d: &RunDir| -> Vec<Label> {
        d.summary
            .runs
            .first()
            .into_iter()
            .flat_map(|r| &r.rows)
            .map(|r| r.label.clone())
            .collect()
    };
    let mut out: Vec<(Label, Label)> = Vec::new();
    for l in rows(new) {
        if b.values.contains_key(&l) {
            out.push((l.clone(), l));
        } else if let Some(bl) = steered
            .counterpart(&l, Which::Base)
            .filter(|bl| b.values.contains_key(bl))
        {
            out.push((bl, l));
        }
    }
    for l in rows(base).into_iter().filter(|l| !n.values.contains_key(l)) {
        let Some(nl) = steered
            .counterpart(&l, Which::New)
            .filter(|nl| n.values.contains_key(nl))
        else {
            continue;
        };
        let at = out
            .iter()
            .rposition(|(_, x)| *x == nl || x.group_row() == nl.group_row())
            .map_or(out.len(), |i| i + 1);
        out.insert(at, (l, nl));
    }
    out
}
