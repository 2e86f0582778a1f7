//! The books of change-stream listeners (`watch` groups). `Acks` holds every write of this run
//! the listeners can recognise (an insert's `_id`s, a delete's `_id`, an update by `_id`), per
//! document in the order the writers were acknowledged, with when; the writers file them as
//! their operations end, the listeners read them. A listener's `Book` matches each event to the
//! write it reports (namespace, `_id`, operation, and the how-manyth of that document's writes
//! of that kind), and says its lag: received minus acknowledged, or minus the event's
//! `wallTime` for a change this run did not make (an event that comes before its write's reply
//! waits for it, `ACK_GRACE` at most). At the end `Book::verdict` counts, against the writes
//! the stream's scope and filter admit, what was delivered, missing, duplicated (an event
//! token seen twice) and out of order (a document's events against its writes' order).
//!
//! Owns: the acknowledged writes' times, the matching, lag, the delivery counts, and reading
//! a pipeline's `$match` for what it admits (`filter.rs`). Never: calls the driver, sends
//! samples, prints or writes files.

mod filter;

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

use mongodb::bson::Bson;

pub(crate) use filter::Admits;

/// How long an event whose write's reply has not come back yet waits for it before it is
/// taken for a change this run did not make.
pub(crate) const ACK_GRACE_US: u64 = 2_000_000;

/// A missing write counts as skipped (its stream went past it) only when it was acknowledged
/// this long before the latest write the listener was sent: writers' replies come back in
/// another order than the server commits, by far less than this.
pub(crate) const SKIP_MARGIN_US: u64 = 1_000_000;

/// The kinds of write a change stream reports that the run's writes are matched by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Insert,
    Update,
    Replace,
    Delete,
}

impl Op {
    /// The event's `operationType`, when it is one of these.
    pub(crate) fn of_event(operation_type: &str) -> Option<Op> {
        Some(match operation_type {
            "insert" => Op::Insert,
            "update" => Op::Update,
            "replace" => Op::Replace,
            "delete" => Op::Delete,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Update => "update",
            Op::Replace => "replace",
            Op::Delete => "delete",
        }
    }
}

/// A document's `_id` as the books key it: whole numbers as numbers (an `Int32` and an
/// `Int64` of one value are one `_id`, as the server compares them), anything else by its
/// canonical Extended JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum DocId {
    Int(i64),
    Other(String),
}

impl DocId {
    pub(crate) fn of(id: &Bson) -> DocId {
        match id {
            Bson::Int64(i) => DocId::Int(*i),
            Bson::Int32(i) => DocId::Int(i64::from(*i)),
            other => DocId::Other(other.clone().into_canonical_extjson().to_string()),
        }
    }
}

impl std::fmt::Display for DocId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocId::Int(i) => write!(f, "{i}"),
            DocId::Other(s) => f.write_str(s),
        }
    }
}

/// One document of one of the run's collections (`RunPlan::collections` index).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DocKey {
    pub(crate) collection: usize,
    pub(crate) id: DocId,
}

const SHARDS: usize = 16;

/// Per document, its acknowledged writes in order: kind and time.
type Writes = HashMap<DocKey, Vec<(Op, u64)>>;

/// The run's acknowledged writes that a listener can recognise, per document in the order
/// they were acknowledged, each with its time (the run's clock, microseconds).
pub(crate) struct Acks {
    shards: Box<[Mutex<Writes>]>,
    hasher: std::collections::hash_map::RandomState,
    /// Each collection's database and name, by `RunPlan::collections` index.
    namespaces: Vec<(String, String)>,
}

impl Acks {
    pub(crate) fn new(namespaces: Vec<(String, String)>) -> Acks {
        Acks {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: Default::default(),
            namespaces,
        }
    }

    fn shard(&self, key: &DocKey) -> &Mutex<Writes> {
        let h = self.hasher.hash_one(key);
        // The remainder is below SHARDS.
        #[allow(clippy::cast_possible_truncation)]
        &self.shards[(h % SHARDS as u64) as usize]
    }

