//! `mongo-stress merge DIR... --out DIR`: read and check the parts, merge them, write the same
//! files a run writes (summary.tsv/json, resources, latency.hlog, run.json, report.html) plus
//! `parts.tsv`, and show the summary with the parts table.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::merge::{self, intervals, Merged};
use crate::report;
use crate::rundir::{self, File};

/// Merges, showing the summary as wide as a terminal on stdout (everything in a pipe).
pub fn merge(dirs: &[PathBuf], out: &Path, allow_missing: bool) -> Result<i32, Error> {
    merge_shown(dirs, out, allow_missing, false)
}

/// `merge`; `wide`: every column of the summary table on a terminal too (`--wide`).
pub(crate) fn merge_shown(
    dirs: &[PathBuf],
    out: &Path,
    allow_missing: bool,
    wide: bool,
) -> Result<i32, Error> {
    merge_told(dirs, out, (allow_missing, Some(wide)), |_| {}).map(|s| s.exit_code())
}

/// `merge_shown`, with what the merge's caller knows of the parts told to the summary
/// (`tell`) before it is written: a coordinator's clocks and losses. The summary table is
/// shown when `show` says how wide (a series' step is not shown); the merged summary is the
/// answer.
pub(crate) fn merge_told(
    dirs: &[PathBuf],
    out: &Path,
    (allow_missing, show): (bool, Option<bool>),
    tell: impl FnOnce(&mut crate::summary::Summary),
) -> Result<crate::summary::Summary, Error> {
    let (parts, merged) = merge::merge(dirs, allow_missing)?;
    if parts.iter().any(|p| same_dir(&p.path, out)) {
        return Err(Error::Usage(format!(
            "--out {} is one of the parts\n  fix: write the merged run to a directory of its own, e.g. --out results/merged",
            out.display()
        )));
    }
    // A directory merged into before: none of its files may outlive this merge.
    let others = crate::rundir::fresh::others_in(out);
    if out.is_file() || !others.is_empty() {
        return Err(Error::Usage(format!(
            "--out {} {}: the merged run written into it would mix with what is there\n  fix: choose a new directory with --out (it is created), or an earlier merge's",
            out.display(),
            match others.as_slice() {
                _ if out.is_file() => "is a file, not a directory".to_string(),
                [one] => format!("already holds `{one}`"),
                more => format!("already holds {} files or directories that are not a run's", more.len()),
            }
        )));
    }
    rundir::clear_optional(out);
    // A genny run's rollups, which a merge does not write: none may outlive this merge.
    let _ = std::fs::remove_file(out.join("rollups.json"));
    std::fs::create_dir_all(out).map_err(|e| {
        Error::Usage(format!(
            "cannot use {} as the merged run's directory: {e}\n  fix: choose a writable directory with --out",
            out.display()
        ))
    })?;
    let Merged {
        mut summary,
        resources,
        run_info,
    } = merged;
    let logs: Vec<PathBuf> = parts.iter().filter_map(|p| p.hlog.clone()).collect();
    if logs.len() == parts.len() {
        // `check` refused any part without it.
        let length = parts[0]
            .run_info
            .hdr_interval()
            .unwrap_or(std::time::Duration::from_secs(1));
        intervals::merge(&logs, length, &File::LatencyHlog.path(out), &summary.tool)?;
    } else if !logs.is_empty() {
        summary.failures.push(format!(
            "latency.hlog not merged: {} of {} parts have one (the merged intervals would miss load)",
            logs.len(),
            parts.len()
        ));
        summary.refresh_on(&[], false, 1, 1);
    }
    tell(&mut summary);
    if let Some(r) = &resources {
        let hosts: Vec<String> = r.rows.first().map_or(Vec::new(), |row| {
            row.hosts.iter().map(|h| h.host.to_string()).collect()
        });
        rundir::ResourcesFile::write_all(
            &File::Resources.path(out),
            &hosts,
            &r.columns,
            r.rows.iter().zip(r.part_cpu.iter().map(Vec::as_slice)),
        )?;
    }
    // Every part sampled the same deployment's members: part 0's file stands for them (as its
    // runs[].members and topology do in the merged summary).
    if let Some(from) = parts
        .first()
        .map(|p| File::Members.path(&p.path))
        .filter(|p| p.exists())
    {
        std::fs::copy(&from, File::Members.path(out)).map_err(|source| Error::Output {
            path: File::Members.path(out),
            source,
        })?;
    }
    super::session::write_summaries(out, &summary)?;
    report::write_to(&File::Parts.path(out), &summary, report::parts::render_tsv)?;
    rundir::write_run_info(out, &run_info)?;
    super::report::write(out, None)?;
    if let Some(wide) = show {
        let width = report::layout::console_width(&std::io::stdout(), wide);
        let mut stdout = std::io::stdout().lock();
        report::table::render_within(&summary, width, &mut stdout).ok();
        writeln!(
            stdout,
            "merged {} parts into {}",
            parts.len(),
            out.display()
        )
        .ok();
    }
    Ok(summary)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
