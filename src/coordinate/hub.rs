//! The coordinator's side: who joined, the barriers (every part joined, every part set up), the
//! parts lost, and the parts' intervals added as they come.
//!
//! The parts' intervals are put on the coordinator's clock and on its interval boundaries as
//! `merge` puts them: a part's first interval goes to the interval of the same length (counted
//! from the Unix epoch) that holds its middle, its later ones follow by their ordinal. A merged
//! interval is shown once every part still running has sent it, or 2 s after its end.
//!
//! Owns: the run's state as the coordinator knows it, and its HTTP routes. Never: prints (it
//! hands its `News` to whoever ticks it), or reads a run directory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hdrhistogram::Histogram;

use crate::merge::counts::{Counts, Decoder};
use crate::plan::series::StepSpec;

use super::*;

/// From the moment every part is ready to the start: time for the answer to reach them all.
const START_LEAD: Duration = Duration::from_secs(2);

/// A merged interval is shown at the latest this long after its end.
const SHOW_GRACE_US: u64 = 2_000_000;

/// Ticks this far apart are the coordinator's own stall: silence in it is not counted.
const STALL: Duration = Duration::from_millis(500);

/// Why a part of a series that left before its end failed.
const LEFT: &str = "it left the series before its end (interrupted on its machine)";

/// Emptied sums kept for use again.
const MAX_SPARE: usize = 256;

/// Largest message a part may send (its run directory's files at the end).
const MAX_BODY: usize = 1 << 30;

/// The coordinator's view of the run.
pub(crate) struct Hub {
    token: String,
    plan: PlanDoc,
    length_us: u64,
    /// Rows shown in the merged lines: `TOTAL` and the groups' own.
    shown_rows: Vec<String>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Joining,
    /// The run (step 0) or a series' step (from 1) is being set up.
    Setup {
        step: u32,
    },
    Started {
        step: u32,
        at_us: u64,
    },
    /// A series between its steps (the coordinator reads the last, picks the next).
    Between,
    /// A series is over.
    Finished,
    Stopped {
        why: String,
    },
}

/// A part that joined.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) host: String,
    pub(crate) clock: ClockReading,
    last_seen: Instant,
    /// The step it is set up for.
    ready: Option<u32>,
    /// It left a series before its end.
    left: bool,
    pub(crate) end: Option<End>,
    /// Its first interval's start (its clock) and merged interval; the last merged interval
    /// it sent.
    first: Option<(u64, u64)>,
    last_bucket: Option<u64>,
}

/// How a part ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    /// Its run ended and it sent its files.
    Done(Vec<PartFile>),
    /// It could not run.
    Failed(String),
    /// It fell silent (`LOST_AFTER`).
    Lost,
}

#[derive(Default)]
struct Bucket {
    /// Each series' counts, decoded into them in place (no histogram built per payload: 64
    /// parts x 50 rows a second made that a fifth of a core).
    hists: BTreeMap<String, Counts>,
    errors: BTreeMap<String, u64>,
    /// Users running at the interval's end, by group tag, every part's added.
    users: BTreeMap<String, u32>,
    /// Each part's tallies as of this interval (`PlanDoc::live`).
    tallies: BTreeMap<u32, Vec<(Label, Tally)>>,
    from: BTreeSet<u32>,
}

struct Inner {
    phase: Phase,
    /// A series' step under way.
    spec: Option<StepSpec>,
    /// Steps ordered so far.
    ordered: u32,
    members: Vec<Option<Member>>,
    buckets: BTreeMap<u64, Bucket>,
    /// The next merged interval to show.
    next_shown: Option<u64>,
    news: Vec<News>,
    decoder: Decoder,
    /// Sums of shown intervals, emptied, for the next ones (each is 184 KiB of counters).
    spare: Vec<Counts>,
    /// The histogram each shown row is read from, emptied for each.
    row: Histogram<u64>,
    /// Whether the shown intervals carry their series (`keep_series`).
    keep_series: bool,
    /// Each part's tallies as of the last shown interval it was in.
    tallies: BTreeMap<u32, Vec<(Label, Tally)>>,
    /// Intervals that came after theirs was shown (`keep_series`): their histograms go with
    /// the next shown one, for the run's totals (their counts are in the parts' tallies).
    late: Bucket,
    /// The changes made on the coordinator's page, for the parts to make.
    changes: Vec<Shared>,
    /// A series' step stopped on every part (its number), and why.
    step_stop: Option<(u32, String)>,
    last_tick: Option<Instant>,
}

