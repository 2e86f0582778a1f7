//! From a source tree to a compiled template: generators recognised and their arguments checked,
//! every error located by its key path and saying what is accepted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use mongodb::bson::{oid::ObjectId, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use rand::distr::{weighted::WeightedIndex, Uniform};

use super::convert::{self, To};
use super::dist::{self, Kind, Sampler};
use super::format;
use super::generators::{
    self, ty, ChooseGen, CycleGen, DatasetGen, DateArg, DoubleGen, FreqGen, FreqMap, Gen,
    IncDateGen, IncGen, IncScope, IntGen, Num, ObjectGen, Pick, Real, RepeatGen, StrGen, WalkGen,
    MAX_LEN,
};
use super::time::{self, When};
use super::value::{int_bson, wrapper_bson, V};
use super::{dataset, CompileOptions, GenError, Node};

mod args;
use args::*;

mod scalar;
use scalar::*;

mod composite;
use composite::*;

/// Every generator's name, as written.
pub(crate) const GENERATOR_NAMES: &[&str] = &[
    "^RandomInt",
    "^RandomDouble",
    "^RandomString",
    "^FastRandomString",
    "^Choose",
    "^Now",
    "^RandomDate",
    "^ObjectId",
    "^UUID",
    "^Binary",
    "^Inc",
    "^Array",
    "^Object",
    "^Join",
    "^FormatString",
    "^Verbatim",
    "^Null",
    "^Date",
    "^IncDate",
    "^Repeat",
    "^Cycle",
    "^FixedGeneratedValue",
    "^ChooseFromDataset",
    "^ConvertToInt",
    "^ConvertToInt32",
    "^ConvertToDouble",
    "^ConvertToDecimal",
    "^Concat",
    "^ActorId",
    "^ActorIdString",
    "^TimeSpec",
    "^IP",
    "^NowTimestamp",
    "^TwoDWalk",
    "^BinData",
    "^BinDataSensitive",
    "^TakeRandomStringFromFrequencyMap",
    "^TakeRandomStringFromFrequencyMapSingleton",
    "^Key",
    "^Id",
    "^Field",
    "^Bind",
    "^Step",
];

/// genny's default alphabet of `^RandomString`.
pub(super) const DEFAULT_ALPHABET: &str =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";

/// Ids of stateful generators (each keeps a state per user), unique in the process.
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

