//! Receives every sample from the virtual users, records it into its group's metrics, and prints
//! a live line per group every interval. It is the single consumer of the sample channel, so the
//! histograms need no locks and the workers never format text.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::metrics::GroupMetrics;
use crate::sample::Sample;
use crate::samplelog::Logged;

/// Live reporting settings; `None` in `collect` means quiet.
pub struct Live {
    pub interval: Duration,
    /// Group names and planned threads, by group index.
    pub groups: Vec<(String, u32)>,
}

/// Collects until every sender is gone; returns the metrics of each group, by group index.
/// Recorded samples go on to `log` (the sample log writer) in batches, after being counted.
pub async fn collect(
    mut rx: mpsc::Receiver<Sample>,
    groups: usize,
    live: Option<Live>,
    active: Arc<Vec<AtomicU32>>,
    log: Option<mpsc::Sender<Vec<Logged>>>,
) -> Vec<GroupMetrics> {
    let mut total = vec![GroupMetrics::default(); groups];
    let mut window = vec![GroupMetrics::default(); groups];
    let period = live
        .as_ref()
        .map_or(Duration::from_secs(3600), |l| l.interval);
    let mut ticker = tokio::time::interval_at((Instant::now() + period).into(), period);
    let started = Instant::now();
    let mut batch = Vec::with_capacity(256);
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
                }
                match &log {
                    Some(log) => {
                        let threads: Vec<u32> = active.iter().map(|a| a.load(Ordering::Relaxed)).collect();
                        let all_threads = threads.iter().sum();
                        let logged = batch
                            .drain(..)
                            .map(|sample| Logged {
                                group_threads: threads.get(usize::from(sample.group)).copied().unwrap_or(0),
                                all_threads,
                                sample,
                            })
                            .collect();
                        // The writer only goes away after an I/O error, which `finish` reports.
                        let _ = log.send(logged).await;
                    }
                    None => batch.clear(),
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
    for (t, w) in total.iter_mut().zip(window.iter()) {
        t.merge(w);
    }
    total
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
