//! The compiled generators and how each makes its value.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use mongodb::bson::{
    oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Document, Timestamp,
};
use rand::distr::{weighted::WeightedIndex, Distribution, Uniform};
use rand::Rng;

use super::convert::{self, To};
use super::dist::{self, Kind, Sampler};
use super::format::{self, Piece};
use super::time::When;
use super::{Cx, Node};

/// The most elements, characters or bytes one generated value may have: nothing longer fits in
/// a 16 MiB document.
pub(super) const MAX_LEN: i64 = 16 * 1024 * 1024;

/// Masks of the BSON types a node may make, to check an argument's generator at compile.
pub(super) mod ty {
    use mongodb::bson::Bson;

    pub(crate) const INT: u16 = 1;
    pub(crate) const DOUBLE: u16 = 2;
    pub(crate) const STRING: u16 = 4;
    pub(crate) const DATE: u16 = 8;
    pub(crate) const OID: u16 = 16;
    pub(crate) const DOC: u16 = 32;
    pub(crate) const ARRAY: u16 = 64;
    pub(crate) const BINARY: u16 = 128;
    pub(crate) const NULL: u16 = 256;
    pub(crate) const OTHER: u16 = 512;
    pub(crate) const ANY: u16 = 1023;
    pub(crate) const NUMBER: u16 = INT | DOUBLE;

