//! The tally: each observed operation filed under its shape and namespace, with its times,
//! sizes and values, and what the source says of transactions and the window.

use super::*;

/// The observations of one shape.
pub(super) struct Seen {
    pub(super) db: String,
    pub(super) coll: String,
    pub(super) op: Op,
    pub(super) count: u64,
    pub(super) millis: Vec<f64>,
    pub(super) plans: BTreeMap<String, u64>,
    pub(super) keys_examined: i64,
    pub(super) docs_examined: i64,
    pub(super) returned: i64,
    pub(super) examined_known: bool,
    /// Documents returned (the source's `nreturned`), added over the `nreturned_n` operations
    /// that said.
    pub(super) nreturned: i64,
    pub(super) nreturned_n: u64,
    /// Per slot, the values of up to `VALUES_KEPT` operations drawn evenly over the window (a
    /// reservoir: every operation while there are no more), and each such operation's time.
    pub(super) values: Vec<Vec<Bson>>,
    pub(super) times: Vec<i64>,
    pub(super) group: String,
    pub(super) conns: BTreeSet<String>,
    pub(super) intervals: Vec<(i64, i64)>,
    /// A step of a transaction's shape.
    pub(super) txn: Option<Step>,
    /// Up to `EXAMPLES` of a read's commands as the source received them, drawn evenly over
    /// the window (a reservoir): what capture's check sends the source again.
    pub(super) examples: Vec<Document>,
}

/// Commands of each read kept for the check.
pub(super) const EXAMPLES: usize = 100;

/// Cursors remembered for the getMores that continue them (at least this many of the newest).
const CURSORS: usize = 50_000;

/// Operations of each shape whose slot values are kept: how often each value was asked for is
/// read from them (a uniform sample of the operations), so a long capture holds no more.
pub(crate) const VALUES_KEPT: usize = 10_000;

/// Where a shape stands in a transaction.
#[derive(Debug, Clone)]
pub(super) struct Step {
    /// The transaction's shape: its group and every step's namespace and shape.
    pub(super) unit: String,
    pub(super) pos: usize,
    pub(super) of: usize,
}

impl Seen {
    /// What is emitted or left out as one: a transaction's shape, or the operation's.
    pub(super) fn unit(&self) -> String {
        match &self.txn {
            Some(t) => t.unit.clone(),
            None => self.op.key(),
        }
    }

    pub(super) fn pos(&self) -> usize {
        self.txn.as_ref().map_or(0, |t| t.pos)
    }

    /// The source's durations, in order.
    pub(super) fn sorted_ms(&self) -> Vec<f64> {
        let mut ms = self.millis.clone();
        ms.sort_by(f64::total_cmp);
        ms
    }

    /// The plan the source named most often.
    pub(super) fn plan(&self) -> Option<&String> {
        self.plans.iter().max_by_key(|p| p.1).map(|p| p.0)
    }
}

/// The value at fraction `p` of sorted values (nearest rank), 0 when there are none.
pub(super) fn quantile(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(crate::num::whole_len(
            (crate::num::real_len(sorted.len()) - 1.0) * p,
        ))
        .copied()
        .unwrap_or(0.0)
}

