//! The setup before the run: dropping the collection, its indexes and the preload (`[setup]`).
//! `--recordcount` replaces the preload in `RunPlan::build`.
//!
//! Owns: `[setup]` becoming a `SetupPlan`. Never: creates an index or inserts a document (that
//! is `ops::setup`).

use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::{expected_for, Loaded};
use crate::plan::SetupPlan;

pub(super) fn setup(loaded: &Loaded) -> Result<SetupPlan, ProfileError> {
    let s = &loaded.profile.setup;
    let indexes = s
        .indexes
        .iter()
        .enumerate()
        .map(|(i, t)| super::collections::index(loaded, &format!("setup.indexes[{i}]"), t))
        .collect::<Result<Vec<_>, _>>()?;
    let preload = limits::check_preload(s.preload)
        .map_err(|problem| loaded.error_at("setup.preload", problem, expected_for("preload")))?;
    Ok(SetupPlan {
        drop: s.drop,
        preload,
        indexes,
    })
}
