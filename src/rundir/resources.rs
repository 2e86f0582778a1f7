//! `resources.tsv`, both ways: its header and lines (one writer for the sampler and for
//! `merge`, which adds each part's client CPU), and the file read back into columns and rows.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Error;
use crate::monitor::{HostRow, ResourceRow, RowSink, HOST_COLUMNS};

/// `resources.tsv`: its columns by name, one value per row (None for an empty cell).
#[derive(Debug, Clone, Default)]
pub(crate) struct Resources {
    /// The columns in file order.
    pub(crate) header: Vec<String>,
    pub(crate) columns: BTreeMap<String, Vec<Option<f64>>>,
    /// The word columns (`repl`), by name.
    pub(crate) text: BTreeMap<String, Vec<String>>,
}

/// Header of `resources.tsv` for a sampler scraping `hosts` (`--server-metrics`, as host:port),
/// then `extra` columns (a merge's per-part client CPU); empty cells mean "not known here".
pub(crate) fn header(hosts: &[String], extra: &[String]) -> String {
    let mut cols: Vec<String> = Vec::new();
    for (name, _) in ResourceRow::default().cells() {
        cols.push(name.to_string());
        if name == "res_mb" {
            cols.push("repl".into());
            cols.push("fault".into());
        }
    }
    for h in hosts {
        cols.extend(HOST_COLUMNS.iter().map(|c| format!("{c}@{h}")));
    }
    cols.extend(extra.iter().cloned());
    cols.join("\t")
}

/// One line, without its newline: values with one decimal, blanks for unknowns, then `extra`.
pub(crate) fn line(r: &ResourceRow, extra: &[Option<f64>]) -> String {
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
            cells.push(r.fault.clone().unwrap_or_default());
        }
    }
    for h in &r.hosts {
        cells.extend(h.values.iter().map(|v| f(*v)));
    }
    cells.extend(extra.iter().map(|v| f(*v)));
    cells.join("\t")
}

/// The file, created with its header before any load so a bad path fails early.
pub(crate) struct ResourcesFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl ResourcesFile {
    pub(crate) fn create(path: &Path, hosts: &[String]) -> Result<Self, Error> {
        let io = |source| Error::Output {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        writeln!(out, "{}", header(hosts, &[]))
            .and_then(|_| out.flush())
            .map_err(io)?;
        Ok(ResourcesFile {
            path: path.to_path_buf(),
            out,
        })
    }

    /// Written whole at once (a merge): rows with their extra cells.
    pub(crate) fn write_all<'a>(
        path: &Path,
        hosts: &[String],
        extra: &[String],
        rows: impl Iterator<Item = (&'a ResourceRow, &'a [Option<f64>])>,
    ) -> Result<(), Error> {
        let mut text = header(hosts, extra);
        text.push('\n');
        for (row, cells) in rows {
            text.push_str(&line(row, cells));
            text.push('\n');
        }
        super::write_atomically(path, text.as_bytes())
    }
}

