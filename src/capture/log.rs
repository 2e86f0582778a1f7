//! MongoDB 4.4+ structured (JSON) log lines to `Observed` operations: the slow-operation lines
//! (`"id": 51803`), whose `attr` holds the namespace, the command (or an update's or delete's
//! statement, `type` `update` / `remove`), the plan, the counts and `durationMillis`. Every other
//! line is counted, never fatal.

use std::io::BufRead;

use mongodb::bson::{Bson, Document};

use super::{LeftOut, Observed};

/// The id of mongod's slow-operation line ("Slow query").
pub(crate) const SLOW_OPERATION: i64 = 51803;

/// Lines read and what became of them.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub(crate) operations: Vec<Observed>,
    pub(crate) lines: u64,
}

/// Reads log lines from `input`, keeping operations that ended within `[since, until]` (ms since
/// the epoch, either open).
#[cfg(test)]
pub(crate) fn read(
    input: impl BufRead,
    since: Option<i64>,
    until: Option<i64>,
    left: &mut LeftOut,
) -> std::io::Result<Read> {
    let mut entries = Entries::new(input, since, until);
    let mut out = Read::default();
    for o in &mut entries {
        out.operations.push(o?);
    }
    out.lines = entries.lines;
    left.not_json += entries.left.not_json;
    left.not_operations += entries.left.not_operations;
    left.outside_window += entries.left.outside_window;
    Ok(out)
}

/// A log's operations one at a time, as its lines are read: those that ended within `[since,
/// until]` (ms since the epoch, either open). The other lines are counted in `left`.
pub(crate) struct Entries<R: BufRead> {
    lines_of: std::io::Split<R>,
    since: Option<i64>,
    until: Option<i64>,
    /// Lines read (blank ones left out).
    pub(crate) lines: u64,
    /// Lines that are not JSON, not operations, or outside the window.
    pub(crate) left: LeftOut,
}

impl<R: BufRead> Entries<R> {
    pub(crate) fn new(input: R, since: Option<i64>, until: Option<i64>) -> Entries<R> {
        Entries {
            lines_of: input.split(b'\n'),
            since,
            until,
            lines: 0,
            left: LeftOut::default(),
        }
    }
}

impl<R: BufRead> Iterator for Entries<R> {
    type Item = std::io::Result<Observed>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let line = match self.lines_of.next()? {
                Ok(l) => l,
                Err(e) => return Some(Err(e)),
            };
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            self.lines += 1;
            let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
                self.left.not_json += 1;
                continue;
            };
            match parse_line(&json) {
                Some(op) => {
                    if self.since.is_some_and(|s| op.ts_ms < s)
                        || self.until.is_some_and(|u| op.ts_ms > u)
                    {
                        self.left.outside_window += 1;
                    } else {
                        return Some(Ok(op));
                    }
                }
                None => self.left.not_operations += 1,
            }
        }
    }
}

/// One slow-operation line, or None for any other line.
pub(crate) fn parse_line(json: &serde_json::Value) -> Option<Observed> {
    if json.get("id").and_then(|v| v.as_i64()) != Some(SLOW_OPERATION) {
        return None;
    }
    let attr = json.get("attr")?;
    let ns = attr.get("ns").and_then(|v| v.as_str()).unwrap_or("");
    let (db, coll) = ns.split_once('.').unwrap_or((ns, ""));
    let ts_ms = json
        .get("t")
        .and_then(|t| t.get("$date"))
        .and_then(date_ms)?;
    let command = attr.get("command").and_then(document).unwrap_or_default();
    let truncated = attr.get("truncated").is_some() || has_truncated(&command);
    let int = |k: &str| attr.get(k).and_then(|v| v.as_i64());
    // A line without its namespace: the command's `$db` and the collection it names.
    let db = if db.is_empty() {
        command.get_str("$db").unwrap_or("")
    } else {
        db
    };
    let named = command
        .iter()
        .next()
        .and_then(|(_, v)| v.as_str())
        .unwrap_or("");
    let coll = if coll.is_empty() || coll == "$cmd" {
        named
    } else {
        coll
    };
    Some(Observed {
        ts_ms,
        db: db.to_string(),
        coll: coll.to_string(),
        op_type: attr
            .get("type")
            .and_then(|v| v.as_str())
            .unwrap_or("command")
            .to_string(),
        command,
        millis: attr
            .get("durationMillis")
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0),
        app: attr
            .get("appName")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        conn: json.get("ctx").and_then(|v| v.as_str()).map(str::to_string),
        client: attr
            .get("remote")
            .or_else(|| attr.get("client"))
            .and_then(|v| v.as_str())
            .map(str::to_string),
        plan: attr
            .get("planSummary")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        keys_examined: int("keysExamined"),
        docs_examined: int("docsExamined"),
        nreturned: int("nreturned"),
        cursor_id: int("cursorid").filter(|&c| c != 0),
        ninserted: int("ninserted"),
        truncated,
        session: match (attr.get("lsid"), attr.get("txnNumber")) {
            (Some(l), Some(n)) => document(&serde_json::json!({ "lsid": l, "txnNumber": n })),
            _ => None,
        },
    })
}

