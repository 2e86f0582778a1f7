//! The generators of one value each: integers, doubles, strings, choices, dates and times,
//! ObjectIds and UUIDs, each read from its arguments.

use super::*;

pub(super) fn random_int(a: &Args) -> Result<Gen, GenError> {
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

pub(super) fn random_double(a: &Args) -> Result<Gen, GenError> {
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

pub(super) fn random_string(a: &Args, fast: bool) -> Result<Gen, GenError> {
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

pub(super) fn choose(a: &Args) -> Result<Gen, GenError> {
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

pub(super) fn duration(a: &Args, arg: &str) -> Result<i64, GenError> {
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

pub(super) fn now(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["minus", "plus"])?;
    let (minus, plus) = (duration(a, "minus")?, duration(a, "plus")?);
    Ok(Gen::Now(plus.saturating_sub(minus)))
}

pub(super) fn date_arg(a: &Args, arg: &str, default: i64) -> Result<DateArg, GenError> {
    let Some(v) = a.get(arg) else {
        return Ok(DateArg::When(When::At(default)));
    };
    date_value(v, &a.path(arg), a.name, a.o)
}

/// A date written (an ISO string, a relative time, a TOML datetime, `$date`, milliseconds since
/// the epoch) or generated (a generator of any of these), at `at`, an argument of `name`.
pub(super) fn date_value(
    v: &V,
    at: &str,
    name: &str,
    o: &CompileOptions,
) -> Result<DateArg, GenError> {
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
pub(super) fn date(arg: &V, at: &str, o: &CompileOptions) -> Result<Node, GenError> {
    Ok(match date_value(arg, at, "^Date", o)? {
        DateArg::When(When::At(ms)) => Node::Const(Bson::DateTime(DateTime::from_millis(ms))),
        d => Node::Gen(Box::new(Gen::DateOf(d))),
    })
}

pub(super) fn inc_date(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["start", "step", "multiplier"])?;
    Ok(Gen::IncDate(IncDateGen {
        id: next_id(),
        start: date_arg(a, "start", 0)?,
        step: a.int_or("step", 1)?,
        multiplier: a.int_or("multiplier", 0)?,
    }))
}

pub(super) fn show_ms(ms: i64) -> String {
    DateTime::from_millis(ms)
        .try_to_rfc3339_string()
        .unwrap_or_else(|_| format!("{ms} ms"))
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "milliseconds since the epoch now fit an i64"
)]
pub(super) fn random_date(a: &Args) -> Result<Gen, GenError> {
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

pub(super) fn object_id(arg: &V, at: &str, o: &CompileOptions) -> Result<Node, GenError> {
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

pub(super) fn uuid(arg: &V, at: &str, o: &CompileOptions) -> Result<Node, GenError> {
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