    /// A write acknowledged at `at_us`.
    pub(crate) fn record(&self, key: DocKey, op: Op, at_us: u64) {
        let mut shard = self.shard(&key).lock().unwrap_or_else(|e| e.into_inner());
        shard.entry(key).or_default().push((op, at_us));
    }

    /// The `nth` (from 0) acknowledged write of kind `op` to the document: its position among
    /// the document's writes and its time.
    fn nth(&self, key: &DocKey, op: Op, nth: u32) -> Option<(u32, u64)> {
        let shard = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
        let writes = shard.get(key)?;
        writes
            .iter()
            .enumerate()
            .filter(|(_, (o, _))| *o == op)
            .nth(nth as usize)
            .map(|(i, (_, at))| (u32::try_from(i).unwrap_or(u32::MAX), *at))
    }

    /// The run's collection at `database.collection`, if it is one.
    pub(crate) fn collection_of(&self, database: &str, collection: &str) -> Option<usize> {
        self.namespaces
            .iter()
            .position(|(d, c)| d == database && c == collection)
    }

    pub(crate) fn namespace(&self, collection: usize) -> (&str, &str) {
        self.namespaces
            .get(collection)
            .map_or(("?", "?"), |(d, c)| (d.as_str(), c.as_str()))
    }

    /// Every acknowledged write `admits` lets through: document, kind, time.
    pub(crate) fn admitted(&self, admits: &Admits) -> Vec<(DocKey, Op, u64)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            for (key, writes) in shard.iter() {
                let (db, coll) = self.namespace(key.collection);
                for (op, at) in writes {
                    if admits.admits(*op, db, coll, &key.id) {
                        out.push((key.clone(), *op, *at));
                    }
                }
            }
        }
        out
    }
}

/// One event as the listener received it.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    /// A hash of its resume token (`_id`): the same event delivered again has the same one.
    pub(crate) token: u64,
    pub(crate) op: Option<Op>,
    /// `operationType` as the server said it.
    pub(crate) kind: String,
    /// Database and collection (`ns`), when it has one.
    pub(crate) ns: Option<(String, String)>,
    pub(crate) id: Option<DocId>,
    /// Its `wallTime`, microseconds since the epoch.
    pub(crate) wall_us: Option<u64>,
    /// When the listener had it, the run's clock.
    pub(crate) received_us: u64,
}

/// What a lag is measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Basis {
    /// The write's acknowledgement to this run's writer.
    Ack,
    /// The event's `wallTime`: a change this run did not make.
    WallTime,
}

/// One event's lag, to be recorded as a sample of the watch group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lag {
    /// The time the lag counts from (the acknowledgement, or `wallTime`).
    pub(crate) from_us: u64,
    pub(crate) lag_us: u64,
    pub(crate) basis: Basis,
}

pub(crate) use crate::summary::streams::ChangeLine as Line;

/// What one listener saw of one document: its events of each kind matched so far, and the
/// position of the last one among the document's writes.
#[derive(Debug, Default)]
struct Seen {
    of_kind: [u32; 4],
    last: Option<u32>,
}

fn slot(op: Op) -> usize {
    match op {
        Op::Insert => 0,
        Op::Update => 1,
        Op::Replace => 2,
        Op::Delete => 3,
    }
}

/// A listener's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Events received (every kind, duplicates included).
    pub(crate) events: u64,
    /// Events matched to a write of this run, each write once.
    pub(crate) delivered: u64,
    pub(crate) duplicated: u64,
    pub(crate) out_of_order: u64,
    /// Events of changes this run did not make (lag from `wallTime`).
    pub(crate) other: u64,
    /// Events received after the writers had stopped.
    pub(crate) late: u64,
}

