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
        "^Cycle" => {
            let a = args("^Cycle")?;
            a.allow(&["ofLength", "fromGenerator"])?;
            let len = a.length("ofLength")?;
            let Num::Const(len) = len else {
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
            cycle(&a, len as usize)?
        }
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
        "^ActorId" => {
            args("^ActorId")?.allow(&[])?;
            Gen::ActorId
        }
        "^ActorIdString" => {
            args("^ActorIdString")?.allow(&[])?;
            Gen::ActorIdString
        }
        "^TimeSpec" => time_spec(&args("^TimeSpec")?)?,
        "^IP" => {
            args("^IP")?.allow(&[])?;
            Gen::Ip
        }
        "^NowTimestamp" => {
            args("^NowTimestamp")?.allow(&[])?;
            Gen::NowTimestamp
        }
        "^TwoDWalk" => two_d_walk(&args("^TwoDWalk")?)?,
        "^TakeRandomStringFromFrequencyMap" => {
            let a = args("^TakeRandomStringFromFrequencyMap")?;
            a.allow(&["from"])?;
            Gen::Freq(FreqGen::Own(next_id(), frequency_map(&a)?))
        }
        "^TakeRandomStringFromFrequencyMapSingleton" => {
            let a = args("^TakeRandomStringFromFrequencyMapSingleton")?;
            a.allow(&["id", "from"])?;
            let id = a.string(a.need("id")?, "id")?;
            let map = frequency_map(&a)?;
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
            Gen::Freq(FreqGen::Shared(shared))
        }
        "^Verbatim" => return Ok(Node::Const(literal(arg, &at)?)),
        "^Null" => {
            args("^Null")?.allow(&[])?;
            return Ok(Node::Const(Bson::Null));
        }
        "^Key" => {
            args("^Key")?.allow(&[])?;
            Gen::Key
        }
        "^Field" => {
            let a = args("^Field")?;
            a.allow(&["path"])?;
            let path = a.string(a.need("path")?, "path")?;
            if path.is_empty() {
                return Err(a.err("path", "the path is empty"));
            }
            Gen::Field(path)
        }
        "^Bind" => match arg {
            V::Str(s) if !s.is_empty() => Gen::Bind(s.clone()),
            other => {
                return Err(err(
                    at,
                    format!(
                        "^Bind takes the name of a bound value, not {}",
                        other.kind()
                    ),
                    example("^Bind"),
                ))
            }
        },
        "^Step" => {
            let a = args("^Step")?;
            a.allow(&["index", "path"])?;
            let index = a.int(a.need("index")?, "index")?;
            let index = usize::try_from(index)
                .map_err(|_| a.err("index", format!("index {index} is negative")))?;
            let path = match a.get("path") {
                Some(p) => a.string(p, "path")?,
                None => String::new(),
            };
            Gen::Step(index, path)
        }
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

/// A generator's table of arguments.
struct Args<'a> {
    name: &'static str,
    at: String,
    entries: &'a [(String, V)],
    o: &'a CompileOptions,
}

