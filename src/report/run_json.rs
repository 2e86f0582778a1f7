//! `run.json`: the typed `RunInfo`, pretty-printed.

use std::path::Path;

use super::write_atomically;
use crate::error::Error;
use crate::summary::run_info::RunInfo;

pub fn write(path: &Path, info: &RunInfo) -> Result<(), Error> {
    let bytes = serde_json::to_vec_pretty(info).map_err(|e| Error::Other(e.into()))?;
    write_atomically(path, &bytes)
}