    pub(crate) fn of(b: &Bson) -> u16 {
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

    pub(crate) fn describe(mask: u16) -> String {
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
    /// A generated number of trials, with the probability of success.
    BinomialOf(Num, f64),
    /// boost's: failures before the `k`-th success (`k` written or generated), probability `p`.
    NegativeBinomial(Num, f64),
    Geometric(rand_distr::Geometric),
    Poisson(rand_distr::Poisson<f64>),
    /// 1..=n, `i` with a probability proportional to `1 / i^alpha`.
    Zipf(rand_distr::Zipf<f64>),
}

#[derive(Debug, Clone)]
pub(super) enum DoubleGen {
    /// `[min, max)`; `min` when they are equal.
    Uniform(Real, Real),
    /// Every parameter written: the distribution is built once.
    Fixed(Sampler),
    /// A parameter generated: the distribution is built for each value (NaN when a generated
    /// parameter is out of its range).
    Of(Kind, Vec<Real>),
}

#[derive(Debug, Clone)]
pub(super) struct StrGen {
    pub(crate) length: Num,
    /// genny's `^FastRandomString`: six bits of a 64-bit draw per character, masked with 0x2f
    /// (so not every character is equally likely).
    pub(crate) fast: bool,
    /// The alphabet's characters; when all are ASCII, `ascii` holds them as bytes.
    pub(crate) chars: Vec<char>,
    pub(crate) ascii: Option<Vec<u8>>,
    pub(crate) pick: Uniform<usize>,
}

#[derive(Debug, Clone)]
pub(super) struct ChooseGen {
    pub(crate) from: Vec<Node>,
    pub(crate) pick: Pick,
}

#[derive(Debug, Clone)]
pub(super) enum Pick {
    Uniform(Uniform<usize>),
    Weighted(WeightedIndex<u64>),
    /// `deterministic`: each user takes them in turn, from the first (the id keys its place).
    InTurn(usize),
}

#[derive(Debug, Clone)]
pub(super) struct IncGen {
    /// Written, or generated once per user (at its first value).
    pub(crate) start: Num,
    pub(crate) step: i64,
    pub(crate) multiplier: i64,
    pub(crate) scope: IncScope,
}

#[derive(Debug, Clone)]
pub(super) enum IncScope {
    /// Each user counts on its own, from `start + actor * multiplier`; the id keys the user's
    /// counter in `UserState`.
    User(usize),
    /// One counter shared by every user (and every clone of the template).
    Global(Arc<AtomicI64>),
}

#[derive(Debug, Clone)]
pub(super) struct ObjectGen {
    pub(crate) entries: Num,
    pub(crate) keys: Node,
    pub(crate) values: Node,
    /// `skip`: a repeated key keeps its first value; `insert`: its last.
    pub(crate) skip_repeated: bool,
}

/// `^Cycle` (and `^FixedGeneratedValue`, `^BinData`): `len` values of `of`, made at a user's first
/// value, then given in turn.
#[derive(Debug, Clone)]
pub(super) struct CycleGen {
    pub(crate) id: usize,
    pub(crate) len: usize,
    pub(crate) of: Node,
}

/// `^Repeat`: each value of `of` given `count` times.
#[derive(Debug, Clone)]
pub(super) struct RepeatGen {
    pub(crate) id: usize,
    pub(crate) count: i64,
    pub(crate) of: Node,
}

/// `^IncDate`: a per-user date counter, from `start + actor * multiplier`, `step` ms apart.
#[derive(Debug, Clone)]
pub(super) struct IncDateGen {
    pub(crate) id: usize,
    pub(crate) start: DateArg,
    pub(crate) step: i64,
    pub(crate) multiplier: i64,
}

/// `^ChooseFromDataset`: a line of the file, drawn uniformly, or each user's next one from
/// `startFromLine` (`sequential`; the id keys the user's place).
#[derive(Debug, Clone)]
pub(super) struct DatasetGen {
    pub(crate) lines: Arc<Vec<String>>,
    pub(crate) sequential: Option<(usize, i64)>,
}

/// `^TwoDWalk`: `[x, y]` of an object moving `dist` per value in a random direction, a new object
/// at a random place in the rectangle every `per_series` values.
#[derive(Debug, Clone)]
pub(super) struct WalkGen {
    pub(crate) id: usize,
    pub(crate) per_series: i64,
    pub(crate) dist: f64,
    pub(crate) x: (f64, f64),
    pub(crate) y: (f64, f64),
}

/// A frequency map: strings with how many times each is still to be given.
pub(super) type FreqMap = Vec<(String, u64)>;

/// `^TakeRandomStringFromFrequencyMap` (each user's own map) and its `Singleton` (one map shared
/// by every user and every generator of the same `id`).
#[derive(Debug, Clone)]
pub(super) enum FreqGen {
    Own(usize, FreqMap),
    Shared(Arc<Mutex<FreqMap>>),
}

/// What a stateful generator keeps for one user.
#[derive(Debug, Clone)]
pub(super) enum Slot {
    /// A counter: its first value (fixed at the user's first use) and how many it has given.
    Count {
        base: i64,
        n: i64,
    },
    /// Values made at the user's first use, given in turn.
    Cycle {
        values: Vec<Bson>,
        next: usize,
    },
    /// A value and how many times it has been given.
    Held {
        item: Bson,
        used: i64,
    },
    Walk(Walk),
    Freq(FreqMap),
}

/// Where a `^TwoDWalk` object is, how it moves and how many values it has given.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Walk {
    x: f64,
    y: f64,
    vx: f64,
    vy: f64,
    n: i64,
}

#[derive(Debug, Clone)]
pub(super) enum Gen {
    Int(IntGen),
    Double(DoubleGen),
    Str(StrGen),
    Choose(ChooseGen),
    /// `now` plus this many milliseconds.
    Now(i64),
    /// Uniform between the two to the millisecond, the second included unless `true` (genny's).
    Date(DateArg, DateArg, bool),
    /// `^Date` of a generated value.
    DateOf(DateArg),
    IncDate(IncDateGen),
    NewObjectId,
    ObjectIdOf(Node),
    NewUuid,
    UuidOf(Node),
    /// Random bytes of this size, with this subtype.
    Binary(Num, BinarySubtype),
    Inc(IncGen),
    /// `number` values of `of`; `true`: each value once (`distinct`).
    Array(Node, Num, bool),
    Concat(Vec<Node>),
    Cycle(CycleGen),
    Repeat(RepeatGen),
    Dataset(DatasetGen),
    Convert(To, Node),
    ActorId,
    ActorIdString,
    /// A duration in milliseconds: the value times this many milliseconds.
    TimeSpec(Real, f64),
    Ip,
    NowTimestamp,
    Walk(WalkGen),
    Freq(FreqGen),
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
                IntGen::BinomialOf(t, p) => {
                    let t = t.get(cx).max(0) as u64;
                    rand_distr::Binomial::new(t, *p).map_or(0, |d| d.sample(cx.rng) as i64)
                }
                IntGen::NegativeBinomial(k, p) => {
                    let k = k.get(cx);
                    dist::negative_binomial(k, *p, cx.rng)
                }
                IntGen::Geometric(d) => d.sample(cx.rng).min(i64::MAX as u64) as i64,
                IntGen::Poisson(d) => d.sample(cx.rng) as i64,
                IntGen::Zipf(d) => d.sample(cx.rng) as i64,
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
                DoubleGen::Fixed(d) => d.sample(cx.rng),
                DoubleGen::Of(kind, params) => {
                    let p: Vec<f64> = params.iter().map(|r| r.get(cx)).collect();
                    Sampler::new(*kind, &p).map_or(f64::NAN, |d| d.sample(cx.rng))
                }
            }),
            Gen::Str(g) => {
                let n = g.length.len(cx);
                if g.fast {
                    return Bson::String(fast_string(g, n, cx));
                }
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
                    Pick::InTurn(id) => {
                        let n = count(cx, *id, 1, |_| 0);
                        n.rem_euclid(g.from.len() as i64) as usize
                    }
                };
                g.from[i].generate(cx)
            }
            Gen::Now(offset) => {
                Bson::DateTime(DateTime::from_millis(cx.now_ms.saturating_add(*offset)))
            }
            Gen::Date(lo, hi, exclusive) => {
                let (a, b) = (lo.get(cx), hi.get(cx));
                let (a, b) = (a.min(b), a.max(b));
                let ms = if *exclusive {
                    if a < b {
                        cx.rng.random_range(a..b)
                    } else {
                        a
                    }
                } else {
                    cx.rng.random_range(a..=b)
                };
                Bson::DateTime(DateTime::from_millis(ms))
            }
            Gen::DateOf(d) => Bson::DateTime(DateTime::from_millis(d.get(cx))),
            Gen::IncDate(g) => {
                let ms = count(cx, g.id, g.step, |cx| {
                    let actor = cx.state.actor(cx.user);
                    g.start
                        .get(cx)
                        .wrapping_add(actor.wrapping_mul(g.multiplier))
                });
                Bson::DateTime(DateTime::from_millis(ms))
            }
            Gen::NewObjectId => Bson::ObjectId(ObjectId::new()),
            Gen::ObjectIdOf(n) => object_id_of(n.generate(cx)),
            Gen::NewUuid => Bson::Binary(Binary::from_uuid(mongodb::bson::Uuid::new())),
            Gen::UuidOf(n) => uuid_of(n.generate(cx)),
            Gen::Binary(size, subtype) => {
                let mut bytes = vec![0u8; size.len(cx)];
                cx.rng.fill_bytes(&mut bytes);
                Bson::Binary(Binary {
                    subtype: *subtype,
                    bytes,
                })
            }
            Gen::Inc(g) => {
                let v = match &g.scope {
                    IncScope::User(id) => count(cx, *id, g.step, |cx| {
                        let actor = cx.state.actor(cx.user);
                        g.start
                            .get(cx)
                            .wrapping_add(actor.wrapping_mul(g.multiplier))
                    }),
                    IncScope::Global(counter) => {
                        let n = counter.fetch_add(1, Ordering::Relaxed);
                        g.start.get(cx).wrapping_add(n.wrapping_mul(g.step))
                    }
                };
                Bson::Int64(v)
            }
            Gen::Array(of, number, distinct) => {
                let n = number.len(cx);
                if *distinct {
                    return Bson::Array(distinct_values(of, n, cx));
                }
                Bson::Array((0..n).map(|_| of.generate(cx)).collect())
            }
            Gen::Concat(parts) => {
                let mut all = Vec::new();
                for p in parts {
                    match p.generate(cx) {
                        Bson::Array(items) => all.extend(items),
                        other => all.push(other),
                    }
                }
                Bson::Array(all)
            }
            Gen::Cycle(g) => cycle(g, cx),
            Gen::Repeat(g) => {
                let fresh = !matches!(
                    cx.state.slots.get(&g.id),
                    Some(Slot::Held { used, .. }) if *used < g.count
                );
                if fresh {
                    let item = g.of.generate(cx);
                    cx.state.slots.insert(g.id, Slot::Held { item, used: 0 });
                }
                match cx.state.slots.get_mut(&g.id) {
                    Some(Slot::Held { item, used }) => {
                        *used += 1;
                        item.clone()
                    }
                    _ => Bson::Null,
                }
            }
            Gen::Dataset(g) => {
                let len = g.lines.len();
                let i = match g.sequential {
                    Some((id, start)) => {
                        count(cx, id, 1, |_| start).rem_euclid(len as i64) as usize
                    }
                    None => cx.rng.random_range(0..len),
                };
                Bson::String(g.lines[i].clone())
            }
            Gen::Convert(to, from) => {
                convert::convert(*to, &from.generate(cx)).unwrap_or(Bson::Null)
            }
            Gen::ActorId => Bson::Int64(cx.state.actor(cx.user)),
            Gen::ActorIdString => Bson::String(cx.state.actor(cx.user).to_string()),
            Gen::TimeSpec(value, ms) => {
                // genny's duration is whole nanoseconds.
                let ns = (value.get(cx) * ms * 1e6).trunc();
                Bson::Double(ns / 1e6)
            }
            Gen::Ip => {
                // genny's: a draw from 0 to 2^31 - 1, so the first octet is below 128.
                let ip: u32 = cx.rng.random_range(0..=i32::MAX as u32);
                let [a, b, c, d] = ip.to_be_bytes();
                Bson::String(format!("{a}.{b}.{c}.{d}"))
            }
            Gen::NowTimestamp => Bson::Timestamp(Timestamp {
                time: u32::try_from(cx.now_ms.div_euclid(1000)).unwrap_or(0),
                increment: 1,
            }),
            Gen::Walk(g) => walk(g, cx),
            Gen::Freq(g) => {
                let taken = match g {
                    FreqGen::Shared(map) => {
                        let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
                        take(&mut map, cx)
                    }
                    FreqGen::Own(id, from) => {
                        let mut map = match cx.state.slots.remove(id) {
                            Some(Slot::Freq(m)) => m,
                            _ => from.clone(),
                        };
                        let taken = take(&mut map, cx);
                        cx.state.slots.insert(*id, Slot::Freq(map));
                        taken
                    }
                };
                taken.map_or(Bson::Null, Bson::String)
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
            Gen::Int(IntGen::BinomialOf(n, _) | IntGen::NegativeBinomial(n, _)) => {
                n.child().into_iter().collect()
            }
            Gen::Double(DoubleGen::Of(_, params)) => {
                params.iter().filter_map(Real::child).collect()
            }
            Gen::Str(g) => g.length.child().into_iter().collect(),
            Gen::Choose(g) => g.from.iter().collect(),
            Gen::Date(a, b, _) => a.child().into_iter().chain(b.child()).collect(),
            Gen::DateOf(d) => d.child().into_iter().collect(),
            Gen::IncDate(g) => g.start.child().into_iter().collect(),
            Gen::Inc(g) => g.start.child().into_iter().collect(),
            Gen::ObjectIdOf(n) | Gen::UuidOf(n) | Gen::Convert(_, n) => vec![n],
            Gen::Binary(n, _) => n.child().into_iter().collect(),
            Gen::Array(of, n, _) => std::iter::once(of).chain(n.child()).collect(),
            Gen::Concat(parts) => parts.iter().collect(),
            Gen::Cycle(g) => vec![&g.of],
            Gen::Repeat(g) => vec![&g.of],
            Gen::TimeSpec(v, _) => v.child().into_iter().collect(),
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
            Gen::Int(_) | Gen::Inc(_) | Gen::ActorId => ty::INT,
            Gen::Double(_) | Gen::TimeSpec(..) => ty::DOUBLE,
            Gen::Str(_)
            | Gen::Join(..)
            | Gen::Format(..)
            | Gen::Dataset(_)
            | Gen::ActorIdString
            | Gen::Ip => ty::STRING,
            Gen::Freq(_) => ty::STRING | ty::NULL,
            Gen::Choose(g) => g.from.iter().fold(0, |m, n| m | n.types()),
            Gen::Cycle(g) => g.of.types(),
            Gen::Repeat(g) => g.of.types(),
            Gen::Now(_) | Gen::Date(..) | Gen::DateOf(_) | Gen::IncDate(_) => ty::DATE,
            Gen::NewObjectId => ty::OID,
            Gen::ObjectIdOf(_) => ty::OID | ty::NULL,
            Gen::NewUuid | Gen::Binary(..) => ty::BINARY,
            Gen::UuidOf(_) => ty::BINARY | ty::NULL,
            Gen::Convert(To::Int | To::Int32, _) => ty::INT | ty::NULL,
            Gen::Convert(To::Double, _) => ty::DOUBLE | ty::NULL,
            Gen::Convert(To::Decimal, _) => ty::OTHER | ty::NULL,
            Gen::NowTimestamp => ty::OTHER,
            Gen::Array(..) | Gen::Concat(_) | Gen::Walk(_) => ty::ARRAY,
            Gen::Object(_) | Gen::Fields(_) | Gen::Change(_) => ty::DOC,
            Gen::UpTo(_) => ty::INT,
            Gen::Key | Gen::Field(_) | Gen::Bind(_) | Gen::Step(..) => ty::ANY,
        }
    }
}

