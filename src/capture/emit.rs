//! The captured operations made into a profile and its account: shapes counted and ordered, the
//! fewest that cover the wanted share emitted as `[[group.ops]]`, fields fitted once per
//! collection, a `[[collection]]` per namespace with its indexes, document template and a
//! preload, a `[[group]]` per application (or namespace, or one) at the observed rate times the
//! scale; `shapes.tsv`, `capture.json` and the console's lines.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use mongodb::bson::{Bson, Document};
use serde::Serialize;
use toml::Value;

use super::fit;
use super::shape::{self, Class, Op, SlotKind};
use super::{CollectionInfo, GroupBy, LeftOut, Observed, Options};

/// One shape with what the source said of its operations.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ShapeStat {
    pub(crate) namespace: String,
    pub(crate) operation: &'static str,
    pub(crate) shape: String,
    pub(crate) count: u64,
    pub(crate) share: f64,
    pub(crate) ops_per_sec: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p95_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) plan: Option<String>,
    pub(crate) keys_per_returned: Option<f64>,
    pub(crate) docs_per_returned: Option<f64>,
    /// `group:name` when emitted, else why not.
    pub(crate) emitted: String,
    /// Documents the source returned per call (its `nreturned`), when it said.
    pub(crate) returned_per_call: Option<f64>,
    /// What the replay's reads return per call, measured by capture's check on a scratch
    /// server holding the profile's preload (None when not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replay_returned_per_call: Option<f64>,
    /// The fields the shape selects by (its filter's), for the check's advice.
    #[serde(skip)]
    pub(crate) selects_by: Vec<String>,
    /// It writes (kept whatever `--coverage` says; a line names it when left out).
    pub(crate) writes: bool,
}

/// The capture's result: the profile's text and its account.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Captured {
    pub(crate) source: String,
    pub(crate) first: Option<String>,
    pub(crate) last: Option<String>,
    pub(crate) window_s: f64,
    /// The window the source was read for (`--for`), when it had one: the operations' rates
    /// are over `window_s`, the span they were seen in.
    pub(crate) capture_window_s: Option<f64>,
    /// Operations of the kinds a profile sends (statements of updates and deletes one each).
    pub(crate) operations: u64,
    pub(crate) emitted_shapes: usize,
    /// Share of the operations the emitted shapes cover, 0..=1.
    pub(crate) coverage: f64,
    pub(crate) database: Option<String>,
    pub(crate) shapes: Vec<ShapeStat>,
    pub(crate) left_out: LeftOut,
    /// What the source cannot see, said once.
    pub(crate) blind: Vec<String>,
    pub(crate) scale: f64,
    #[serde(skip)]
    pub(crate) profile: String,
}

/// The observations of one shape.
struct Seen {
    db: String,
    coll: String,
    op: Op,
    count: u64,
    millis: Vec<f64>,
    plans: BTreeMap<String, u64>,
    keys_examined: i64,
    docs_examined: i64,
    returned: i64,
    examined_known: bool,
    /// Documents returned (the source's `nreturned`), added over the `nreturned_n` operations
    /// that said.
    nreturned: i64,
    nreturned_n: u64,
    /// Per slot, every value seen, and per operation its time.
    values: Vec<Vec<Bson>>,
    times: Vec<i64>,
    group: String,
    conns: BTreeSet<String>,
    intervals: Vec<(i64, i64)>,
    /// A step of a transaction's shape.
    txn: Option<Step>,
}

/// Where a shape stands in a transaction.
#[derive(Debug, Clone)]
struct Step {
    /// The transaction's shape: its group and every step's namespace and shape.
    unit: String,
    pos: usize,
    of: usize,
}

impl Seen {
    /// What is emitted or left out as one: a transaction's shape, or the operation's.
    fn unit(&self) -> String {
        match &self.txn {
            Some(t) => t.unit.clone(),
            None => self.op.key(),
        }
    }

    fn pos(&self) -> usize {
        self.txn.as_ref().map_or(0, |t| t.pos)
    }

    /// The source's durations, in order.
    fn sorted_ms(&self) -> Vec<f64> {
        let mut ms = self.millis.clone();
        ms.sort_by(f64::total_cmp);
        ms
    }

    /// The plan the source named most often.
    fn plan(&self) -> Option<&String> {
        self.plans.iter().max_by_key(|p| p.1).map(|p| p.0)
    }
}

/// The value at fraction `p` of sorted values (nearest rank), 0 when there are none.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((crate::num::real_len(sorted.len()) - 1.0) * p).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

/// Counts one operation of shape `key` (made at its first).
fn record(
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
        });
        seen.len() - 1
    });
    let s = &mut seen[i];
    s.count += 1;
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
    for (slot, v) in op.values.into_iter().enumerate() {
        if let Some(vs) = s.values.get_mut(slot) {
            vs.push(v);
        }
    }
    s.times.push(o.ts_ms);
    if let Some(c) = o.conn.as_ref().or(o.client.as_ref()) {
        s.conns.insert(c.clone());
    }
    s.intervals
        .push((o.ts_ms - o.millis.ceil() as i64, o.ts_ms));
}

