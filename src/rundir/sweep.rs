//! A sweep's directory read back: `sweep.json` and each step's run directory under `steps/`.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::sweep::{Step, SweepResult};

pub(crate) const SWEEP_JSON: &str = "sweep.json";

pub(crate) struct SweepDir {
    pub(crate) path: PathBuf,
    pub(crate) sweep: SweepResult,
}

impl SweepDir {
    /// A directory `sweep` wrote (it holds `sweep.json`).
    pub(crate) fn is_sweep(dir: &Path) -> bool {
        dir.join(SWEEP_JSON).is_file()
    }

    pub(crate) fn open(dir: &Path) -> Result<SweepDir, Error> {
        let bad = |why: String| {
            Error::Usage(format!(
                "{} is not a usable sweep directory: {why}\n  fix: give the directory a `mongo-stress sweep` wrote (its --out), with sweep.json written whole",
                dir.display()
            ))
        };
        let path = dir.join(SWEEP_JSON);
        let text = std::fs::read_to_string(&path).map_err(|e| bad(format!("{SWEEP_JSON}: {e}")))?;
        let sweep = serde_json::from_str(&text)
            .map_err(|e| bad(format!("{SWEEP_JSON} is not a mongo-stress sweep ({e})")))?;
        Ok(SweepDir {
            path: dir.to_path_buf(),
            sweep,
        })
    }

    /// A step's run directory: `steps/` of this directory, by the name the step was written
    /// under (so a sweep directory that was moved or copied still finds its steps).
    pub(crate) fn step_dir(&self, step: &Step) -> PathBuf {
        let name = Path::new(&step.dir)
            .file_name()
            .map_or_else(|| step.dir.clone().into(), PathBuf::from);
        self.path.join("steps").join(name)
    }
}