impl<'a> Args<'a> {
    fn new(
        name: &'static str,
        arg: &'a V,
        at: &str,
        o: &'a CompileOptions,
    ) -> Result<Args<'a>, GenError> {
        match arg {
            V::Obj(entries) => Ok(Args {
                name,
                at: at.to_string(),
                entries,
                o,
            }),
            other => Err(err(
                at,
                format!("{name} takes a table of arguments, not {}", other.kind()),
                example(name),
            )),
        }
    }

    fn path(&self, arg: &str) -> String {
        format!("{}.{arg}", self.at)
    }

    fn err(&self, arg: &str, problem: impl Into<String>) -> GenError {
        err(self.path(arg), problem, example(self.name))
    }

    /// Compiles the value `v` of the argument at `path` (below this generator).
    fn node(&self, v: &V, path: &str) -> Result<Node, GenError> {
        node(v, path, self.o)
    }

    /// Refuses an argument not in `allowed` (genny ignores one: so does a genny workload's).
    fn allow(&self, allowed: &[&str]) -> Result<(), GenError> {
        if self.o.genny {
            return Ok(());
        }
        for (k, _) in self.entries {
            if !allowed.contains(&k.as_str()) {
                let list = if allowed.is_empty() {
                    format!("{} takes no argument", self.name)
                } else {
                    format!(
                        "the arguments of {} here: {}",
                        self.name,
                        allowed.join(", ")
                    )
                };
                return Err(err(
                    self.path(k),
                    format!(
                        "`{k}` is not an argument of {}{}",
                        self.name,
                        hint(k, allowed)
                    ),
                    format!("{list}; e.g. {}", example(self.name)),
                ));
            }
        }
        Ok(())
    }

    fn get(&self, arg: &str) -> Option<&'a V> {
        self.entries.iter().find(|(k, _)| k == arg).map(|(_, v)| v)
    }

    fn need(&self, arg: &str) -> Result<&'a V, GenError> {
        self.get(arg).ok_or_else(|| {
            err(
                self.at.clone(),
                format!("{} needs `{arg}`", self.name),
                example(self.name),
            )
        })
    }

    /// A value written in place (a generator is refused).
    fn constant(&self, v: &V, arg: &str) -> Result<Bson, GenError> {
        match self.node(v, &self.path(arg))? {
            Node::Const(b) => Ok(b),
            _ => Err(self.err(
                arg,
                format!(
                    "`{arg}` of {} must be written as a value, not generated",
                    self.name
                ),
            )),
        }
    }

    /// An integer written as a value (a whole number written with a fraction, `1e4`, is one).
    fn int(&self, v: &V, arg: &str) -> Result<i64, GenError> {
        let b = self.constant(v, arg)?;
        whole(&b).ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not an integer", kind(&b))))
    }

    /// The integer argument `arg`, or `default` without it.
    fn int_or(&self, arg: &str, default: i64) -> Result<i64, GenError> {
        match self.get(arg) {
            Some(v) => self.int(v, arg),
            None => Ok(default),
        }
    }

    /// The boolean argument `arg`, or false without it.
    fn flag(&self, arg: &str) -> Result<bool, GenError> {
        match self.get(arg) {
            None => Ok(false),
            Some(v) => match self.constant(v, arg)? {
                Bson::Boolean(b) => Ok(b),
                b => Err(self.err(arg, format!("`{arg}` is {}, not true or false", kind(&b)))),
            },
        }
    }

    fn float(&self, v: &V, arg: &str) -> Result<f64, GenError> {
        let b = self.constant(v, arg)?;
        generators::to_f64(&b)
            .ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not a number", kind(&b))))
    }

    fn string(&self, v: &V, arg: &str) -> Result<String, GenError> {
        match self.constant(v, arg)? {
            Bson::String(s) => Ok(s),
            b => Err(self.err(arg, format!("`{arg}` is {}, not a string", kind(&b)))),
        }
    }

    /// A probability: 0 to 1.
    fn probability(&self, arg: &str, open_at_zero: bool) -> Result<f64, GenError> {
        let p = self.float(self.need(arg)?, arg)?;
        let ok = if open_at_zero {
            p > 0.0 && p <= 1.0
        } else {
            (0.0..=1.0).contains(&p)
        };
        if !ok {
            let range = if open_at_zero {
                "above 0 and at most 1"
            } else {
                "from 0 to 1"
            };
            return Err(self.err(arg, format!("the probability {arg} = {p} is not {range}")));
        }
        Ok(p)
    }

    /// A generator's template argument that must be able to make one of `types`.
    fn template(&self, v: &V, arg: &str, types: u16, what: &str) -> Result<Node, GenError> {
        let n = self.node(v, &self.path(arg))?;
        let made = n.types();
        if made & types == 0 {
            let problem = match &n {
                Node::Const(b) => format!("`{arg}` is {}, not {what}", kind(b)),
                _ => format!(
                    "`{arg}` is a generator of {}, not of {what}",
                    ty::describe(made)
                ),
            };
            return Err(self.err(arg, problem));
        }
        Ok(n)
    }

    /// An integer, written or generated.
    fn num(&self, arg: &str) -> Result<Num, GenError> {
        let v = self.need(arg)?;
        match self.template(v, arg, ty::NUMBER, "an integer")? {
            Node::Const(b) => match whole(&b) {
                Some(i) => Ok(Num::Const(i)),
                None => Err(self.err(arg, format!("`{arg}` is {}, not an integer", kind(&b)))),
            },
            n => Ok(Num::Gen(Box::new(n))),
        }
    }

    /// A count or size: written from 0 to `MAX_LEN`, or generated (then clamped to it).
    fn length(&self, arg: &str) -> Result<Num, GenError> {
        let n = self.num(arg)?;
        if let Num::Const(i) = n {
            if i < 0 {
                return Err(self.err(arg, format!("`{arg}` is negative ({i})")));
            }
            if i > MAX_LEN {
                return Err(self.err(
                    arg,
                    format!("`{arg}` is {i}: more than {MAX_LEN}, which cannot fit in a 16 MiB document"),
                ));
            }
        }
        Ok(n)
    }

    /// A number, written or generated.
    fn real(&self, arg: &str, default: f64) -> Result<Real, GenError> {
        let Some(v) = self.get(arg) else {
            return Ok(Real::Const(default));
        };
        match self.template(v, arg, ty::NUMBER, "a number")? {
            Node::Const(b) => generators::to_f64(&b)
                .map(Real::Const)
                .ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not a number", kind(&b)))),
            n => Ok(Real::Gen(Box::new(n))),
        }
    }

    /// The string argument `arg` (or `default`), one of `options`.
    fn choice(&self, arg: &str, options: &[&str], default: &str) -> Result<String, GenError> {
        let Some(v) = self.get(arg) else {
            return Ok(default.to_string());
        };
        let s = self.string(v, arg)?;
        if !options.contains(&s.as_str()) {
            return Err(err(
                self.path(arg),
                format!("`{s}` is not a {arg} of {}{}", self.name, hint(&s, options)),
                format!("one of {}; e.g. {}", options.join(", "), example(self.name)),
            ));
        }
        Ok(s)
    }
}

