//! An observed command to a shape: the operation a profile sends for it (`Verb`) and its
//! arguments with every literal a typed slot, keeping operators, field paths, `"$field"`
//! references, sort, projection, pipeline stages and update operators. `$in`, `$nin` and `$all`
//! lists are one slot whatever their length; `limit`, `skip` and update amounts (`$inc`) are
//! parameters; session and driver fields are dropped. Expressions (`$group`, `$project`,
//! `$expr`, pipeline updates) are kept as written: their literals are the query's logic, not
//! its data.

use mongodb::bson::{Bson, Document};

use super::Observed;
use crate::workload::command::Verb;

/// A slot marker in shaped arguments: `\u{1}` and the slot's index.
const MARK: char = '\u{1}';

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SlotKind {
    /// A field's value (equality, comparison, `$set`, a replacement's field).
    Value,
    /// A list of a field's values (`$in`, `$nin`, `$all`, `$each`, an array compared whole).
    List,
    /// A number that is part of the request, not of the data (`limit`, `skip`, `$inc` amounts).
    Param,
}

/// One slot: where it is, and the field its values are values of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Slot {
    pub(crate) kind: SlotKind,
    /// The field path (`status`, `items.qty`), for Value and List slots.
    pub(crate) field: Option<String>,
    /// Where in the arguments (`filter.created.$gte`), for names and messages.
    pub(crate) path: String,
}

/// An operation of the profile: what it sends and the values it was seen with.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) verb: Verb,
    /// The arguments, each literal replaced by a marker of its slot.
    pub(crate) args: Document,
    pub(crate) slots: Vec<Slot>,
    /// The values seen, one per slot (a List slot's value is the array).
    pub(crate) values: Vec<Bson>,
    /// Documents per insert command.
    pub(crate) batch: u64,
}

impl Op {
    /// The shape's identity: namespace-free arguments with each slot as its type.
    pub(crate) fn key(&self) -> String {
        let mut rendered = self.args.clone();
        for (i, v) in self.values.iter().enumerate() {
            replace_marker(
                &mut rendered,
                i,
                &Bson::String(format!("?{}", type_name(v))),
            );
        }
        let batch = if self.verb == Verb::InsertMany {
            format!(" batch {}", self.batch)
        } else {
            String::new()
        };
        format!(
            "{} {}{batch}",
            self.verb.name(),
            Bson::Document(rendered).into_relaxed_extjson()
        )
    }
}

/// What an observed operation is to a capture.
#[derive(Debug, Clone)]
pub(crate) enum Class {
    /// One or more operations of the profile (an update command may hold several statements).
    Ops(Vec<Op>),
    GetMore,
    /// A driver or monitoring command, by name.
    Driver(String),
    TransactionControl,
    /// DDL, admin commands, change streams: left out, by name.
    Other(String),
    /// The command line of an update or delete whose statements have lines of their own.
    DoubleLogged,
}

/// Commands drivers and monitoring send on their own.
const DRIVER: &[&str] = &[
    "hello",
    "isMaster",
    "ismaster",
    "ping",
    "saslStart",
    "saslContinue",
    "authenticate",
    "logout",
    "getnonce",
    "endSessions",
    "startSession",
    "refreshSessions",
    "killCursors",
    "serverStatus",
    "buildInfo",
    "buildinfo",
    "getParameter",
    "getCmdLineOpts",
    "hostInfo",
    "connectionStatus",
    "listDatabases",
    "replSetGetStatus",
    "getLog",
    "getFreeMonitoringStatus",
    "whatsmyuri",
    "_isSelf",
    "dbStats",
    "collStats",
    "top",
    "currentOp",
    "features",
    "atlasVersion",
    "getDefaultRWConcern",
];

