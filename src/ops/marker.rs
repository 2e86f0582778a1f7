//! How the parts of a run agree on its setup and start, through the deployment they all reach:
//! part 0, its setup done, writes a marker document; parts 1.. poll for it, take from it where
//! `_id`s continue and when the stages begin, and add themselves to its `joined` list.
//!
//! The marker lives in a collection of its own (`mongo_stress_parts`, in the target database,
//! `_id` the target collection's name), never among the documents under test: finds and counts
//! never see it, and a sharded target collection needs no shard key for it. It identifies its
//! run by profile, seed, part count and `--start-at` as written, so a marker of an earlier run
//! (part 0 clears it first, but a part may look before part 0 does) releases nobody unless the
//! run was started with the very same command line; give each run its own `--start-at` (an
//! absolute time, as the Kubernetes Job does) or `--seed`. It stays after the run, so a part that
//! comes late still finds it and starts at once, recording how late it was.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::{doc, Document, RawDocumentBuf};
use mongodb::Collection;
use tokio_util::sync::CancellationToken;

use super::Prepared;
use crate::error::Error;
use crate::plan::part::{PartPlan, INDEX_VAR};
use crate::plan::RunPlan;
use crate::workload::KeySpace;

/// The collection of markers, in the target database.
pub(crate) const COLLECTION: &str = "mongo_stress_parts";

/// How often parts 1.. look for the marker.
const POLL: Duration = Duration::from_millis(200);

/// When part 0 sets the common begin without `--start-at`: time for the other parts to see the
/// marker, rounded up to a whole second so the parts' intervals fall on whole seconds.
pub(crate) fn default_begin() -> SystemTime {
    let at = SystemTime::now() + Duration::from_secs(2);
    let ms = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    UNIX_EPOCH + Duration::from_millis(ms.div_ceil(1000) * 1000)
}

fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The marker of one run of one target collection.
pub(crate) struct Marker<'a> {
    plan: &'a RunPlan,
    part: &'a PartPlan,
    markers: Collection<Document>,
    id: String,
    run: String,
    /// The `--seed` the run was given (the setup's seed is the first run's: `--seed` + 1).
    seed: u64,
}

impl<'a> Marker<'a> {
    pub(crate) fn new(
        plan: &'a RunPlan,
        coll: &Collection<RawDocumentBuf>,
        setup_seed: u64,
        part: &'a PartPlan,
    ) -> Marker<'a> {
        let seed = setup_seed.wrapping_sub(1);
        Marker {
            plan,
            part,
            markers: coll
                .client()
                .database(&plan.target.database)
                .collection(COLLECTION),
            id: plan.target.collection.clone(),
            run: format!(
                "{} seed {seed} parts {} start {}",
                plan.name,
                part.part.count,
                part.start_at.as_deref().unwrap_or("-")
            ),
            seed,
        }
    }

    fn failed(&self, what: &str, e: mongodb::error::Error) -> Error {
        Error::Server(format!(
            "part {} could not {what} the parts' marker in {}.{COLLECTION}: {}",
            self.part.part,
            self.plan.target.database,
            crate::driver_error::said(&e)
        ))
    }

    /// Part 0, before its setup: no earlier marker may release the others.
    pub(crate) async fn clear(&self) -> Result<(), Error> {
        self.markers
            .delete_one(doc! { "_id": &self.id })
            .await
            .map(|_| ())
            .map_err(|e| self.failed("clear", e))
    }

    /// Part 0, its setup done: where `_id`s continue and when the stages begin.
    pub(crate) async fn write(&self, next_id: i64, begin: SystemTime) -> Result<(), Error> {
        let marker = doc! {
            "_id": &self.id,
            "run": &self.run,
            "next_id": next_id,
            "begin_ms": epoch_ms(begin),
            "written_ms": epoch_ms(SystemTime::now()),
            "joined": [0],
        };
        self.markers
            .replace_one(doc! { "_id": &self.id }, marker)
            .upsert(true)
            .await
            .map(|_| ())
            .map_err(|e| self.failed("write", e))
    }

    /// Parts 1..: polls for part 0's marker of this run until `--setup-wait` runs out (an
    /// interruption ends the wait: the session then stops as interrupted).
    pub(crate) async fn wait(&self, stop: &CancellationToken) -> Result<Prepared, Error> {
        let p = self.part;
        let deadline = tokio::time::Instant::now() + p.setup_wait;
        loop {
            let found = self
                .markers
                .find_one_and_update(
                    doc! { "_id": &self.id, "run": &self.run },
                    doc! { "$addToSet": { "joined": i64::from(p.part.index) } },
                )
                .await
                .map_err(|e| self.failed("read", e))?;
            if let Some(m) = found {
                let begin = m.get_i64("begin_ms").ok().and_then(|ms| {
                    UNIX_EPOCH.checked_add(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
                });
                return Ok(Prepared {
                    keys: vec![KeySpace::partitioned(
                        m.get_i64("next_id").unwrap_or(0),
                        p.part.index,
                        p.part.count,
                    )],
                    begin,
                    load: None,
                });
            }
            if stop.is_cancelled() {
                return Ok(Prepared::default());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(self.timed_out());
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.cancelled() => {}
            }
        }
    }

    fn timed_out(&self) -> Error {
        let (p, t) = (self.part, &self.plan.target);
        Error::Server(format!(
            "part {} waited {} for part 0 to finish the setup of `{}` (--seed {}, {} parts, --start-at {}) in {}.{}, and it did not\n  fix: start part 0 ({INDEX_VAR}=0, or --part 0/{}) with the same profile, --parts, --seed and --start-at against the same deployment, or wait longer with --setup-wait",
            p.part,
            humantime::format_duration(p.setup_wait),
            self.plan.name,
            self.seed,
            p.part.count,
            p.start_at.as_deref().unwrap_or("(none)"),
            t.database,
            t.collection,
            p.part.count,
        ))
    }
}
