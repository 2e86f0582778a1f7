//! The source's entries counted as they come: put back in time order (a buffer of REORDER_MS of
//! the source's time: a log's lines and the profiler's reads are a little out of order), grouped
//! into transactions (`txn::Grouper`), and filed under their shapes (`Tally`).
//!
//! Owns: what is held while the source is read, bounded by the source's time (seconds of it),
//! not by the capture's length. Never: keeps an entry once it is counted (its shape keeps its
//! duration and times, 24 bytes, and a sample of its values).

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use super::super::txn::{Entry, Grouper, Released};
use super::super::{GroupBy, LeftOut, Observed, Sink};
#[cfg(test)]
use super::tally::VALUES_KEPT;
use super::tally::{operations_of, Tally};

/// How far (the source's time) an entry may come after a later one and still be counted in
/// order.
pub(crate) const REORDER_MS: i64 = 2000;

/// Update and delete commands held until the source shows whether it logs their statements
/// apart (mongod's log does, and the command line then counts for nothing); after this many
/// without a statement line, it is taken that it does not.
const UNDECIDED: usize = 10_000;

/// An entry waiting in the buffer, ordered by its time, then its place in the source.
struct Held(Entry);

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0 .1.ts_ms, self.0 .0).cmp(&(other.0 .1.ts_ms, other.0 .0))
    }
}

/// Whether the source logs updates' and deletes' statements on entries of their own.
enum Statements {
    /// Not known yet: the units that hold an update or delete command, waiting.
    Undecided(Vec<Released>),
    Known(bool),
}

/// The capture so far.
pub(crate) struct Collector {
    by: GroupBy,
    buffer: BinaryHeap<Reverse<Held>>,
    newest: i64,
    seq: u64,
    grouper: Grouper,
    pub(super) tally: Tally,
    /// What the source held that is not an operation of the profile, counted as it is read.
    pub(crate) left: LeftOut,
    statements: Statements,
    /// Every namespace an entry named.
    /// Every namespace an entry named: database -> collections (looked up without a copy, as
    /// every entry is).
    namespaces: BTreeMap<String, BTreeSet<String>>,
    entries: u64,
    /// The most entries held at once (the buffer, and what may belong to a transaction).
    pub(crate) most_held: usize,
    finished: bool,
}

impl Sink for Collector {
    fn take(&mut self, o: Observed) {
        self.entries += 1;
        if !o.coll.is_empty()
            && !self
                .namespaces
                .get(&o.db)
                .is_some_and(|c| c.contains(&o.coll))
        {
            self.namespaces
                .entry(o.db.clone())
                .or_default()
                .insert(o.coll.clone());
        }
        if matches!(o.op_type.as_str(), "update" | "remove") && o.command.contains_key("q") {
            self.decide(true);
        }
        self.newest = self.newest.max(o.ts_ms);
        self.buffer.push(Reverse(Held((self.seq, Box::new(o)))));
        self.seq += 1;
        let mut out = Vec::new();
        while self
            .buffer
            .peek()
            .is_some_and(|h| h.0 .0 .1.ts_ms < self.newest.saturating_sub(REORDER_MS))
        {
            if let Some(Reverse(Held(e))) = self.buffer.pop() {
                self.grouper.push(e, &mut out);
            }
        }
        self.most_held = self
            .most_held
            .max(self.buffer.len() + self.grouper.most_held);
        for r in out {
            self.count(r);
        }
    }
}

impl Collector {
    pub(crate) fn new(by: GroupBy) -> Collector {
        Collector {
            by,
            buffer: BinaryHeap::new(),
            newest: i64::MIN,
            seq: 0,
            grouper: Grouper::default(),
            tally: Tally::default(),
            left: LeftOut::default(),
            statements: Statements::Undecided(Vec::new()),
            namespaces: BTreeMap::new(),
            entries: 0,
            most_held: 0,
            finished: false,
        }
    }

    /// Every entry of `observed`, counted (the source in one piece: tests, small inputs).
    #[cfg(test)]
    pub(crate) fn of(observed: &[Observed], by: GroupBy) -> Collector {
        let mut c = Collector::new(by);
        for o in observed {
            c.take(o.clone());
        }
        c
    }