fn next_id() -> usize {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The maps of `^TakeRandomStringFromFrequencyMapSingleton` by their `id`, while a template holds
/// them.
static FREQ_MAPS: Mutex<Option<HashMap<String, Weak<Mutex<FreqMap>>>>> = Mutex::new(None);

fn example(name: &str) -> &'static str {
    match name {
        "^RandomInt" => {
            r#"{ "^RandomInt" = { min = 1, max = 100 } } (or distribution = "binomial" with t and p, "negative_binomial" with k and p, "geometric" with p, "poisson" with mean, "zipfian" with alpha and n)"#
        }
        "^RandomDouble" => {
            r#"{ "^RandomDouble" = { min = 0.0, max = 1.0 } } (or distribution = "normal" with mean and sigma, "exponential" with lambda, "gamma" with alpha and beta, "weibull" with a and b, ...)"#
        }
        "^RandomString" | "^FastRandomString" => {
            r#"{ "^RandomString" = { length = 10, alphabet = "abc123" } }"#
        }
        "^Choose" => {
            r#"{ "^Choose" = { from = ["open", "paid"], weights = [1, 3] } } (or deterministic = true)"#
        }
        "^Now" => r#"{ "^Now" = { minus = "1h" } }"#,
        "^RandomDate" => r#"{ "^RandomDate" = { min = "-30d", max = "now" } }"#,
        "^ObjectId" => {
            r#"{ "^ObjectId" = {} } (a new one), or { "^ObjectId" = "5f1e6a3b9d1e8a2b3c4d5e6f" }, or a generator of 24 hex digits"#
        }
        "^UUID" => {
            r#"{ "^UUID" = {} } (a random v4), or { "^UUID" = { hex = "3b241101-e2bb-4255-8caf-4136c566a962" } }"#
        }
        "^Binary" => r#"{ "^Binary" = { size = 16 } }"#,
        "^Inc" => r#"{ "^Inc" = { start = 0, step = 1, multiplier = 1000000, scope = "user" } }"#,
        "^Array" => {
            r#"{ "^Array" = { of = { "^RandomInt" = { min = 1, max = 5 } }, number = 3, distinct = true } }"#
        }
        "^Object" => {
            r#"{ "^Object" = { withNEntries = 3, havingKeys = { "^RandomString" = { length = 5 } }, andValues = 1 } }"#
        }
        "^Join" => {
            r#"{ "^Join" = { array = ["a", { "^RandomInt" = { min = 1, max = 9 } }], sep = "-" } }"#
        }
        "^FormatString" => {
            r#"{ "^FormatString" = { format = "user-%04d", withArgs = [{ "^RandomInt" = { min = 1, max = 9999 } }] } }"#
        }
        "^Verbatim" => r#"{ "^Verbatim" = { "^literal" = 1 } }"#,
        "^Null" => r#"{ "^Null" = {} }"#,
        "^Date" => r#"{ "^Date" = "2024-01-31T12:00:00Z" } (or milliseconds since the epoch)"#,
        "^IncDate" => r#"{ "^IncDate" = { start = "2024-01-01", step = 60000, multiplier = 0 } }"#,
        "^Repeat" => {
            r#"{ "^Repeat" = { count = 3, fromGenerator = { "^RandomInt" = { min = 1, max = 9 } } } }"#
        }
        "^Cycle" => {
            r#"{ "^Cycle" = { ofLength = 10, fromGenerator = { "^RandomString" = { length = 8 } } } }"#
        }
        "^FixedGeneratedValue" => {
            r#"{ "^FixedGeneratedValue" = { fromGenerator = { "^RandomString" = { length = 8 } } } }"#
        }
        "^ChooseFromDataset" => {
            r#"{ "^ChooseFromDataset" = { path = "./src/workloads/datasets/names.txt", sequential = true, startFromLine = 0 } }"#
        }
        "^ConvertToInt" | "^ConvertToInt32" | "^ConvertToDouble" | "^ConvertToDecimal" => {
            r#"{ "^ConvertToInt" = { from = { "^RandomString" = { length = 4, alphabet = "0123456789" } } } } (from: a number, a string, or a generator of either)"#
        }
        "^Concat" => {
            r#"{ "^Concat" = { arrays = [[1, 2], { "^Array" = { of = 3, number = 2 } }] } }"#
        }
        "^ActorId" => r#"{ "^ActorId" = {} }"#,
        "^Id" => {
            r#"{ "^Id" = {} } (in a document template: the _id the key space gives the document)"#
        }
        "^ActorIdString" => r#"{ "^ActorIdString" = {} }"#,
        "^TimeSpec" => {
            r#"{ "^TimeSpec" = { value = 5, unit = "seconds" } } (units: nanoseconds, microseconds, milliseconds, seconds, minutes, hours)"#
        }
        "^IP" => r#"{ "^IP" = {} }"#,
        "^NowTimestamp" => r#"{ "^NowTimestamp" = {} }"#,
        "^TwoDWalk" => {
            r#"{ "^TwoDWalk" = { docsPerSeries = 100, minX = -50, maxX = 50, minY = -30, maxY = 30, distPerDoc = 0.1 } }"#
        }
        "^BinData" | "^BinDataSensitive" => r#"{ "^BinData" = { numBytes = 32 } }"#,
        "^TakeRandomStringFromFrequencyMap" => {
            r#"{ "^TakeRandomStringFromFrequencyMap" = { from = { red = 100, blue = 200 } } }"#
        }
        "^TakeRandomStringFromFrequencyMapSingleton" => {
            r#"{ "^TakeRandomStringFromFrequencyMapSingleton" = { id = "colors", from = { red = 100, blue = 200 } } }"#
        }
        "^Key" => r#"{ "^Key" = {} }"#,
        "^Field" => r#"{ "^Field" = { path = "customer.city" } }"#,
        "^Bind" => r#"{ "^Bind" = "amount" }"#,
        "^Step" => r#"{ "^Step" = { index = 0, path = "customer" } }"#,
        _ => "",
    }
}