/// Classifies one observed operation. `statements_logged`: the source logs updates and deletes
/// per statement, so their command lines are counted once only, by the statements.
pub(crate) fn classify(o: &Observed, statements_logged: bool) -> Class {
    let name = o.command.keys().next().map(String::as_str).unwrap_or("");
    match o.op_type.as_str() {
        "update" if o.command.contains_key("q") => {
            return Class::Ops(vec![update_statement(&o.command)])
        }
        "remove" | "delete" if o.command.contains_key("q") => {
            return Class::Ops(vec![delete_statement(&o.command)])
        }
        "getmore" => return Class::GetMore,
        _ => {}
    }
    match name {
        "find" => Class::Ops(vec![find(&o.command)]),
        "aggregate" => {
            let pipeline = o.command.get_array("pipeline").cloned().unwrap_or_default();
            let first = pipeline
                .first()
                .and_then(Bson::as_document)
                .and_then(|s| s.keys().next().cloned());
            if first.as_deref() == Some("$changeStream") {
                return Class::Other("changeStream".into());
            }
            Class::Ops(vec![aggregate(&o.command)])
        }
        "count" => Class::Ops(vec![count(&o.command)]),
        "distinct" => Class::Ops(vec![distinct(&o.command)]),
        "insert" => {
            let n = o
                .ninserted
                .map(|n| u64::try_from(n.max(1)).unwrap_or(1))
                .or_else(|| {
                    o.command
                        .get_array("documents")
                        .ok()
                        .map(|a| a.len().max(1) as u64)
                })
                .unwrap_or(1);
            Class::Ops(vec![insert(n)])
        }
        "update" => match o.command.get_array("updates") {
            Ok(us) if !statements_logged => Class::Ops(
                us.iter()
                    .filter_map(Bson::as_document)
                    .map(update_statement)
                    .collect(),
            ),
            _ => Class::DoubleLogged,
        },
        "delete" => match o.command.get_array("deletes") {
            Ok(ds) if !statements_logged => Class::Ops(
                ds.iter()
                    .filter_map(Bson::as_document)
                    .map(delete_statement)
                    .collect(),
            ),
            _ => Class::DoubleLogged,
        },
        "findAndModify" | "findandmodify" => Class::Ops(vec![find_and_modify(&o.command)]),
        "getMore" => Class::GetMore,
        "commitTransaction" | "abortTransaction" => Class::TransactionControl,
        n if DRIVER.contains(&n) => Class::Driver(n.to_string()),
        "" => Class::Other("(empty command)".into()),
        n => Class::Other(n.to_string()),
    }
}

/// Builds shaped arguments, collecting slots and values.
struct Shaper {
    slots: Vec<Slot>,
    values: Vec<Bson>,
}

impl Shaper {
    fn new() -> Shaper {
        Shaper {
            slots: Vec::new(),
            values: Vec::new(),
        }
    }

    /// A shaper and the arguments begun with `filter`: the command's `key` (`filter`, `q`,
    /// `query`) shaped.
    fn with_filter(c: &Document, key: &str) -> (Shaper, Document) {
        let mut s = Shaper::new();
        let filter = s.filter(
            &c.get_document(key).cloned().unwrap_or_default(),
            "",
            "filter",
        );
        let mut args = Document::new();
        args.insert("filter", filter);
        (s, args)
    }

    fn slot(&mut self, kind: SlotKind, field: Option<&str>, path: &str, value: Bson) -> Bson {
        let i = self.slots.len();
        self.slots.push(Slot {
            kind,
            field: field.map(str::to_string),
            path: path.to_string(),
        });
        self.values.push(value);
        Bson::String(format!("{MARK}{i}"))
    }

    fn param(&mut self, path: &str, v: &Bson) -> Bson {
        if super::as_f64(v).is_some() {
            self.slot(SlotKind::Param, None, path, v.clone())
        } else {
            v.clone()
        }
    }

    /// A query filter (`filter`, `query`, `q`, `$match`), fields under `base`.
    fn filter(&mut self, d: &Document, base: &str, path: &str) -> Document {
        let mut out = Document::new();
        for (k, v) in d {
            let p = format!("{path}.{k}");
            let shaped = if k.starts_with('$') {
                self.operator(k, v, base, &p)
            } else {
                let field = join(base, k);
                match v {
                    Bson::Document(sub)
                        if sub.keys().next().is_some_and(|k| k.starts_with('$')) =>
                    {
                        Bson::Document(self.filter(sub, &field, &p))
                    }
                    Bson::Document(sub) => Bson::Document(self.literal_doc(sub, &field, &p)),
                    Bson::Array(a) if a.iter().all(is_literal) => {
                        self.slot(SlotKind::List, Some(&field), &p, Bson::Array(a.clone()))
                    }
                    v if is_literal(v) => self.slot(SlotKind::Value, Some(&field), &p, v.clone()),
                    v => v.clone(),
                }
            };
            out.insert(k.clone(), shaped);
        }
        out
    }

