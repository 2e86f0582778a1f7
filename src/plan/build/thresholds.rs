//! Thresholds from the profile's `[thresholds]` table and the command line's `--threshold`s,
//! checked against the plan's groups (a `group:kind` names a kind the group mixes).
//!
//! Owns: reading the two sources into `ThresholdPlan`s, with located errors. Never: a
//! threshold's grammar (`plan::thresholds` parses one) or judging a result against it.

use std::time::Duration;

use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::Loaded;
use crate::plan::thresholds::{self, ThresholdPlan};
use crate::plan::{GroupPlan, Overrides, Stage};

/// The profile's `[thresholds]`, then the command line's `--threshold`s.
pub(super) fn thresholds(
    loaded: &Loaded,
    ov: &Overrides,
    stages: &[Stage],
) -> Result<Vec<ThresholdPlan>, ProfileError> {
    let mut by_index: Vec<&GroupPlan> = stages.iter().flat_map(|s| s.groups.iter()).collect();
    by_index.sort_by_key(|g| g.index);
    let names: Vec<String> = by_index.iter().map(|g| g.name.clone()).collect();
    // `group:kind` names a kind the group mixes (a single-operation group has no kind rows).
    let mixes = |t: &ThresholdPlan| -> Result<(), String> {
        match (t.group, &t.kind) {
            (Some(g), Some(kind)) => {
                let group = by_index[g];
                if group.mix.is_empty() && !matches!(group.op, crate::workload::OpSpec::Steps(_)) {
                    return Err(format!(
                        "`{}:{kind}`: group `{}` runs one operation, so it has no kind rows; name it `{}`",
                        group.name, group.name, group.name
                    ));
                }
                if !group.kinds().contains(kind) {
                    let rows: Vec<String> = group
                        .kinds()
                        .iter()
                        .map(|k| crate::metrics::Label::kind(&group.name, k.clone()).to_string())
                        .collect();
                    return Err(format!(
                        "`{}:{kind}`: group `{}` does not run {kind}; its kind rows are {}",
                        group.name,
                        group.name,
                        rows.join(", ")
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    };
    let mut out = Vec::new();
    for (key, value) in &loaded.profile.thresholds {
        let at = format!("thresholds.{key}");
        let err = |problem: String| loaded.error_at(&at, problem, thresholds::GRAMMAR);
        let parsed = match value {
            toml::Value::String(limit) => {
                ThresholdPlan::parse(key, limit, false, Duration::ZERO, &names)
            }
            toml::Value::Table(t) => {
                if let Some(k) = t
                    .keys()
                    .find(|k| !["limit", "abort", "after"].contains(&k.as_str()))
                {
                    return Err(err(format!(
                        "unknown key `{k}`; a threshold table has limit, abort and after"
                    )));
                }
                let limit = t
                    .get("limit")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| err("a threshold table needs limit = \"< ...\"".into()))?;
                let abort = match t.get("abort") {
                    None => false,
                    Some(toml::Value::Boolean(b)) => *b,
                    Some(_) => return Err(err("abort is true or false".into())),
                };
                let after = match t.get("after") {
                    None => Duration::ZERO,
                    Some(toml::Value::String(s)) => limits::parse_duration(s).map_err(err)?,
                    Some(_) => return Err(err("after is a duration such as \"10s\"".into())),
                };
                ThresholdPlan::parse(key, limit, abort, after, &names)
            }
            _ => {
                return Err(err(
                    "a threshold is a string such as \"< 50ms\" or a table".into()
                ))
            }
        };
        let parsed = parsed.map_err(err)?;
        mixes(&parsed).map_err(err)?;
        out.push(parsed);
    }
    for expr in &ov.thresholds {
        out.push(
            ThresholdPlan::parse_cli(expr, &names)
                .and_then(|t| mixes(&t).map(|()| t))
                .map_err(|problem| ProfileError {
                    file: "--threshold".into(),
                    line: 1,
                    column: 1,
                    key: String::new(),
                    value: Some(expr.clone()),
                    problem,
                    expected: thresholds::GRAMMAR.into(),
                })?,
        );
    }
    Ok(out)
}
