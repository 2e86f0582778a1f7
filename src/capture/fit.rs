//! Generators fitted to observed values, as TOML values of the profile (`^Choose`, `^RandomInt`,
//! `^RandomDouble`, `^RandomString`, `^RandomDate`, `^Now`, `^Key`, ...).
//!
//! A field is fitted once per collection from every value seen for it (in filters, updates and
//! sampled documents), and the same generator serves the collection's document template and the
//! operations, so that a query still finds the documents its values select. By default no
//! observed value is written: strings seen as few distinct values become placeholders with the
//! observed frequencies (`status-1`, `status-2`, ...), other strings random strings of the
//! observed lengths, numbers and dates ranges; `keep_values` writes the values seen instead.

use std::collections::HashMap;

use mongodb::bson::Bson;
use toml::Value;

use super::as_f64;

mod ranked;
pub(crate) use ranked::*;

mod joint;
pub(crate) use joint::dated_by_rank;

/// Most distinct values that make a `^Choose` rather than a range or random strings.
pub(crate) const MAX_CHOICES: usize = 20;

/// A TOML table `{ name = arg }`, one generator.
pub(crate) fn generator(name: &str, arg: Value) -> Value {
    let mut t = toml::Table::new();
    t.insert(name.to_string(), arg);
    Value::Table(t)
}

/// A generator that takes no arguments: `{ "^Null" = {} }`, `{ "^Key" = {} }`.
pub(crate) fn bare(name: &str) -> Value {
    generator(name, Value::Table(toml::Table::new()))
}

/// `number` values of `of`: `{ "^Array" = { of, number } }`.
pub(crate) fn array(of: Value, number: Value) -> Value {
    generator("^Array", table(&[("of", of), ("number", number)]))
}

fn table(pairs: &[(&str, Value)]) -> Value {
    let mut t = toml::Table::new();
    for (k, v) in pairs {
        t.insert((*k).to_string(), v.clone());
    }
    Value::Table(t)
}

/// A generator for the values of `field` (its last path part names placeholders), relative
/// dates from `now_ms`.
pub(crate) fn field(field: &str, values: &[Bson], keep_values: bool, now_ms: i64) -> Value {
    let leaf = field.rsplit('.').next().unwrap_or(field);
    let scalars: Vec<&Bson> = values
        .iter()
        .filter(|v| !matches!(v, Bson::Array(_) | Bson::Document(_)))
        .collect();
    if scalars.is_empty() {
        return bare("^Null");
    }
    // The most common kind of value decides.
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for v in &scalars {
        *kinds.entry(super::shape::type_name(v)).or_default() += 1;
    }
    let kind = kinds
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(k, _)| k.clone())
        .unwrap_or_default();
    let of_kind: Vec<&Bson> = scalars
        .into_iter()
        .filter(|v| super::shape::type_name(v) == kind)
        .collect();
    match kind.as_str() {
        "string" => strings(leaf, &of_kind, keep_values),
        "number" => numbers(&of_kind),
        "bool" => {
            let t = of_kind
                .iter()
                .filter(|v| matches!(v, Bson::Boolean(true)))
                .count();
            let f = of_kind.len() - t;
            generator(
                "^Choose",
                table(&[
                    (
                        "from",
                        Value::Array(vec![Value::Boolean(true), Value::Boolean(false)]),
                    ),
                    (
                        "weights",
                        Value::Array(vec![
                            Value::Integer(crate::num::signed(t)),
                            Value::Integer(crate::num::signed(f)),
                        ]),
                    ),
                ]),
            )
        }
        "date" => {
            let ms: Vec<i64> = of_kind
                .iter()
                .filter_map(|v| match v {
                    Bson::DateTime(d) => Some(d.timestamp_millis()),
                    _ => None,
                })
                .collect();
            let (lo, hi) = (
                ms.iter().min().copied().unwrap_or(now_ms),
                ms.iter().max().copied().unwrap_or(now_ms),
            );
            generator(
                "^RandomDate",
                table(&[
                    ("min", Value::String(relative(lo - now_ms))),
                    ("max", Value::String(relative(hi - now_ms))),
                ]),
            )
        }
        "objectId" => bare("^ObjectId"),
        _ => bare("^Null"),
    }
}