/// Counts one operation of shape `key` (made at its first).
pub(super) fn record(
    seen: &mut Vec<Seen>,
    index: &mut HashMap<String, usize>,
    key: String,
    o: &Observed,
    op: Op,
    group: &str,
    txn: Option<Step>,
) {
    let i = *index.entry(key).or_insert_with(|| {
        seen.push(Seen {
            db: o.db.clone(),
            coll: o.coll.clone(),
            values: vec![Vec::new(); op.values.len()],
            op: op.clone(),
            count: 0,
            millis: Vec::new(),
            plans: BTreeMap::new(),
            keys_examined: 0,
            docs_examined: 0,
            returned: 0,
            examined_known: false,
            nreturned: 0,
            nreturned_n: 0,
            times: Vec::new(),
            group: group.to_string(),
            conns: BTreeSet::new(),
            intervals: Vec::new(),
            txn,
            examples: Vec::new(),
        });
        seen.len() - 1
    });
    let s = &mut seen[i];
    s.count += 1;
    let read = matches!(
        op.verb,
        crate::workload::command::Verb::Find
            | crate::workload::command::Verb::FindOne
            | crate::workload::command::Verb::Aggregate
            | crate::workload::command::Verb::CountDocuments
    );
    // Where this operation goes in the reservoirs once they are full: a place drawn over every
    // operation so far, kept when it falls within the reservoir (Vitter's algorithm R).
    let place = {
        use rand::{Rng, SeedableRng};
        let j = rand::rngs::SmallRng::seed_from_u64(s.count).random_range(0..s.count);
        usize::try_from(j).unwrap_or(usize::MAX)
    };
    if read && !o.truncated {
        if s.examples.len() < EXAMPLES {
            s.examples.push(o.command.clone());
        } else if let Some(slot) = s.examples.get_mut(place) {
            *slot = o.command.clone();
        }
    }
    s.millis.push(o.millis);
    if let Some(p) = &o.plan {
        *s.plans.entry(p.clone()).or_default() += 1;
    }
    if let (Some(k), Some(d), Some(r)) = (o.keys_examined, o.docs_examined, o.nreturned) {
        s.examined_known = true;
        s.keys_examined += k;
        s.docs_examined += d;
        s.returned += r;
    }
    if let Some(r) = o.nreturned {
        s.nreturned += r;
        s.nreturned_n += 1;
    }
    if s.times.len() < VALUES_KEPT {
        for (slot, v) in op.values.into_iter().enumerate() {
            if let Some(vs) = s.values.get_mut(slot) {
                vs.push(v);
            }
        }
        s.times.push(o.ts_ms);
    } else if place < VALUES_KEPT {
        for (slot, v) in op.values.into_iter().enumerate() {
            if let Some(x) = s.values.get_mut(slot).and_then(|vs| vs.get_mut(place)) {
                *x = v;
            }
        }
        if let Some(t) = s.times.get_mut(place) {
            *t = o.ts_ms;
        }
    }
    if let Some(c) = o.conn.as_ref().or(o.client.as_ref()) {
        s.conns.insert(c.clone());
    }
    s.intervals
        .push((o.ts_ms - crate::num::whole_signed(o.millis.ceil()), o.ts_ms));
}

/// The thread group an operation belongs to.
pub(super) fn group_of(o: &Observed, by: GroupBy) -> String {
    match by {
        GroupBy::App => o
            .app
            .clone()
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| "app".into()),
        GroupBy::Namespace => format!("{}.{}", o.db, o.coll),
        GroupBy::None => "all".into(),
    }
}

/// The operations of the profile an observed entry holds, or None when it is left out (counted
/// in `left` by why).
pub(super) fn operations_of(
    o: &Observed,
    statements_logged: bool,
    left: &mut LeftOut,
) -> Option<Vec<Op>> {
    if o.truncated {
        left.truncated += 1;
    }
    match shape::classify(o, statements_logged) {
        Class::Ops(ops) => Some(ops),
        Class::GetMore => {
            left.getmore_folded += 1;
            None
        }
        Class::Driver(n) => {
            *left.driver.entry(n).or_default() += 1;
            None
        }
        Class::TransactionControl => {
            left.transaction_control += 1;
            None
        }
        Class::Other(n) => {
            *left.other.entry(n).or_default() += 1;
            None
        }
        Class::DoubleLogged => {
            left.double_logged += 1;
            None
        }
    }
}

/// The shapes seen so far, the first and last time of an operation, and how many operations.
pub(super) struct Tally {
    pub(super) seen: Vec<Seen>,
    pub(super) index: HashMap<String, usize>,
    /// Open cursors: id -> the shape whose operation opened it; the newest CURSORS, and up to
    /// as many before them (a capture does not keep every cursor it ever saw).
    pub(super) cursors: HashMap<i64, usize>,
    pub(super) older_cursors: HashMap<i64, usize>,
    pub(super) first: i64,
    pub(super) last: i64,
    pub(super) operations: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            seen: Vec::new(),
            index: HashMap::new(),
            cursors: HashMap::new(),
            older_cursors: HashMap::new(),
            first: i64::MAX,
            last: i64::MIN,
            operations: 0,
        }
    }
}

impl Tally {
    /// Counts an entry on its own (or folds a getMore into the operation that opened its
    /// cursor).
    pub(super) fn alone(
        &mut self,
        o: &Observed,
        statements_logged: bool,
        by: GroupBy,
        left: &mut LeftOut,
    ) {
        let Some(ops) = operations_of(o, statements_logged, left) else {
            self.getmore(o);
            return;
        };
        self.widen(o.ts_ms);
        let group = group_of(o, by);
        for op in ops {
            self.one(o, op, &group);
        }
    }