/// The thread group an operation belongs to.
fn group_of(o: &Observed, by: GroupBy) -> String {
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
fn operations_of(o: &Observed, statements_logged: bool, left: &mut LeftOut) -> Option<Vec<Op>> {
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
struct Tally {
    seen: Vec<Seen>,
    index: HashMap<String, usize>,
    /// Open cursors: id -> the shape whose operation opened it.
    cursors: HashMap<i64, usize>,
    first: i64,
    last: i64,
    operations: u64,
}

impl Tally {
    /// Counts every operation the source observed: each on its own, each complete
    /// transaction as one operation of its steps.
    fn of(
        observed: &[Observed],
        txns: &super::txn::Txns,
        by: GroupBy,
        left: &mut LeftOut,
    ) -> Tally {
        let statements_logged = observed.iter().any(|o| {
            matches!(o.op_type.as_str(), "update" | "remove") && o.command.contains_key("q")
        });
        let mut tally = Tally {
            seen: Vec::new(),
            index: HashMap::new(),
            cursors: HashMap::new(),
            first: i64::MAX,
            last: i64::MIN,
            operations: 0,
        };
        for (oi, o) in observed.iter().enumerate() {
            let Some(ops) = operations_of(o, statements_logged, left) else {
                tally.getmore(o);
                continue;
            };
            if txns.member.contains_key(&oi) {
                continue; // a step of its transaction, below
            }
            tally.widen(o.ts_ms);
            let group = group_of(o, by);
            for op in ops {
                tally.one(o, op, &group);
            }
        }
        // Each complete transaction is one operation of its steps.
        for members in &txns.complete {
            tally.transaction(observed, members, statements_logged, by, left);
        }
        tally
    }

    /// Takes `ts_ms` into the window from the first operation to the last.
    fn widen(&mut self, ts_ms: i64) {
        self.first = self.first.min(ts_ms);
        self.last = self.last.max(ts_ms);
    }

    /// Counts one operation on its own.
    fn one(&mut self, o: &Observed, op: Op, group: &str) {
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
            self.cursors.insert(c, i);
        }
    }

    /// A getMore's documents count for the operation that opened its cursor (folded into it:
    /// `run` reads every cursor to its end).
    fn getmore(&mut self, o: &Observed) {
        if o.op_type != "getmore" && !o.command.contains_key("getMore") {
            return;
        }
        let (Some(c), Some(n)) = (o.cursor_id, o.nreturned) else {
            return;
        };
        if let Some(s) = self.cursors.get(&c).and_then(|&i| self.seen.get_mut(i)) {
            s.nreturned += n;
        }
    }

    /// Counts one complete transaction (the indexes of its entries in `observed`).
    fn transaction(
        &mut self,
        observed: &[Observed],
        members: &[usize],
        statements_logged: bool,
        by: GroupBy,
        left: &mut LeftOut,
    ) {
        let steps: Vec<(&Observed, Op)> = members
            .iter()
            .filter_map(
                |&i| match shape::classify(&observed[i], statements_logged) {
                    Class::Ops(ops) => Some(ops.into_iter().map(move |op| (&observed[i], op))),
                    _ => None,
                },
            )
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
fn transaction_notes(commits_visible: bool, left: &LeftOut) -> Vec<String> {
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
fn window_between(first: i64, last: i64) -> f64 {
    if first <= last {
        (crate::num::real_signed(last - first) / 1000.0).max(1.0)
    } else {
        1.0
    }
}

/// The database with the most operations: the one the profile is for.
fn main_database(seen: &[Seen]) -> Option<String> {
    let mut per_db: BTreeMap<&str, u64> = BTreeMap::new();
    for s in seen.iter().filter(|s| s.pos() == 0) {
        *per_db.entry(&s.db).or_default() += s.count;
    }
    per_db
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(d, _)| d.to_string())
}

/// The shapes chosen for the profile and why each other one was not.
struct Chosen {
    /// Indexes in `seen` of the emitted shapes (a transaction's every step).
    emitted: Vec<usize>,
    /// Shapes emitted, a transaction counted once.
    units: usize,
    /// Operations the emitted shapes cover.
    covered: u64,
    /// Per shape, why it was left out (empty when emitted).
    reasons: Vec<String>,
}

/// The fewest shapes that cover the wanted share, at most `max_shapes`; a transaction is one
/// shape, its steps emitted or left out together. Those left out are counted in `left`.
fn choose(
    seen: &[Seen],
    database: Option<&str>,
    opts: &Options,
    operations: u64,
    left: &mut LeftOut,
) -> Chosen {
    let mut c = Chosen {
        emitted: Vec::new(),
        units: 0,
        covered: 0,
        reasons: vec![String::new(); seen.len()],
    };
    for (i, s) in seen.iter().enumerate() {
        if s.pos() > 0 {
            // The step before decided for the whole transaction.
            if c.emitted.last() == Some(&(i - 1)) {
                c.emitted.push(i);
            } else {
                c.reasons[i] = c.reasons[i - 1].clone();
            }
            continue;
        }
        // A write changes what every other operation finds: kept whatever --coverage says
        // (a transaction writes when any of its steps does).
        let writes = std::iter::once(s)
            .chain(seen[i + 1..].iter().take_while(|t| t.pos() > 0))
            .any(|t| t.op.verb.writes());
        c.reasons[i] = if Some(s.db.as_str()) != database {
            format!("another database ({}), not in this profile", s.db)
        } else if !writes
            && crate::num::real(c.covered) >= opts.coverage * crate::num::real(operations)
        {
            "beyond --coverage".into()
        } else if c.units >= opts.max_shapes {
            "beyond --max-shapes".into()
        } else {
            c.emitted.push(i);
            c.covered += s.count;
            c.units += 1;
            continue;
        };
        left.shapes_not_emitted += 1;
        left.operations_not_emitted += s.count;
    }
    c
}

/// The account of one shape: what the source said of it, and `emitted` (how it was emitted, or
/// why not).
fn shape_stat(
    s: &Seen,
    emitted: String,
    operations: u64,
    window_s: f64,
    sample_rate: f64,
) -> ShapeStat {
    let ms = s.sorted_ms();
    let q = |p: f64| quantile(&ms, p);
    let per = |x: i64| {
        (s.examined_known && s.returned > 0)
            .then(|| crate::num::real_signed(x) / crate::num::real_signed(s.returned))
    };
    ShapeStat {
        namespace: format!("{}.{}", s.db, s.coll),
        operation: s.op.verb.name(),
        shape: match &s.txn {
            Some(t) => format!("transaction step {}/{}: {}", t.pos + 1, t.of, s.op.key()),
            None => s.op.key(),
        },
        count: s.count,
        // A transaction is one operation: its share is on its first step.
        share: if operations > 0 && s.pos() == 0 {
            crate::num::real(s.count) / crate::num::real(operations)
        } else {
            0.0
        },
        ops_per_sec: crate::num::real(s.count) / window_s / sample_rate,
        p50_ms: q(0.5),
        p95_ms: q(0.95),
        max_ms: ms.last().copied().unwrap_or(0.0),
        plan: s.plan().cloned(),
        keys_per_returned: per(s.keys_examined),
        docs_per_returned: per(s.docs_examined),
        emitted,
        returned_per_call: (s.nreturned_n > 0)
            .then(|| crate::num::real_signed(s.nreturned) / crate::num::real(s.nreturned_n)),
        replay_returned_per_call: None,
        writes: s.op.verb.writes(),
        selects_by: s
            .op
            .slots
            .iter()
            .filter(|sl| {
                sl.kind != SlotKind::Param && (selects(sl) || sl.field.as_deref() == Some("_id"))
            })
            .filter_map(|sl| sl.field.clone())
            .fold(Vec::new(), |mut v, f| {
                if !v.contains(&f) {
                    v.push(f);
                }
                v
            }),
    }
}

/// Builds the profile and the account from what the source observed.
pub(crate) fn build(
    observed: &[Observed],
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    name: &str,
    source: &str,
    mut left: LeftOut,
) -> Captured {
    let txns = super::txn::group(observed);
    let Tally {
        mut seen,
        first,
        last,
        operations,
        ..
    } = Tally::of(observed, &txns, opts.group_by, &mut left);
    left.partial_transactions += txns.partial;
    left.aborted_transactions = txns.aborted;
    let blind = transaction_notes(txns.commits_visible, &left);
    // Rates are over the span the operations were seen in, not the window asked for (an
    // application busy for 10 s of a 60 s window ran at its rate, not a sixth of it).
    let window_s = window_between(first, last);
    // Largest first; a transaction's steps together and in order.
    seen.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.unit().cmp(&b.unit()))
            .then(a.pos().cmp(&b.pos()))
    });
    // The profile is for one database: the one with the most operations.
    let database = main_database(&seen);
    let chosen = choose(&seen, database.as_deref(), opts, operations, &mut left);

    let now_ms = if last > i64::MIN { last } else { 0 };
    let fields = fit_fields(&seen, &chosen.emitted, infos, opts, now_ms);
    let (profile, names) = Renderer {
        seen: &seen,
        emitted: &chosen.emitted,
        infos,
        fields: &fields,
        opts,
        window_s,
        operations,
        database: database.as_deref(),
        text: String::new(),
        names: HashMap::new(),
    }
    .render(name, source);

    let shapes = seen
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let emitted = names
                .get(&i)
                .cloned()
                .unwrap_or_else(|| format!("not emitted: {}", chosen.reasons[i]));
            shape_stat(s, emitted, operations, window_s, opts.sample_rate)
        })
        .collect();
    let date = |ms: i64| {
        (first <= last)
            .then(|| {
                mongodb::bson::DateTime::from_millis(ms)
                    .try_to_rfc3339_string()
                    .ok()
            })
            .flatten()
    };
    Captured {
        source: source.to_string(),
        first: date(first),
        last: date(last),
        window_s,
        capture_window_s: opts.window_s,
        operations,
        emitted_shapes: chosen.units,
        coverage: if operations > 0 {
            crate::num::real(chosen.covered) / crate::num::real(operations)
        } else {
            0.0
        },
        database,
        shapes,
        left_out: left,
        blind,
        scale: opts.scale,
        profile,
    }
}

