//! The audit's read-back: every integer `_id` and counter of the collections the run wrote
//! to, and whether a template's own `_id`s are there. After a fault the server may still be
//! starting: a failed read is tried again until `AUDIT_PATIENCE` has passed.
//!
//! Owns: reading what `audit::Wanted` asks. Never: judges it (that is `audit::check`).

use std::collections::HashSet;
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document, RawBsonRef, RawDocumentBuf};
use tokio_util::sync::CancellationToken;

use crate::audit::{number_at, Found, FoundCollection, Wanted};

/// How long the read-back keeps trying a server that does not answer (it may be restarting).
pub(crate) const AUDIT_PATIENCE: Duration = Duration::from_secs(90);

/// `_id`s asked per `$in` query.
const BATCH: usize = 1000;

/// Reads what `wanted` asks, trying again while the server does not answer; Err says why it
/// gave up (interrupted, or the last error after `AUDIT_PATIENCE`).
pub(crate) async fn read(
    client: &mongodb::Client,
    database: &str,
    wanted: &Wanted,
    stop: &CancellationToken,
) -> Result<Found, String> {
    let deadline = tokio::time::Instant::now() + AUDIT_PATIENCE;
    loop {
        let attempt = tokio::select! {
            r = read_once(client, database, wanted) => r,
            _ = stop.cancelled() => return Err("interrupted while the collections were read back".into()),
        };
        match attempt {
            Ok(found) => return Ok(found),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(format!(
                    "the server did not answer the read-back within {}s: {}",
                    AUDIT_PATIENCE.as_secs(),
                    super::classify::classify(e).message
                ))
            }
            Err(_) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = stop.cancelled() => return Err("interrupted while the collections were read back".into()),
                }
            }
        }
    }
}

async fn read_once(
    client: &mongodb::Client,
    database: &str,
    wanted: &Wanted,
) -> mongodb::error::Result<Found> {
    // From the primary, whatever the URI prefers: a lagging secondary would make writes not
    // yet replicated look lost.
    let db = client.database_with_options(
        database,
        mongodb::options::DatabaseOptions::builder()
            .selection_criteria(mongodb::options::SelectionCriteria::ReadPreference(
                mongodb::options::ReadPreference::Primary,
            ))
            .build(),
    );
    let mut found = Found::default();
    for w in &wanted.collections {
        let coll = db.collection::<RawDocumentBuf>(&w.name);
        let mut f = FoundCollection::default();
        if w.ids || !w.counters.is_empty() {
            let mut projection = doc! { "_id": 1 };
            for c in &w.counters {
                projection.insert(c.as_str(), 1);
            }
            let mut cursor = coll
                .find(doc! {})
                .projection(projection)
                .batch_size(10_000)
                .await?;
            while cursor.advance().await? {
                let d = cursor.current();
                let id = match d.get("_id")? {
                    Some(RawBsonRef::Int64(i)) => i,
                    Some(RawBsonRef::Int32(i)) => i64::from(i),
                    _ => continue,
                };
                let Ok(unsigned) = u64::try_from(id) else {
                    continue;
                };
                if w.ids {
                    f.ids.insert(unsigned);
                }
                if !w.counters.is_empty() {
                    // A counter never set is 0 to `$inc`.
                    let values = w
                        .counters
                        .iter()
                        .map(|c| number_at(d, c).unwrap_or(0))
                        .collect();
                    f.counters.insert(id, values);
                }
            }
        }
        if !w.keyed.is_empty() {
            let key = |b: &Bson| b.clone().into_relaxed_extjson().to_string();
            let mut there: HashSet<String> = HashSet::new();
            for batch in w.keyed.chunks(BATCH) {
                let mut cursor = db
                    .collection::<Document>(&w.name)
                    .find(doc! { "_id": { "$in": batch.to_vec() } })
                    .projection(doc! { "_id": 1 })
                    .await?;
                while cursor.advance().await? {
                    let d = cursor.deserialize_current()?;
                    if let Some(id) = d.get("_id") {
                        there.insert(key(id));
                    }
                }
            }
            f.keyed = w.keyed.iter().map(|b| there.contains(&key(b))).collect();
        }
        found.collections.push(f);
    }
    Ok(found)
}
