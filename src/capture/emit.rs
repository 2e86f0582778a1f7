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
pub struct ShapeStat {
    pub namespace: String,
    pub operation: &'static str,
    pub shape: String,
    pub count: u64,
    pub share: f64,
    pub ops_per_sec: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
    pub plan: Option<String>,
    pub keys_per_returned: Option<f64>,
    pub docs_per_returned: Option<f64>,
    /// `group:name` when emitted, else why not.
    pub emitted: String,
}

/// The capture's result: the profile's text and its account.
#[derive(Debug, Clone, Serialize)]
pub struct Captured {
    pub source: String,
    pub first: Option<String>,
    pub last: Option<String>,
    pub window_s: f64,
    /// Operations of the kinds a profile sends (statements of updates and deletes one each).
    pub operations: u64,
    pub emitted_shapes: usize,
    /// Share of the operations the emitted shapes cover, 0..=1.
    pub coverage: f64,
    pub database: Option<String>,
    pub shapes: Vec<ShapeStat>,
    pub left_out: LeftOut,
    /// What the source cannot see, said once.
    pub blind: Vec<String>,
    pub scale: f64,
    #[serde(skip)]
    pub profile: String,
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
        .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
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

/// Builds the profile and the account from what the source observed.
pub fn build(
    observed: &[Observed],
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    name: &str,
    source: &str,
    mut left: LeftOut,
) -> Captured {
    let statements_logged = observed
        .iter()
        .any(|o| matches!(o.op_type.as_str(), "update" | "remove") && o.command.contains_key("q"));
    let txns = super::txn::group(observed);
    let mut seen: Vec<Seen> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    let mut operations = 0u64;
    let group_of = |o: &Observed| match opts.group_by {
        GroupBy::App => o
            .app
            .clone()
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| "app".into()),
        GroupBy::Namespace => format!("{}.{}", o.db, o.coll),
        GroupBy::None => "all".into(),
    };
    for (oi, o) in observed.iter().enumerate() {
        if o.truncated {
            left.truncated += 1;
        }
        let ops = match shape::classify(o, statements_logged) {
            Class::Ops(ops) => ops,
            Class::GetMore => {
                left.getmore_folded += 1;
                continue;
            }
            Class::Driver(n) => {
                *left.driver.entry(n).or_default() += 1;
                continue;
            }
            Class::TransactionControl => {
                left.transaction_control += 1;
                continue;
            }
            Class::Other(n) => {
                *left.other.entry(n).or_default() += 1;
                continue;
            }
            Class::DoubleLogged => {
                left.double_logged += 1;
                continue;
            }
        };
        if txns.member.contains_key(&oi) {
            continue; // a step of its transaction, below
        }
        first = first.min(o.ts_ms);
        last = last.max(o.ts_ms);
        let group = group_of(o);
        for op in ops {
            operations += 1;
            let key = format!("{}.{} {} {}", o.db, o.coll, group, op.key());
            record(&mut seen, &mut index, key, o, op, &group, None);
        }
    }
    // Each complete transaction is one operation of its steps.
    for members in &txns.complete {
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
            continue;
        };
        let group = group_of(head);
        if steps.iter().any(|(o, _)| o.db != head.db) {
            // A profile runs on one database: such a transaction's statements one by one.
            left.partial_transactions += 1;
            for (o, op) in steps {
                operations += 1;
                let key = format!("{}.{} {} {}", o.db, o.coll, group, op.key());
                record(&mut seen, &mut index, key, o, op, &group, None);
            }
            continue;
        }
        operations += 1;
        left.transactions += 1;
        let unit = steps
            .iter()
            .map(|(o, op)| format!("{}.{} {}", o.db, o.coll, op.key()))
            .collect::<Vec<_>>()
            .join(" ; ");
        let unit = format!("{group} {unit}");
        let of = steps.len();
        for (pos, (o, op)) in steps.into_iter().enumerate() {
            first = first.min(o.ts_ms);
            last = last.max(o.ts_ms);
            let key = format!("transaction {unit} #{pos}");
            let step = Step {
                unit: unit.clone(),
                pos,
                of,
            };
            record(&mut seen, &mut index, key, o, op, &group, Some(step));
        }
    }
    left.partial_transactions += txns.partial;
    left.aborted_transactions = txns.aborted;
    let mut blind = Vec::new();
    if !txns.commits_visible && left.transactions + left.partial_transactions > 0 {
        blind.push("the source shows no commitTransaction (a database's profiler never does: commits run on admin): a transaction whose first statement was seen is taken as committed, and one the window cut may lack its last statements".to_string());
    }
    if left.partial_transactions > 0 {
        blind.push(format!("{} transactions were seen only in part (their first statement or commit outside the window, or a statement entry without its session beside them, as secantusd-rs's profiler writes an update's or a delete's statements): their statements are captured one by one", left.partial_transactions));
    }
    let window_s = opts.window_s.unwrap_or_else(|| {
        if first <= last {
            ((last - first) as f64 / 1000.0).max(1.0)
        } else {
            1.0
        }
    });
    // Largest first; a transaction's steps together and in order.
    seen.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.unit().cmp(&b.unit()))
            .then(a.pos().cmp(&b.pos()))
    });

    // The profile is for one database: the one with the most operations.
    let mut per_db: BTreeMap<&str, u64> = BTreeMap::new();
    for s in seen.iter().filter(|s| s.pos() == 0) {
        *per_db.entry(&s.db).or_default() += s.count;
    }
    let database = per_db
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(d, _)| d.to_string());

    // The fewest shapes that cover the wanted share, at most max_shapes; a transaction is one
    // shape, its steps emitted or left out together.
    let mut emitted: Vec<usize> = Vec::new();
    let mut units = 0usize;
    let mut covered = 0u64;
    let mut reasons: Vec<String> = vec![String::new(); seen.len()];
    for (i, s) in seen.iter().enumerate() {
        if s.pos() > 0 {
            // The step before decided for the whole transaction.
            if emitted.last() == Some(&(i - 1)) {
                emitted.push(i);
            } else {
                reasons[i] = reasons[i - 1].clone();
            }
            continue;
        }
        reasons[i] = if Some(&s.db) != database.as_ref() {
            format!("another database ({}), not in this profile", s.db)
        } else if (covered as f64) >= opts.coverage * operations as f64 {
            "beyond --coverage".into()
        } else if units >= opts.max_shapes {
            "beyond --max-shapes".into()
        } else {
            emitted.push(i);
            covered += s.count;
            units += 1;
            continue;
        };
        left.shapes_not_emitted += 1;
        left.operations_not_emitted += s.count;
    }

    let now_ms = if last > i64::MIN { last } else { 0 };
    let fields = fit_fields(&seen, &emitted, infos, opts.keep_values, now_ms);
    let mut names: HashMap<usize, String> = HashMap::new();
    let profile = render(
        &seen,
        &emitted,
        infos,
        &fields,
        opts,
        name,
        source,
        window_s,
        operations,
        database.as_deref(),
        &mut names,
    );

    let shapes = seen
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ms = s.sorted_ms();
            let q = |p: f64| quantile(&ms, p);
            let per =
                |x: i64| (s.examined_known && s.returned > 0).then(|| x as f64 / s.returned as f64);
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
                    s.count as f64 / operations as f64
                } else {
                    0.0
                },
                ops_per_sec: s.count as f64 / window_s / opts.sample_rate,
                p50_ms: q(0.5),
                p95_ms: q(0.95),
                max_ms: ms.last().copied().unwrap_or(0.0),
                plan: s.plan().cloned(),
                keys_per_returned: per(s.keys_examined),
                docs_per_returned: per(s.docs_examined),
                emitted: names
                    .get(&i)
                    .cloned()
                    .unwrap_or_else(|| format!("not emitted: {}", reasons[i])),
            }
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
        operations,
        emitted_shapes: units,
        coverage: if operations > 0 {
            covered as f64 / operations as f64
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
}