/// Every field of every emitted collection, fitted once from its slots and sampled documents.
struct Fields {
    /// (collection, field) -> generator.
    gens: HashMap<(String, String), Value>,
    /// Collection -> its document template (nested), and whether it is synthetic.
    templates: HashMap<String, (toml::Table, bool)>,
    /// Collections whose `_id` hits are skewed.
    skewed: BTreeSet<String>,
    /// (collection, field) -> the collection whose `_id`s its values are, and its preload.
    references: BTreeMap<(String, String), (String, u64)>,
    /// (collection, field) of the fields operations select by, with the distinct values the
    /// replay draws for them.
    selecting: BTreeMap<(String, String), u64>,
}

/// Whether a slot selects documents: a value or list of a field in a filter (`filter`,
/// `query`, `q`, a `$match`), `_id` aside.
fn selects(slot: &shape::Slot) -> bool {
    let head = slot.path.split(['.', '[']).next().unwrap_or("");
    slot.kind != SlotKind::Param
        && slot.field.as_deref().is_some_and(|f| f != "_id")
        && (matches!(head, "filter" | "query" | "q") || slot.path.contains("$match"))
}

/// The documents the replay preloads of a collection: the server's count, capped; 1,000 when
/// it is not known.
fn preload_of(info: Option<&CollectionInfo>, cap: u64) -> u64 {
    info.and_then(|i| i.count).map_or(1000, |n| n.min(cap))
}

/// Per (collection, field), documents the source returned per call to the finds that select by
/// that field alone, by equality, and that no limit cut.
fn returned_per_value(seen: &[Seen], emitted: &[usize]) -> HashMap<(String, String), f64> {
    let mut sums: HashMap<(String, String), (i64, u64)> = HashMap::new();
    for &i in emitted {
        let s = &seen[i];
        if s.op.verb != crate::workload::command::Verb::Find || s.nreturned_n == 0 {
            continue;
        }
        let selecting: Vec<(usize, &shape::Slot)> =
            s.op.slots
                .iter()
                .enumerate()
                .filter(|(_, sl)| sl.kind != SlotKind::Param)
                .collect();
        let [(_, slot)] = selecting.as_slice() else {
            continue;
        };
        if slot.kind != SlotKind::Value
            || !selects(slot)
            || !slot
                .path
                .ends_with(slot.field.as_deref().unwrap_or_default())
        {
            continue;
        }
        let mean = crate::num::real_signed(s.nreturned) / crate::num::real(s.nreturned_n);
        let limit =
            s.op.slots
                .iter()
                .zip(&s.values)
                .filter(|(sl, _)| sl.path == "limit")
                .filter_map(|(_, vs)| vs.iter().filter_map(super::as_f64).reduce(f64::min))
                .next();
        if limit.is_some_and(|l| mean >= 0.9 * l) {
            continue;
        }
        let f = slot.field.clone().unwrap_or_default();
        let e = sums.entry((s.coll.clone(), f)).or_default();
        e.0 += s.nreturned;
        e.1 += s.nreturned_n;
    }
    sums.into_iter()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(k, (r, n))| (k, crate::num::real_signed(r) / crate::num::real(n)))
        .collect()
}

/// Fits every field of the emitted shapes' collections once, from the values their slots saw
/// and the sampled documents: a field whose values are another captured collection's `_id`s
/// becomes a reference to its preloaded keys, a field operations select by keeps the source's
/// number of distinct values; finds the collections whose `_id` hits are skewed.
fn fit_fields(
    seen: &[Seen],
    emitted: &[usize],
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    now_ms: i64,
) -> Fields {
    let keep = opts.keep_values;
    let mut pools: BTreeMap<(String, String), Vec<Bson>> = BTreeMap::new();
    let mut id_hits: HashMap<String, HashMap<String, u64>> = HashMap::new();
    let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut selecting_fields: BTreeSet<(String, String)> = BTreeSet::new();
    for &i in emitted {
        let s = &seen[i];
        for (slot, vals) in s.op.slots.iter().zip(&s.values) {
            let Some(f) = &slot.field else { continue };
            if f == "_id" {
                let hits = id_hits.entry(s.coll.clone()).or_default();
                for v in vals {
                    match v {
                        Bson::Array(a) => a
                            .iter()
                            .for_each(|v| *hits.entry(v.to_string()).or_default() += 1),
                        v => *hits.entry(v.to_string()).or_default() += 1,
                    }
                }
                continue;
            }
            if selects(slot) {
                selecting_fields.insert((s.coll.clone(), f.clone()));
            }
            let pool = pools.entry((s.coll.clone(), f.clone())).or_default();
            for v in vals {
                match v {
                    Bson::Array(a) => pool.extend(a.iter().cloned()),
                    v => pool.push(v.clone()),
                }
            }
            let o = order.entry(s.coll.clone()).or_default();
            if !o.contains(f) {
                o.push(f.clone());
            }
        }
    }
    let colls: BTreeSet<String> = emitted.iter().map(|&i| seen[i].coll.clone()).collect();
    let db = emitted
        .first()
        .map(|&i| seen[i].db.clone())
        .unwrap_or_default();
    let info_of = |coll: &str| infos.get(&(db.clone(), coll.to_string()));
    // The sampled documents' values, apart from the operations', per field.
    let mut sampled: BTreeMap<(String, String), Vec<Bson>> = BTreeMap::new();
    for coll in &colls {
        for d in info_of(coll).map(|i| i.sample.as_slice()).unwrap_or(&[]) {
            leaves(d, "", &mut |path, v| {
                let pool = sampled.entry((coll.clone(), path.to_string())).or_default();
                match v {
                    Bson::Array(a) => pool.extend(a.iter().cloned()),
                    v => pool.push(v.clone()),
                }
            });
        }
    }
    // The `_id`s known of each collection: read from the server, sampled, and asked for.
    let known_ids: BTreeMap<&String, std::collections::HashSet<String>> = colls
        .iter()
        .map(|c| {
            let mut ids: std::collections::HashSet<String> = info_of(c)
                .map(|i| i.ids.iter().map(ToString::to_string).collect())
                .unwrap_or_default();
            if let Some(v) = sampled.get(&(c.clone(), "_id".to_string())) {
                ids.extend(v.iter().map(ToString::to_string));
            }
            if let Some(h) = id_hits.get(c) {
                ids.extend(h.keys().cloned());
            }
            (c, ids)
        })
        .collect();
    let mut templates = HashMap::new();
    for coll in &colls {
        let template = template(coll, info_of(coll), &mut pools, &order, keep, now_ms);
        templates.insert(coll.clone(), template);
    }
    let per_value = returned_per_value(seen, emitted);
    let mut gens = HashMap::new();
    let mut references = BTreeMap::new();
    let mut selecting = BTreeMap::new();
    for ((coll, f), vals) in &pools {
        let key = (coll.clone(), f.clone());
        let mut distinct: Vec<&Bson> = Vec::new();
        let mut shown: std::collections::HashSet<String> = std::collections::HashSet::new();
        for v in vals
            .iter()
            .filter(|v| !matches!(v, Bson::Array(_) | Bson::Document(_) | Bson::Null))
        {
            if shown.insert(v.to_string()) {
                distinct.push(v);
            }
        }
        // A reference to the captured collection whose `_id`s hold most of its values.
        // Numbers are another collection's `_id`s only where the name says so too (`customer`,
        // `customer_id` of `customers`): small numbers are found among any integer `_id`s.
        let numeric = distinct.iter().any(|v| super::as_f64(v).is_some());
        let target = colls
            .iter()
            .filter(|c| !numeric || (*c != coll && names_reference(f, c)))
            .filter(|c| {
                let count = info_of(c)
                    .and_then(|i| i.count)
                    .unwrap_or(known_ids[c].len() as u64);
                fit::references(&distinct, &known_ids[c], count)
            })
            // The collection whose known `_id`s the values cover the most of.
            .max_by(|a, b| {
                let share = |c: &String| {
                    let found = distinct
                        .iter()
                        .filter(|v| known_ids[c].contains(&v.to_string()))
                        .count();
                    crate::num::real_len(found) / crate::num::real_len(known_ids[c].len().max(1))
                };
                share(a).total_cmp(&share(b))
            });
        if let Some(t) = target {
            let preload = preload_of(info_of(t), opts.preload_cap);
            gens.insert(key.clone(), fit::reference(preload));
            references.insert(key, (t.clone(), preload));
            continue;
        }
        if selecting_fields.contains(&key) {
            let sel = fit::Selecting {
                source_docs: info_of(coll).and_then(|i| i.count),
                replay_docs: preload_of(info_of(coll), opts.preload_cap),
                returned_per_value: per_value.get(&key).copied(),
                sampled: sampled.get(&key).map(Vec::as_slice).unwrap_or(&[]),
            };
            if let Some(g) = fit::selecting(f, vals, &sel, keep) {
                selecting.insert(key.clone(), fit::cardinality(distinct.len(), &sel));
                gens.insert(key, g);
                continue;
            }
        }
        gens.insert(key, fit::field(f, vals, keep, now_ms));
    }
    // The templates take the same generators as the operations.
    for (coll, (t, _)) in templates.iter_mut() {
        for ((c, f), g) in &gens {
            if c == coll
                && (references.contains_key(&(c.clone(), f.clone()))
                    || selecting.contains_key(&(c.clone(), f.clone())))
            {
                replace_path(t, f, g.clone());
            }
        }
    }
    let skewed = id_hits
        .iter()
        .filter(|(_, h)| fit::skewed(h))
        .map(|(c, _)| c.clone())
        .collect();
    Fields {
        gens,
        templates,
        skewed,
        references,
        selecting,
    }
}

