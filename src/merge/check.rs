//! Which directories can be merged: parts of one run (same profile, seed and part count, one
//! directory per index, none missing unless allowed), each named when it does not fit.

use super::PartDir;
use crate::error::Error;

fn usage(what: String, fix: &str) -> Error {
    Error::Usage(format!("{what}\n  fix: {fix}"))
}

fn describe(p: &PartDir) -> String {
    let groups: Vec<String> = p
        .summary
        .groups
        .iter()
        .map(|g| match (g.loops, g.duration_secs) {
            (Some(l), _) => format!("{} x{l} loops", g.name),
            (_, Some(d)) => format!("{} for {d} s", g.name),
            _ => g.name.clone(),
        })
        .collect();
    groups.join(", ")
}

/// Sorts the parts by index and refuses what does not belong together.
pub(super) fn belong_together(parts: &mut [PartDir], allow_missing: bool) -> Result<(), Error> {
    let Some(first) = parts.first() else {
        return Err(usage(
            "merge needs the run directories of the parts".into(),
            "name each part's directory, e.g. mongo-stress merge results/part-* --out results/merged",
        ));
    };
    if let Some(p) = parts.iter().find(|p| p.summary.part.is_none()) {
        return Err(usage(
            format!(
                "{} is a whole run, not a part (it ran without --part or --parts)",
                p.path.display()
            ),
            "merge joins the parts of one run; to set two whole runs side by side, use mongo-stress compare",
        ));
    }
    let count = first.summary.part.map_or(0, |p| p.count);
    for p in parts.iter() {
        same_plan(first, p)?;
        same_timing(first, p)?;
    }
    parts.sort_by_key(PartDir::index);
    if parts.len() == count as usize {
        each_ran_its_share(parts)?;
    }
    each_index_once(parts, count)?;
    none_missing(parts, count, allow_missing)
}

/// The refusal of `first` and `p` as parts of one run: they differ in `what`, `a` and `b`.
fn not_one_run(first: &PartDir, p: &PartDir, what: &str, a: String, b: String) -> Error {
    usage(
        format!(
            "{} and {} are not parts of one run: {what} {a} and {b}",
            first.path.display(),
            p.path.display()
        ),
        "merge only the directories of one run (same profile, --seed and --parts)",
    )
}

/// Refuses part `p` unless it ran what `first` ran: the same profile, seed, split, groups and
/// target.
fn same_plan(first: &PartDir, p: &PartDir) -> Result<(), Error> {
    let differs = |what: &str, a: String, b: String| not_one_run(first, p, what, a, b);
    let profile_text = |p: &PartDir| p.run_info.profile.text.clone();
    let (name, text) = (first.summary.profile.clone(), profile_text(first));
    let count = first.summary.part.map_or(0, |p| p.count);
    if p.summary.profile != name || profile_text(p) != text {
        return Err(differs(
            "they ran different profiles:",
            format!("`{name}`"),
            format!(
                "`{}`{}",
                p.summary.profile,
                if p.summary.profile == name {
                    " (edited)"
                } else {
                    ""
                }
            ),
        ));
    }
    if p.summary.seed != first.summary.seed {
        return Err(differs(
            "they ran with different seeds:",
            first.summary.seed.to_string(),
            p.summary.seed.to_string(),
        ));
    }
    let n = p.summary.part.map_or(0, |x| x.count);
    if n != count {
        return Err(differs(
            "they are parts of different splits:",
            format!("{count} parts"),
            format!("{n} parts"),
        ));
    }
    let shape = |x: &PartDir| {
        x.summary
            .groups
            .iter()
            .map(|g| {
                (
                    g.name.clone(),
                    g.stage.clone(),
                    g.op.clone(),
                    g.loops,
                    g.duration_secs,
                )
            })
            .collect::<Vec<_>>()
    };
    if shape(p) != shape(first) {
        return Err(differs(
            "their groups differ (names, stages, loops or duration: --loops, --duration):",
            describe(first),
            describe(p),
        ));
    }
    let target = |x: &PartDir| x.run_info.plan.target.clone();
    if target(p) != target(first) {
        let shown = |x: &PartDir| serde_json::to_string(&target(x)).unwrap_or_default();
        return Err(differs(
            "they loaded different targets:",
            shown(first),
            shown(p),
        ));
    }
    Ok(())
}

