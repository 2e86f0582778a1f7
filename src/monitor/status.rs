//! `serverStatus` over the wire, so remote servers too: opcounters, connections, network and
//! WiredTiger cache, the fields of mongostat, turned into per-second rates.

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};

use super::row::{ResourceRow, OPCOUNTERS};

/// Longest wait for one `serverStatus`; past it the row's server columns stay empty.
const STATUS_TIMEOUT: Duration = Duration::from_millis(900);

#[derive(Default)]
pub struct Status {
    last: Option<Document>,
}

impl Status {
    /// Fills the serverStatus columns of `row`, with rates over the last `secs` seconds.
    pub async fn read(&mut self, client: &mongodb::Client, row: &mut ResourceRow, secs: f64) {
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
                self.last = Some(status);
            }
            // No answer in time: leave the server columns empty, keep sampling.
            _ => self.last = None,
        }
    }
}

fn number(d: &Document, path: &[&str]) -> Option<f64> {
    let (last, parents) = path.split_last()?;
    let mut cur = d;
    for p in parents {
        cur = cur.get_document(p).ok()?;
    }
    match cur.get(last)? {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
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
}
