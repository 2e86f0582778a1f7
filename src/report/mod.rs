//! Renders results for people and scripts: one small module per format, all from the same
//! models (`Summary`, `RunInfo`, `RunPlan`), sharing one column list (`columns`).
//!
//! Owns: every column name, cell format and file format. Never: computes a number or decides a
//! warning (the summary does), and nothing on the hot path imports it.

pub(crate) mod capacity;
pub(crate) mod columns;
pub mod compare;
pub(crate) mod history;
pub mod html;
pub mod json;
pub(crate) mod layout;
pub(crate) mod live;
pub(crate) mod outage;
pub(crate) mod parts;
pub(crate) mod plan;
pub(crate) mod rollups;
pub(crate) mod sweep;
pub mod table;
pub mod tsv;
pub(crate) mod watchers;

use std::io::Write;
use std::path::Path;

use crate::error::Error;

/// Writes `render`'s output of `summary` (a summary, a comparison) to `path`, or to stdout for
/// `-`. Files are written whole: to a
/// temporary sibling first, then renamed over the target.
pub(crate) fn write_to<T>(
    path: &Path,
    summary: &T,
    render: fn(&T, &mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    let io = |source| Error::Output {
        path: path.to_path_buf(),
        source,
    };
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        // `--tsv - | head -1`: a reader that took what it wanted is no failure.
        return crate::console::written(render(summary, &mut out).and_then(|_| out.flush()))
            .map_err(io);
    }
    let mut buf = Vec::new();
    render(summary, &mut buf).map_err(io)?;
    write_atomically(path, &buf)
}

pub(crate) use crate::rundir::write_atomically;
