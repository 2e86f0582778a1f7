//! A run directory that never mixes runs: new, or empty when the run began; and removed again
//! when the run fails before it measured anything, so a failed run leaves nothing behind for
//! `report` or a `compare results/*` glob to trip on.

use std::path::{Path, PathBuf};

use crate::error::Error;

use super::File;

/// A run's directory, made (or found empty) for this run.
#[derive(Debug)]
pub(crate) struct Fresh {
    pub(crate) dir: PathBuf,
    /// The directories this run made, the run directory first (empty when it existed).
    created: Vec<PathBuf>,
}

impl Fresh {
    /// `dir` made for one run. A directory that holds anything is refused (exit 2) unless the
    /// tool chose its name (`pick`: the default `results/<profile>-<time>`), when `-2`, `-3`, ...
    /// is added instead.
    pub(crate) fn make(dir: &Path, pick: bool) -> Result<Fresh, Error> {
        let dir = if pick { unused(dir) } else { dir.to_path_buf() };
        if let Some(held) = holds(&dir) {
            return Err(Error::Usage(format!(
                "--out {} already holds {held}: a run written into it would mix with what is there\n  fix: choose a new directory with --out (it is created), or remove this one first",
                dir.display()
            )));
        }
        let created: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
            .map(Path::to_path_buf)
            .collect();
        let usage = |e: std::io::Error| {
            Error::Usage(format!(
                "cannot use {} as the run directory: {e}\n  fix: choose a writable directory with --out",
                dir.display()
            ))
        };
        std::fs::create_dir_all(&dir).map_err(usage)?;
        let fresh = Fresh {
            dir: dir.clone(),
            created,
        };
        // Prove it is writable before any load starts.
        let probe = dir.join(".write-test");
        if let Err(e) = std::fs::write(&probe, b"") {
            fresh.discard();
            return Err(usage(e));
        }
        let _ = std::fs::remove_file(probe);
        Ok(fresh)
    }

    /// After a run that ended in an error: when it measured nothing, everything it wrote is
    /// removed, and the directories it made. A run that measured something keeps its directory
    /// whole, even when its summary could not be written.
    pub(crate) fn discard_unmeasured(&self) {
        if !measured(&self.dir, 3) {
            self.discard();
        }
    }

    fn discard(&self) {
        match self.created.first() {
            // Made by this run: it and the parents it made go.
            Some(_) => {
                let _ = std::fs::remove_dir_all(&self.dir);
                for parent in &self.created[1..] {
                    let _ = std::fs::remove_dir(parent);
                }
            }
            // It was there, empty: emptied again.
            None => {
                if let Ok(entries) = std::fs::read_dir(&self.dir) {
                    for e in entries.flatten() {
                        let p = e.path();
                        let _ = if p.is_dir() {
                            std::fs::remove_dir_all(&p)
                        } else {
                            std::fs::remove_file(&p)
                        };
                    }
                }
            }
        }
    }
}

/// Something was measured into `dir` or a directory below it (a series' steps): a summary, an
/// audit, a sample log with a line after its header, or an interval log with a histogram.
fn measured(dir: &Path, depth: u32) -> bool {
    let has_line = |path: PathBuf, data: &dyn Fn(&str) -> bool| {
        std::fs::read_to_string(path).is_ok_and(|t| t.lines().any(data))
    };
    let here = File::SummaryJson.path(dir).exists()
        || File::Audit.path(dir).exists()
        || has_line(File::Samples.path(dir), &|l| {
            !l.is_empty() && !l.starts_with("start_us")
        })
        || has_line(File::LatencyHlog.path(dir), &|l| l.starts_with("Tag="));
    here || (depth > 0
        && std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().is_dir() && measured(&e.path(), depth - 1))
        }))
}

/// What `dir` holds that a run must not be written over, in words; None for a directory that
/// is absent or empty.
fn holds(dir: &Path) -> Option<String> {
    if !dir.exists() {
        return None;
    }
    if !dir.is_dir() {
        return Some("nothing: it is a file, not a directory".into());
    }
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() {
        return None;
    }
    let ours: Vec<&str> = File::ALL
        .iter()
        .map(|f| f.name())
        .filter(|n| names.iter().any(|x| x == n))
        .collect();
    Some(if ours.is_empty() {
        match names.len() {
            1 => format!("`{}`", names[0]),
            n => format!("{n} files or directories"),
        }
    } else {
        format!("a run ({})", ours.join(", "))
    })
}

