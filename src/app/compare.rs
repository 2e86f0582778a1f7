//! `mongo-stress compare BASE NEW`: read both run directories (or both sweep directories),
//! refuse runs of different plans (unless --force), compare, print, write --tsv / --json /
//! --html, judge the gates (exit 4).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::compare::sweeps::{self, SweepGate};
use crate::compare::{self, Gate};
use crate::error::{exit, Error};
use crate::report;
use crate::rundir::{RunDir, SweepDir};

pub struct CompareArgs<'a> {
    pub(crate) base: &'a Path,
    pub(crate) new: &'a Path,
    pub(crate) fail_if: &'a [String],
    pub(crate) tsv: Option<&'a PathBuf>,
    pub(crate) json: Option<&'a PathBuf>,
    pub(crate) html: Option<&'a PathBuf>,
    pub(crate) force: bool,
    pub(crate) seed: u64,
}

pub fn compare(a: CompareArgs) -> Result<i32, Error> {
    match (SweepDir::is_sweep(a.base), SweepDir::is_sweep(a.new)) {
        (true, true) => return compare_sweeps(&a),
        (false, false) => {}
        (base_is, _) => {
            let (sweep, run) = if base_is {
                (a.base, a.new)
            } else {
                (a.new, a.base)
            };
            return Err(Error::Usage(format!(
                "{} is a sweep and {} is not: compare two sweeps, or two runs\n  fix: give another sweep's directory, or one of the sweep's steps (under {})",
                sweep.display(),
                run.display(),
                sweep.join("steps").display()
            )));
        }
    }
    let gates = a
        .fail_if
        .iter()
        .map(|g| Gate::parse(g))
        .collect::<Result<Vec<_>, _>>()?;
    let (base, new) = (RunDir::open(a.base)?, RunDir::open(a.new)?);
    let differs = compare::differences(&base, &new);
    if !differs.is_empty() && !a.force {
        return Err(Error::Usage(format!(
            "the runs are not of the same plan: {}\n  fix: compare runs of one profile with the same threads and rates, or pass --force",
            differs.join("; ")
        )));
    }
    let c = compare::compare(&base, &new, &gates, a.seed)?;
    let mut console = console(&a);
    crate::console::written(report::compare::table(&c, &mut console))
        .map_err(|e| Error::Other(e.into()))?;
    if let Some(p) = a.tsv {
        report::write_to(p, &c, report::compare::tsv)?;
    }
    if let Some(p) = a.json {
        report::write_to(p, &c, report::compare::json)?;
    }
    if let Some(p) = a.html {
        let mut tsv = Vec::new();
        report::compare::tsv(&c, &mut tsv).map_err(|e| Error::Other(e.into()))?;
        let page = report::html::render_compare(&base, &new, &String::from_utf8_lossy(&tsv));
        report::write_atomically(p, page.as_bytes())?;
    }
    Ok(if c.failed() {
        exit::THRESHOLD
    } else {
        exit::OK
    })
}

/// The console: stderr when a table goes to stdout (`--tsv -` or `--json -`).
fn console(a: &CompareArgs) -> Box<dyn Write> {
    if [a.tsv, a.json]
        .iter()
        .any(|p| p.is_some_and(|p| p.as_os_str() == "-"))
    {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    }
}

/// Two sweeps: their fits' parameters and the steps at the same users.
fn compare_sweeps(a: &CompareArgs) -> Result<i32, Error> {
    let gates = a
        .fail_if
        .iter()
        .map(|g| SweepGate::parse(g))
        .collect::<Result<Vec<_>, _>>()?;
    let (base, new) = (SweepDir::open(a.base)?, SweepDir::open(a.new)?);
    let differs = sweeps::differences(&base, &new);
    if !differs.is_empty() && !a.force {
        return Err(Error::Usage(format!(
            "the sweeps are not of the same plan: {}\n  fix: compare sweeps of one profile, or pass --force",
            differs.join("; ")
        )));
    }
    let c = sweeps::compare(&base, &new, &gates, a.seed);
    report::sweep::compare_table(&c, &mut console(a)).map_err(|e| Error::Other(e.into()))?;
    if let Some(p) = a.tsv {
        report::write_to(p, &c, report::sweep::compare_tsv)?;
    }
    if let Some(p) = a.json {
        report::write_to(p, &c, report::sweep::compare_json)?;
    }
    if let Some(p) = a.html {
        let page = report::sweep::render_compare(&base.sweep, &new.sweep, &c);
        report::write_atomically(p, page.as_bytes())?;
    }
    Ok(if c.failed() {
        exit::THRESHOLD
    } else {
        exit::OK
    })
}
