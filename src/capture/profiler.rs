//! The profiler as a source: profiling set on each database for the window (level 2, or level 1
//! with `slowms: 0` and a sample rate), `system.profile` read as it fills by `ts` (a capped
//! collection that wrapped past what was read is noticed and said), and every database's previous
//! settings put back on success, error and interrupt alike. Then what only a live server knows of
//! each captured collection: its indexes, count, average size and a `$sample` of documents.

use std::collections::HashMap;
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document};
use mongodb::{Client, Collection};
use tokio_util::sync::CancellationToken;

use super::{as_f64, as_i64, CollectionInfo, Observed};
use crate::error::Error;

/// How often `system.profile` is read while the window lasts.
const POLL: Duration = Duration::from_millis(500);

/// Documents sampled per collection for its template.
pub(crate) const SAMPLE: i64 = 200;
/// Most `_id`s read of each captured collection, to find the fields that reference it.
pub(crate) const IDS: i64 = 20_000;

/// What the profiler gave.
#[derive(Debug, Default)]
pub(crate) struct Profiled {
    /// Said to the user: a wrap, a level that sees only slow operations.
    pub(crate) warnings: Vec<String>,
}

/// A database's profiler settings, as `{profile: -1}` reports them.
#[derive(Debug, Clone)]
struct Settings {
    db: String,
    was: i64,
    slowms: Option<i64>,
    sample_rate: Option<f64>,
    filter: Option<Bson>,
}

async fn settings(client: &Client, db: &str) -> Result<Settings, Error> {
    let r = client
        .database(db)
        .run_command(doc! { "profile": -1 })
        .await
        .map_err(|e| refused(db, "read the profiler's settings of", &e))?;
    Ok(Settings {
        db: db.to_string(),
        was: r.get("was").and_then(as_i64).unwrap_or(0),
        slowms: r.get("slowms").and_then(as_i64),
        sample_rate: r.get("sampleRate").and_then(as_f64),
        filter: r.get("filter").cloned(),
    })
}

fn refused(db: &str, what: &str, e: &mongodb::error::Error) -> Error {
    let text = crate::driver_error::said(e);
    let unauthorized = text.contains("not authorized")
        || crate::driver_error::server_code(e) == Some(crate::vocab::ServerCode(13));
    let fix = if unauthorized {
        format!("fix: use a user with the dbAdmin role on {db} (the profiler needs it), or capture from the log (--from-log)")
    } else {
        "fix: check the URI and that the server is reachable, or capture from the log (--from-log)"
            .into()
    };
    Error::Server(format!("cannot {what} database {db}: {text}\n  {fix}"))
}

async fn restore(client: &Client, s: &Settings) -> Result<(), Error> {
    let mut cmd = doc! { "profile": s.was };
    if let Some(ms) = s.slowms {
        cmd.insert("slowms", ms);
    }
    if let Some(r) = s.sample_rate {
        cmd.insert("sampleRate", r);
    }
    if let Some(f) = &s.filter {
        cmd.insert("filter", f.clone());
    }
    client
        .database(&s.db)
        .run_command(cmd)
        .await
        .map(|_| ())
        .map_err(|e| refused(&s.db, "put back the profiler's settings of", &e))
}

/// Profiles `dbs` for `window` (or until `stop`), reading what they record, and puts every
/// database's settings back before returning, whatever happened.
pub(crate) async fn capture(
    client: &Client,
    dbs: &[String],
    window: Duration,
    sample_rate: Option<f64>,
    stop: &CancellationToken,
    sink: &mut (dyn super::Sink + Send),
) -> Result<Profiled, Error> {
    let mut before = Vec::new();
    for db in dbs {
        before.push(settings(client, db).await?);
    }
    let begin = server_time(client).await;
    let mut set_ok = Vec::new();
    let mut result = Ok(Profiled::default());
    for s in &before {
        let cmd = match sample_rate {
            Some(r) => doc! { "profile": 1, "slowms": 0, "sampleRate": r },
            None => doc! { "profile": 2 },
        };
        match client.database(&s.db).run_command(cmd).await {
            Ok(_) => set_ok.push(s.clone()),
            Err(e) => {
                result = Err(refused(&s.db, "set the profiler on", &e));
                break;
            }
        }
    }
    if result.is_ok() {
        result = read(client, dbs, begin, window, stop, sink).await;
    }
    // Put back every database that was changed, even after an error or an interrupt.
    let mut restore_err = None;
    for s in &set_ok {
        if let Err(e) = restore(client, s).await {
            restore_err.get_or_insert(e);
        }
    }
    match (result, restore_err) {
        (Ok(p), None) => Ok(p),
        (Err(e), None) | (Ok(_), Some(e)) => Err(e),
        // Both failed: the put-back failure matters most (a database may still be profiled).
        (Err(read), Some(put_back)) => Err(Error::Server(format!(
            "{put_back}\n  (capture had stopped because: {read})"
        ))),
    }
}