/// Whether field `field`'s name names collection `coll` (`customer`, `customerId`,
/// `customer_id` of `customers`), or is any `..._id`.
fn names_reference(field: &str, coll: &str) -> bool {
    let leaf = field.rsplit('.').next().unwrap_or(field).to_lowercase();
    let stem = leaf
        .trim_end_matches("_id")
        .trim_end_matches("id")
        .trim_end_matches(['_', '-']);
    let coll = coll.to_lowercase();
    let singular = coll.strip_suffix('s').unwrap_or(&coll);
    (!stem.is_empty() && (stem == coll || stem == singular)) || leaf.ends_with("_id")
}

/// Puts `v` at the dotted `path` of a template where a generator (or an array of one) already
/// stands there: a sampled array field stays an array, of the new generator.
fn replace_path(t: &mut toml::Table, path: &str, v: Value) {
    match path.split_once('.') {
        None => {
            if let Some(slot) = t.get_mut(path) {
                if let Value::Table(g) = slot {
                    if let Some(Value::Table(arr)) = g.get_mut("^Array") {
                        arr.insert("of".into(), v);
                        return;
                    }
                }
                *slot = v;
            }
        }
        Some((head, rest)) => {
            if let Some(Value::Table(sub)) = t.get_mut(head) {
                if !sub.keys().any(|k| k.starts_with('^')) {
                    replace_path(sub, rest, v);
                }
            }
        }
    }
}

/// The document template of collection `coll`, and whether it is synthetic: the fields of its
/// sampled documents (their values added to `pools`), else the fields its operations use
/// (`order`), each fitted from its pooled values.
fn template(
    coll: &str,
    info: Option<&CollectionInfo>,
    pools: &mut BTreeMap<(String, String), Vec<Bson>>,
    order: &BTreeMap<String, Vec<String>>,
    keep: bool,
    now_ms: i64,
) -> (toml::Table, bool) {
    let sample = info.map(|i| i.sample.as_slice()).unwrap_or(&[]);
    let mut paths: Vec<String> = Vec::new();
    for d in sample {
        leaves(d, "", &mut |path, v| {
            if path == "_id" {
                return;
            }
            if !paths.contains(&path.to_string()) {
                paths.push(path.to_string());
            }
            let pool = pools
                .entry((coll.to_string(), path.to_string()))
                .or_default();
            match v {
                Bson::Array(a) => pool.extend(a.iter().cloned()),
                v => pool.push(v.clone()),
            }
        });
    }
    let synthetic = sample.is_empty();
    if synthetic {
        paths = order.get(coll).cloned().unwrap_or_default();
    }
    let mut t = toml::Table::new();
    if paths.is_empty() {
        // Nothing says what the documents hold: one string field of their average size
        // (100 bytes when that is unknown too), so that inserts still write that much.
        let size = info
            .and_then(|i| i.avg_size)
            .unwrap_or(100.0)
            .clamp(1.0, 1_000_000.0);
        t.insert(
            "payload".into(),
            fit::generator(
                "^RandomString",
                [("length".to_string(), Value::Integer(size as i64))]
                    .into_iter()
                    .collect::<toml::Table>()
                    .into(),
            ),
        );
    }
    for p in &paths {
        let vals = pools
            .get(&(coll.to_string(), p.clone()))
            .cloned()
            .unwrap_or_default();
        let mut g = match synthetic
            .then(|| fit::synthetic_dates(&vals, now_ms))
            .flatten()
        {
            Some(dates) => dates,
            None => fit::field(p, &vals, keep, now_ms),
        };
        // A field sampled as arrays stays an array of its elements.
        let lens: Vec<usize> = sample
            .iter()
            .filter_map(|d| lookup(d, p))
            .filter_map(|v| v.as_array().map(Vec::len))
            .collect();
        if !lens.is_empty() {
            g = fit::array(g, fit::length(&lens));
        }
        insert_path(&mut t, p, g);
    }
    (t, synthetic)
}

/// Calls `f` with each leaf of `d` (arrays are leaves) and its dotted path.
fn leaves(d: &Document, base: &str, f: &mut dyn FnMut(&str, &Bson)) {
    for (k, v) in d {
        let p = if base.is_empty() {
            k.clone()
        } else {
            format!("{base}.{k}")
        };
        match v {
            Bson::Document(sub) if !sub.is_empty() && !sub.keys().any(|k| k.starts_with('$')) => {
                leaves(sub, &p, f)
            }
            v => f(&p, v),
        }
    }
}

fn lookup<'a>(d: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut cur = d;
    let mut parts = path.split('.').peekable();
    while let Some(p) = parts.next() {
        let v = cur.get(p)?;
        if parts.peek().is_none() {
            return Some(v);
        }
        cur = v.as_document()?;
    }
    None
}

