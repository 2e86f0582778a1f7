//! Every bound a plan is held to, written once. The profile's "expected" texts, the plan's
//! problems and the command line's value parsers all derive their words from these constants,
//! so a bound cannot say one thing in an error and enforce another.

use std::time::Duration;

/// Virtual users per group. Beyond it a typo, not a test, is the likelier cause.
pub(crate) const MIN_THREADS: u32 = 1;
pub(crate) const MAX_THREADS: u32 = 1_000_000;
/// Operations per virtual user.
pub(crate) const MIN_LOOPS: u64 = 1;
pub(crate) const MAX_LOOPS: u64 = 1_000_000_000_000;
/// Operations per second of one group (open loop).
pub(crate) const MIN_RATE: f64 = 0.001;
pub(crate) const MAX_RATE: f64 = 10_000_000.0;
/// The most rate steps one group may have.
pub(crate) const MAX_STEPS: usize = 1000;
/// A ramp without `step` runs in this many steps.
pub(crate) const RAMP_STEPS: u32 = 10;
/// Connections in the driver's pool, and documents a find returns.
pub(crate) const MIN_POOL_SIZE: u32 = 1;
pub(crate) const MIN_FIND_LIMIT: u32 = 1;
/// `stop_on_error_pct`: above 0, at most 100; judged over the last `GUARD_WINDOW_OPS`
/// operations that ended within `GUARD_WINDOW`, once there are at least `GUARD_MIN_OPS`.
pub(crate) const MAX_ERROR_PCT: f64 = 100.0;
pub(crate) const GUARD_WINDOW_OPS: usize = 100;
pub(crate) const GUARD_WINDOW: Duration = Duration::from_secs(10);
pub(crate) const GUARD_MIN_OPS: usize = 3;
/// Index types a profile may name besides 1 and -1: the one table of their names.
pub(crate) const INDEX_TYPES: [&str; 4] = ["text", "hashed", "2d", "2dsphere"];
/// Documents inserted by `setup.preload`.
pub(crate) const MAX_PRELOAD: u64 = 100_000_000;
/// Longest duration anywhere (run, ramp-up, delay, timeout): beyond it `Instant` arithmetic
/// can overflow, and no test means it.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// Shortest live report interval.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Highest `w` number a write concern may ask for (a replica set has at most 50 members).
pub(crate) const MAX_WRITE_NODES: i64 = 50;
/// Levels of nesting (documents and arrays) the server accepts, and the largest document it
/// stores: the generator checks them, so they live beside it.
pub(crate) use crate::workload::document::MAX_NESTING;

pub(crate) fn threads_expected() -> String {
    format!(
        "a whole number of virtual users from {MIN_THREADS} to {MAX_THREADS}, e.g. threads = 100"
    )
}

pub(crate) fn loops_expected() -> String {
    format!("a whole number of operations per virtual user, from {MIN_LOOPS} to {MAX_LOOPS}, e.g. loops = 200")
}

pub(crate) fn rate_expected() -> String {
    format!("operations per second for the whole group, from {MIN_RATE} to {MAX_RATE}, e.g. rate = 200 or rate = 2.5; or increasing steps, e.g. rate = [500, 1000, 2000] with step = \"30s\"; or a ramp, e.g. rate = {{ from = 100, to = 5000, over = \"5m\" }}")
}

pub(crate) fn preload_expected() -> String {
    format!("a whole number of documents to insert before the run, up to {MAX_PRELOAD}, e.g. preload = 10000")
}

pub(crate) fn error_pct_expected() -> String {
    format!(
        "a percentage above 0 and at most {MAX_ERROR_PCT}, e.g. stop_on_error_pct = 50 (stops once that share of the last {GUARD_WINDOW_OPS} operations within {} failed, at least {GUARD_MIN_OPS} of them)",
        humantime::format_duration(GUARD_WINDOW)
    )
}

pub(crate) fn pool_size_expected() -> String {
    format!("a whole number of connections, at least {MIN_POOL_SIZE}, e.g. pool_size = 100")
}