/// The server's own clock (`hello`'s `localTime`): the window is compared with the profiler's
/// `ts`, which the server stamps, whatever the capturing host's clock says.
async fn server_time(client: &Client) -> mongodb::bson::DateTime {
    client
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .ok()
        .and_then(|r| r.get_datetime("localTime").ok().copied())
        .unwrap_or_else(mongodb::bson::DateTime::now)
}

/// How far back each read of `system.profile` looks again: an entry stamped a little before the
/// newest one read may be written after it.
const OVERLAP_MS: i64 = 1000;

async fn read(
    client: &Client,
    dbs: &[String],
    begin: mongodb::bson::DateTime,
    window: Duration,
    stop: &CancellationToken,
    sink: &mut (dyn super::Sink + Send),
) -> Result<Profiled, Error> {
    let started = std::time::Instant::now();
    let mut out = Profiled::default();
    // Per database: the newest ts read (entries from before the window are not read), and the
    // entries of the last OVERLAP_MS already read, counted by (ts, content): entries alike in
    // every field (one session's same command in the same ms) are told apart by their number.
    let mut newest: HashMap<String, i64> = dbs
        .iter()
        .map(|d| (d.clone(), begin.timestamp_millis()))
        .collect();
    let mut done: HashMap<String, HashMap<(i64, String), usize>> = HashMap::new();
    loop {
        let ending = started.elapsed() >= window || stop.is_cancelled();
        for db in dbs {
            let profile: Collection<Document> = client.database(db).collection("system.profile");
            let last = newest[db];
            let from = if last > begin.timestamp_millis() {
                (last - OVERLAP_MS).max(begin.timestamp_millis())
            } else {
                last
            };
            // A capped collection that wrapped: its oldest entry is newer than what was read.
            if let Ok(Some(oldest)) = profile.find_one(doc! {}).sort(doc! { "ts": 1 }).await {
                if let Ok(ts) = oldest.get_datetime("ts") {
                    if ts.timestamp_millis() > last && last > begin.timestamp_millis() {
                        out.warnings.push(format!(
                            "{db}.system.profile wrapped: operations between {} and {} were overwritten before they were read; give it more room (profiling off, drop system.profile, create it capped with a larger size)",
                            mongodb::bson::DateTime::from_millis(last).try_to_rfc3339_string().unwrap_or_default(),
                            ts.try_to_rfc3339_string().unwrap_or_default()
                        ));
                    }
                }
            }
            let mut cursor = profile
                .find(doc! { "ts": { "$gte": mongodb::bson::DateTime::from_millis(from) } })
                .sort(doc! { "ts": 1 })
                .await
                .map_err(|e| refused(db, "read system.profile of", &e))?;
            let before = done.remove(db).unwrap_or_default();
            let mut now: HashMap<(i64, String), usize> = HashMap::new();
            let mut top = last;
            while cursor
                .advance()
                .await
                .map_err(|e| refused(db, "read system.profile of", &e))?
            {
                let d: Document = cursor.deserialize_current().map_err(|e| {
                    Error::Server(format!(
                        "reading system.profile of {db}: {}",
                        crate::driver_error::said(&e)
                    ))
                })?;
                let ts = d
                    .get_datetime("ts")
                    .map(|t| t.timestamp_millis())
                    .unwrap_or(from);
                top = top.max(ts);
                let key = (ts, d.to_string());
                let n = now.entry(key.clone()).or_default();
                *n += 1;
                if *n <= before.get(&key).copied().unwrap_or(0) {
                    continue;
                }
                if let Some(o) = observed(&d) {
                    sink.take(o);
                }
            }
            newest.insert(db.clone(), top);
            now.retain(|(ts, _), _| *ts >= top - OVERLAP_MS);
            done.insert(db.clone(), now);
        }
        if ending {
            return Ok(out);
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.cancelled() => {}
        }
    }
}

/// A `system.profile` entry as an operation; None for the profiler's own traffic.
fn observed(d: &Document) -> Option<Observed> {
    let ns = d.get_str("ns").unwrap_or("");
    let (db, coll) = ns.split_once('.').unwrap_or((ns, ""));
    let command = d.get_document("command").cloned().unwrap_or_default();
    if coll == "system.profile" || command.contains_key("profile") {
        return None;
    }
    let int = |k: &str| d.get(k).and_then(as_i64);
    Some(Observed {
        ts_ms: d
            .get_datetime("ts")
            .map(|t| t.timestamp_millis())
            .unwrap_or(0),
        db: db.to_string(),
        coll: coll.to_string(),
        op_type: d.get_str("op").unwrap_or("command").to_string(),
        command,
        millis: d.get("millis").and_then(as_f64).unwrap_or(0.0),
        app: d.get_str("appName").ok().map(str::to_string),
        conn: None,
        client: d.get_str("client").ok().map(str::to_string),
        plan: d.get_str("planSummary").ok().map(str::to_string),
        keys_examined: int("keysExamined"),
        docs_examined: int("docsExamined"),
        nreturned: int("nreturned"),
        cursor_id: int("cursorid").filter(|&c| c != 0),
        ninserted: int("ninserted"),
        truncated: d.contains_key("$truncated"),
        session: beside(d),
    })
}