fn insert_path(t: &mut toml::Table, path: &str, v: Value) {
    match path.split_once('.') {
        None => {
            // A document already there (its fields came first) stays.
            if !matches!(t.get(path), Some(Value::Table(s)) if !s.keys().any(|k| k.starts_with('^')))
            {
                t.insert(path.to_string(), v);
            }
        }
        Some((head, rest)) => {
            let sub = t
                .entry(head.to_string())
                .or_insert_with(|| Value::Table(toml::Table::new()));
            // A field seen both as a value and as a document: the document wins (its fields
            // are what the operations use), never fields beside a generator.
            let generator = matches!(sub, Value::Table(s) if s.keys().any(|k| k.starts_with('^')));
            if generator || !matches!(sub, Value::Table(_)) {
                *sub = Value::Table(toml::Table::new());
            }
            if let Value::Table(sub) = sub {
                insert_path(sub, rest, v);
            }
        }
    }
}

/// The generator for slot `i` of shape `s`.
fn slot_value(s: &Seen, i: usize, fields: &Fields) -> Value {
    let slot = &s.op.slots[i];
    let vals = &s.values[i];
    match (slot.kind, slot.field.as_deref()) {
        (SlotKind::Param, _) => fit::param(vals, matches!(slot.path.as_str(), "limit" | "skip")),
        (SlotKind::Value, Some("_id")) => fit::bare("^Key"),
        (SlotKind::List, Some(f)) => {
            let lens: Vec<usize> = vals
                .iter()
                .map(|v| v.as_array().map_or(1, Vec::len))
                .collect();
            let of = if f == "_id" {
                fit::bare("^Key")
            } else {
                field_gen(s, f, fields, vals)
            };
            fit::array(of, fit::length(&lens))
        }
        (SlotKind::Value, Some(f)) => {
            if vals.iter().all(|v| matches!(v, Bson::DateTime(_))) && !vals.is_empty() {
                let offsets: Vec<i64> = vals
                    .iter()
                    .zip(&s.times)
                    .filter_map(|(v, t)| match v {
                        Bson::DateTime(d) => Some(d.timestamp_millis() - t),
                        _ => None,
                    })
                    .collect();
                return fit::query_date(&offsets);
            }
            field_gen(s, f, fields, vals)
        }
        (_, None) => fit::param(vals, false),
    }
}

fn field_gen(s: &Seen, f: &str, fields: &Fields, vals: &[Bson]) -> Value {
    fields
        .gens
        .get(&(s.coll.clone(), f.to_string()))
        .cloned()
        .unwrap_or_else(|| fit::field(f, vals, false, 0))
}

/// A BSON value as the profile's TOML, each slot marker replaced by its generator.
fn to_toml(v: &Bson, slot: &dyn Fn(usize) -> Option<Value>) -> Value {
    match v {
        Bson::String(s) => match s.strip_prefix('\u{1}').and_then(|n| n.parse().ok()) {
            Some(i) => slot(i).unwrap_or(Value::String(String::new())),
            None => Value::String(s.clone()),
        },
        Bson::Document(d) => Value::Table(
            d.iter()
                .map(|(k, v)| (k.clone(), to_toml(v, slot)))
                .collect(),
        ),
        Bson::Array(a) => Value::Array(a.iter().map(|v| to_toml(v, slot)).collect()),
        Bson::Int32(n) => Value::Integer(i64::from(*n)),
        Bson::Int64(n) => Value::Integer(*n),
        Bson::Double(x) => Value::Float(*x),
        Bson::Boolean(b) => Value::Boolean(*b),
        Bson::Null | Bson::Undefined => fit::bare("^Null"),
        other => {
            // Extended JSON type keys ($date, $oid, $numberDecimal, ...) read back as BSON.
            let json = other.clone().into_relaxed_extjson();
            serde_json::from_value::<Value>(json).unwrap_or(Value::String(String::new()))
        }
    }
}

/// A readable, unique name: `find-orders-by-status-created`.
fn op_name(s: &Seen, taken: &mut BTreeSet<String>) -> String {
    let mut fields: Vec<String> = Vec::new();
    for slot in &s.op.slots {
        if let Some(f) = &slot.field {
            if (slot.path.starts_with("filter") || slot.path.contains(".$match"))
                && !fields.contains(f)
            {
                fields.push(f.clone());
            }
        }
    }
    let mut base = format!("{}-{}", s.op.verb.name(), s.coll);
    if !fields.is_empty() {
        base.push_str("-by-");
        base.push_str(&fields.join("-"));
    }
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean: String = clean.chars().take(60).collect();
    let mut name = clean.clone();
    let mut n = 2;
    while !taken.insert(name.clone()) {
        name = format!("{clean}-{n}");
        n += 1;
    }
    name
}

/// A TOML key, bare when it may be.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

/// The indexes a plan summary names (`IXSCAN { status: 1, created: -1 }`), as key documents.
fn plan_indexes(plan: &str) -> Vec<Vec<(String, i64)>> {
    let mut out = Vec::new();
    for part in plan.split("IXSCAN").skip(1) {
        let Some(open) = part.find('{') else { continue };
        let Some(close) = part.find('}') else {
            continue;
        };
        // An index with a key this cannot read (`loc: "2dsphere"`) is left out whole.
        let Some(keys) = part[open + 1..close]
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once(':')?;
                let k = k.trim().trim_matches('"').to_string();
                let v: i64 = v.trim().parse().ok()?;
                (!k.is_empty()).then_some((k, v))
            })
            .collect::<Option<Vec<(String, i64)>>>()
        else {
            continue;
        };
        let only_id = keys.len() == 1 && keys[0].0 == "_id";
        if !keys.is_empty() && !only_id && !out.contains(&keys) {
            out.push(keys);
        }
    }
    out
}

/// The emitted shapes of one `[[group]]`: a thread group's on one collection, or one
/// transaction shape's steps.
struct Grouped {
    group: String,
    coll: String,
    /// The transaction's shape, for a group of steps.
    unit: Option<String>,
    /// Indexes in `seen`, in order.
    members: Vec<usize>,
}

/// How hard a `[[group]]` drives its collection, from what the source observed.
struct Load {
    /// Operations (a transaction counted once).
    count: u64,
    observed_rate: f64,
    /// The observed rate times the scale.
    rate: f64,
    /// Distinct connections seen.
    conns: usize,
    /// The most operations in flight at once.
    peak: usize,
    threads: usize,
}

/// Writes the profile's text: what it is made from, and the emitted shapes' collections and
/// groups; keeps each emitted shape's name for the account.
struct Renderer<'a> {
    seen: &'a [Seen],
    emitted: &'a [usize],
    infos: &'a HashMap<(String, String), CollectionInfo>,
    fields: &'a Fields,
    opts: &'a Options,
    window_s: f64,
    operations: u64,
    database: Option<&'a str>,
    /// The profile written so far.
    text: String,
    /// Emitted shape (index in `seen`) -> `group:name`, or a step's group and position.
    names: HashMap<usize, String>,
}

