//! Transactions: the observed statements grouped by session (`lsid.id`) and transaction number,
//! as the source gives them (in time order). A transaction is complete when its first statement
//! (`startTransaction: true`) was seen, it was not aborted, its `commitTransaction` was seen where
//! the source shows commits (a log; the profiler of a database never does, they run on `admin`),
//! and no statement the source did not tie to a session ran on its connection (where the source
//! names none, its client) while it was the connection's open transaction, at most
//! UNTIED_GRACE_MS after its last statement seen. Complete transactions become a transaction of
//! steps; the statements of the others are captured one by one.
//!
//! A statement logged apart from its command (mongod logs an update's or a delete's statements
//! on lines of their own, without the session) takes the session of the command line that
//! follows it on the same connection.
//!
//! Only what may still belong to a transaction is held: its entries until SETTLE_MS of the
//! source's time passed after its last one (or the end), a statement until its connection's next
//! command line (at most SETTLE_MS). Everything else is released at once, so a capture's memory
//! does not grow with its length. A statement that ends more than SETTLE_MS after a transaction
//! it may belong to is taken as not of it.

use std::collections::HashMap;

use mongodb::bson::{Bson, Document};

use super::{as_i64, Observed};

/// An observed entry with its place in the source (for ties of time).
pub(crate) type Entry = (u64, Box<Observed>);

/// What the grouper gives back, once it is known.
#[derive(Debug)]
pub(crate) enum Released {
    /// An entry on its own: in no transaction, or in one not seen whole.
    Alone(Entry),
    /// A complete transaction's entries, in time order.
    Whole(Vec<Entry>),
}

/// How long after a transaction's last statement seen a statement without its session on the
/// same connection may still be one of its own (the profiler shows no commit to end it).
const UNTIED_GRACE_MS: i64 = 1000;

/// How long (the source's time) an entry that may belong to a transaction is held after the
/// transaction's last one.
pub(crate) const SETTLE_MS: i64 = 5000;

/// A transaction's key: `lsid.id` as text, and the transaction number.
type Key = (String, i64);

#[derive(Default)]
struct Open {
    members: Vec<Entry>,
    start: bool,
    commit: bool,
    abort: bool,
    /// A statement no session could be given ran on its connection while it was open.
    untied: bool,
    /// When its last statement seen ended.
    last_ms: i64,
}

/// The transactions seen so far, and what is held until it is known whether it is theirs.
#[derive(Default)]
pub(crate) struct Grouper {
    open: HashMap<Key, Open>,
    /// Statements waiting for their command line, per connection.
    pending: HashMap<String, Vec<Entry>>,
    /// Per connection, the transaction its last entry belonged to while open; a statement no
    /// session could be given there makes that transaction partial.
    current: HashMap<String, Key>,
    /// Statements with a session of their own but no `autocommit`, whose transaction has not
    /// been seen (yet).
    keyed: HashMap<Key, Vec<Entry>>,
    /// The newest time seen, and when what is held was last looked over.
    now_ms: i64,
    swept_ms: i64,
    /// Transactions seen only in part (no first statement, no commit, or a statement not tied
    /// to its session beside them).
    pub(crate) partial: u64,
    pub(crate) aborted: u64,
    /// The source showed `commitTransaction` or `abortTransaction` lines.
    pub(crate) commits_visible: bool,
    /// The most entries held at a sweep.
    pub(crate) most_held: usize,
    /// Transactions whole but for a commit, while the source has shown none: partial if it
    /// shows one later, whole if it never does (or after UNDECIDED of them).
    uncommitted: Vec<Vec<Entry>>,
    /// UNDECIDED transactions came without any commit shown: the source shows none.
    commits_hidden: bool,
}

/// Transactions held whole but for their commit before the source is taken to show none.
const UNDECIDED: usize = 10_000;

