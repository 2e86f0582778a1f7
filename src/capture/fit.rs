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

/// Most distinct values that make a `^Choose` rather than a range or random strings.
pub const MAX_CHOICES: usize = 20;

/// A TOML table `{ name = arg }`, one generator.
pub fn generator(name: &str, arg: Value) -> Value {
    let mut t = toml::Table::new();
    t.insert(name.to_string(), arg);
    Value::Table(t)
}

/// A generator that takes no arguments: `{ "^Null" = {} }`, `{ "^Key" = {} }`.
pub fn bare(name: &str) -> Value {
    generator(name, Value::Table(toml::Table::new()))
}

/// `number` values of `of`: `{ "^Array" = { of, number } }`.
pub fn array(of: Value, number: Value) -> Value {
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
pub fn field(field: &str, values: &[Bson], keep_values: bool, now_ms: i64) -> Value {
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
                        Value::Array(vec![Value::Integer(t as i64), Value::Integer(f as i64)]),
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

/// A time relative to the operation's: `now`, `-3600s`, `+90s`.
pub fn relative(offset_ms: i64) -> String {
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
            .map(|(_, n)| Value::Integer(*n as i64))
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
        .map(|(s, _)| s.chars().count() as i64)
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
                ("min", Value::Integer(lo as i64)),
                ("max", Value::Integer(hi as i64)),
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
pub fn query_date(offsets_ms: &[i64]) -> Value {
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
pub fn param(values: &[Bson], plain: bool) -> Value {
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
            Some(x) if x.fract() == 0.0 => Value::Integer(x as i64),
            Some(x) => Value::Float(x),
            None => Value::Integer(0),
        };
    }
    let refs: Vec<&Bson> = values.iter().collect();
    numbers(&refs)
}

/// Lengths of lists (`$in`, `$each`): the one length, or the range.
pub fn length(lens: &[usize]) -> Value {
    let lo = lens.iter().copied().min().unwrap_or(0) as i64;
    let hi = lens.iter().copied().max().unwrap_or(0) as i64;
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
pub fn skewed(hits: &HashMap<String, u64>) -> bool {
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
mod tests {
    use super::*;

    fn s(v: &str) -> Bson {
        Bson::String(v.into())
    }

    #[test]
    fn few_strings_become_placeholders_with_their_frequencies_unless_kept() {
        let vals: Vec<Bson> = ["open", "open", "open", "paid", "paid", "shipped"]
            .map(s)
            .to_vec();
        let g = field("order.status", &vals, false, 0);
        assert_eq!(
            g.to_string(),
            r#"{ "^Choose" = { from = ["status-1", "status-2", "status-3"], weights = [3, 2, 1] } }"#
        );
        let g = field("status", &vals, true, 0);
        assert!(
            g.to_string()
                .contains(r#"from = ["open", "paid", "shipped"]"#),
            "{g}"
        );
    }

    #[test]
    fn many_distinct_strings_become_random_strings_of_the_observed_lengths() {
        let vals: Vec<Bson> = (0..50)
            .map(|i| s(&"x".repeat(5 + i % 4)))
            .chain((0..50).map(|i| s(&format!("id{i:04}"))))
            .collect();
        let g = field("email", &vals, false, 0);
        assert_eq!(
            g.to_string(),
            r#"{ "^RandomString" = { length = { "^RandomInt" = { min = 5, max = 8 } } } }"#
        );
    }

    #[test]
    fn numbers_give_their_range_and_dates_a_window() {
        let g = field(
            "n",
            &[Bson::Int32(3), Bson::Int64(10), Bson::Int32(7)],
            false,
            0,
        );
        assert_eq!(g.to_string(), r#"{ "^RandomInt" = { min = 3, max = 10 } }"#);
        let g = field("p", &[Bson::Double(1.5), Bson::Double(2.0)], false, 0);
        assert_eq!(
            g.to_string(),
            r#"{ "^RandomDouble" = { min = 1.5, max = 2.0 } }"#
        );
        let now = 1_000_000_000;
        let d = |ms| Bson::DateTime(mongodb::bson::DateTime::from_millis(ms));
        let g = field("created", &[d(now - 3_600_000), d(now)], false, now);
        assert_eq!(
            g.to_string(),
            r#"{ "^RandomDate" = { min = "-3600s", max = "now" } }"#
        );
    }

    #[test]
    fn a_query_date_a_steady_offset_before_its_operation_is_now_minus_it() {
        assert_eq!(
            query_date(&[-3_600_000, -3_600_200, -3_599_900]).to_string(),
            r#"{ "^Now" = { minus = "3600s" } }"#
        );
        assert_eq!(
            query_date(&[-86_400_000, -1000]).to_string(),
            r#"{ "^RandomDate" = { min = "-86400s", max = "-1s" } }"#
        );
    }

    #[test]
    fn parameters_take_the_usual_value() {
        let v: Vec<Bson> = [20, 20, 20, 20, 50].map(Bson::Int32).to_vec();
        assert_eq!(param(&v, false).to_string(), "20");
        let v: Vec<Bson> = [1, 2, 3, 4, 5].map(Bson::Int32).to_vec();
        assert_eq!(
            param(&v, false).to_string(),
            r#"{ "^RandomInt" = { min = 1, max = 5 } }"#
        );
        assert_eq!(param(&v, true).to_string(), "1");
    }

    #[test]
    fn skew_is_a_tenth_of_the_keys_taking_half_the_hits() {
        let mut hits: HashMap<String, u64> = (0..100).map(|i| (i.to_string(), 1)).collect();
        assert!(!skewed(&hits));
        for i in 0..10 {
            hits.insert(i.to_string(), 20);
        }
        assert!(skewed(&hits));
    }
}