fn kind(b: &Bson) -> String {
    ty::describe(ty::of(b))
}

/// An integer, or a double that is a whole number within the range of one.
fn whole(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
        _ => None,
    }
}

fn random_int(a: &Args) -> Result<Gen, GenError> {
    let dist = a.choice(
        "distribution",
        &[
            "uniform",
            "binomial",
            "negative_binomial",
            "geometric",
            "poisson",
            "zipfian",
        ],
        "uniform",
    )?;
    let bad = |arg: &str, e: &dyn std::fmt::Display| a.err(arg, format!("{e}"));
    Ok(Gen::Int(match dist.as_str() {
        "uniform" => {
            a.allow(&["distribution", "min", "max"])?;
            let (min, max) = (a.num("min")?, a.num("max")?);
            match (min, max) {
                (Num::Const(lo), Num::Const(hi)) => {
                    if lo > hi {
                        return Err(a.err("min", format!("min ({lo}) is greater than max ({hi})")));
                    }
                    IntGen::Uniform(Uniform::new_inclusive(lo, hi).map_err(|e| bad("min", &e))?)
                }
                (lo, hi) => IntGen::Between(lo, hi),
            }
        }
        "binomial" => {
            a.allow(&["distribution", "t", "p"])?;
            let p = a.probability("p", false)?;
            match a.num("t")? {
                Num::Const(t) => {
                    let t =
                        u64::try_from(t).map_err(|_| a.err("t", format!("t ({t}) is negative")))?;
                    IntGen::Binomial(rand_distr::Binomial::new(t, p).map_err(|e| bad("p", &e))?)
                }
                t => IntGen::BinomialOf(t, p),
            }
        }
        "negative_binomial" => {
            a.allow(&["distribution", "k", "p"])?;
            let k = a.num("k")?;
            if let Num::Const(k) = k {
                if k < 0 {
                    return Err(a.err("k", format!("k ({k}) is negative")));
                }
            }
            IntGen::NegativeBinomial(k, a.probability("p", true)?)
        }
        "geometric" => {
            a.allow(&["distribution", "p"])?;
            let p = a.probability("p", true)?;
            IntGen::Geometric(rand_distr::Geometric::new(p).map_err(|e| bad("p", &e))?)
        }
        "zipfian" => {
            a.allow(&["distribution", "alpha", "n"])?;
            let alpha = a.float(a.need("alpha")?, "alpha")?;
            if !alpha.is_finite() || alpha < 0.0 {
                return Err(a.err("alpha", format!("alpha ({alpha}) must be 0 or more")));
            }
            let n = a.int(a.need("n")?, "n")?;
            if n < 1 {
                return Err(a.err("n", format!("n ({n}) must be 1 or more")));
            }
            IntGen::Zipf(
                rand_distr::Zipf::new(crate::num::real_signed(n), alpha)
                    .map_err(|e| bad("alpha", &e))?,
            )
        }
        _ => {
            a.allow(&["distribution", "mean"])?;
            let mean = a.float(a.need("mean")?, "mean")?;
            if mean.is_nan() || mean <= 0.0 {
                return Err(a.err("mean", format!("the mean ({mean}) is not above 0")));
            }
            IntGen::Poisson(rand_distr::Poisson::new(mean).map_err(|e| bad("mean", &e))?)
        }
    }))
}

