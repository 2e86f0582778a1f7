//! The recorder: the single consumer of the sample channel. It records every sample into its
//! group's metrics for the current interval (so the histograms need no locks and the workers
//! never format text). At the end of each interval (`--hdr-interval`) it adds that interval into
//! the run's totals and into the live window, and shows it to every output as a `RunEvent`
//! (`output`): the interval log, the threshold abort, the live metrics, the live page; every few
//! intervals the live window to the live lines; the `Notice`s it is told (a stage or a fault
//! began or ended, the deployment changed) as they come, in order with the intervals; at the
//! run's end the last interval. So the log, the live lines, the page and the summary come from
//! the same histograms. It shows each sample to a watcher (the executor's error-rate stop) and
//! passes samples on to the sample log in batches.
//!
//! Warm-up samples are recorded apart: they reach the logs, never the summary.
//!
//! A panic while recording a batch or in an output is caught: it is reported as a failure of the
//! run and the recorder goes on (without that output), so what was measured before it is kept.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::group::GroupMetrics;
use super::interval::{Activity, IntervalBatch, IntervalHist, Series, Tag};
use super::output::{Closed, Flow, RunEvent, Segment, Split, Window};
use super::sample::{Logged, Sample};
use super::timing::Timing;
use super::Label;

/// Watches every recorded sample; the executor's error-rate stop is one.
pub trait Watch: Send {
    fn observe(&mut self, s: &Sample);
    /// Looks at what was observed, at `now_us` (epoch microseconds); true once it has acted
    /// and needs no more samples.
    fn check(&mut self, now_us: u64) -> bool;
}

/// Asked at the end of each interval for the changes to make from then on (the live page's
/// control): each change takes effect at an interval's end.
pub trait Steering: Send {
    fn at_interval(&mut self, now_us: u64) -> Vec<Split>;
}

/// A recorder's settings and where recorded samples go besides the metrics.
pub struct Recorder {
    /// Group names, by group index.
    pub(crate) names: Vec<String>,
    /// Groups whose service time is logged apart (open loop), by group index.
    pub(crate) open_loop: Vec<bool>,
    /// Groups whose samples stand beside the TOTAL (a watch group's events), by group index:
    /// left out of latency.hlog's TOTAL and of the error-rate stop.
    pub(crate) beside: Vec<bool>,
    /// Running virtual users per group, by group index.
    pub(crate) active: Arc<Vec<AtomicU32>>,
    /// Length of the interval histograms.
    pub(crate) tick: Duration,
    /// Where each interval, live window and the end go (`output`), in order.
    pub(crate) outputs: Vec<Box<dyn super::output::Output>>,
    pub(crate) watch: Option<Box<dyn Watch>>,
    pub(crate) log: Option<mpsc::Sender<Vec<Logged>>>,
    /// The gaps between successes, per group and for the run (warm-up included).
    pub(crate) availability: super::availability::Availability,
    /// The samples' clock: intervals and the watcher's window are read on it.
    pub(crate) clock: super::Clock,
    /// Histograms done with, used again for the next intervals.
    pub(crate) spares: super::interval::Spares,
    /// Changes made while the run goes (`--live-control`).
    pub(crate) steering: Option<Box<dyn Steering>>,
    /// What else happened in the run (stages, faults, the deployment's changes), shown to the
    /// outputs as it comes.
    pub(crate) notices: Option<mpsc::UnboundedReceiver<super::output::Notice>>,
}

/// What the recorder measured, by group index, and what went wrong inside it.
pub struct Recorded {
    /// After the warm-up: what the summary counts.
    pub(crate) groups: Vec<GroupMetrics>,
    /// Within the warm-up: logged, excluded from the summary.
    pub(crate) warmup: Vec<GroupMetrics>,
    pub(crate) failures: Vec<String>,
    pub(crate) availability: super::availability::Availability,
    /// The rows of changes made while the run went (`--live-control`), in order.
    pub(crate) segments: Vec<Segment>,
    /// The changes made while the run went, in order.
    pub(crate) changes: Vec<Split>,
}

