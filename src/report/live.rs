//! The live lines: one per group every interval, on stderr (ops/s, p50, p99, errors, users).

use std::io::Write;
use std::time::Duration;

use crate::metrics::{GroupMetrics, IntervalSink};

pub struct Live {
    /// Group names and planned threads, by group index.
    pub groups: Vec<(String, u32)>,
}

impl IntervalSink for Live {
    fn interval(
        &mut self,
        elapsed: Duration,
        period: Duration,
        window: &[GroupMetrics],
        active: &[u32],
    ) {
        let mut err = std::io::stderr().lock();
        for (i, w) in window.iter().enumerate() {
            let (name, threads) = &self.groups[i];
            let active = active.get(i).copied().unwrap_or(0);
            if w.samples == 0 && active == 0 {
                continue;
            }
            let r = w.row(name);
            let _ = writeln!(
                err,
                "[{:>7.1}s] {:<14} {:>9.1} ops/s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {:>5}  threads {}/{}",
                elapsed.as_secs_f64(),
                name,
                w.samples as f64 / period.as_secs_f64(),
                r.median_ms,
                r.p99_ms,
                w.errors,
                active,
                threads
            );
        }
    }
}
