//! From a source tree to a compiled template: generators recognised and their arguments checked,
//! every error located by its key path and saying what is accepted.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use mongodb::bson::{oid::ObjectId, Binary, Bson, DateTime, Document};
use rand::distr::{weighted::WeightedIndex, Uniform};

use super::format;
use super::generators::{
    self, ty, ChooseGen, DateArg, DoubleGen, Gen, IncGen, IncScope, IntGen, Num, ObjectGen, Pick,
    Real, StrGen, MAX_LEN,
};
use super::time::{self, When};
use super::value::{int_bson, wrapper_bson, V};
use super::{GenError, Node};

/// Every generator's name, as written.
pub const GENERATOR_NAMES: &[&str] = &[
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
    "^Key",
    "^Field",
    "^Bind",
    "^Step",
];

/// genny's default alphabet of `^RandomString`.
pub(super) const DEFAULT_ALPHABET: &str =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";

/// Ids of per-user `^Inc` counters, unique in the process.
static NEXT_INC: AtomicUsize = AtomicUsize::new(0);

fn example(name: &str) -> &'static str {
    match name {
        "^RandomInt" => {
            r#"{ "^RandomInt" = { min = 1, max = 100 } } (or distribution = "binomial" with t and p, "geometric" with p, "poisson" with mean)"#
        }
        "^RandomDouble" => {
            r#"{ "^RandomDouble" = { min = 0.0, max = 1.0 } } (or distribution = "normal" with mean and sigma, "exponential" with lambda)"#
        }
        "^RandomString" | "^FastRandomString" => {
            r#"{ "^RandomString" = { length = 10, alphabet = "abc123" } }"#
        }
        "^Choose" => r#"{ "^Choose" = { from = ["open", "paid"], weights = [1, 3] } }"#,
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
            r#"{ "^Array" = { of = { "^RandomInt" = { min = 1, max = 5 } }, number = 3 } }"#
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
pub(super) fn node(v: &V, key: &str) -> Result<Node, GenError> {
    match v {
        V::Obj(entries) => {
            if let Some((k, arg)) = entries.iter().find(|(k, _)| k.starts_with('^')) {
                if entries.len() == 1 {
                    return generator(k, arg, key);
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
                fields.push((k.clone(), node(v, &at)?));
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
                .map(|(i, v)| node(v, &format!("{key}[{i}]")))
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

fn generator(name: &str, arg: &V, key: &str) -> Result<Node, GenError> {
    let at = format!("{key}.{name}");
    let gen = match name {
        "^RandomInt" => random_int(&Args::new("^RandomInt", arg, &at)?)?,
        "^RandomDouble" => random_double(&Args::new("^RandomDouble", arg, &at)?)?,
        "^RandomString" => random_string(&Args::new("^RandomString", arg, &at)?)?,
        "^FastRandomString" => random_string(&Args::new("^FastRandomString", arg, &at)?)?,
        "^Choose" => choose(&Args::new("^Choose", arg, &at)?)?,
        "^Now" => now(&Args::new("^Now", arg, &at)?)?,
        "^RandomDate" => random_date(&Args::new("^RandomDate", arg, &at)?)?,
        "^ObjectId" => return object_id(arg, &at),
        "^UUID" => return uuid(arg, &at),
        "^Binary" => {
            let a = Args::new("^Binary", arg, &at)?;
            a.allow(&["size"])?;
            Gen::Binary(a.length("size")?)
        }
        "^Inc" => inc(&Args::new("^Inc", arg, &at)?)?,
        "^Array" => return array(&Args::new("^Array", arg, &at)?),
        "^Object" => object(&Args::new("^Object", arg, &at)?)?,
        "^Join" => return join(&Args::new("^Join", arg, &at)?),
        "^FormatString" => return format_string(&Args::new("^FormatString", arg, &at)?),
        "^Verbatim" => return Ok(Node::Const(literal(arg, &at)?)),
        "^Null" => {
            Args::new("^Null", arg, &at)?.allow(&[])?;
            return Ok(Node::Const(Bson::Null));
        }
        "^Key" => {
            Args::new("^Key", arg, &at)?.allow(&[])?;
            Gen::Key
        }
        "^Field" => {
            let a = Args::new("^Field", arg, &at)?;
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
            let a = Args::new("^Step", arg, &at)?;
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
}

impl<'a> Args<'a> {
    fn new(name: &'static str, arg: &'a V, at: &str) -> Result<Args<'a>, GenError> {
        match arg {
            V::Obj(entries) => Ok(Args {
                name,
                at: at.to_string(),
                entries,
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

    /// Refuses an argument not in `allowed`.
    fn allow(&self, allowed: &[&str]) -> Result<(), GenError> {
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
        match node(v, &self.path(arg))? {
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

    fn int(&self, v: &V, arg: &str) -> Result<i64, GenError> {
        let b = self.constant(v, arg)?;
        generators::to_i64(&b)
            .filter(|_| matches!(b, Bson::Int32(_) | Bson::Int64(_)))
            .ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not an integer", kind(&b))))
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
        let n = node(v, &self.path(arg))?;
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
            Node::Const(b) => match b {
                Bson::Int32(i) => Ok(Num::Const(i as i64)),
                Bson::Int64(i) => Ok(Num::Const(i)),
                b => Err(self.err(arg, format!("`{arg}` is {}, not an integer", kind(&b)))),
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

fn random_int(a: &Args) -> Result<Gen, GenError> {
    let dist = a.choice(
        "distribution",
        &["uniform", "binomial", "geometric", "poisson"],
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
            let t = a.int(a.need("t")?, "t")?;
            let t = u64::try_from(t).map_err(|_| a.err("t", format!("t ({t}) is negative")))?;
            let p = a.probability("p", false)?;
            IntGen::Binomial(rand_distr::Binomial::new(t, p).map_err(|e| bad("p", &e))?)
        }
        "geometric" => {
            a.allow(&["distribution", "p"])?;
            let p = a.probability("p", true)?;
            IntGen::Geometric(rand_distr::Geometric::new(p).map_err(|e| bad("p", &e))?)
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
    let dist = a.choice(
        "distribution",
        &["uniform", "normal", "exponential"],
        "uniform",
    )?;
    Ok(Gen::Double(match dist.as_str() {
        "uniform" => {
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
            DoubleGen::Uniform(min, max)
        }
        "normal" => {
            a.allow(&["distribution", "mean", "sigma"])?;
            let mean = match a.get("mean") {
                Some(v) => a.float(v, "mean")?,
                None => 0.0,
            };
            let sigma = match a.get("sigma") {
                Some(v) => a.float(v, "sigma")?,
                None => 1.0,
            };
            if sigma.is_nan() || sigma < 0.0 || !sigma.is_finite() || !mean.is_finite() {
                return Err(a.err(
                    "sigma",
                    format!("sigma ({sigma}) must be 0 or more, and mean ({mean}) finite"),
                ));
            }
            DoubleGen::Normal(
                rand_distr::Normal::new(mean, sigma).map_err(|e| a.err("sigma", e.to_string()))?,
            )
        }
        _ => {
            a.allow(&["distribution", "lambda"])?;
            let lambda = match a.get("lambda") {
                Some(v) => a.float(v, "lambda")?,
                None => 1.0,
            };
            if lambda.is_nan() || lambda <= 0.0 || !lambda.is_finite() {
                return Err(a.err("lambda", format!("lambda ({lambda}) must be above 0")));
            }
            DoubleGen::Exponential(
                rand_distr::Exp::new(lambda).map_err(|e| a.err("lambda", e.to_string()))?,
            )
        }
    }))
}

fn random_string(a: &Args) -> Result<Gen, GenError> {
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
        chars,
        ascii,
        pick,
    }))
}

fn choose(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["from", "weights"])?;
    let from = match a.need("from")? {
        V::Arr(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, v)| node(v, &format!("{}[{i}]", a.path("from"))))
            .collect::<Result<Vec<_>, _>>()?,
        V::Arr(_) => return Err(a.err("from", "`from` is empty")),
        other => {
            return Err(a.err(
                "from",
                format!("`from` is {}, not a list of values", other.kind()),
            ))
        }
    };
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
    let bad = |e: String| {
        err(
            a.path(arg),
            e,
            format!("{}; e.g. {}", time::DATE_FORM, example(a.name)),
        )
    };
    let Some(v) = a.get(arg) else {
        return Ok(DateArg::When(When::At(default)));
    };
    match v {
        V::Str(s) => return time::parse_when(s).map(DateArg::When).map_err(bad),
        V::Date(ms) => return Ok(DateArg::When(When::At(*ms))),
        _ => {}
    }
    match a.template(v, arg, ty::STRING | ty::DATE | ty::NUMBER, "a date")? {
        Node::Const(Bson::DateTime(d)) => Ok(DateArg::When(When::At(d.timestamp_millis()))),
        Node::Const(b) => match generators::to_i64(&b) {
            Some(ms) => Ok(DateArg::When(When::At(ms))),
            None => Err(bad(format!("`{arg}` is {}, not a date", kind(&b)))),
        },
        n => Ok(DateArg::Gen(Box::new(n))),
    }
}

fn show_ms(ms: i64) -> String {
    DateTime::from_millis(ms)
        .try_to_rfc3339_string()
        .unwrap_or_else(|_| format!("{ms} ms"))
}

fn random_date(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["min", "max"])?;
    // genny's defaults: 1970-01-01 to 2150-01-01.
    let max_default = time::days_from_civil(2150, 1, 1) * 86_400_000;
    let (min, max) = (date_arg(a, "min", 0)?, date_arg(a, "max", max_default)?);
    if let (DateArg::When(lo), DateArg::When(hi)) = (&min, &max) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let (l, h) = (lo.resolve(now), hi.resolve(now));
        if l > h {
            return Err(a.err(
                "min",
                format!("min ({}) is later than max ({})", show_ms(l), show_ms(h)),
            ));
        }
    }
    Ok(Gen::Date(min, max))
}

fn object_id(arg: &V, at: &str) -> Result<Node, GenError> {
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
        other => match node(other, at)? {
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

fn uuid(arg: &V, at: &str) -> Result<Node, GenError> {
    let a = Args::new("^UUID", arg, at)?;
    a.allow(&["hex"])?;
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
    let get = |arg: &str, default: i64| match a.get(arg) {
        Some(v) => a.int(v, arg),
        None => Ok(default),
    };
    let (start, step, multiplier) = (get("start", 0)?, get("step", 1)?, get("multiplier", 0)?);
    let scope = match a.choice("scope", &["user", "global"], "user")?.as_str() {
        "user" => IncScope::User(NEXT_INC.fetch_add(1, Ordering::Relaxed)),
        _ => {
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
    a.allow(&["of", "number"])?;
    let of = node(a.need("of")?, &a.path("of"))?;
    let number = a.length("number")?;
    if let (Node::Const(b), Num::Const(n)) = (&of, &number) {
        if *n <= 1000 {
            return Ok(Node::Const(Bson::Array(vec![b.clone(); *n as usize])));
        }
    }
    Ok(Node::Gen(Box::new(Gen::Array(of, number))))
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
    let values = node(a.need("andValues")?, &a.path("andValues"))?;
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
    let array = node(a.need("array")?, &a.path("array"))?;
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
            .map(|(i, v)| node(v, &format!("{}[{i}]", a.path("withArgs"))))
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
