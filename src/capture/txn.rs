//! Transactions: the observed statements grouped by session (`lsid.id`) and transaction number.
//! A transaction is complete when its first statement (`startTransaction: true`) was seen, it
//! was not aborted, its `commitTransaction` was seen where the source shows commits (a log; the
//! profiler of a database never does, they run on `admin`), and no statement the source did not
//! tie to a session ran on its connection (where the source names none, its client) while it was
//! the connection's open transaction, at most UNTIED_GRACE_MS after its last statement seen. Complete transactions
//! become a transaction of steps; the statements of the others are captured one by one.
//!
//! A statement logged apart from its command (mongod logs an update's or a delete's statements
//! on lines of their own, without the session) takes the session of the command line that
//! follows it on the same connection.

use std::collections::{BTreeMap, HashMap};

use mongodb::bson::{Bson, Document};

use super::{as_i64, Observed};

/// The transactions of a capture.
#[derive(Debug, Default)]
pub(crate) struct Txns {
    /// Each complete transaction's observed entries (indices into the source's list), in order.
    pub(crate) complete: Vec<Vec<usize>>,
    /// Observed index -> its complete transaction.
    pub(crate) member: HashMap<usize, usize>,
    /// Transactions seen only in part (no first statement, no commit, or a statement not tied
    /// to its session beside them).
    pub(crate) partial: u64,
    pub(crate) aborted: u64,
    /// The source showed `commitTransaction` or `abortTransaction` lines.
    pub(crate) commits_visible: bool,
}

/// How long after a transaction's last statement seen a statement without its session on the
/// same connection may still be one of its own (the profiler shows no commit to end it).
const UNTIED_GRACE_MS: i64 = 1000;

#[derive(Default)]
struct Open {
    members: Vec<usize>,
    start: bool,
    commit: bool,
    abort: bool,
    /// When its last statement seen ended.
    last_ms: i64,
}

/// `lsid.id` and the transaction number of an entry, from its command or, where the source
/// gives them beside it, the entry's own fields.
fn session(o: &Observed) -> Option<(String, i64)> {
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
fn is_statement(o: &Observed) -> bool {
    matches!(o.op_type.as_str(), "update" | "remove" | "delete") && o.command.contains_key("q")
}

fn conn(o: &Observed) -> String {
    o.conn
        .clone()
        .or_else(|| o.client.clone())
        .unwrap_or_default()
}

/// The transactions seen whole (each its members in time order), apart from those aborted and
/// those partial: not started in the window, not committed where commits are seen, or with a
/// statement no session could be given.
fn sorted(
    observed: &[Observed],
    open: BTreeMap<(String, i64), Open>,
    untied: &std::collections::HashSet<(String, i64)>,
    commits_visible: bool,
) -> Txns {
    let mut out = Txns {
        commits_visible,
        ..Default::default()
    };
    for (k, mut t) in open {
        if t.abort {
            out.aborted += 1;
            continue;
        }
        if !t.start || (commits_visible && !t.commit) || untied.contains(&k) {
            out.partial += 1;
            continue;
        }
        t.members.sort_by_key(|&i| (observed[i].ts_ms, i));
        let n = out.complete.len();
        for &i in &t.members {
            out.member.insert(i, n);
        }
        out.complete.push(t.members);
    }
    out
}

/// Groups the observed entries' transactions.
pub(crate) fn group(observed: &[Observed]) -> Txns {
    let mut order: Vec<usize> = (0..observed.len()).collect();
    order.sort_by_key(|&i| observed[i].ts_ms);
    let mut open: BTreeMap<(String, i64), Open> = BTreeMap::new();
    // Statements waiting for their command line, per connection.
    let mut pending: HashMap<String, Vec<usize>> = HashMap::new();
    // Per connection, the transaction its last entry belonged to while open; a statement no
    // session could be given there makes that transaction partial.
    let mut current: HashMap<String, (String, i64)> = HashMap::new();
    let mut untied: std::collections::HashSet<(String, i64)> = Default::default();
    // Statements with a session of their own but no `autocommit` (placed once all is read).
    let mut keyed: Vec<(usize, (String, i64))> = Vec::new();
    let mut commits_visible = false;
    let add = |open: &mut BTreeMap<(String, i64), Open>, k: &(String, i64), i: usize| {
        let t = open.entry(k.clone()).or_default();
        t.members.push(i);
        t.last_ms = t.last_ms.max(observed[i].ts_ms);
    };
    // The connection's open transaction, if a statement at `ms` may still be one of its own.
    let open_at = |open: &BTreeMap<(String, i64), Open>,
                   current: &HashMap<String, (String, i64)>,
                   c: &str,
                   ms: i64| {
        current
            .get(c)
            .filter(|k| {
                open.get(*k)
                    .is_some_and(|t| ms <= t.last_ms + UNTIED_GRACE_MS)
            })
            .cloned()
    };
    for &i in &order {
        let o = &observed[i];
        let c = conn(o);
        let k = session(o);
        let in_txn = o.command.get_bool("autocommit") == Ok(false);
        if is_statement(o) && !in_txn {
            match k {
                Some(k) => keyed.push((i, k)),
                None => pending.entry(c).or_default().push(i),
            }
            continue;
        }
        let waiting = pending.remove(&c).unwrap_or_default();
        let name = o.command.keys().next().map(String::as_str).unwrap_or("");
        let statements_of_this = matches!(name, "update" | "delete");
        // The statements' own command line ties them (to its transaction, or to none).
        if !statements_of_this {
            for &s in &waiting {
                let ms = observed[s].ts_ms - crate::num::whole_signed(observed[s].millis.ceil());
                untied.extend(open_at(&open, &current, &c, ms));
            }
        }
        if let (Some(k), true) = (&k, in_txn) {
            if statements_of_this {
                for &s in &waiting {
                    add(&mut open, k, s);
                }
            }
            add(&mut open, k, i);
            current.insert(c.clone(), k.clone());
            let t = open.get_mut(k).expect("just added");
            match name {
                "commitTransaction" => {
                    t.commit = true;
                    commits_visible = true;
                    current.remove(&c);
                }
                "abortTransaction" => {
                    t.abort = true;
                    commits_visible = true;
                    current.remove(&c);
                }
                _ => {}
            }
            if o.command.get_bool("startTransaction") == Ok(true) {
                t.start = true;
            }
        }
    }
    for (c, left) in pending {
        for s in left {
            let ms = observed[s].ts_ms - crate::num::whole_signed(observed[s].millis.ceil());
            untied.extend(open_at(&open, &current, &c, ms));
        }
    }
    for (i, k) in keyed {
        if open.contains_key(&k) {
            add(&mut open, &k, i);
        }
    }
    sorted(observed, open, &untied, commits_visible)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

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
}
