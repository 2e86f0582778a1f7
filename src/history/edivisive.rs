//! Change points of one series: E-Divisive means (Matteson and James, "A Nonparametric Approach
//! for Multiple Change Point Analysis of Multivariate Data", 2014) with the deterministic
//! significance test of Hunter (Fleming et al., "Hunter: Using Change Point Detection to Hunt for
//! Performance Regressions", ICPE 2023), as Apache Otava 0.8.0 (`otava/analysis.py`,
//! `otava/change_point_divisive/`) computes them, step for step:
//!
//! - **split**: windows of `window` points, half a window apart; in each, the point that
//!   maximizes the divergence Q̂ of the pieces before and after it is a candidate, kept while
//!   Student's two-sided t-test of its two sides gives a p-value within the first pass's (ten
//!   times the asked one under 0.05, twice under 0.5); its sides split again, and so on;
//! - **merge**: over the whole series, the weakest point (the largest p-value, or when every
//!   one passes, the smallest relative change) is dropped while it fails `pvalue` (p < it) or
//!   `min_magnitude` (change > it), and the tests of the point after it and the next are
//!   redone on their new sides, as Otava does (the point before it keeps its test, whose after
//!   side ended at the dropped point: Otava's choice, kept so that the results are its own).
//!
//! Nothing random: the same series gives the same points on every machine. Ties and NaN are
//! broken as Python's `max`/`min` and numpy's `argmax` break them (first wins; a NaN p-value is
//! never larger than another, and fails every test).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The two sides of a change point and how different they are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TTest {
    pub mean_before: f64,
    pub mean_after: f64,
    /// Population standard deviations (numpy's `std`), as Otava passes them to the test.
    pub(crate) std_before: f64,
    pub(crate) std_after: f64,
    pub pvalue: f64,
}

impl TTest {
    /// Student's two-sided t-test of two samples with equal variances, from their means and
    /// standard deviations (scipy's `ttest_ind_from_stats`), as Otava's `compare`.
    pub(crate) fn of(left: &[f64], right: &[f64]) -> TTest {
        let (ml, sl) = mean_std(left);
        let (mr, sr) = mean_std(right);
        let (nl, nr) = (
            crate::num::real_len(left.len()),
            crate::num::real_len(right.len()),
        );
        let pvalue = if left.len() + right.len() > 2 {
            let df = nl + nr - 2.0;
            let pooled = ((nl - 1.0) * sl * sl + (nr - 1.0) * sr * sr) / df;
            let t = (ml - mr) / (pooled * (1.0 / nl + 1.0 / nr)).sqrt();
            if t.is_nan() {
                f64::NAN
            } else if t.is_infinite() {
                0.0
            } else {
                StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |d| 2.0 * d.sf(t.abs()))
            }
        } else {
            1.0
        };
        TTest {
            mean_before: ml,
            mean_after: mr,
            std_before: sl,
            std_after: sr,
            pvalue,
        }
    }

    /// after / before - 1 (0 when before is 0).
    pub(crate) fn forward_change(&self) -> f64 {
        if self.mean_before == 0.0 {
            0.0
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }

    fn backward_change(&self) -> f64 {
        if self.mean_after == 0.0 {
            0.0
        } else {
            self.mean_before / self.mean_after - 1.0
        }
    }

    /// The larger of the relative changes either way.
    pub(crate) fn magnitude(&self) -> f64 {
        self.forward_change()
            .abs()
            .max(self.backward_change().abs())
    }
}

fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = crate::num::real_len(xs.len());
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// A change point: the index of the first point after the change, its Q̂, and its test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    pub(crate) qhat: f64,
    pub test: TTest,
}

/// The settings of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Points per window of the split step (Otava's default 50).
    pub window: usize,
    /// A change point's p-value must be below it.
    pub pvalue: f64,
    /// And its relative change above it (0.05 = 5 %).
    pub min_magnitude: f64,
    /// Which weak point the merge drops first.
    pub merge: Merge,
}

/// The merge step's order of dropping weak change points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Hunter's (Otava's): the largest p-value first while any fails; then, while all pass,
    /// the smallest change below the minimum.
    Hunter,
    /// The smallest change below the minimum first, then Hunter's. Two weak points side by
    /// side make a piece of one run between them, whose t-test against the next one-run piece
    /// gives p = 1: Hunter's order drops the real change and keeps its neighbour, a run of
    /// noise below the minimum (a change at the newest run told at the run before it). The
    /// same as Hunter's with a minimum of 0.
    SmallChangesFirst,
}

/// The change points of `series`, in index order.
pub fn change_points(series: &[f64], s: Settings) -> Vec<ChangePoint> {
    let first_pass = if s.pvalue < 0.05 {
        s.pvalue * 10.0
    } else if s.pvalue < 0.5 {
        s.pvalue * 2.0
    } else {
        s.pvalue
    };
    let weak = split(series, s.window.max(2), first_pass);
    merge(weak, series, s)
}

