//! `mongo-stress merge DIR... --out DIR`: read and check the parts, merge them, write the same
//! files a run writes (summary.tsv/json, resources, latency.hlog, run.json, report.html) plus
//! `parts.tsv`, and show the summary with the parts table.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::merge::{self, intervals, Merged};
use crate::report;

pub fn merge(dirs: &[PathBuf], out: &Path, allow_missing: bool) -> Result<i32, Error> {
    let (parts, merged) = merge::merge(dirs, allow_missing)?;
    if parts.iter().any(|p| same_dir(&p.path, out)) {
        return Err(Error::Usage(format!(
            "--out {} is one of the parts\n  fix: write the merged run to a directory of its own, e.g. --out results/merged",
            out.display()
        )));
    }
    // A directory merged into before: none of its files may outlive this merge.
    for name in [
        "latency.hlog",
        "resources.tsv",
        "resources-summary.tsv",
        "thresholds.tsv",
        "parts.tsv",
        "report.html",
    ] {
        let _ = std::fs::remove_file(out.join(name));
    }
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
        let length = merge::hdr_interval(&parts[0]);
        intervals::merge(&logs, length, &out.join("latency.hlog"), &summary.tool)?;
    } else {
        let _ = std::fs::remove_file(out.join("latency.hlog"));
        if !logs.is_empty() {
            summary.failures.push(format!(
                "latency.hlog not merged: {} of {} parts have one (the merged intervals would miss load)",
                logs.len(),
                parts.len()
            ));
            summary.refresh_on(&[], false, 1, 1);
        }
    }
    if let Some(r) = &resources {
        let hosts: Vec<String> = r.rows.first().map_or(Vec::new(), |row| {
            row.hosts.iter().map(|h| h.host.to_string()).collect()
        });
        let mut text = report::resources::header(&hosts);
        for c in &r.columns {
            text.push('\t');
            text.push_str(c);
        }
        text.push('\n');
        for (row, cells) in r.rows.iter().zip(&r.part_cpu) {
            text.push_str(&report::resources::line(row));
            for c in cells {
                text.push('\t');
                if let Some(v) = c {
                    text.push_str(&format!("{v:.1}"));
                }
            }
            text.push('\n');
        }
        report::write_atomically(&out.join("resources.tsv"), text.as_bytes())?;
    }
    super::session::write_summaries(out, &summary)?;
    report::write_to(&out.join("parts.tsv"), &summary, report::parts::render_tsv)?;
    let info = serde_json::to_vec_pretty(&run_info).map_err(|e| Error::Other(e.into()))?;
    report::write_atomically(&out.join("run.json"), &info)?;
    super::report::write(out, None)?;
    let mut stdout = std::io::stdout().lock();
    report::table::render(&summary, &mut stdout).ok();
    writeln!(
        stdout,
        "merged {} parts into {}",
        parts.len(),
        out.display()
    )
    .ok();
    // An interrupted part is a failure of the merged run (exit 1), not an interruption of the
    // merge (130).
    Ok(if summary.interrupted && summary.failed() {
        crate::error::exit::ERRORS
    } else {
        super::session::exit_code(&summary)
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