    /// A query operator's argument, for the field `base`.
    fn operator(&mut self, op: &str, v: &Bson, base: &str, path: &str) -> Bson {
        match (op, v) {
            ("$and" | "$or" | "$nor", Bson::Array(a)) => Bson::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, e)| match e {
                        Bson::Document(d) => {
                            Bson::Document(self.filter(d, base, &format!("{path}[{i}]")))
                        }
                        e => e.clone(),
                    })
                    .collect(),
            ),
            ("$in" | "$nin" | "$all", Bson::Array(a)) if a.iter().all(is_literal) => {
                self.slot(SlotKind::List, Some(base), path, v.clone())
            }
            ("$elemMatch" | "$not", Bson::Document(d)) => {
                Bson::Document(self.filter(d, base, path))
            }
            ("$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte", v) if is_literal(v) => {
                self.slot(SlotKind::Value, Some(base), path, v.clone())
            }
            ("$regex", Bson::String(_)) => self.slot(SlotKind::Value, Some(base), path, v.clone()),
            ("$size", v) => self.param(path, v),
            // $exists, $type, $options, $expr, $text, $geo*, $where: the query's logic.
            _ => v.clone(),
        }
    }

    /// A document compared or written whole: each leaf a value of its field.
    fn literal_doc(&mut self, d: &Document, base: &str, path: &str) -> Document {
        let mut out = Document::new();
        for (k, v) in d {
            let field = join(base, k);
            let p = format!("{path}.{k}");
            let shaped = match v {
                Bson::Document(sub) if !sub.keys().any(|k| k.starts_with('$')) => {
                    Bson::Document(self.literal_doc(sub, &field, &p))
                }
                Bson::Array(a) if a.iter().all(is_literal) => {
                    self.slot(SlotKind::List, Some(&field), &p, v.clone())
                }
                v if is_literal(v) => self.slot(SlotKind::Value, Some(&field), &p, v.clone()),
                v => v.clone(),
            };
            out.insert(k.clone(), shaped);
        }
        out
    }

    /// An update document (`u`): operators with their fields, or a replacement.
    fn update(&mut self, u: &Bson, path: &str) -> Bson {
        let Bson::Document(d) = u else {
            // A pipeline update: expressions, kept as written.
            return u.clone();
        };
        if !d.keys().any(|k| k.starts_with('$')) {
            // A replacement's `_id` is the filter's document's own: sent again as another
            // value it would be refused (`_id` is immutable), so it is left out.
            let mut d = d.clone();
            d.remove("_id");
            return Bson::Document(self.literal_doc(&d, "", path));
        }
        let mut out = Document::new();
        for (op, fields) in d {
            let p = format!("{path}.{op}");
            let shaped = match (op.as_str(), fields) {
                ("$set" | "$setOnInsert", Bson::Document(f)) => {
                    Bson::Document(self.literal_doc(f, "", &p))
                }
                ("$inc" | "$mul" | "$min" | "$max", Bson::Document(f)) => {
                    let mut o = Document::new();
                    for (k, v) in f {
                        o.insert(k.clone(), self.param(&format!("{p}.{k}"), v));
                    }
                    Bson::Document(o)
                }
                ("$push" | "$addToSet", Bson::Document(f)) => {
                    let mut o = Document::new();
                    for (k, v) in f {
                        let pk = format!("{p}.{k}");
                        let s = match v {
                            Bson::Document(e) if e.contains_key("$each") => {
                                let mut e2 = e.clone();
                                if let Ok(a) = e.get_array("$each") {
                                    if a.iter().all(is_literal) {
                                        e2.insert(
                                            "$each",
                                            self.slot(
                                                SlotKind::List,
                                                Some(k),
                                                &pk,
                                                Bson::Array(a.clone()),
                                            ),
                                        );
                                    }
                                }
                                Bson::Document(e2)
                            }
                            v if is_literal(v) => {
                                self.slot(SlotKind::Value, Some(k), &pk, v.clone())
                            }
                            v => v.clone(),
                        };
                        o.insert(k.clone(), s);
                    }
                    Bson::Document(o)
                }
                // $unset, $rename, $currentDate, $pop, $pull, $bit: kept as written.
                (_, v) => v.clone(),
            };
            out.insert(op.clone(), shaped);
        }
        Bson::Document(out)
    }

    fn pipeline(&mut self, stages: &[Bson]) -> Vec<Bson> {
        stages
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let Some(d) = s.as_document() else {
                    return s.clone();
                };
                let Some((name, arg)) = d.iter().next() else {
                    return s.clone();
                };
                let p = format!("pipeline[{i}].{name}");
                let shaped = match (name.as_str(), arg) {
                    ("$match", Bson::Document(f)) => Bson::Document(self.filter(f, "", &p)),
                    ("$limit" | "$skip", v) => self.param(&p, v),
                    ("$sample", Bson::Document(f)) => {
                        let mut o = f.clone();
                        if let Some(size) = f.get("size") {
                            o.insert("size", self.param(&format!("{p}.size"), size));
                        }
                        Bson::Document(o)
                    }
                    (_, v) => v.clone(),
                };
                let mut stage = Document::new();
                stage.insert(name.clone(), shaped);
                Bson::Document(stage)
            })
            .collect()
    }

    fn done(self, verb: Verb, args: Document, batch: u64) -> Op {
        Op {
            verb,
            args,
            slots: self.slots,
            values: self.values,
            batch,
        }
    }
}

