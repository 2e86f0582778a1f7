//! mongo-stress: a MongoDB CRUD stress tester in the spirit of JMeter.
//!
//! Data flows one way, one folder per stage:
//! `plan` (profile file -> validated `RunPlan`) -> `executor` (virtual users sending `workload`
//! requests through an `ops::Backend`) -> `metrics` (samples, recorder, histograms; `samplelog`
//! beside it) -> `summary` (the result model, with `monitor`'s resource rows, the one judge of
//! thresholds and the one exit-code rule) -> `report` (one renderer per format). `rundir` owns
//! the run directory: its file list, the typed reader every later command starts from
//! (`report`, `compare`, `merge`), and its data files' writers. `server` starts the embedded
//! server; `app` holds the commands and wires the stages together. README's "Code map" says what
//! each folder owns.

// Profile errors carry file, line, key, value and the fix; they occur once per run, before any
// load, so their size costs nothing worth boxing for.
#![allow(clippy::result_large_err)]
// No unsafe code but the system calls of `server` (kill, waitpid, prctl), each saying why.
#![deny(unsafe_code)]

// First: its macros (`outln!`, `errln!`) are for every module below.
#[macro_use]
pub(crate) mod console;

pub mod app;
pub(crate) mod audit;
pub(crate) mod capacity;
pub(crate) mod capture;
pub mod cli;
pub mod compare;
pub mod coordinate;
pub(crate) mod driver_error;
pub mod error;
pub mod executor;
pub mod exporter;
pub(crate) mod fault;
pub mod history;
pub(crate) mod listen;
pub(crate) mod merge;
pub mod metrics;
pub(crate) mod monitor;
pub(crate) mod num;
pub mod ops;
pub mod plan;
pub(crate) mod redact;
pub mod report;
pub mod rundir;
pub mod samplelog;
pub(crate) mod serve;
pub mod server;
pub mod summary;
pub(crate) mod sweep;
pub mod vocab;
pub mod watch;
pub mod workload;

pub use app::main;
