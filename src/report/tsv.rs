//! `summary.tsv`: the summary columns, one row per group per run; a `Run` column first when
//! there is more than one run.

use std::io::Write;

use super::columns::{cells, COLUMNS};
use crate::summary::Summary;

pub(crate) fn render(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    let with_run = s.runs.len() > 1;
    if with_run {
        write!(out, "Run\t")?;
    }
    writeln!(out, "{}", COLUMNS.join("\t"))?;
    for run in &s.runs {
        for row in &run.rows {
            if with_run {
                write!(out, "{}\t", run.run)?;
            }
            writeln!(out, "{}", line(row))?;
        }
    }
    Ok(())
}

/// Rows alone, as `summary.tsv` writes a run's (the live page's table while the run goes).
pub(crate) fn render_rows(
    rows: &[crate::metrics::Row],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "{}", COLUMNS.join("\t"))?;
    for row in rows {
        writeln!(out, "{}", line(row))?;
    }
    Ok(())
}

/// A row's cells, tab-separated, none holding a tab or a line break.
fn line(row: &crate::metrics::Row) -> String {
    let cells: Vec<String> = cells(row)
        .into_iter()
        .map(|c| c.replace(['\t', '\n'], " "))
        .collect();
    cells.join("\t")
}

/// `thresholds.tsv`: one row per threshold per run.
pub(crate) fn render_thresholds(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "Run\tThreshold\tValue\tLimit\tUnit\tResult")?;
    for run in &s.runs {
        for t in &run.thresholds {
            writeln!(
                out,
                "{}\t{}\t{:.3}\t{:.3}\t{}\t{}",
                run.run,
                t.threshold.replace(['\t', '\n'], " "),
                t.value,
                t.limit,
                t.unit,
                if t.deferred {
                    "merge"
                } else if t.pass {
                    "pass"
                } else {
                    "fail"
                }
            )?;
        }
    }
    Ok(())
}

/// `audit.tsv`: every acknowledged write the audit found not kept (and every phantom
/// increment), one line each, per run.
pub(crate) fn render_audit(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", crate::audit::TSV_HEADER)?;
    for run in &s.runs {
        for l in &run.audit_lines {
            writeln!(out, "{}", l.tsv(run.run))?;
        }
    }
    Ok(())
}

/// `changes.tsv`: every event a listener of a watch group received, and each write one never
/// saw (`missing`), per run.
pub(crate) fn render_changes(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "run\t{}", crate::summary::streams::CHANGES_HEADER)?;
    for run in &s.runs {
        for l in &run.change_lines {
            writeln!(out, "{}\t{}", run.run, l.tsv())?;
        }
    }
    Ok(())
}

/// Header of `resources-summary.tsv`; empty cells mean "not known here".
pub(crate) const RESOURCES_HEADER: &str = "Run\tLabel\tSeconds\tClient ops/s\tServer ops/s avg\tServer ops/s peak\tServer CPU % avg\tServer CPU % peak\tIOPS avg\tIOPS peak\tDisk write KB/s avg\tDisk write KB/s peak\tClient CPU % avg\tClient CPU % peak\tClient RSS MB peak\tWarning\tServer CPU source\tDisk source\tClient wait ms/s avg\tClient lag ms avg\tClient lag ms peak\tServer read us avg\tServer write us avg";

/// `resources-summary.tsv`: one row per stage of each run.
pub(crate) fn render_resources(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{RESOURCES_HEADER}")?;
    let f = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.2}"));
    for r in &s.resources {
        let cells = [
            r.run.to_string(),
            r.label.to_string(),
            r.seconds.to_string(),
            format!("{:.2}", r.client_ops_s),
            f(r.server_ops_s.avg),
            f(r.server_ops_s.peak),
            f(r.server_cpu_pct.avg),
            f(r.server_cpu_pct.peak),
            f(r.iops.avg),
            f(r.iops.peak),
            f(r.disk_write_kbs.avg),
            f(r.disk_write_kbs.peak),
            f(r.client_cpu_pct.avg),
            f(r.client_cpu_pct.peak),
            f(r.client_rss_mb.peak),
            [r.warning.as_deref(), r.starved.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ")
                .replace(['\t', '\n'], " "),
            r.cpu_source.clone().unwrap_or_default(),
            r.disk_source.clone().unwrap_or_default(),
            f(r.client_wait_ms.avg),
            f(r.client_lag_ms.avg),
            f(r.client_lag_ms.peak),
            f(r.server_reads_us.avg),
            f(r.server_writes_us.avg),
        ];
        writeln!(out, "{}", cells.join("\t"))?;
    }
    Ok(())
}