/// The best match among `options` for a misspelt `word`, if it is close.
pub(super) fn did_you_mean<'a>(word: &str, options: &[&'a str]) -> Option<&'a str> {
    let w = word.to_lowercase();
    options
        .iter()
        .map(|o| (strsim::jaro_winkler(&w, &o.to_lowercase()), *o))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, o)| o)
}

fn hint(word: &str, options: &[&str]) -> String {
    did_you_mean(word, options)
        .map(|o| format!(" (did you mean `{o}`?)"))
        .unwrap_or_default()
}

fn err(
    key: impl Into<String>,
    problem: impl Into<String>,
    expected: impl Into<String>,
) -> GenError {
    GenError {
        key: key.into(),
        problem: problem.into(),
        expected: expected.into(),
    }
}

fn check_key(k: &str, at: &str) -> Result<(), GenError> {
    if k.contains('\0') {
        return Err(err(
            at,
            format!("the key `{}` holds a NUL character", k.escape_debug()),
            "a key without \\u0000 (BSON keys end at NUL)",
        ));
    }
    Ok(())
}

fn scalar(v: &V) -> Bson {
    match v {
        V::Null => Bson::Null,
        V::Bool(b) => Bson::Boolean(*b),
        V::Int(i) => int_bson(*i),
        V::Float(f) => Bson::Double(*f),
        V::Str(s) => Bson::String(s.clone()),
        V::Date(ms) => Bson::DateTime(DateTime::from_millis(*ms)),
        V::Arr(_) | V::Obj(_) => unreachable!("not a scalar"),
    }
}

/// Compiles a value: generators (one-key tables whose key starts with `^`), Extended JSON
/// values (tables with a `$` type key), documents, arrays and literals.
pub(super) fn node(v: &V, key: &str, o: &CompileOptions) -> Result<Node, GenError> {
    match v {
        V::Obj(entries) => {
            if let Some((k, arg)) = entries.iter().find(|(k, _)| k.starts_with('^')) {
                if entries.len() == 1 {
                    return generator(k, arg, key, o);
                }
                let others: Vec<&str> = entries
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .filter(|o| o != k)
                    .collect();
                return Err(err(
                    format!("{key}.{k}"),
                    format!(
                        "`{k}` sits beside other keys ({}): a generator is a table of exactly one key",
                        others.join(", ")
                    ),
                    "the generator alone in its table, e.g. n = { \"^RandomInt\" = { min = 1, max = 9 } }; \
                     a field whose name starts with '^' is written inside ^Verbatim, e.g. \
                     { \"^Verbatim\" = { \"^a\" = 1, b = 2 } }",
                ));
            }
            if V::is_wrapper(entries) {
                return Ok(Node::Const(wrapper_bson(entries, key)?));
            }
            let mut fields = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let at = format!("{key}.{k}");
                check_key(k, &at)?;
                fields.push((k.clone(), node(v, &at, o)?));
            }
            if fields.iter().all(|(_, n)| matches!(n, Node::Const(_))) {
                let mut doc = Document::new();
                for (k, n) in fields {
                    if let Node::Const(b) = n {
                        doc.insert(k, b);
                    }
                }
                Ok(Node::Const(Bson::Document(doc)))
            } else {
                Ok(Node::Doc(fields))
            }
        }
        V::Arr(items) => {
            let nodes = items
                .iter()
                .enumerate()
                .map(|(i, v)| node(v, &format!("{key}[{i}]"), o))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(fold_array(nodes))
        }
        other => Ok(Node::Const(scalar(other))),
    }
}

fn fold_array(nodes: Vec<Node>) -> Node {
    if nodes.iter().all(|n| matches!(n, Node::Const(_))) {
        Node::Const(Bson::Array(
            nodes
                .into_iter()
                .map(|n| match n {
                    Node::Const(b) => b,
                    _ => Bson::Null,
                })
                .collect(),
        ))
    } else {
        Node::Arr(nodes)
    }
}

