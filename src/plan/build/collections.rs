//! The collections of a run (`[[collection]]`, or the one `[target]` collection with `[setup]`
//! and `[document]`), their indexes with options, and the concerns a group sends with
//! (`write_concern`, `read_concern`, `read_preference`, per group over `[target]`'s).
//!
//! Owns: `CollectionPlan`s, `IndexPlan`s, `Concerns` and the `[setup]` form's `SetupPlan`. Never: creates anything on a server
//! (that is `ops::setup`).

use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::{Bson, Document};

use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::{expected_for, Loaded};
use crate::plan::{
    CollectionPlan, Concerns, IndexPlan, Overrides, ReadConcernPlan, ReadPref, ReadPrefPlan,
    SetupPlan, TargetPlan, WriteConcernPlan,
};
use crate::workload::{DocGen, Template};

/// Options an index may have, as the server names them.
const INDEX_OPTIONS: [&str; 8] = [
    "unique",
    "partialFilterExpression",
    "expireAfterSeconds",
    "sparse",
    "collation",
    "name",
    "hidden",
    "wildcardProjection",
];

/// A `[[collection]]`'s name: one the server takes for a collection of the profile's own.
fn collection_name(loaded: &Loaded, at: &str, name: &str) -> Result<(), ProfileError> {
    let ok = !name.is_empty()
        && !name.contains(['$', '\0'])
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.starts_with("system.");
    if ok {
        return Ok(());
    }
    Err(loaded.error_at(
        &format!("{at}.name"),
        "not a valid collection name",
        expected_for("collection"),
    ))
}

/// `invariant = { sum, min }`: the field summed must be one a document can have.
fn invariant(
    loaded: &Loaded,
    at: &str,
    d: &crate::plan::profile::model::InvariantDef,
) -> Result<crate::plan::InvariantPlan, ProfileError> {
    let ok = !d.sum.is_empty() && !d.sum.starts_with('$') && !d.sum.contains('\0');
    if !ok {
        return Err(loaded.error_at(
            &format!("{at}.invariant.sum"),
            "not a field name",
            "invariant = { sum = \"balance\", min = 0 }",
        ));
    }
    Ok(crate::plan::InvariantPlan {
        field: d.sum.clone(),
        min: d.min,
    })
}

pub(super) fn collections(
    loaded: &Loaded,
    ov: &Overrides,
    target: &mut TargetPlan,
) -> Result<Vec<CollectionPlan>, ProfileError> {
    let p = &loaded.profile;
    if p.collections.is_empty() {
        let document = DocGen::from_table(&p.document)
            .map_err(|e| loaded.error_at(&e.key, e.problem, e.expected))?;
        let mut setup = setup(loaded)?;
        if let Some(n) = ov.recordcount {
            setup.preload = n;
        }
        return Ok(vec![CollectionPlan {
            name: target.collection.clone(),
            database: None,
            setup,
            document: Arc::new(document),
            invariant: None,
        }]);
    }
    let both = |k: &str, set: bool| {
        if set {
            Err(loaded.error_at(
                k,
                format!("`{k}` and [[collection]] are both given; with [[collection]], each collection has its own"),
                "move it into the [[collection]] it belongs to (drop, preload, indexes, [collection.document])",
            ))
        } else {
            Ok(())
        }
    };
    both("document", !p.document.is_empty())?;
    both(
        "setup",
        p.setup.drop || p.setup.preload > 0 || !p.setup.indexes.is_empty(),
    )?;
    both("target.collection", p.target.collection.is_some())?;
    let mut out: Vec<CollectionPlan> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, c) in p.collections.iter().enumerate() {
        let at = format!("collection[{i}]");
        collection_name(loaded, &at, &c.name)?;
        if !seen.insert((c.name.as_str(), c.database.as_deref())) {
            return Err(loaded.error_at(
                &format!("{at}.name"),
                format!("two collections are named `{}`", c.name),
                "a different name for each [[collection]]",
            ));
        }
        let document = DocGen::from_table_at(&c.document, &format!("{at}.document"))
            .map_err(|e| loaded.error_at(&e.key, e.problem, e.expected))?;
        let indexes = c
            .indexes
            .iter()
            .enumerate()
            .map(|(j, t)| index(loaded, &format!("{at}.indexes[{j}]"), t))
            .collect::<Result<Vec<_>, _>>()?;
        let mut preload = limits::check_preload(c.preload).map_err(|problem| {
            loaded.error_at(&format!("{at}.preload"), problem, expected_for("preload"))
        })?;
        if i == 0 {
            if let Some(n) = ov.recordcount {
                preload = n;
            }
        }
        if let Some(db) = &c.database {
            if db.is_empty() || db.contains(['/', '\\', '.', ' ', '"', '$', '\0']) {
                return Err(loaded.error_at(
                    &format!("{at}.database"),
                    "not a valid database name",
                    "a name without / \\ . space \" $ or NUL, e.g. database = \"test\"",
                ));
            }
        }
        out.push(CollectionPlan {
            name: c.name.clone(),
            database: c.database.clone(),
            setup: SetupPlan {
                drop: c.drop,
                preload,
                indexes,
            },
            document: Arc::new(document),
            invariant: c
                .invariant
                .as_ref()
                .map(|d| invariant(loaded, &at, d))
                .transpose()?,
        });
    }
    target.collection = out[0].name.clone();
    Ok(out)
}

