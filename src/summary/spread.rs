//! The run-to-run spread of `--repeat`: throughput per label across runs.

use serde::{Deserialize, Serialize};

use super::RunResult;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spread {
    pub(crate) label: crate::metrics::Label,
    pub(crate) runs: usize,
    pub(crate) mean: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) stddev: f64,
    /// Coefficient of variation, percent.
    pub(crate) cv_pct: f64,
}

/// Throughput spread per label across runs (labels of the first run, in its order).
pub(crate) fn spread(runs: &[RunResult]) -> Vec<Spread> {
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
            let n = crate::num::real_len(xs.len());
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
    use crate::metrics::GroupMetrics;
    use std::collections::BTreeMap;

    fn run_with(throughputs: &[f64]) -> Vec<RunResult> {
        throughputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut row = GroupMetrics::default().row("TOTAL");
                row.throughput = *t;
                RunResult {
                    run: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    started_at: String::new(),
                    wall_secs: 1.0,
                    interrupted: false,
                    rows: vec![row],
                    metrics: Vec::new(),
                    errors_by_class: BTreeMap::new(),
                    error_kinds: Vec::new(),
                    error_messages: BTreeMap::new(),
                    stages: Vec::new(),
                    stopped_early: None,
                    aborted_by: None,
                    warmup: Vec::new(),
                    start: None,
                    load: None,
                    thresholds: Vec::new(),
                    invariants: Vec::new(),
                    audit: None,
                    faults: Vec::new(),
                    unavailable: Vec::new(),
                    changes: Vec::new(),
                    members: Vec::new(),
                    topology: Vec::new(),
                    audit_lines: Vec::new(),
                    streams: Vec::new(),
                    change_lines: Vec::new(),
                    failures: Vec::new(),
                    tool_gap: None,
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
