//! genny workloads, as they are: a `.yml` profile with `Actors` (or a top-level `LoadConfig`) is
//! read as genny reads it (`preprocess`: `LoadConfig`, `^Parameter`, `ActorTemplates`,
//! `OnlyActiveInPhases`, `^NumExpr`, `^FlattenOnce`, `^PreprocessorFormatString`, `-p`, `-o`)
//! and its actors and phases are read as the run model's stages, groups and steps
//! (`translate`), so it runs as any profile runs.
//!
//! Owns: genny's file format and its rules, up to a `Profile`. Never: talks to a server, or
//! runs anything (the executor runs what `translate` made, with genny's rules as its options).

pub(crate) mod preprocess;
pub(crate) mod translate;

use std::path::{Path, PathBuf};

/// What the command line says of a genny workload (`-p`, `-o`, `--smoke`).
#[derive(Debug, Clone, Default)]
pub(crate) struct GennyArgs {
    /// `-p NAME=VALUE`: a `^Parameter` set everywhere, over the workload's own.
    pub(crate) parameters: Vec<(String, String)>,
    /// `-o FILE`: deep-merged onto the workload first, as genny's `-o`.
    pub(crate) overrides: Vec<PathBuf>,
    /// Every phase once: `Repeat: 1`, no `Duration`, rate or sleep.
    pub(crate) smoke: bool,
}

impl GennyArgs {
    /// Any of them given.
    pub(crate) fn any(&self) -> bool {
        !self.parameters.is_empty() || !self.overrides.is_empty() || self.smoke
    }
}

/// A genny workload read: the profile text it became, what a reader must know of how, and the
/// preprocessed YAML (`validate --expand`).
#[derive(Debug, Clone)]
pub(crate) struct Read {
    /// The workload's directory (relative data set paths are looked for from it first).
    pub(crate) dir: PathBuf,
    pub(crate) toml: String,
    pub(crate) notes: Vec<String>,
    pub(crate) expanded: String,
    /// No phase sends anything: genny runs it and it ends at once (`IDLE` says so).
    pub(crate) idle: bool,
}

/// What `validate` and `run` say of a workload whose every phase is `Nop` (or only logs).
pub(crate) const IDLE: &str = "every phase of this workload is `Nop` (or its actors only log): genny runs it and it ends at once, having sent nothing; so does `run`, which writes no run directory";

/// Why a workload was not read: the line that says so, and what to do.
#[derive(Debug)]
pub(crate) struct Unread {
    pub(crate) line: String,
    pub(crate) fix: Fix,
}

/// What to do about a workload not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fix {
    /// The file is not YAML: mend it where the line says.
    Syntax,
    /// The tool does not run what the line names.
    Reference,
}

impl Fix {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Fix::Syntax => "mend the YAML where the line and column say (a bracket or quote left open, a tab used to indent, a `key: value` where a list or a mapping was meant)",
            Fix::Reference => "docs/genny.md lists what the tool runs of genny's workloads",
        }
    }
}

/// Is the file at `path` a genny workload: `.yml`/`.yaml`.
pub(crate) fn is_workload(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yml" | "yaml")
    )
}

/// Reads the genny workload at `path` as genny does, then as the run model; every problem in
/// one line naming the file (and the actor, the phase and the thing).
pub(crate) fn read(path: &Path, args: &GennyArgs) -> Result<Read, Unread> {
    let refused = |line: String| Unread {
        line,
        fix: Fix::Reference,
    };
    let expanded =
        preprocess::preprocess(path, &args.parameters, &args.overrides).map_err(|e| Unread {
            fix: if e.problem.starts_with("YAML syntax") {
                Fix::Syntax
            } else {
                Fix::Reference
            },
            line: e.to_string(),
        })?;
    let expanded_text = serde_yaml::to_string(&expanded).unwrap_or_default();
    let t =
        translate::translate(path, &expanded, args.smoke).map_err(|e| refused(e.to_string()))?;
    let toml = toml::to_string(&t.profile).map_err(|e| {
        refused(format!(
            "{}: the workload could not be written as a profile: {e}",
            path.display()
        ))
    })?;
    Ok(Read {
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        toml,
        notes: t.notes,
        expanded: expanded_text,
        idle: t.idle,
    })
}