/// One index: `{ keys = {...}, unique = true, ... }`, or its keys alone (`{ city = 1 }`).
pub(super) fn index(
    loaded: &Loaded,
    key: &str,
    t: &toml::Table,
) -> Result<IndexPlan, ProfileError> {
    let (keys_table, key_path) = match t.get("keys") {
        Some(toml::Value::Table(k)) => (k, format!("{key}.keys")),
        Some(_) => {
            return Err(loaded.error_at(
                &format!("{key}.keys"),
                "an index's keys must be a table of fields",
                "keys = { status = 1, created = -1 }",
            ))
        }
        None => (t, key.to_string()),
    };
    let keys = index_keys(loaded, &key_path, keys_table)?;
    let mut options = Document::new();
    if t.contains_key("keys") {
        for (name, v) in t {
            if name == "keys" {
                continue;
            }
            if !INDEX_OPTIONS.contains(&name.as_str()) {
                let close = INDEX_OPTIONS
                    .iter()
                    .map(|o| (strsim::jaro_winkler(o, name), *o))
                    .filter(|(s, _)| *s > 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, o)| format!(" (did you mean `{o}`?)"))
                    .unwrap_or_default();
                return Err(loaded.error_at(
                    &format!("{key}.{name}"),
                    format!("`{name}` is not an index option{close}"),
                    format!("keys and any of: {}", INDEX_OPTIONS.join(", ")),
                ));
            }
            let path = format!("{key}.{name}");
            let value = Template::compile(v, &path)
                .map_err(|e| loaded.error_at(&e.key, e.problem, e.expected))?;
            let Some(value) = value.constant().cloned() else {
                return Err(loaded.error_at(
                    &path,
                    "an index option is fixed when the index is made; a generator has no meaning here",
                    "a constant value",
                ));
            };
            let ok = match name.as_str() {
                "unique" | "sparse" | "hidden" => matches!(value, Bson::Boolean(_)),
                "expireAfterSeconds" => {
                    matches!(value, Bson::Int32(n) if n >= 0)
                        || matches!(value, Bson::Int64(n) if n >= 0)
                }
                "name" => matches!(value, Bson::String(_)),
                _ => matches!(value, Bson::Document(_)),
            };
            if !ok {
                return Err(loaded.error_at(
                    &path,
                    format!("`{name}` has the wrong type"),
                    match name.as_str() {
                        "unique" | "sparse" | "hidden" => "true or false".to_string(),
                        "expireAfterSeconds" => {
                            "whole seconds from 0, e.g. expireAfterSeconds = 3600".into()
                        }
                        "name" => "a string".into(),
                        _ => format!("a table, e.g. {name} = {{ sku = {{ \"$exists\" = true }} }}"),
                    },
                ));
            }
            options.insert(name.clone(), value);
        }
    }
    Ok(IndexPlan { keys, options })
}