fn find(c: &Document) -> Op {
    let (mut s, mut args) = Shaper::with_filter(c, "filter");
    for k in ["sort", "projection", "hint", "collation"] {
        if let Some(v) = c.get(k) {
            args.insert(k, v.clone());
        }
    }
    let limit = c.get("limit").and_then(super::as_i64);
    let one = limit == Some(1)
        || (limit.is_some() && c.get_bool("singleBatch").unwrap_or(false) && limit == Some(1));
    if let Some(v) = c.get("skip") {
        let p = s.param("skip", v);
        args.insert("skip", p);
    }
    if one {
        args.remove("limit");
        return s.done(Verb::FindOne, args, 1);
    }
    if let Some(v) = c
        .get("limit")
        .filter(|v| super::as_i64(v).is_some_and(|n| n > 0))
    {
        let p = s.param("limit", v);
        args.insert("limit", p);
    }
    s.done(Verb::Find, args, 1)
}

fn aggregate(c: &Document) -> Op {
    let mut s = Shaper::new();
    let stages = c.get_array("pipeline").cloned().unwrap_or_default();
    let mut args = Document::new();
    args.insert("pipeline", s.pipeline(&stages));
    for k in ["allowDiskUse", "hint"] {
        if let Some(v) = c.get(k) {
            args.insert(k, v.clone());
        }
    }
    s.done(Verb::Aggregate, args, 1)
}

/// `count` with a query is sent as `countDocuments` (the same filter, planned the same way);
/// without one, as `estimatedDocumentCount` (a count of the whole collection).
fn count(c: &Document) -> Op {
    let mut s = Shaper::new();
    let query = c.get_document("query").cloned().unwrap_or_default();
    if query.is_empty() {
        return s.done(Verb::EstimatedDocumentCount, Document::new(), 1);
    }
    let mut args = Document::new();
    args.insert("filter", s.filter(&query, "", "filter"));
    for k in ["limit", "skip"] {
        if let Some(v) = c.get(k).filter(|v| super::as_i64(v).is_some_and(|n| n > 0)) {
            let p = s.param(k, v);
            args.insert(k, p);
        }
    }
    if let Some(h) = c.get("hint") {
        args.insert("hint", h.clone());
    }
    s.done(Verb::CountDocuments, args, 1)
}

fn distinct(c: &Document) -> Op {
    let mut s = Shaper::new();
    let mut args = Document::new();
    args.insert(
        "key",
        c.get("key").cloned().unwrap_or(Bson::String(String::new())),
    );
    let query = c.get_document("query").cloned().unwrap_or_default();
    if !query.is_empty() {
        args.insert("filter", s.filter(&query, "", "filter"));
    }
    s.done(Verb::Distinct, args, 1)
}

fn insert(n: u64) -> Op {
    let s = Shaper::new();
    let mut args = Document::new();
    if n > 1 {
        args.insert("batch", crate::num::signed(n));
        return s.done(Verb::InsertMany, args, n);
    }
    s.done(Verb::InsertOne, args, 1)
}