    /// Takes `ts_ms` into the window from the first operation to the last.
    pub(super) fn widen(&mut self, ts_ms: i64) {
        self.first = self.first.min(ts_ms);
        self.last = self.last.max(ts_ms);
    }

    /// Counts one operation on its own.
    pub(super) fn one(&mut self, o: &Observed, op: Op, group: &str) {
        self.operations += 1;
        let key = format!("{}.{} {} {}", o.db, o.coll, group, op.key());
        record(
            &mut self.seen,
            &mut self.index,
            key.clone(),
            o,
            op,
            group,
            None,
        );
        if let (Some(c), Some(&i)) = (o.cursor_id, self.index.get(&key)) {
            if self.cursors.len() >= CURSORS {
                self.older_cursors = std::mem::take(&mut self.cursors);
            }
            self.cursors.insert(c, i);
        }
    }

    /// A getMore's documents count for the operation that opened its cursor (folded into it:
    /// `run` reads every cursor to its end).
    pub(super) fn getmore(&mut self, o: &Observed) {
        if o.op_type != "getmore" && !o.command.contains_key("getMore") {
            return;
        }
        let (Some(c), Some(n)) = (o.cursor_id, o.nreturned) else {
            return;
        };
        let opened = self.cursors.get(&c).or_else(|| self.older_cursors.get(&c));
        if let Some(s) = opened.and_then(|&i| self.seen.get_mut(i)) {
            s.nreturned += n;
        }
    }

    /// Counts one complete transaction (its entries, in order).
    pub(super) fn transaction(
        &mut self,
        members: &[Observed],
        statements_logged: bool,
        by: GroupBy,
        left: &mut LeftOut,
    ) {
        let steps: Vec<(&Observed, Op)> = members
            .iter()
            .filter_map(|o| match shape::classify(o, statements_logged) {
                Class::Ops(ops) => Some(ops.into_iter().map(move |op| (o, op))),
                _ => None,
            })
            .flatten()
            .collect();
        let Some((head, _)) = steps.first() else {
            return;
        };
        let group = group_of(head, by);
        if steps.iter().any(|(o, _)| o.db != head.db) {
            // A profile runs on one database: such a transaction's statements one by one.
            left.partial_transactions += 1;
            for (o, op) in steps {
                self.one(o, op, &group);
            }
            return;
        }
        self.operations += 1;
        left.transactions += 1;
        let unit = steps
            .iter()
            .map(|(o, op)| format!("{}.{} {}", o.db, o.coll, op.key()))
            .collect::<Vec<_>>()
            .join(" ; ");
        let unit = format!("{group} {unit}");
        let of = steps.len();
        for (pos, (o, op)) in steps.into_iter().enumerate() {
            self.widen(o.ts_ms);
            let key = format!("transaction {unit} #{pos}");
            let step = Step {
                unit: unit.clone(),
                pos,
                of,
            };
            record(
                &mut self.seen,
                &mut self.index,
                key,
                o,
                op,
                &group,
                Some(step),
            );
        }
    }
}

/// What the source cannot show of transactions, said once.
pub(super) fn transaction_notes(commits_visible: bool, left: &LeftOut) -> Vec<String> {
    let mut blind = Vec::new();
    if !commits_visible && left.transactions + left.partial_transactions > 0 {
        blind.push("the source shows no commitTransaction (a database's profiler never does: commits run on admin): a transaction whose first statement was seen is taken as committed, and one the window cut may lack its last statements".to_string());
    }
    if left.partial_transactions > 0 {
        blind.push(format!("{} transactions were seen only in part (their first statement or commit outside the window, or a statement entry without its session beside them, as secantusd-rs's profiler writes an update's or a delete's statements): their statements are captured one by one", left.partial_transactions));
    }
    blind
}

/// The window's length in seconds from the first operation to the last, at least 1.
pub(super) fn window_between(first: i64, last: i64) -> f64 {
    if first <= last {
        (crate::num::real_signed(last - first) / 1000.0).max(1.0)
    } else {
        1.0
    }
}

/// The database with the most operations: the one the profile is for.
pub(super) fn main_database(seen: &[Seen]) -> Option<String> {
    let mut per_db: BTreeMap<&str, u64> = BTreeMap::new();
    for s in seen.iter().filter(|s| s.pos() == 0) {
        *per_db.entry(&s.db).or_default() += s.count;
    }
    per_db
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(d, _)| d.to_string())
}
