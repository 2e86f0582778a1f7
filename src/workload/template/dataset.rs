//! `^ChooseFromDataset`'s files: found (genny's paths are relative to the directory genny runs
//! in, e.g. `./src/genny/src/workloads/datasets/names.txt`), read once, and shared by every
//! generator that names the same file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Where genny keeps its workloads, in its repository.
const WORKLOADS: &str = "src/workloads";
/// A copy of genny's repository beside this one (its workloads and datasets).
const REFERENCE: &str = "shared/reference/genny";

/// The files read, by their path, while a template holds them.
static CACHE: Mutex<Option<HashMap<PathBuf, Weak<Vec<String>>>>> = Mutex::new(None);

/// The non-empty lines of the dataset `path` (a line's trailing `\r` removed), found as
/// `find` says, read once while any template holds them. An error says what is wrong.
pub(super) fn load(path: &str, base: Option<&Path>) -> Result<Arc<Vec<String>>, String> {
    if path.is_empty() {
        return Err("the path is empty".into());
    }
    let file = find(path, base)?;
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(lines) = cache.get(&file).and_then(Weak::upgrade) {
        return Ok(lines);
    }
    let bytes = std::fs::read(&file)
        .map_err(|e| format!("the dataset {} cannot be read: {e}", file.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<String> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        return Err(format!(
            "the dataset {} has no line that is not empty",
            file.display()
        ));
    }
    let lines = Arc::new(lines);
    cache.retain(|_, w| w.strong_count() > 0);
    cache.insert(file, Arc::downgrade(&lines));
    Ok(lines)
}

/// The file a dataset path names: the path as given (relative to the current directory), else,
/// from the base directory (the workload's) and from the current directory and every directory
/// above each: the path as given; its part after `src/workloads/` under `src/workloads` and
/// under `shared/reference/genny/src/workloads`; its file name under `src/workloads/datasets`
/// and under `shared/reference/genny/src/workloads/datasets`. An error says where it looked.
pub(super) fn find(path: &str, base: Option<&Path>) -> Result<PathBuf, String> {
    let given = Path::new(path);
    if given.is_file() {
        return Ok(given.to_path_buf());
    }
    let rel = path.trim_start_matches("./");
    let tail = rel
        .rfind("src/workloads/")
        .map(|i| &rel[i + "src/workloads/".len()..]);
    let name = given.file_name().map(|n| n.to_string_lossy().into_owned());
    let cwd = std::env::current_dir().ok();
    let mut roots: Vec<PathBuf> = Vec::new();
    for start in base.map(Path::to_path_buf).into_iter().chain(cwd.clone()) {
        let start = std::path::absolute(&start).unwrap_or(start);
        for dir in start.ancestors() {
            if !roots.iter().any(|r| r == dir) {
                roots.push(dir.to_path_buf());
            }
        }
    }
    if !given.is_absolute() {
        for root in &roots {
            let mut candidates = vec![root.join(rel)];
            for workloads in [root.join(WORKLOADS), root.join(REFERENCE).join(WORKLOADS)] {
                if let Some(t) = tail {
                    candidates.push(workloads.join(t));
                }
                if let Some(n) = &name {
                    candidates.push(workloads.join("datasets").join(n));
                }
            }
            if let Some(found) = candidates.into_iter().find(|c| c.is_file()) {
                return Ok(found);
            }
        }
    }
    let here = cwd.map_or_else(|| "?".to_string(), |d| d.display().to_string());
    let from = match base {
        Some(b) => format!("{} and {here}", b.display()),
        None => here.clone(),
    };
    let mut looked = format!("looked for `{path}` relative to {here}");
    if !given.is_absolute() {
        looked.push_str(&format!(
            ", then in {from} and every directory above them: as written, {}under {WORKLOADS}/datasets/ and {REFERENCE}/{WORKLOADS}/datasets/",
            match tail {
                Some(t) => format!("`{t}` under {WORKLOADS}/ and {REFERENCE}/{WORKLOADS}/, and `{}` ", name.as_deref().unwrap_or(t)),
                None => format!("`{}` ", name.as_deref().unwrap_or(rel)),
            }
        ));
    }
    Err(format!("the dataset `{path}` was not found ({looked})"))
}