/// The pieces between change points (sorted), as `[start, end)` pairs; empty ones left out.
fn intervals(points: &[usize], len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for &p in points {
        if p != start {
            out.push((start, p));
        }
        start = p;
    }
    if start != len {
        out.push((start, len));
    }
    out
}

/// The test of a point against the pieces around it: the piece it splits, or (a point that
/// ends a piece) that piece and the next.
fn test_at(series: &[f64], index: usize, pieces: &[(usize, usize)]) -> Option<TTest> {
    for (i, &(start, end)) in pieces.iter().enumerate() {
        if end == index {
            let next = pieces.get(i + 1)?;
            return Some(TTest::of(&series[start..end], &series[next.0..next.1]));
        }
        if start < index && index < end {
            return Some(TTest::of(&series[start..index], &series[index..end]));
        }
    }
    None
}

/// E-Divisive on one window (`ChangePointDetector.get_change_points`): indexes relative to it.
fn divisive(window: &[f64], max_pvalue: f64) -> Vec<ChangePoint> {
    let q = Divergence::new(window);
    let mut found: Vec<ChangePoint> = Vec::new();
    loop {
        let mut indexes: Vec<usize> = found.iter().map(|c| c.index).collect();
        indexes.sort_unstable();
        let pieces = intervals(&indexes, window.len());
        // The best candidate over the pieces (Python's max: the first of equals).
        let mut best: Option<(usize, f64)> = None;
        for &(start, end) in pieces.iter().filter(|(a, b)| b - a > 1) {
            let c = q.candidate(start, end);
            if best.is_none_or(|b| c.1 > b.1) {
                best = Some(c);
            }
        }
        let Some((index, qhat)) = best else { break };
        let Some(test) = test_at(window, index, &pieces) else {
            break;
        };
        if test.pvalue <= max_pvalue {
            found.push(ChangePoint { index, qhat, test });
            found.sort_by_key(|c| c.index);
        } else {
            break;
        }
    }
    found
}

fn split(series: &[f64], window: usize, max_pvalue: f64) -> Vec<ChangePoint> {
    let step = window / 2;
    let mut points: Vec<ChangePoint> = Vec::new();
    let mut start = 0;
    while start < series.len() {
        let end = (start + window).min(series.len());
        let mut new: Vec<ChangePoint> = divisive(&series[start..end], max_pvalue);
        for c in &mut new {
            c.index += start;
        }
        let last = new.last().map_or(0, |c| c.index);
        start = last.max(start + step);
        for c in new {
            if !points.iter().any(|p| p.index == c.index) {
                points.push(c);
            }
        }
    }
    points.sort_by_key(|c| c.index);
    let indexes: Vec<usize> = points.iter().map(|c| c.index).collect();
    let pieces = intervals(&indexes, series.len());
    points
        .into_iter()
        .filter_map(|c| test_at(series, c.index, &pieces).map(|test| ChangePoint { test, ..c }))
        .collect()
}

fn merge(mut points: Vec<ChangePoint>, series: &[f64], s: Settings) -> Vec<ChangePoint> {
    let (max_pvalue, min_magnitude) = (s.pvalue, s.min_magnitude);
    while !points.is_empty() {
        if s.merge == Merge::SmallChangesFirst {
            let small = points
                .iter()
                .enumerate()
                .filter(|(_, c)| c.test.magnitude() <= min_magnitude)
                .min_by(|a, b| a.1.test.magnitude().total_cmp(&b.1.test.magnitude()))
                .map(|(i, _)| i);
            if let Some(i) = small {
                drop_point(&mut points, i, series);
                continue;
            }
        }
        // Python's max by p-value, then min by magnitude: the first of equals, NaN never chosen
        // over a number that came before it.
        let mut weakest = 0;
        for (i, c) in points.iter().enumerate().skip(1) {
            if c.test.pvalue > points[weakest].test.pvalue {
                weakest = i;
            }
        }
        if points[weakest].test.pvalue < max_pvalue {
            weakest = 0;
            for (i, c) in points.iter().enumerate().skip(1) {
                if c.test.magnitude() < points[weakest].test.magnitude() {
                    weakest = i;
                }
            }
            if points[weakest].test.magnitude() > min_magnitude {
                return points;
            }
        }
        drop_point(&mut points, weakest, series);
    }
    points
}

