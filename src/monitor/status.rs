//! `serverStatus` over the wire, so remote servers too: the fields of mongostat (opcounters,
//! queues, active clients, WiredTiger cache, checkpoints, network, connections, memory,
//! replica set state), the server's own operation latencies, and its CPU from `extra_info`,
//! counters turned into per-second rates. Which field feeds which column: docs/output.md.

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};

use super::row::{ResourceRow, StatusCells, OPCOUNTERS};

/// Longest wait for one `serverStatus`; past it the row's server columns stay empty.
const STATUS_TIMEOUT: Duration = Duration::from_millis(900);

#[derive(Default)]
pub(crate) struct Status {
    last: Option<Document>,
}

impl Status {
    /// Fills the serverStatus columns of `row`, with rates over the last `secs` seconds.
    pub(crate) async fn read(
        &mut self,
        client: &mongodb::Client,
        row: &mut ResourceRow,
        secs: f64,
    ) {
        let status = tokio::time::timeout(
            STATUS_TIMEOUT,
            client
                .database("admin")
                .run_command(doc! { "serverStatus": 1 }),
        )
        .await;
        match status {
            Ok(Ok(status)) => {
                let rate = |path: &[&str]| -> Option<f64> {
                    let (now, last) = (number(&status, path)?, number(self.last.as_ref()?, path)?);
                    Some(((now - last) / secs).max(0.0))
                };
                for (i, op) in OPCOUNTERS.iter().enumerate() {
                    row.ops_s[i] = rate(&["opcounters", op]);
                }
                row.net_in_kbs = rate(&["network", "bytesIn"]).map(|b| b / 1024.0);
                row.net_out_kbs = rate(&["network", "bytesOut"]).map(|b| b / 1024.0);
                row.connections = number(&status, &["connections", "current"]);
                let mb =
                    |k: &str| number(&status, &["wiredTiger", "cache", k]).map(|b| b / 1_048_576.0);
                row.cache_used_mb = mb("bytes currently in the cache");
                row.cache_dirty_mb = mb("tracked dirty bytes in the cache");
                row.status = self.mongostat(&status, secs);
                self.last = Some(status);
            }
            // No answer in time: leave the server columns empty, keep sampling.
            _ => self.last = None,
        }
    }
}

impl Status {
    /// The columns mongostat shows beyond opcounters, the server's own latencies and CPU.
    fn mongostat(&self, status: &Document, secs: f64) -> StatusCells {
        let last = self.last.as_ref();
        let at = |path: &[&str]| number(status, path);
        let delta = |path: &[&str]| Some((at(path)? - number(last?, path)?).max(0.0));
        let cache = |k: &str| at(&["wiredTiger", "cache", k]);
        let pct_of_cache = |k: &str| {
            let max = cache("maximum bytes configured").filter(|m| *m > 0.0)?;
            Some(cache(k)? * 100.0 / max)
        };
        // Average latency over the interval: microseconds spent / operations done.
        let latency = |kind: &str| {
            let ops = delta(&["opLatencies", kind, "ops"])?;
            let us = delta(&["opLatencies", kind, "latency"])?;
            (ops > 0.0).then(|| us / ops)
        };
        // getrusage user + system time of the server process (Linux mongod), in microseconds.
        let cpu_us = |d: &Document| -> Option<f64> {
            Some(
                number(d, &["extra_info", "user_time_us"])?
                    + number(d, &["extra_info", "system_time_us"])?,
            )
        };
        let cpu_pct = match (cpu_us(status), last.and_then(cpu_us)) {
            (Some(now), Some(before)) => Some(((now - before) / 1e6 / secs * 100.0).max(0.0)),
            _ => None,
        };
        StatusCells {
            cpu_pct,
            qr: at(&["globalLock", "currentQueue", "readers"]),
            qw: at(&["globalLock", "currentQueue", "writers"]),
            ar: at(&["globalLock", "activeClients", "readers"]),
            aw: at(&["globalLock", "activeClients", "writers"]),
            dirty_pct: pct_of_cache("tracked dirty bytes in the cache"),
            used_pct: pct_of_cache("bytes currently in the cache"),
            flushes: delta(&["wiredTiger", "transaction", "transaction checkpoints"]),
            vsize_mb: at(&["mem", "virtual"]),
            res_mb: at(&["mem", "resident"]),
            repl: repl_state(status),
            reads_us: latency("reads"),
            writes_us: latency("writes"),
            commands_us: latency("commands"),
        }
    }
}

