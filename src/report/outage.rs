//! The console's account of what went wrong in a run: the faults done, the windows without a
//! successful operation, and the write audit's table per group.

use std::io::Write;

use super::layout::fitted;
use crate::summary::RunResult;

/// Faults, windows and the audit of `run`, each line after `prefix` (`run 2: `); the audit's
/// table within `width` columns (a terminal's) when given, the columns that do not fit left out
/// and named.
pub fn render(
    run: &RunResult,
    prefix: &str,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for f in &run.faults {
        writeln!(out, "{prefix}{}", f.line())?;
        for r in &f.recovery {
            let first = match r.first_success_secs {
                Some(s) => format!("first success after {s:.2}s"),
                None => "no success within the run".to_string(),
            };
            let back = match r.throughput_back_secs {
                Some(s) => format!("back to its {:.0}/s of before after {s:.2}s", r.rate_before),
                None => format!(
                    "not back to its {:.0}/s of before within the run",
                    r.rate_before
                ),
            };
            writeln!(out, "{prefix}  {}: {first}; throughput {back}", r.label)?;
        }
    }
    for w in &run.unavailable {
        writeln!(out, "{prefix}{}", w.line())?;
    }
    let Some(a) = &run.audit else { return Ok(()) };
    if !a.finished {
        writeln!(out, "{prefix}{}", a.line())?;
        return Ok(());
    }
    let t = &a.total;
    if t.acknowledged + t.in_doubt + t.increments_in_doubt == 0 {
        let invariants = if run.invariants.is_empty() {
            ""
        } else {
            "; the collections' invariants above are its check"
        };
        writeln!(out, "{prefix}audit: no write of this run is one the audit can check (built-in inserts, removes and $inc, a template's inserts){invariants}")?;
        return Ok(());
    }
    writeln!(out, "{prefix}Write audit (what the server kept of the acknowledged writes; audit.tsv lists every one lost):")?;
    let mut lines = vec![[
        "Group",
        "Write concern",
        "Acknowledged",
        "Lost",
        "In doubt",
        "present",
        "absent",
        "Deletes",
        "Back",
        "Increments",
        "Lost updates",
        "Phantom",
    ]
    .map(String::from)
    .to_vec()];
    // Groups that wrote nothing the audit can check (reads) have no row.
    let wrote = |g: &&crate::audit::AuditGroup| {
        g.acknowledged + g.in_doubt + g.increments_in_doubt > 0
            || g.write_concern.contains("not audited")
    };
    for g in a
        .groups
        .iter()
        .filter(wrote)
        .chain(std::iter::once(&a.total))
    {
        let n = |v: u64| v.to_string();
        lines.push(vec![
            g.group.clone(),
            g.write_concern.clone(),
            n(g.acknowledged),
            n(g.lost),
            n(g.in_doubt),
            n(g.in_doubt_present),
            n(g.in_doubt_absent),
            n(g.deletes),
            n(g.back),
            n(g.increments),
            n(g.lost_updates),
            n(g.phantom),
        ]);
    }
    // The least telling columns go first on a narrow terminal (the counts of what was lost
    // last); summary.json has them all.
    let dropped = [
        "present",
        "absent",
        "Deletes",
        "Increments",
        "In doubt",
        "Write concern",
        "Phantom",
        "Back",
    ];
    fitted(&lines, &[0, 1], width, &dropped, "summary.json", out)?;
    for g in &a.groups {
        if !g.lost_ids.is_empty() {
            writeln!(
                out,
                "{prefix}{}: lost _ids {}{}",
                g.group,
                g.lost_ids.join(", "),
                if g.lost > g.lost_ids.len() as u64 {
                    format!(" and {} more (audit.tsv)", g.lost - g.lost_ids.len() as u64)
                } else {
                    String::new()
                }
            )?;
        }
    }
    if t.not_kept() > 0 {
        writeln!(
            out,
            "{prefix}the server did not keep {} acknowledged writes ({} inserts lost, {} deletes back, {} increments lost): exit 5",
            t.not_kept(),
            t.lost,
            t.back,
            t.lost_updates
        )?;
    } else {
        writeln!(
            out,
            "{prefix}every acknowledged write the audit can check was kept ({} checked in {:.2}s)",
            t.acknowledged, a.secs
        )?;
    }
    Ok(())
}