    /// Entries the source gave (every kind).
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Every namespace an entry named, in order.
    pub(crate) fn namespaces(&self) -> impl Iterator<Item = (&String, &String)> {
        self.namespaces
            .iter()
            .flat_map(|(d, cs)| cs.iter().map(move |c| (d, c)))
    }

    /// The source ended: counts what was still held. Idempotent.
    pub(crate) fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let mut out = Vec::new();
        while let Some(Reverse(Held(e))) = self.buffer.pop() {
            self.grouper.push(e, &mut out);
        }
        self.grouper.finish(&mut out);
        for r in out {
            self.count(r);
        }
        self.decide(false);
    }

    /// Transactions seen in part, aborted, and whether the source shows commits.
    pub(super) fn transactions(&self) -> (u64, u64, bool) {
        (
            self.grouper.partial,
            self.grouper.aborted,
            self.grouper.commits_visible,
        )
    }

    /// Per namespace, the fields the captured operations select documents by (a filter's
    /// values and lists): the fields whose values' frequencies are read from the source.
    pub(crate) fn filter_fields(&self) -> BTreeMap<(String, String), BTreeSet<String>> {
        let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for s in &self.tally.seen {
            for slot in s.op.slots.iter().filter(|sl| super::selects(sl)) {
                if let Some(f) = &slot.field {
                    out.entry((s.db.clone(), s.coll.clone()))
                        .or_default()
                        .insert(f.clone());
                }
            }
        }
        out
    }

    /// Settles whether statements are logged apart, counting what waited for it.
    fn decide(&mut self, logged: bool) {
        if let Statements::Undecided(waiting) =
            std::mem::replace(&mut self.statements, Statements::Known(logged))
        {
            for r in waiting {
                self.count(r);
            }
        }
    }

    /// Counts what the grouper released (or holds it while that waits on `decide`).
    fn count(&mut self, r: Released) {
        let logged = match &mut self.statements {
            Statements::Known(b) => *b,
            Statements::Undecided(waiting) => {
                let has_command = |(_, o): &Entry| {
                    !super::super::txn::is_statement(o)
                        && matches!(
                            o.command.keys().next().map(String::as_str),
                            Some("update" | "delete")
                        )
                };
                let waits = match &r {
                    Released::Alone(e) => has_command(e),
                    Released::Whole(m) => m.iter().any(has_command),
                };
                if !waits {
                    false // the answer changes nothing for it
                } else {
                    waiting.push(r);
                    if waiting.len() > UNDECIDED {
                        self.decide(false);
                    }
                    return;
                }
            }
        };
        match r {
            Released::Alone((_, o)) => self.tally.alone(&o, logged, self.by, &mut self.left),
            Released::Whole(members) => {
                let members: Vec<Observed> = members.into_iter().map(|(_, o)| *o).collect();
                // What the source held that is no operation (the commit, a cut command) is
                // counted as when it is alone.
                for o in &members {
                    let _ = operations_of(o, logged, &mut self.left);
                }
                self.tally
                    .transaction(&members, logged, self.by, &mut self.left);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use mongodb::bson::{doc, Document};

    use super::*;

    fn entry(ts: i64, conn: u32, command: Document) -> Observed {
        Observed {
            ts_ms: ts,
            db: "shop".into(),
            coll: "orders".into(),
            op_type: "command".into(),
            command,
            millis: 1.0,
            conn: Some(format!("conn{conn}")),
            ..Default::default()
        }
    }

    /// Transaction `n` of session `s`: its first statement, an update, a commit.
    fn transaction(ts: i64, s: u32, n: i64) -> Vec<Observed> {
        let t = |mut d: Document| {
            d.extend(doc! { "lsid": { "id": s }, "txnNumber": n, "autocommit": false });
            d
        };
        let mut statement = entry(
            ts + 1,
            s,
            doc! { "q": { "_id": n }, "u": { "$inc": { "n": 1 } } },
        );
        statement.op_type = "update".into();
        vec![
            entry(
                ts,
                s,
                t(doc! { "find": "orders", "filter": { "_id": n }, "startTransaction": true }),
            ),
            statement,
            entry(ts + 2, s, t(doc! { "update": "orders" })),
            entry(ts + 3, s, t(doc! { "commitTransaction": 1 })),
        ]
    }

    #[test]
    fn a_long_source_is_counted_holding_only_seconds_of_it() {
        // 60 s at 1,000 entries/s: finds, and transactions of a find, a statement logged apart,
        // its update command and the commit, on 8 connections.
        let mut c = Collector::new(GroupBy::App);
        let (mut finds, mut txns) = (0, 0);
        for ms in 0..60_000_i64 {
            if ms % 10 == 0 {
                let conn = u32::try_from(ms / 10 % 8).unwrap() + 100;
                for o in transaction(ms, conn, ms) {
                    c.take(o);
                }
                txns += 1;
            } else if ms % 10 > 4 {
                c.take(entry(
                    ms,
                    1,
                    doc! { "find": "orders", "filter": { "a": ms % 7 } },
                ));
                finds += 1;
            }
        }
        c.finish();
        assert_eq!(c.entries(), finds + 4 * txns);
        assert_eq!(
            c.tally.operations,
            finds + txns,
            "each transaction is one operation"
        );
        assert_eq!(c.left.transactions, txns);
        assert_eq!((c.grouper.partial, c.grouper.aborted), (0, 0));
        // The statement line is the step; its command line counts for nothing, as mongod logs both.
        assert_eq!(c.left.double_logged, txns);
        // At most a few seconds of entries (REORDER_MS + SETTLE_MS at 1,000 a second), of 60 s.
        assert!(c.most_held < 8_000, "held {} entries at once", c.most_held);
        let find = c.tally.seen.iter().find(|s| s.txn.is_none()).unwrap();
        assert_eq!(find.count, finds);
        assert_eq!(
            find.values[0].len(),
            VALUES_KEPT,
            "a reservoir of the values"
        );
        assert_eq!(find.times.len(), VALUES_KEPT);
        // The sample keeps the values' shares: 7 values, each about a seventh.
        let sixes = find.values[0]
            .iter()
            .filter(|v| **v == mongodb::bson::Bson::Int64(6))
            .count();
        let share = crate::num::real_len(sixes) / crate::num::real_len(VALUES_KEPT);
        assert!((share - 1.0 / 7.0).abs() < 0.02, "value 6's share {share}");
    }

    #[test]
    fn entries_a_little_out_of_order_are_counted_in_order() {
        // The same transactions, given newest-first within each second: grouped the same.
        let mut all: Vec<Observed> = (0..50).flat_map(|i| transaction(i * 40, 7, i)).collect();
        for chunk in all.chunks_mut(25) {
            chunk.reverse();
        }
        let c = {
            let mut c = Collector::of(&all, GroupBy::App);
            c.finish();
            c
        };
        assert_eq!(c.left.transactions, 50);
        assert_eq!(c.grouper.partial, 0);
    }

    #[test]
    fn update_commands_wait_until_the_source_shows_whether_statements_are_logged_apart() {
        // A command line first, its statement line later (within the reorder window, as mongod
        // writes them the other way round): the command counts for nothing, the statement once.
        let mut command = entry(
            10,
            1,
            doc! { "update": "orders", "updates": [{ "q": { "_id": 1 }, "u": {} }] },
        );
        command.op_type = "command".into();
        let mut statement = entry(11, 1, doc! { "q": { "_id": 1 }, "u": {} });
        statement.op_type = "update".into();
        let mut c = Collector::of(&[command.clone(), statement], GroupBy::App);
        c.finish();
        assert_eq!((c.tally.operations, c.left.double_logged), (1, 1));
        // A source that never logs statements apart: every command counts.
        let mut c = Collector::of(&[command.clone(), command], GroupBy::App);
        c.finish();
        assert_eq!((c.tally.operations, c.left.double_logged), (2, 0));
    }
}
