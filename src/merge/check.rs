//! Which directories can be merged: parts of one run (same profile, seed and part count, one
//! directory per index, none missing unless allowed), each named when it does not fit.

use super::PartDir;
use crate::error::Error;

fn usage(what: String, fix: &str) -> Error {
    Error::Usage(format!("{what}\n  fix: {fix}"))
}

/// Sorts the parts by index and refuses what does not belong together.
pub fn belong_together(parts: &mut [PartDir], allow_missing: bool) -> Result<(), Error> {
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
    let profile_text = |p: &PartDir| p.run_info["profile"]["text"].as_str().map(str::to_owned);
    let (name, text) = (first.summary.profile.clone(), profile_text(first));
    let count = first.summary.part.map_or(0, |p| p.count);
    for p in parts.iter() {
        let differs = |what: &str, a: String, b: String| {
            usage(
                format!(
                    "{} and {} are not parts of one run: {what} {a} and {b}",
                    first.path.display(),
                    p.path.display()
                ),
                "merge only the directories of one run (same profile, --seed and --parts)",
            )
        };
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
        if p.summary.runs.len() != first.summary.runs.len() {
            return Err(differs(
                "they hold different numbers of runs (--repeat, or an interrupted part):",
                first.summary.runs.len().to_string(),
                p.summary.runs.len().to_string(),
            ));
        }
    }
    parts.sort_by_key(PartDir::index);
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
