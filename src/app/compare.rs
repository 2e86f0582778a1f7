//! `mongo-stress compare BASE NEW`: read both run directories, refuse runs of different plans
//! (unless --force), compare, print, write --tsv / --json, judge the gates (exit 4).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::compare::{self, Gate};
use crate::error::{exit, Error};
use crate::report;
use crate::rundir::RunDir;

pub struct CompareArgs<'a> {
    pub base: &'a Path,
    pub new: &'a Path,
    pub fail_if: &'a [String],
    pub tsv: Option<&'a PathBuf>,
    pub json: Option<&'a PathBuf>,
    pub html: Option<&'a PathBuf>,
    pub force: bool,
    pub seed: u64,
}

pub fn compare(a: CompareArgs) -> Result<i32, Error> {
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
    let mut console: Box<dyn Write> = if [a.tsv, a.json]
        .iter()
        .any(|p| p.is_some_and(|p| p.as_os_str() == "-"))
    {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    report::compare::table(&c, &mut console).map_err(|e| Error::Other(e.into()))?;
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
