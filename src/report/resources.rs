//! `resources.tsv`: one line per sampled second, appended as the sampler takes it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::monitor::{ResourceRow, RowSink, HOST_COLUMNS};

/// Header of `resources.tsv` for a sampler scraping `hosts` (`--server-metrics`, as host:port);
/// empty cells mean "not known here".
pub fn header(hosts: &[String]) -> String {
    let mut cols: Vec<String> = Vec::new();
    for (name, _) in ResourceRow::default().cells() {
        cols.push(name.to_string());
        if name == "res_mb" {
            cols.push("repl".into());
        }
    }
    for h in hosts {
        cols.extend(HOST_COLUMNS.iter().map(|c| format!("{c}@{h}")));
    }
    cols.join("\t")
}

/// One line, without its newline: values with one decimal, blanks for unknowns.
pub fn line(r: &ResourceRow) -> String {
    let f = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
    let mut cells: Vec<String> = Vec::new();
    for (name, v) in r.cells() {
        cells.push(match name {
            "time_ms" => r.time_ms.to_string(),
            "interval_ms" => r.interval_ms.to_string(),
            _ => f(v),
        });
        if name == "res_mb" {
            cells.push(r.status.repl.clone().unwrap_or_default());
        }
    }
    for h in &r.hosts {
        cells.extend(h.values.iter().map(|v| f(*v)));
    }
    cells.join("\t")
}

/// The file, created with its header before any load so a bad path fails early.
pub struct ResourcesFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl ResourcesFile {
    pub fn create(path: &Path, hosts: &[String]) -> Result<Self, Error> {
        let io = |source| Error::Output {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        writeln!(out, "{}", header(hosts))
            .and_then(|_| out.flush())
            .map_err(io)?;
        Ok(ResourcesFile {
            path: path.to_path_buf(),
            out,
        })
    }
}

impl RowSink for ResourcesFile {
    fn write(&mut self, row: &ResourceRow) -> std::io::Result<()> {
        // Flushed per line: an interruption keeps every second taken.
        writeln!(self.out, "{}", line(row)).and_then(|_| self.out.flush())
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_has_one_cell_per_header_column_and_blanks_for_unknowns() {
        let row = ResourceRow {
            time_ms: 5,
            interval_ms: 1000,
            server_cpu_pct: Some(61.25),
            ..Default::default()
        };
        let line = line(&row);
        assert_eq!(line.split('\t').count(), header(&[]).split('\t').count());
        assert!(line.starts_with("5\t1000\t61.2\t\t"), "{line}");
    }

    #[test]
    fn a_file_that_cannot_take_its_header_is_refused_before_any_load() {
        assert!(ResourcesFile::create(Path::new("/dev/full"), &[]).is_err());
    }
}