/// What happened, for the coordinator to say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum News {
    Joined {
        index: u32,
        host: String,
        clock: ClockReading,
    },
    AllJoined,
    Started {
        at_us: u64,
    },
    Lost {
        index: u32,
        host: String,
    },
    Failed {
        index: u32,
        error: String,
    },
    Done {
        index: u32,
    },
    /// A merged interval: its start (coordinator's clock), the parts in it, each shown row,
    /// and every series of it (the whole run's thresholds are judged on them).
    Interval {
        start_us: u64,
        parts: usize,
        rows: Vec<MergedRow>,
        /// When asked for (`keep_series`).
        series: Option<Arc<MergedSeries>>,
    },
}

/// Every series of a merged interval: its histogram by tag, and each group tag's failed
/// operations (and `TOTAL`'s).
#[derive(Debug, PartialEq)]
pub(crate) struct MergedSeries {
    pub(crate) hists: BTreeMap<String, Histogram<u64>>,
    pub(crate) errors: BTreeMap<String, u64>,
    /// Users running at its end, by group tag.
    pub(crate) users: BTreeMap<String, u32>,
    /// Every row's counters so far, the parts' added (`PlanDoc::live`), in the parts' order.
    pub(crate) tallies: Vec<(Label, Tally)>,
    /// The histograms of intervals that came too late to be shown, by tag: the run's so far
    /// hold them.
    pub(crate) late: BTreeMap<String, Histogram<u64>>,
}

/// One row of a merged interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MergedRow {
    pub(crate) tag: String,
    pub(crate) count: u64,
    pub(crate) errors: u64,
    /// Microseconds.
    pub(crate) p50: u64,
    pub(crate) p99: u64,
    pub(crate) max: u64,
}

