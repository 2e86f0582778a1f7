//! The only workload code that calls the driver. `Backend` is the seam: the executor sends each
//! `Request` through it and gets an `Outcome`; `MongoBackend` is the real one (with `setup`:
//! drop, indexes, preload), and a scripted backend in the tests runs the whole pipeline
//! deterministically. `connect` reaches a deployment; `classify` turns driver errors into the
//! summary's classes; `template` sends every operation (the built-in kinds are read as the
//! profile's own, `plan::build::operations`), one sender per family of verbs (and
//! `MongoBackend` their steps, transactions and sessions); `explain` has the server check every template before the load and gives their
//! winning plans after the setup; `audit` reads the collections back for the write audit; `owned` records the
//! collections the setup created, so their next drop needs no `--force`.
//!
//! Owns: driver calls for the workload, payload sizes, error classes, and the times only a
//! sender can see (a step's time inside a group of steps, a transaction's first attempt, the
//! audit's and setup's patience). Never: measures an operation's latency (the executor does,
//! around `Backend::execute`), records samples or prints.

pub(crate) mod audit;
pub(crate) mod classify;
pub(crate) mod connect;
pub(crate) mod explain;
pub(crate) mod invariant;
pub(crate) mod listen;
pub(crate) mod marker;
pub(crate) mod mongo;
pub(crate) mod owned;
pub mod setup;
pub(crate) mod template;

use std::future::Future;
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::plan::RunPlan;
use crate::workload::Request;

pub(crate) use mongo::MongoBackend;

/// A prepared run: the key space of each collection its operations draw from, and when its
/// stages begin (None: at once).
#[derive(Debug, Default)]
pub struct Prepared {
    /// By `RunPlan::collections` index.
    pub keys: Vec<crate::workload::KeySpace>,
    pub begin: Option<std::time::SystemTime>,
    /// The preload (YCSB's load phase): documents inserted, and how long it took.
    pub load: Option<(u64, std::time::Duration)>,
}

/// Where requests go. Implementations must not panic on a failed operation: a failure is an
/// `Outcome` with an error.
pub trait Backend: Send + Sync + 'static {
    /// Sends one request and reports what it sent, received, matched and modified.
    /// `on` is the group's handle (`GroupPlan::handle`: its collection and concerns).
    fn execute(&self, on: usize, req: Request) -> impl Future<Output = Outcome> + Send;

    /// Readies the target for one run (drop, indexes, preload, as the plan says; for a part,
    /// part 0's setup or the wait for it) and returns the key space the run's operations draw
    /// existing `_id`s from and when its stages begin (`begin` asks for one).
    /// Just before stage `stage` (after the setup, and after the stages before it, which may
    /// load what it reads): each of its templates' winning plan by the server's explain (none
    /// without a server to ask).
    fn plans(
        &self,
        plan: &RunPlan,
        keys: &[&crate::workload::KeySpace],
        stage: usize,
    ) -> impl Future<Output = Vec<explain::QueryPlan>> + Send {
        let _ = (plan, keys, stage);
        async { Vec::new() }
    }

    /// The run is over: the virtual users' sessions are ended.
    fn finish(&self) {}

    /// The collections' invariants now (`invariant = { sum, min }`), and what could not be read.
    fn invariants(
        &self,
        plan: &RunPlan,
    ) -> impl Future<Output = (Vec<invariant::Reading>, Vec<String>)> + Send {
        let _ = plan;
        async { (Vec::new(), Vec::new()) }
    }

    /// The audit's read-back of what `wanted` asks (none without a server to ask).
    fn audit_read(
        &self,
        plan: &RunPlan,
        wanted: &crate::audit::Wanted,
        stop: &CancellationToken,
    ) -> impl Future<Output = Result<crate::audit::Found, String>> + Send {
        let _ = (plan, wanted, stop);
        async { Ok(crate::audit::Found::default()) }
    }

    /// Listener `n` of watch group `group`: its stream opened (said on `opened`), read until
    /// the drain is over; None without a server to listen to.
    fn listen(
        &self,
        group: std::sync::Arc<crate::plan::GroupPlan>,
        n: u32,
        seed: u64,
        run: listen::ListenRun,
        opened: tokio::sync::oneshot::Sender<Result<(), String>>,
    ) -> impl Future<Output = Option<listen::Listened>> + Send + 'static {
        let _ = (group, n, seed, run);
        let _ = opened.send(Err("this backend has no change streams".into()));
        async { None }
    }

    fn prepare(
        &self,
        plan: &RunPlan,
        seed: u64,
        stop: &CancellationToken,
        foreign: setup::Foreign,
        begin: Option<SystemTime>,
        preloading: setup::Preloading<'_>,
    ) -> impl Future<Output = Result<Prepared, Error>> + Send;
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub sent: u32,
    pub received: u32,
    pub matched: bool,
    pub modified: bool,
    /// Documents the operation read back (cursors to their end), inserted, upserted, deleted.
    pub returned: u64,
    pub inserted: u64,
    /// Documents an update or replace changed (its `modifiedCount`).
    pub updated: u64,
    pub upserted: u64,
    pub deleted: u64,
    /// What a count answered (countDocuments, estimatedDocumentCount).
    pub counted: u64,
    /// Steps and transactions: each step's time, a transaction's end, retries and first attempt.
    pub extra: Option<Box<crate::metrics::sample::SampleExtra>>,
    pub error: Option<Box<crate::metrics::OpError>>,
}

impl Outcome {
    /// An operation abandoned after `limit` without a reply.
    pub(crate) fn timed_out(limit: std::time::Duration) -> Outcome {
        Outcome {
            error: Some(Box::new(crate::metrics::OpError {
                class: crate::metrics::ErrorClass::Timeout,
                code: None,
                message: crate::metrics::sample::ErrorText::Caught(std::sync::Arc::new(TimedOut(
                    limit,
                ))),
            })),
            ..Outcome::default()
        }
    }
}

/// A timeout's message, written out by the recorder.
struct TimedOut(std::time::Duration);

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no reply within the operation timeout of {} (op_timeout, --op-timeout)",
            humantime::format_duration(self.0)
        )
    }
}