/// One listener's books.
pub(crate) struct Book {
    pub(crate) listener: u32,
    seen: HashMap<DocKey, Seen>,
    tokens: HashSet<u64>,
    waiting: VecDeque<Event>,
    pub(crate) counts: Counts,
    /// When the writers stopped (run's clock), once they have.
    pub(crate) writers_done_us: Option<u64>,
    /// `changes.tsv`'s lines, kept only when asked.
    pub(crate) lines: Option<Vec<Line>>,
    /// When each duplicate came (the run's clock): a resume's replayed events.
    pub(crate) duplicate_times: Vec<u64>,
    /// The latest acknowledgement among the writes it was sent: how far its stream got.
    reached_us: u64,
}

impl Book {
    pub(crate) fn new(listener: u32, keep_lines: bool) -> Book {
        Book {
            listener,
            seen: HashMap::new(),
            tokens: HashSet::new(),
            waiting: VecDeque::new(),
            counts: Counts::default(),
            writers_done_us: None,
            lines: keep_lines.then(Vec::new),
            duplicate_times: Vec::new(),
            reached_us: 0,
        }
    }

    /// An event received: its lag, now, or later (`retry`) when its write's reply is not in
    /// yet; none for a duplicate or an event with nothing to measure from.
    pub(crate) fn receive(&mut self, acks: &Acks, event: Event) -> Option<Lag> {
        self.counts.events += 1;
        if self
            .writers_done_us
            .is_some_and(|done| event.received_us > done)
        {
            self.counts.late += 1;
        }
        if !self.tokens.insert(event.token) {
            self.counts.duplicated += 1;
            self.duplicate_times.push(event.received_us);
            self.line(&event, None, None, "duplicate");
            return None;
        }
        match self.try_match(acks, &event) {
            Matched::Now(lag) => Some(lag),
            Matched::Wait => {
                self.waiting.push_back(event);
                None
            }
            Matched::Never => self.other(event),
        }
    }