impl Hub {
    pub(crate) fn new(token: String, plan: PlanDoc, length: Duration, groups: &[String]) -> Hub {
        let parts = plan.parts as usize;
        let mut shown_rows = vec!["TOTAL".to_string()];
        shown_rows.extend(groups.iter().cloned());
        Hub {
            token,
            plan,
            length_us: u64::try_from(length.as_micros()).unwrap_or(u64::MAX).max(1),
            shown_rows,
            inner: Mutex::new(Inner {
                phase: Phase::Joining,
                spec: None,
                ordered: 0,
                members: (0..parts).map(|_| None).collect(),
                buckets: BTreeMap::new(),
                next_shown: None,
                news: Vec::new(),
                decoder: Decoder::default(),
                spare: Vec::new(),
                row: crate::metrics::new_histogram(),
                keep_series: false,
                tallies: BTreeMap::new(),
                late: Bucket::default(),
                changes: Vec::new(),
                step_stop: None,
                last_tick: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Each shown interval to carry its series (the whole run's abort thresholds read them).
    pub(crate) fn keep_series(&self) {
        self.lock().keep_series = true;
    }

    pub(crate) fn parts(&self) -> u32 {
        self.plan.parts
    }

    /// A change made on the coordinator's page: told to every part in each answer from now.
    pub(crate) fn share(&self, mut change: Shared) {
        let mut inner = self.lock();
        change.number = u32::try_from(inner.changes.len() + 1).unwrap_or(u32::MAX);
        inner.changes.push(change);
    }

    /// Parts that joined so far.
    pub(crate) fn joined(&self) -> u32 {
        let n = self.lock().members.iter().flatten().count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The indexes no part has joined as.
    pub(crate) fn missing(&self) -> Vec<u32> {
        let inner = self.lock();
        (0..self.plan.parts)
            .filter(|&i| inner.members[i as usize].is_none())
            .collect()
    }

    /// Every part is told to stop (or not to begin); the first reason stays.
    pub(crate) fn stop(&self, why: String) {
        let mut inner = self.lock();
        if !matches!(inner.phase, Phase::Stopped { .. }) {
            inner.phase = Phase::Stopped { why };
        }
    }

    /// The series' step under way stops on every part (the series goes on); the first reason
    /// stays.
    pub(crate) fn stop_step(&self, why: String) {
        let mut inner = self.lock();
        if let Phase::Started { step, .. } = inner.phase {
            if inner.step_stop.as_ref().is_none_or(|(s, _)| *s != step) {
                inner.step_stop = Some((step, why));
            }
        }
    }

    /// The length of an interval, microseconds.
    pub(crate) fn interval_us(&self) -> u64 {
        self.length_us
    }

    /// When the stages began, once they did.
    pub(crate) fn started_at(&self) -> Option<u64> {
        match self.lock().phase {
            Phase::Started { at_us, .. } => Some(at_us),
            _ => None,
        }
    }

    /// Every part joined (and a series waits for its first step).
    pub(crate) fn all_joined(&self) -> bool {
        self.lock().phase != Phase::Joining
    }

    /// A series' next step: every part that is still in it sets it up, then they start it
    /// together. Nothing of the step before is kept. Each step ordered gets a number of its
    /// own, rising (a capacity step run again is a new one), which the parts match it by.
    pub(crate) fn begin_step(&self, mut spec: StepSpec) {
        let mut inner = self.lock();
        if matches!(inner.phase, Phase::Stopped { .. }) {
            return;
        }
        inner.ordered += 1;
        spec.number = inner.ordered;
        // Nothing of the step before: its tallies and late intervals are not this step's.
        inner.tallies.clear();
        inner.late = Bucket::default();
        let mut left = Vec::new();
        for (i, m) in inner.members.iter_mut().enumerate() {
            let Some(m) = m.as_mut() else { continue };
            m.ready = None;
            m.first = None;
            m.last_bucket = None;
            if matches!(m.end, Some(End::Done(_))) {
                m.end = if m.left {
                    left.push(News::Failed {
                        index: u32::try_from(i).unwrap_or(u32::MAX),
                        error: LEFT.into(),
                    });
                    Some(End::Failed(LEFT.into()))
                } else {
                    None
                };
            }
        }
        inner.news.extend(left);
        inner.buckets.clear();
        inner.next_shown = None;
        inner.phase = Phase::Setup { step: spec.number };
        inner.spec = Some(spec);
    }

    /// A series is over: the parts leave.
    pub(crate) fn finish_series(&self) {
        let mut inner = self.lock();
        if !matches!(inner.phase, Phase::Stopped { .. }) {
            inner.phase = Phase::Finished;
        }
    }

    /// Every part that joined has ended (done, failed or lost), and either all joined or the
    /// run was stopped (no more will join).
    pub(crate) fn finished(&self) -> bool {
        let inner = self.lock();
        let stopped = matches!(inner.phase, Phase::Stopped { .. });
        inner
            .members
            .iter()
            .all(|m| m.as_ref().map_or(stopped, |m| m.end.is_some()))
    }

    /// The parts that joined and have not ended.
    pub(crate) fn unfinished(&self) -> Vec<u32> {
        let inner = self.lock();
        (0..self.plan.parts)
            .filter(|&i| {
                inner.members[i as usize]
                    .as_ref()
                    .is_some_and(|m| m.end.is_none())
            })
            .collect()
    }

    /// Every joined part that has not ended: lost, as after a stop nothing more will come.
    pub(crate) fn give_up(&self) {
        let mut inner = self.lock();
        for m in inner.members.iter_mut().flatten() {
            if m.end.is_none() {
                m.end = Some(End::Lost);
            }
        }
    }

    /// The parts as they ended, by index (None: never joined).
    pub(crate) fn members(&self) -> Vec<Option<(String, ClockReading, Option<End>)>> {
        self.lock()
            .members
            .iter()
            .map(|m| m.as_ref().map(|m| (m.host.clone(), m.clock, m.end.clone())))
            .collect()
    }

    /// Moves the run on (barriers, losses, merged intervals) and hands over what happened.
    pub(crate) fn tick(&self) -> Vec<News> {
        let now = Instant::now();
        let now_us = now_us();
        let mut inner = self.lock();
        let inner = &mut *inner;
        // A coordinator that was not running (its machine starved it) heard nothing in that
        // time: silence is counted only while it listened.
        let stalled = inner
            .last_tick
            .map_or(Duration::ZERO, |t| now.duration_since(t))
            .saturating_sub(STALL);
        inner.last_tick = Some(now);
        // Losses: any part that joined, has not ended and fell silent.
        for (i, m) in inner.members.iter_mut().enumerate() {
            if let Some(m) = m.as_mut() {
                m.last_seen += stalled;
            }
            if let Some(m) = m.as_mut().filter(|m| m.end.is_none()) {
                if now.duration_since(m.last_seen) >= LOST_AFTER {
                    m.end = Some(End::Lost);
                    inner.news.push(News::Lost {
                        index: u32::try_from(i).unwrap_or(u32::MAX),
                        host: m.host.clone(),
                    });
                }
            }
        }
        let alive = || inner.members.iter().flatten().filter(|m| m.end.is_none());
        match inner.phase {
            Phase::Joining if inner.members.iter().all(Option::is_some) => {
                inner.phase = if self.plan.series.is_some() {
                    Phase::Between
                } else {
                    Phase::Setup { step: 0 }
                };
                inner.news.push(News::AllJoined);
            }
            Phase::Setup { step }
                if alive().count() > 0 && alive().all(|m| m.ready == Some(step)) =>
            {
                let at_us = now_us + u64::try_from(START_LEAD.as_micros()).unwrap_or(0);
                inner.phase = Phase::Started { step, at_us };
                inner.news.push(News::Started { at_us });
            }
            _ => {}
        }
        self.show_intervals(inner, now_us);
        std::mem::take(&mut inner.news)
    }

    /// The merged intervals every running part has sent (or whose grace is over), in order.
    fn show_intervals(&self, inner: &mut Inner, now_us: u64) {
        loop {
            let Some(&first) = inner.buckets.keys().next() else {
                return;
            };
            let b = inner.next_shown.map_or(first, |n| n.max(first));
            let sent_by_all = inner
                .members
                .iter()
                .flatten()
                .all(|m| m.end.is_some() || m.last_bucket.is_some_and(|l| l >= b));
            let late = now_us > (b + 1) * self.length_us + SHOW_GRACE_US;
            if !(sent_by_all || late) {
                return;
            }
            inner.next_shown = Some(b + 1);
            let Some(bucket) = inner.buckets.remove(&b) else {
                continue;
            };
            let mut rows = Vec::new();
            for tag in &self.shown_rows {
                let Some(c) = bucket.hists.get(tag) else {
                    continue;
                };
                let h = &mut inner.row;
                h.reset();
                c.record_into(h);
                rows.push(MergedRow {
                    tag: tag.clone(),
                    count: h.len(),
                    errors: bucket.errors.get(tag).copied().unwrap_or(0),
                    p50: h.value_at_quantile(0.5),
                    p99: h.value_at_quantile(0.99),
                    max: h.max(),
                });
            }
            inner.tallies.extend(bucket.tallies);
            let late = std::mem::take(&mut inner.late);
            let series = inner.keep_series.then(|| {
                Arc::new(MergedSeries {
                    late: late
                        .hists
                        .iter()
                        .map(|(tag, c)| (tag.clone(), c.to_histogram()))
                        .collect(),
                    hists: bucket
                        .hists
                        .iter()
                        .map(|(tag, c)| (tag.clone(), c.to_histogram()))
                        .collect(),
                    errors: bucket.errors.clone(),
                    users: bucket.users.clone(),
                    tallies: added(inner.tallies.values()),
                })
            });
            for (_, mut c) in bucket.hists {
                if inner.spare.len() < MAX_SPARE {
                    c.clear();
                    inner.spare.push(c);
                }
            }
            inner.news.push(News::Interval {
                start_us: b * self.length_us,
                parts: bucket.from.len(),
                rows,
                series,
            });
        }
    }

    fn go(inner: &Inner, index: Option<u32>) -> Go {
        if let Some(m) = index
            .and_then(|i| inner.members.get(i as usize))
            .and_then(Option::as_ref)
        {
            if matches!(m.end, Some(End::Lost)) {
                return Go::Stop {
                    why: format!(
                        "the coordinator lost this part (nothing from it for {} s)",
                        LOST_AFTER.as_secs()
                    ),
                };
            }
        }
        match &inner.phase {
            Phase::Joining => Go::Wait {
                joined: u32::try_from(inner.members.iter().flatten().count()).unwrap_or(0),
                parts: u32::try_from(inner.members.len()).unwrap_or(0),
            },
            Phase::Setup { .. } => match &inner.spec {
                Some(spec) => Go::Step { spec: spec.clone() },
                None => Go::Setup,
            },
            Phase::Started { step, .. }
                if inner.step_stop.as_ref().is_some_and(|(s, _)| s == step) =>
            {
                Go::StopStep {
                    step: *step,
                    why: inner
                        .step_stop
                        .as_ref()
                        .map(|s| s.1.clone())
                        .unwrap_or_default(),
                }
            }
            Phase::Started { step, at_us } => Go::Start {
                step: *step,
                at_us: *at_us,
            },
            Phase::Between => Go::Wait {
                joined: u32::try_from(inner.members.len()).unwrap_or(0),
                parts: u32::try_from(inner.members.len()).unwrap_or(0),
            },
            Phase::Finished => Go::Finished,
            Phase::Stopped { why } => Go::Stop { why: why.clone() },
        }
    }

    fn join(&self, req: JoinRequest) -> Result<JoinReply, (StatusCode, String)> {
        let conflict = |msg: String| Err((StatusCode::CONFLICT, msg));
        if req.version != VERSION {
            return conflict(format!(
                "this part runs mongo-stress {}, the coordinator {VERSION}\n  fix: run the same version of mongo-stress on every machine of the run",
                req.version
            ));
        }
        let mut inner = self.lock();
        if inner.phase != Phase::Joining {
            return conflict(format!(
                "the run's {} parts have all joined; it takes no more\n  fix: start the coordinator again with --parts for every part you run",
                self.plan.parts
            ));
        }
        let free = inner.members.iter().position(Option::is_none);
        let index = match req.index {
            Some(i) if i >= self.plan.parts => {
                return conflict(format!(
                    "there is no part {i} in a run of {} parts (they are 0 to {})\n  fix: give --index (or JOB_COMPLETION_INDEX) below {}",
                    self.plan.parts,
                    self.plan.parts - 1,
                    self.plan.parts
                ))
            }
            Some(i) => match &inner.members[i as usize] {
                Some(m) => {
                    return conflict(format!(
                        "part {i} has already joined (from {})\n  fix: give each part its own --index (or JOB_COMPLETION_INDEX), or none to take the first free one",
                        m.host
                    ))
                }
                None => i,
            },
            None => match free {
                Some(i) => u32::try_from(i).unwrap_or(u32::MAX),
                None => return conflict("every part has joined".into()),
            },
        };
        inner.members[index as usize] = Some(Member {
            host: req.host.clone(),
            clock: req.clock,
            last_seen: Instant::now(),
            ready: None,
            left: false,
            end: None,
            first: None,
            last_bucket: None,
        });
        inner.news.push(News::Joined {
            index,
            host: req.host,
            clock: req.clock,
        });
        Ok(JoinReply {
            index,
            parts: self.plan.parts,
        })
    }

    fn report(&self, r: Report) -> Result<Answer, (StatusCode, String)> {
        let mut inner = self.lock();
        let length = self.length_us;
        // The step under way: a part's results of another (one it ran before) are stale.
        let current = match inner.phase {
            Phase::Setup { step } | Phase::Started { step, .. } => Some(step),
            _ => None,
        };
        let stopped = matches!(inner.phase, Phase::Stopped { .. });
        let over = matches!(inner.phase, Phase::Finished) || stopped;
        let Some(m) = inner
            .members
            .get_mut(r.index as usize)
            .and_then(Option::as_mut)
        else {
            return Err((
                StatusCode::CONFLICT,
                format!("part {} has not joined this run", r.index),
            ));
        };
        m.last_seen = Instant::now();
        if let Some(c) = r.clock {
            m.clock = c;
        }
        let lost = matches!(m.end, Some(End::Lost));
        let mut news = None;
        let mut interval = None;
        match r.what {
            What::Beat => {}
            What::Ready { step } => m.ready = Some(step),
            What::Interval(i) if !lost => {
                let offset = m.clock.offset_us;
                let (first_start, first_bucket) = *m.first.get_or_insert_with(|| {
                    let start = i64::try_from(i.start_us).unwrap_or(i64::MAX) + offset;
                    let middle = u64::try_from(start).unwrap_or(0) + i.duration_us / 2;
                    (i.start_us, middle / length)
                });
                // Later intervals by their ordinal, so jitter never puts two in one.
                let since = i.start_us.saturating_sub(first_start);
                let ordinal = (since + length / 2) / length;
                let b = first_bucket + ordinal;
                m.last_bucket = Some(m.last_bucket.map_or(b, |l| l.max(b)));
                interval = Some((b, i));
            }
            What::Interval(_) => {}
            // After a stop, a part that sent the step's files and then left is done.
            What::Failed { .. } if stopped && matches!(m.end, Some(End::Done(_))) => {}
            What::Failed { error } => {
                m.end = Some(End::Failed(error.clone()));
                news = Some(News::Failed {
                    index: r.index,
                    error,
                });
            }
            What::Done { step, files } => {
                // After a stop, the step that was under way is still the one to finish.
                if !lost && (current == Some(step) || stopped) {
                    m.end = Some(End::Done(files));
                    news = Some(News::Done { index: r.index });
                }
            }
            // A part of a series that leaves before its end (its own Ctrl-C): failed, once
            // its step's files (if it sent them) are in.
            What::Bye if !over => {
                m.left = true;
                if m.end.is_none() {
                    m.end = Some(End::Failed(LEFT.into()));
                    news = Some(News::Failed {
                        index: r.index,
                        error: LEFT.into(),
                    });
                }
            }
            What::Bye => {}
        }
        if let Some((b, i)) = interval {
            let Inner {
                buckets,
                decoder,
                spare,
                late,
                next_shown,
                keep_series,
                ..
            } = &mut *inner;
            if next_shown.is_none_or(|n| b >= n) {
                add(buckets.entry(b).or_default(), (decoder, spare), r.index, &i)
                    .map_err(|e| (StatusCode::BAD_REQUEST, e))?;
            } else if *keep_series {
                // Too late for its interval: its histograms still count in the run's.
                let hists = IntervalReport {
                    activity: Vec::new(),
                    tallies: Vec::new(),
                    ..i
                };
                add(late, (decoder, spare), r.index, &hists)
                    .map_err(|e| (StatusCode::BAD_REQUEST, e))?;
            }
        }
        inner.news.extend(news);
        Ok(Answer {
            go: Self::go(&inner, Some(r.index)),
            now_us: now_us(),
            changes: inner.changes.clone(),
        })
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| token_matches(t, &self.token))
    }
}

/// A part's interval added into its merged interval.
fn add(
    bucket: &mut Bucket,
    (decoder, spare): (&mut Decoder, &mut Vec<Counts>),
    part: u32,
    i: &IntervalReport,
) -> Result<(), String> {
    for (tag, payload) in &i.hists {
        let sum = bucket
            .hists
            .entry(tag.clone())
            .or_insert_with(|| spare.pop().unwrap_or_default());
        decoder
            .add(payload, sum)
            .map_err(|e| format!("the histogram of {tag} cannot be read: {e}"))?;
    }
    for (tag, users, errors) in &i.activity {
        *bucket.users.entry(tag.clone()).or_default() += users;
        *bucket.errors.entry(tag.clone()).or_default() += errors;
        // A group's errors count in the whole run's too.
        *bucket.errors.entry("TOTAL".into()).or_default() += errors;
    }
    if !i.tallies.is_empty() {
        bucket.tallies.insert(part, i.tallies.clone());
    }
    bucket.from.insert(part);
    Ok(())
}

/// The parts' tallies added row by row, the rows in the order the parts have them.
fn added<'t>(parts: impl Iterator<Item = &'t Vec<(Label, Tally)>>) -> Vec<(Label, Tally)> {
    let mut sum: Vec<(Label, Tally)> = Vec::new();
    let mut at: BTreeMap<&Label, usize> = BTreeMap::new();
    for (label, t) in parts.flatten() {
        match at.get(label) {
            Some(&i) => sum[i].1.add(t),
            None => {
                at.insert(label, sum.len());
                sum.push((label.clone(), t.clone()));
            }
        }
    }
    sum
}

fn refuse(status: StatusCode, error: String) -> Response {
    (status, Json(Refusal { error })).into_response()
}

fn unauthorized() -> Response {
    refuse(
        StatusCode::UNAUTHORIZED,
        "this part's token is not the run's\n  fix: give the token the coordinator printed (or was given) with --token or MONGO_STRESS_TOKEN".into(),
    )
}

/// The coordinator's routes: the plan, the clock, joins and reports; each behind the token.
pub(crate) fn router(hub: Arc<Hub>) -> Router {
    Router::new()
        .route("/v1/plan", get(plan))
        .route("/v1/clock", get(clock))
        .route("/v1/join", post(join))
        .route("/v1/report", post(report))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(hub)
}

async fn plan(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> Response {
    if !hub.authorized(&headers) {
        return unauthorized();
    }
    Json(&hub.plan).into_response()
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ClockAnswer {
    pub(crate) now_us: u64,
}

async fn clock(State(hub): State<Arc<Hub>>, headers: HeaderMap) -> Response {
    if !hub.authorized(&headers) {
        return unauthorized();
    }
    Json(ClockAnswer { now_us: now_us() }).into_response()
}

async fn join(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    Json(req): Json<JoinRequest>,
) -> Response {
    if !hub.authorized(&headers) {
        return unauthorized();
    }
    match hub.join(req) {
        Ok(reply) => Json(reply).into_response(),
        Err((status, error)) => refuse(status, error),
    }
}

async fn report(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    Json(r): Json<Report>,
) -> Response {
    if !hub.authorized(&headers) {
        return unauthorized();
    }
    match hub.report(r) {
        Ok(answer) => Json(answer).into_response(),
        Err((status, error)) => refuse(status, error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn plan(parts: u32) -> PlanDoc {
        let cli = <crate::cli::Cli as clap::Parser>::parse_from(["mongo-stress", "run", "p.toml"]);
        let crate::cli::Command::Run(run) = cli.command else {
            unreachable!()
        };
        PlanDoc {
            version: VERSION.into(),
            parts,
            seed: 1,
            args: run.args,
            profile: ProfileSource::Bundled { name: "p".into() },
            series: None,
            live: false,
        }
    }

    fn join(hub: &Hub, index: Option<u32>) -> Result<JoinReply, (StatusCode, String)> {
        hub.join(JoinRequest {
            version: VERSION.into(),
            host: "h".into(),
            index,
            clock: ClockReading {
                offset_us: 0,
                round_trip_us: 100,
            },
        })
    }

    fn interval(start_us: u64, values: &[u64]) -> What {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .unwrap();
        What::Interval(IntervalReport {
            start_us,
            duration_us: 1_000_000,
            hists: vec![(
                "g".into(),
                base64::engine::general_purpose::STANDARD.encode(bytes),
            )],
            activity: vec![("g".into(), 1, 1)],
            tallies: vec![(
                Label::group("g"),
                Tally {
                    samples: u64::try_from(values.len()).unwrap(),
                    sent_bytes: 10,
                    ..Tally::default()
                },
            )],
        })
    }

    fn say(hub: &Hub, index: u32, what: What) -> Go {
        hub.report(Report {
            index,
            clock: None,
            what,
        })
        .unwrap()
        .go
    }

    #[test]
    fn parts_join_once_each_then_set_up_then_start_together() {
        let hub = Hub::new("t".into(), plan(2), Duration::from_secs(1), &["g".into()]);
        assert_eq!(join(&hub, None).unwrap().index, 0);
        let again = join(&hub, Some(0)).unwrap_err();
        assert!(again.1.contains("part 0 has already joined"), "{}", again.1);
        assert!(join(&hub, Some(2)).unwrap_err().1.contains("no part 2"));
        let other = hub
            .join(JoinRequest {
                version: "0.0.1".into(),
                host: "old".into(),
                index: None,
                clock: ClockReading {
                    offset_us: 0,
                    round_trip_us: 1,
                },
            })
            .unwrap_err();
        assert!(
            other
                .1
                .contains("this part runs mongo-stress 0.0.1, the coordinator"),
            "{}",
            other.1
        );
        assert_eq!(
            say(&hub, 0, What::Beat),
            Go::Wait {
                joined: 1,
                parts: 2
            }
        );
        assert_eq!(join(&hub, None).unwrap().index, 1);
        assert!(hub.tick().contains(&News::AllJoined));
        assert!(join(&hub, None).unwrap_err().1.contains("all joined"));
        assert_eq!(say(&hub, 0, What::Ready { step: 0 }), Go::Setup);
        hub.tick();
        assert_eq!(say(&hub, 1, What::Ready { step: 0 }), Go::Setup);
        let news = hub.tick();
        let Some(News::Started { at_us }) = news.last().cloned() else {
            panic!("{news:?}")
        };
        assert_eq!(say(&hub, 0, What::Beat), Go::Start { step: 0, at_us });
        hub.stop("enough".into());
        assert_eq!(
            say(&hub, 1, What::Beat),
            Go::Stop {
                why: "enough".into()
            }
        );
    }

    #[test]
    fn intervals_of_the_parts_are_added_exactly_and_shown_once_all_sent_them() {
        let hub = Hub::new("t".into(), plan(2), Duration::from_secs(1), &["g".into()]);
        join(&hub, None).unwrap();
        join(&hub, None).unwrap();
        hub.keep_series();
        hub.tick();
        // Part 0's interval begins 10 ms after the second, part 1's 30 ms: one merged interval.
        // An interval a few seconds ahead: none is shown for being late.
        let base = (now_us() / 1_000_000 + 5) * 1_000_000;
        say(&hub, 0, interval(base + 10_000, &[100, 200]));
        assert!(!hub
            .tick()
            .iter()
            .any(|n| matches!(n, News::Interval { .. })));
        say(&hub, 1, interval(base + 30_000, &[300]));
        let news = hub.tick();
        let (rows, series) = news
            .iter()
            .find_map(|n| match n {
                News::Interval {
                    start_us,
                    parts,
                    rows,
                    series,
                } => {
                    assert_eq!((*start_us, *parts), (base, 2));
                    Some((rows.clone(), series.clone().expect("kept")))
                }
                _ => None,
            })
            .expect("a merged interval");
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].count, rows[0].errors), (3, 2));
        assert_eq!(rows[0].max, hub_value(300));
        // The parts' users and tallies added, row by row.
        assert_eq!(series.users["g"], 2);
        let [(label, t)] = &series.tallies[..] else {
            panic!("{:?}", series.tallies)
        };
        assert_eq!(
            (label, t.samples, t.sent_bytes),
            (&Label::group("g"), 3, 20)
        );
        // A change made on the coordinator's page is in every answer from then on.
        let change = Shared {
            number: 0,
            group: 0,
            name: "g".into(),
            setting: Setting::Rate,
            from: 600.0,
            to: 900.0,
            shares: vec![450.0, 450.0],
            who: "page".into(),
            before: Label::at("g", Setting::Rate, 600.0),
            after: Label::at("g", Setting::Rate, 900.0),
        };
        hub.share(change.clone());
        let answer = hub
            .report(Report {
                index: 1,
                clock: None,
                what: What::Beat,
            })
            .unwrap();
        assert_eq!(
            answer.changes,
            [Shared {
                number: 1,
                ..change
            }]
        );
    }

    fn hub_value(v: u64) -> u64 {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(v).unwrap();
        h.max()
    }

    #[test]
    fn a_series_starts_each_step_when_every_part_is_ready_for_it() {
        use crate::plan::series::{StepLoad, StepSpec};
        let mut doc = plan(2);
        doc.series = Some(SeriesKind::Sweep);
        let hub = Hub::new("t".into(), doc, Duration::from_secs(1), &["g".into()]);
        join(&hub, None).unwrap();
        join(&hub, None).unwrap();
        assert!(hub.tick().contains(&News::AllJoined));
        assert!(hub.all_joined());
        // Between steps the parts wait.
        assert!(matches!(say(&hub, 0, What::Beat), Go::Wait { .. }));
        let spec = |n: usize| {
            StepSpec::new(
                n,
                format!("steps/0{n}-2"),
                StepLoad::Users { threads: 2 },
                Duration::from_secs(4),
                Duration::from_secs(1),
                2,
            )
        };
        for n in 1..=2u32 {
            hub.begin_step(spec(n as usize));
            assert!(!hub.finished());
            assert_eq!(
                say(&hub, 0, What::Ready { step: n }),
                Go::Step {
                    spec: spec(n as usize)
                }
            );
            // A part still ready for the step before holds the start back.
            say(&hub, 1, What::Ready { step: n - 1 });
            assert!(!hub.tick().iter().any(|e| matches!(e, News::Started { .. })));
            say(&hub, 1, What::Ready { step: n });
            let Some(News::Started { at_us }) = hub.tick().last().cloned() else {
                panic!("step {n} did not start")
            };
            assert_eq!(say(&hub, 0, What::Beat), Go::Start { step: n, at_us });
            // The whole step broke a threshold (step 2): every part stops it, the series goes on.
            if n == 2 {
                hub.stop_step("p99 over".into());
                hub.stop_step("a second reason".into());
                assert_eq!(
                    say(&hub, 1, What::Beat),
                    Go::StopStep {
                        step: 2,
                        why: "p99 over".into()
                    }
                );
            }
            // The files of another step are not this one's.
            say(
                &hub,
                0,
                What::Done {
                    step: n + 7,
                    files: Vec::new(),
                },
            );
            say(
                &hub,
                1,
                What::Done {
                    step: n,
                    files: Vec::new(),
                },
            );
            assert!(!hub.finished());
            say(
                &hub,
                0,
                What::Done {
                    step: n,
                    files: Vec::new(),
                },
            );
            assert!(hub.finished());
        }
        // A part that leaves before the end has failed, once its step's files are in.
        say(&hub, 1, What::Bye);
        hub.begin_step(spec(3));
        assert!(hub.tick().contains(&News::Failed {
            index: 1,
            error: LEFT.into()
        }));
        hub.finish_series();
        assert_eq!(say(&hub, 0, What::Beat), Go::Finished);
    }

    #[test]
    fn a_silent_part_is_lost_and_told_so() {
        let hub = Hub::new("t".into(), plan(1), Duration::from_secs(1), &[]);
        join(&hub, None).unwrap();
        // The coordinator itself stalled for 5 s: the part's silence in it does not count.
        hub.tick();
        {
            let mut inner = hub.lock();
            inner.last_tick = inner.last_tick.map(|t| t - Duration::from_secs(5));
            inner.members[0].as_mut().unwrap().last_seen -= Duration::from_secs(5);
        }
        assert!(hub.tick().is_empty());
        hub.lock().members[0].as_mut().unwrap().last_seen -= LOST_AFTER;
        let news = hub.tick();
        assert!(news.contains(&News::Lost {
            index: 0,
            host: "h".into()
        }));
        assert!(matches!(say(&hub, 0, What::Beat), Go::Stop { why } if why.contains("lost")));
        assert!(hub.finished());
    }
}
