//! Reading a member each second: its hello, serverStatus and, from a primary, replSetGetStatus;
//! the oplog's window; a set's view of its members, and each member's row.

use super::*;

/// Each set's view: its primary's `replSetGetStatus` (of two members that both say they are
/// primary, the one elected last).
pub(super) fn views(members: &[Member], reads: &[Read]) -> BTreeMap<Option<String>, SetStatus> {
    let mut views: BTreeMap<Option<String>, SetStatus> = BTreeMap::new();
    for (m, r) in members.iter().zip(reads) {
        let Some(s) = r.set_status.as_ref() else {
            continue;
        };
        let Some(p) = s.primary().filter(|p| p.is_self || p.name == m.host) else {
            continue;
        };
        let newer = views
            .get(&m.shard)
            .and_then(SetStatus::primary)
            .is_none_or(|q| p.election_ms > q.election_ms);
        if newer {
            views.insert(m.shard.clone(), s.clone());
        }
    }
    views
}

/// A member's row: its rates over the time between its last two `serverStatus` answers.
pub(super) fn row(
    m: &mut Member,
    r: &Read,
    view: Option<&SetStatus>,
    state: Option<String>,
    now: u64,
    last_ms: u64,
) -> MemberRow {
    let (interval_ms, secs) = match (&r.status, &m.last) {
        (Some((at, _)), Some((before, _))) => {
            let ms = at.saturating_sub(*before);
            (ms, (crate::num::real(ms) / 1000.0).max(1e-3))
        }
        _ => (now.saturating_sub(last_ms), 1.0),
    };
    let c = r.status.as_ref().map(|(_, c)| c);
    let last = m.last.as_ref().map(|(_, c)| c);
    let rate = |now: Option<f64>, before: Option<f64>| Some(((now? - before?) / secs).max(0.0));
    let mut ops_s = [None; 6];
    for (i, cell) in ops_s.iter_mut().enumerate() {
        *cell = rate(c.and_then(|c| c.ops[i]), last.and_then(|l| l.ops[i]));
    }
    let row = MemberRow {
        time_ms: now,
        interval_ms,
        shard: m.shard.clone(),
        member: m.host.clone(),
        state,
        ops_s,
        repl_ops_s: rate(c.and_then(|c| c.repl), last.and_then(|l| l.repl)),
        connections: c.and_then(|c| c.connections),
        net_in_kbs: rate(c.and_then(|c| c.bytes_in), last.and_then(|l| l.bytes_in))
            .map(|b| b / 1024.0),
        net_out_kbs: rate(c.and_then(|c| c.bytes_out), last.and_then(|l| l.bytes_out))
            .map(|b| b / 1024.0),
        lag_s: view.and_then(|v| v.lag_s(&m.host)),
        oplog_window_s: m.oplog,
    };
    m.last = r.status.clone();
    row
}

/// The member's oplog window: a finished reading taken in, a new one started when one is due
/// (on its own task, with its own time limit, so it never holds up a second's reads). Returns
/// the warning a refusal gives.
pub(super) async fn oplog(m: &mut Member, r: &Read, after: u64) -> Option<String> {
    let mut warning = None;
    if m.oplog_task.as_ref().is_some_and(|t| t.is_finished()) {
        let task = m.oplog_task.take()?;
        match task.await.ok().flatten() {
            Some(Ok(w)) => m.oplog = w,
            Some(Err(e)) => {
                m.oplog = None;
                if !m.said.contains(&OPLOG_FIND) {
                    m.said.push(OPLOG_FIND);
                    warning = Some(refusal(
                        &m.host,
                        OPLOG_FIND,
                        &words(&e),
                        code_name(&e).as_deref(),
                    ));
                }
            }
            None => {}
        }
    }
    let newest = r
        .hello
        .as_ref()
        .filter(|h| h.set_name.is_some() && !h.arbiter)
        .and_then(|h| h.last_write_s);
    if let Some(newest) = newest {
        if m.oplog_task.is_none() && after.saturating_sub(m.oplog_read_ms) >= OPLOG_EVERY_MS {
            m.oplog_read_ms = after;
            let client = m.client.clone();
            m.oplog_task = Some(tokio::spawn(async move {
                tokio::time::timeout(READ_TIMEOUT, oplog_window(&client, newest))
                    .await
                    .ok()
            }));
        }
    }
    warning
}

/// A member's `hello`, then `serverStatus` and, on a primary, `replSetGetStatus`, all within
/// `READ_TIMEOUT`; each answer timed when it came.
pub(super) async fn read(client: Client) -> Read {
    let admin = client.database("admin");
    let mut r = Read::default();
    let work = async {
        match admin.run_command(doc! { "hello": 1 }).await {
            Ok(h) => r.hello = Some(Hello::read(&h)),
            Err(e) => {
                r.failed.push(("hello", words(&e), code_name(&e)));
                return;
            }
        }
        let primary = r.hello.as_ref().is_some_and(|h| h.writable_primary);
        let status = async {
            let s = admin
                .run_command(doc! { "serverStatus": 1, "repl": 0, "metrics": 0, "locks": 0 })
                .await;
            (now_ms(), s)
        };
        let set = async {
            if primary {
                Some(admin.run_command(doc! { "replSetGetStatus": 1 }).await)
            } else {
                None
            }
        };
        let ((at, status), set) = tokio::join!(status, set);
        match status {
            Ok(s) => r.status = Some((at, Counters::read(&s))),
            Err(e) => r.failed.push(("serverStatus", words(&e), code_name(&e))),
        }
        match set {
            Some(Ok(s)) => r.set_status = Some(SetStatus::read(&s)),
            Some(Err(e)) => r
                .failed
                .push(("replSetGetStatus", words(&e), code_name(&e))),
            None => {}
        }
    };
    if tokio::time::timeout(READ_TIMEOUT, work).await.is_err() {
        let command = if r.hello.is_none() {
            "hello"
        } else {
            "serverStatus"
        };
        if r.status.is_none() {
            r.failed
                .push((command, "no answer within 900 ms".into(), None));
        }
    }
    r
}

/// A member's oplog window: its newest entry's time (`newest_s`, its `hello`'s
/// `lastWrite.opTime`) less its oldest entry's `ts`, in seconds (none for an empty oplog). What
/// `rs.printReplicationInfo()` reports as "log length start to end".
pub(super) async fn oplog_window(
    client: &Client,
    newest_s: u32,
) -> mongodb::error::Result<Option<f64>> {
    let oldest = client
        .database("local")
        .collection::<Document>("oplog.rs")
        .find_one(doc! {})
        .sort(doc! { "$natural": 1 })
        .projection(doc! { "ts": 1, "_id": 0 })
        .await?;
    Ok(oldest
        .and_then(|d| d.get_timestamp("ts").ok())
        .map(|t| f64::from(newest_s.saturating_sub(t.time))))
}