    /// The waiting events whose writes' replies are in now, and those that waited too long
    /// (taken for changes this run did not make); all of them when `all`.
    pub(crate) fn retry(&mut self, acks: &Acks, now_us: u64, all: bool) -> Vec<Lag> {
        let mut out = Vec::new();
        for _ in 0..self.waiting.len() {
            let Some(event) = self.waiting.pop_front() else {
                break;
            };
            match self.try_match(acks, &event) {
                Matched::Now(lag) => out.push(lag),
                Matched::Wait
                    if !all && now_us.saturating_sub(event.received_us) < ACK_GRACE_US =>
                {
                    self.waiting.push_back(event);
                }
                Matched::Wait | Matched::Never => out.extend(self.other(event)),
            }
        }
        out
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn other(&mut self, event: Event) -> Option<Lag> {
        self.counts.other += 1;
        let lag = event.wall_us.map(|w| Lag {
            from_us: w,
            lag_us: event.received_us.saturating_sub(w),
            basis: Basis::WallTime,
        });
        self.line(&event, None, lag.as_ref().map(|l| l.lag_us), "wallTime");
        lag
    }

    fn try_match(&mut self, acks: &Acks, event: &Event) -> Matched {
        let (Some(op), Some((db, coll)), Some(id)) = (event.op, &event.ns, &event.id) else {
            return Matched::Never;
        };
        let Some(collection) = acks.collection_of(db, coll) else {
            return Matched::Never;
        };
        let key = DocKey {
            collection,
            id: id.clone(),
        };
        let seen = self.seen.entry(key.clone()).or_default();
        let Some((position, ack_us)) = acks.nth(&key, op, seen.of_kind[slot(op)]) else {
            return Matched::Wait;
        };
        seen.of_kind[slot(op)] += 1;
        if seen.last.is_some_and(|l| position < l) {
            self.counts.out_of_order += 1;
        }
        seen.last = Some(seen.last.map_or(position, |l| l.max(position)));
        self.counts.delivered += 1;
        self.reached_us = self.reached_us.max(ack_us);
        // An event that came before its write's reply: no lag to speak of.
        let lag_us = event.received_us.saturating_sub(ack_us);
        self.line(event, Some(ack_us), Some(lag_us), "ack");
        Matched::Now(Lag {
            from_us: ack_us,
            lag_us,
            basis: Basis::Ack,
        })
    }

    fn line(&mut self, e: &Event, ack_us: Option<u64>, lag_us: Option<u64>, what: &'static str) {
        if let Some(lines) = &mut self.lines {
            lines.push(Line {
                listener: self.listener,
                kind: e.kind.clone(),
                collection: e
                    .ns
                    .as_ref()
                    .map_or("-".into(), |(d, c)| format!("{d}.{c}")),
                id: e.id.as_ref().map_or("-".into(), ToString::to_string),
                ack_us,
                received_us: Some(e.received_us),
                lag_us,
                what,
            });
        }
    }

    /// Of the writes `admits` lets through, what this listener was sent, and a `missing` line
    /// for each write it never saw.
    pub(crate) fn verdict(&mut self, acks: &Acks, admits: &Admits) -> Verdict {
        let wanted = acks.admitted(admits);
        let expected = wanted.len() as u64;
        // Per document and kind, the writes wanted; those beyond what was seen are missing.
        let mut per: HashMap<(DocKey, Op), Vec<u64>> = HashMap::new();
        for (key, op, at) in wanted {
            per.entry((key, op)).or_default().push(at);
        }
        let mut delivered = 0;
        let mut missing = Vec::new();
        for ((key, op), mut ats) in per {
            ats.sort_unstable();
            let seen = self
                .seen
                .get(&key)
                .map_or(0, |s| s.of_kind[slot(op)] as usize);
            delivered += seen.min(ats.len()) as u64;
            for at in ats.iter().skip(seen) {
                missing.push((key.clone(), op, *at));
            }
        }
        // Missing writes acknowledged before the latest one it was sent: its stream went past
        // them (the oplog no longer held them when it got there). The others were still ahead
        // of it when it stopped.
        let past = self.reached_us.saturating_sub(SKIP_MARGIN_US);
        let skipped = missing.iter().filter(|m| m.2 < past).count() as u64;
        if let Some(lines) = &mut self.lines {
            missing.sort_by_key(|m| m.2);
            for (key, op, at) in missing {
                let (d, c) = acks.namespace(key.collection);
                lines.push(Line {
                    listener: self.listener,
                    kind: op.name().into(),
                    collection: format!("{d}.{c}"),
                    id: key.id.to_string(),
                    ack_us: Some(at),
                    received_us: None,
                    lag_us: None,
                    what: if at < past { "skipped" } else { "missing" },
                });
            }
        }
        Verdict {
            expected,
            delivered,
            skipped,
        }
    }
}

/// A listener's delivery: the writes it was due, those it was sent, and of the others those
/// its stream went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) expected: u64,
    pub(crate) delivered: u64,
    pub(crate) skipped: u64,
}

enum Matched {
    Now(Lag),
    Wait,
    Never,
}