fn update_statement(st: &Document) -> Op {
    let (mut s, mut args) = Shaper::with_filter(st, "q");
    let u = st
        .get("u")
        .cloned()
        .unwrap_or(Bson::Document(Document::new()));
    let replacement = matches!(&u, Bson::Document(d) if !d.keys().any(|k| k.starts_with('$')));
    let multi = st.get_bool("multi").unwrap_or(false);
    let verb = if replacement {
        args.insert("replacement", s.update(&u, "replacement"));
        Verb::ReplaceOne
    } else {
        args.insert("update", s.update(&u, "update"));
        if multi {
            Verb::UpdateMany
        } else {
            Verb::UpdateOne
        }
    };
    if st.get_bool("upsert").unwrap_or(false) {
        args.insert("upsert", true);
    }
    for k in ["arrayFilters", "hint", "collation"] {
        if let Some(v) = st.get(k) {
            if verb != Verb::ReplaceOne || k != "arrayFilters" {
                args.insert(k, v.clone());
            }
        }
    }
    s.done(verb, args, 1)
}

fn delete_statement(st: &Document) -> Op {
    let (s, mut args) = Shaper::with_filter(st, "q");
    for k in ["hint", "collation"] {
        if let Some(v) = st.get(k) {
            args.insert(k, v.clone());
        }
    }
    let one = st.get("limit").and_then(super::as_i64) == Some(1);
    s.done(
        if one {
            Verb::DeleteOne
        } else {
            Verb::DeleteMany
        },
        args,
        1,
    )
}

fn find_and_modify(c: &Document) -> Op {
    let (mut s, mut args) = Shaper::with_filter(c, "query");
    for (from, to) in [("sort", "sort"), ("fields", "projection")] {
        if let Some(v) = c.get(from) {
            args.insert(to, v.clone());
        }
    }
    let verb = if c.get_bool("remove").unwrap_or(false) {
        Verb::FindOneAndDelete
    } else {
        let u = c
            .get("update")
            .cloned()
            .unwrap_or(Bson::Document(Document::new()));
        let replacement = matches!(&u, Bson::Document(d) if !d.keys().any(|k| k.starts_with('$')));
        if c.get_bool("upsert").unwrap_or(false) {
            args.insert("upsert", true);
        }
        if c.get_bool("new").unwrap_or(false) {
            args.insert("returnDocument", "after");
        }
        if replacement {
            args.insert("replacement", s.update(&u, "replacement"));
            Verb::FindOneAndReplace
        } else {
            args.insert("update", s.update(&u, "update"));
            Verb::FindOneAndUpdate
        }
    };
    s.done(verb, args, 1)
}

/// A value that is data: not a document or array (those are walked), nor a `"$field"` path.
fn is_literal(v: &Bson) -> bool {
    match v {
        // `null` in a query means "missing or null": the query's logic, kept as written.
        Bson::Document(_) | Bson::Array(_) | Bson::Null | Bson::Undefined => false,
        Bson::String(s) => !s.starts_with('$'),
        Bson::JavaScriptCode(_) | Bson::JavaScriptCodeWithScope(_) | Bson::RegularExpression(_) => {
            false
        }
        _ => true,
    }
}

fn join(base: &str, k: &str) -> String {
    if base.is_empty() {
        k.to_string()
    } else {
        format!("{base}.{k}")
    }
}

/// The kind of a value, numbers as one kind, a list by its elements.
pub(crate) fn type_name(v: &Bson) -> String {
    match v {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => "number".into(),
        Bson::String(_) => "string".into(),
        Bson::DateTime(_) => "date".into(),
        Bson::ObjectId(_) => "objectId".into(),
        Bson::Boolean(_) => "bool".into(),
        Bson::Null | Bson::Undefined => "null".into(),
        Bson::Binary(_) => "binary".into(),
        Bson::Array(a) => {
            let mut kinds: Vec<String> = a.iter().map(type_name).collect();
            kinds.sort();
            kinds.dedup();
            format!("[{}]", kinds.join("|"))
        }
        Bson::Timestamp(_) => "timestamp".into(),
        _ => "other".into(),
    }
}

/// Replaces slot `i`'s marker in `d` (at any depth) with `with`.
pub(crate) fn replace_marker(d: &mut Document, i: usize, with: &Bson) {
    let mark = format!("{MARK}{i}");
    for (_, v) in d.iter_mut() {
        replace_in(v, &mark, with);
    }
}

fn replace_in(v: &mut Bson, mark: &str, with: &Bson) {
    match v {
        Bson::String(s) if s == mark => *v = with.clone(),
        Bson::Document(d) => {
            for (_, x) in d.iter_mut() {
                replace_in(x, mark, with);
            }
        }
        Bson::Array(a) => {
            for x in a.iter_mut() {
                replace_in(x, mark, with);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
