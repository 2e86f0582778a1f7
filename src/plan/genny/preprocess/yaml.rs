//! Reading a file's YAML as genny reads it (PyYAML's safe loader, through OmegaConf for the
//! workload itself), merging one document onto another as OmegaConf does, and writing a value in
//! one short line for an error.
//!
//! serde_yaml reads anchors and aliases; the rest of what PyYAML does differently is done here:
//! `<<` merge keys in PyYAML's order (the merged keys first, the mapping's own keys winning, the
//! first of a list of merged mappings winning), and numbers written with `_` (`1_000_000`, an
//! integer for PyYAML, a string for YAML 1.2). A plain `1e6` is a number for serde_yaml and for
//! OmegaConf (which genny loads the workload with) alike.

use serde_yaml::{Mapping, Value};

/// The YAML document in `text`, anchors expanded and merge keys merged. An empty document is
/// `Null`. The error is one line with the line and column.
pub(super) fn parse(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    let value: Value = serde_yaml::from_str(text).map_err(|e| format!("YAML syntax: {e}"))?;
    resolve(value)
}

/// PyYAML's merge keys and `_` numbers, throughout.
fn resolve(value: Value) -> Result<Value, String> {
    match value {
        Value::Mapping(mapping) => {
            let mut merged: Vec<(Value, Value)> = Vec::new();
            let mut own: Vec<(Value, Value)> = Vec::with_capacity(mapping.len());
            for (key, value) in mapping {
                let value = resolve(value)?;
                if key.as_str() == Some("<<") {
                    match value {
                        Value::Mapping(source) => merged.extend(source),
                        Value::Sequence(sources) => {
                            let mut each = Vec::with_capacity(sources.len());
                            for source in sources {
                                match source {
                                    Value::Mapping(source) => each.push(source),
                                    other => {
                                        return Err(format!(
                                            "a `<<` merge list holds {}, not a mapping: merge \
                                             mappings only (`<<: [*a, *b]`)",
                                            brief(&other)
                                        ))
                                    }
                                }
                            }
                            // PyYAML merges a list last to first, so that the first one wins.
                            for source in each.into_iter().rev() {
                                merged.extend(source);
                            }
                        }
                        other => {
                            return Err(format!(
                                "`<<` merges a mapping or a list of mappings, not {}",
                                brief(&other)
                            ))
                        }
                    }
                } else {
                    own.push((resolve(key)?, value));
                }
            }
            // As PyYAML builds the dict: merged pairs first, then the mapping's own; a later pair
            // replaces the value and keeps the key where it first came.
            let mut out = Mapping::with_capacity(merged.len() + own.len());
            for (key, value) in merged.into_iter().chain(own) {
                out.insert(key, value);
            }
            Ok(Value::Mapping(out))
        }
        Value::Sequence(items) => items
            .into_iter()
            .map(resolve)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Sequence),
        Value::String(text) => Ok(underscored_number(&text).unwrap_or(Value::String(text))),
        Value::Tagged(tagged) => Err(format!(
            "the tag `{}` is not YAML genny reads (PyYAML's safe loader has no such tag): \
             remove it",
            tagged.tag
        )),
        scalar @ (Value::Null | Value::Bool(_) | Value::Number(_)) => Ok(scalar),
    }
}

/// A number written with `_` between its digits, as PyYAML (YAML 1.1) reads it: `1_000_000`,
/// `-2_500.5`. Anything else is not one.
fn underscored_number(text: &str) -> Option<Value> {
    if !text.contains('_') {
        return None;
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let first = unsigned.chars().next()?;
    if !first.is_ascii_digit() {
        return None;
    }
    let digits: String = text.chars().filter(|c| *c != '_').collect();
    let integer = unsigned.chars().all(|c| c.is_ascii_digit() || c == '_');
    if integer {
        // A leading 0 is octal for PyYAML: leave those alone rather than guess.
        if first == '0' && unsigned.len() > 1 {
            return None;
        }
        return digits.parse::<i64>().ok().map(Value::from);
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.')?;
    let digits_or_underscores = |s: &str| s.chars().all(|c| c.is_ascii_digit() || c == '_');
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.chars().all(|c| c.is_ascii_digit())
    });
    if digits_or_underscores(whole) && digits_or_underscores(fraction) && exponent_ok {
        return digits.parse::<f64>().ok().map(Value::from);
    }
    None
}

/// `source` merged onto `target` as OmegaConf merges: mappings key by key, recursively (a new
/// key goes last), anything else replaced whole (lists included).
pub(super) fn deep_merge(target: &mut Value, source: Value) {
    match (target, source) {
        (Value::Mapping(target), Value::Mapping(source)) => {
            for (key, value) in source {
                match target.get_mut(&key) {
                    Some(existing @ Value::Mapping(_)) if value.is_mapping() => {
                        deep_merge(existing, value)
                    }
                    _ => {
                        target.insert(key, value);
                    }
                }
            }
        }
        (target, source) => *target = source,
    }
}

/// `value` in one line of flow YAML, cut at about 80 characters: for a message.
pub(super) fn brief(value: &Value) -> String {
    let mut out = String::new();
    flow(value, &mut out);
    if out.chars().count() > 80 {
        let cut: String = out.chars().take(77).collect();
        format!("{cut}...")
    } else {
        out
    }
}

fn flow(value: &Value, out: &mut String) {
    if out.len() > 200 {
        return;
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => {
            let plain = !s.is_empty()
                && s.chars().all(|c| {
                    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '^' | '$' | ' ')
                })
                && !s.starts_with(' ')
                && !s.ends_with(' ')
                && s.parse::<f64>().is_err()
                && !matches!(s.as_str(), "true" | "false" | "null" | "~");
            if plain {
                out.push_str(s);
            } else {
                out.push_str(&format!("{s:?}"));
            }
        }
        Value::Sequence(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow(item, out);
            }
            out.push(']');
        }
        Value::Mapping(mapping) => {
            out.push('{');
            for (i, (key, value)) in mapping.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow(key, out);
                out.push_str(": ");
                flow(value, out);
            }
            out.push('}');
        }
        Value::Tagged(tagged) => {
            out.push_str(&tagged.tag.to_string());
            out.push(' ');
            flow(&tagged.value, out);
        }
    }
}
