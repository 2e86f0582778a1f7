//! `members.tsv`: one line per member per second (time, the interval its rates cover, shard, member, state, operations per
//! second by kind, replicated operations per second, connections, network, lag, oplog window), `-` where the
//! member did not say. Written as the sampler takes each second, created at its first line (a
//! standalone server has no members, and no file).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::monitor::members::{MemberRow, MemberSink};

/// The file's columns, in order: these, the opcounters' (`OPS_COLUMNS`), then `AFTER`.
const BEFORE: [&str; 5] = ["time_ms", "interval_ms", "shard", "member", "state"];
const AFTER: [&str; 6] = [
    "repl_ops_s",
    "connections",
    "net_in_kbs",
    "net_out_kbs",
    "lag_s",
    "oplog_window_s",
];

/// The file's columns, in order.
pub(crate) fn columns() -> impl Iterator<Item = &'static str> {
    BEFORE
        .into_iter()
        .chain(crate::monitor::row::OPS_COLUMNS)
        .chain(AFTER)
}

/// The writer: the file is created at the first row.
pub(crate) struct MembersFile {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl MembersFile {
    pub(crate) fn new(path: &Path) -> MembersFile {
        MembersFile {
            path: path.to_path_buf(),
            out: None,
        }
    }
}

impl MemberSink for MembersFile {
    fn write(&mut self, rows: &[MemberRow]) -> std::io::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let out = match &mut self.out {
            Some(o) => o,
            None => {
                let mut o = BufWriter::new(File::create(&self.path)?);
                writeln!(o, "{}", columns().collect::<Vec<_>>().join("\t"))?;
                self.out.insert(o)
            }
        };
        for r in rows {
            writeln!(out, "{}", line(r))?;
        }
        // Flushed each second: an interruption keeps every second taken.
        out.flush()
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

/// A row's line, its cells in `columns()` order.
pub(crate) fn line(r: &MemberRow) -> String {
    let mut cells = vec![
        r.time_ms.to_string(),
        r.interval_ms.to_string(),
        r.shard.clone().unwrap_or_else(|| "-".into()),
        r.member.clone(),
        r.state.clone().unwrap_or_else(|| "-".into()),
    ];
    cells.extend(r.ops_s.iter().map(|v| cell(*v, 1)));
    cells.push(cell(r.repl_ops_s, 1));
    cells.push(cell(r.connections, 0));
    cells.push(cell(r.net_in_kbs, 1));
    cells.push(cell(r.net_out_kbs, 1));
    cells.push(cell(r.lag_s, 3));
    cells.push(cell(r.oplog_window_s, 0));
    cells.join("\t")
}

/// The file's rows; a last line cut off by a crash is left out.
pub(crate) fn parse_members(text: &str) -> Result<Vec<MemberRow>, String> {
    let (header, lines) = super::tsv_rows(text)?;
    let at = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no {name} column"))
    };
    let idx: Vec<usize> = columns().map(at).collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for (n, cells) in lines.into_iter().enumerate() {
        let text_cell = |i: usize| {
            let c = cells[idx[i]];
            (c != "-" && !c.is_empty()).then(|| c.to_string())
        };
        let num = |i: usize| -> Result<Option<f64>, String> {
            match cells[idx[i]] {
                "-" | "" => Ok(None),
                c => c
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("line {}: `{c}` is not a number", n + 2)),
            }
        };
        let mut ops_s = [None; 6];
        for (k, cell) in ops_s.iter_mut().enumerate() {
            *cell = num(5 + k)?;
        }
        rows.push(MemberRow {
            time_ms: cells[idx[0]]
                .parse()
                .map_err(|_| format!("line {}: bad time_ms", n + 2))?,
            interval_ms: cells[idx[1]]
                .parse()
                .map_err(|_| format!("line {}: bad interval_ms", n + 2))?,
            shard: text_cell(2),
            member: cells[idx[3]].to_string(),
            state: text_cell(4),
            ops_s,
            repl_ops_s: num(11)?,
            connections: num(12)?,
            net_in_kbs: num(13)?,
            net_out_kbs: num(14)?,
            lag_s: num(15)?,
            oplog_window_s: num(16)?,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_written_read_back_the_same_and_unknowns_are_dashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("members.tsv");
        let mut f = MembersFile::new(&path);
        f.write(&[]).unwrap();
        assert!(!path.exists(), "no row, no file");
        let rows = vec![
            MemberRow {
                time_ms: 1000,
                interval_ms: 1000,
                shard: None,
                member: "h1:27017".into(),
                state: Some("PRIMARY".into()),
                ops_s: [Some(40.0), Some(2.5), None, None, Some(0.0), Some(7.0)],
                repl_ops_s: Some(0.0),
                connections: Some(12.0),
                net_in_kbs: Some(3.5),
                net_out_kbs: Some(9.5),
                lag_s: Some(0.0),
                oplog_window_s: Some(86400.0),
            },
            MemberRow {
                time_ms: 1000,
                shard: Some("shard0".into()),
                member: "h2:27017".into(),
                lag_s: Some(3.125),
                ..Default::default()
            },
        ];
        f.write(&rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().nth(2).unwrap().contains("\t-\t-\t"), "{text}");
        assert_eq!(parse_members(&text).unwrap(), rows);
    }
}