/// What is known of a field that operations select documents by (equality, `$in`), beyond the
/// values seen: how many documents hold it, and what the source's reads by it returned.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selecting<'a> {
    /// The collection's documents in the source (its count), when known.
    pub(crate) source_docs: Option<u64>,
    /// The documents the replay preloads.
    pub(crate) replay_docs: u64,
    /// Documents the source returned per call to a find selecting by this field alone, by
    /// equality (the profiler's `nreturned`), when such finds were seen and not cut by a limit.
    pub(crate) returned_per_value: Option<f64>,
    /// The field's values in the sampled documents (not the operations').
    pub(crate) sampled: &'a [Bson],
}

/// Most values of a selecting field written out one by one (a `^Choose` with their observed
/// frequencies) when every value was seen; more become numbered placeholders drawn uniformly.
pub(crate) const MAX_LISTED: usize = 1000;

/// How many distinct values a field has in the source, estimated: from the reads by it
/// (documents / returned per value) when the source said what they returned, else by Chao1's
/// estimator on the sampled documents (the values seen once and twice say how many were not
/// seen), else the values seen; never fewer than seen nor more than the documents.
pub(crate) fn cardinality(distinct_seen: usize, sel: &Selecting) -> u64 {
    let seen = distinct_seen as u64;
    // Without the source's count, the replay's preload is the collection the values divide.
    let docs = sel.source_docs.unwrap_or(sel.replay_docs);
    let estimate = match (sel.returned_per_value, docs) {
        (Some(r), n) if r > 0.0 && n > 0 => crate::num::whole(crate::num::real(n) / r),
        _ if !sel.sampled.is_empty() => {
            let mut counts: HashMap<String, u64> = HashMap::new();
            for v in sel.sampled {
                *counts.entry(v.to_string()).or_default() += 1;
            }
            let d = crate::num::real_len(counts.len());
            let f1 = crate::num::real_len(counts.values().filter(|&&c| c == 1).count());
            let f2 = crate::num::real_len(counts.values().filter(|&&c| c == 2).count());
            let chao1 = if f2 > 0.0 {
                d + f1 * f1 / (2.0 * f2)
            } else {
                d + f1 * (f1 - 1.0) / 2.0
            };
            crate::num::whole(chao1)
        }
        _ => seen,
    };
    let most = if docs > 0 { docs } else { u64::MAX }.max(seen);
    estimate.max(seen).min(most).max(1)
}

/// The generator of a field operations select by, so that the replay's documents and its
/// queries draw from one set of values of the source's size: the values seen with their
/// frequencies when they are all the field has (placeholders `author-1`, `author-2`, ... or,
/// with `keep`, the values), else `author-1` .. `author-K` drawn uniformly for the estimated
/// `K` distinct values (scaled to the replay's documents, so that a value selects as many
/// documents per call as it did). None for a field the plain fit serves as well (few values
/// that repeat, numbers, dates, booleans).
pub(crate) fn selecting(
    field: &str,
    values: &[Bson],
    sel: &Selecting,
    keep: bool,
) -> Option<Value> {
    let leaf = field.rsplit('.').next().unwrap_or(field);
    let mut counts: Vec<(String, usize, &Bson)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for v in values {
        let k = match v {
            Bson::String(s) => s.clone(),
            Bson::ObjectId(o) => o.to_hex(),
            _ => continue,
        };
        match index.get(&k) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(k.clone(), counts.len());
                counts.push((k, 1, v));
            }
        }
    }
    // Strings and ObjectIds only, and only when most values are of those kinds.
    if counts.is_empty() || counts.iter().map(|c| c.1).sum::<usize>() * 2 < values.len() {
        return None;
    }
    let in_source = cardinality(counts.len(), sel);
    let k = match sel.source_docs {
        Some(n) if n > sel.replay_docs && n > 0 => crate::num::whole(
            crate::num::real(in_source) * crate::num::real(sel.replay_docs) / crate::num::real(n),
        )
        .max(1),
        _ => in_source,
    };
    // Listed only when the values seen are all the replay draws: a capped preload takes fewer.
    let all_seen = counts.len() as u64 >= in_source && k == in_source;
    let repeats = counts.len() * 2 <= values.len().max(2);
    if counts.len() <= MAX_CHOICES && repeats && all_seen {
        return None;
    }
    let placeholder = |i: usize| format!("{leaf}-{}", i + 1);
    if all_seen && counts.len() <= MAX_LISTED {
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let from = counts
            .iter()
            .enumerate()
            .map(|(i, (s, _, v))| match (keep, v) {
                (true, Bson::ObjectId(o)) => generator("$oid", Value::String(o.to_hex())),
                (true, _) => Value::String(s.clone()),
                (false, _) => Value::String(placeholder(i)),
            })
            .collect();
        let weights = counts
            .iter()
            .map(|(_, n, _)| Value::Integer(crate::num::signed(*n)))
            .collect();
        return Some(generator(
            "^Choose",
            table(&[
                ("from", Value::Array(from)),
                ("weights", Value::Array(weights)),
            ]),
        ));
    }
    Some(generator(
        "^FormatString",
        table(&[
            ("format", Value::String(format!("{leaf}-%d"))),
            (
                "withArgs",
                Value::Array(vec![generator(
                    "^RandomInt",
                    table(&[
                        ("min", Value::Integer(1)),
                        ("max", Value::Integer(crate::num::signed(k))),
                    ]),
                )]),
            ),
        ]),
    ))
}

