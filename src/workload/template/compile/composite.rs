//! The generators that hold others or state: counters, arrays, concatenations, binary data,
//! repeats and cycles, data sets, conversions, time specs, walks, frequency maps, objects, joins and
//! format strings, each read from its arguments.

use super::*;

pub(super) fn inc(a: &Args) -> Result<Gen, GenError> {
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

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a number of elements bounded by the arguments' checks"
)]
pub(super) fn array(a: &Args) -> Result<Node, GenError> {
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

pub(super) fn concat(a: &Args) -> Result<Node, GenError> {
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
pub(super) fn bin_data(a: &Args, subtype: BinarySubtype) -> Result<Node, GenError> {
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

pub(super) fn repeat(a: &Args) -> Result<Gen, GenError> {
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
pub(super) fn cycle(a: &Args, len: usize) -> Result<Gen, GenError> {
    let of = a.node(a.need("fromGenerator")?, &a.path("fromGenerator"))?;
    Ok(Gen::Cycle(CycleGen {
        id: next_id(),
        len,
        of,
    }))
}

pub(super) fn choose_from_dataset(a: &Args) -> Result<Gen, GenError> {
    a.allow(&["path", "sequential", "startFromLine"])?;
    let path = a.string(a.need("path")?, "path")?;
    let lines = dataset::load(&path, a.o.base_dir.as_deref()).map_err(|e| a.err("path", e))?;
    let sequential = a.flag("sequential")?;
    let start = a.int_or("startFromLine", 0)?;
    if start < 0 || start.unsigned_abs() >= lines.len() as u64 {
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

pub(super) fn convert_to(a: &Args, to: To) -> Result<Node, GenError> {
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
pub(super) fn time_spec(a: &Args) -> Result<Gen, GenError> {
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

pub(super) fn two_d_walk(a: &Args) -> Result<Gen, GenError> {
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
pub(super) fn frequency_map(a: &Args) -> Result<FreqMap, GenError> {
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

pub(super) fn object(a: &Args) -> Result<Gen, GenError> {
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

pub(super) fn join(a: &Args) -> Result<Node, GenError> {
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

pub(super) fn format_string(a: &Args) -> Result<Node, GenError> {
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