fn random_double(a: &Args) -> Result<Gen, GenError> {
    let dist = a.choice("distribution", dist::DOUBLE_NAMES, "uniform")?;
    let Some(kind) = Kind::parse(&dist) else {
        a.allow(&["distribution", "min", "max"])?;
        let (min, max) = (a.real("min", 0.0)?, a.real("max", 1.0)?);
        if let (Real::Const(lo), Real::Const(hi)) = (&min, &max) {
            if !lo.is_finite() || !hi.is_finite() {
                return Err(a.err("min", "min and max must be finite numbers"));
            }
            if lo > hi {
                return Err(a.err("min", format!("min ({lo}) is greater than max ({hi})")));
            }
        }
        return Ok(Gen::Double(DoubleGen::Uniform(min, max)));
    };
    let params = kind.params();
    let mut allowed = vec!["distribution"];
    allowed.extend(params.iter().map(|(name, _)| *name));
    a.allow(&allowed)?;
    let values = params
        .iter()
        .map(|(name, default)| a.real(name, *default))
        .collect::<Result<Vec<Real>, GenError>>()?;
    let written: Option<Vec<f64>> = values
        .iter()
        .map(|r| match r {
            Real::Const(f) => Some(*f),
            Real::Gen(_) => None,
        })
        .collect();
    Ok(Gen::Double(match written {
        Some(p) => DoubleGen::Fixed(Sampler::new(kind, &p).map_err(|(arg, e)| a.err(arg, e))?),
        None => DoubleGen::Of(kind, values),
    }))
}

fn random_string(a: &Args, fast: bool) -> Result<Gen, GenError> {
    a.allow(&["length", "alphabet"])?;
    let length = a.length("length")?;
    let alphabet = match a.get("alphabet") {
        Some(v) => a.string(v, "alphabet")?,
        None => DEFAULT_ALPHABET.to_string(),
    };
    let chars: Vec<char> = alphabet.chars().collect();
    if chars.is_empty() {
        return Err(a.err("alphabet", "the alphabet is empty"));
    }
    let ascii = alphabet.is_ascii().then(|| alphabet.as_bytes().to_vec());
    let pick = Uniform::new(0, chars.len()).map_err(|e| a.err("alphabet", e.to_string()))?;
    Ok(Gen::Str(StrGen {
        length,
        fast,
        chars,
        ascii,
        pick,
    }))
}

fn choose(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["from", "weights", "deterministic"])?;
    let from = match a.need("from")? {
        V::Arr(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, v)| a.node(v, &format!("{}[{i}]", a.path("from"))))
            .collect::<Result<Vec<_>, _>>()?,
        V::Arr(_) => return Err(a.err("from", "`from` is empty")),
        other => {
            return Err(a.err(
                "from",
                format!("`from` is {}, not a list of values", other.kind()),
            ))
        }
    };
    if a.flag("deterministic")? {
        if a.get("weights").is_some() {
            return Err(a.err(
                "weights",
                "`deterministic` takes the values in turn: it has no `weights` (as in genny)",
            ));
        }
        return Ok(Gen::Choose(ChooseGen {
            from,
            pick: Pick::InTurn(next_id()),
        }));
    }
    let pick = match a.get("weights") {
        None => {
            Pick::Uniform(Uniform::new(0, from.len()).map_err(|e| a.err("from", e.to_string()))?)
        }
        Some(V::Arr(ws)) => {
            if ws.len() != from.len() {
                return Err(a.err(
                    "weights",
                    format!("{} weights for {} values in `from`", ws.len(), from.len()),
                ));
            }
            let mut weights = Vec::with_capacity(ws.len());
            for (i, w) in ws.iter().enumerate() {
                let at = format!("weights[{i}]");
                let w = a.int(w, &at)?;
                weights.push(
                    u64::try_from(w)
                        .map_err(|_| a.err(&at, format!("the weight {w} is negative")))?,
                );
            }
            if weights.iter().all(|&w| w == 0) {
                return Err(a.err("weights", "every weight is 0"));
            }
            Pick::Weighted(
                WeightedIndex::new(weights).map_err(|e| a.err("weights", e.to_string()))?,
            )
        }
        Some(other) => {
            return Err(a.err(
                "weights",
                format!("`weights` is {}, not a list of whole numbers", other.kind()),
            ))
        }
    };
    Ok(Gen::Choose(ChooseGen { from, pick }))
}

fn duration(a: &Args, arg: &str) -> Result<i64, GenError> {
    let Some(v) = a.get(arg) else { return Ok(0) };
    let s = a.string(v, arg)?;
    time::parse_duration_ms(&s).map_err(|e| {
        err(
            a.path(arg),
            e,
            format!("{}; e.g. {}", time::DURATION_FORM, example(a.name)),
        )
    })
}