/// The entry's own `lsid` and `txnNumber`, when it has them.
fn beside(d: &Document) -> Option<Document> {
    let mut s = Document::new();
    for k in ["lsid", "txnNumber"] {
        s.insert(k, d.get(k)?.clone());
    }
    Some(s)
}

/// What the live server knows of collection `db.coll`: its indexes, count and average size;
/// unless `opts.sample_data` is off, a `$sample` of documents, its `_id`s and, for each of
/// `fields` (those the captured reads select by), how often each value occurs in at most
/// `opts.sample_docs` documents, with `distinct` for a field an index leads with. Never writes;
/// a read refused is said in `unreadable`.
pub(crate) async fn collection_info(
    client: &Client,
    db: &str,
    coll: &str,
    fields: &std::collections::BTreeSet<String>,
    opts: &super::Options,
) -> CollectionInfo {
    let c: Collection<Document> = client.database(db).collection(coll);
    let mut info = CollectionInfo::default();
    if let Ok(mut cursor) = c.list_indexes().await {
        while let Ok(true) = cursor.advance().await {
            if let Ok(m) = cursor.deserialize_current() {
                let mut spec = Document::new();
                spec.insert("key", Bson::Document(m.keys.clone()));
                if let Some(o) = &m.options {
                    if let Some(n) = &o.name {
                        if n == "_id_" {
                            continue;
                        }
                        spec.insert("name", n.clone());
                    }
                    if let Some(u) = o.unique {
                        spec.insert("unique", u);
                    }
                    if let Some(s) = o.sparse {
                        spec.insert("sparse", s);
                    }
                    if let Some(p) = &o.partial_filter_expression {
                        spec.insert("partialFilterExpression", p.clone());
                    }
                    if let Some(e) = o.expire_after {
                        spec.insert("expireAfterSeconds", crate::num::signed(e.as_secs()));
                    }
                }
                if m.keys.keys().eq(["_id"]) {
                    continue;
                }
                info.indexes.push(spec);
            }
        }
    }
    info.count = c.estimated_document_count().await.ok();
    if !opts.sample_data {
        return info;
    }
    match c
        .aggregate(vec![doc! { "$sample": { "size": SAMPLE } }])
        .await
    {
        Ok(mut cursor) => {
            while let Ok(true) = cursor.advance().await {
                if let Ok(d) = cursor.deserialize_current() {
                    info.sample.push(d);
                }
            }
        }
        Err(e) => note_failure(&mut info, &e),
    }
    if info.unreadable.is_some() || info.sampling_failed.is_some() {
        return info;
    }
    if let Ok(mut cursor) = c
        .find(doc! {})
        .projection(doc! { "_id": 1 })
        .limit(IDS)
        .await
    {
        while let Ok(true) = cursor.advance().await {
            if let Ok(d) = cursor.deserialize_current() {
                if let Some(id) = d.get("_id") {
                    info.ids.push(id.clone());
                }
            }
        }
    }
    if !info.sample.is_empty() {
        let bytes: usize = info
            .sample
            .iter()
            .map(|d| mongodb::bson::to_vec(d).map_or(0, |v| v.len()))
            .sum();
        info.avg_size = Some(crate::num::real_len(bytes) / crate::num::real_len(info.sample.len()));
    }
    if !fields.is_empty() {
        match value_counts(&c, info.count, fields, opts.sample_docs).await {
            Ok(values) => info.values = values,
            Err(e) => note_failure(&mut info, &e),
        }
        for (f, data) in &mut info.values {
            let leads = info.indexes.iter().any(|i| {
                i.get_document("key")
                    .is_ok_and(|k| k.keys().next().is_some_and(|k| k == f))
            });
            if leads && !data.whole {
                data.distinct = distinct_count(&c, f).await;
            }
        }
    }
    info
}

/// A read of the documents that failed: refused for want of rights (code 13, Unauthorized), or
/// failed otherwise (a timeout, a lost connection), said as what it is.
fn note_failure(info: &mut CollectionInfo, e: &mongodb::error::Error) {
    let said = crate::driver_error::said(e);
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) if c.code == 13 => info.unreadable = Some(said),
        _ => info.sampling_failed = Some(said),
    }
}

