//! The compiled generators and how each makes its value.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use mongodb::bson::{oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use rand::distr::{weighted::WeightedIndex, Distribution, Uniform};
use rand::Rng;

use super::format::{self, Piece};
use super::time::When;
use super::{Cx, Node};

/// The most elements, characters or bytes one generated value may have: nothing longer fits in
/// a 16 MiB document.
pub(super) const MAX_LEN: i64 = 16 * 1024 * 1024;

/// Masks of the BSON types a node may make, to check an argument's generator at compile.
pub(super) mod ty {
    use mongodb::bson::Bson;

    pub const INT: u16 = 1;
    pub const DOUBLE: u16 = 2;
    pub const STRING: u16 = 4;
    pub const DATE: u16 = 8;
    pub const OID: u16 = 16;
    pub const DOC: u16 = 32;
    pub const ARRAY: u16 = 64;
    pub const BINARY: u16 = 128;
    pub const NULL: u16 = 256;
    pub const OTHER: u16 = 512;
    pub const ANY: u16 = 1023;
    pub const NUMBER: u16 = INT | DOUBLE;

    pub fn of(b: &Bson) -> u16 {
        match b {
            Bson::Int32(_) | Bson::Int64(_) => INT,
            Bson::Double(_) => DOUBLE,
            Bson::String(_) => STRING,
            Bson::DateTime(_) => DATE,
            Bson::ObjectId(_) => OID,
            Bson::Document(_) => DOC,
            Bson::Array(_) => ARRAY,
            Bson::Binary(_) => BINARY,
            Bson::Null => NULL,
            _ => OTHER,
        }
    }

    pub fn describe(mask: u16) -> String {
        let names = [
            (INT, "an integer"),
            (DOUBLE, "a double"),
            (STRING, "a string"),
            (DATE, "a date"),
            (OID, "an ObjectId"),
            (DOC, "a document"),
            (ARRAY, "an array"),
            (BINARY, "binary data"),
            (NULL, "null"),
            (OTHER, "another BSON type"),
        ];
        let parts: Vec<&str> = names
            .iter()
            .filter(|(m, _)| mask & m != 0)
            .map(|(_, n)| *n)
            .collect();
        parts.join(" or ")
    }
}

/// An integer argument: written, or generated per value.
#[derive(Debug, Clone)]
pub(super) enum Num {
    Const(i64),
    Gen(Box<Node>),
}

impl Num {
    pub(super) fn get(&self, cx: &mut Cx<'_>) -> i64 {
        match self {
            Num::Const(i) => *i,
            Num::Gen(n) => to_i64(&n.generate(cx)).unwrap_or(0),
        }
    }

    /// A length: 0 to `MAX_LEN`.
    fn len(&self, cx: &mut Cx<'_>) -> usize {
        self.get(cx).clamp(0, MAX_LEN) as usize
    }

    fn child(&self) -> Option<&Node> {
        match self {
            Num::Gen(n) => Some(n),
            Num::Const(_) => None,
        }
    }
}

/// A floating-point argument: written, or generated per value.
#[derive(Debug, Clone)]
pub(super) enum Real {
    Const(f64),
    Gen(Box<Node>),
}

impl Real {
    fn get(&self, cx: &mut Cx<'_>) -> f64 {
        match self {
            Real::Const(f) => *f,
            Real::Gen(n) => to_f64(&n.generate(cx)).unwrap_or(0.0),
        }
    }

    fn child(&self) -> Option<&Node> {
        match self {
            Real::Gen(n) => Some(n),
            Real::Const(_) => None,
        }
    }
}

/// A date argument of `^RandomDate`: written (absolute or relative to now), or generated.
#[derive(Debug, Clone)]
pub(super) enum DateArg {
    When(When),
    Gen(Box<Node>),
}

impl DateArg {
    fn get(&self, cx: &mut Cx<'_>) -> i64 {
        match self {
            DateArg::When(w) => w.resolve(cx.now_ms),
            DateArg::Gen(n) => match n.generate(cx) {
                Bson::DateTime(d) => d.timestamp_millis(),
                Bson::String(s) => super::time::parse_when(&s)
                    .map(|w| w.resolve(cx.now_ms))
                    .unwrap_or(0),
                other => to_i64(&other).unwrap_or(0),
            },
        }
    }