fn now(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["minus", "plus"])?;
    let (minus, plus) = (duration(a, "minus")?, duration(a, "plus")?);
    Ok(Gen::Now(plus.saturating_sub(minus)))
}

fn date_arg(a: &Args, arg: &str, default: i64) -> Result<DateArg, GenError> {
    let Some(v) = a.get(arg) else {
        return Ok(DateArg::When(When::At(default)));
    };
    date_value(v, &a.path(arg), a.name, a.o)
}

/// A date written (an ISO string, a relative time, a TOML datetime, `$date`, milliseconds since
/// the epoch) or generated (a generator of any of these), at `at`, an argument of `name`.
fn date_value(v: &V, at: &str, name: &str, o: &CompileOptions) -> Result<DateArg, GenError> {
    let bad = |e: String| {
        err(
            at,
            e,
            format!("{}; e.g. {}", time::DATE_FORM, example(name)),
        )
    };
    match v {
        V::Str(s) => return time::parse_when(s).map(DateArg::When).map_err(bad),
        V::Date(ms) => return Ok(DateArg::When(When::At(*ms))),
        _ => {}
    }
    let n = node(v, at, o)?;
    let made = n.types();
    match n {
        Node::Const(Bson::DateTime(d)) => Ok(DateArg::When(When::At(d.timestamp_millis()))),
        // A string made once (a ^FormatString of written arguments) reads as one written.
        Node::Const(Bson::String(s)) => time::parse_when(&s).map(DateArg::When).map_err(bad),
        Node::Const(b) => match generators::to_i64(&b) {
            Some(ms) => Ok(DateArg::When(When::At(ms))),
            None => Err(bad(format!("{} is not a date", kind(&b)))),
        },
        n if made & (ty::STRING | ty::DATE | ty::NUMBER) != 0 => Ok(DateArg::Gen(Box::new(n))),
        _ => Err(bad(format!(
            "a generator of {}, not of a date",
            ty::describe(made)
        ))),
    }
}

/// `^Date`: the date written, or of a generated value.
fn date(arg: &V, at: &str, o: &CompileOptions) -> Result<Node, GenError> {
    Ok(match date_value(arg, at, "^Date", o)? {
        DateArg::When(When::At(ms)) => Node::Const(Bson::DateTime(DateTime::from_millis(ms))),
        d => Node::Gen(Box::new(Gen::DateOf(d))),
    })
}

fn inc_date(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["start", "step", "multiplier"])?;
    Ok(Gen::IncDate(IncDateGen {
        id: next_id(),
        start: date_arg(a, "start", 0)?,
        step: a.int_or("step", 1)?,
        multiplier: a.int_or("multiplier", 0)?,
    }))
}

fn show_ms(ms: i64) -> String {
    DateTime::from_millis(ms)
        .try_to_rfc3339_string()
        .unwrap_or_else(|_| format!("{ms} ms"))
}

fn random_date(a: &Args) -> Result<Gen, GenError> {
    // genny's range leaves out max; mongo-stress's own includes it.
    let exclusive = a.o.genny;
    a.allow(&["min", "max"])?;
    // genny's defaults: 1970-01-01 to 2150-01-01.
    let max_default = time::days_from_civil(2150, 1, 1) * 86_400_000;
    let (min, max) = (date_arg(a, "min", 0)?, date_arg(a, "max", max_default)?);
    if let (DateArg::When(lo), DateArg::When(hi)) = (&min, &max) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let (l, h) = (lo.resolve(now), hi.resolve(now));
        if l > h || (exclusive && l == h) {
            return Err(a.err(
                "min",
                format!("min ({}) is later than max ({})", show_ms(l), show_ms(h)),
            ));
        }
    }
    Ok(Gen::Date(min, max, exclusive))
}

fn object_id(arg: &V, at: &str, o: &CompileOptions) -> Result<Node, GenError> {
    let bad = |problem: String| err(at, problem, example("^ObjectId"));
    match arg {
        V::Obj(entries) if entries.is_empty() => Ok(Node::Gen(Box::new(Gen::NewObjectId))),
        V::Str(s) if s.is_empty() => Ok(Node::Gen(Box::new(Gen::NewObjectId))),
        V::Str(s) => ObjectId::parse_str(s)
            .map(|o| Node::Const(Bson::ObjectId(o)))
            .map_err(|_| {
                bad(format!(
                    "`{s}` is not an ObjectId: 24 hex digits are needed"
                ))
            }),
        other => match node(other, at, o)? {
            Node::Const(Bson::ObjectId(o)) => Ok(Node::Const(Bson::ObjectId(o))),
            Node::Const(b) => Err(bad(format!("^ObjectId of {}", kind(&b)))),
            n if n.types() & (ty::STRING | ty::OID) != 0 => {
                Ok(Node::Gen(Box::new(Gen::ObjectIdOf(n))))
            }
            n => Err(bad(format!(
                "^ObjectId of a generator of {}, not of a string",
                ty::describe(n.types())
            ))),
        },
    }
}