/// `lsid.id` and the transaction number of an entry, from its command or, where the source
/// gives them beside it, the entry's own fields.
fn session(o: &Observed) -> Option<Key> {
    let from = |d: &Document| {
        let id = match d.get("lsid")? {
            Bson::Document(l) => l.get("id").unwrap_or(&Bson::Null).to_string(),
            other => other.to_string(),
        };
        Some((id, d.get("txnNumber").and_then(as_i64)?))
    };
    from(&o.command).or_else(|| o.session.as_ref().and_then(from))
}

/// An update's or a delete's statement on a line of its own.
pub(crate) fn is_statement(o: &Observed) -> bool {
    matches!(o.op_type.as_str(), "update" | "remove" | "delete") && o.command.contains_key("q")
}

fn conn(o: &Observed) -> String {
    o.conn
        .clone()
        .or_else(|| o.client.clone())
        .unwrap_or_default()
}

/// When a statement began (its end less its duration).
fn began(o: &Observed) -> i64 {
    o.ts_ms - crate::num::whole_signed(o.millis.ceil())
}

impl Grouper {
    /// Takes the next entry (in time order); what became known goes to `out`.
    pub(crate) fn push(&mut self, e: Entry, out: &mut Vec<Released>) {
        // The time of the entry at hand (they come in order; a clock stepped back moves it back).
        self.now_ms = e.1.ts_ms;
        let o = &e.1;
        let c = conn(o);
        let k = session(o);
        let in_txn = o.command.get_bool("autocommit") == Ok(false);
        if is_statement(o) && !in_txn {
            match k {
                Some(k) => match self.open.get_mut(&k) {
                    Some(t) => t.members.push(e),
                    None => self.keyed.entry(k).or_default().push(e),
                },
                None => self.pending.entry(c).or_default().push(e),
            }
            self.sweep(out);
            return;
        }
        let mut waiting = self.pending.remove(&c).unwrap_or_default();
        let name = o.command.keys().next().map(String::as_str).unwrap_or("");
        let statements_of_this = matches!(name, "update" | "delete");
        let joins = statements_of_this && in_txn && k.is_some();
        if !joins {
            // The statements' own command line ties them to none, or another command ran on
            // the connection after them: they are on their own, and untie the connection's open
            // transaction when they ran while it was.
            if !statements_of_this {
                for s in &waiting {
                    self.untie(&c, began(&s.1));
                }
            }
            out.extend(
                std::mem::take(&mut waiting)
                    .into_iter()
                    .map(Released::Alone),
            );
        }
        match (k, in_txn) {
            (Some(k), true) => {
                let name = name.to_string();
                let start = o.command.get_bool("startTransaction") == Ok(true);
                let t = self.open.entry(k.clone()).or_default();
                if joins {
                    for s in waiting {
                        add(t, s);
                    }
                }
                add(t, e);
                // Statements that carry this session, seen before it (not its last entry).
                t.members.extend(self.keyed.remove(&k).unwrap_or_default());
                t.start |= start;
                match name.as_str() {
                    "commitTransaction" => {
                        t.commit = true;
                        self.current.remove(&c);
                        self.commits_shown(out);
                    }
                    "abortTransaction" => {
                        t.abort = true;
                        self.current.remove(&c);
                        self.commits_shown(out);
                    }
                    _ => {
                        self.current.insert(c, k);
                    }
                }
            }
            _ => out.push(Released::Alone(e)),
        }
        self.sweep(out);
    }

    /// Everything still held, now that the source ended; the counts stay readable.
    pub(crate) fn finish(&mut self, out: &mut Vec<Released>) {
        self.now_ms = i64::MAX;
        self.swept_ms = i64::MIN;
        self.sweep(out);
        // The source never showed a commit: those waiting for one are whole.
        out.extend(self.uncommitted.drain(..).map(Released::Whole));
    }

