//! The MongoDB backend's setup: prepares the target collection before each run: drop, indexes, preload; and finds where the
//! `_id` sequence continues when the collection is kept.

use std::time::SystemTime;

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};
use rand::SeedableRng;
use tokio_util::sync::CancellationToken;

use super::marker::{self, Marker};
use super::owned;
use super::Prepared;
use crate::error::Error;
use crate::plan::{CollectionPlan, RunPlan};
use crate::workload::template::NoLookup;
use crate::workload::template::{Cx, UserState};
use crate::workload::KeySpace;

/// Documents per `insertMany` of the preload.
pub(crate) const PRELOAD_BATCH: u64 = 1000;

/// What `setup.drop` does to a collection holding documents the tool did not write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    /// Refuse, naming it (the default).
    Refuse,
    /// Drop it anyway (`--force`).
    Drop,
}

/// Readies the collection for one run and returns its key space and when its stages begin:
/// alone or as part 0, drop (if asked), indexes, preload; part 0 then writes the marker with
/// where `_id`s continue and the common begin (`begin`, else a moment from now). Parts 1.. wait
/// for that marker instead (`marker`).
pub(crate) async fn prepare(
    plan: &RunPlan,
    colls: &[Collection<RawDocumentBuf>],
    seed: u64,
    stop: &CancellationToken,
    how: (Foreign, Preloading<'_>),
    begin: Option<SystemTime>,
) -> Result<Prepared, Error> {
    let Some(p) = &plan.part else {
        let (keys, load) = set_up(plan, colls, seed, stop, how).await?;
        return Ok(Prepared { keys, begin, load });
    };
    let marker = Marker::new(plan, &colls[0], seed, p);
    if p.part.index > 0 {
        let mut prepared = marker.wait(stop).await?;
        // The other collections continue where part 0's setup left them (read before any part
        // inserts: every part starts at the common begin, after this).
        for coll in &colls[1..] {
            let next = next_id(coll).await.map_err(|e| {
                Error::Server(format!(
                    "reading the last _id of {}: {}",
                    coll.namespace(),
                    crate::driver_error::said(&e)
                ))
            })?;
            prepared
                .keys
                .push(KeySpace::partitioned(next, p.part.index, p.part.count));
        }
        return Ok(prepared);
    }
    // A marker left by an earlier run must not release the other parts early.
    marker.clear().await?;
    let (keys, load) = set_up(plan, colls, seed, stop, how).await?;
    if stop.is_cancelled() {
        // Interrupted during the setup: no marker, so no part starts on half a preload.
        return Ok(Prepared {
            keys,
            begin: None,
            load,
        });
    }
    let begin = begin.unwrap_or_else(marker::default_begin);
    marker.write(keys[0].issued(), begin).await?;
    Ok(Prepared {
        keys: keys
            .iter()
            .map(|k| KeySpace::partitioned(k.issued(), 0, p.part.count))
            .collect(),
        begin: Some(begin),
        load,
    })
}

/// Told of each collection's preload as it begins, after every check of the setup passed:
/// the documents and the collection's name.
pub type Preloading<'a> = &'a (dyn Fn(u64, &str) + Sync);

/// Drops (if asked), creates indexes, preloads each collection, and returns their key spaces.
async fn set_up(
    plan: &RunPlan,
    colls: &[Collection<RawDocumentBuf>],
    seed: u64,
    stop: &CancellationToken,
    how: (Foreign, Preloading<'_>),
) -> Result<(Vec<KeySpace>, Option<(u64, std::time::Duration)>), Error> {
    let mut spaces = Vec::with_capacity(colls.len());
    let mut loaded = 0;
    let mut took = std::time::Duration::ZERO;
    let mut any_load = false;
    for (i, (c, coll)) in plan.collections.iter().zip(colls).enumerate() {
        let (keys, load) = set_up_one(
            plan,
            c,
            coll,
            seed ^ (u64::try_from(i).unwrap_or(0) << 48),
            stop,
            how,
        )
        .await?;
        spaces.push(keys);
        if let Some((n, t)) = load {
            any_load = true;
            loaded += n;
            took += t;
        }
    }
    Ok((spaces, any_load.then_some((loaded, took))))
}

/// A setup step that failed: refused by the server (a duplicate key, a validator, an option it
/// does not take: the profile asks for what the server will not do) is a profile problem, exit
/// 2 with the server's words; anything else (the server unreachable, not primary, shutting
/// down) is the server's, exit 3.
fn setup_failed(what: &str, e: &mongodb::error::Error) -> Error {
    let said = crate::driver_error::said(e);
    match crate::driver_error::server_code(e) {
        // Unauthorized, AuthenticationFailed: the user given may not do this (read-only, say).
        Some(code) if code.0 == 13 || code.0 == 18 => Error::Server(format!(
            "the server refused the setup while {what}: {said}\n  fix: give a user allowed to drop, index and write that collection in the URI (e.g. the readWrite role on its database), or run against a database it may write"
        )),
        Some(code) if !code.unavailable() && !code.not_primary() => {
            let hint = if code.0 == 11000 {
                "the profile's generated values repeat where a unique index forbids it: draw that field from a sequence (`{ \"^Inc\" = {} }`, a key's `%d` of the document's number) or from more values, or drop the unique index"
            } else {
                "change what the profile's setup asks for (its collections, indexes and preload) to what the server accepts"
            };
            Error::Usage(format!(
                "the server refused the setup while {what}: {said}\n  fix: {hint}"
            ))
        }
        _ => Error::Server(format!("setup failed while {what}: {said}")),
    }
}

async fn set_up_one(
    plan: &RunPlan,
    c: &CollectionPlan,
    coll: &Collection<RawDocumentBuf>,
    seed: u64,
    stop: &CancellationToken,
    (foreign, preloading): (Foreign, Preloading<'_>),
) -> Result<(KeySpace, Option<(u64, std::time::Duration)>), Error> {
    let fail = |what: &str, e: mongodb::error::Error| {
        setup_failed(&format!("{what} {}", coll.namespace()), &e)
    };
    if c.setup.drop {
        let (uuid, ours) = owned::created_by_us(coll)
            .await
            .map_err(|e| fail("inspecting", e))?;
        if foreign == Foreign::Refuse && !ours {
            let foreign = foreign_document(coll)
                .await
                .map_err(|e| fail("inspecting", e))?;
            if let Some(id) = foreign {
                return Err(Error::Usage(format!(
                    "{}.{} holds documents mongo-stress did not write (one has _id {id}), and its drop = true would delete them\n  \
                     fix: name another database or collection, or pass --force to drop it anyway",
                    plan.target.database, c.name
                )));
            }
        }
        coll.drop().await.map_err(|e| fail("dropping", e))?;
        owned::create_and_mark(coll, uuid.as_ref())
            .await
            .map_err(|e| fail("creating", e))?;
    }
    for index in &c.setup.indexes {
        let options = if index.options.is_empty() {
            None
        } else {
            Some(
                mongodb::bson::from_document::<IndexOptions>(index.options.clone()).map_err(|e| {
                    Error::Usage(format!(
                        "the options of index {index} on {}.{} are not ones the driver knows: {e}\n  fix: use unique, partialFilterExpression, expireAfterSeconds, sparse, collation, name",
                        plan.target.database, c.name
                    ))
                })?,
            )
        };
        coll.create_index(
            IndexModel::builder()
                .keys(index.keys.clone())
                .options(options)
                .build(),
        )
        .await
        .map_err(|e| fail("indexing", e))?;
    }
    let keys = KeySpace::starting_at(
        next_id(coll)
            .await
            .map_err(|e| fail("reading the last _id of", e))?,
    );
    let mut load = None;
    if c.setup.preload > 0 {
        preloading(c.setup.preload, &coll.namespace().to_string());
        let started = std::time::Instant::now();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5EED_F00D);
        let mut state = UserState::default();
        let mut left = c.setup.preload;
        while left > 0 && !stop.is_cancelled() {
            let n = left.min(PRELOAD_BATCH);
            let now_ms = crate::workload::lookup::now_ms();
            let docs: Vec<RawDocumentBuf> = (0..n)
                .map(|_| {
                    let id = keys.issue();
                    let mut lookup = NoLookup;
                    let mut cx = Cx {
                        rng: &mut rng,
                        lookup: &mut lookup,
                        now_ms,
                        user: 0,
                        state: &mut state,
                    };
                    c.document.raw_doc(id, &mut cx)
                })
                .collect();
            coll.insert_many(docs)
                .await
                .map_err(|e| fail("preloading", e))?;
            keys.acknowledge_all();
            left -= n;
        }
        load = Some((c.setup.preload - left, started.elapsed()));
    }
    Ok((keys, load))
}

/// The `_id` of a document the tool cannot have written into a collection it did not create
/// (`owned`): there it writes only numeric `_id`s (0, 1, 2, ...), so any other `_id` (an
/// ObjectId, a string) means another writer.
async fn foreign_document(
    coll: &Collection<RawDocumentBuf>,
) -> mongodb::error::Result<Option<Bson>> {
    let doc = coll
        .clone_with_type::<Document>()
        .find_one(doc! { "_id": { "$not": { "$type": "number" } } })
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
