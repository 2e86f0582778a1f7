//! The parts' interval logs (`latency.hlog`) added into one, as a stream.
//!
//! Each part's intervals began when that part's recorder started, so they are put on wall-clock
//! boundaries: an interval goes to the wall-clock interval of the same length (counted from the
//! Unix epoch) that holds its middle. With a common `--start-at` the parts' intervals begin within
//! milliseconds of each other, so each merged interval holds exactly one interval of each part.
//! Histograms of one tag in one merged interval are added; the activity comments' users and
//! errors are summed.
//!
//! Memory stays bounded however long the run: each worker thread reads its share of the parts
//! line by line and hands on one interval at a time; the writer thread writes each merged
//! interval as it is complete.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::time::{Duration, UNIX_EPOCH};

use super::counts::{Counts, Decoder};
use crate::error::Error;
use crate::metrics::interval::Tag;
use crate::metrics::{Activity, IntervalBatch, IntervalHist};
use crate::samplelog::hlog::IntervalLog;

/// Intervals a worker may be ahead of the writer.
const AHEAD: usize = 4;

/// Decoding threads at most: each holds a few intervals of dense counts (memory), and the
/// writer is one thread.
const MAX_WORKERS: usize = 4;

/// One merged interval, or one worker's share of it.
struct Slot {
    /// Wall-clock interval number: start = bucket x length.
    bucket: u64,
    hists: Vec<(String, Counts)>,
    /// Per group tag: users at the interval's end, and errors in it.
    activity: Vec<(String, u32, u64)>,
}

impl Slot {
    fn new(bucket: u64) -> Slot {
        Slot {
            bucket,
            hists: Vec::new(),
            activity: Vec::new(),
        }
    }

    fn hist(&mut self, tag: &str) -> &mut Counts {
        let i = match self.hists.iter().position(|(t, _)| t == tag) {
            Some(i) => i,
            None => {
                self.hists.push((tag.to_string(), Counts::default()));
                self.hists.len() - 1
            }
        };
        &mut self.hists[i].1
    }

    fn add_activity(&mut self, tag: &str, users: u32, errors: u64) {
        match self.activity.iter_mut().find(|(t, _, _)| t == tag) {
            Some(a) => {
                a.1 += users;
                a.2 += errors;
            }
            None => self.activity.push((tag.to_string(), users, errors)),
        }
    }

    fn absorb(&mut self, other: Slot) {
        for (tag, h) in other.hists {
            match self.hists.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, mine)) => mine.absorb(&h),
                None => self.hists.push((tag, h)),
            }
        }
        for (tag, users, errors) in other.activity {
            self.add_activity(&tag, users, errors);
        }
    }
}

/// What one line of a part's log holds, placed on its wall-clock interval.
enum Entry {
    Hist { tag: String, payload: String },
    Activity(Vec<(String, u32, u64)>),
}

/// A part's log, read line by line, one entry ahead.
struct Reader {
    path: PathBuf,
    lines: BufReader<File>,
    base_us: u64,
    length_us: u64,
    /// The part's first interval: its start (seconds since BaseTime) and wall-clock interval.
    /// Later ones follow it by their ordinal, so jitter never puts two of a part's intervals
    /// in one merged interval.
    first: Option<(f64, u64)>,
    next: Option<(u64, Entry)>,
    line: usize,
}

/// A log's BaseTime (epoch microseconds), from its header.
pub(crate) fn base_time(path: &Path) -> Result<u64, String> {
    let mut lines = BufReader::new(File::open(path).map_err(|e| e.to_string())?);
    let mut text = String::new();
    while lines.read_line(&mut text).map_err(|e| e.to_string())? > 0 {
        if let Some(rest) = text.trim_end().strip_prefix("#[BaseTime: ") {
            if let Some(s) = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
            {
                return Ok(crate::num::whole(s * 1e6));
            }
        }
        if !text.starts_with('#') {
            break;
        }
        text.clear();
    }
    Err("no #[BaseTime: ...] header (not written by mongo-stress?)".into())
}

