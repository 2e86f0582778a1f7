//! `mongo-stress report RUN_DIR [--out FILE]`: read the run directory back, render the page,
//! write it whole (a temporary file, then renamed), say where.

use std::path::Path;

use crate::error::{exit, Error};
use crate::report;
use crate::rundir::RunDir;

pub(crate) fn report(run_dir: &Path, out: Option<&Path>) -> Result<i32, Error> {
    let path = write(run_dir, out)?;
    outln!("report: {}", path.display());
    Ok(exit::OK)
}

/// Writes the report of `run_dir` (to `out`, default `run_dir/report.html`); returns its path.
pub(crate) fn write(run_dir: &Path, out: Option<&Path>) -> Result<std::path::PathBuf, Error> {
    let dir = RunDir::open(run_dir)?;
    let page = report::html::render(&dir);
    let path = out.map_or_else(
        || crate::rundir::File::Report.path(run_dir),
        Path::to_path_buf,
    );
    report::write_atomically(&path, page.as_bytes())?;
    Ok(path)
}