/// Refuses part `p` unless its runs line up with `first`'s: the same interval length, the same
/// start, and as many runs, each with rows.
fn same_timing(first: &PartDir, p: &PartDir) -> Result<(), Error> {
    let differs = |what: &str, a: String, b: String| not_one_run(first, p, what, a, b);
    let length = |x: &PartDir| x.run_info.hdr_interval();
    if length(p).is_none() {
        return Err(super::bad(
            &p.path,
            "its run.json does not record the length of its interval histograms (hdr_interval_secs: an older mongo-stress wrote it; run the parts again with this one)",
        ));
    }
    if length(p) != length(first) {
        return Err(differs(
            "their interval histograms have different lengths (--hdr-interval):",
            format!("{:?}", length(first)),
            format!("{:?}", length(p)),
        ));
    }
    let start = |x: &PartDir| {
        x.summary
            .runs
            .first()
            .and_then(|r| r.start.as_ref())
            .map(|s| s.at.clone())
    };
    if start(p) != start(first) {
        return Err(differs(
            "they began at different instants (each part takes part 0's; these are of different runs):",
            start(first).unwrap_or_else(|| "-".into()),
            start(p).unwrap_or_else(|| "-".into()),
        ));
    }
    if let Some(r) = p.summary.runs.iter().find(|r| r.rows.is_empty()) {
        return Err(super::bad(
            &p.path,
            format!("summary.json run {} has no rows", r.run),
        ));
    }
    if p.summary.runs.len() != first.summary.runs.len() {
        return Err(differs(
            "they hold different numbers of runs (--repeat, or an interrupted part):",
            first.summary.runs.len().to_string(),
            p.summary.runs.len().to_string(),
        ));
    }
    Ok(())
}

/// Refuses a part that did not run its share of the whole run's threads (a part run with its
/// own --threads); `parts` holds every part.
fn each_ran_its_share(parts: &[PartDir]) -> Result<(), Error> {
    let names: Vec<String> = parts[0]
        .summary
        .groups
        .iter()
        .map(|g| g.name.clone())
        .collect();
    for (i, name) in names.iter().enumerate() {
        let total: u32 = parts.iter().map(|p| p.summary.groups[i].threads).sum();
        if let Some(p) = parts.iter().find(|p| {
            p.summary
                .part
                .is_some_and(|x| x.share(total) != p.summary.groups[i].threads)
        }) {
            return Err(usage(
                format!(
                    "{} ran {} users of group `{}`, not its share of the parts' {total} (another --threads?)",
                    p.path.display(),
                    p.summary.groups[i].threads,
                    name
                ),
                "merge only the directories of one run, every part run with the same command line",
            ));
        }
    }
    Ok(())
}

/// Refuses two directories of the same part index; `parts` is sorted by index.
fn each_index_once(parts: &[PartDir], count: u32) -> Result<(), Error> {
    for w in parts.windows(2) {
        if w[0].index() == w[1].index() {
            return Err(usage(
                format!(
                    "{} and {} are both part {} of {count}",
                    w[0].path.display(),
                    w[1].path.display(),
                    w[0].index()
                ),
                "give each part once (each JOB_COMPLETION_INDEX, or --part I/N, once)",
            ));
        }
    }
    Ok(())
}

/// Refuses a run with parts missing among its `count`, unless `allow_missing`.
fn none_missing(parts: &[PartDir], count: u32, allow_missing: bool) -> Result<(), Error> {
    let missing: Vec<String> = (0..count)
        .filter(|i| !parts.iter().any(|p| p.index() == *i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() && !allow_missing {
        return Err(usage(
            format!(
                "part{} {} of {count} {} missing (merging {} of {count})",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                if missing.len() > 1 { "are" } else { "is" },
                parts.len()
            ),
            "add the missing parts' directories, or pass --allow-missing to merge what there is (the result then has less load than the run had)",
        ));
    }
    Ok(())
}