/// A value taken as written: `^` keys are plain keys; Extended JSON values still become BSON.
fn literal(v: &V, key: &str) -> Result<Bson, GenError> {
    match v {
        V::Obj(entries) if V::is_wrapper(entries) => wrapper_bson(entries, key),
        V::Obj(entries) => {
            let mut doc = Document::new();
            for (k, v) in entries {
                let at = format!("{key}.{k}");
                check_key(k, &at)?;
                doc.insert(k.clone(), literal(v, &at)?);
            }
            Ok(Bson::Document(doc))
        }
        V::Arr(items) => Ok(Bson::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| literal(v, &format!("{key}[{i}]")))
                .collect::<Result<_, _>>()?,
        )),
        other => Ok(scalar(other)),
    }
}

fn generator(name: &str, arg: &V, key: &str, o: &CompileOptions) -> Result<Node, GenError> {
    let at = format!("{key}.{name}");
    let args = |name: &'static str| Args::new(name, arg, &at, o);
    let gen = match name {
        "^RandomInt" => random_int(&args("^RandomInt")?)?,
        "^RandomDouble" => random_double(&args("^RandomDouble")?)?,
        "^RandomString" => random_string(&args("^RandomString")?, false)?,
        "^FastRandomString" => random_string(&args("^FastRandomString")?, true)?,
        "^Choose" => choose(&args("^Choose")?)?,
        "^Now" => now(&args("^Now")?)?,
        "^RandomDate" => random_date(&args("^RandomDate")?)?,
        "^Date" => return date(arg, &at, o),
        "^IncDate" => inc_date(&args("^IncDate")?)?,
        "^ObjectId" => return object_id(arg, &at, o),
        "^UUID" => return uuid(arg, &at, o),
        "^Binary" => {
            let a = args("^Binary")?;
            a.allow(&["size"])?;
            Gen::Binary(a.length("size")?, BinarySubtype::Generic)
        }
        "^BinData" => return bin_data(&args("^BinData")?, BinarySubtype::Generic),
        "^BinDataSensitive" => {
            return bin_data(&args("^BinDataSensitive")?, BinarySubtype::UserDefined(8))
        }
        "^Inc" => inc(&args("^Inc")?)?,
        "^Array" => return array(&args("^Array")?),
        "^Concat" => return concat(&args("^Concat")?),
        "^Object" => object(&args("^Object")?)?,
        "^Join" => return join(&args("^Join")?),
        "^FormatString" => return format_string(&args("^FormatString")?),
        "^Repeat" => repeat(&args("^Repeat")?)?,
        "^Cycle" => cycle_of_length(&args("^Cycle")?)?,
        "^FixedGeneratedValue" => {
            let a = args("^FixedGeneratedValue")?;
            a.allow(&["fromGenerator"])?;
            cycle(&a, 1)?
        }
        "^ChooseFromDataset" => choose_from_dataset(&args("^ChooseFromDataset")?)?,
        "^ConvertToInt" => return convert_to(&args("^ConvertToInt")?, To::Int),
        "^ConvertToInt32" => return convert_to(&args("^ConvertToInt32")?, To::Int32),
        "^ConvertToDouble" => return convert_to(&args("^ConvertToDouble")?, To::Double),
        "^ConvertToDecimal" => return convert_to(&args("^ConvertToDecimal")?, To::Decimal),
        "^ActorId" => bare(&args("^ActorId")?, Gen::ActorId)?,
        "^Id" => bare(&args("^Id")?, Gen::OwnId)?,
        "^ActorIdString" => bare(&args("^ActorIdString")?, Gen::ActorIdString)?,
        "^TimeSpec" => time_spec(&args("^TimeSpec")?)?,
        "^IP" => bare(&args("^IP")?, Gen::Ip)?,
        "^NowTimestamp" => bare(&args("^NowTimestamp")?, Gen::NowTimestamp)?,
        "^TwoDWalk" => two_d_walk(&args("^TwoDWalk")?)?,
        "^TakeRandomStringFromFrequencyMap" => {
            let a = args("^TakeRandomStringFromFrequencyMap")?;
            a.allow(&["from"])?;
            Gen::Freq(FreqGen::Own(next_id(), frequency_map(&a)?))
        }
        "^TakeRandomStringFromFrequencyMapSingleton" => {
            shared_frequency_map(&args("^TakeRandomStringFromFrequencyMapSingleton")?)?
        }
        "^Verbatim" => return Ok(Node::Const(literal(arg, &at)?)),
        "^Null" => {
            args("^Null")?.allow(&[])?;
            return Ok(Node::Const(Bson::Null));
        }
        "^Key" => bare(&args("^Key")?, Gen::Key)?,
        "^Field" => field(&args("^Field")?)?,
        "^Bind" => bind(arg, at)?,
        "^Step" => step(&args("^Step")?)?,
        _ => {
            return Err(err(
                at,
                format!("`{name}` is not a generator{}", hint(name, GENERATOR_NAMES)),
                format!(
                    "one of {}; a table whose only key starts with '^' is a generator (a literal \
                     key starting with '^' is written inside ^Verbatim)",
                    GENERATOR_NAMES.join(", ")
                ),
            ))
        }
    };
    Ok(Node::Gen(Box::new(gen)))
}