impl Renderer<'_> {
    /// The profile's text and each emitted shape's name.
    fn render(mut self, name: &str, source: &str) -> (String, HashMap<usize, String>) {
        self.header(name, source);
        for coll in self.collection_names() {
            self.collection(&coll);
        }
        // Groups: per (group, collection), in the order of their first shape; a group per
        // transaction shape.
        let groups = self.groups();
        let per_group_coll: BTreeMap<&str, usize> = groups
            .iter()
            .filter(|g| g.unit.is_none())
            .fold(BTreeMap::new(), |mut m, g| {
                *m.entry(g.group.as_str()).or_default() += 1;
                m
            });
        let mut group_names: BTreeSet<String> = BTreeSet::new();
        for g in &groups {
            let gname = group_name(g, &per_group_coll, &mut group_names);
            self.group(&gname, g);
        }
        (self.text, self.names)
    }

    /// The comments on where the profile comes from, its name and its `[target]`.
    fn header(&mut self, name: &str, source: &str) {
        let (seen, emitted) = (self.seen, self.emitted);
        let (operations, window_s, t) = (self.operations, self.window_s, &mut self.text);
        let heads = || emitted.iter().filter(|&&i| seen[i].pos() == 0);
        let covered: u64 = heads().map(|&i| seen[i].count).sum();
        let _ = writeln!(t, "# Captured by mongo-stress capture from {source}.");
        let _ =
            writeln!(
            t,
            "# {operations} operations seen over {window_s:.1} s (the rates are over that span); {} shapes emitted cover {:.1} % of them.",
            heads().count(),
            if operations > 0 { 100.0 * crate::num::real(covered) / crate::num::real(operations) } else { 0.0 }
        );
        if !self.opts.keep_values {
            let _ = writeln!(
                t,
                "# No observed value is written: strings are placeholders with the observed frequencies,\n# numbers and dates the observed ranges (--keep-values writes the values)."
            );
        }
        let _ = writeln!(t, "name = {}", Value::String(name.to_string()));
        let _ = writeln!(
            t,
            "description = {}",
            Value::String(format!(
                "captured from {source}, rates x {}",
                self.opts.scale
            ))
        );
        // Another database than the source's: the collections are dropped before each run, so a
        // run pointed at the source by mistake must never drop the source's own.
        let source_db = self.database.unwrap_or("test");
        let _ = writeln!(
            t,
            "\n# The source's database is {}; this one is named apart so that a run against the source\n# never drops its collections (rename it to use the same names elsewhere).\n[target]\ndatabase = {}",
            Value::String(source_db.to_string()),
            Value::String(replay_database(source_db))
        );
    }

    /// The emitted shapes' collections, in the order of their first shape.
    fn collection_names(&self) -> Vec<String> {
        let mut colls: Vec<String> = Vec::new();
        for &i in self.emitted {
            if !colls.contains(&self.seen[i].coll) {
                colls.push(self.seen[i].coll.clone());
            }
        }
        colls
    }

    /// One `[[collection]]`: its preload, indexes and document template.
    fn collection(&mut self, coll: &str) {
        let (db, infos) = (self.database.unwrap_or(""), self.infos);
        let info = infos.get(&(db.to_string(), coll.to_string()));
        let t = &mut self.text;
        let _ = writeln!(
            t,
            "\n[[collection]]\nname = {}\ndrop = true",
            Value::String(coll.to_string())
        );
        match info.and_then(|i| i.count) {
            Some(n) => {
                let preload = n.min(self.opts.preload_cap);
                let note = if n > preload {
                    format!(
                        "  # the server held {n} documents (capped at {})",
                        self.opts.preload_cap
                    )
                } else {
                    format!("  # the server held {n} documents")
                };
                let _ = writeln!(t, "preload = {preload}{note}");
            }
            None => {
                let _ = writeln!(t, "preload = 1000  # the real count is unknown here (capture with --uri to read it)");
            }
        }
        self.indexes(coll, info);
        self.document(coll, info);
    }

    /// A collection's `indexes`: the server's when it listed them, else the ones the plans
    /// named.
    fn indexes(&mut self, coll: &str, info: Option<&CollectionInfo>) {
        let mut idx: Vec<String> = info
            .map(|info| info.indexes.iter().map(index_spec).collect())
            .unwrap_or_default();
        let from_server = info.is_some_and(|i| !i.indexes.is_empty());
        if !from_server {
            idx.extend(self.plan_named_indexes(coll));
            if !idx.is_empty() {
                let _ = writeln!(
                    self.text,
                    "# indexes: the ones the plans named (no --uri to list the server's)"
                );
            }
        }
        if !idx.is_empty() {
            let _ = writeln!(self.text, "indexes = [\n  {},\n]", idx.join(",\n  "));
        }
    }

    /// The indexes the plans of the emitted shapes on `coll` named, as index specs.
    fn plan_named_indexes(&self, coll: &str) -> Vec<String> {
        let mut named: Vec<Vec<(String, i64)>> = Vec::new();
        for &i in self.emitted {
            if self.seen[i].coll != *coll {
                continue;
            }
            for p in self.seen[i].plans.keys() {
                for keys in plan_indexes(p) {
                    if !named.contains(&keys) {
                        named.push(keys);
                    }
                }
            }
        }
        named
            .into_iter()
            .map(|keys| {
                let k: toml::Table = keys
                    .into_iter()
                    .map(|(k, v)| (k, Value::Integer(v)))
                    .collect();
                format!("{{ keys = {} }}", Value::Table(k))
            })
            .collect()
    }

    /// A collection's `[collection.document]`: its fitted template.
    fn document(&mut self, coll: &str, info: Option<&CollectionInfo>) {
        let t = &mut self.text;
        let _ = writeln!(t, "[collection.document]");
        if let Some(size) = info.and_then(|i| i.avg_size) {
            let _ = writeln!(t, "# the sampled documents average {size:.0} bytes");
        }
        if let Some((tmpl, synthetic)) = self.fields.templates.get(coll) {
            if *synthetic {
                let _ = writeln!(
                    t,
                    "# synthetic: made from the fields the operations use (no sampled documents)"
                );
            }
            for ((c, f), (target, n)) in &self.fields.references {
                if c == coll {
                    let _ = writeln!(
                        t,
                        "# {f}: the _ids of {target}, which the replay preloads as 0 .. {}: it references them as the source did",
                        n.saturating_sub(1)
                    );
                }
            }
            for ((c, f), k) in &self.fields.selecting {
                if c == coll {
                    let _ = writeln!(
                        t,
                        "# {f}: operations select by it; about {k} distinct values in the source, drawn alike by the documents and the queries"
                    );
                }
            }
            for (k, v) in tmpl {
                let _ = writeln!(t, "{} = {v}", key(k));
            }
        }
    }

    /// The emitted shapes gathered into groups, in the order of their first shape.
    fn groups(&self) -> Vec<Grouped> {
        let mut groups: Vec<Grouped> = Vec::new();
        for &i in self.emitted {
            let s = &self.seen[i];
            let unit = s.txn.as_ref().map(|t| t.unit.clone());
            let found = groups.iter_mut().find(|g| {
                g.group == s.group && (g.unit == unit) && (unit.is_some() || g.coll == s.coll)
            });
            match found {
                Some(g) => g.members.push(i),
                None => groups.push(Grouped {
                    group: s.group.clone(),
                    coll: s.coll.clone(),
                    unit,
                    members: vec![i],
                }),
            }
        }
        groups
    }

    /// How hard group `g` drives its collection: its rate, and threads enough for its
    /// connections, its operations in flight at once and its rate at its mean time.
    fn load(&self, g: &Grouped) -> Load {
        let (seen, members) = (self.seen, &g.members);
        let txn = g.unit.is_some();
        let count: u64 = if txn {
            seen[members[0]].count
        } else {
            members.iter().map(|&i| seen[i].count).sum()
        };
        let observed_rate = crate::num::real(count) / self.window_s / self.opts.sample_rate;
        let rate = observed_rate * self.opts.scale;
        let conns: BTreeSet<&String> = members.iter().flat_map(|&i| seen[i].conns.iter()).collect();
        let mut intervals = self.intervals(g, count);
        let peak = peak_in_flight(&mut intervals);
        let mean_ms = self.mean_ms(g);
        let needed = (rate * mean_ms.max(1.0) / 1000.0 * 2.0).ceil() as usize;
        let threads = conns.len().max(peak).max(needed).clamp(1, 10_000);
        Load {
            count,
            observed_rate,
            rate,
            conns: conns.len(),
            peak,
            threads,
        }
    }

    /// The time intervals of group `g`'s `count` operations (of a transaction, the whole
    /// transaction's).
    fn intervals(&self, g: &Grouped, count: u64) -> Vec<(i64, i64)> {
        let (seen, members) = (self.seen, &g.members);
        if g.unit.is_some() {
            // The k-th interval of each step is the k-th transaction's: from its first step's
            // start to its last step's end.
            (0..count as usize)
                .map(|k| {
                    let ends = members.iter().filter_map(|&i| seen[i].intervals.get(k));
                    ends.fold((i64::MAX, i64::MIN), |(a, b), (s, e)| {
                        (a.min(*s), b.max(*e))
                    })
                })
                .collect()
        } else {
            members
                .iter()
                .flat_map(|&i| seen[i].intervals.iter().copied())
                .collect()
        }
    }

    /// The mean time of one operation of group `g`: of a transaction, its steps' means added.
    fn mean_ms(&self, g: &Grouped) -> f64 {
        let (seen, members) = (self.seen, &g.members);
        let mean = |i: usize| {
            seen[i].millis.iter().sum::<f64>() / crate::num::real_len(seen[i].millis.len().max(1))
        };
        if g.unit.is_some() {
            members.iter().map(|&i| mean(i)).sum()
        } else {
            let all: Vec<f64> = members
                .iter()
                .flat_map(|&i| seen[i].millis.iter().copied())
                .collect();
            all.iter().sum::<f64>() / crate::num::real_len(all.len().max(1))
        }
    }

    /// One `[[group]]` named `gname`: its threads, rate and duration, then its operations or
    /// steps.
    fn group(&mut self, gname: &str, g: &Grouped) {
        let Load {
            count,
            observed_rate,
            rate,
            conns,
            peak,
            threads,
        } = self.load(g);
        let (operations, t) = (self.operations, &mut self.text);
        let duration = (self.window_s.round() as u64).clamp(10, 600);
        let _ = writeln!(
            t,
            "\n[[group]]\nname = {}\ncollection = {}",
            Value::String(gname.to_string()),
            Value::String(g.coll.clone())
        );
        let _ = writeln!(
            t,
            "threads = {threads}  # connections seen: {conns}, most operations in flight at once: {peak}",
        );
        let _ = writeln!(
            t,
            "rate = {}  # observed {observed_rate:.2}/s x --scale {}",
            rate_text(rate),
            self.opts.scale
        );
        let _ = writeln!(t, "duration = \"{duration}s\"");
        if self.fields.skewed.contains(&g.coll) {
            let _ = writeln!(
                t,
                "keys = \"zipfian\"  # a tenth of the _ids seen took half the hits or more"
            );
        }
        if g.unit.is_some() {
            let _ = writeln!(
                t,
                "transaction = true  # {count} transactions of {} statements seen whole ({:.1} % of the operations)",
                g.members.len(),
                if operations > 0 { 100.0 * crate::num::real(count) / crate::num::real(operations) } else { 0.0 }
            );
        }
        let mut taken = BTreeSet::new();
        for &i in &g.members {
            self.member(i, gname, &g.coll, &mut taken);
        }
    }

    /// Shape `i` of group `gname` (on collection `coll`): a `[[group.steps]]` of a transaction
    /// or a `[[group.ops]]` named apart from the names `taken`.
    fn member(&mut self, i: usize, gname: &str, coll: &str, taken: &mut BTreeSet<String>) {
        let (seen, fields, operations) = (self.seen, self.fields, self.operations);
        let (s, t) = (&seen[i], &mut self.text);
        let ms = s.sorted_ms();
        let q = |p: f64| quantile(&ms, p);
        let plan = s.plan().map(|p| format!(", plan {p}")).unwrap_or_default();
        if let Some(step) = &s.txn {
            self.names
                .insert(i, format!("{gname} step {}/{}", step.pos + 1, step.of));
            let _ = writeln!(t, "[[group.steps]]");
            if s.coll != *coll {
                let _ = writeln!(t, "collection = {}", Value::String(s.coll.clone()));
            }
            let _ = writeln!(
                t,
                "# source p50 {:.1} ms, p95 {:.1} ms{plan}",
                q(0.5),
                q(0.95)
            );
        } else {
            let oname = op_name(s, taken);
            self.names.insert(i, format!("{gname}:{oname}"));
            let _ = writeln!(
                t,
                "[[group.ops]]\nname = {}\nweight = {}",
                Value::String(oname),
                s.count
            );
            let _ = writeln!(
                t,
                "# {} operations ({:.1} %), source p50 {:.1} ms, p95 {:.1} ms{plan}",
                s.count,
                if operations > 0 {
                    100.0 * crate::num::real(s.count) / crate::num::real(operations)
                } else {
                    0.0
                },
                q(0.5),
                q(0.95)
            );
        }
        let args = to_toml(&Bson::Document(s.op.args.clone()), &|slot| {
            Some(slot_value(s, slot, fields))
        });
        let _ = writeln!(t, "{} = {args}", s.op.verb.name());
    }
}

