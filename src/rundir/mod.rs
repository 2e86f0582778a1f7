//! The run directory: the one list of its files (`File`, each with its name and whether a run
//! may lack it), the typed reader every command that looks at a result after the run starts from
//! (`report`, `compare`, `merge`, a relative threshold's baseline), and the writers of its data
//! files: `summary.json` and `run.json` from their types, `resources.tsv` (`resources`),
//! `members.tsv` (`members`), and any file written whole (a temporary sibling, then renamed);
//! `fresh.rs`, a run's directory new or empty, and removed again when the run failed before it
//! measured anything.
//!
//! Owns: file names, reading them back into `Summary`, `RunInfo`, interval statistics, resource
//! rows and member rows, and the error that names the file that is missing or broken. Never:
//! renders a table or a page (`report` does; its text reaches the disk through
//! `write_atomically`), or re-reads `samples.tsv` (a long run's sample log can be gigabytes).

pub(crate) mod fresh;
pub(crate) mod hlog;
pub(crate) mod members;
pub(crate) mod resources;
pub(crate) mod sweep;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::monitor::members::MemberRow;
use crate::summary::run_info::RunInfo;
use crate::summary::Summary;
pub(crate) use fresh::Fresh;
pub use hlog::{parse_hlog, ActivityStats, IntervalStats};
pub(crate) use resources::{parse_resources, Resources, ResourcesFile};
pub(crate) use sweep::SweepDir;

/// A file of a run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum File {
    SummaryJson,
    SummaryTsv,
    RunJson,
    LatencyHlog,
    Resources,
    ResourcesSummary,
    Thresholds,
    Parts,
    Report,
    Samples,
    Audit,
    Members,
    Changes,
}

impl File {
    pub const ALL: [File; 13] = [
        File::SummaryJson,
        File::SummaryTsv,
        File::RunJson,
        File::LatencyHlog,
        File::Resources,
        File::ResourcesSummary,
        File::Thresholds,
        File::Parts,
        File::Report,
        File::Samples,
        File::Audit,
        File::Members,
        File::Changes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            File::SummaryJson => "summary.json",
            File::SummaryTsv => "summary.tsv",
            File::RunJson => "run.json",
            File::LatencyHlog => "latency.hlog",
            File::Resources => "resources.tsv",
            File::ResourcesSummary => "resources-summary.tsv",
            File::Thresholds => "thresholds.tsv",
            File::Parts => "parts.tsv",
            File::Report => "report.html",
            File::Samples => "samples.tsv",
            File::Audit => "audit.tsv",
            File::Members => "members.tsv",
            File::Changes => "changes.tsv",
        }
    }

    /// A run may lack it: `--no-interval-log`, `--no-resources`, `--no-samples`, no thresholds,
    /// not a merge, the report not yet written.
    pub fn optional(self) -> bool {
        !matches!(self, File::SummaryJson | File::SummaryTsv | File::RunJson)
    }

    pub fn path(self, dir: &Path) -> PathBuf {
        dir.join(self.name())
    }
}

/// A run directory read back.
pub struct RunDir {
    pub(crate) path: PathBuf,
    pub summary: Summary,
    pub(crate) summary_tsv: String,
    pub(crate) resources_summary_tsv: Option<String>,
    /// A merged run's `parts.tsv`.
    pub(crate) parts_tsv: Option<String>,
    pub run_info: RunInfo,
    /// Epoch seconds the interval log's timestamps count from.
    pub base_secs: f64,
    /// Per tag, in log order (empty without an interval log, or when not read).
    pub intervals: BTreeMap<String, Vec<IntervalStats>>,
    /// Per group tag.
    pub activity: BTreeMap<String, Vec<ActivityStats>>,
    /// Its `latency.hlog`, when it has one.
    pub(crate) hlog: Option<PathBuf>,
    pub(crate) resources: Option<Resources>,
    /// Its `members.tsv`: each member of a replica set or cluster, each second (none for a
    /// standalone server, or with `--no-members`).
    pub(crate) members: Option<Vec<MemberRow>>,
}

/// What to read besides the summaries and `run.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// Everything: the interval log decoded (the report, `compare`).
    Whole,
    /// The interval log only found, not decoded (`merge` streams it).
    Summaries,
}

/// A TSV file written as it goes (`resources.tsv`, `members.tsv`): its header and each row's
/// cells, every row the header's width; a last line cut off by a crash (no line end) is left
/// out, the rows before it stand. Row `i` is the file's line `i + 2`.
pub(crate) fn tsv_rows(text: &str) -> Result<(Vec<&str>, Vec<Vec<&str>>), String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty")?.split('\t').collect();
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split('\t').collect();
        if cells.len() != header.len() {
            if n > 0 && !text.ends_with('\n') {
                break;
            }
            return Err(format!(
                "line {} has {} cells for {} columns",
                n + 2,
                cells.len(),
                header.len()
            ));
        }
        rows.push(cells);
    }
    Ok((header, rows))
}

/// A TSV file written whole: every line ends, and every row has the header's cells.
fn check_tsv(text: &str) -> Result<(), String> {
    if !text.ends_with('\n') {
        return Err("is cut off (its last line has no end)".into());
    }
    let mut lines = text.lines();
    let columns = lines.next().ok_or("is empty")?.split('\t').count();
    for (n, l) in lines.enumerate() {
        if l.split('\t').count() != columns {
            return Err(format!(
                "line {} has not the {columns} cells of its header",
                n + 2
            ));
        }
    }
    Ok(())
}