pub(crate) fn limit_expected() -> String {
    format!("a whole number of documents, at least {MIN_FIND_LIMIT}, e.g. limit = 50")
}

pub(crate) fn index_expected() -> String {
    let types: Vec<String> = INDEX_TYPES.iter().map(|t| format!("\"{t}\"")).collect();
    format!(
        "1, -1, {}, e.g. indexes = [{{ city = 1 }}]",
        types.join(", ")
    )
}

pub(crate) fn duration_expected() -> String {
    "a duration string up to a year, such as \"30s\", \"5m\" or \"1h 30m\"".into()
}

/// Parses "30s", "5m", "1h 30m", "250ms" up to `MAX_DURATION`. A bare number is refused rather
/// than guessed at.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration ({e})"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "`{}` is longer than a year",
            humantime::format_duration(d)
        ));
    }
    Ok(d)
}

pub(crate) fn check_threads(n: u32) -> Result<u32, String> {
    match n {
        0 => Err("0 threads would run nothing".into()),
        n if n > MAX_THREADS => Err(format!(
            "{n} virtual users per group is more than the {MAX_THREADS} this tool runs"
        )),
        n => Ok(n),
    }
}

pub(crate) fn check_loops(n: u64) -> Result<u64, String> {
    match n {
        0 => Err("0 loops would run nothing".into()),
        n if n > MAX_LOOPS => Err(format!("{n} operations per user would never finish")),
        n => Ok(n),
    }
}

pub(crate) fn check_rate(r: f64) -> Result<f64, String> {
    if r.is_finite() && (MIN_RATE..=MAX_RATE).contains(&r) {
        Ok(r)
    } else {
        Err(format!("{r} operations per second cannot be scheduled"))
    }
}

pub(crate) fn check_preload(n: u64) -> Result<u64, String> {
    if n > MAX_PRELOAD {
        Err(format!(
            "{n} documents is more than the {MAX_PRELOAD} preload inserts"
        ))
    } else {
        Ok(n)
    }
}

/// The shortest gap between successes the recorder keeps (the time to a first success after a
/// fault is read from these gaps).
pub(crate) const RECORDED_GAP: Duration = Duration::from_millis(100);
/// A gap without a success counts as unavailability from this long (or 10x the median
/// latency, or 3 of an open-loop group's intervals, if longer), unless `unavailable_after`
/// says otherwise.
pub(crate) const UNAVAILABLE_AFTER: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_is_enforced_at_its_edge_and_named_in_its_text() {
        assert!(check_threads(MAX_THREADS).is_ok() && check_threads(MAX_THREADS + 1).is_err());
        assert!(check_loops(MAX_LOOPS).is_ok() && check_loops(MAX_LOOPS + 1).is_err());
        assert!(check_rate(MIN_RATE).is_ok() && check_rate(MIN_RATE / 2.0).is_err());
        assert!(check_rate(f64::NAN).is_err() && check_rate(f64::INFINITY).is_err());
        assert!(check_preload(MAX_PRELOAD).is_ok() && check_preload(MAX_PRELOAD + 1).is_err());
        assert!(threads_expected().contains(&MAX_THREADS.to_string()));
        assert!(loops_expected().contains(&MAX_LOOPS.to_string()));
        assert!(rate_expected().contains("0.001") && rate_expected().contains("10000000"));
        assert!(preload_expected().contains(&MAX_PRELOAD.to_string()));
    }

    #[test]
    fn durations_are_parsed_once_and_bounded_by_a_year() {
        assert_eq!(parse_duration(" 1m 30s "), Ok(Duration::from_secs(90)));
        assert!(parse_duration("366days")
            .unwrap_err()
            .contains("longer than a year"));
        assert!(parse_duration("soon")
            .unwrap_err()
            .contains("not a duration"));
        assert!(
            parse_duration("10").is_err(),
            "a bare number is not guessed at"
        );
    }
}