/// Each field's values counted in at most `most` documents of `c`: every document when the
/// collection holds no more (read in `_id` order), else a `$sample` of `most`. Only the fields
/// are read (a projection).
async fn value_counts(
    c: &Collection<Document>,
    count: Option<u64>,
    fields: &std::collections::BTreeSet<String>,
    most: u64,
) -> mongodb::error::Result<std::collections::BTreeMap<String, super::FieldData>> {
    // A path under another one listed is read with it (projecting both is refused), and
    // `_id` is left out only when no field is under it.
    let projected: std::collections::BTreeSet<&String> = fields
        .iter()
        .filter(|f| {
            !fields
                .iter()
                .any(|p| p != *f && f.starts_with(p.as_str()) && f[p.len()..].starts_with('.'))
        })
        .collect();
    let mut projection = Document::new();
    if !projected
        .iter()
        .any(|f| *f == "_id" || f.starts_with("_id."))
    {
        projection.insert("_id", 0);
    }
    for f in projected {
        projection.insert(f.clone(), 1);
    }
    let whole = count.is_some_and(|n| n <= most);
    let size = crate::num::signed(most);
    let mut cursor = if whole {
        c.find(doc! {})
            .projection(projection)
            .sort(doc! { "_id": 1 })
            .limit(size)
            .await?
    } else {
        c.aggregate(vec![
            doc! { "$sample": { "size": size } },
            doc! { "$project": projection },
        ])
        .await?
    };
    let mut counts: HashMap<String, HashMap<String, (Bson, u64)>> = HashMap::new();
    // Per field, per date field of the same documents: each document's (value, date).
    let mut dated: DatedValues = HashMap::new();
    let mut read = 0u64;
    while cursor.advance().await? {
        let Ok(d) = cursor.deserialize_current() else {
            continue;
        };
        read += 1;
        note_dates(&d, fields, &mut dated);
        for f in fields {
            let Some(v) = super::emit::lookup_path(&d, f) else {
                continue;
            };
            let values: Vec<&Bson> = match v {
                Bson::Array(a) => a.iter().collect(),
                v => vec![v],
            };
            let per = counts.entry(f.clone()).or_default();
            for v in values {
                if matches!(v, Bson::Document(_) | Bson::Array(_) | Bson::Null) {
                    continue;
                }
                per.entry(v.to_string()).or_insert_with(|| (v.clone(), 0)).1 += 1;
            }
        }
    }
    Ok(fields
        .iter()
        .map(|f| {
            let mut values: Vec<(Bson, u64)> = counts
                .remove(f)
                .map(|m| m.into_values().collect())
                .unwrap_or_default();
            values.sort_by(|a, b| {
                b.1.cmp(&a.1)
                    .then_with(|| a.0.to_string().cmp(&b.0.to_string()))
            });
            (
                f.clone(),
                super::FieldData {
                    read,
                    counts: values,
                    whole: whole && count.is_some_and(|n| read >= n),
                    distinct: None,
                    dated: dated.remove(f).unwrap_or_default(),
                },
            )
        })
        .collect())
}

/// Per field, per date field of the same documents: each document's (value, date in ms).
type DatedValues = HashMap<String, std::collections::BTreeMap<String, Vec<(Bson, i64)>>>;

/// Adds document `d`'s (value, date) of each field beside each date field of `fields`.
fn note_dates(d: &Document, fields: &std::collections::BTreeSet<String>, dated: &mut DatedValues) {
    let dates: Vec<(&String, i64)> = fields
        .iter()
        .filter_map(|f| match super::emit::lookup_path(d, f) {
            Some(Bson::DateTime(t)) => Some((f, t.timestamp_millis())),
            _ => None,
        })
        .collect();
    if dates.is_empty() {
        return;
    }
    for f in fields {
        let Some(v) = super::emit::lookup_path(d, f) else {
            continue;
        };
        if matches!(
            v,
            Bson::Document(_) | Bson::Array(_) | Bson::Null | Bson::DateTime(_)
        ) {
            continue;
        }
        for (t, ms) in dates.iter().filter(|(t, _)| *t != f) {
            dated
                .entry(f.clone())
                .or_default()
                .entry((*t).clone())
                .or_default()
                .push((v.clone(), *ms));
        }
    }
}

/// The distinct values of `field` in `c` by `distinct` (which reads an index's keys where one
/// leads with the field), when the server answers within 5 s (a reply holds at most 16 MB).
async fn distinct_count(c: &Collection<Document>, field: &str) -> Option<u64> {
    let reply = c
        .client()
        .database(&c.namespace().db)
        .run_command(doc! { "distinct": c.name(), "key": field, "maxTimeMS": 5000 })
        .await
        .ok()?;
    u64::try_from(reply.get_array("values").ok()?.len()).ok()
}
