//! `latency.hlog` read back: the interval statistics per series and the activity comments.

use std::collections::BTreeMap;

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

/// One interval of one series of the interval log, as numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalStats {
    /// Seconds since the log's BaseTime.
    pub start: f64,
    pub length: f64,
    pub count: u64,
    /// Milliseconds.
    pub(crate) mean: f64,
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) p999: f64,
    pub(crate) max: f64,
}

/// One group in one interval, from the `[Activity ...]` comments.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityStats {
    pub start: f64,
    pub length: f64,
    pub users: u32,
    pub(crate) errors: u64,
}

type Parsed = (
    f64,
    BTreeMap<String, Vec<IntervalStats>>,
    BTreeMap<String, Vec<ActivityStats>>,
);

/// The interval log's BaseTime, statistics per tag, and activity per group.
pub fn parse_hlog(text: &str) -> Result<Parsed, String> {
    let base = text
        .lines()
        .find_map(|l| l.strip_prefix("#[BaseTime: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or("no #[BaseTime: ...] header (not written by mongo-stress?)")?;
    if !text.ends_with('\n') {
        return Err("its last line is cut off (the file is truncated)".into());
    }
    // Parse the lines first (cheap), then decode the histograms on every core.
    let mut entries = Vec::new();
    for (i, entry) in IntervalLogIterator::new(text.as_bytes()).enumerate() {
        let entry = entry.map_err(|e| format!("entry {} cannot be read ({e:?})", i + 1))?;
        if let LogEntry::Interval(h) = entry {
            entries.push(h);
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = entries.len().div_ceil(threads).max(1);
    let decoded: Vec<Result<Vec<IntervalStats>, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(stats).collect()))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("decoding panicked".into())))
            .collect()
    });
    let mut intervals: BTreeMap<String, Vec<IntervalStats>> = BTreeMap::new();
    let mut all = entries.iter();
    for part in decoded {
        for st in part? {
            let h = all.next().expect("one entry per result");
            let tag = h.tag().map_or("", |t| t.as_str()).to_string();
            intervals.entry(tag).or_default().push(st);
        }
    }
    let mut activity: BTreeMap<String, Vec<ActivityStats>> = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("#[Activity ") else {
            continue;
        };
        let rest = rest.trim_end_matches(']');
        let (times, groups) = rest
            .split_once(": ")
            .ok_or_else(|| format!("a malformed activity line: {line}"))?;
        let mut t = times.split_whitespace().map(|v| v.parse::<f64>());
        let (Some(Ok(start)), Some(Ok(length))) = (t.next(), t.next()) else {
            return Err(format!("a malformed activity line: {line}"));
        };
        for g in groups.split_whitespace() {
            let parsed = g.rsplit_once('=').and_then(|(tag, v)| {
                let (users, errors) = v.split_once('/')?;
                Some((tag, users.parse().ok()?, errors.parse().ok()?))
            });
            let Some((tag, users, errors)) = parsed else {
                return Err(format!("a malformed activity entry `{g}` in: {line}"));
            };
            activity
                .entry(tag.to_string())
                .or_default()
                .push(ActivityStats {
                    start,
                    length,
                    users,
                    errors,
                });
        }
    }
    Ok((base, intervals, activity))
}

/// One interval line's numbers.
fn stats(
    h: &hdrhistogram::serialization::interval_log::IntervalLogHistogram,
) -> Result<IntervalStats, String> {
    let broken = |e: String| {
        format!(
            "the histogram of {} at {:?}: {e}",
            h.tag().map_or("", |t| t.as_str()),
            h.start_timestamp()
        )
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(h.encoded_histogram())
        .map_err(|e| broken(format!("not base64: {e}")))?;
    let hist: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| broken(format!("not an HdrHistogram V2 payload: {e:?}")))?;
    let ms = |q: f64| crate::metrics::timing::quantile_ms(&hist, q);
    Ok(IntervalStats {
        start: h.start_timestamp().as_secs_f64(),
        length: h.duration().as_secs_f64(),
        count: hist.len(),
        mean: hist.mean() / 1000.0,
        p50: ms(0.5),
        p90: ms(0.9),
        p99: ms(0.99),
        p999: ms(0.999),
        max: ms(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_comments_and_intervals_are_read_back() {
        let mut h = crate::metrics::new_histogram();
        for v in [1000u64, 2000, 3000, 4000] {
            h.record(v).unwrap();
        }
        let text = format!(
            "#[BaseTime: 100.000 (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\nTag=ins,1.000,1.000,4.000,{}\n#[Activity 1.000 1.000: ins=4/1 find=2/0]\n",
            crate::metrics::encode(&h)
        );
        let (base, intervals, activity) = parse_hlog(&text).unwrap();
        assert_eq!(base, 100.0);
        let i = &intervals["ins"][0];
        // HdrHistogram reports the highest value equivalent to 4000 us at 3 digits.
        assert_eq!((i.count, i.p50, i.max), (4, 2.0, 4.001));
        assert_eq!(activity["find"][0].users, 2);
        assert_eq!(activity["ins"][0].errors, 1);
        assert!(parse_hlog(&text[..text.len() - 1])
            .unwrap_err()
            .contains("truncated"));
    }
}
