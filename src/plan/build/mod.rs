//! `RunPlan::build`: a loaded profile and the overrides become a checked plan, one part at a
//! time, every problem located in the profile (file, line, key, the expected form).
//!
//! Owns: the assembly of a `RunPlan` and `stop_on_error_pct`; one file per part: `target`
//! (`[target]`), `setup` (`[setup]`), `groups` (each `[[group]]` and the stages), `rates` (rate
//! steps and ramps), `operations` (a group's `op` or `mix`), `thresholds` (the profile's and the
//! command line's). Never: talks to a server, touches the run directory, or formats a result.

mod groups;
mod operations;
mod rates;
mod setup;
mod target;
mod thresholds;

use super::limits;
use super::profile::{expected_for, Loaded};
use super::{Overrides, RunPlan};
use crate::error::ProfileError;
use crate::workload::DocGen;

impl RunPlan {
    pub fn build(loaded: &Loaded, ov: &Overrides) -> Result<RunPlan, ProfileError> {
        let p = &loaded.profile;
        let target = target::target(loaded, ov)?;
        let stop_on_error_pct = match p.stop_on_error_pct {
            Some(x) if !(x > 0.0 && x <= limits::MAX_ERROR_PCT) => {
                return Err(loaded.error_at(
                    "stop_on_error_pct",
                    "not a percentage of failed operations",
                    expected_for("stop_on_error_pct"),
                ))
            }
            x => x,
        };
        let document = DocGen::from_table(&p.document)
            .map_err(|e| loaded.error_at(&e.key, e.problem, e.expected))?;
        let mut setup = setup::setup(loaded)?;
        if let Some(n) = ov.recordcount {
            setup.preload = n;
        }
        let stages = groups::stages(loaded, ov, &document)?;
        let thresholds = thresholds::thresholds(loaded, ov, &stages)?;
        Ok(RunPlan {
            name: loaded.name.clone(),
            origin: loaded.origin.clone(),
            description: p.description.clone().unwrap_or_default(),
            target,
            setup,
            document: std::sync::Arc::new(document),
            stages,
            profile_text: loaded.text.clone(),
            stop_on_error_pct,
            thresholds,
            part: None,
        })
    }
}

/// A profile's text built with no overrides, for the tests of every part.
#[cfg(test)]
mod test_profile {
    use super::{Overrides, ProfileError, RunPlan};

    pub(super) fn build(text: &str) -> Result<RunPlan, ProfileError> {
        let loaded = crate::plan::profile::parse("p.toml", text, "p")?;
        RunPlan::build(&loaded, &Overrides::default())
    }

    pub(super) const DOC: &str = "[document]\ncity = { choice = [\"a\", \"b\"] }\n";
}
