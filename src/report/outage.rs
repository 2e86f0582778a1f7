//! The console's account of what went wrong in a run: the faults done, the windows without a
//! successful operation, and the write audit's table per group.

use std::io::Write;

use super::layout::fitted;
use crate::summary::RunResult;

/// Each fault of `run`, and how each group recovered from it.
fn faults(run: &RunResult, prefix: &str, out: &mut dyn Write) -> std::io::Result<()> {
    for f in &run.faults {
        writeln!(out, "{prefix}{}", f.line())?;
        for r in &f.recovery {
            let first = match r.first_success_secs {
                Some(s) => format!("first success after {s:.2}s"),
                None => "no success within the run".to_string(),
            };
            let back = match r.throughput_back_secs {
                Some(s) => format!("back to its {:.0}/s of before after {s:.2}s", r.rate_before),
                // No success in the whole seconds before it (a fault in the run's first
                // seconds, whose first is partial and left out; a group not started yet).
                None if r.rate_before == 0.0 => {
                    "not compared: nothing succeeded in a whole second before it".to_string()
                }
                None => format!(
                    "not back to its {:.0}/s of before within the run",
                    r.rate_before
                ),
            };
            writeln!(out, "{prefix}  {}: {first}; throughput {back}", r.label)?;
        }
    }
    Ok(())
}

/// The audit's table: a row per group that wrote what the audit checks, and the total.
fn audit_lines(a: &crate::summary::audit::AuditResult) -> Vec<Vec<String>> {
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
    lines
}

/// Faults, windows and the audit of `run`, each line after `prefix` (`run 2: `); the audit's
/// table within `width` columns (a terminal's) when given, the columns that do not fit left out
/// and named.
pub(crate) fn render(
    run: &RunResult,
    prefix: &str,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    faults(run, prefix, out)?;
    for w in &run.unavailable {
        writeln!(out, "{prefix}{}", w.line())?;
    }
    streams(run, prefix, width, out)?;
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
    let lines = audit_lines(a);
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

/// Each watch group's delivery: a table of its counts (summed over listeners), its resumes,
/// and what went wrong in words.
fn streams(
    run: &RunResult,
    prefix: &str,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if run.streams.is_empty() {
        return Ok(());
    }
    writeln!(out, "{prefix}Change streams (each write this run made, per listener; its row above is the lag; changes.tsv lists every event and every missing one):")?;
    let mut lines = vec![[
        "Group",
        "Scope",
        "Listeners",
        "Expected",
        "Delivered",
        "Missing",
        "Duplicated",
        "Out of order",
        "Late",
        "Other",
        "Resumes",
    ]
    .map(String::from)
    .to_vec()];
    let n = |v: u64| v.to_string();
    for s in &run.streams {
        lines.push(vec![
            s.group.clone(),
            s.scope.clone(),
            s.listeners.to_string(),
            s.expected.map_or("-".into(), n),
            n(s.delivered),
            if s.not_judged.is_some() {
                "-".into()
            } else {
                n(s.missing)
            },
            n(s.duplicated),
            n(s.out_of_order),
            n(s.late),
            n(s.other),
            s.resumes.len().to_string(),
        ]);
    }
    fitted(
        &lines,
        &[0, 1],
        width,
        &["Other", "Late", "Scope"],
        "summary.json",
        out,
    )?;
    for s in &run.streams {
        if let Some(why) = &s.not_judged {
            writeln!(
                out,
                "{prefix}{}: Expected and Missing not judged: {why}",
                s.group
            )?;
        }
        for r in &s.resumes {
            writeln!(
                out,
                "{prefix}{}: listener {} resumed after {} ms at {} ({}); {} events sent again, {} writes missing from before it and {} from after",
                s.group,
                r.listener,
                r.took_ms,
                humantime::format_rfc3339_millis(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(r.at_ms)
                ),
                r.error,
                r.replayed,
                r.missing_before,
                r.missing_after
            )?;
        }
        if let Some(t) = s.trouble() {
            writeln!(out, "{prefix}{t}")?;
        }
    }
    Ok(())
}