fn uuid(arg: &V, at: &str, o: &CompileOptions) -> Result<Node, GenError> {
    let a = Args::new("^UUID", arg, at, o)?;
    a.allow(&["hex", "subType"])?;
    if let Some(v) = a.get("subType") {
        let sub = a.int(v, "subType")?;
        if sub != 4 {
            return Err(a.err(
                "subType",
                format!("subType {sub}: a UUID is binary subtype 4 (as genny's)"),
            ));
        }
    }
    let Some(hex) = a.get("hex") else {
        return Ok(Node::Gen(Box::new(Gen::NewUuid)));
    };
    if let V::Str(s) = hex {
        return match generators::parse_uuid_hex(s) {
            Some(bytes) => Ok(Node::Const(Bson::Binary(Binary::from_uuid(
                mongodb::bson::Uuid::from_bytes(bytes),
            )))),
            None => Err(a.err(
                "hex",
                format!("`{s}` is not a UUID: 32 hex digits (dashes allowed) are needed"),
            )),
        };
    }
    let n = a.template(
        hex,
        "hex",
        ty::STRING | ty::BINARY,
        "a string of 32 hex digits",
    )?;
    Ok(match n {
        Node::Const(b) => match generators::uuid_of(b) {
            Bson::Null => return Err(a.err("hex", "`hex` is not a UUID")),
            u => Node::Const(u),
        },
        n => Node::Gen(Box::new(Gen::UuidOf(n))),
    })
}

fn inc(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["start", "step", "multiplier", "scope"])?;
    // genny's counters start at 1; mongo-stress's own at 0.
    let start = match a.get("start") {
        Some(_) => a.num("start")?,
        None => Num::Const(i64::from(a.o.genny)),
    };
    let (step, multiplier) = (a.int_or("step", 1)?, a.int_or("multiplier", 0)?);
    let scope = match a.choice("scope", &["user", "global"], "user")?.as_str() {
        "user" => IncScope::User(next_id()),
        _ => {
            if matches!(start, Num::Gen(_)) {
                return Err(a.err(
                    "start",
                    "a global counter's start must be written as a value, not generated",
                ));
            }
            if a.get("multiplier").is_some() {
                return Err(a.err(
                    "multiplier",
                    "multiplier spreads per-user counters apart; a global counter has none",
                ));
            }
            IncScope::Global(Arc::new(AtomicI64::new(0)))
        }
    };
    Ok(Gen::Inc(IncGen {
        start,
        step,
        multiplier,
        scope,
    }))
}

fn array(a: &Args) -> Result<Node, GenError> {
    a.allow(&["of", "number", "distinct"])?;
    let of = a.node(a.need("of")?, &a.path("of"))?;
    let number = a.length("number")?;
    let distinct = a.flag("distinct")?;
    if let (Node::Const(b), Num::Const(n)) = (&of, &number) {
        if distinct {
            // One value, drawn again each time: genny gives up on the second.
            return Ok(Node::Const(Bson::Array(
                std::iter::repeat_n(b.clone(), (*n).min(1) as usize).collect(),
            )));
        }
        if *n <= 1000 {
            return Ok(Node::Const(Bson::Array(vec![b.clone(); *n as usize])));
        }
    }
    Ok(Node::Gen(Box::new(Gen::Array(of, number, distinct))))
}

fn concat(a: &Args) -> Result<Node, GenError> {
    a.allow(&["arrays"])?;
    let parts = match a.need("arrays")? {
        V::Arr(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let at = format!("arrays[{i}]");
                a.template(v, &at, ty::ARRAY, "an array")
            })
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(a.err(
                "arrays",
                format!("`arrays` is {}, not a list of arrays", other.kind()),
            ))
        }
    };
    if parts.iter().all(|n| matches!(n, Node::Const(_))) {
        let mut all = Vec::new();
        for p in parts {
            if let Node::Const(Bson::Array(items)) = p {
                all.extend(items);
            }
        }
        return Ok(Node::Const(Bson::Array(all)));
    }
    Ok(Node::Gen(Box::new(Gen::Concat(parts))))
}

