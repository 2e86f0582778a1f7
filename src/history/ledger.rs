//! The TSV file `run --tsv FILE --append` grows, a night's rows at a time: each row a summary
//! row as `summary.tsv` has it, after the run's own columns (`LEAD`: its directory, start time,
//! tags, profile, plan and which `--repeat` run), and before two resource columns (`TAIL`).
//! `report::tsv::append` writes it; `read` here reads it back, each column by its name.

use std::collections::BTreeMap;
use std::path::Path;

use super::input::{Means, RunRecord};
use super::HistoryMetric;
use crate::error::Error;

/// The columns before the summary's.
pub(crate) const LEAD: [&str; 6] = ["Run", "Time", "Tags", "Profile", "Plan", "Repeat"];
/// The columns after the summary's: the row's stage's server CPU per operation and client CPU.
pub(crate) const TAIL: [&str; 2] = ["Server CPU us/op", "Client CPU %"];

/// The summary columns history reads, by name.
const READ: [(&str, HistoryMetric); 7] = [
    ("Throughput", HistoryMetric::Throughput),
    ("Median", HistoryMetric::P50),
    ("90% Line", HistoryMetric::P90),
    ("99% Line", HistoryMetric::P99),
    ("Error %", HistoryMetric::ErrorPct),
    ("Server CPU us/op", HistoryMetric::ServerCpuPerOp),
    ("Client CPU %", HistoryMetric::ClientCpu),
];

/// Tags as one cell: `k=v,k=v`, in key order.
pub(crate) fn tags_cell(tags: &BTreeMap<String, String>) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A `--tag KEY=VALUE`: a key of letters, digits, `_`, `-` and `.`; a value without a tab, a
/// line break or a comma (the file's separators).
pub(crate) fn parse_tag(text: &str) -> Result<(String, String), String> {
    let (k, v) = text.split_once('=').ok_or_else(|| {
        format!("--tag {text:?} is not KEY=VALUE\n  fix: e.g. --tag commit=abc123")
    })?;
    let key_ok = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !key_ok {
        return Err(format!(
            "--tag {text:?}: the key {k:?} must be letters, digits, '_', '-' or '.'\n  fix: e.g. --tag commit=abc123"
        ));
    }
    if v.contains(['\t', '\n', '\r', ',']) {
        return Err(format!(
            "--tag {text:?}: a value cannot hold a tab, a line break or a comma\n  fix: give it without them (two tags for two values)"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

fn bad(path: &Path, why: String) -> Error {
    Error::Usage(format!(
        "{} is not a file `run --tsv FILE --append` wrote: {why}\n  fix: give run directories, or the file such runs appended to (its header begins {})",
        path.display(),
        LEAD.join(" ")
    ))
}

/// The runs in the file: one per Run and Time of its first `--repeat` run, the repeats averaged.
pub fn read(path: &Path) -> Result<Vec<RunRecord>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| bad(path, e.to_string()))?;
    let (header, rows) = crate::rundir::tsv_rows(&text).map_err(|e| bad(path, e))?;
    if header.len() < LEAD.len() || header[..LEAD.len()] != LEAD {
        return Err(bad(
            path,
            format!(
                "its header begins {:?}",
                header.iter().take(6).collect::<Vec<_>>()
            ),
        ));
    }
    let col = |name: &str| header.iter().position(|h| *h == name);
    let label = col("Label").ok_or_else(|| bad(path, "it has no Label column".into()))?;
    let metrics: Vec<(usize, HistoryMetric)> = READ
        .iter()
        .filter_map(|(name, m)| col(name).map(|i| (i, *m)))
        .collect();
    // Each run: its record, and its rows' values added up.
    let mut out: Vec<(RunRecord, Means)> = Vec::new();
    let mut current: Option<usize> = None;
    for (n, cells) in rows.iter().enumerate() {
        let line = n + 2;
        let repeat: u32 = cells[5].parse().map_err(|_| {
            bad(
                path,
                format!("line {line}: Repeat {:?} is not a number", cells[5]),
            )
        })?;
        // Another Run, or repeat 1 at another Time, begins a run; repeats after it belong to it.
        let starts = match current {
            None => true,
            Some(i) => out[i].0.id != cells[0] || (repeat <= 1 && out[i].0.started_at != cells[1]),
        };
        if starts {
            let tags = parse_tags(cells[2]).map_err(|e| bad(path, format!("line {line}: {e}")))?;
            let report = Path::new(cells[0]).join("report.html");
            // Link the run's report only while its directory still holds that run.
            let same =
                crate::rundir::RunDir::read(Path::new(cells[0]), crate::rundir::Depth::Summaries)
                    .ok()
                    .is_some_and(|d| {
                        d.summary
                            .runs
                            .first()
                            .is_some_and(|r| r.started_at == cells[1])
                    });
            out.push((
                RunRecord {
                    id: cells[0].to_string(),
                    started_at: cells[1].to_string(),
                    epoch: crate::rundir::epoch_secs(cells[1]),
                    tags,
                    profile: cells[3].to_string(),
                    plan: cells[4].to_string(),
                    report: (same && report.is_file()).then_some(report),
                    values: BTreeMap::new(),
                },
                Means::default(),
            ));
            current = Some(out.len() - 1);
        }
        let means = &mut out[current.unwrap_or(0)].1;
        for (c, m) in &metrics {
            means.add(cells[label], *m, cells[*c].parse::<f64>().ok());
        }
    }
    Ok(out
        .into_iter()
        .map(|(r, means)| RunRecord {
            values: means.means(),
            ..r
        })
        .collect())
}

fn parse_tags(cell: &str) -> Result<BTreeMap<String, String>, String> {
    cell.split(',')
        .filter(|t| !t.is_empty())
        .map(|t| parse_tag(t).map_err(|e| e.lines().next().unwrap_or("").to_string()))
        .collect()
}
