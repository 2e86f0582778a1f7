//! Receives every sample from the virtual users, records it into its group's metrics, and prints
//! a live line per group every interval. It is the single consumer of the sample channel, so the
//! histograms need no locks and the workers never format text.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::metrics::GroupMetrics;
use crate::sample::Sample;
use crate::samplelog::Logged;
use tokio_util::sync::CancellationToken;

/// Live reporting settings; `None` in `collect` means quiet.
pub struct Live {
    pub interval: Duration,
    /// Group names and planned threads, by group index.
    pub groups: Vec<(String, u32)>,
}

/// Stops the run once `pct` percent of the recent operations failed: the last
/// `GUARD_WINDOW_OPS` that completed within `GUARD_WINDOW`, at least `GUARD_MIN_OPS` of them.
/// Recent, so a server that dies late in a long run stops it soon, however well it did before.
pub struct ErrorGuard {
    pub pct: f64,
    pub stop: CancellationToken,
    /// Why the run stopped early, once it has.
    pub reason: Arc<OnceLock<String>>,
    recent: VecDeque<(u64, bool)>,
}

pub const GUARD_WINDOW_OPS: usize = 100;
pub const GUARD_WINDOW: Duration = Duration::from_secs(10);
pub const GUARD_MIN_OPS: usize = 3;

impl ErrorGuard {
    pub fn new(pct: f64, stop: CancellationToken, reason: Arc<OnceLock<String>>) -> Self {
        ErrorGuard {
            pct,
            stop,
            reason,
            recent: VecDeque::with_capacity(GUARD_WINDOW_OPS),
        }
    }

    fn observe(&mut self, s: &Sample) {
        if self.recent.len() == GUARD_WINDOW_OPS {
            self.recent.pop_front();
        }
        self.recent.push_back((s.end_us(), s.error.is_some()));
    }