/// `^BinData` and `^BinDataSensitive`: `numBytes` random bytes (default 32) made once per user,
/// then the same each time (genny makes them once per actor thread).
fn bin_data(a: &Args, subtype: BinarySubtype) -> Result<Node, GenError> {
    a.allow(&["numBytes"])?;
    let size = match a.get("numBytes") {
        Some(_) => a.length("numBytes")?,
        None => Num::Const(32),
    };
    let Num::Const(size) = size else {
        return Err(a.err(
            "numBytes",
            "`numBytes` must be written as a value, not generated",
        ));
    };
    let bytes = Node::Gen(Box::new(Gen::Binary(Num::Const(size), subtype)));
    Ok(Node::Gen(Box::new(Gen::Cycle(CycleGen {
        id: next_id(),
        len: 1,
        of: bytes,
    }))))
}

fn repeat(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["count", "fromGenerator"])?;
    let count = a.int(a.need("count")?, "count")?;
    if count < 1 {
        return Err(a.err("count", format!("`count` is {count}: at least 1 is needed")));
    }
    let of = a.node(a.need("fromGenerator")?, &a.path("fromGenerator"))?;
    Ok(Gen::Repeat(RepeatGen {
        id: next_id(),
        count,
        of,
    }))
}

/// `^Cycle` of `len` values, `^FixedGeneratedValue` of one.
fn cycle(a: &Args, len: usize) -> Result<Gen, GenError> {
    let of = a.node(a.need("fromGenerator")?, &a.path("fromGenerator"))?;
    Ok(Gen::Cycle(CycleGen {
        id: next_id(),
        len,
        of,
    }))
}

fn choose_from_dataset(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["path", "sequential", "startFromLine"])?;
    let path = a.string(a.need("path")?, "path")?;
    let lines = dataset::load(&path, a.o.base_dir.as_deref()).map_err(|e| a.err("path", e))?;
    let sequential = a.flag("sequential")?;
    let start = a.int_or("startFromLine", 0)?;
    if start < 0 || start as u64 >= lines.len() as u64 {
        return Err(a.err(
            "startFromLine",
            format!(
                "startFromLine {start} is out of the file's {} line(s) (numbered from 0, empty lines not counted)",
                lines.len()
            ),
        ));
    }
    Ok(Gen::Dataset(DatasetGen {
        lines,
        sequential: sequential.then(|| (next_id(), start)),
    }))
}

fn convert_to(a: &Args, to: To) -> Result<Node, GenError> {
    a.allow(&["from"])?;
    let v = a.need("from")?;
    let from = a.template(v, "from", ty::NUMBER | ty::STRING, "a number or a string")?;
    let Node::Const(b) = &from else {
        return Ok(Node::Gen(Box::new(Gen::Convert(to, from))));
    };
    // A written value is read as its text, as genny reads it.
    let text = match (v, b) {
        (V::Int(i), _) => i.to_string(),
        (V::Float(f), _) => f.to_string(),
        (_, Bson::String(s)) => s.clone(),
        (_, b) => format::text(b),
    };
    let into = match to {
        To::Int => "a 64-bit integer",
        To::Int32 => "a 32-bit integer",
        To::Double => "a double",
        To::Decimal => "a Decimal128",
    };
    convert::from_str(to, &text)
        .map(Node::Const)
        .ok_or_else(|| {
            a.err(
                "from",
                format!("{}: `{text}` cannot be made into {into}", to.name()),
            )
        })
}

/// `^TimeSpec {value, unit}`: a duration, in milliseconds (a double).
fn time_spec(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["value", "unit"])?;
    let unit = a.string(a.need("unit")?, "unit")?;
    // As genny, a unit is read by its start (so plurals are units too).
    let ms = [
        ("nanosecond", 1e-6),
        ("microsecond", 1e-3),
        ("millisecond", 1.0),
        ("second", 1e3),
        ("minute", 60e3),
        ("hour", 3600e3),
    ]
    .iter()
    .find(|(name, _)| unit.starts_with(name))
    .map(|(_, ms)| *ms)
    .ok_or_else(|| {
        a.err(
            "unit",
            format!(
                "`{unit}` is not a unit of time{}",
                hint(
                    &unit,
                    &[
                        "nanoseconds",
                        "microseconds",
                        "milliseconds",
                        "seconds",
                        "minutes",
                        "hours"
                    ]
                )
            ),
        )
    })?;
    a.need("value")?;
    let value = a.real("value", 0.0)?;
    Ok(Gen::TimeSpec(value, ms))
}

