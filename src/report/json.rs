//! `summary.json`: the whole `Summary`, with `schema_version`.

use std::io::Write;

use crate::summary::Summary;

pub fn render(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, s)?;
    writeln!(out)
}