/// `run --tsv FILE --append`: this run's rows added to FILE (made, with its header, when it is
/// not there), each after the run's directory, start time, tags, profile, plan and repeat, and
/// before its stage's server CPU per operation and client CPU (`history::ledger`). The file is
/// rewritten whole (a temporary sibling, then renamed), so an interruption never cuts it.
pub fn append(
    path: &std::path::Path,
    s: &Summary,
    tags: &std::collections::BTreeMap<String, String>,
    run_dir: &std::path::Path,
) -> Result<(), crate::error::Error> {
    use crate::history::ledger::tags_cell;
    // Two runs appending at once: each reads, adds and renames under this lock, so neither's
    // rows are lost. `FILE.lock` beside the file (the file itself is replaced by the rename).
    let _lock = lock_beside(path)?;
    let mut text = appendable(path)?;
    if text.is_empty() {
        text = format!("{}\n", append_header());
    } else if !text.ends_with('\n') {
        text.push('\n');
    }
    let clean = |c: &str| c.replace(['\t', '\n'], " ");
    let plan = crate::history::plan_words(&s.groups);
    for run in &s.runs {
        for row in &run.rows {
            let (cpu, per_op) = s
                .resources
                .iter()
                .find(|r| r.run == run.run && r.label == row.label)
                .map_or((None, None), crate::history::input::resource_values);
            let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
            text.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                clean(&run_dir.display().to_string()),
                clean(&run.started_at),
                tags_cell(tags),
                clean(&s.profile),
                clean(&plan),
                run.run,
                line(row),
                opt(per_op),
                opt(cpu)
            ));
        }
    }
    crate::rundir::write_atomically(path, text.as_bytes())
}

/// The first line of a file `run --tsv FILE --append` writes.
fn append_header() -> String {
    use crate::history::ledger::{LEAD, TAIL};
    format!(
        "{}\t{}\t{}",
        LEAD.join("\t"),
        COLUMNS.join("\t"),
        TAIL.join("\t")
    )
}

/// The text of the file `--tsv FILE --append` adds to: empty when it does not exist (or is
/// empty); refused when it is another's (its first line is not the header), so that this is
/// checked before any load as well as at the append.
pub fn appendable(path: &std::path::Path) -> Result<String, crate::error::Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(crate::error::Error::Output {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    if !text.is_empty() && text.lines().next() != Some(append_header().as_str()) {
        return Err(crate::error::Error::Usage(format!(
            "--append: {} has not the header of a file `run --tsv FILE --append` writes (its first line differs: another tool's file, or one an older mongo-stress wrote)\n  fix: name a new file, or one earlier runs appended to; history reads several (`mongo-stress history OLD.tsv NEW.tsv`)",
            path.display()
        )));
    }
    Ok(text)
}

/// An exclusive lock on `PATH.lock`, held until the returned file is dropped.
fn lock_beside(path: &std::path::Path) -> Result<std::fs::File, crate::error::Error> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = std::path::PathBuf::from(name);
    let io = |source| crate::error::Error::Output {
        path: lock_path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io)?;
    file.lock().map_err(io)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{ServerInfo, ServerKind, Summary};

    /// The TSV header is a contract: scripts that compare runs parse it.
    #[test]
    fn the_header_is_the_jmeter_aggregate_report_columns_then_ours() {
        let s = Summary {
            schema_version: 1,
            tool: String::new(),
            profile: String::new(),
            origin: String::new(),
            seed: 0,
            server: ServerInfo {
                kind: ServerKind::External,
                version: String::new(),
                uri: String::new(),
            },
            groups: vec![],
            runs: vec![],
            spread: vec![],
            resources: vec![],
            interrupted: false,
            warnings: vec![],
            part: None,
            parts: vec![],
            missing_parts: vec![],
            plans: vec![],
            metrics_sources: vec![],
            member_warnings: Vec::new(),
            failures: vec![],
        };
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Label\t# Samples\tAverage\tMedian\t90% Line\t95% Line\t99% Line\tMin\tMax\tError %\tThroughput\t\
             Received KB/sec\tSent KB/sec\t99.9% Line\tStd. Dev.\tErrors\tMatched\tModified\t\
             Service Average\tService Median\tService 90% Line\tService 99% Line\tService Max\tLate\tMax Behind\tMissed\t\
             Returned\tInserted\tUpdated\tUpserted\tDeleted\tDocs/sec\t\
             Committed\tAborted\tIn Doubt\tRetries\tCommit Retries\n"
        );
    }
}