/// Drops a point and tests again, as Otava's `merge` does, the point after it and the next one
/// (not the one before it, whose after side it ended: kept as Otava has it).
fn drop_point(points: &mut Vec<ChangePoint>, at: usize, series: &[f64]) {
    points.remove(at);
    let indexes: Vec<usize> = points.iter().map(|c| c.index).collect();
    let pieces = intervals(&indexes, series.len());
    for i in [at, at + 1] {
        if let Some(c) = points.get(i) {
            if let Some(test) = test_at(series, c.index, &pieces) {
                points[i].test = test;
            }
        }
    }
}

/// Q̂ of a window (Otava's `PairDistanceCalculator`, power 1): the pairwise distances' column
/// sums `v` and row-wise running sums `h`, from which every Q(τ, κ) of a piece follows.
struct Divergence {
    d: Vec<Vec<f64>>,
    /// v[j] = Σ_{i ≤ j} d[i][j+1].
    v: Vec<f64>,
    /// h[i][j] = Σ_{i ≤ t ≤ j} d[i][t+1] (0 for j < i).
    h: Vec<Vec<f64>>,
}

impl Divergence {
    fn new(xs: &[f64]) -> Self {
        let n = xs.len();
        let d: Vec<Vec<f64>> = xs
            .iter()
            .map(|a| xs.iter().map(|b| (a - b).abs()).collect())
            .collect();
        let m = n.saturating_sub(1);
        let triu = |i: usize, j: usize| if j + 1 > i { d[i][j + 1] } else { 0.0 };
        let mut v = vec![0.0; m];
        for (j, vj) in v.iter_mut().enumerate() {
            for i in 0..m {
                *vj += triu(i, j);
            }
        }
        let mut h = vec![vec![0.0; m]; m];
        for (i, row) in h.iter_mut().enumerate() {
            let mut run = 0.0;
            for (j, cell) in row.iter_mut().enumerate() {
                run += triu(i, j);
                *cell = run;
            }
        }
        Divergence { d, v, h }
    }

    /// The τ in (start, end) with the largest Q(τ, κ) over κ in (τ, end], and that Q: numpy's
    /// argmax over the matrix `A - B - C` of `_get_Q_vals`, row by row, first of equals.
    fn candidate(&self, start: usize, end: usize) -> (usize, f64) {
        let l = end - 1 - start;
        let vs: Vec<f64> = (0..l)
            .map(|j| {
                let above: f64 = (0..start).map(|i| self.d[i][start + 1 + j]).sum();
                self.v[start + j] - above
            })
            .collect();
        let hs = |i: usize, j: usize| self.h[start + i][start + j];
        let mut cum_v = vec![0.0; l];
        let mut run = 0.0;
        for (c, x) in cum_v.iter_mut().zip(&vs) {
            run += x;
            *c = run;
        }
        // cum_h[i][j] = Σ_{t ≤ i} hs(t, j); tail[i][j] = Σ_{t = i..l-1} hs(t + 1, j + 1).
        let mut cum_h = vec![vec![0.0; l]; l];
        for j in 0..l {
            let mut run = 0.0;
            for (i, row) in cum_h.iter_mut().enumerate() {
                run += hs(i, j);
                row[j] = run;
            }
        }
        let mut tail = vec![vec![0.0; l.saturating_sub(1)]; l.saturating_sub(1)];
        #[allow(clippy::needless_range_loop)] // tail[i][j] down a column, as numpy's flipud cumsum
        for j in 0..l.saturating_sub(1) {
            let mut run = 0.0;
            for i in (0..l - 1).rev() {
                run += hs(i + 1, j + 1);
                tail[i][j] = run;
            }
        }
        let s = crate::num::real_len(start);
        let mut best = (0usize, 0usize, f64::NEG_INFINITY);
        for i in 0..l {
            let tau = crate::num::real_len(start + 1 + i);
            for j in 0..l {
                let kappa = crate::num::real_len(start + 2 + j);
                let a = if i <= j {
                    let before = if i >= 1 { cum_v[i - 1] } else { 0.0 };
                    2.0 / (kappa - s) * (cum_h[i][j] - before)
                } else {
                    0.0
                };
                let b = if i >= 1 && j >= 1 && i <= j {
                    let den = (kappa - s) * (tau - s - 1.0);
                    if den != 0.0 {
                        2.0 * (kappa - tau) / den * cum_v[i - 1]
                    } else {
                        0.0
                    }
                } else {
                    0.0
                };
                let c = if i + 1 < l && j >= 1 && i < j {
                    let den = (kappa - s) * (kappa - tau - 1.0);
                    if den != 0.0 {
                        2.0 * (tau - s) / den * tail[i][j - 1]
                    } else {
                        0.0
                    }
                } else {
                    0.0
                };
                let q = a - b - c;
                if q > best.2 {
                    best = (i, j, q);
                }
            }
        }
        (best.0 + 1 + start, best.2)
    }
}

#[cfg(test)]
mod tests;
