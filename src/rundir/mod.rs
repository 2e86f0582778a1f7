//! Reading a finished, interrupted or merged run directory back: `summary.json`, `summary.tsv`,
//! `run.json`, `latency.hlog` (interval statistics and the activity comments) and, when the run
//! sampled them, `resources.tsv` and `resources-summary.tsv`. Everything that looks at a result
//! after the run (the report; later compare and merge) starts here.
//!
//! Owns: file names, parsing, and the error that says which file is missing or broken. Never:
//! re-reads `samples.tsv` (a long run's sample log can be gigabytes) or writes anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::error::Error;

/// One interval of one series of the interval log, as numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalStats {
    /// Seconds since the log's BaseTime.
    pub start: f64,
    pub length: f64,
    pub count: u64,
    /// Milliseconds.
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// One group in one interval, from the `[Activity ...]` comments.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityStats {
    pub start: f64,
    pub length: f64,
    pub users: u32,
    pub errors: u64,
}

/// `resources.tsv`: its columns by name, one value per row (None for an empty cell).
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub columns: BTreeMap<String, Vec<Option<f64>>>,
    /// The word columns (`repl`), by name.
    pub text: BTreeMap<String, Vec<String>>,
}

pub struct RunDir {
    pub path: PathBuf,
    pub summary: serde_json::Value,
    pub summary_tsv: String,
    pub resources_summary_tsv: Option<String>,
    /// A merged run's `parts.tsv`.
    pub parts_tsv: Option<String>,
    pub run_info: serde_json::Value,
    /// Epoch seconds the interval log's timestamps count from.
    pub base_secs: f64,
    /// Per tag, in log order (empty without an interval log).
    pub intervals: BTreeMap<String, Vec<IntervalStats>>,
    /// Per group tag.
    pub activity: BTreeMap<String, Vec<ActivityStats>>,
    pub resources: Option<Resources>,
}

/// A TSV file written whole: every line ends, and every row has the header's cells.
fn check_tsv(text: &str) -> Result<(), String> {
    if !text.ends_with('\n') {
        return Err("is cut off (its last line has no end)".into());
    }
    let mut lines = text.lines();
    let columns = lines.next().ok_or("is empty")?.split('\t').count();
    for (n, l) in lines.enumerate() {
        if l.split('\t').count() != columns {
            return Err(format!(
                "line {} has not the {columns} cells of its header",
                n + 2
            ));
        }
    }
    Ok(())
}

fn bad(dir: &Path, what: String) -> Error {
    Error::Usage(format!(
        "{} is not a usable run directory: {what}\n  fix: give the directory a `mongo-stress run` wrote (its --out), with summary.json, summary.tsv, run.json (and latency.hlog unless it ran with --no-interval-log), written whole",
        dir.display()
    ))
}

fn read(dir: &Path, name: &str) -> Result<String, Error> {
    std::fs::read_to_string(dir.join(name)).map_err(|e| bad(dir, format!("{name}: {e}")))
}

fn json(dir: &Path, name: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(&read(dir, name)?)
        .map_err(|e| bad(dir, format!("{name} is not whole JSON ({e})")))
}

impl RunDir {
    pub fn open(dir: &Path) -> Result<RunDir, Error> {
        if !dir.is_dir() {
            return Err(bad(dir, "no such directory".into()));
        }
        let summary = json(dir, "summary.json")?;
        if summary["schema_version"] != 1 || !summary["runs"].is_array() {
            return Err(bad(
                dir,
                "summary.json is not a mongo-stress summary of schema_version 1".into(),
            ));
        }
        let run_info = json(dir, "run.json")?;
        let summary_tsv = read(dir, "summary.tsv")?;
        check_tsv(&summary_tsv).map_err(|e| bad(dir, format!("summary.tsv {e}")))?;
        // A run with --no-interval-log has no log: its report has the tables, no curves.
        let (base_secs, intervals, activity) =
            match std::fs::read_to_string(dir.join("latency.hlog")) {
                Ok(hlog) => {
                    parse_hlog(&hlog).map_err(|e| bad(dir, format!("latency.hlog: {e}")))?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let started = run_info["started_at"]
                        .as_str()
                        .and_then(|t| humantime::parse_rfc3339(t).ok())
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0.0, |d| d.as_secs_f64());
                    (started, BTreeMap::new(), BTreeMap::new())
                }
                Err(e) => return Err(bad(dir, format!("latency.hlog: {e}"))),
            };
        let resources = match std::fs::read_to_string(dir.join("resources.tsv")) {
            Ok(text) => {
                Some(parse_resources(&text).map_err(|e| bad(dir, format!("resources.tsv: {e}")))?)
            }
            Err(_) => None,
        };
        Ok(RunDir {
            path: dir.to_path_buf(),
            summary,
            summary_tsv,
            resources_summary_tsv: std::fs::read_to_string(dir.join("resources-summary.tsv")).ok(),
            parts_tsv: std::fs::read_to_string(dir.join("parts.tsv")).ok(),
            run_info,
            base_secs,
            intervals,
            activity,
            resources,
        })
    }
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
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
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

pub fn parse_resources(text: &str) -> Result<Resources, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty")?.split('\t').collect();
    if header.first() != Some(&"time_ms") {
        return Err("no time_ms header".into());
    }
    let is_text = |h: &str| crate::monitor::row::TEXT_COLUMNS.contains(&h);
    let mut columns: BTreeMap<String, Vec<Option<f64>>> = header
        .iter()
        .filter(|h| !is_text(h))
        .map(|h| (h.to_string(), Vec::new()))
        .collect();
    let mut text_columns: BTreeMap<String, Vec<String>> = header
        .iter()
        .filter(|h| is_text(h))
        .map(|h| (h.to_string(), Vec::new()))
        .collect();
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split('\t').collect();
        if cells.len() != header.len() {
            // A last line cut off by a crash: the rows before it stand.
            if n > 0 && !text.ends_with('\n') {
                break;
            }
            return Err(format!(
                "line {} has {} cells for {} columns",
                n + 2,
                cells.len(),
                header.len()
            ));
        }
        for (h, c) in header.iter().zip(cells) {
            if let Some(t) = text_columns.get_mut(*h) {
                t.push(c.to_string());
                continue;
            }
            let v = if c.is_empty() {
                None
            } else {
                Some(
                    c.parse::<f64>()
                        .map_err(|_| format!("line {}: `{c}` is not a number", n + 2))?,
                )
            };
            columns.get_mut(*h).expect("a header column").push(v);
        }
    }
    Ok(Resources {
        columns,
        text: text_columns,
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

    #[test]
    fn resources_columns_keep_blanks_as_unknown() {
        let r = parse_resources("time_ms\tiops\n1000\t\n2000\t5.5\n").unwrap();
        assert_eq!(r.columns["iops"], vec![None, Some(5.5)]);
        assert!(parse_resources("time_ms\tiops\n1000\n").is_err());
    }
}
