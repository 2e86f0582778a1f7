//! genny's YAML read as values: numbers, durations, rates, write concerns and read preferences,
//! and any node as TOML; and the small builders of a step's table.

use super::*;

/// A step table: its row's name, collection and operation.
pub(super) fn step(row: &str, collection: &str, verb: &str, args: Toml) -> toml::Table {
    let mut s = toml::Table::new();
    s.insert("name".into(), Toml::String(row.replace([':', '@'], "_")));
    s.insert("collection".into(), Toml::String(collection.to_string()));
    s.insert(verb.into(), args);
    s
}

/// The name genny gives a metric of actor `actor` in phase `p`: an actor's own
/// (`ActorContext::operation`) is `Actor.Name` in every phase; a phase's
/// (`PhaseContext::operation`) is `Actor.MetricsName` when the phase sets one, else
/// `Actor.Default.p`.
pub(super) fn genny_metric(actor: &str, scope: Scope<'_>, mn: Option<&str>, p: usize) -> String {
    match (scope, mn) {
        (Scope::Actor(name), _) => format!("{actor}.{name}"),
        (Scope::Phase(_), Some(mn)) => format!("{actor}.{mn}"),
        (Scope::Phase(default), None) => format!("{actor}.{default}.{p}"),
    }
}

/// Whose a metric is in genny: the actor's (`ActorContext::operation(name)`) or the phase's
/// (`PhaseContext::operation(default)`).
#[derive(Clone, Copy)]
pub(super) enum Scope<'s> {
    Actor(&'s str),
    Phase(&'s str),
}

/// Each step that has genny's metric name takes it as its row (less the actor's name, the
/// group's), then the repeats are told apart: `.2`, `.3`, ...
pub(super) fn rows_from_metrics(steps: &mut [toml::Table], actor: &str) {
    for s in steps.iter_mut() {
        if let Some(Toml::String(m)) = s.get("metric") {
            let row = m
                .strip_prefix(actor)
                .and_then(|r| r.strip_prefix('.'))
                .unwrap_or(m)
                .replace([':', '@'], "_");
            s.insert("name".into(), Toml::String(row));
        }
    }
    dedupe_names(steps);
}

/// The name of `known` nearest `typed` (a letter's case, one left out), when one is near.
pub(super) fn did_you_mean<'k>(typed: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| {
            let score = strsim::jaro_winkler(&typed.to_lowercase(), &k.to_lowercase());
            (score, *k)
        })
        .filter(|(s, k)| *s >= 0.9 && *k != typed)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// Steps of one group need distinct rows: a repeated name gets `.2`, `.3`, ...
pub(super) fn dedupe_names(steps: &mut [toml::Table]) {
    let mut seen = std::collections::HashMap::<String, u32>::new();
    for s in steps {
        let Some(Toml::String(n)) = s.get("name").cloned() else {
            continue;
        };
        let k = seen.entry(n.clone()).or_insert(0);
        *k += 1;
        if *k > 1 {
            s.insert("name".into(), Toml::String(format!("{n}.{k}")));
        }
    }
}

/// genny's `getPlural`: `Operation` (one) or `Operations` (a list).
pub(super) fn plural<'y>(node: &'y Yaml, one: &str, many: &str) -> Option<Vec<&'y Yaml>> {
    if let Some(o) = node.get(one) {
        return Some(vec![o]);
    }
    node.get(many)?.as_sequence().map(|s| s.iter().collect())
}

pub(super) fn ops_len(node: &Yaml) -> usize {
    plural(node, "Operation", "Operations").map_or(0, |v| v.len())
}