/// What `dir` holds that is not a file of a run directory (`File::ALL`): a command that writes
/// over an earlier run's or merge's files (`merge --out`) refuses a directory of other things.
pub(crate) fn others_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "rollups.json" && !File::ALL.iter().any(|f| f.name() == n))
        .collect()
}

/// `dir`, or `dir-2`, `dir-3`, ... : the first that does not exist.
fn unused(dir: &Path) -> PathBuf {
    if !dir.exists() {
        return dir.to_path_buf();
    }
    (2..)
        .map(|n| {
            let mut name = dir.as_os_str().to_os_string();
            name.push(format!("-{n}"));
            PathBuf::from(name)
        })
        .find(|d| !d.exists())
        .expect("an unused name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_holding_a_run_is_refused_and_left_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("old");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("audit.tsv"), "kept").unwrap();
        let e = Fresh::make(&dir, false).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("already holds a run (audit.tsv)"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("audit.tsv")).unwrap(),
            "kept"
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }

    /// `merge --out`: an earlier merge's files (a genny run's rollups among them) are not
    /// others; anything else is.
    #[test]
    fn a_runs_own_files_are_not_others() {
        let tmp = tempfile::tempdir().unwrap();
        for f in ["summary.json", "run.json", "rollups.json"] {
            std::fs::write(tmp.path().join(f), "{}").unwrap();
        }
        assert!(others_in(tmp.path()).is_empty());
        std::fs::write(tmp.path().join("notes.txt"), "").unwrap();
        assert_eq!(others_in(tmp.path()), ["notes.txt"]);
    }

    #[test]
    fn a_run_that_measured_nothing_leaves_nothing_and_one_that_did_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/run");
        let f = Fresh::make(&dir, false).unwrap();
        std::fs::write(dir.join("run.json"), "{}").unwrap();
        f.discard_unmeasured();
        assert!(!tmp.path().join("a").exists());

        let f = Fresh::make(&dir, false).unwrap();
        std::fs::write(dir.join("summary.json"), "{}").unwrap();
        f.discard_unmeasured();
        assert!(dir.join("summary.json").exists());
    }

    #[test]
    fn a_run_whose_summary_was_not_written_keeps_what_it_measured() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let f = Fresh::make(&dir, false).unwrap();
        std::fs::write(dir.join("samples.tsv"), "start_us\telapsed_us\n").unwrap();
        f.discard_unmeasured();
        assert!(!dir.exists(), "a header alone is nothing measured");
        let f = Fresh::make(&dir, false).unwrap();
        std::fs::write(dir.join("samples.tsv"), "start_us\telapsed_us\n1\t2\n").unwrap();
        f.discard_unmeasured();
        assert!(dir.join("samples.tsv").exists());
        // A series: a step below it that measured keeps the whole series.
        let series = tmp.path().join("series");
        let f = Fresh::make(&series, false).unwrap();
        std::fs::create_dir_all(series.join("steps/step-01")).unwrap();
        std::fs::write(series.join("steps/step-01/summary.json"), "{}").unwrap();
        f.discard_unmeasured();
        assert!(series.join("steps/step-01/summary.json").exists());
    }

    #[test]
    fn an_empty_directory_is_used_and_emptied_again_not_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let f = Fresh::make(tmp.path(), false).unwrap();
        std::fs::write(tmp.path().join("run.json"), "{}").unwrap();
        f.discard_unmeasured();
        assert!(tmp.path().is_dir());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_name_the_tool_chose_gets_a_suffix_instead_of_a_refusal() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("smoke-20261202-101010");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("summary.json"), "{}").unwrap();
        let f = Fresh::make(&dir, true).unwrap();
        assert_eq!(f.dir, tmp.path().join("smoke-20261202-101010-2"));
    }
}