    /// The source shows commits: the transactions that waited for theirs are partial.
    fn commits_shown(&mut self, out: &mut Vec<Released>) {
        self.commits_visible = true;
        for members in self.uncommitted.drain(..) {
            self.partial += 1;
            out.extend(members.into_iter().map(Released::Alone));
        }
    }

    /// The connection's open transaction, if a statement that began at `ms` may still be one of
    /// its own, is not whole.
    fn untie(&mut self, c: &str, ms: i64) {
        if let Some(t) = self
            .current
            .get(c)
            .and_then(|k| self.open.get_mut(k))
            .filter(|t| ms <= t.last_ms + UNTIED_GRACE_MS)
        {
            t.untied = true;
        }
    }

    /// Releases what has been held SETTLE_MS past its last entry (every tenth of a second of
    /// the source's time, so that holding many costs little), in the source's order.
    fn sweep(&mut self, out: &mut Vec<Released>) {
        if self.now_ms.abs_diff(self.swept_ms) < 100 {
            return;
        }
        self.swept_ms = self.now_ms;
        let held = self.open.values().map(|t| t.members.len()).sum::<usize>()
            + self.pending.values().map(Vec::len).sum::<usize>()
            + self.keyed.values().map(Vec::len).sum::<usize>()
            + self.uncommitted.iter().map(Vec::len).sum::<usize>();
        self.most_held = self.most_held.max(held);
        let cutoff = self.now_ms.saturating_sub(SETTLE_MS);
        let mut released = Vec::new();
        // Statements no command line followed: on their own, untying what they ran in.
        let mut stale: Vec<(String, Vec<Entry>)> = Vec::new();
        for (c, list) in &mut self.pending {
            if list.iter().any(|s| s.1.ts_ms < cutoff) {
                let (old, keep): (Vec<Entry>, Vec<Entry>) = std::mem::take(list)
                    .into_iter()
                    .partition(|s| s.1.ts_ms < cutoff);
                *list = keep;
                stale.push((c.clone(), old));
            }
        }
        self.pending.retain(|_, l| !l.is_empty());
        for (c, old) in stale {
            for s in &old {
                self.untie(&c, began(&s.1));
            }
            released.extend(old.into_iter().map(Released::Alone));
        }
        self.keyed.retain(|_, list| {
            if list.iter().all(|s| s.1.ts_ms < cutoff) {
                released.extend(std::mem::take(list).into_iter().map(Released::Alone));
                false
            } else {
                true
            }
        });
        // A transaction whose connection still holds a statement that began within its grace
        // and waits for its command line waits too: that statement may untie it.
        let waiting: std::collections::HashSet<&Key> = self
            .pending
            .iter()
            .filter_map(|(c, list)| {
                let k = self.current.get(c)?;
                let t = self.open.get(k)?;
                list.iter()
                    .any(|s| began(&s.1) <= t.last_ms + UNTIED_GRACE_MS)
                    .then_some(k)
            })
            .collect();
        let mut done: Vec<Key> = self
            .open
            .iter()
            .filter(|(k, t)| t.last_ms < cutoff && !waiting.contains(k))
            .map(|(k, _)| k.clone())
            .collect();
        done.sort();
        for k in done {
            let Some(mut t) = self.open.remove(&k) else {
                continue;
            };
            self.current.retain(|_, v| *v != k);
            if t.abort {
                self.aborted += 1;
                released.extend(t.members.into_iter().map(Released::Alone));
            } else if !t.start || (self.commits_visible && !t.commit) || t.untied {
                self.partial += 1;
                released.extend(t.members.into_iter().map(Released::Alone));
            } else {
                t.members.sort_by_key(|m| (m.1.ts_ms, m.0));
                if t.commit || self.commits_hidden {
                    released.push(Released::Whole(t.members));
                } else {
                    self.uncommitted.push(t.members);
                }
            }
        }
        if self.uncommitted.len() > UNDECIDED {
            self.commits_hidden = true;
            released.extend(self.uncommitted.drain(..).map(Released::Whole));
        }
        released.sort_by_key(Released::place);
        out.extend(released);
    }
}

