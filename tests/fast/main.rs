//! The fast tier in one test binary (one link, not six): no server is started here. The live
//! tests, the manifests and the browser's are the other binary, tests/live/.
//!
//! - `pipeline`: the whole pipeline on a scripted backend, outputs checked exactly
//! - `cli`: the binary's commands without a server
//! - `bad_input`: every class of bad input and its one message (docs/reliability.md's table)
//! - `profile_fuzz`: mutated profiles never panic the reader
//! - `module_graph`: the layout's rules (ranks, no upward import)
//! - `console`: what the console shows, TLS failures included

// Tests and examples compute with small known numbers (counts of a few thousand, seconds,
// percentages), where a cast loses nothing; and a test may be one long story, read top to bottom.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    reason = "small known numbers; a test reads as one story"
)]
// Tests and tools print as they like; the library's console is `outln!`/`errln!` (clippy.toml).
#![allow(clippy::disallowed_macros)]

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod cli;
mod console;
mod module_graph;
mod pipeline;
mod profile_fuzz;
