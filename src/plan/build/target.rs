//! The target: database, collection, write concern, read preference, pool and operation
//! timeout, and the exporters on the server hosts (`[target]`), with `--op-timeout` applied.
//!
//! Owns: `[target]` becoming a `TargetPlan`. Never: connects to the server, or reads any other
//! table of the profile.

use std::time::Duration;

use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::{expected_for, Loaded};
use crate::plan::{
    Overrides, ReadPref, TargetPlan, WriteConcernPlan, DEFAULT_OP_TIMEOUT, DEFAULT_POOL_SIZE,
};

/// `op_timeout`: more than 0 and at most a year (the default without one).
fn op_timeout(loaded: &Loaded, text: Option<&str>) -> Result<Duration, ProfileError> {
    let Some(s) = text else {
        return Ok(DEFAULT_OP_TIMEOUT);
    };
    let refused =
        |problem: String| loaded.error_at("target.op_timeout", problem, expected_for("op_timeout"));
    let whole = "an operation timeout must be more than 0 and at most a year";
    match limits::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(refused(whole.into())),
        Err(problem) if problem.contains("longer than a year") => Err(refused(whole.into())),
        Err(problem) => Err(refused(problem)),
    }
}

pub(super) fn target(loaded: &Loaded, ov: &Overrides) -> Result<TargetPlan, ProfileError> {
    let t = &loaded.profile.target;
    let name_ok = |s: &str| {
        !s.is_empty() && !s.contains(['$', '\0']) && !s.starts_with('.') && !s.ends_with('.')
    };
    let database = t.database.clone().unwrap_or_else(|| "mongo_stress".into());
    if !name_ok(&database) || database.contains('.') || database.contains(' ') {
        return Err(loaded.error_at(
            "target.database",
            "not a valid database name",
            expected_for("database"),
        ));
    }
    let collection = t.collection.clone().unwrap_or_else(|| "cities".into());
    if !name_ok(&collection) || collection.starts_with("system.") {
        return Err(loaded.error_at(
            "target.collection",
            "not a valid collection name",
            expected_for("collection"),
        ));
    }
    let write_concern = match &t.write_concern {
        None => None,
        Some(toml::Value::Integer(n)) if (0..=limits::MAX_WRITE_NODES).contains(n) => Some(
            WriteConcernPlan::Nodes(u32::try_from(*n).unwrap_or(u32::MAX)),
        ),
        Some(toml::Value::String(s)) if s == "majority" => Some(WriteConcernPlan::Majority),
        Some(toml::Value::String(s))
            if s.parse::<i64>()
                .is_ok_and(|n| (0..=limits::MAX_WRITE_NODES).contains(&n)) =>
        {
            Some(WriteConcernPlan::Nodes(s.parse().unwrap_or(1)))
        }
        Some(_) => {
            return Err(loaded.error_at(
                "target.write_concern",
                "not a write concern",
                expected_for("write_concern"),
            ))
        }
    };
    let read_preference = match t.read_preference.as_deref() {
        None => ReadPref::Primary,
        Some(s) => ReadPref::from_name(s).ok_or_else(|| {
            loaded.error_at(
                "target.read_preference",
                "unknown read preference",
                expected_for("read_preference"),
            )
        })?,
    };
    let pool_size = t.pool_size.unwrap_or(DEFAULT_POOL_SIZE);
    if pool_size < limits::MIN_POOL_SIZE {
        return Err(loaded.error_at(
            "target.pool_size",
            "a pool of 0 connections cannot run anything",
            expected_for("pool_size"),
        ));
    }
    let op_timeout = match ov.op_timeout {
        Some(d) => d,
        None => op_timeout(loaded, t.op_timeout.as_deref())?,
    };
    let server_metrics = t.server_metrics.clone().unwrap_or_default();
    for (i, _) in server_metrics.iter().enumerate() {
        if let Err(problem) = crate::monitor::scrape::check_urls(&server_metrics[..=i]) {
            return Err(loaded.error_at(
                &format!("target.server_metrics[{i}]"),
                problem,
                expected_for("server_metrics"),
            ));
        }
    }
    Ok(TargetPlan {
        database,
        collection,
        write_concern,
        journal: t.journal,
        read_preference,
        pool_size,
        op_timeout,
        server_metrics,
    })
}