/// A server index (`listIndexes`) as the profile's index spec: its keys and options.
fn index_spec(ix: &Document) -> String {
    let mut spec = toml::Table::new();
    let to = |v: &Bson| to_toml(v, &|_| None);
    if let Some(Bson::Document(k)) = ix.get("key") {
        // Directions as integers (the legacy shell stored 1.0); index types as text.
        let keys: toml::Table = k
            .iter()
            .map(|(f, d)| {
                let v = match super::as_f64(d) {
                    Some(x) => Value::Integer(x as i64),
                    None => to(d),
                };
                (f.clone(), v)
            })
            .collect();
        spec.insert("keys".into(), Value::Table(keys));
    }
    for opt in [
        "name",
        "unique",
        "sparse",
        "partialFilterExpression",
        "expireAfterSeconds",
    ] {
        if let Some(v) = ix.get(opt) {
            spec.insert(opt.into(), to(v));
        }
    }
    Value::Table(spec).to_string()
}

/// A group's name: its application (or namespace), with its collection when the application
/// has groups on several, made apart from the report's own rows and from every name `taken`.
fn group_name(
    g: &Grouped,
    per_group_coll: &BTreeMap<&str, usize>,
    taken: &mut BTreeSet<String>,
) -> String {
    let group = &g.group;
    let base = if g.unit.is_some() {
        format!("{group}-transaction")
    } else if per_group_coll.get(group.as_str()).copied().unwrap_or(0) > 1 {
        format!("{group}-{}", g.coll)
    } else {
        group.clone()
    };
    let mut gname: String = base
        .chars()
        .map(|c| {
            if c.is_control() || ":@".contains(c) {
                '-'
            } else {
                c
            }
        })
        .collect();
    if gname.eq_ignore_ascii_case("TOTAL")
        || gname.starts_with("svc:")
        || gname.starts_with("warmup:")
    {
        gname = format!("app-{gname}");
    }
    while !taken.insert(gname.clone()) {
        gname.push('_');
    }
    gname
}