fn two_d_walk(a: &Args) -> Result<Gen, GenError> {
    a.allow(&[
        "docsPerSeries",
        "distPerDoc",
        "minX",
        "maxX",
        "minY",
        "maxY",
    ])?;
    let per_series = a.int(a.need("docsPerSeries")?, "docsPerSeries")?;
    if per_series < 1 {
        return Err(a.err(
            "docsPerSeries",
            format!("docsPerSeries ({per_series}) must be 1 or more"),
        ));
    }
    let f = |arg: &str| -> Result<f64, GenError> {
        let v = a.float(a.need(arg)?, arg)?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(a.err(arg, format!("{arg} ({v}) must be a finite number")))
        }
    };
    let (dist, min_x, max_x, min_y, max_y) = (
        f("distPerDoc")?,
        f("minX")?,
        f("maxX")?,
        f("minY")?,
        f("maxY")?,
    );
    for (lo, hi, arg) in [(min_x, max_x, "minX"), (min_y, max_y, "minY")] {
        if lo > hi {
            return Err(a.err(arg, format!("{arg} ({lo}) is greater than its max ({hi})")));
        }
    }
    Ok(Gen::Walk(WalkGen {
        id: next_id(),
        per_series,
        dist,
        x: (min_x, max_x),
        y: (min_y, max_y),
    }))
}

/// A frequency map's `from`: a table of strings, each with how many times it is to be given.
fn frequency_map(a: &Args) -> Result<FreqMap, GenError> {
    let V::Obj(entries) = a.need("from")? else {
        return Err(a.err(
            "from",
            "`from` must be a table of strings with their counts, e.g. { red = 100, blue = 200 }",
        ));
    };
    let mut map = FreqMap::new();
    for (k, v) in entries {
        let at = format!("from.{k}");
        let n = a.int(v, &at)?;
        let n = u64::try_from(n).map_err(|_| a.err(&at, format!("the count {n} is negative")))?;
        if n > 0 {
            map.push((k.clone(), n));
        }
    }
    Ok(map)
}

fn object(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["withNEntries", "havingKeys", "andValues", "duplicatedKeys"])?;
    let entries = a.length("withNEntries")?;
    let keys = a.template(
        a.need("havingKeys")?,
        "havingKeys",
        ty::STRING | ty::NUMBER,
        "a string",
    )?;
    if let Node::Const(Bson::String(k)) = &keys {
        check_key(k, &a.path("havingKeys"))?;
    }
    let values = a.node(a.need("andValues")?, &a.path("andValues"))?;
    let skip_repeated = a.choice("duplicatedKeys", &["insert", "skip"], "insert")? == "skip";
    Ok(Gen::Object(ObjectGen {
        entries,
        keys,
        values,
        skip_repeated,
    }))
}

fn join(a: &Args) -> Result<Node, GenError> {
    a.allow(&["array", "sep"])?;
    let array = a.node(a.need("array")?, &a.path("array"))?;
    let sep = match a.get("sep") {
        Some(v) => a.string(v, "sep")?,
        None => String::new(),
    };
    Ok(match array {
        Node::Const(b) => Node::Const(Bson::String(generators::join(&b, &sep))),
        n => Node::Gen(Box::new(Gen::Join(n, sep))),
    })
}

fn format_string(a: &Args) -> Result<Node, GenError> {
    a.allow(&["format", "withArgs"])?;
    let text = a.string(a.need("format")?, "format")?;
    let pieces = format::parse(&text).map_err(|e| a.err("format", e))?;
    let args = match a.get("withArgs") {
        None => Vec::new(),
        Some(V::Arr(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| a.node(v, &format!("{}[{i}]", a.path("withArgs"))))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(a.err(
                "withArgs",
                format!("`withArgs` is {}, not a list of values", other.kind()),
            ))
        }
    };
    let wanted = format::conversions(&pieces);
    if wanted != args.len() {
        return Err(a.err(
            "withArgs",
            format!(
                "the format has {wanted} conversion(s) but withArgs has {} value(s)",
                args.len()
            ),
        ));
    }
    if args.iter().all(|n| matches!(n, Node::Const(_))) {
        let values: Vec<Bson> = args
            .into_iter()
            .map(|n| match n {
                Node::Const(b) => b,
                _ => Bson::Null,
            })
            .collect();
        return Ok(Node::Const(Bson::String(generators::format_with(
            &pieces, &values,
        ))));
    }
    Ok(Node::Gen(Box::new(Gen::Format(pieces, args))))
}