impl Recorded {
    /// What is left when the recorder itself failed (`why`): no measurement of any of the
    /// `groups`, and the failure said.
    pub(crate) fn lost(groups: usize, why: String) -> Recorded {
        Recorded {
            groups: vec![GroupMetrics::default(); groups],
            warmup: vec![GroupMetrics::default(); groups],
            failures: vec![format!(
                "the recorder failed and its measurements are lost: {why}"
            )],
            availability: Default::default(),
            segments: Vec::new(),
            changes: Vec::new(),
        }
    }
}

/// A group's interval as the interval log's series: its latency, its service time when open
/// loop (else that histogram goes back to the spares), and out of the warm-up each kind's of a
/// group that mixes operations (`group:get`).
fn series(
    out: &mut Vec<IntervalHist>,
    spares: &super::interval::Spares,
    name: &str,
    open: bool,
    warmup: bool,
    m: GroupMetrics,
) {
    let mut entry = |tag: Tag, timing: Timing| {
        out.push(IntervalHist {
            tag,
            hist: timing.hist,
        })
    };
    let GroupMetrics {
        latency,
        service,
        kinds,
        ..
    } = m;
    if !warmup {
        for (kind, k) in kinds {
            let label = Label::kind(name, kind.clone());
            entry(Tag::new(label.clone(), Series::Latency, false), k.latency);
            if open {
                entry(Tag::new(label, Series::Service, false), k.service);
            } else {
                spares.give(k.service.hist);
            }
        }
    }
    entry(
        Tag::new(Label::group(name), Series::Latency, warmup),
        latency,
    );
    if open {
        entry(
            Tag::new(Label::group(name), Series::Service, warmup),
            service,
        );
    } else {
        spares.give(service.hist);
    }
}

/// Samples per batch handed to the sample log writer, and the longest a sample waits for one.
const LOG_BATCH: usize = 4096;
const LOG_FLUSH: Duration = Duration::from_millis(200);
/// How often the watcher is checked when no sample arrives.
const WATCH_TICK: Duration = Duration::from_secs(1);

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The running state: the current interval, the live window and the totals.
struct State {
    interval: Vec<GroupMetrics>,
    interval_warm: Vec<GroupMetrics>,
    interval_start_us: u64,
    interval_started: Instant,
    /// What ran since the last live window, while an output takes windows.
    window: Vec<GroupMetrics>,
    /// A live window every this many intervals, while an output takes them.
    window_every: Option<u32>,
    total: Vec<GroupMetrics>,
    total_warm: Vec<GroupMetrics>,
    segments: Vec<Segment>,
    /// By group: it has segments (a sample of it is counted in one too).
    split: Vec<bool>,
    /// The changes made, in order.
    changes: Vec<Split>,
}

impl State {
    /// A counted sample of a group that was changed: into the row of its time too.
    fn record_in_segment(&mut self, s: &Sample, spares: &super::interval::Spares) {
        if !self
            .split
            .get(usize::from(s.group))
            .copied()
            .unwrap_or(false)
        {
            return;
        }
        let g = usize::from(s.group);
        if let Some(seg) = self
            .segments
            .iter_mut()
            .rev()
            .find(|x| x.group == g && x.since_us <= s.intended_us && s.intended_us < x.until_us)
        {
            seg.metrics.record_with(s, spares);
        }
    }

    /// Starts the rows of a change, at the end of an interval (what came before is in the
    /// totals then).
    fn split(&mut self, split: &Split) {
        let g = split.group;
        if g >= self.total.len() {
            return;
        }
        if !self.split[g] {
            self.split[g] = true;
            self.segments.push(Segment {
                group: g,
                label: split.before.clone(),
                since_us: 0,
                until_us: split.at_us,
                metrics: self.total[g].clone(),
            });
        } else if let Some(last) = self.segments.iter_mut().rev().find(|x| x.group == g) {
            last.until_us = split.at_us;
        }
        self.segments.push(Segment {
            group: g,
            label: split.after.clone(),
            since_us: split.at_us,
            until_us: u64::MAX,
            metrics: GroupMetrics::default(),
        });
    }
}

