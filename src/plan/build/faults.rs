//! `audit`, `[server] args`, `[[fault]]` and `unavailable_after`, with the command line's
//! `--audit`, `--server-arg` and `--fault` (which replace the profile's lists).

use std::time::Duration;

use super::{Loaded, Overrides, ProfileError};
use crate::plan::fault::{self, FaultPlan, FAULT_FORMS};
use crate::plan::limits;

/// What the run does to the server and checks afterwards.
pub(super) struct Faults {
    pub audit: bool,
    pub faults: Vec<FaultPlan>,
    pub server_args: Vec<String>,
    pub unavailable_after: Option<Duration>,
}

pub(super) fn faults(loaded: &Loaded, ov: &Overrides) -> Result<Faults, ProfileError> {
    let p = &loaded.profile;
    let cli = |expr: &String, problem: String| ProfileError {
        file: "--fault".into(),
        line: 1,
        column: 1,
        key: String::new(),
        value: Some(expr.clone()),
        problem,
        expected: FAULT_FORMS.into(),
    };
    let faults: Vec<FaultPlan> = if ov.faults.is_empty() {
        p.faults
            .iter()
            .enumerate()
            .map(|(i, f)| {
                FaultPlan::new(
                    &f.kind,
                    &f.at,
                    f.restart_after.as_deref(),
                    f.lasts.as_deref(),
                )
                .map_err(|(key, problem)| {
                    loaded.error_at(&format!("fault[{i}].{key}"), problem, FAULT_FORMS)
                })
            })
            .collect::<Result<_, _>>()?
    } else {
        ov.faults
            .iter()
            .map(|e| FaultPlan::parse_cli(e).map_err(|p| cli(e, p)))
            .collect::<Result<_, _>>()?
    };
    if let Some((a, b)) = fault::overlapping(&faults) {
        let problem = format!(
            "{} starts before {} is over; one fault at a time",
            faults[b].text(),
            faults[a].text()
        );
        return Err(if ov.faults.is_empty() {
            loaded.error_at(&format!("fault[{b}].at"), problem, FAULT_FORMS)
        } else {
            cli(&ov.faults[b], problem)
        });
    }
    let server_args = if ov.server_args.is_empty() {
        p.server.args.clone()
    } else {
        ov.server_args.clone()
    };
    if let Some(bad) = server_args.iter().position(|a| a.trim().is_empty()) {
        return Err(loaded.error_at(
            &format!("server.args[{bad}]"),
            "an empty server flag",
            "the embedded server's own flags, e.g. args = [\"--sync-on-commit\"]",
        ));
    }
    let unavailable_after = p
        .unavailable_after
        .as_deref()
        .map(|s| {
            limits::parse_duration(s)
                .and_then(|d| {
                    if d.is_zero() {
                        Err("a window of 0 s would count every gap between two operations".into())
                    } else {
                        Ok(d)
                    }
                })
                .map_err(|p| loaded.error_at("unavailable_after", p, limits::duration_expected()))
        })
        .transpose()?;
    Ok(Faults {
        audit: p.audit || ov.audit,
        faults,
        server_args,
        unavailable_after,
    })
}