/// The next value of the user's counter `id`: `base + n * step` for its n-th value (from 0), the
/// base made by `base` at the user's first value.
fn count(cx: &mut Cx<'_>, id: usize, step: i64, base: impl FnOnce(&mut Cx<'_>) -> i64) -> i64 {
    if let Some(Slot::Count { base, n }) = cx.state.slots.get_mut(&id) {
        let v = base.wrapping_add(n.wrapping_mul(step));
        *n = n.wrapping_add(1);
        return v;
    }
    let b = base(cx);
    cx.state.slots.insert(id, Slot::Count { base: b, n: 1 });
    b
}

fn cycle(g: &CycleGen, cx: &mut Cx<'_>) -> Bson {
    if !matches!(cx.state.slots.get(&g.id), Some(Slot::Cycle { .. })) {
        let values: Vec<Bson> = (0..g.len).map(|_| g.of.generate(cx)).collect();
        cx.state.slots.insert(g.id, Slot::Cycle { values, next: 0 });
    }
    match cx.state.slots.get_mut(&g.id) {
        Some(Slot::Cycle { values, next }) if !values.is_empty() => {
            let v = values[*next].clone();
            *next = (*next + 1) % values.len();
            v
        }
        _ => Bson::Null,
    }
}

/// genny's `^FastRandomString`: each character from six bits of a 64-bit draw (ten characters a
/// draw), the alphabet's `(bits & 0x2f) % len`-th.
fn fast_string(g: &StrGen, n: usize, cx: &mut Cx<'_>) -> String {
    let len = g.chars.len() as u64;
    let mut out = String::with_capacity(n);
    let mut value = cx.rng.next_u64();
    let mut bits = 64;
    for _ in 0..n {
        if bits < 6 {
            value = cx.rng.next_u64();
            bits = 64;
        }
        out.push(g.chars[((value & 0x2f) % len) as usize]);
        value >>= 6;
        bits -= 6;
    }
    out
}