fn fresh(n: usize) -> Vec<GroupMetrics> {
    vec![GroupMetrics::default(); n]
}

impl Recorder {
    /// Records until every sender is gone.
    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<Sample>) -> Recorded {
        let n = self.names.len();
        let mut failures = Vec::new();
        let started = Instant::now();
        let mut st = State {
            interval: fresh(n),
            interval_warm: fresh(n),
            interval_start_us: self.clock.now_us(),
            interval_started: started,
            window: fresh(n),
            window_every: self
                .outputs
                .iter()
                .filter_map(|o| o.window_every())
                .min()
                .map(|e| e.max(1)),
            total: fresh(n),
            total_warm: fresh(n),
            segments: Vec::new(),
            split: vec![false; n],
            changes: Vec::new(),
        };
        let mut ticker = tokio::time::interval_at(started + self.tick, self.tick);
        let mut ticks = 0u32;
        let mut watch_tick = tokio::time::interval(WATCH_TICK);
        let mut flush_tick = tokio::time::interval(LOG_FLUSH);
        let mut batch = Vec::with_capacity(256);
        // Samples for the log go in large batches: one wake-up of the writer thread per batch.
        let mut pending: Vec<Logged> = Vec::with_capacity(LOG_BATCH);
        loop {
            tokio::select! {
                got = rx.recv_many(&mut batch, 256) => {
                    if got == 0 {
                        break;
                    }
                    self.record(&mut st, &mut batch, &mut failures);
                    self.log_batch(&mut batch, &mut pending).await;
                }
                _ = flush_tick.tick(), if self.log.is_some() && !pending.is_empty() => {
                    if let Some(log) = &self.log {
                        send(log, &mut pending, LOG_BATCH).await;
                    }
                }
                _ = watch_tick.tick(), if self.watch.is_some() => {
                    if self.watch.as_mut().is_some_and(|w| w.check(self.clock.now_us())) {
                        self.watch = None;
                    }
                }
                _ = ticker.tick() => {
                    ticks += 1;
                    // What was told before the interval ended is shown before it.
                    self.drain_notices(&mut failures).await;
                    self.interval_end(&mut st, started.elapsed(), ticks, &mut failures).await;
                }
                notice = recv_notice(&mut self.notices) => match notice {
                    Some(notice) => self.emit(&RunEvent::Notice(&notice), &mut failures).await,
                    None => self.notices = None,
                },
            }
        }
        // What was told before the last sample came (the last stage's end).
        self.drain_notices(&mut failures).await;
        if let Some(log) = &self.log {
            send(log, &mut pending, LOG_BATCH).await;
        }
        let closed = Arc::new(self.close_interval(&mut st));
        let end = RunEvent::End(Closed {
            batch: &closed,
            totals: &st.total,
            segments: &st.segments,
            elapsed: started.elapsed(),
        });
        self.emit(&end, &mut failures).await;
        IntervalBatch::give_back(closed);
        self.availability.finish();
        Recorded {
            groups: st.total,
            warmup: st.total_warm,
            failures,
            availability: self.availability,
            segments: st.segments,
            changes: st.changes,
        }
    }

    /// One batch of samples into the interval, the segments, the availability and the error
    /// guard; a panic while recording is a failure said, not the run's end.
    fn record(&mut self, st: &mut State, batch: &mut [Sample], failures: &mut Vec<String>) {
        let recorded = catch_unwind(AssertUnwindSafe(|| {
            for s in batch.iter_mut() {
                // A failure's message becomes text here, once, off the user's path.
                if let Some(e) = s.error.as_mut() {
                    e.message.text();
                }
                let s = &*s;
                self.availability.observe(s);
                let into = if s.warmup {
                    &mut st.interval_warm
                } else {
                    &mut st.interval
                };
                if let Some(m) = into.get_mut(usize::from(s.group)) {
                    m.record_with(s, &self.spares);
                }
                if !s.warmup {
                    st.record_in_segment(s, &self.spares);
                }
                // The warm-up is kept out of the exit code, and so of the error-rate stop.
                let beside = self
                    .beside
                    .get(usize::from(s.group))
                    .copied()
                    .unwrap_or(false);
                if let (Some(w), false) = (self.watch.as_mut(), s.warmup || beside) {
                    w.observe(s);
                }
            }
            self.watch
                .as_mut()
                .is_some_and(|w| w.check(self.clock.now_us()))
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
    }

    /// The batch to the sample log (in large batches: one wake-up of its writer per batch),
    /// each sample with the threads active when it was recorded; without a log, dropped.
    async fn log_batch(&mut self, batch: &mut Vec<Sample>, pending: &mut Vec<Logged>) {
        let Some(log) = &self.log else {
            batch.clear();
            return;
        };
        let threads: Vec<u32> = self
            .active
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        let all_threads = threads.iter().sum();
        pending.extend(batch.drain(..).map(|sample| Logged {
            group_threads: threads.get(usize::from(sample.group)).copied().unwrap_or(0),
            all_threads,
            sample,
        }));
        if pending.len() >= LOG_BATCH {
            send(log, pending, LOG_BATCH).await;
        }
    }

    /// An interval's end (the `ticks`th): closed, its changes split off, and shown to every
    /// output, with the live window when one is due.
    async fn interval_end(
        &mut self,
        st: &mut State,
        elapsed: Duration,
        ticks: u32,
        failures: &mut Vec<String>,
    ) {
        let closed = Arc::new(self.close_interval(st));
        if let Some(steering) = self.steering.as_mut() {
            // The new interval's start: the change counts from there; told before the
            // interval that closed with it.
            for split in steering.at_interval(st.interval_start_us) {
                st.split(&split);
                st.changes.push(split.clone());
                let notice = super::output::Notice::Changed(split);
                self.emit(&RunEvent::Notice(&notice), failures).await;
            }
        }
        let interval = RunEvent::Interval(Closed {
            batch: &closed,
            totals: &st.total,
            segments: &st.segments,
            elapsed,
        });
        self.emit(&interval, failures).await;
        IntervalBatch::give_back(closed);
        // No window is kept once no output takes one (the live lines panicked).
        if !self.outputs.iter().any(|o| o.window_every().is_some()) {
            st.window_every = None;
        }
        if let Some(every) = st.window_every.filter(|e| ticks.is_multiple_of(*e)) {
            let metrics = std::mem::replace(&mut st.window, fresh(self.names.len()));
            let active: Vec<u32> = self
                .active
                .iter()
                .map(|a| a.load(Ordering::Relaxed))
                .collect();
            let window = RunEvent::Window(Window {
                metrics: &metrics,
                active: &active,
                elapsed,
                period: self.tick * every,
            });
            self.emit(&window, failures).await;
        }
    }

    /// Shows every notice already told, in order.
    async fn drain_notices(&mut self, failures: &mut Vec<String>) {
        while let Some(notice) = self.notices.as_mut().and_then(|n| n.try_recv().ok()) {
            self.emit(&RunEvent::Notice(&notice), failures).await;
        }
    }

    /// Shows `event` to every output in turn (a live window only to those that take windows),
    /// then waits for those that ask it to; an output that is done, or panics (a failure of the
    /// run), is shown nothing more.
    async fn emit(&mut self, event: &RunEvent<'_>, failures: &mut Vec<String>) {
        let window = matches!(event, RunEvent::Window(_));
        self.outputs.retain_mut(|o| {
            if window && o.window_every().is_none() {
                return true;
            }
            match catch_unwind(AssertUnwindSafe(|| o.event(event))) {
                Ok(Flow::More) => true,
                Ok(Flow::Done) => false,
                Err(p) => {
                    failures.push(format!(
                        "{} panicked and was switched off: {}",
                        o.name(),
                        panic_message(p.as_ref())
                    ));
                    false
                }
            }
        });
        for o in &mut self.outputs {
            if let Some(wait) = o.wait() {
                wait.await;
            }
        }
    }

    /// Ends the current interval: its metrics go into the totals and the live window, and its
    /// histograms are returned for the interval log.
    fn close_interval(&self, st: &mut State) -> IntervalBatch {
        let start_epoch_us = st.interval_start_us;
        let duration = st.interval_started.elapsed();
        st.interval_start_us = self.clock.now_us();
        st.interval_started = Instant::now();
        let mut out = Vec::new();
        let mut activity = Vec::new();
        // Only the groups that ran in this interval are taken, and given histograms the
        // interval log is done with.
        let spares = &self.spares;
        let used = |m: &mut GroupMetrics| {
            (m.samples > 0).then(|| {
                let empty = GroupMetrics::with_timings(spares.timing(), spares.timing());
                std::mem::replace(m, empty)
            })
        };
        let mut all: Option<(Timing, Timing)> = None;
        for g in 0..self.names.len() {
            let name = &self.names[g];
            let open = self.open_loop[g];
            let users = self.active[g].load(Ordering::Relaxed);
            let errors = st.interval[g].errors + st.interval_warm[g].errors;
            let ran = st.interval[g].samples + st.interval_warm[g].samples > 0;
            if ran || users > 0 {
                activity.push(Activity {
                    tag: Tag::latency(Label::group(name)),
                    users,
                    errors,
                });
            }
            if let Some(m) = used(&mut st.interval[g]) {
                st.total[g].merge(&m);
                if st.window_every.is_some() {
                    st.window[g].merge(&m);
                }
                // A watch group's events stand beside the TOTAL.
                if !self.beside.get(g).copied().unwrap_or(false) {
                    let (lat, svc) = all.get_or_insert_with(|| (spares.timing(), spares.timing()));
                    lat.merge(&m.latency);
                    // svc:TOTAL is the service time of the open-loop groups.
                    if open {
                        svc.merge(&m.service);
                    }
                }
                series(&mut out, spares, name, open, false, m);
            }
            if let Some(w) = used(&mut st.interval_warm[g]) {
                st.total_warm[g].merge(&w);
                if st.window_every.is_some() {
                    // The live view shows everything that ran, the warm-up too.
                    st.window[g].merge(&w);
                }
                series(&mut out, spares, name, open, true, w);
            }
        }
        let mut entry = |tag: Tag, timing: Timing| {
            out.push(IntervalHist {
                tag,
                hist: timing.hist,
            })
        };
        if let Some((lat, svc)) = all {
            entry(Tag::latency(Label::Total), lat);
            if self.open_loop.iter().any(|o| *o) {
                entry(Tag::new(Label::Total, Series::Service, false), svc);
            } else {
                spares.give(svc.hist);
            }
        }
        IntervalBatch {
            start_epoch_us,
            duration,
            hists: out,
            activity,
            spares: spares.clone(),
        }
    }
}

/// The next notice; never, without a channel of them or once it is closed.
async fn recv_notice(
    notices: &mut Option<mpsc::UnboundedReceiver<super::output::Notice>>,
) -> Option<super::output::Notice> {
    match notices {
        Some(n) => n.recv().await,
        None => std::future::pending().await,
    }
}

async fn send<T>(to: &mpsc::Sender<Vec<T>>, pending: &mut Vec<T>, capacity: usize) {
    if pending.is_empty() {
        return;
    }
    let full = std::mem::replace(pending, Vec::with_capacity(capacity));
    // The writer only goes away after an I/O error, which its `finish` reports.
    let _ = to.send(full).await;
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cost;