/// A reference to another collection's `_id`s: the replay preloads that collection with `_id`s
/// `0 .. preload - 1`, so a value drawn from them is a document of it.
pub(crate) fn reference(preload: u64) -> Value {
    generator(
        "^RandomInt",
        table(&[
            ("min", Value::Integer(0)),
            (
                "max",
                Value::Integer(crate::num::signed(preload.max(1)) - 1),
            ),
        ]),
    )
}

/// Whether `values` (a field's, distinct) are `_id`s of a collection whose known `_id`s are
/// `ids` out of `count`: enough of them are found there, as many as the share of its `_id`s
/// known would find if all were (half of that at least); one ObjectId found suffices (they are
/// unique), other kinds need three.
pub(crate) fn references(
    values: &[&Bson],
    ids: &std::collections::HashSet<String>,
    count: u64,
) -> bool {
    if values.is_empty() || ids.is_empty() {
        return false;
    }
    let found = values
        .iter()
        .filter(|v| ids.contains(&v.to_string()))
        .count();
    let oids = values.iter().all(|v| matches!(v, Bson::ObjectId(_)));
    let known = (crate::num::real_len(ids.len()) / crate::num::real(count.max(1))).min(1.0);
    let expected = crate::num::real_len(values.len()) * known;
    found >= if oids { 1 } else { 3 } && crate::num::real_len(found) >= 0.5 * expected
}