/// A generator that takes no arguments.
fn bare(a: &Args<'_>, gen: Gen) -> Result<Gen, GenError> {
    a.allow(&[])?;
    Ok(gen)
}

/// `^Cycle`: `ofLength` values of `fromGenerator`, given in turn.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a length of at least 1, checked above"
)]
fn cycle_of_length(a: &Args<'_>) -> Result<Gen, GenError> {
    a.allow(&["ofLength", "fromGenerator"])?;
    let Num::Const(len) = a.length("ofLength")? else {
        return Err(a.err(
            "ofLength",
            "`ofLength` must be written as a value, not generated",
        ));
    };
    if len < 1 {
        return Err(a.err(
            "ofLength",
            format!("`ofLength` is {len}: at least 1 is needed"),
        ));
    }
    cycle(a, len as usize)
}

/// `^TakeRandomStringFromFrequencyMapSingleton`: one map per `id`, shared by every template
/// that names it while any of them is alive.
fn shared_frequency_map(a: &Args<'_>) -> Result<Gen, GenError> {
    a.allow(&["id", "from"])?;
    let id = a.string(a.need("id")?, "id")?;
    let map = frequency_map(a)?;
    let mut maps = FREQ_MAPS.lock().unwrap_or_else(|e| e.into_inner());
    let maps = maps.get_or_insert_with(HashMap::new);
    let shared = match maps.get(&id).and_then(Weak::upgrade) {
        Some(m) => m,
        None => {
            let m = Arc::new(Mutex::new(map));
            maps.retain(|_, w| w.strong_count() > 0);
            maps.insert(id, Arc::downgrade(&m));
            m
        }
    };
    Ok(Gen::Freq(FreqGen::Shared(shared)))
}

/// `^Field`: a fresh value of the collection's document at a dotted path.
fn field(a: &Args<'_>) -> Result<Gen, GenError> {
    a.allow(&["path"])?;
    let path = a.string(a.need("path")?, "path")?;
    if path.is_empty() {
        return Err(a.err("path", "the path is empty"));
    }
    Ok(Gen::Field(path))
}

/// `^Bind`: the name of a bound value.
fn bind(arg: &V, at: String) -> Result<Gen, GenError> {
    match arg {
        V::Str(s) if !s.is_empty() => Ok(Gen::Bind(s.clone())),
        other => Err(err(
            at,
            format!(
                "^Bind takes the name of a bound value, not {}",
                other.kind()
            ),
            example("^Bind"),
        )),
    }
}

/// `^Step`: an earlier step's result, or a value at a path in it.
fn step(a: &Args<'_>) -> Result<Gen, GenError> {
    a.allow(&["index", "path"])?;
    let index = a.int(a.need("index")?, "index")?;
    let index =
        usize::try_from(index).map_err(|_| a.err("index", format!("index {index} is negative")))?;
    let path = match a.get("path") {
        Some(p) => a.string(p, "path")?,
        None => String::new(),
    };
    Ok(Gen::Step(index, path))
}
