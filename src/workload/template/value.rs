//! The source tree a template compiles from, the same whether it was written as TOML or as a
//! string of Extended JSON, and the Extended JSON type wrappers (`$date`, `$oid`, ...) that
//! become BSON values.

use mongodb::bson::Bson;

use super::time;
use super::GenError;

/// One source value, document keys in the order written.
#[derive(Debug, Clone)]
pub(super) enum V {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A TOML datetime, milliseconds since the epoch.
    Date(i64),
    Arr(Vec<V>),
    Obj(Vec<(String, V)>),
}

/// The keys that make a table an Extended JSON value rather than a document (those the bson
/// crate reads).
pub(super) const WRAPPERS: &[&str] = &[
    "$oid",
    "$symbol",
    "$regularExpression",
    "$numberInt",
    "$numberLong",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$code",
    "$timestamp",
    "$date",
    "$minKey",
    "$maxKey",
    "$dbPointer",
    "$undefined",
];

impl V {
    pub(super) fn from_toml(v: &toml::Value, key: &str) -> Result<V, GenError> {
        Ok(match v {
            toml::Value::String(s) => V::Str(s.clone()),
            toml::Value::Integer(i) => V::Int(*i),
            toml::Value::Float(f) => V::Float(*f),
            toml::Value::Boolean(b) => V::Bool(*b),
            toml::Value::Datetime(d) => match time::toml_datetime_ms(d) {
                Some(ms) => V::Date(ms),
                None => {
                    return Err(GenError {
                        key: key.to_string(),
                        problem: format!("`{d}` is a time of day without a date"),
                        expected: "a TOML date-time (2024-01-31T12:00:00Z) or date (2024-01-31)"
                            .into(),
                    })
                }
            },
            toml::Value::Array(a) => V::Arr(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| V::from_toml(v, &format!("{key}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            toml::Value::Table(t) => V::Obj(
                t.iter()
                    .map(|(k, v)| Ok((k.clone(), V::from_toml(v, &format!("{key}.{k}"))?)))
                    .collect::<Result<_, GenError>>()?,
            ),
        })
    }

    pub(super) fn from_json(v: serde_json::Value) -> V {
        match v {
            serde_json::Value::Null => V::Null,
            serde_json::Value::Bool(b) => V::Bool(b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => V::Int(i),
                None => V::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => V::Str(s),
            serde_json::Value::Array(a) => V::Arr(a.into_iter().map(V::from_json).collect()),
            serde_json::Value::Object(m) => {
                V::Obj(m.into_iter().map(|(k, v)| (k, V::from_json(v))).collect())
            }
        }
    }

    pub(super) fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Value};
        match self {
            V::Null => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Int(i) => json!(i),
            V::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => Value::Number(n),
                None => json!({ "$numberDouble": float_word(*f) }),
            },
            V::Str(s) => Value::String(s.clone()),
            V::Date(ms) => json!({ "$date": { "$numberLong": ms.to_string() } }),
            V::Arr(a) => Value::Array(a.iter().map(V::to_json).collect()),
            V::Obj(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }

    /// Does this table's key set make it an Extended JSON value?
    pub(super) fn is_wrapper(entries: &[(String, V)]) -> bool {
        entries.iter().any(|(k, _)| WRAPPERS.contains(&k.as_str()))
    }

    /// The first generator (`^` key) anywhere inside, with its path.
    pub(super) fn find_generator(&self, path: &str) -> Option<String> {
        match self {
            V::Arr(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| v.find_generator(&format!("{path}[{i}]"))),
            V::Obj(o) => o.iter().find_map(|(k, v)| {
                let at = format!("{path}.{k}");
                if k.starts_with('^') {
                    Some(at)
                } else {
                    v.find_generator(&at)
                }
            }),
            _ => None,
        }
    }

    pub(super) fn kind(&self) -> &'static str {
        match self {
            V::Null => "null",
            V::Bool(_) => "a boolean",
            V::Int(_) => "an integer",
            V::Float(_) => "a number with a fraction",
            V::Str(_) => "a string",
            V::Date(_) => "a date",
            V::Arr(_) => "an array",
            V::Obj(_) => "a table",
        }
    }
}

fn float_word(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// An integer as relaxed Extended JSON reads it: 32 bits when it fits, else 64.
pub(super) fn int_bson(i: i64) -> Bson {
    match i32::try_from(i) {
        Ok(small) => Bson::Int32(small),
        Err(_) => Bson::Int64(i),
    }
}

/// An Extended JSON value (a table with a `$` type key) as BSON, by the bson crate's reader.
pub(super) fn wrapper_bson(entries: &[(String, V)], key: &str) -> Result<Bson, GenError> {
    let wrapper = entries
        .iter()
        .find(|(k, _)| WRAPPERS.contains(&k.as_str()))
        .map_or("", |(k, _)| k.as_str());
    let whole = V::Obj(entries.to_vec());
    if let Some(at) = whole.find_generator(key) {
        return Err(GenError {
            key: at,
            problem: format!("a generator inside the Extended JSON value `{wrapper}`"),
            expected: "a literal inside `$date`, `$oid`, ...; a generator in place of the whole \
                 value instead (^Now or ^RandomDate for a date, ^ObjectId for an ObjectId)"
                .into(),
        });
    }
    Bson::try_from(whole.to_json()).map_err(|e| GenError {
        key: key.to_string(),
        problem: format!("invalid Extended JSON `{wrapper}` value: {e}"),
        expected: wrapper_example(wrapper).into(),
    })
}

fn wrapper_example(wrapper: &str) -> &'static str {
    match wrapper {
        "$oid" => r#"{ "$oid": "5f1e6a3b9d1e8a2b3c4d5e6f" } (24 hex digits)"#,
        "$date" => {
            r#"{ "$date": "2024-01-31T12:00:00Z" } or { "$date": { "$numberLong": "1706702400000" } }"#
        }
        "$numberInt" => r#"{ "$numberInt": "42" }"#,
        "$numberLong" => r#"{ "$numberLong": "42" }"#,
        "$numberDouble" => r#"{ "$numberDouble": "1.5" } (or "NaN", "Infinity", "-Infinity")"#,
        "$numberDecimal" => r#"{ "$numberDecimal": "9.99" }"#,
        "$binary" => r#"{ "$binary": { "base64": "AQID", "subType": "00" } }"#,
        "$uuid" => r#"{ "$uuid": "3b241101-e2bb-4255-8caf-4136c566a962" }"#,
        "$regularExpression" => r#"{ "$regularExpression": { "pattern": "^ab", "options": "i" } }"#,
        "$timestamp" => r#"{ "$timestamp": { "t": 1706702400, "i": 1 } }"#,
        "$minKey" => r#"{ "$minKey": 1 }"#,
        "$maxKey" => r#"{ "$maxKey": 1 }"#,
        "$symbol" => r#"{ "$symbol": "name" }"#,
        "$code" => r#"{ "$code": "function() {}" } or with "$scope": { ... }"#,
        _ => "a MongoDB Extended JSON v2 value, canonical or relaxed",
    }
}
