//! genny workloads, as they are: a `.yml` profile with `Actors` (or a top-level `LoadConfig`) is
//! read as genny reads it (`preprocess`: `LoadConfig`, `^Parameter`, `ActorTemplates`,
//! `OnlyActiveInPhases`, `^NumExpr`, `^FlattenOnce`, `^PreprocessorFormatString`, `-p`, `-o`)
//! and its actors and phases are read as the run model's stages, groups and steps
//! (`translate`), so it runs as any profile runs.
//!
//! Owns: genny's file format and its rules, up to a `Profile`. Never: talks to a server, or
//! runs anything (the executor runs what `translate` made, with genny's rules as its options).

pub mod preprocess;