    fn child(&self) -> Option<&Node> {
        match self {
            DateArg::Gen(n) => Some(n),
            DateArg::When(_) => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum IntGen {
    /// Both bounds written: the distribution is built once.
    Uniform(Uniform<i64>),
    /// A bound generated: drawn between them (in either order) each time.
    Between(Num, Num),
    Binomial(rand_distr::Binomial),
    Geometric(rand_distr::Geometric),
    Poisson(rand_distr::Poisson<f64>),
}

#[derive(Debug, Clone)]
pub(super) enum DoubleGen {
    /// `[min, max)`; `min` when they are equal.
    Uniform(Real, Real),
    Normal(rand_distr::Normal<f64>),
    Exponential(rand_distr::Exp<f64>),
}

#[derive(Debug, Clone)]
pub(super) struct StrGen {
    pub length: Num,
    /// The alphabet's characters; when all are ASCII, `ascii` holds them as bytes.
    pub chars: Vec<char>,
    pub ascii: Option<Vec<u8>>,
    pub pick: Uniform<usize>,
}

#[derive(Debug, Clone)]
pub(super) struct ChooseGen {
    pub from: Vec<Node>,
    pub pick: Pick,
}

#[derive(Debug, Clone)]
pub(super) enum Pick {
    Uniform(Uniform<usize>),
    Weighted(WeightedIndex<u64>),
}

#[derive(Debug, Clone)]
pub(super) struct IncGen {
    pub start: i64,
    pub step: i64,
    pub multiplier: i64,
    pub scope: IncScope,
}

#[derive(Debug, Clone)]
pub(super) enum IncScope {
    /// Each user counts on its own; the id keys the user's counter in `UserState`.
    User(usize),
    /// One counter shared by every user (and every clone of the template).
    Global(Arc<AtomicI64>),
}

#[derive(Debug, Clone)]
pub(super) struct ObjectGen {
    pub entries: Num,
    pub keys: Node,
    pub values: Node,
    /// `skip`: a repeated key keeps its first value; `insert`: its last.
    pub skip_repeated: bool,
}

#[derive(Debug, Clone)]
pub(super) enum Gen {
    Int(IntGen),
    Double(DoubleGen),
    Str(StrGen),
    Choose(ChooseGen),
    /// `now` plus this many milliseconds.
    Now(i64),
    /// Uniform between the two, both ends included, to the millisecond.
    Date(DateArg, DateArg),
    NewObjectId,
    ObjectIdOf(Node),
    NewUuid,
    UuidOf(Node),
    Binary(Num),
    Inc(IncGen),
    Array(Node, Num),
    Object(ObjectGen),
    Join(Node, String),
    Format(Vec<Piece>, Vec<Node>),
    Key,
    Field(String),
    Bind(String),
    Step(usize, String),
    /// A built-in kind's filter (`filter = [...]` of `op = "find"`): these top-level fields of
    /// the collection's document, each choice drawn by the group's key distribution.
    Fields(Vec<usize>),
    /// A built-in update's change: `$set` of these fields of the collection's document (fresh
    /// values), `$inc` by 1 of the named counters.
    Change(crate::workload::op::Change),
    /// A whole number uniform in 1..=max (a built-in scan's length).
    UpTo(u32),
}

impl Gen {
    pub(super) fn generate(&self, cx: &mut Cx<'_>) -> Bson {
        match self {
            Gen::Int(g) => Bson::Int64(match g {
                IntGen::Uniform(u) => u.sample(cx.rng),
                IntGen::Between(lo, hi) => {
                    let (a, b) = (lo.get(cx), hi.get(cx));
                    cx.rng.random_range(a.min(b)..=a.max(b))
                }
                IntGen::Binomial(d) => d.sample(cx.rng) as i64,
                IntGen::Geometric(d) => d.sample(cx.rng).min(i64::MAX as u64) as i64,
                IntGen::Poisson(d) => d.sample(cx.rng) as i64,
            }),
            Gen::Double(g) => Bson::Double(match g {
                DoubleGen::Uniform(lo, hi) => {
                    let (a, b) = (lo.get(cx), hi.get(cx));
                    let (a, b) = (a.min(b), a.max(b));
                    if a < b && a.is_finite() && b.is_finite() {
                        cx.rng.random_range(a..b)
                    } else {
                        a
                    }
                }
                DoubleGen::Normal(d) => d.sample(cx.rng),
                DoubleGen::Exponential(d) => d.sample(cx.rng),
            }),
            Gen::Str(g) => {
                let n = g.length.len(cx);
                let s = match &g.ascii {
                    Some(bytes) => {
                        let v: Vec<u8> = (0..n).map(|_| bytes[g.pick.sample(cx.rng)]).collect();
                        // The alphabet is ASCII, so any sequence of its bytes is UTF-8.
                        String::from_utf8(v).unwrap_or_default()
                    }
                    None => (0..n).map(|_| g.chars[g.pick.sample(cx.rng)]).collect(),
                };
                Bson::String(s)
            }
            Gen::Choose(g) => {
                let i = match &g.pick {
                    Pick::Uniform(u) => u.sample(cx.rng),
                    Pick::Weighted(w) => w.sample(cx.rng),
                };
                g.from[i].generate(cx)
            }
            Gen::Now(offset) => {
                Bson::DateTime(DateTime::from_millis(cx.now_ms.saturating_add(*offset)))
            }
            Gen::Date(lo, hi) => {
                let (a, b) = (lo.get(cx), hi.get(cx));
                Bson::DateTime(DateTime::from_millis(
                    cx.rng.random_range(a.min(b)..=a.max(b)),
                ))
            }
            Gen::NewObjectId => Bson::ObjectId(ObjectId::new()),
            Gen::ObjectIdOf(n) => object_id_of(n.generate(cx)),
            Gen::NewUuid => Bson::Binary(Binary::from_uuid(mongodb::bson::Uuid::new())),
            Gen::UuidOf(n) => uuid_of(n.generate(cx)),
            Gen::Binary(size) => {
                let mut bytes = vec![0u8; size.len(cx)];
                cx.rng.fill_bytes(&mut bytes);
                Bson::Binary(Binary {
                    subtype: BinarySubtype::Generic,
                    bytes,
                })
            }
            Gen::Inc(g) => {
                let v = match &g.scope {
                    IncScope::User(id) => {
                        let n = cx.state.next_inc(*id);
                        g.start
                            .wrapping_add((cx.user as i64).wrapping_mul(g.multiplier))
                            .wrapping_add(n.wrapping_mul(g.step))
                    }
                    IncScope::Global(counter) => {
                        let n = counter.fetch_add(1, Ordering::Relaxed);
                        g.start.wrapping_add(n.wrapping_mul(g.step))
                    }
                };
                Bson::Int64(v)
            }
            Gen::Array(of, number) => {
                let n = number.len(cx);
                Bson::Array((0..n).map(|_| of.generate(cx)).collect())
            }
            Gen::Object(g) => {
                let n = g.entries.len(cx);
                let mut doc = Document::new();
                for _ in 0..n {
                    let mut key = format::text(&g.keys.generate(cx));
                    key.retain(|c| c != '\0');
                    if g.skip_repeated && doc.contains_key(&key) {
                        continue;
                    }
                    let value = g.values.generate(cx);
                    doc.insert(key, value);
                }
                Bson::Document(doc)
            }
            Gen::Join(array, sep) => Bson::String(join(&array.generate(cx), sep)),
            Gen::Format(pieces, args) => {
                let values: Vec<Bson> = args.iter().map(|a| a.generate(cx)).collect();
                Bson::String(format_with(pieces, &values))
            }
            Gen::Key => cx.lookup.key(cx.rng).unwrap_or(Bson::Null),
            Gen::Field(path) => cx.lookup.field(path, cx.rng).unwrap_or(Bson::Null),
            Gen::Bind(name) => cx.lookup.bind(name).unwrap_or(Bson::Null),
            Gen::Step(index, path) => cx.lookup.step(*index, path).unwrap_or(Bson::Null),
            Gen::Fields(only) => match cx.lookup.document() {
                Some((gen, pick)) => Bson::Document(gen.generate_filter(only, pick, &mut cx.rng)),
                None => Bson::Document(Document::new()),
            },
            Gen::Change(change) => {
                let mut u = Document::new();
                if !change.set.is_empty() {
                    if let Some((gen, _)) = cx.lookup.document() {
                        u.insert("$set", gen.generate_fields(&change.set, &mut cx.rng));
                    }
                }
                if !change.inc.is_empty() {
                    let inc: Document = change
                        .inc
                        .iter()
                        .map(|f| (f.clone(), Bson::Int32(1)))
                        .collect();
                    u.insert("$inc", inc);
                }
                Bson::Document(u)
            }
            Gen::UpTo(max) => Bson::Int64(i64::from(cx.rng.random_range(1..=(*max).max(1)))),
        }
    }

    /// The templates inside it.
    pub(super) fn children(&self) -> Vec<&Node> {
        match self {
            Gen::Int(IntGen::Between(a, b)) => a.child().into_iter().chain(b.child()).collect(),
            Gen::Double(DoubleGen::Uniform(a, b)) => {
                a.child().into_iter().chain(b.child()).collect()
            }
            Gen::Str(g) => g.length.child().into_iter().collect(),
            Gen::Choose(g) => g.from.iter().collect(),
            Gen::Date(a, b) => a.child().into_iter().chain(b.child()).collect(),
            Gen::ObjectIdOf(n) | Gen::UuidOf(n) => vec![n],
            Gen::Binary(n) => n.child().into_iter().collect(),
            Gen::Array(of, n) => std::iter::once(of).chain(n.child()).collect(),
            Gen::Object(g) => std::iter::once(&g.keys)
                .chain(std::iter::once(&g.values))
                .chain(g.entries.child())
                .collect(),
            Gen::Join(a, _) => vec![a],
            Gen::Format(_, args) => args.iter().collect(),
            _ => Vec::new(),
        }
    }

    pub(super) fn types(&self) -> u16 {
        match self {
            Gen::Int(_) | Gen::Inc(_) => ty::INT,
            Gen::Double(_) => ty::DOUBLE,
            Gen::Str(_) | Gen::Join(..) | Gen::Format(..) => ty::STRING,
            Gen::Choose(g) => g.from.iter().fold(0, |m, n| m | n.types()),
            Gen::Now(_) | Gen::Date(..) => ty::DATE,
            Gen::NewObjectId => ty::OID,
            Gen::ObjectIdOf(_) => ty::OID | ty::NULL,
            Gen::NewUuid | Gen::Binary(_) => ty::BINARY,
            Gen::UuidOf(_) => ty::BINARY | ty::NULL,
            Gen::Array(..) => ty::ARRAY,
            Gen::Object(_) | Gen::Fields(_) | Gen::Change(_) => ty::DOC,
            Gen::UpTo(_) => ty::INT,
            Gen::Key | Gen::Field(_) | Gen::Bind(_) | Gen::Step(..) => ty::ANY,
        }
    }
}

pub(super) fn to_i64(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(i) => Some(*i as i64),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.is_finite() => Some(*f as i64),
        _ => None,
    }
}

pub(super) fn to_f64(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(*i as f64),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(f) => Some(*f),
        _ => None,
    }
}

/// An ObjectId from 24 hex digits (or an ObjectId); null for anything else.
pub(super) fn object_id_of(b: Bson) -> Bson {
    match b {
        Bson::ObjectId(o) => Bson::ObjectId(o),
        Bson::String(s) => ObjectId::parse_str(&s).map_or(Bson::Null, Bson::ObjectId),
        _ => Bson::Null,
    }
}

/// A UUID (binary subtype 4) from 32 hex digits, dashes anywhere ignored (or a UUID already);
/// null for anything else.
pub(super) fn uuid_of(b: Bson) -> Bson {
    match b {
        Bson::Binary(bin) if bin.subtype == BinarySubtype::Uuid => Bson::Binary(bin),
        Bson::String(s) => match parse_uuid_hex(&s) {
            Some(bytes) => Bson::Binary(Binary::from_uuid(mongodb::bson::Uuid::from_bytes(bytes))),
            None => Bson::Null,
        },
        _ => Bson::Null,
    }
}

pub(super) fn parse_uuid_hex(s: &str) -> Option<[u8; 16]> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|&c| c != b'-')
        .map(|c| (c as char).to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    if digits.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in digits.chunks(2).enumerate() {
        out[i] = pair[0] << 4 | pair[1];
    }
    Some(out)
}

/// The text of each element of an array (or of the one value), with `sep` between.
pub(super) fn join(value: &Bson, sep: &str) -> String {
    match value {
        Bson::Array(items) => {
            let mut s = String::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(sep);
                }
                format::push_text(&mut s, item);
            }
            s
        }
        other => format::text(other),
    }
}

pub(super) fn format_with(pieces: &[Piece], args: &[Bson]) -> String {
    let mut s = String::new();
    let mut next = args.iter();
    for p in pieces {
        match p {
            Piece::Lit(l) => s.push_str(l),
            Piece::Conv(spec) => format::write(&mut s, spec, next.next().unwrap_or(&Bson::Null)),
        }
    }
    s
}