    /// Checks the window ending at `now_us`; on tripping, records why and stops the run.
    fn check(&mut self, now_us: u64) -> bool {
        let horizon = now_us.saturating_sub(GUARD_WINDOW.as_micros() as u64);
        while self.recent.front().is_some_and(|(end, _)| *end < horizon) {
            self.recent.pop_front();
        }
        let n = self.recent.len();
        let failed = self.recent.iter().filter(|(_, f)| *f).count();
        if n < GUARD_MIN_OPS || (failed as f64) * 100.0 < self.pct * n as f64 {
            return false;
        }
        let _ = self.reason.set(format!(
            "stopped early: {failed} of the last {n} operations failed ({:.1} %), at or over stop_on_error_pct = {}",
            failed as f64 * 100.0 / n as f64,
            self.pct
        ));
        self.stop.cancel();
        true
    }
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Collects until every sender is gone; returns the metrics of each group, by group index.
/// Recorded samples go on to `log` (the sample log writer) in batches, after being counted.
pub async fn collect(
    mut rx: mpsc::Receiver<Sample>,
    groups: usize,
    live: Option<Live>,
    active: Arc<Vec<AtomicU32>>,
    log: Option<mpsc::Sender<Vec<Logged>>>,
    mut guard: Option<ErrorGuard>,
) -> Vec<GroupMetrics> {
    let mut guard_tick = tokio::time::interval(Duration::from_secs(1));
    let mut total = vec![GroupMetrics::default(); groups];
    let mut window = vec![GroupMetrics::default(); groups];
    let period = live
        .as_ref()
        .map_or(Duration::from_secs(3600), |l| l.interval);
    let mut ticker = tokio::time::interval_at((Instant::now() + period).into(), period);
    let started = Instant::now();
    let mut batch = Vec::with_capacity(256);
    // Samples for the log go in large batches: one wake-up of the writer thread per batch.
    let mut pending: Vec<Logged> = Vec::with_capacity(LOG_BATCH);
    let mut flush_tick = tokio::time::interval(LOG_FLUSH);
    loop {
        tokio::select! {
            n = rx.recv_many(&mut batch, 256) => {
                if n == 0 {
                    break;
                }
                for s in &batch {
                    if let Some(w) = window.get_mut(usize::from(s.group)) {
                        w.record(s);
                    }
                    if let Some(g) = guard.as_mut() {
                        g.observe(s);
                    }
                }
                if guard.as_mut().is_some_and(|g| g.check(now_us())) {
                    guard = None;
                }
                match &log {
                    Some(log) => {
                        let threads: Vec<u32> = active.iter().map(|a| a.load(Ordering::Relaxed)).collect();
                        let all_threads = threads.iter().sum();
                        pending.extend(batch.drain(..).map(|sample| Logged {
                            group_threads: threads.get(usize::from(sample.group)).copied().unwrap_or(0),
                            all_threads,
                            sample,
                        }));
                        if pending.len() >= LOG_BATCH {
                            send_log(log, &mut pending).await;
                        }
                    }
                    None => batch.clear(),
                }
            }
            _ = flush_tick.tick(), if log.is_some() && !pending.is_empty() => {
                if let Some(log) = &log {
                    send_log(log, &mut pending).await;
                }
            }
            _ = guard_tick.tick(), if guard.is_some() => {
                if guard.as_mut().is_some_and(|g| g.check(now_us())) {
                    guard = None;
                }
            }
            _ = ticker.tick(), if live.is_some() => {
                if let Some(l) = &live {
                    print_live(l, &active, started.elapsed(), &window, period);
                }
                for (t, w) in total.iter_mut().zip(window.iter_mut()) {
                    t.merge(w);
                    *w = GroupMetrics::default();
                }
            }
        }
    }
    if let Some(log) = &log {
        send_log(log, &mut pending).await;
    }
    for (t, w) in total.iter_mut().zip(window.iter()) {
        t.merge(w);
    }
    total
}

/// Samples per batch handed to the sample log writer, and the longest a sample waits for one.
const LOG_BATCH: usize = 4096;
const LOG_FLUSH: Duration = Duration::from_millis(200);

async fn send_log(log: &mpsc::Sender<Vec<Logged>>, pending: &mut Vec<Logged>) {
    if pending.is_empty() {
        return;
    }
    let full = std::mem::replace(pending, Vec::with_capacity(LOG_BATCH));
    // The writer only goes away after an I/O error, which `SampleLog::finish` reports.
    let _ = log.send(full).await;
}

fn print_live(
    live: &Live,
    active: &[AtomicU32],
    elapsed: Duration,
    window: &[GroupMetrics],
    period: Duration,
) {
    let mut err = std::io::stderr().lock();
    for (i, w) in window.iter().enumerate() {
        let (name, threads) = &live.groups[i];
        let active = active[i].load(Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{ErrorClass, OpError};

    fn sample(end_us: u64, failed: bool) -> Sample {
        Sample {
            error: failed.then(|| {
                Box::new(OpError {
                    class: ErrorClass::Network,
                    message: "gone".into(),
                })
            }),
            ..Sample::at(end_us - 10, 10)
        }
    }

    fn guard(pct: f64) -> ErrorGuard {
        ErrorGuard::new(pct, CancellationToken::new(), Arc::new(OnceLock::new()))
    }

    #[test]
    fn the_guard_trips_on_recent_failures_however_many_successes_came_before() {
        let mut g = guard(50.0);
        let t = 100_000_000_000;
        for i in 0..10_000 {
            g.observe(&sample(t + i, false));
        }
        assert!(!g.check(t + 10_000));
        // The server dies: 4 users fail once a second for a few seconds.
        for i in 0..60 {
            g.observe(&sample(t + 10_000 + i * 250_000, true));
        }
        assert!(g.check(t + 10_000 + 60 * 250_000));
        assert!(g.stop.is_cancelled());
        assert!(g.reason.get().unwrap().contains("stop_on_error_pct = 50"));
    }

    #[test]
    fn the_guard_needs_a_few_recent_operations_and_forgets_old_ones() {
        let mut g = guard(50.0);
        let t = 100_000_000_000;
        g.observe(&sample(t, true));
        g.observe(&sample(t + 1, true));
        assert!(!g.check(t + 2), "two failures are not yet a pattern");
        // Failures older than the window do not count.
        for i in 0..5 {
            g.observe(&sample(t + i, true));
        }
        assert!(!g.check(t + 11_000_000 + GUARD_WINDOW.as_micros() as u64));
        assert!(!g.stop.is_cancelled());
    }
}
