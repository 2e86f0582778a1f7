//! `resources.tsv`: one line per sampled second, appended as the sampler takes it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::monitor::{ResourceRow, RowSink};

/// Header of `resources.tsv`; empty cells mean "not known here".
pub const HEADER: &str = "time_ms\tinterval_ms\tserver_cpu_pct\tserver_rss_mb\tdisk_read_kbs\tdisk_write_kbs\tiops\tclient_cpu_pct\tclient_rss_mb\thost_cpu_pct\tinsert_s\tquery_s\tupdate_s\tdelete_s\tgetmore_s\tcommand_s\tconnections\tnet_in_kbs\tnet_out_kbs\tcache_used_mb\tcache_dirty_mb";

/// One line, without its newline: values with one decimal, blanks for unknowns.
pub fn line(r: &ResourceRow) -> String {
    let f = |x: &Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
    let mut cells = vec![
        r.time_ms.to_string(),
        r.interval_ms.to_string(),
        f(&r.server_cpu_pct),
        f(&r.server_rss_mb),
        f(&r.disk_read_kbs),
        f(&r.disk_write_kbs),
        f(&r.iops),
        f(&r.client_cpu_pct),
        f(&r.client_rss_mb),
        f(&r.host_cpu_pct),
    ];
    cells.extend(r.ops_s.iter().map(f));
    cells.extend(
        [
            &r.connections,
            &r.net_in_kbs,
            &r.net_out_kbs,
            &r.cache_used_mb,
            &r.cache_dirty_mb,
        ]
        .into_iter()
        .map(f),
    );
    cells.join("\t")
}

/// The file, created with its header before any load so a bad path fails early.
pub struct ResourcesFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl ResourcesFile {
    pub fn create(path: &Path) -> Result<Self, Error> {
        let io = |source| Error::Output {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        writeln!(out, "{HEADER}")
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
        assert_eq!(line.split('\t').count(), HEADER.split('\t').count());
        assert!(line.starts_with("5\t1000\t61.2\t\t"), "{line}");
    }

    #[test]
    fn a_file_that_cannot_take_its_header_is_refused_before_any_load() {
        assert!(ResourcesFile::create(Path::new("/dev/full")).is_err());
    }
}
