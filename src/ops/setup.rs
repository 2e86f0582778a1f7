//! The MongoDB backend's setup: prepares the target collection before each run: drop, indexes, preload; and finds where the
//! `_id` sequence continues when the collection is kept.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::{Collection, IndexModel};
use rand::SeedableRng;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::plan::part::PartPlan;
use crate::plan::RunPlan;
use crate::workload::KeySpace;

const PRELOAD_BATCH: u64 = 1000;

/// The `_id` of the marker document part 0 of a run in parts writes when its setup is done.
pub const MARKER_ID: &str = "mongo-stress:setup";

/// How far after its setup part 0 sets the common begin, when no `--start-at` set it: time
/// for the other parts to see the marker.
const MARKER_LEAD: Duration = Duration::from_secs(2);

/// How often parts 1.. look for the marker.
const MARKER_POLL: Duration = Duration::from_millis(200);

/// Readies the collection for one run and returns its key space and when its stages begin:
/// alone or as part 0, drop (if asked), indexes, preload; part 0 then writes the marker with
/// where `_id`s continue and the common begin (`begin`, else a moment from now). Parts 1.. wait
/// for that marker instead.
pub async fn prepare(
    plan: &RunPlan,
    coll: &Collection<RawDocumentBuf>,
    seed: u64,
    stop: &CancellationToken,
    force: bool,
    begin: Option<SystemTime>,
) -> Result<Prepared, Error> {
    match &plan.part {
        Some(p) if p.part.index > 0 => wait_for_setup(plan, coll, seed, stop, p).await,
        Some(p) => {
            // A marker left by an earlier run must not release the other parts early.
            release(plan, coll).await;
            let keys = set_up(plan, coll, seed, stop, force).await?;
            let begin = begin.unwrap_or_else(|| SystemTime::now() + MARKER_LEAD);
            write_marker(plan, coll, seed, keys.issued(), begin).await?;
            Ok(Prepared {
                keys: KeySpace::partitioned(keys.issued(), 0, p.part.count),
                begin: Some(begin),
            })
        }
        None => Ok(Prepared {
            keys: set_up(plan, coll, seed, stop, force).await?,
            begin,
        }),
    }
}

/// Part 0 removes its marker when its run ends, so the collection holds only documents.
pub async fn release(plan: &RunPlan, coll: &Collection<RawDocumentBuf>) {
    if plan.part.as_ref().is_some_and(|p| p.part.index == 0) {
        let _ = coll
            .clone_with_type::<Document>()
            .delete_one(doc! { "_id": MARKER_ID })
            .await;
    }
}

/// Which run of which profile a marker belongs to.
fn run_key(plan: &RunPlan, seed: u64) -> String {
    let count = plan.part.as_ref().map_or(1, |p| p.part.count);
    format!("{}:{seed}:{count}", plan.name)
}

fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn write_marker(
    plan: &RunPlan,
    coll: &Collection<RawDocumentBuf>,
    seed: u64,
    next_id: i64,
    begin: SystemTime,
) -> Result<(), Error> {
    let marker = doc! {
        "_id": MARKER_ID,
        "run": run_key(plan, seed),
        "next_id": next_id,
        "begin_ms": epoch_ms(begin),
        "written_ms": epoch_ms(SystemTime::now()),
    };
    coll.clone_with_type::<Document>()
        .replace_one(doc! { "_id": MARKER_ID }, marker)
        .upsert(true)
        .await
        .map(|_| ())
        .map_err(|e| {
            Error::Server(format!(
                "setup failed while marking it done in {}.{}: {}",
                plan.target.database,
                plan.target.collection,
                crate::redact::redact(&e.to_string())
            ))
        })
}

