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

mod values;
pub(crate) use values::*;

mod generate;
pub(super) use generate::choose_index;

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
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        reason = "clamped to 0..=MAX_LEN first"
    )]
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
    /// The `_id` the key space issued to the document being made (`^Id`); null elsewhere.
    OwnId,
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
}

impl Gen {
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
            Gen::OwnId => ty::INT | ty::NULL,
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
            Gen::Object(_) => ty::DOC,
            Gen::Key | Gen::Field(_) | Gen::Bind(_) | Gen::Step(..) => ty::ANY,
        }
    }
}