/// `[Tag=T,]start,length,max,payload` as (tag, start s, length s, payload).
fn fields(line: &str) -> Option<(&str, f64, f64, &str)> {
    let (tag, rest) = match line.strip_prefix("Tag=") {
        Some(r) => r.split_once(',')?,
        None => ("", line),
    };
    let mut f = rest.splitn(4, ',');
    let start = f.next()?.parse().ok()?;
    let length = f.next()?.parse().ok()?;
    let _max = f.next()?;
    Some((tag, start, length, f.next()?))
}

impl Reader {
    fn open(path: &Path, length_us: u64) -> Result<Reader, String> {
        let base_us = base_time(path)?;
        let mut r = Reader {
            path: path.to_path_buf(),
            lines: BufReader::new(File::open(path).map_err(|e| e.to_string())?),
            base_us,
            length_us,
            first: None,
            next: None,
            line: 0,
        };
        r.advance()?;
        Ok(r)
    }

    /// The wall-clock interval of an interval of this part: the one holding the middle of
    /// the part's first interval, then one further per interval.
    fn bucket(&mut self, start_s: f64, length_s: f64) -> u64 {
        let (base_us, length_us) = (self.base_us, self.length_us);
        let (start0, b0) = *self.first.get_or_insert_with(|| {
            let middle = crate::num::real(base_us) + (start_s + length_s / 2.0) * 1e6;
            (
                start_s,
                crate::num::whole(middle.max(0.0).floor()) / length_us,
            )
        });
        let ordinal = ((start_s - start0) * 1e6 / crate::num::real(length_us)).round();
        b0.saturating_add_signed(crate::num::whole_signed(ordinal))
    }

    /// Reads up to the next interval or activity line (a cut-off last line is left out).
    fn advance(&mut self) -> Result<(), String> {
        self.next = None;
        let mut text = String::new();
        loop {
            text.clear();
            if self.lines.read_line(&mut text).map_err(|e| e.to_string())? == 0
                || !text.ends_with('\n')
            {
                return Ok(());
            }
            self.line += 1;
            let l = text.trim_end();
            if let Some(rest) = l.strip_prefix("#[Activity ") {
                let broken = || format!("line {}: a malformed activity line", self.line);
                let (times, groups) = rest
                    .trim_end_matches(']')
                    .split_once(": ")
                    .ok_or_else(broken)?;
                let mut t = times.split_whitespace().map(str::parse::<f64>);
                let (Some(Ok(start)), Some(Ok(length))) = (t.next(), t.next()) else {
                    return Err(broken());
                };
                let mut acts = Vec::new();
                for g in groups.split_whitespace() {
                    let (tag, v) = g.rsplit_once('=').ok_or_else(broken)?;
                    let (u, e) = v.split_once('/').ok_or_else(broken)?;
                    acts.push((
                        tag.to_string(),
                        u.parse().map_err(|_| broken())?,
                        e.parse().map_err(|_| broken())?,
                    ));
                }
                self.next = Some((self.bucket(start, length), Entry::Activity(acts)));
                return Ok(());
            }
            if l.is_empty() || l.starts_with('#') || l.starts_with('"') {
                continue;
            }
            let (tag, start, length, payload) =
                fields(l).ok_or_else(|| format!("line {}: not an interval line", self.line))?;
            self.next = Some((
                self.bucket(start, length),
                Entry::Hist {
                    tag: tag.to_string(),
                    payload: payload.to_string(),
                },
            ));
            return Ok(());
        }
    }
}

/// A worker's stream of merged intervals, and the one taken from it and not yet written.
type Input = (Receiver<Result<Slot, String>>, Option<Slot>);

/// A worker: its parts' intervals, merged per wall-clock interval, in order.
fn work(mut readers: Vec<Reader>, out: std::sync::mpsc::SyncSender<Result<Slot, String>>) {
    let mut decoder = Decoder::default();
    loop {
        let Some(bucket) = readers
            .iter()
            .filter_map(|r| r.next.as_ref().map(|n| n.0))
            .min()
        else {
            return;
        };
        let mut slot = Slot::new(bucket);
        for r in &mut readers {
            while r.next.as_ref().is_some_and(|n| n.0 == bucket) {
                let (_, entry) = r.next.take().expect("checked");
                let added = match entry {
                    Entry::Hist { tag, payload } => decoder
                        .add(&payload, slot.hist(&tag))
                        .map_err(|e| format!("the histogram of {tag}: {e}")),
                    Entry::Activity(acts) => {
                        acts.iter()
                            .for_each(|(t, u, e)| slot.add_activity(t, *u, *e));
                        Ok(())
                    }
                };
                if let Err(e) = added.and_then(|_| r.advance()) {
                    let _ = out.send(Err(format!("{}: {e}", r.path.display())));
                    return;
                }
            }
        }
        if out.send(Ok(slot)).is_err() {
            return;
        }
    }
}