/// Parts 1..: polls for part 0's marker of this run until `setup_wait` runs out.
async fn wait_for_setup(
    plan: &RunPlan,
    coll: &Collection<RawDocumentBuf>,
    seed: u64,
    stop: &CancellationToken,
    p: &PartPlan,
) -> Result<Prepared, Error> {
    let key = run_key(plan, seed);
    let deadline = tokio::time::Instant::now() + p.setup_wait;
    let coll = coll.clone_with_type::<Document>();
    loop {
        let found = coll
            .find_one(doc! { "_id": MARKER_ID, "run": &key })
            .await
            .map_err(|e| {
                Error::Server(format!(
                    "part {} could not look for part 0's setup in {}.{}: {}",
                    p.part,
                    plan.target.database,
                    plan.target.collection,
                    crate::redact::redact(&e.to_string())
                ))
            })?;
        if let Some(m) = found {
            let next_id = m.get_i64("next_id").unwrap_or(0);
            let begin = m
                .get_i64("begin_ms")
                .ok()
                .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms.max(0) as u64)));
            return Ok(Prepared {
                keys: KeySpace::partitioned(next_id, p.part.index, p.part.count),
                begin,
            });
        }
        if stop.is_cancelled() || tokio::time::Instant::now() >= deadline {
            return Err(Error::Server(format!(
                "part {} waited {} for part 0 to finish the setup of `{}` (seed {seed}, {} parts) in {}.{}, and it did not
  fix: start part 0 ({}=0, or --part 0/{}) with the same profile, --parts and --seed against the same deployment, or wait longer with --setup-wait",
                p.part,
                humantime::format_duration(p.setup_wait),
                plan.name,
                p.part.count,
                plan.target.database,
                plan.target.collection,
                crate::plan::part::INDEX_VAR,
                p.part.count,
            )));
        }
        tokio::select! {
            _ = tokio::time::sleep(MARKER_POLL) => {}
            _ = stop.cancelled() => {}
        }
    }
}

/// A prepared run: the key space its operations draw from, and when its stages begin (None:
/// at once).
#[derive(Debug, Default)]
pub struct Prepared {
    pub keys: KeySpace,
    pub begin: Option<SystemTime>,
}

/// Drops (if asked), creates indexes, preloads, and returns the key space for the run.
async fn set_up(
    plan: &RunPlan,
    coll: &Collection<RawDocumentBuf>,
    seed: u64,
    stop: &CancellationToken,
    force: bool,
) -> Result<KeySpace, Error> {
    let fail = |what: &str, e: mongodb::error::Error| {
        Error::Server(format!(
            "setup failed while {what} {}.{}: {}",
            plan.target.database,
            plan.target.collection,
            crate::redact::redact(&e.to_string())
        ))
    };
    if plan.setup.drop {
        if !force {
            let foreign = foreign_document(coll)
                .await
                .map_err(|e| fail("inspecting", e))?;
            if let Some(id) = foreign {
                return Err(Error::Usage(format!(
                    "{}.{} holds documents mongo-stress did not write (one has _id {id}), and setup.drop would delete them\n  \
                     fix: name another database or collection in [target], or pass --force to drop it anyway",
                    plan.target.database, plan.target.collection
                )));
            }
        }
        coll.drop().await.map_err(|e| fail("dropping", e))?;
    }
    for keys in &plan.setup.indexes {
        coll.create_index(IndexModel::builder().keys(keys.clone()).build())
            .await
            .map_err(|e| fail("indexing", e))?;
    }
    let keys = KeySpace::starting_at(
        next_id(coll)
            .await
            .map_err(|e| fail("reading the last _id of", e))?,
    );
    if plan.setup.preload > 0 {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5EED_F00D);
        let mut left = plan.setup.preload;
        while left > 0 && !stop.is_cancelled() {
            let n = left.min(PRELOAD_BATCH);
            let docs: Vec<RawDocumentBuf> = (0..n)
                .map(|_| {
                    let mut d = Document::new();
                    d.insert("_id", keys.issue());
                    plan.document.fill(&mut d, None, &mut rng);
                    RawDocumentBuf::from_document(&d).expect("generated document is valid BSON")
                })
                .collect();
            coll.insert_many(docs)
                .await
                .map_err(|e| fail("preloading", e))?;
            left -= n;
        }
    }
    Ok(keys)
}

/// The `_id` of a document the tool cannot have written: it writes only numeric `_id`s (0, 1,
/// 2, ...) and its marker, so any other `_id` (an ObjectId, a string) means another writer.
async fn foreign_document(
    coll: &Collection<RawDocumentBuf>,
) -> mongodb::error::Result<Option<Bson>> {
    let doc = coll
        .clone_with_type::<Document>()
        .find_one(doc! { "_id": { "$not": { "$type": "number" }, "$ne": MARKER_ID } })
        .projection(doc! { "_id": 1 })
        .await?;
    Ok(doc.and_then(|d| d.get("_id").cloned()))
}

/// One past the largest integer `_id` in the collection, or 0.
async fn next_id(coll: &Collection<RawDocumentBuf>) -> mongodb::error::Result<i64> {
    let last = coll
        .clone_with_type::<Document>()
        .find_one(doc! { "_id": { "$type": "number" } })
        .sort(doc! { "_id": -1 })
        .projection(doc! { "_id": 1 })
        .await?;
    Ok(match last.and_then(|d| d.get("_id").cloned()) {
        Some(Bson::Int64(n)) => n + 1,
        Some(Bson::Int32(n)) => i64::from(n) + 1,
        _ => 0,
    })
}