fn bad(dir: &Path, what: String) -> Error {
    if SweepDir::is_sweep(dir) {
        return Error::Usage(format!(
            "{} is a sweep's directory, not a run's\n  fix: give one of its steps (under {}), open its sweep.html, or compare it with another sweep (`mongo-stress compare SWEEP SWEEP`)",
            dir.display(),
            dir.join("steps").display()
        ));
    }
    Error::Usage(format!(
        "{} is not a usable run directory: {what}\n  fix: give the directory a `mongo-stress run` (or `merge`) wrote (its --out), with summary.json, summary.tsv, run.json (and latency.hlog unless it ran with --no-interval-log), written whole",
        dir.display()
    ))
}

/// An optional file that is there but cannot be read: its own fix, not the generic one.
fn unreadable(dir: &Path, file: File, why: String) -> Error {
    Error::Usage(format!(
        "{} is not a usable run directory: {} cannot be read ({why})\n  fix: put back the file a run wrote there, or remove {} (a run without it reads as not having it)",
        dir.display(),
        file.name(),
        file.path(dir).display()
    ))
}

/// A file every run has.
fn read(dir: &Path, file: File) -> Result<String, Error> {
    std::fs::read_to_string(file.path(dir)).map_err(|e| bad(dir, format!("{}: {e}", file.name())))
}

/// A file a run may lack: None when it is not there; any other failure to read it (a
/// directory in its place, an I/O error) is an error that names it.
fn read_optional(dir: &Path, file: File) -> Result<Option<String>, Error> {
    match std::fs::read_to_string(file.path(dir)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(dir, file, e.to_string())),
    }
}

/// An optional file's path when it is there, without reading it; any failure to look but
/// NotFound is an error that names it.
fn present(dir: &Path, file: File) -> Result<Option<PathBuf>, Error> {
    let path = file.path(dir);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(Some(path)),
        Ok(_) => Err(unreadable(dir, file, "not a file".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(dir, file, e.to_string())),
    }
}

fn json<T: serde::de::DeserializeOwned>(dir: &Path, file: File, what: &str) -> Result<T, Error> {
    serde_json::from_str(&read(dir, file)?)
        .map_err(|e| bad(dir, format!("{} is not {what} ({e})", file.name())))
}

impl RunDir {
    /// Everything a report or a comparison needs.
    pub fn open(dir: &Path) -> Result<RunDir, Error> {
        Self::read(dir, Depth::Whole)
    }

    pub(crate) fn read(dir: &Path, depth: Depth) -> Result<RunDir, Error> {
        if !dir.is_dir() {
            return Err(bad(dir, "no such directory".into()));
        }
        let summary: Summary = json(dir, File::SummaryJson, "a mongo-stress summary")?;
        if summary.schema_version != crate::summary::SCHEMA_VERSION {
            return Err(bad(
                dir,
                format!(
                    "summary.json is of schema_version {}, this mongo-stress reads {}",
                    summary.schema_version,
                    crate::summary::SCHEMA_VERSION
                ),
            ));
        }
        let run_info: RunInfo = json(dir, File::RunJson, "a mongo-stress run.json")?;
        let summary_tsv = read(dir, File::SummaryTsv)?;
        check_tsv(&summary_tsv).map_err(|e| bad(dir, format!("summary.tsv {e}")))?;
        let started = epoch_secs(&run_info.started_at);
        // A run with --no-interval-log has no log: its report has the tables, no curves.
        let none = || (started, BTreeMap::new(), BTreeMap::new());
        let (hlog, (base_secs, intervals, activity)) = match depth {
            Depth::Whole => match read_optional(dir, File::LatencyHlog)? {
                Some(text) => (
                    Some(File::LatencyHlog.path(dir)),
                    parse_hlog(&text).map_err(|e| bad(dir, format!("latency.hlog: {e}")))?,
                ),
                None => (None, none()),
            },
            Depth::Summaries => (present(dir, File::LatencyHlog)?, none()),
        };
        let resources = read_optional(dir, File::Resources)?
            .map(|text| parse_resources(&text).map_err(|e| bad(dir, format!("resources.tsv: {e}"))))
            .transpose()?;
        let members = read_optional(dir, File::Members)?
            .map(|text| {
                members::parse_members(&text)
                    .map_err(|e| bad(dir, format!("{}: {e}", File::Members.name())))
            })
            .transpose()?;
        Ok(RunDir {
            path: dir.to_path_buf(),
            summary,
            summary_tsv,
            resources_summary_tsv: read_optional(dir, File::ResourcesSummary)?,
            parts_tsv: read_optional(dir, File::Parts)?,
            run_info,
            base_secs,
            intervals,
            activity,
            hlog,
            resources,
            members,
        })
    }
}

/// An RFC 3339 time (as run.json and summary.json write them) in seconds since the Unix epoch;
/// 0 when it cannot be read.
pub(crate) fn epoch_secs(rfc3339: &str) -> f64 {
    humantime::parse_rfc3339(rfc3339)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes `bytes` to `path` whole: to a temporary sibling first, then renamed over the target.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let io = |source| Error::Output {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!(
        "{}.partial",
        path.extension()
            .map_or(String::new(), |e| e.to_string_lossy().into_owned())
    ));
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// `run.json`, from its type.
pub fn write_run_info(dir: &Path, info: &RunInfo) -> Result<(), Error> {
    let bytes = serde_json::to_vec_pretty(info).map_err(|e| Error::Other(e.into()))?;
    write_atomically(&File::RunJson.path(dir), &bytes)
}

/// Removes what an earlier run or merge into `dir` left that this one may not write, so none
/// of its files outlive it.
pub(crate) fn clear_optional(dir: &Path) {
    for f in File::ALL.into_iter().filter(|f| f.optional()) {
        let _ = std::fs::remove_file(f.path(dir));
    }
}