fn index_keys(loaded: &Loaded, key: &str, t: &toml::Table) -> Result<Document, ProfileError> {
    let mut doc = Document::new();
    for (field, dir) in t {
        if field.is_empty() || field.starts_with('$') || field.contains('\0') {
            return Err(loaded.error_at(
                &format!("{key}.{field}"),
                format!("`{}` cannot be an index field", field.escape_debug()),
                "a document field name, e.g. indexes = [{ city = 1 }]",
            ));
        }
        match dir {
            toml::Value::Integer(d @ (1 | -1)) => {
                doc.insert(field.clone(), i32::try_from(*d).unwrap_or(1))
            }
            toml::Value::String(s) if limits::INDEX_TYPES.contains(&s.as_str()) => {
                doc.insert(field.clone(), s.clone())
            }
            _ => {
                return Err(loaded.error_at(
                    &format!("{key}.{field}"),
                    "not an index direction",
                    limits::index_expected(),
                ))
            }
        };
    }
    if doc.is_empty() {
        return Err(loaded.error_at(
            key,
            "an index needs at least one field",
            expected_for("indexes"),
        ));
    }
    Ok(doc)
}

/// `1`, `0`, `"majority"`, or (with `table`) `{ w, j, wtimeout }`: the write acknowledgement,
/// journal and wtimeout.
#[allow(clippy::type_complexity)]
pub(super) fn write_concern(
    loaded: &Loaded,
    key: &str,
    v: &toml::Value,
) -> Result<(Option<WriteConcernPlan>, Option<bool>, Option<Duration>), ProfileError> {
    let bad = || {
        loaded.error_at(
            key,
            "not a write concern",
            format!(
                "{}, or a table {{ w = \"majority\", j = true, wtimeout = \"5s\" }}",
                expected_for("write_concern")
            ),
        )
    };
    let w = |v: &toml::Value| -> Result<WriteConcernPlan, ProfileError> {
        match v {
            toml::Value::Integer(n) if (0..=limits::MAX_WRITE_NODES).contains(n) => Ok(
                WriteConcernPlan::Nodes(u32::try_from(*n).unwrap_or(u32::MAX)),
            ),
            toml::Value::String(s) if s == "majority" => Ok(WriteConcernPlan::Majority),
            toml::Value::String(s) => s
                .parse::<i64>()
                .ok()
                .filter(|n| (0..=limits::MAX_WRITE_NODES).contains(n))
                .map(|n| WriteConcernPlan::Nodes(u32::try_from(n).unwrap_or(u32::MAX)))
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    };
    match v {
        toml::Value::Table(t) => {
            let mut out = (None, None, None);
            for (k, x) in t {
                match (k.as_str(), x) {
                    ("w", x) => out.0 = Some(w(x)?),
                    ("j", toml::Value::Boolean(b)) => out.1 = Some(*b),
                    ("wtimeout", toml::Value::String(s)) => {
                        out.2 = Some(
                            limits::parse_duration(s)
                                .map_err(|p| loaded.error_at(&format!("{key}.wtimeout"), p, limits::duration_expected()))?,
                        )
                    }
                    ("wtimeout", toml::Value::Integer(ms)) if *ms >= 0 => {
                        out.2 = Some(Duration::from_millis(ms.unsigned_abs()))
                    }
                    _ => {
                        return Err(loaded.error_at(
                            &format!("{key}.{k}"),
                            format!("`{k}` is not a write concern field, or has the wrong type"),
                            "w (a number or \"majority\"), j (true or false), wtimeout (\"5s\" or milliseconds)",
                        ))
                    }
                }
            }
            Ok(out)
        }
        x => Ok((Some(w(x)?), None, None)),
    }
}

/// A group's concerns: its own where it sets them, else `[target]`'s.
pub(super) fn concerns(
    loaded: &Loaded,
    index: usize,
    target: &TargetPlan,
) -> Result<Concerns, ProfileError> {
    let g = &loaded.profile.groups[index];
    let at = |k: &str| format!("group[{index}].{k}");
    let mut c = Concerns {
        write: target.write_concern.clone(),
        journal: target.journal,
        wtimeout: None,
        read_concern: None,
        read_preference: ReadPrefPlan {
            mode: target.read_preference,
            ..ReadPrefPlan::default()
        },
        causal_consistency: false,
    };
    if let Some(v) = &g.write_concern {
        let (w, j, wtimeout) = write_concern(loaded, &at("write_concern"), v)?;
        c.write = w.or(c.write);
        c.journal = j.or(c.journal);
        c.wtimeout = wtimeout;
    }
    if let Some(r) = &g.read_concern {
        c.read_concern = Some(ReadConcernPlan::from_name(r).ok_or_else(|| {
            loaded.error_at(
                &at("read_concern"),
                format!("`{r}` is not a read concern level"),
                "one of \"local\", \"majority\", \"available\", \"linearizable\", \"snapshot\"",
            )
        })?);
    }
    if let Some(v) = &g.read_preference {
        c.read_preference = read_preference(loaded, &at("read_preference"), v)?;
    }
    c.causal_consistency = g.causal_consistency.unwrap_or(false);
    Ok(c)
}

fn read_preference(
    loaded: &Loaded,
    key: &str,
    v: &toml::Value,
) -> Result<ReadPrefPlan, ProfileError> {
    let expected = || {
        format!(
            "{}, or {{ mode = \"secondary\", tags = [{{ dc = \"east\" }}], maxStalenessSeconds = 90 }}",
            ReadPref::listed()
        )
    };
    let mode = |s: &str, k: &str| {
        ReadPref::from_name(s).ok_or_else(|| {
            loaded.error_at(k, format!("`{s}` is not a read preference"), expected())
        })
    };
    match v {
        toml::Value::String(s) => Ok(ReadPrefPlan {
            mode: mode(s, key)?,
            ..ReadPrefPlan::default()
        }),
        toml::Value::Table(t) => {
            let mut out = ReadPrefPlan::default();
            for (k, x) in t {
                let path = format!("{key}.{k}");
                match (k.as_str(), x) {
                    ("mode", toml::Value::String(s)) => out.mode = mode(s, &path)?,
                    ("tags", toml::Value::Array(sets)) => {
                        for set in sets {
                            let toml::Value::Table(set) = set else {
                                return Err(loaded.error_at(&path, "a tag set is a table of strings", expected()));
                            };
                            let mut tags = Vec::new();
                            for (name, value) in set {
                                let Some(value) = value.as_str() else {
                                    return Err(loaded.error_at(&path, "a tag's value is a string", expected()));
                                };
                                tags.push((name.clone(), value.to_string()));
                            }
                            out.tags.push(tags);
                        }
                    }
                    ("maxStalenessSeconds", toml::Value::Integer(s)) if *s >= 90 => {
                        out.max_staleness = Some(Duration::from_secs(s.unsigned_abs()))
                    }
                    ("maxStalenessSeconds", _) => {
                        return Err(loaded.error_at(
                            &path,
                            "maxStalenessSeconds must be a whole number of seconds, at least 90 (the drivers' minimum)",
                            "maxStalenessSeconds = 90",
                        ))
                    }
                    _ => {
                        return Err(loaded.error_at(
                            &path,
                            format!("`{k}` is not a read preference field, or has the wrong type"),
                            expected(),
                        ))
                    }
                }
            }
            if out.mode == ReadPref::Primary
                && (!out.tags.is_empty() || out.max_staleness.is_some())
            {
                return Err(loaded.error_at(
                    key,
                    "mode primary takes no tags or maxStalenessSeconds",
                    "another mode, e.g. mode = \"secondaryPreferred\"",
                ));
            }
            Ok(out)
        }
        _ => Err(loaded.error_at(key, "not a read preference", expected())),
    }
}

/// `[setup]` (the one `[target]` collection's): drop, indexes and preload. `--recordcount`
/// replaces the preload in `RunPlan::build`.
fn setup(loaded: &Loaded) -> Result<SetupPlan, ProfileError> {
    let s = &loaded.profile.setup;
    let indexes = s
        .indexes
        .iter()
        .enumerate()
        .map(|(i, t)| index(loaded, &format!("setup.indexes[{i}]"), t))
        .collect::<Result<Vec<_>, _>>()?;
    let preload = limits::check_preload(s.preload)
        .map_err(|problem| loaded.error_at("setup.preload", problem, expected_for("preload")))?;
    Ok(SetupPlan {
        drop: s.drop,
        preload,
        indexes,
    })
}