/// A command's JSON as BSON. The cluster time and read preference are dropped first (capture drops
/// them anyway); a value that is not Extended JSON as BSON reads it (a log may hold forms the
/// BSON crate does not parse, such as `$uuid`) becomes its text, so one odd field never loses the
/// command.
fn document(v: &serde_json::Value) -> Option<Document> {
    let serde_json::Value::Object(m) = v else {
        return None;
    };
    let mut d = Document::new();
    for (k, v) in m {
        if matches!(k.as_str(), "$clusterTime" | "$readPreference") {
            continue;
        }
        d.insert(k.clone(), lenient(v));
    }
    Some(d)
}

fn lenient(v: &serde_json::Value) -> Bson {
    if let Ok(b) = Bson::try_from(v.clone()) {
        return b;
    }
    match v {
        serde_json::Value::Object(m) => {
            Bson::Document(m.iter().map(|(k, v)| (k.clone(), lenient(v))).collect())
        }
        serde_json::Value::Array(a) => Bson::Array(a.iter().map(lenient).collect()),
        other => Bson::String(other.to_string()),
    }
}

/// A log's `$date`: an RFC 3339 string (`2024-01-31T12:00:00.123+00:00`) or
/// `{"$numberLong": ms}`.
fn date_ms(v: &serde_json::Value) -> Option<i64> {
    if let Some(s) = v.as_str() {
        return mongodb::bson::DateTime::parse_rfc3339_str(s)
            .ok()
            .map(|d| d.timestamp_millis());
    }
    v.get("$numberLong")
        .and_then(|n| n.as_str())
        .and_then(|n| n.parse().ok())
        .or_else(|| v.as_i64())
}

fn has_truncated(d: &Document) -> bool {
    d.iter().any(|(k, v)| {
        k == "$truncated"
            || match v {
                Bson::Document(d) => has_truncated(d),
                _ => false,
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_query_line_gives_its_namespace_command_and_counts() {
        let line = r#"{"t":{"$date":"2024-03-01T10:00:00.500+00:00"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn7","msg":"Slow query","attr":{"type":"command","ns":"shop.orders","appName":"web","command":{"find":"orders","filter":{"status":"open"},"limit":20,"lsid":{"id":{"$uuid":"00000000-0000-4000-8000-000000000000"}},"$db":"shop"},"planSummary":"IXSCAN { status: 1 }","keysExamined":20,"docsExamined":20,"nreturned":20,"durationMillis":3}}"#;
        let op = parse_line(&serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!((op.db.as_str(), op.coll.as_str()), ("shop", "orders"));
        assert_eq!(op.ts_ms, 1_709_287_200_500);
        assert_eq!(op.command.get_str("find").unwrap(), "orders");
        assert_eq!(op.app.as_deref(), Some("web"));
        assert_eq!(op.conn.as_deref(), Some("conn7"));
        assert_eq!(op.plan.as_deref(), Some("IXSCAN { status: 1 }"));
        assert_eq!((op.keys_examined, op.nreturned), (Some(20), Some(20)));
        assert_eq!(op.millis, 3.0);
        assert!(!op.truncated);
    }

    #[test]
    fn lines_that_are_not_json_or_not_operations_are_counted_not_fatal() {
        let text = "not json at all\n\
            {\"t\":{\"$date\":\"2024-03-01T10:00:00.000Z\"},\"s\":\"I\",\"c\":\"NETWORK\",\"id\":22943,\"ctx\":\"listener\",\"msg\":\"Connection accepted\",\"attr\":{}}\n\
            {\"t\":{\"$date\":\"2024-03-01T10:00:01.000Z\"},\"s\":\"I\",\"c\":\"COMMAND\",\"id\":51803,\"ctx\":\"conn1\",\"msg\":\"Slow query\",\"attr\":{\"type\":\"command\",\"ns\":\"a.b\",\"command\":{\"ping\":1},\"durationMillis\":0}}\n";
        let mut left = LeftOut::default();
        let read = read(text.as_bytes(), None, None, &mut left).unwrap();
        assert_eq!(read.lines, 3);
        assert_eq!(read.operations.len(), 1);
        assert_eq!((left.not_json, left.not_operations), (1, 1));
    }

    #[test]
    fn since_and_until_keep_the_window() {
        let line = |s: u32| {
            format!("{{\"t\":{{\"$date\":\"2024-03-01T10:00:{s:02}.000Z\"}},\"id\":51803,\"ctx\":\"conn1\",\"attr\":{{\"type\":\"command\",\"ns\":\"a.b\",\"command\":{{\"find\":\"b\"}},\"durationMillis\":0}}}}\n")
        };
        let text: String = (0..10).map(line).collect();
        let since = 1_709_287_202_000;
        let until = 1_709_287_205_000;
        let mut left = LeftOut::default();
        let read = read(text.as_bytes(), Some(since), Some(until), &mut left).unwrap();
        assert_eq!(read.operations.len(), 4);
        assert_eq!(left.outside_window, 6);
    }
}