/// Merges the logs at `logs`, whose intervals are `length` long (the parts' `--hdr-interval`),
/// into `out`; returns the merged interval lines written.
pub(crate) fn merge(
    logs: &[PathBuf],
    length: Duration,
    out: &Path,
    tool: &str,
) -> Result<u64, Error> {
    let broken =
        |p: &Path, e: String| super::bad(p.parent().unwrap_or(p), format!("latency.hlog: {e}"));
    let length_us = u64::try_from(length.as_micros()).unwrap_or(u64::MAX).max(1);
    let mut bases = Vec::new();
    for p in logs {
        bases.push(base_time(p).map_err(|e| broken(p, e))?);
    }
    // The merged log counts from the wall-clock interval boundary before the earliest part.
    let base_us = bases.iter().min().copied().unwrap_or(0) / length_us * length_us;
    let base = UNIX_EPOCH + Duration::from_micros(base_us);
    let mut readers = Vec::new();
    for p in logs {
        readers.push(Reader::open(p, length_us).map_err(|e| broken(p, e))?);
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WORKERS)
        .min(readers.len())
        .max(1);
    let mut shares: Vec<Vec<Reader>> = (0..workers).map(|_| Vec::new()).collect();
    for (i, r) in readers.into_iter().enumerate() {
        shares[i % workers].push(r);
    }
    let log = IntervalLog::create(out, base, tool)?;
    let tx = log.sender().expect("a new log takes intervals");
    let written = std::thread::scope(|scope| -> Result<u64, Error> {
        let mut inputs: Vec<Input> = Vec::new();
        for share in shares {
            let (s, r) = sync_channel(AHEAD);
            scope.spawn(move || work(share, s));
            inputs.push((r, None));
        }
        let fail = |e: String| {
            Error::Usage(format!("cannot merge the interval logs: {e}\n  fix: give parts whose latency.hlog is whole (or merge without it by moving it aside)"))
        };
        let mut written = 0u64;
        loop {
            for (rx, head) in inputs.iter_mut() {
                if head.is_none() {
                    *head = match rx.recv() {
                        Ok(Ok(slot)) => Some(slot),
                        Ok(Err(e)) => return Err(fail(e)),
                        Err(_) => None,
                    };
                }
            }
            let Some(bucket) = inputs
                .iter()
                .filter_map(|(_, h)| h.as_ref().map(|s| s.bucket))
                .min()
            else {
                break;
            };
            let mut slot = Slot::new(bucket);
            for (_, head) in inputs.iter_mut() {
                if head.as_ref().is_some_and(|s| s.bucket == bucket) {
                    slot.absorb(head.take().expect("checked"));
                }
            }
            written += slot.hists.len() as u64;
            let batch = IntervalBatch {
                start_epoch_us: bucket * length_us,
                duration: Duration::from_micros(length_us),
                hists: slot
                    .hists
                    .into_iter()
                    .map(|(tag, counts)| IntervalHist {
                        tag: Tag::parse(&tag),
                        hist: counts.to_histogram(),
                    })
                    .collect(),
                activity: slot
                    .activity
                    .into_iter()
                    .map(|(tag, users, errors)| Activity {
                        tag: Tag::parse(&tag),
                        users,
                        errors,
                    })
                    .collect(),
                spares: Default::default(),
            };
            if tx.blocking_send(std::sync::Arc::new(batch)).is_err() {
                break; // the writer failed; `finish` says why
            }
        }
        Ok(written)
    });
    drop(tx);
    let finished = log.finish();
    let written = written?;
    finished?;
    Ok(written)
}