fn fit_fields(
    seen: &[Seen],
    emitted: &[usize],
    infos: &HashMap<(String, String), CollectionInfo>,
    keep: bool,
    now_ms: i64,
) -> Fields {
    let mut pools: BTreeMap<(String, String), Vec<Bson>> = BTreeMap::new();
    let mut id_hits: HashMap<String, HashMap<String, u64>> = HashMap::new();
    let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for &i in emitted {
        let s = &seen[i];
        for (slot, vals) in s.op.slots.iter().zip(&s.values) {
            let Some(f) = &slot.field else { continue };
            if f == "_id" {
                let hits = id_hits.entry(s.coll.clone()).or_default();
                for v in vals {
                    *hits.entry(v.to_string()).or_default() += 1;
                }
                continue;
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
    let mut templates = HashMap::new();
    let colls: BTreeSet<String> = emitted.iter().map(|&i| seen[i].coll.clone()).collect();
    let db = emitted
        .first()
        .map(|&i| seen[i].db.clone())
        .unwrap_or_default();
    for coll in &colls {
        let info = infos.get(&(db.clone(), coll.clone()));
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
                let pool = pools.entry((coll.clone(), path.to_string())).or_default();
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
                .get(&(coll.clone(), p.clone()))
                .cloned()
                .unwrap_or_default();
            let mut g = fit::field(p, &vals, keep, now_ms);
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
        templates.insert(coll.clone(), (t, synthetic));
    }
    let mut gens = HashMap::new();
    for ((coll, f), vals) in &pools {
        gens.insert((coll.clone(), f.clone()), fit::field(f, vals, keep, now_ms));
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
    }
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

#[allow(clippy::too_many_arguments)]
fn render(
    seen: &[Seen],
    emitted: &[usize],
    infos: &HashMap<(String, String), CollectionInfo>,
    fields: &Fields,
    opts: &Options,
    name: &str,
    source: &str,
    window_s: f64,
    operations: u64,
    database: Option<&str>,
    names: &mut HashMap<usize, String>,
) -> String {
    let mut t = String::new();
    let heads = || emitted.iter().filter(|&&i| seen[i].pos() == 0);
    let covered: u64 = heads().map(|&i| seen[i].count).sum();
    let _ = writeln!(t, "# Captured by mongo-stress capture from {source}.");
    let _ =
        writeln!(
        t,
        "# {operations} operations in {window_s:.0} s; {} shapes emitted cover {:.1} % of them.",
        heads().count(),
        if operations > 0 { 100.0 * covered as f64 / operations as f64 } else { 0.0 }
    );
    if !opts.keep_values {
        let _ = writeln!(
            t,
            "# No observed value is written: strings are placeholders with the observed frequencies,\n# numbers and dates the observed ranges (--keep-values writes the values)."
        );
    }
    let _ = writeln!(t, "name = {}", Value::String(name.to_string()));
    let _ = writeln!(
        t,
        "description = {}",
        Value::String(format!("captured from {source}, rates x {}", opts.scale))
    );
    // Another database than the source's: the collections are dropped before each run, so a
    // run pointed at the source by mistake must never drop the source's own.
    let source_db = database.unwrap_or("test");
    let _ = writeln!(
        t,
        "\n# The source's database is {}; this one is named apart so that a run against the source\n# never drops its collections (rename it to use the same names elsewhere).\n[target]\ndatabase = {}",
        Value::String(source_db.to_string()),
        Value::String(replay_database(source_db))
    );

    // Collections.
    let mut colls: Vec<String> = Vec::new();
    for &i in emitted {
        if !colls.contains(&seen[i].coll) {
            colls.push(seen[i].coll.clone());
        }
    }
    let db = database.unwrap_or("");
    for coll in &colls {
        let info = infos.get(&(db.to_string(), coll.clone()));
        let _ = writeln!(
            t,
            "\n[[collection]]\nname = {}\ndrop = true",
            Value::String(coll.clone())
        );
        match info.and_then(|i| i.count) {
            Some(n) => {
                let preload = n.min(opts.preload_cap);
                let note = if n > preload {
                    format!(
                        "  # the server held {n} documents (capped at {})",
                        opts.preload_cap
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
        let mut idx: Vec<String> = Vec::new();
        let from_server = info.is_some_and(|i| !i.indexes.is_empty());
        if let Some(info) = info {
            for ix in &info.indexes {
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
                idx.push(Value::Table(spec).to_string());
            }
        }
        if !from_server {
            let mut named: Vec<Vec<(String, i64)>> = Vec::new();
            for &i in emitted {
                if seen[i].coll != *coll {
                    continue;
                }
                for p in seen[i].plans.keys() {
                    for keys in plan_indexes(p) {
                        if !named.contains(&keys) {
                            named.push(keys);
                        }
                    }
                }
            }
            for keys in named {
                let k: toml::Table = keys
                    .into_iter()
                    .map(|(k, v)| (k, Value::Integer(v)))
                    .collect();
                idx.push(format!("{{ keys = {} }}", Value::Table(k)));
            }
            if !idx.is_empty() {
                let _ = writeln!(
                    t,
                    "# indexes: the ones the plans named (no --uri to list the server's)"
                );
            }
        }
        if !idx.is_empty() {
            let _ = writeln!(t, "indexes = [\n  {},\n]", idx.join(",\n  "));
        }
        let _ = writeln!(t, "[collection.document]");
        if let Some(size) = info.and_then(|i| i.avg_size) {
            let _ = writeln!(t, "# the sampled documents average {size:.0} bytes");
        }
        if let Some((tmpl, synthetic)) = fields.templates.get(coll) {
            if *synthetic {
                let _ = writeln!(
                    t,
                    "# synthetic: made from the fields the operations use (no sampled documents)"
                );
            }
            for (k, v) in tmpl {
                let _ = writeln!(t, "{} = {v}", key(k));
            }
        }
    }

    // Groups: per (group, collection), in the order of their first shape; a group per
    // transaction shape.
    let mut groups: Vec<(String, String, Option<String>, Vec<usize>)> = Vec::new();
    for &i in emitted {
        let s = &seen[i];
        let unit = s.txn.as_ref().map(|t| t.unit.clone());
        let found = groups
            .iter_mut()
            .find(|g| g.0 == s.group && (g.2 == unit) && (unit.is_some() || g.1 == s.coll));
        match found {
            Some(g) => g.3.push(i),
            None => groups.push((s.group.clone(), s.coll.clone(), unit, vec![i])),
        }
    }
    let per_group_coll: BTreeMap<&str, usize> =
        groups
            .iter()
            .filter(|g| g.2.is_none())
            .fold(BTreeMap::new(), |mut m, g| {
                *m.entry(g.0.as_str()).or_default() += 1;
                m
            });
    let mut group_names: BTreeSet<String> = BTreeSet::new();
    let duration = (window_s.round() as u64).clamp(10, 600);
    for (group, coll, unit, members) in &groups {
        let base = if unit.is_some() {
            format!("{group}-transaction")
        } else if per_group_coll.get(group.as_str()).copied().unwrap_or(0) > 1 {
            format!("{group}-{coll}")
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
        while !group_names.insert(gname.clone()) {
            gname.push('_');
        }
        let txn = unit.is_some();
        let count: u64 = if txn {
            seen[members[0]].count
        } else {
            members.iter().map(|&i| seen[i].count).sum()
        };
        let observed_rate = count as f64 / window_s / opts.sample_rate;
        let rate = observed_rate * opts.scale;
        let conns: BTreeSet<&String> = members.iter().flat_map(|&i| seen[i].conns.iter()).collect();
        let mut intervals: Vec<(i64, i64)> = if txn {
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
        };
        let peak = peak_in_flight(&mut intervals);
        // The mean time of one operation: of a transaction, its steps' means added.
        let mean =
            |i: usize| seen[i].millis.iter().sum::<f64>() / seen[i].millis.len().max(1) as f64;
        let mean_ms: f64 = if txn {
            members.iter().map(|&i| mean(i)).sum()
        } else {
            let all: Vec<f64> = members
                .iter()
                .flat_map(|&i| seen[i].millis.iter().copied())
                .collect();
            all.iter().sum::<f64>() / all.len().max(1) as f64
        };
        let needed = (rate * mean_ms.max(1.0) / 1000.0 * 2.0).ceil() as usize;
        let threads = conns.len().max(peak).max(needed).clamp(1, 10_000);
        let _ = writeln!(
            t,
            "\n[[group]]\nname = {}\ncollection = {}",
            Value::String(gname.clone()),
            Value::String(coll.clone())
        );
        let _ = writeln!(
            t,
            "threads = {threads}  # connections seen: {}, most operations in flight at once: {peak}",
            conns.len()
        );
        let _ = writeln!(
            t,
            "rate = {}  # observed {observed_rate:.2}/s x --scale {}",
            rate_text(rate),
            opts.scale
        );
        let _ = writeln!(t, "duration = \"{duration}s\"");
        if fields.skewed.contains(coll) {
            let _ = writeln!(
                t,
                "keys = \"zipfian\"  # a tenth of the _ids seen took half the hits or more"
            );
        }
        if txn {
            let _ = writeln!(
                t,
                "transaction = true  # {count} transactions of {} statements seen whole ({:.1} % of the operations)",
                members.len(),
                if operations > 0 { 100.0 * count as f64 / operations as f64 } else { 0.0 }
            );
        }
        let mut taken = BTreeSet::new();
        for &i in members {
            let s = &seen[i];
            let ms = s.sorted_ms();
            let q = |p: f64| quantile(&ms, p);
            let plan = s.plan().map(|p| format!(", plan {p}")).unwrap_or_default();
            if let Some(step) = &s.txn {
                names.insert(i, format!("{gname} step {}/{}", step.pos + 1, step.of));
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
                let oname = op_name(s, &mut taken);
                names.insert(i, format!("{gname}:{oname}"));
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
                        100.0 * s.count as f64 / operations as f64
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
    t
}

/// The captured profile's database: the source's name with `_replay` (within MongoDB's 63 bytes).
pub fn replay_database(source: &str) -> String {
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
pub fn shapes_tsv(c: &Captured) -> String {
    let mut out = String::from("namespace\toperation\tshape\tcount\tshare\tops_per_sec\tp50_ms\tp95_ms\tmax_ms\tplan\tkeys_per_returned\tdocs_per_returned\temitted\n");
    let opt = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{x:.2}"));
    for s in &c.shapes {
        let clean = |t: &str| t.replace(['\t', '\n'], " ");
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{:.4}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{}\t{}\t{}\t{}",
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
            clean(&s.emitted)
        );
    }
    out
}

/// The console's account: the shapes and one line of coverage.
pub fn console(c: &Captured) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>7}  {:>6}  {:>8}  {:>8}  {:<30}  shape",
        "share", "count", "ops/s", "p95 ms", "emitted as"
    );
    for s in c.shapes.iter().take(30) {
        let shape: String = format!("{} {}", s.namespace, s.shape)
            .chars()
            .take(100)
            .collect();
        let as_: String = s.emitted.chars().take(30).collect();
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>6}  {:>8.2}  {:>8.1}  {:<30}  {}",
            100.0 * s.share,
            s.count,
            s.ops_per_sec,
            s.p95_ms,
            as_,
            shape
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
        "{} operations{} in {:.0} s: {} shapes cover {:.1} %{}",
        c.operations,
        if l.transactions > 0 {
            format!(" ({} of them transactions)", l.transactions)
        } else {
            String::new()
        },
        c.window_s,
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
mod tests {
    use super::*;
    use mongodb::bson::doc;

    fn op(ts: i64, command: Document, app: &str) -> Observed {
        Observed {
            ts_ms: ts,
            db: "shop".into(),
            coll: "orders".into(),
            op_type: "command".into(),
            command,
            millis: 2.0,
            app: Some(app.into()),
            conn: Some(format!("conn{}", ts % 3)),
            plan: Some("IXSCAN { status: 1, created: -1 }".into()),
            ..Default::default()
        }
    }

    #[test]
    fn shapes_are_counted_weighted_and_rendered_as_a_profile_that_validates() {
        let mut obs = Vec::new();
        for i in 0..90 {
            let status = ["open", "paid", "shipped"][i % 3];
            obs.push(op(1_000_000 + i as i64 * 100, doc! { "find": "orders", "filter": { "status": status }, "sort": { "created": -1 }, "limit": 20 }, "web"));
        }
        for i in 0..10 {
            obs.push(op(
                1_000_000 + i * 1000,
                doc! { "find": "orders", "filter": { "_id": i }, "limit": 1, "singleBatch": true },
                "web",
            ));
        }
        obs.push(op(1_009_999, doc! { "hello": 1 }, "web"));
        let c = build(
            &obs,
            &HashMap::new(),
            &Options {
                scale: 3.0,
                ..Default::default()
            },
            "cap",
            "a test",
            LeftOut::default(),
        );
        assert_eq!(c.operations, 100);
        assert_eq!(c.left_out.driver_total(), 1);
        assert_eq!(c.shapes.len(), 2);
        assert_eq!(c.shapes[0].count, 90);
        assert!(
            c.profile
                .contains("name = \"find-orders-by-status\"\nweight = 90"),
            "{}",
            c.profile
        );
        assert!(
            c.profile
                .contains("findOne = { filter = { _id = { \"^Key\" = {} } } }"),
            "{}",
            c.profile
        );
        // 100 operations from the first to the last, 9 s (the hello is no operation), times 3.
        assert!(
            c.profile
                .contains("rate = 33.33  # observed 11.11/s x --scale 3"),
            "{}",
            c.profile
        );
        assert!(
            c.profile
                .contains("{ keys = { status = 1, created = -1 } }"),
            "{}",
            c.profile
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, &c.profile).unwrap();
        let loaded = crate::plan::profile::load(path.to_str().unwrap()).unwrap();
        crate::plan::RunPlan::build(&loaded, &Default::default()).unwrap();
    }

    #[test]
    fn coverage_emits_the_fewest_shapes_and_counts_the_rest() {
        let mut obs = Vec::new();
        for i in 0..96 {
            obs.push(op(i, doc! { "find": "orders", "filter": { "a": 1 } }, "x"));
        }
        for i in 0..4 {
            obs.push(op(i, doc! { "find": "orders", "filter": { "b": 1 } }, "x"));
        }
        let c = build(
            &obs,
            &HashMap::new(),
            &Options::default(),
            "cap",
            "t",
            LeftOut::default(),
        );
        assert_eq!(c.emitted_shapes, 1);
        assert!((c.coverage - 0.96).abs() < 1e-9);
        assert_eq!(
            (
                c.left_out.shapes_not_emitted,
                c.left_out.operations_not_emitted
            ),
            (1, 4)
        );
        assert!(c.shapes[1].emitted.contains("beyond --coverage"));
    }

    #[test]
    fn a_field_seen_as_a_value_and_as_a_document_stays_a_document() {
        let mut t = toml::Table::new();
        insert_path(&mut t, "address", fit::bare("^Null"));
        insert_path(&mut t, "address.city", Value::String("x".into()));
        insert_path(&mut t, "address", Value::Integer(1));
        assert_eq!(
            Value::Table(t).to_string(),
            "{ address = { city = \"x\" } }"
        );
    }

    #[test]
    fn a_slow_rate_keeps_its_digits_and_never_falls_below_the_least() {
        assert_eq!(rate_text(0.0041667), "0.004167");
        assert_eq!(rate_text(1e-9), "0.001");
        assert_eq!(rate_text(2.4242), "2.42");
        assert_eq!(rate_text(138.03), "138");
        assert_eq!(rate_text(30.0), "30");
        assert_eq!(replay_database("shop"), "shop_replay");
        assert_eq!(replay_database(&"d".repeat(70)).len(), 63);
    }

    #[test]
    fn plan_summaries_name_their_indexes() {
        assert_eq!(
            plan_indexes("IXSCAN { status: 1, created: -1 }, IXSCAN { _id: 1 }"),
            vec![vec![("status".to_string(), 1), ("created".to_string(), -1)]]
        );
        assert!(plan_indexes("COLLSCAN").is_empty());
        // A key this cannot read leaves the whole index out, never half of it.
        assert!(plan_indexes("IXSCAN { a: 1, loc: \"2dsphere\" }").is_empty());
    }
}