/// Dates of documents made up from the bounds queries compared them with (no document was
/// sampled): from twice the earliest bound's age to now, so that a bound selects some of them
/// whichever side it keeps. None when the values are not all dates.
pub(crate) fn synthetic_dates(values: &[Bson], now_ms: i64) -> Option<Value> {
    let ms: Vec<i64> = values
        .iter()
        .map(|v| match v {
            Bson::DateTime(d) => Some(d.timestamp_millis()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let lo = ms.iter().min()? - now_ms;
    let hi = (ms.iter().max()? - now_ms).max(0);
    Some(generator(
        "^RandomDate",
        table(&[
            ("min", Value::String(relative(2 * lo.min(-1000)))),
            ("max", Value::String(relative(hi))),
        ]),
    ))
}

/// A time relative to the operation's: `now`, `-3600s`, `+90s`.
pub(crate) fn relative(offset_ms: i64) -> String {
    let s = offset_ms / 1000;
    match s {
        0 => "now".into(),
        s if s < 0 => format!("-{}s", -s),
        s => format!("+{s}s"),
    }
}

fn strings(leaf: &str, values: &[&Bson], keep_values: bool) -> Value {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for v in values {
        let Bson::String(s) = v else { continue };
        match index.get(s.as_str()) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(s.as_str(), counts.len());
                counts.push((s.clone(), 1));
            }
        }
    }
    // Few distinct values, or values that repeat: a choice with the observed frequencies.
    if counts.len() <= MAX_CHOICES && counts.len() * 2 <= values.len().max(2) {
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let from = counts
            .iter()
            .enumerate()
            .map(|(i, (s, _))| {
                Value::String(if keep_values {
                    s.clone()
                } else {
                    format!("{leaf}-{}", i + 1)
                })
            })
            .collect();
        let weights = counts
            .iter()
            .map(|(_, n)| Value::Integer(crate::num::signed(*n)))
            .collect();
        return generator(
            "^Choose",
            table(&[
                ("from", Value::Array(from)),
                ("weights", Value::Array(weights)),
            ]),
        );
    }
    let lens: Vec<i64> = counts
        .iter()
        .map(|(s, _)| crate::num::signed(s.chars().count()))
        .collect();
    let (lo, hi) = (
        lens.iter().min().copied().unwrap_or(0),
        lens.iter().max().copied().unwrap_or(0),
    );
    let length = if lo == hi {
        Value::Integer(lo)
    } else {
        generator(
            "^RandomInt",
            table(&[("min", Value::Integer(lo)), ("max", Value::Integer(hi))]),
        )
    };
    generator("^RandomString", table(&[("length", length)]))
}

fn numbers(values: &[&Bson]) -> Value {
    let xs: Vec<f64> = values.iter().filter_map(|v| as_f64(v)).collect();
    let integral = values.iter().all(|v| {
        matches!(v, Bson::Int32(_) | Bson::Int64(_)) || as_f64(v).is_some_and(|x| x.fract() == 0.0)
    });
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if integral {
        generator(
            "^RandomInt",
            table(&[
                ("min", Value::Integer(crate::num::whole_signed(lo.trunc()))),
                ("max", Value::Integer(crate::num::whole_signed(hi.trunc()))),
            ]),
        )
    } else {
        generator(
            "^RandomDouble",
            table(&[("min", Value::Float(lo)), ("max", Value::Float(hi))]),
        )
    }
}

/// A date in a query, from its offsets to the operations' own times: `^Now` shifted by the
/// typical offset when they hardly vary, else `^RandomDate` over their range.
pub(crate) fn query_date(offsets_ms: &[i64]) -> Value {
    let mut o = offsets_ms.to_vec();
    o.sort_unstable();
    let (lo, hi) = (o[0], o[o.len() - 1]);
    let median = o[o.len() / 2];
    if hi - lo <= 1000.max(median.abs() / 10) {
        let s = median / 1000;
        let arg = match s {
            0 => toml::Table::new(),
            s if s < 0 => [("minus".to_string(), Value::String(format!("{}s", -s)))]
                .into_iter()
                .collect(),
            s => [("plus".to_string(), Value::String(format!("{s}s")))]
                .into_iter()
                .collect(),
        };
        return generator("^Now", Value::Table(arg));
    }
    generator(
        "^RandomDate",
        table(&[
            ("min", Value::String(relative(lo))),
            ("max", Value::String(relative(hi))),
        ]),
    )
}

/// A parameter (`limit`, `skip`, an `$inc` amount): the value seen in most operations when it
/// is most of them, else the range.
pub(crate) fn param(values: &[Bson], plain: bool) -> Value {
    let mut counts: Vec<(String, usize, &Bson)> = Vec::new();
    for v in values {
        let k = v.to_string();
        match counts.iter_mut().find(|c| c.0 == k) {
            Some(c) => c.1 += 1,
            None => counts.push((k, 1, v)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let Some((_, n, top)) = counts.first() else {
        return Value::Integer(0);
    };
    if plain || *n * 5 >= values.len() * 4 {
        return match as_f64(top) {
            Some(x) if x.fract() == 0.0 => Value::Integer(crate::num::whole_signed(x)),
            Some(x) => Value::Float(x),
            None => Value::Integer(0),
        };
    }
    let refs: Vec<&Bson> = values.iter().collect();
    numbers(&refs)
}

/// Lengths of lists (`$in`, `$each`): the one length, or the range.
pub(crate) fn length(lens: &[usize]) -> Value {
    let lo = crate::num::signed(lens.iter().copied().min().unwrap_or(0));
    let hi = crate::num::signed(lens.iter().copied().max().unwrap_or(0));
    if lo == hi {
        Value::Integer(lo)
    } else {
        generator(
            "^RandomInt",
            table(&[("min", Value::Integer(lo)), ("max", Value::Integer(hi))]),
        )
    }
}

/// Whether a few keys take most hits: the most hit tenth of the keys seen take half the hits
/// or more (with at least 10 keys seen).
pub(crate) fn skewed(hits: &HashMap<String, u64>) -> bool {
    if hits.len() < 10 {
        return false;
    }
    let mut n: Vec<u64> = hits.values().copied().collect();
    n.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = n.iter().take(n.len().div_ceil(10)).sum();
    let all: u64 = n.iter().sum();
    top * 2 >= all
}

#[cfg(test)]
mod tests;
