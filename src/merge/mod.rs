//! `mongo-stress merge`: the parts of one run, each run by its own load generator (`--part`,
//! `--parts`), joined into one run exactly: counts and bytes are summed, whole-run and interval
//! histograms added (never percentiles averaged), throughput taken over the union of the parts'
//! spans.
//!
//! Design: read each part's `summary.json` (rows carry their histograms, span and bytes),
//! `run.json` (profile text, host) and `resources.tsv`; refuse parts that do not belong together
//! (`check`); merge the runs row by row (`runs`), the interval logs on wall-clock interval
//! boundaries as a stream (`intervals`, bounded memory however long the run), and the resource
//! rows with the server's columns once and each part's client CPU beside (`resources`).
//!
//! Owns: what a merged run is. Never: renders text (the `report` module does), or reads a
//! part's `samples.tsv`.

mod check;
pub(crate) mod counts;
pub(crate) mod intervals;
pub(crate) mod resources;
mod runs;

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::monitor::ResourceRow;
use crate::rundir::{Depth, RunDir};
use crate::summary::run_info::RunInfo;
use crate::summary::Summary;

/// One part's run directory, read (`rundir`, the interval log left for the streaming merge).
#[derive(Debug)]
pub(crate) struct PartDir {
    pub(crate) path: PathBuf,
    pub(crate) summary: Summary,
    pub(crate) run_info: RunInfo,
    /// Its `resources.tsv`, when it sampled.
    pub(crate) resources: Option<Vec<ResourceRow>>,
    /// Its `latency.hlog`, when it wrote one.
    pub(crate) hlog: Option<PathBuf>,
}

/// A merged run: the summary and the resource rows (with each part's client CPU beside).
#[derive(Debug)]
pub(crate) struct Merged {
    pub(crate) summary: Summary,
    /// The merged `resources.tsv`, when the parts sampled.
    pub(crate) resources: Option<resources::MergedResources>,
    /// The merged `run.json`.
    pub(crate) run_info: RunInfo,
}

pub(crate) fn bad(dir: &Path, what: impl std::fmt::Display) -> Error {
    Error::Usage(format!(
        "{} is not a part that can be merged: {what}\n  fix: give the run directories that `mongo-stress run --part I/N` (or --parts N) wrote, written whole",
        dir.display()
    ))
}

impl PartDir {
    pub(crate) fn open(dir: &Path) -> Result<PartDir, Error> {
        let RunDir {
            path,
            summary,
            run_info,
            hlog,
            resources,
            ..
        } = RunDir::read(dir, Depth::Summaries)?;
        Ok(PartDir {
            path,
            summary,
            run_info,
            resources: resources.map(|r| r.rows()),
            hlog,
        })
    }

    pub(crate) fn index(&self) -> u32 {
        self.summary.part.map_or(0, |p| p.index)
    }
}

/// Reads and checks the parts, and merges their summaries and resources (the interval logs are
/// merged by `intervals::merge`, as a stream, by the caller). Parts come back ordered by index.
pub(crate) fn merge(
    dirs: &[PathBuf],
    allow_missing: bool,
) -> Result<(Vec<PartDir>, Merged), Error> {
    let mut parts = read_all(dirs)?;
    check::belong_together(&mut parts, allow_missing)?;
    let merged = runs::merge(&parts)?;
    Ok((parts, merged))
}

/// The parts read on every core (a part's summary holds a histogram per row and run).
fn read_all(dirs: &[PathBuf]) -> Result<Vec<PartDir>, Error> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = dirs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = dirs
            .chunks(chunk)
            .map(|c| scope.spawn(move || c.iter().map(|d| PartDir::open(d)).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::new();
        for w in workers {
            for p in w
                .join()
                .map_err(|_| Error::Other(anyhow::anyhow!("reading the parts panicked")))?
            {
                out.push(p?);
            }
        }
        Ok(out)
    })
}
