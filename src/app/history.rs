//! `mongo-stress history PATH...`: read the runs, find the change points of each series, print
//! them, write `history.tsv`, `history.json` and `history.html`, and judge `--fail-on-new`
//! (exit 4).

use std::path::{Component, Path, PathBuf};

use crate::cli::HistoryArgs;
use crate::error::{exit, Error};
use crate::history::{self, edivisive, HistoryMetric, Order, Settings};
use crate::report;

pub(crate) fn history(args: HistoryArgs) -> Result<i32, Error> {
    let metrics = if args.metrics.is_empty() {
        HistoryMetric::ALL.to_vec()
    } else {
        let mut m = Vec::new();
        for name in &args.metrics {
            let metric = HistoryMetric::parse(name)?;
            if !m.contains(&metric) {
                m.push(metric);
            }
        }
        m
    };
    let settings = Settings {
        metrics,
        labels: args.labels.clone(),
        search: edivisive::Settings {
            window: args.window as usize,
            pvalue: args.pvalue,
            min_magnitude: args.min_change,
            merge: match args.merge {
                crate::cli::MergeOrder::SmallChanges => edivisive::Merge::SmallChangesFirst,
                crate::cli::MergeOrder::Hunter => edivisive::Merge::Hunter,
            },
        },
        order: args.order_by.clone().map_or(Order::Time, Order::Tag),
    };
    let out = args.out.clone().unwrap_or_else(default_out);
    check_out(&out)?;
    let (records, skipped) = history::read_paths(&args.paths, args.steps)?;
    let mut h = history::analyze(records, &settings)?;
    h.notes.extend(skipped);
    if args.fail_on_new {
        h.gate(args.new_runs as usize);
    }
    std::fs::create_dir_all(&out).map_err(|source| Error::Output {
        path: out.clone(),
        source,
    })?;
    // Each run's report, as the page in `out` reaches it.
    for r in &mut h.runs {
        r.report = r.report.take().map(|p| relative(Path::new(&p), &out));
    }
    let mut console = std::io::stdout().lock();
    let shown = report::history::render(&h, &mut console).and_then(|_| {
        if args.fail_on_new {
            report::history::render_gate(&h, &mut console)
        } else {
            Ok(())
        }
    });
    crate::console::written(shown).map_err(|e| Error::Other(e.into()))?;
    report::write_to(&out.join("history.tsv"), &h, report::history::render_tsv)?;
    report::write_to(&out.join("history.json"), &h, report::history::render_json)?;
    report::write_atomically(
        &out.join("history.html"),
        report::history::render_html(&h).as_bytes(),
    )?;
    outln!("\nwritten: {}", out.join("history.html").display());
    Ok(if h.new_changes.is_empty() {
        exit::OK
    } else {
        exit::THRESHOLD
    })
}

/// The files `history` writes: a directory holding only these (an earlier history, the
/// nightly `--out history/latest`) is written over; one holding anything else is refused.
const OWN: [&str; 3] = ["history.tsv", "history.json", "history.html"];

/// `--out` is new, empty, or an earlier history's: checked before anything is read.
fn check_out(out: &Path) -> Result<(), Error> {
    if !out.exists() {
        return Ok(());
    }
    let refuse = |held: String| {
        Err(Error::Usage(format!(
            "--out {} already holds {held}: history's files written into it would mix with what is there\n  fix: choose a new directory with --out (it is created), or one an earlier history wrote",
            out.display()
        )))
    };
    if !out.is_dir() {
        return refuse("nothing: it is a file, not a directory".into());
    }
    let others: Vec<String> = std::fs::read_dir(out)
        .map_err(|source| Error::Output {
            path: out.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !OWN.contains(&n.as_str()))
        .collect();
    match others.as_slice() {
        [] => Ok(()),
        [one] => refuse(format!("`{one}`")),
        more => refuse(format!(
            "{} files or directories that are not history's",
            more.len()
        )),
    }
}

fn default_out() -> PathBuf {
    PathBuf::from("results").join(format!("history-{}", super::session::now_stamp()))
}

/// `target` as a link from a page in `from`: relative when both resolve, else absolute.
fn relative(target: &Path, from: &Path) -> String {
    let (Ok(t), Ok(f)) = (target.canonicalize(), from.canonicalize()) else {
        return target.display().to_string();
    };
    let (tc, fc): (Vec<Component>, Vec<Component>) =
        (t.components().collect(), f.components().collect());
    let common = tc.iter().zip(&fc).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..fc.len() {
        rel.push("..");
    }
    for c in &tc[common..] {
        rel.push(c);
    }
    rel.to_string_lossy().replace('\\', "/")
}
