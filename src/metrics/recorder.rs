//! The recorder: the single consumer of the sample channel. It records every sample into its
//! group's metrics (so the histograms need no locks and the workers never format text), shows
//! each sample to a watcher (the executor's error-rate stop), hands each interval's metrics to a
//! sink (the live report), and passes recorded samples on to the sample log in batches.
//!
//! A panic while recording a batch is caught: it is reported as a failure of the run and the
//! recorder goes on, so what was measured before it is kept.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::group::GroupMetrics;
use super::sample::{Logged, Sample};

/// Watches every recorded sample; the executor's error-rate stop is one.
pub trait Watch: Send {
    fn observe(&mut self, s: &Sample);
    /// Looks at what was observed, at `now_us` (epoch microseconds); true once it has acted
    /// and needs no more samples.
    fn check(&mut self, now_us: u64) -> bool;
}

/// Receives the metrics of each interval, by group index, with the running users per group.
pub trait IntervalSink: Send {
    fn interval(
        &mut self,
        elapsed: Duration,
        period: Duration,
        window: &[GroupMetrics],
        active: &[u32],
    );
}

/// Where recorded samples go besides the metrics.
pub struct Recorder {
    pub groups: usize,
    /// Running virtual users per group, by group index.
    pub active: Arc<Vec<AtomicU32>>,
    /// Interval length of `live`.
    pub interval: Duration,
    pub live: Option<Box<dyn IntervalSink>>,
    pub watch: Option<Box<dyn Watch>>,
    pub log: Option<mpsc::Sender<Vec<Logged>>>,
}

/// What the recorder measured: metrics by group index, and what went wrong inside it.
pub struct Recorded {
    pub groups: Vec<GroupMetrics>,
    pub failures: Vec<String>,
}

/// Samples per batch handed to the sample log writer, and the longest a sample waits for one.
const LOG_BATCH: usize = 4096;
const LOG_FLUSH: Duration = Duration::from_millis(200);
/// How often the watcher is checked when no sample arrives.
const WATCH_TICK: Duration = Duration::from_secs(1);

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

impl Recorder {
    /// Records until every sender is gone.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Sample>) -> Recorded {
        let mut failures = Vec::new();
        let mut total = vec![GroupMetrics::default(); self.groups];
        let mut window = vec![GroupMetrics::default(); self.groups];
        let period = self.interval;
        let started = Instant::now();
        let mut ticker = tokio::time::interval_at(started + period, period);
        let mut watch_tick = tokio::time::interval(WATCH_TICK);
        let mut flush_tick = tokio::time::interval(LOG_FLUSH);
        let mut batch = Vec::with_capacity(256);
        // Samples for the log go in large batches: one wake-up of the writer thread per batch.
        let mut pending: Vec<Logged> = Vec::with_capacity(LOG_BATCH);
        loop {
            tokio::select! {
                n = rx.recv_many(&mut batch, 256) => {
                    if n == 0 {
                        break;
                    }
                    let recorded = catch_unwind(AssertUnwindSafe(|| {
                        for s in &batch {
                            if let Some(w) = window.get_mut(usize::from(s.group)) {
                                w.record(s);
                            }
                            if let Some(w) = self.watch.as_mut() {
                                w.observe(s);
                            }
                        }
                        self.watch.as_mut().is_some_and(|w| w.check(now_us()))
                    }));
                    match recorded {
                        Ok(true) => self.watch = None,
                        Ok(false) => {}
                        Err(p) => {
                            failures.push(format!(
                                "the recorder panicked on a batch of {} samples, which may be counted in part: {}",
                                batch.len(),
                                panic_message(p.as_ref())
                            ));
                            self.watch = None;
                        }
                    }
                    match &self.log {
                        Some(log) => {
                            let threads: Vec<u32> = self.active.iter().map(|a| a.load(Ordering::Relaxed)).collect();
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
                _ = flush_tick.tick(), if self.log.is_some() && !pending.is_empty() => {
                    if let Some(log) = &self.log {
                        send_log(log, &mut pending).await;
                    }
                }
                _ = watch_tick.tick(), if self.watch.is_some() => {
                    if self.watch.as_mut().is_some_and(|w| w.check(now_us())) {
                        self.watch = None;
                    }
                }
                _ = ticker.tick(), if self.live.is_some() => {
                    if let Some(live) = self.live.as_mut() {
                        let active: Vec<u32> = self.active.iter().map(|a| a.load(Ordering::Relaxed)).collect();
                        let shown = catch_unwind(AssertUnwindSafe(|| {
                            live.interval(started.elapsed(), period, &window, &active)
                        }));
                        if let Err(p) = shown {
                            failures.push(format!(
                                "the live report panicked and was switched off: {}",
                                panic_message(p.as_ref())
                            ));
                            self.live = None;
                        }
                    }
                    for (t, w) in total.iter_mut().zip(window.iter_mut()) {
                        t.merge(w);
                        *w = GroupMetrics::default();
                    }
                }
            }
        }
        if let Some(log) = &self.log {
            send_log(log, &mut pending).await;
        }
        for (t, w) in total.iter_mut().zip(window.iter()) {
            t.merge(w);
        }
        Recorded {
            groups: total,
            failures,
        }
    }
}

async fn send_log(log: &mpsc::Sender<Vec<Logged>>, pending: &mut Vec<Logged>) {
    if pending.is_empty() {
        return;
    }
    let full = std::mem::replace(pending, Vec::with_capacity(LOG_BATCH));
    // The writer only goes away after an I/O error, which `SampleLog::finish` reports.
    let _ = log.send(full).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    struct PanicsOnThird(u32);
    impl Watch for PanicsOnThird {
        fn observe(&mut self, _: &Sample) {
            self.0 += 1;
            if self.0 == 3 {
                panic!("watcher broke");
            }
        }
        fn check(&mut self, _: u64) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn a_panic_while_recording_is_reported_and_what_came_before_and_after_is_kept() {
        let (tx, rx) = mpsc::channel(16);
        let recorder = Recorder {
            groups: 1,
            active: Arc::new(vec![AtomicU32::new(0)]),
            interval: Duration::from_secs(3600),
            live: None,
            watch: Some(Box::new(PanicsOnThird(0))),
            log: None,
        };
        let task = tokio::spawn(recorder.run(rx));
        for i in 0..5u64 {
            tx.send(Sample::at(i, 10)).await.unwrap();
            // One sample per batch, so the panic hits exactly the third.
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(tx);
        let recorded = task.await.unwrap();
        assert_eq!(recorded.failures.len(), 1, "{:?}", recorded.failures);
        assert!(recorded.failures[0].contains("watcher broke"));
        // The third sample was recorded before the watcher saw it; none is lost.
        assert_eq!(recorded.groups[0].samples, 5);
    }
}
