//! The setup before the run: dropping the collection, its indexes and the preload (`[setup]`).
//! `--recordcount` replaces the preload in `RunPlan::build`.
//!
//! Owns: `[setup]` becoming a `SetupPlan`. Never: creates an index or inserts a document (that
//! is `ops::setup`).

use mongodb::bson::Document;

use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::{expected_for, Loaded};
use crate::plan::SetupPlan;

pub(super) fn setup(loaded: &Loaded) -> Result<SetupPlan, ProfileError> {
    let s = &loaded.profile.setup;
    let mut indexes = Vec::new();
    for (i, idx) in s.indexes.iter().enumerate() {
        let key = format!("setup.indexes[{i}]");
        let mut doc = Document::new();
        for (field, dir) in idx {
            if field.is_empty() || field.starts_with('$') || field.contains('\0') {
                return Err(loaded.error_at(
                    &format!("{key}.{field}"),
                    format!("`{}` cannot be an index field", field.escape_debug()),
                    "a document field name, e.g. indexes = [{ city = 1 }]",
                ));
            }
            match dir {
                toml::Value::Integer(d @ (1 | -1)) => doc.insert(field.clone(), *d as i32),
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
                &key,
                "an index needs at least one field",
                expected_for("indexes"),
            ));
        }
        indexes.push(doc);
    }
    let preload = limits::check_preload(s.preload)
        .map_err(|problem| loaded.error_at("setup.preload", problem, expected_for("preload")))?;
    Ok(SetupPlan {
        drop: s.drop,
        preload,
        indexes,
    })
}