/// A resume token's hash (its bytes), for telling an event delivered again.
pub(crate) fn token_hash(token: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    h.write(token);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acks() -> Acks {
        Acks::new(vec![("shop".into(), "orders".into())])
    }

    fn event(token: u64, op: &str, id: i64, at: u64) -> Event {
        Event {
            token,
            op: Op::of_event(op),
            kind: op.into(),
            ns: Some(("shop".into(), "orders".into())),
            id: Some(DocId::Int(id)),
            wall_us: Some(at.saturating_sub(500)),
            received_us: at,
        }
    }

    fn key(id: i64) -> DocKey {
        DocKey {
            collection: 0,
            id: DocId::Int(id),
        }
    }

    #[test]
    fn an_event_is_matched_to_its_write_and_its_lag_is_from_the_acknowledgement() {
        let a = acks();
        a.record(key(1), Op::Insert, 1_000);
        let mut b = Book::new(0, true);
        let lag = b.receive(&a, event(7, "insert", 1, 1_300)).unwrap();
        assert_eq!(
            (lag.from_us, lag.lag_us, lag.basis),
            (1_000, 300, Basis::Ack)
        );
        // The same token again is a duplicate, and no lag.
        assert_eq!(b.receive(&a, event(7, "insert", 1, 1_400)), None);
        assert_eq!(b.counts.duplicated, 1);
        assert_eq!(
            b.verdict(&a, &Admits::all()),
            Verdict {
                expected: 1,
                delivered: 1,
                skipped: 0
            }
        );
    }

    #[test]
    fn an_event_before_its_reply_waits_for_it_and_one_that_never_comes_is_another_writers() {
        let a = acks();
        let mut b = Book::new(0, false);
        assert_eq!(b.receive(&a, event(1, "insert", 5, 10_000)), None);
        assert_eq!(b.waiting(), 1);
        a.record(key(5), Op::Insert, 10_200);
        let lags = b.retry(&a, 10_300, false);
        // Received before the reply came back: a lag of 0, from the acknowledgement.
        assert_eq!(lags[0].lag_us, 0);
        assert_eq!(b.counts.delivered, 1);
        // A change this run did not make: after the grace, measured from wallTime.
        assert_eq!(b.receive(&a, event(2, "insert", 99, 20_000)), None);
        assert!(b.retry(&a, 20_000 + ACK_GRACE_US - 1, false).is_empty());
        let lags = b.retry(&a, 20_000 + ACK_GRACE_US, false);
        assert_eq!((lags[0].lag_us, lags[0].basis), (500, Basis::WallTime));
        assert_eq!(b.counts.other, 1);
    }

    #[test]
    fn missing_events_are_named_and_a_documents_events_out_of_its_writes_order_are_counted() {
        const S: u64 = 2_000_000;
        let a = acks();
        a.record(key(1), Op::Insert, S + 100);
        a.record(key(1), Op::Update, S + 200);
        a.record(key(1), Op::Delete, S + 300);
        a.record(key(2), Op::Insert, 150);
        let mut b = Book::new(3, true);
        b.receive(&a, event(1, "insert", 1, S + 400));
        b.receive(&a, event(2, "delete", 1, S + 410));
        b.receive(&a, event(3, "update", 1, S + 420));
        assert_eq!(b.counts.out_of_order, 1);
        // Document 2's insert, acknowledged well before writes the stream delivered: skipped.
        assert_eq!(
            b.verdict(&a, &Admits::all()),
            Verdict {
                expected: 4,
                delivered: 3,
                skipped: 1
            }
        );
        let lines = b.lines.unwrap();
        let unseen: Vec<_> = lines.iter().filter(|l| l.received_us.is_none()).collect();
        assert_eq!(unseen.len(), 1);
        assert_eq!((unseen[0].id.as_str(), unseen[0].ack_us), ("2", Some(150)));
        assert_eq!(
            unseen[0].tsv(),
            "3\tinsert\tshop.orders\t2\t150\t-\t-\tskipped"
        );
        // Writes after the last one a listener was sent (or within the margin before it) are
        // missing, not skipped: they were still ahead of it.
        a.record(key(3), Op::Insert, S + 500);
        a.record(key(4), Op::Insert, S + 50);
        let mut c = Book::new(1, false);
        c.receive(&a, event(9, "insert", 1, S + 600));
        assert_eq!(
            c.verdict(&a, &Admits::all()),
            Verdict {
                expected: 6,
                delivered: 1,
                skipped: 1
            }
        );
    }

    #[test]
    fn ids_of_both_integer_widths_are_one() {
        assert_eq!(DocId::of(&Bson::Int32(4)), DocId::of(&Bson::Int64(4)));
        assert_ne!(DocId::of(&Bson::String("4".into())), DocId::Int(4));
    }
}