impl RowSink for ResourcesFile {
    fn write(&mut self, row: &ResourceRow) -> std::io::Result<()> {
        // Flushed per line: an interruption keeps every second taken.
        writeln!(self.out, "{}", line(row, &[])).and_then(|_| self.out.flush())
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

pub(crate) fn parse_resources(text: &str) -> Result<Resources, String> {
    let (header, rows) = super::tsv_rows(text)?;
    if header.first() != Some(&"time_ms") {
        return Err("no time_ms header".into());
    }
    let is_text = |h: &str| crate::monitor::row::TEXT_COLUMNS.contains(&h);
    let mut columns: BTreeMap<String, Vec<Option<f64>>> = header
        .iter()
        .filter(|h| !is_text(h))
        .map(|h| (h.to_string(), Vec::new()))
        .collect();
    let mut text_columns: BTreeMap<String, Vec<String>> = header
        .iter()
        .filter(|h| is_text(h))
        .map(|h| (h.to_string(), Vec::new()))
        .collect();
    for (n, cells) in rows.into_iter().enumerate() {
        for (h, c) in header.iter().zip(cells) {
            if let Some(t) = text_columns.get_mut(*h) {
                t.push(c.to_string());
                continue;
            }
            let v = if c.is_empty() {
                None
            } else {
                Some(
                    c.parse::<f64>()
                        .map_err(|_| format!("line {}: `{c}` is not a number", n + 2))?,
                )
            };
            columns.get_mut(*h).expect("a header column").push(v);
        }
    }
    Ok(Resources {
        header: header.iter().map(|h| h.to_string()).collect(),
        columns,
        text: text_columns,
    })
}

impl Resources {
    /// The file's rows as the sampler took them (by column name, so a file with more columns
    /// reads too).
    pub(crate) fn rows(&self) -> Vec<ResourceRow> {
        let n = self.columns.get("time_ms").map_or(0, Vec::len);
        // Remote hosts, in the order of their first column.
        let mut hosts: Vec<String> = Vec::new();
        for name in &self.header {
            if let Some((_, host)) = name.split_once('@') {
                if !hosts.iter().any(|h| h == host) {
                    hosts.push(host.to_string());
                }
            }
        }
        let hosts: Vec<Arc<str>> = hosts.into_iter().map(Arc::from).collect();
        let mut rows: Vec<ResourceRow> = (0..n)
            .map(|_| ResourceRow {
                hosts: hosts
                    .iter()
                    .map(|h| HostRow {
                        host: Arc::clone(h),
                        kind: "exporter",
                        values: Default::default(),
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        for (name, values) in &self.columns {
            for (row, v) in rows.iter_mut().zip(values) {
                match name.split_once('@') {
                    Some((col, host)) => {
                        if let (Some(i), Some(h)) = (
                            HOST_COLUMNS.iter().position(|c| *c == col),
                            row.hosts.iter_mut().find(|h| &*h.host == host),
                        ) {
                            h.values[i] = *v;
                        }
                    }
                    None => {
                        row.set(name, *v);
                    }
                }
            }
        }
        if let Some(repl) = self.text.get("repl") {
            for (row, r) in rows.iter_mut().zip(repl) {
                row.status.repl = (!r.is_empty()).then(|| r.clone());
            }
        }
        if let Some(fault) = self.text.get("fault") {
            for (row, f) in rows.iter_mut().zip(fault) {
                row.fault = (!f.is_empty()).then(|| f.clone());
            }
        }
        rows
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
        let line = line(&row, &[]);
        assert_eq!(
            line.split('\t').count(),
            header(&[], &[]).split('\t').count()
        );
        assert!(line.starts_with("5\t1000\t61.2\t\t"), "{line}");
    }

    #[test]
    fn a_file_that_cannot_take_its_header_is_refused_before_any_load() {
        assert!(ResourcesFile::create(Path::new("/dev/full"), &[]).is_err());
    }

    #[test]
    fn rows_written_read_back_the_same() {
        let row = ResourceRow {
            time_ms: 1000,
            interval_ms: 1000,
            server_cpu_pct: Some(12.5),
            client_cpu_pct: Some(3.0),
            ..Default::default()
        };
        let text = format!(
            "{}\n{}\n",
            header(&[], &["client_cpu_pct_part0".into()]),
            line(&row, &[Some(2.5)])
        );
        let parsed = parse_resources(&text).unwrap();
        assert_eq!(parsed.columns["client_cpu_pct_part0"], vec![Some(2.5)]);
        let back = &parsed.rows()[0];
        assert_eq!(
            (back.time_ms, back.server_cpu_pct, back.client_cpu_pct),
            (1000, Some(12.5), Some(3.0))
        );
    }

    #[test]
    fn resources_columns_keep_blanks_as_unknown() {
        let r = parse_resources("time_ms\tiops\n1000\t\n2000\t5.5\n").unwrap();
        assert_eq!(r.columns["iops"], vec![None, Some(5.5)]);
        assert!(parse_resources("time_ms\tiops\n1000\n").is_err());
    }
}
