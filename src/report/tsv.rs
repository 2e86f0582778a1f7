//! `summary.tsv`: the summary columns, one row per group per run; a `Run` column first when
//! there is more than one run.

use std::io::Write;

use crate::metrics::COLUMNS;
use crate::summary::Summary;

pub fn render(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    let with_run = s.runs.len() > 1;
    if with_run {
        write!(out, "Run\t")?;
    }
    writeln!(out, "{}", COLUMNS.join("\t"))?;
    for run in &s.runs {
        for row in &run.rows {
            if with_run {
                write!(out, "{}\t", run.run)?;
            }
            let cells: Vec<String> = row
                .cells()
                .into_iter()
                .map(|c| c.replace(['\t', '\n'], " "))
                .collect();
            writeln!(out, "{}", cells.join("\t"))?;
        }
    }
    Ok(())
}