/// mongostat's `repl` column: PRI, SEC, ARB, or RTR (a mongos); none for a standalone.
fn repl_state(status: &Document) -> Option<String> {
    if status
        .get_str("process")
        .is_ok_and(|p| p.contains("mongos"))
    {
        return Some("RTR".into());
    }
    let repl = status.get_document("repl").ok()?;
    let yes = |k: &str| repl.get_bool(k).unwrap_or(false);
    let state = if yes("ismaster") || yes("isWritablePrimary") {
        "PRI"
    } else if yes("secondary") {
        "SEC"
    } else if yes("arbiterOnly") {
        "ARB"
    } else {
        "OTH"
    };
    Some(state.into())
}

pub(crate) fn number(d: &Document, path: &[&str]) -> Option<f64> {
    let (last, parents) = path.split_last()?;
    let mut cur = d;
    for p in parents {
        cur = cur.get_document(p).ok()?;
    }
    match cur.get(last)? {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(crate::num::real_signed(*n)),
        Bson::Double(n) => Some(*n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_numbers_of_any_bson_width_are_read() {
        let d = doc! { "a": { "b": 3_i32, "c": 4_i64, "d": 2.5 } };
        assert_eq!(number(&d, &["a", "b"]), Some(3.0));
        assert_eq!(number(&d, &["a", "c"]), Some(4.0));
        assert_eq!(number(&d, &["a", "d"]), Some(2.5));
        assert_eq!(number(&d, &["a", "x"]), None);
    }

    #[test]
    fn mongostat_columns_come_from_their_serverstatus_fields() {
        let status = |checkpoints: i64, user_us: i64, reads_ops: i64, reads_us: i64| {
            doc! {
                "process": "mongod",
                "globalLock": { "currentQueue": { "readers": 1, "writers": 2 },
                                "activeClients": { "readers": 3, "writers": 4 } },
                "wiredTiger": {
                    "cache": { "maximum bytes configured": 1000_i64,
                               "tracked dirty bytes in the cache": 50_i64,
                               "bytes currently in the cache": 250_i64 },
                    "transaction": { "transaction checkpoints": checkpoints },
                },
                "mem": { "virtual": 2004, "resident": 28 },
                "repl": { "isWritablePrimary": true, "secondary": false },
                "opLatencies": { "reads": { "latency": reads_us, "ops": reads_ops } },
                "extra_info": { "user_time_us": user_us, "system_time_us": 0_i64 },
            }
        };
        let mut s = Status::default();
        let first = s.mongostat(&status(5, 1_000_000, 10, 1000), 1.0);
        assert_eq!(first.flushes, None, "a rate needs two readings");
        assert_eq!(first.cpu_pct, None);
        s.last = Some(status(5, 1_000_000, 10, 1000));
        // Two seconds later: 1 checkpoint, 0.5 s of CPU, 4 reads in 2000 us.
        let c = s.mongostat(&status(6, 1_500_000, 14, 3000), 2.0);
        assert_eq!(
            (c.qr, c.qw, c.ar, c.aw),
            (Some(1.0), Some(2.0), Some(3.0), Some(4.0))
        );
        assert_eq!((c.dirty_pct, c.used_pct), (Some(5.0), Some(25.0)));
        assert_eq!(c.flushes, Some(1.0));
        assert_eq!((c.vsize_mb, c.res_mb), (Some(2004.0), Some(28.0)));
        assert_eq!(c.repl.as_deref(), Some("PRI"));
        assert_eq!(c.reads_us, Some(500.0));
        assert_eq!(c.writes_us, None);
        assert_eq!(c.cpu_pct, Some(25.0));
        assert_eq!(repl_state(&doc! { "process": "mongod" }), None);
    }
}