impl Released {
    /// Where it stands in the source: its (first) entry's time and place.
    fn place(&self) -> (i64, u64) {
        match self {
            Released::Alone(e) => (e.1.ts_ms, e.0),
            Released::Whole(m) => m.first().map_or((i64::MAX, u64::MAX), |e| (e.1.ts_ms, e.0)),
        }
    }
}

/// Adds an entry to its transaction.
fn add(t: &mut Open, e: Entry) {
    t.last_ms = t.last_ms.max(e.1.ts_ms);
    t.members.push(e);
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    /// What the grouper made of `log` (given in time order, as the capture's buffer gives it):
    /// the complete transactions as indices into `log`.
    struct Grouped {
        complete: Vec<Vec<u64>>,
        partial: u64,
        aborted: u64,
        commits_visible: bool,
        alone: usize,
    }

    fn group(log: &[Observed]) -> Grouped {
        let mut order: Vec<Entry> = log
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, o)| (i as u64, Box::new(o)))
            .collect();
        order.sort_by_key(|e| (e.1.ts_ms, e.0));
        let mut g = Grouper::default();
        let mut out = Vec::new();
        for e in order {
            g.push(e, &mut out);
        }
        g.finish(&mut out);
        let mut complete = Vec::new();
        let mut alone = 0;
        for r in out {
            match r {
                Released::Whole(m) => complete.push(m.iter().map(|e| e.0).collect()),
                Released::Alone(_) => alone += 1,
            }
        }
        complete.sort();
        let g = Grouped {
            complete,
            partial: g.partial,
            aborted: g.aborted,
            commits_visible: g.commits_visible,
            alone,
        };
        assert_eq!(
            g.alone + g.complete.iter().map(Vec::len).sum::<usize>(),
            log.len(),
            "every entry is released once"
        );
        g
    }

    fn entry(ts: i64, conn: &str, op_type: &str, command: Document) -> Observed {
        Observed {
            ts_ms: ts,
            db: "shop".into(),
            coll: "orders".into(),
            op_type: op_type.into(),
            command,
            conn: Some(conn.into()),
            ..Default::default()
        }
    }

    /// `command` in transaction `n` of session `lsid`.
    fn txn(lsid: i32, n: i64, command: Document) -> Document {
        let mut d = command;
        d.extend(doc! { "lsid": { "id": lsid }, "txnNumber": n, "autocommit": false });
        d
    }

    #[test]
    fn a_logged_transaction_is_complete_with_its_statement_lines_and_commit() {
        let log = vec![
            entry(
                1,
                "conn1",
                "command",
                txn(
                    1,
                    5,
                    doc! { "insert": "customers", "startTransaction": true },
                ),
            ),
            entry(
                2,
                "conn1",
                "update",
                doc! { "q": { "_id": 1 }, "u": { "$inc": { "n": 1 } } },
            ),
            entry(
                3,
                "conn1",
                "command",
                txn(1, 5, doc! { "update": "orders" }),
            ),
            entry(
                4,
                "conn1",
                "command",
                txn(1, 5, doc! { "commitTransaction": 1 }),
            ),
            // A statement outside any transaction on another connection, meanwhile.
            entry(2, "conn2", "update", doc! { "q": { "_id": 2 }, "u": {} }),
            entry(3, "conn2", "command", doc! { "update": "orders" }),
        ];
        let t = group(&log);
        assert_eq!(t.complete, vec![vec![0, 1, 2, 3]]);
        assert_eq!((t.partial, t.aborted), (0, 0));
        assert!(t.commits_visible);
    }

    #[test]
    fn no_start_no_commit_an_abort_or_an_untied_statement_are_not_complete() {
        let log = vec![
            // No first statement.
            entry(1, "conn1", "command", txn(1, 1, doc! { "find": "orders" })),
            entry(
                2,
                "conn1",
                "command",
                txn(1, 1, doc! { "commitTransaction": 1 }),
            ),
            // No commit.
            entry(
                1,
                "conn2",
                "command",
                txn(2, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            // Aborted.
            entry(
                1,
                "conn3",
                "command",
                txn(3, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(
                2,
                "conn3",
                "command",
                txn(3, 1, doc! { "abortTransaction": 1 }),
            ),
            // A statement no command line followed, while the transaction was open.
            entry(
                1,
                "conn4",
                "command",
                txn(4, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(2, "conn4", "update", doc! { "q": { "_id": 1 }, "u": {} }),
            entry(
                3,
                "conn4",
                "command",
                txn(4, 1, doc! { "commitTransaction": 1 }),
            ),
        ];
        let t = group(&log);
        assert!(t.complete.is_empty(), "{:?}", t.complete);
        assert_eq!((t.partial, t.aborted), (3, 1));
    }

    #[test]
    fn a_statement_without_session_long_after_a_transaction_leaves_it_whole() {
        // The profiler names the client only; an updateMany a minute later is not the
        // transaction's, one a millisecond later may be.
        let log = vec![
            entry(
                1,
                "",
                "query",
                txn(1, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(
                60_000,
                "",
                "update",
                doc! { "q": {}, "u": {}, "multi": true },
            ),
            entry(60_001, "", "query", doc! { "find": "orders" }),
            entry(
                70_000,
                "",
                "query",
                txn(2, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(70_001, "", "update", doc! { "q": { "_id": 1 }, "u": {} }),
        ];
        let t = group(&log);
        assert_eq!(t.complete, vec![vec![0]]);
        assert_eq!(t.partial, 1);
    }

    #[test]
    fn without_commits_in_the_source_a_started_transaction_is_complete() {
        // The profiler: no commitTransaction (it runs on admin); a statement entry that carries
        // its session beside the command is placed in it.
        let mut statement = entry(2, "", "update", doc! { "q": { "_id": 1 }, "u": {} });
        statement.session = Some(doc! { "lsid": { "id": 7 }, "txnNumber": 3_i64 });
        let log = vec![
            entry(
                1,
                "",
                "query",
                txn(7, 3, doc! { "find": "orders", "startTransaction": true }),
            ),
            statement,
            entry(3, "", "insert", txn(7, 3, doc! { "insert": "customers" })),
        ];
        let t = group(&log);
        assert_eq!(t.complete, vec![vec![0, 1, 2]]);
        assert!(!t.commits_visible);
    }
    #[test]
    fn a_commit_shown_late_makes_the_earlier_transactions_without_one_partial() {
        // A log whose first slow commit comes a minute in: the transactions before it that show
        // none are partial, as every such transaction is where the source shows commits.
        let log = vec![
            entry(
                1,
                "conn1",
                "command",
                txn(1, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(
                60_000,
                "conn2",
                "command",
                txn(2, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(
                60_001,
                "conn2",
                "command",
                txn(2, 1, doc! { "commitTransaction": 1 }),
            ),
        ];
        let t = group(&log);
        assert_eq!(t.complete, vec![vec![1, 2]]);
        assert_eq!(t.partial, 1);
    }

    #[test]
    fn a_statement_that_waits_long_for_its_command_line_still_unties_its_transaction() {
        // The profiler (no connections, one client): a statement without its session 300 ms
        // after a transaction's last entry, then nothing on that client for a minute.
        let log = vec![
            entry(
                0,
                "",
                "query",
                txn(1, 1, doc! { "find": "orders", "startTransaction": true }),
            ),
            entry(300, "", "update", doc! { "q": {}, "u": {}, "multi": true }),
            entry(60_000, "other", "query", doc! { "find": "orders" }),
        ];
        let t = group(&log);
        assert!(t.complete.is_empty(), "{:?}", t.complete);
        assert_eq!(t.partial, 1);
    }
}