/// The captured profile's database: the source's name with `_replay` (within MongoDB's 63 bytes).
pub(crate) fn replay_database(source: &str) -> String {
    let mut base: String = source.to_string();
    while base.len() > 63 - "_replay".len() {
        base.pop();
    }
    format!("{base}_replay")
}

/// A rate as the profile writes it: never below the least rate a profile takes, with the
/// significant digits a slow rate needs.
fn rate_text(rate: f64) -> String {
    let r = rate.max(crate::plan::limits::MIN_RATE);
    let text = if r >= 100.0 {
        format!("{r:.1}")
    } else if r >= 1.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.6}")
    };
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// The most intervals that overlap at one instant.
fn peak_in_flight(intervals: &mut [(i64, i64)]) -> usize {
    let mut events: Vec<(i64, i32)> = Vec::with_capacity(intervals.len() * 2);
    for (a, b) in intervals.iter() {
        events.push((*a, 1));
        events.push(((*b).max(*a + 1), -1));
    }
    events.sort();
    let (mut cur, mut peak) = (0i32, 0i32);
    for (_, d) in events {
        cur += d;
        peak = peak.max(cur);
    }
    peak.max(0) as usize
}

/// `shapes.tsv`: one line per shape.
pub(crate) fn shapes_tsv(c: &Captured) -> String {
    let mut out = String::from("namespace\toperation\tshape\tcount\tshare\tops_per_sec\tp50_ms\tp95_ms\tmax_ms\tplan\tkeys_per_returned\tdocs_per_returned\temitted\treturned_per_call\treplay_returned_per_call\n");
    let opt = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{x:.2}"));
    for s in &c.shapes {
        let clean = |t: &str| t.replace(['\t', '\n'], " ");
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{:.4}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{}\t{}\t{}\t{}\t{}\t{}",
            clean(&s.namespace),
            s.operation,
            clean(&s.shape),
            s.count,
            s.share,
            s.ops_per_sec,
            s.p50_ms,
            s.p95_ms,
            s.max_ms,
            clean(s.plan.as_deref().unwrap_or("-")),
            opt(s.keys_per_returned),
            opt(s.docs_per_returned),
            clean(&s.emitted),
            opt(s.returned_per_call),
            opt(s.replay_returned_per_call)
        );
    }
    out
}

/// The console's account: the shapes and one line of coverage.
/// The check of what the replay's reads select: per read measured, "returned N per call in
/// the source, about M in the replay"; and a warning for each that selects nothing where the
/// source selected something, or far from it, naming its fields and the fix.
pub(crate) fn selectivity(c: &Captured, draws: u32) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut warnings = Vec::new();
    let checked: Vec<&ShapeStat> = c
        .shapes
        .iter()
        .filter(|s| s.replay_returned_per_call.is_some())
        .collect();
    if checked.is_empty() {
        return (out, warnings);
    }
    let width = checked
        .iter()
        .map(|s| s.emitted.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "selectivity: documents returned per call, in the source (its nreturned) and in the replay (up to {draws} draws each on a scratch server holding the profile's preload):"
    );
    for s in &checked {
        let replay = s.replay_returned_per_call.unwrap_or(0.0);
        let source = match s.returned_per_call {
            Some(n) => format!("returned {n:.1} per call in the source"),
            None => "the source did not say what it returned".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {source}, about {replay:.1} in the replay",
            s.emitted
        );
        let Some(n) = s.returned_per_call else {
            continue;
        };
        let fields = if s.selects_by.is_empty() {
            "its filter".to_string()
        } else {
            format!("its values of {}", s.selects_by.join(", "))
        };
        if n >= 0.5 && replay < 0.05 {
            warnings.push(format!(
                "{} returned {n:.1} documents per call in the source but selects none in the replay: {fields} match no preloaded document\n  fix: capture with --uri (so the documents are sampled) or --keep-values, or give those fields in [collection.document] the values the filter draws",
                s.emitted
            ));
        } else if n >= 1.0 && (replay / n > 2.0 || replay / n < 0.5) {
            warnings.push(format!(
                "{} returned {n:.1} documents per call in the source but about {replay:.1} in the replay: {fields} select another share of the documents\n  fix: make the documents' values of those fields in [collection.document] select as the source's did: for placeholders, a ^RandomInt max of the preload divided by {n:.1}; for a range, the documents' range of the source",
                s.emitted
            ));
        }
    }
    (out, warnings)
}

pub(crate) fn console(c: &Captured) -> String {
    let mut out = String::new();
    // As wide as the longest name: a name is never cut (the shapes are: shapes.tsv has them whole).
    let width = c
        .shapes
        .iter()
        .take(30)
        .map(|s| s.emitted.chars().count())
        .max()
        .unwrap_or(0)
        .max("emitted as".len());
    let _ = writeln!(
        out,
        "{:>7}  {:>6}  {:>8}  {:>8}  {:<width$}  shape",
        "share", "count", "ops/s", "p95 ms", "emitted as"
    );
    for s in c.shapes.iter().take(30) {
        let shape: String = format!("{} {}", s.namespace, s.shape)
            .chars()
            .take(100)
            .collect();
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>6}  {:>8.2}  {:>8.1}  {:<width$}  {}",
            100.0 * s.share,
            s.count,
            s.ops_per_sec,
            s.p95_ms,
            s.emitted,
            shape
        );
    }
    for s in c
        .shapes
        .iter()
        .filter(|s| s.writes && s.emitted.starts_with("not emitted"))
    {
        let _ = writeln!(
            out,
            "left out: a write, {} {} ({} operations), {}; it changes what the other operations find (raise --max-shapes to keep it)",
            s.namespace, s.shape, s.count, s.emitted
        );
    }
    if c.shapes.len() > 30 {
        let _ = writeln!(
            out,
            "... and {} more shapes (shapes.tsv has them all)",
            c.shapes.len() - 30
        );
    }
    let l = &c.left_out;
    let mut parts = Vec::new();
    let mut say = |n: u64, what: &str| {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    };
    say(l.driver_total(), "driver commands");
    say(l.getmore_folded, "getMore folded");
    say(
        l.double_logged,
        "update/delete command lines counted by their statements",
    );
    say(
        l.other_total(),
        &format!(
            "DDL, admin or change streams ({})",
            l.other.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    );
    say(
        l.partial_transactions,
        "partial transactions (statements captured one by one)",
    );
    say(
        l.aborted_transactions,
        "aborted transactions (statements captured one by one)",
    );
    say(
        l.truncated,
        "truncated commands (shapes kept as far as they go)",
    );
    say(l.not_json, "lines not JSON");
    say(l.not_operations, "lines not operations");
    say(l.outside_window, "outside --since/--until");
    let _ = writeln!(
        out,
        "{} operations{} seen over {:.1} s{}: {} shapes cover {:.1} %{}",
        c.operations,
        if l.transactions > 0 {
            format!(" ({} of them transactions)", l.transactions)
        } else {
            String::new()
        },
        c.window_s,
        match c.capture_window_s {
            Some(w) => format!(
                " of the {w:.1} s window (the rates are over the {:.1} s)",
                c.window_s
            ),
            None => String::new(),
        },
        c.emitted_shapes,
        100.0 * c.coverage,
        if parts.is_empty() {
            String::new()
        } else {
            format!("; left out: {}", parts.join(", "))
        }
    );
    for b in &c.blind {
        let _ = writeln!(out, "note: {b}");
    }
    out
}

#[cfg(test)]
mod tests;