/// A number, as YAML or as text (`1e4`).
pub(crate) fn number(v: &Yaml) -> Option<f64> {
    match v {
        Yaml::Number(n) => n.as_f64(),
        Yaml::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn scalar_text(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn show(v: &Yaml) -> String {
    serde_yaml::to_string(v)
        .map(|s| s.trim().replace('\n', " "))
        .unwrap_or_else(|_| "?".into())
}

/// genny's durations: `10 milliseconds`, `1 minute`, `2 seconds`; a bare number is milliseconds.
pub(crate) fn duration(v: &Yaml) -> Option<Duration> {
    if let Some(n) = number(v) {
        return (n >= 0.0).then(|| Duration::from_secs_f64(n / 1000.0));
    }
    let text = scalar_text(v)?;
    let mut parts = text.split_whitespace();
    let n: f64 = parts.next()?.parse().ok()?;
    let unit = parts.next()?.trim_end_matches('s');
    if parts.next().is_some() || n < 0.0 {
        return None;
    }
    let secs = match unit {
        "nanosecond" => n / 1e9,
        "microsecond" => n / 1e6,
        "millisecond" => n / 1e3,
        "second" => n,
        "minute" => n * 60.0,
        "hour" => n * 3600.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

/// `N per T` (`500 per 1 second`, `1 per 2 milliseconds`): operations per second.
pub(crate) fn global_rate(text: &str) -> Option<f64> {
    let (n, per) = text.split_once(" per ")?;
    let n: f64 = n.trim().parse().ok()?;
    let per = duration(&Yaml::String(per.trim().to_string()))?;
    (n > 0.0 && !per.is_zero()).then(|| n / per.as_secs_f64())
}

/// genny's write concern (`Level: majority`, `Level: 1`, `Journal`, `TimeoutMillis`/`Timeout`).
pub(super) fn write_concern(v: &Yaml) -> Option<Toml> {
    let level = v.get("Level")?;
    let mut t = toml::Table::new();
    let w = match level {
        Yaml::String(s) if s == "majority" => Toml::String("majority".into()),
        other => Toml::Integer(crate::num::whole_signed(
            number(other).filter(|n| *n >= 0.0 && n.fract() == 0.0)?,
        )),
    };
    t.insert("w".into(), w);
    if let Some(j) = v.get("Journal").and_then(Yaml::as_bool) {
        t.insert("j".into(), Toml::Boolean(j));
    }
    if let Some(d) = v
        .get("Timeout")
        .or_else(|| v.get("TimeoutMillis"))
        .and_then(duration)
    {
        t.insert(
            "wtimeout".into(),
            Toml::String(humantime::format_duration(d).to_string()),
        );
    }
    Some(Toml::Table(t))
}

/// A command as written: TOML writes a table's plain values before its tables, which would
/// make `{explain: {...}, verbosity: ...}` a command named `verbosity`; such a command is
/// written as a string of JSON, whose order is kept. (Only commands: another operation's
/// arguments stay a table, so a refusal points into them; their documents' fields may move.)
pub(super) fn in_order(doc: Toml) -> Toml {
    fn kept(v: &Toml) -> bool {
        let is_table = |v: &Toml| match v {
            Toml::Table(_) => true,
            Toml::Array(a) => !a.is_empty() && a.iter().all(Toml::is_table),
            _ => false,
        };
        match v {
            Toml::Table(t) => {
                let first_plain = t.values().position(|v| !is_table(v));
                let last_table = t.values().rposition(is_table);
                !matches!((last_table, first_plain), (Some(a), Some(b)) if a < b)
                    && t.values().all(kept)
            }
            Toml::Array(a) => a.iter().all(kept),
            _ => true,
        }
    }
    if kept(&doc) {
        return doc;
    }
    match serde_json::to_string(&doc) {
        Ok(json) => Toml::String(json),
        Err(_) => doc,
    }
}

/// genny's `ReadPreference` (`ReadMode`, `MaxStaleness`) as the group's `read_preference`.
pub(super) fn read_preference(v: &Yaml) -> Option<Toml> {
    let mode = v.get("ReadMode")?.as_str()?;
    crate::plan::ReadPref::from_name(mode)?;
    let Some(stale) = v.get("MaxStaleness") else {
        return Some(Toml::String(mode.into()));
    };
    let mut t = toml::Table::new();
    t.insert("mode".into(), Toml::String(mode.into()));
    t.insert(
        "maxStalenessSeconds".into(),
        Toml::Integer(crate::num::signed(duration(stale)?.as_secs())),
    );
    Some(Toml::Table(t))
}

/// A YAML value as the templates read it: null is `^Null`, keys are text, numbers keep their
/// kind (a whole number written as `1e4` stays a float, as genny's YAML reads it).
pub(crate) fn to_toml(v: &Yaml) -> Toml {
    match v {
        Yaml::Null => {
            let mut t = toml::Table::new();
            t.insert("^Null".into(), Toml::Table(Default::default()));
            Toml::Table(t)
        }
        Yaml::Bool(b) => Toml::Boolean(*b),
        Yaml::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Toml::Integer(i),
            (None, Some(f)) => Toml::Float(f),
            _ => Toml::Float(f64::NAN),
        },
        Yaml::String(s) => Toml::String(s.clone()),
        Yaml::Sequence(s) => Toml::Array(s.iter().map(to_toml).collect()),
        Yaml::Mapping(m) => Toml::Table(
            m.iter()
                .map(|(k, v)| (scalar_text(k).unwrap_or_else(|| show(k)), to_toml(v)))
                .collect(),
        ),
        Yaml::Tagged(t) => to_toml(&t.value),
    }
}