/// The consecutive values of `of` that may be drawn again before `distinct_values` gives up (as
/// genny's does).
const DISTINCT_TRIES: u32 = 100;

/// `n` different values of `of`, in the order drawn; fewer when `of` gives a value already
/// drawn more than `DISTINCT_TRIES` times in a row.
fn distinct_values(of: &Node, n: usize, cx: &mut Cx<'_>) -> Vec<Bson> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n.min(1 << 16));
    let mut repeats = 0;
    while out.len() < n {
        let v = of.generate(cx);
        // Equal as BSON: same type and same bytes.
        let key =
            mongodb::bson::to_vec(&mongodb::bson::doc! { "v": v.clone() }).unwrap_or_default();
        if seen.insert(key) {
            out.push(v);
            repeats = 0;
        } else {
            repeats += 1;
            if repeats > DISTINCT_TRIES {
                break;
            }
        }
    }
    out
}

fn walk(g: &WalkGen, cx: &mut Cx<'_>) -> Bson {
    let mut w = match cx.state.slots.remove(&g.id) {
        Some(Slot::Walk(w)) => w,
        _ => Walk::default(),
    };
    if w.n % g.per_series == 0 {
        let mut between = |(lo, hi): (f64, f64)| {
            if lo < hi {
                cx.rng.random_range(lo..hi)
            } else {
                lo
            }
        };
        w.x = between(g.x);
        w.y = between(g.y);
        let dir = cx.rng.random_range(0.0..std::f64::consts::TAU);
        w.vx = g.dist * dir.cos();
        w.vy = g.dist * dir.sin();
    }
    w.n = w.n.wrapping_add(1);
    w.x += w.vx;
    w.y += w.vy;
    let point = Bson::Array(vec![Bson::Double(w.x), Bson::Double(w.y)]);
    cx.state.slots.insert(g.id, Slot::Walk(w));
    point
}

/// A string taken from the map (its count one less, gone at 0), from an entry drawn uniformly;
/// None when the map is empty.
fn take(map: &mut FreqMap, cx: &mut Cx<'_>) -> Option<String> {
    let i = match map.len() {
        0 => return None,
        1 => 0,
        n => cx.rng.random_range(0..n),
    };
    let entry = &mut map[i];
    let s = entry.0.clone();
    entry.1 = entry.1.saturating_sub(1);
    if entry.1 == 0 {
        map.remove(i);
    }
    Some(s)
}

pub(super) fn to_i64(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.is_finite() => Some(*f as i64),
        _ => None,
    }
}

pub(super) fn to_f64(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(crate::num::real_signed(*i)),
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
            Piece::Conv(spec) => {
                let arg = match spec.arg {
                    Some(i) => args.get(i),
                    None => next.next(),
                };
                format::write(&mut s, spec, arg.unwrap_or(&Bson::Null));
            }
        }
    }
    s
}
