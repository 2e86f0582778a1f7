//! The command line's value parsers: each option's text read into its type, or a message that
//! names the option's form.

use super::*;

pub(super) fn parse_capture_window(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(1) {
        return Err("the window must be at least 1s, such as 30s or 10m".into());
    }
    Ok(d)
}

pub(super) fn parse_sample_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err("expected a sample rate above 0 and at most 1, such as 0.1".into()),
    }
}

pub(super) fn parse_coverage(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p / 100.0),
        _ => Err("expected a percentage above 0 and at most 100, such as 95".into()),
    }
}

pub(super) fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1000.0 => Ok(x),
        _ => Err("expected a factor above 0 and at most 1000, such as 3 or 0.5".into()),
    }
}

pub(super) fn parse_time(s: &str) -> Result<i64, String> {
    mongodb::bson::DateTime::parse_rfc3339_str(s)
        .map(|d| d.timestamp_millis())
        .map_err(|_| "expected an RFC 3339 time such as 2024-03-01T10:00:00Z".into())
}

pub(super) fn parse_param(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().to_string(), v.to_string())),
        _ => Err("expected NAME=VALUE, e.g. -p Repeat=200".into()),
    }
}

pub(super) fn parse_watchers(s: &str) -> Result<WatcherList, String> {
    let list = s
        .split(',')
        .map(|one| {
            let n = one.trim().parse::<u32>().map_err(|_| {
                "expected listeners per watch group, a list of whole numbers from 0: 0,1,15,105"
                    .to_string()
            })?;
            if n == 0 {
                return Ok(0);
            }
            limits::check_threads(n).map_err(|p| format!("{p}; expected a list like 0,1,15,105"))
        })
        .collect::<Result<Vec<u32>, String>>()?;
    Ok(WatcherList(list))
}

pub(super) fn parse_threads_one(s: &str) -> Result<u32, String> {
    let list = parse_threads(s)?;
    match list.0.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!(
            "expected one number: {}",
            limits::threads_expected()
        )),
    }
}

/// `--live`'s value: empty (any free port on loopback), a port, `:PORT` or `HOST:PORT`; anything
/// else is most likely the profile, taken for the address.
pub(super) fn live_address(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() || s.parse::<u16>().is_ok() || s.contains(':') {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}` is not an address to listen on (HOST:PORT, :PORT or a port); the profile goes before --live, or write --live=ADDR"
        ))
    }
}

pub(super) fn parse_threads(s: &str) -> Result<ThreadList, String> {
    let list = s
        .split(',')
        .map(|one| {
            let n = one
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("expected {}", limits::threads_expected()))?;
            limits::check_threads(n)
                .map_err(|p| format!("{p}; expected {}", limits::threads_expected()))
        })
        .collect::<Result<Vec<u32>, String>>()?;
    Ok(ThreadList(list))
}

pub(super) fn parse_loops(s: &str) -> Result<u64, String> {
    let n = s
        .parse::<u64>()
        .map_err(|_| format!("expected {}", limits::loops_expected()))?;
    limits::check_loops(n).map_err(|p| format!("{p}; expected {}", limits::loops_expected()))
}

pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    limits::parse_duration(s)
        .map_err(|p| format!("{p}; expected a duration such as 30s, 5m or 1h30m"))
}

pub(super) fn parse_op_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err("an operation timeout must be more than 0, such as 10s".into());
    }
    Ok(d)
}

pub(super) fn parse_recordcount(s: &str) -> Result<u64, String> {
    let n = s
        .parse::<u64>()
        .map_err(|_| format!("expected {}", limits::preload_expected()))?;
    limits::check_preload(n).map_err(|p| format!("{p}; expected {}", limits::preload_expected()))
}

pub(super) fn parse_rate(s: &str) -> Result<f64, String> {
    let expected = || {
        format!(
            "expected operations per second, a number above 0 ({} to {}), such as 200 or 2.5",
            limits::MIN_RATE,
            limits::MAX_RATE
        )
    };
    s.parse::<f64>()
        .ok()
        .and_then(|r| limits::check_rate(r).ok())
        .ok_or_else(expected)
}

/// `--scale`: a factor of the rates, positive and finite (each rate it makes is checked
/// against the tool's bounds when the plan is built).
pub(super) fn parse_rate_scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(
            "expected a factor above 0 that multiplies every group's rate, such as 2 or 0.5".into(),
        ),
    }
}

pub(super) fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < limits::MIN_INTERVAL {
        return Err(format!(
            "the interval must be at least {}",
            humantime::format_duration(limits::MIN_INTERVAL)
        ));
    }
    Ok(d)
}

pub(super) fn parse_pvalue(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "{s:?} is not a p-value between 0 and 1 (e.g. 0.05)"
        )),
    }
}

/// `5%`, `5` (percent) or `0.05`? A bare number is percent, as in `compare`'s gates.
pub(super) fn parse_percent(s: &str) -> Result<f64, String> {
    let n = s.trim().trim_end_matches('%');
    match n.parse::<f64>() {
        Ok(v) if (0.0..1000.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!("{s:?} is not a percentage (e.g. 5%)")),
    }
}
