//! The MongoDB backend: the target collection with the profile's write and read settings, and
//! each request sent through the official driver with its payload sizes and matched / modified
//! counts.

use std::time::SystemTime;

use mongodb::bson::{Document, RawDocumentBuf};
use std::sync::Arc;

use mongodb::options::{
    Acknowledgment, CollectionOptions, ReadConcern, ReadPreference, ReadPreferenceOptions,
    SelectionCriteria, TagSet, WriteConcern,
};
use mongodb::Collection;
use tokio_util::sync::CancellationToken;

use super::{Backend, Outcome, Prepared};
use crate::error::Error;
use crate::metrics::sample::{OpDocs, SampleExtra, StepFailure, StepSample};
use crate::plan::{
    Concerns, HandlePlan, ReadConcernPlan, ReadPref, RunPlan, TargetPlan, WriteConcernPlan,
};
use crate::workload::command::OnError;
use crate::workload::command::{StepLookup, StepsRequest};
use crate::workload::request::CollectionDocs;
use crate::workload::template::{Cx, UserState};
use crate::workload::Request;
use rand::SeedableRng;

/// The workload's side of a real deployment.
#[derive(Clone)]
pub(crate) struct MongoBackend {
    /// The first collection with `[target]`'s concerns (setup's).
    pub(crate) coll: Collection<RawDocumentBuf>,
    /// Each of the plan's handles: a collection with a group's concerns.
    pub(crate) handles: Arc<Vec<Handle>>,
    /// What each handle is (collection and concerns), to find a step's.
    pub(crate) handle_plans: Arc<Vec<HandlePlan>>,
    /// Each virtual user's session (by its group's handle and its number), kept across its
    /// operations: its transactions', and its causally consistent operations'. Ended with the
    /// run (`Backend::finish`).
    pub(crate) sessions: Sessions,
    /// Each collection of the plan with `[target]`'s concerns, for the setup.
    pub(crate) setup: Arc<Vec<Collection<RawDocumentBuf>>>,
    pub(crate) client: mongodb::Client,
    /// With watch groups: the listeners' own client, and the resumes its command events show.
    pub(crate) listeners: Option<(mongodb::options::ClientOptions, Arc<super::listen::Resumes>)>,
    /// Compute payload sizes (off only for the bare-driver baseline).
    pub(crate) measure: bool,
    /// What the run's operations share (a scan's limiter, the samples).
    pub(crate) shared: Arc<super::template::Shared>,
}

/// A collection with the write and read settings a group sends with.
pub(crate) struct Handle {
    pub(crate) coll: Collection<RawDocumentBuf>,
    pub(crate) write_concern: Option<WriteConcern>,
    /// `w: 0` (see `template::On::unacknowledged`).
    pub(crate) unacknowledged: bool,
}

impl MongoBackend {
    /// With watch groups: the listeners' own client on `uri` (a connection per stream).
    pub(crate) async fn with_listeners(mut self, uri: &str, plan: &RunPlan) -> Result<Self, Error> {
        let streams: u32 = plan
            .groups()
            .filter(|g| g.watch.is_some())
            .map(|g| g.threads)
            .sum();
        if streams > 0 {
            let opts = super::connect::listeners(uri).await?;
            self.listeners = Some((opts, Arc::new(super::listen::Resumes::default())));
        }
        Ok(self)
    }

    pub(crate) fn new(client: &mongodb::Client, plan: &RunPlan) -> Self {
        let handles = plan
            .handles
            .iter()
            .map(|h| {
                let (coll, write_concern) = handle(
                    client,
                    plan.database_of(h.collection),
                    &plan.collections[h.collection].name,
                    &h.concerns,
                );
                Handle {
                    coll,
                    write_concern,
                    unacknowledged: h.concerns.write == Some(WriteConcernPlan::Nodes(0)),
                }
            })
            .collect();
        MongoBackend {
            coll: collection(client, &plan.target),
            setup: Arc::new(
                plan.collections
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut t = plan.target.clone();
                        t.database = plan.database_of(i).to_string();
                        collection_named(client, &t, &c.name)
                    })
                    .collect(),
            ),
            handles: Arc::new(handles),
            handle_plans: Arc::new(plan.handles.clone()),
            sessions: Default::default(),
            client: client.clone(),
            listeners: None,
            measure: true,
            shared: Default::default(),
        }
    }
}

impl Backend for MongoBackend {
    fn listen(
        &self,
        group: std::sync::Arc<crate::plan::GroupPlan>,
        n: u32,
        seed: u64,
        run: super::listen::ListenRun,
        opened: tokio::sync::oneshot::Sender<Result<(), String>>,
    ) -> impl std::future::Future<Output = Option<super::listen::Listened>> + Send + 'static {
        // Each listener on a client of its own, whose command events are its resumes.
        let (client, resumes) = match &self.listeners {
            Some((opts, r)) => {
                let mut opts = opts.clone();
                opts.command_event_handler =
                    Some(super::listen::Resumes::handler(r, group.index, n));
                match super::connect::client_of(opts) {
                    Ok(c) => (c, Some(Arc::clone(r))),
                    Err(_) => (self.client.clone(), None),
                }
            }
            None => (self.client.clone(), None),
        };
        async move { Some(super::listen::listen(client, resumes, group, n, seed, run, opened).await) }
    }

    async fn execute(&self, on: usize, req: Request) -> Outcome {
        let h = self.handles.get(on);
        let coll = h.map_or(&self.coll, |h| &h.coll);
        match req {
            Request::Template(t) if self.causal(on) => {
                let mut out = Outcome::default();
                let user = (t.group, t.user);
                let mut session = match self.session(on, user).await {
                    Ok(s) => s,
                    Err(e) => {
                        out.error = Some(Box::new(super::classify::classify(e)));
                        return out;
                    }
                };
                let to = super::template::On {
                    coll,
                    client: &self.client,
                    write_concern: h.and_then(|h| h.write_concern.as_ref()),
                    unacknowledged: h.is_some_and(|h| h.unacknowledged),
                    measure: self.measure,
                    shared: &self.shared,
                };
                if let Err(e) =
                    super::template::execute(to, t, &mut out, None, Some(&mut session)).await
                {
                    out.error = Some(Box::new(super::classify::classify(e)));
                }
                self.keep(user, session);
                out
            }
            Request::Template(t) => {
                let mut out = Outcome::default();
                let on = super::template::On {
                    coll,
                    client: &self.client,
                    write_concern: h.and_then(|h| h.write_concern.as_ref()),
                    unacknowledged: h.is_some_and(|h| h.unacknowledged),
                    measure: self.measure,
                    shared: &self.shared,
                };
                if let Err(e) = super::template::execute(on, t, &mut out, None, None).await {
                    out.error = Some(Box::new(super::classify::classify(e)));
                }
                out
            }
            Request::Steps(s) => self.steps(on, s).await,
        }
    }

    async fn plans(
        &self,
        plan: &RunPlan,
        keys: &[&crate::workload::KeySpace],
        stage: usize,
    ) -> Vec<super::explain::QueryPlan> {
        super::explain::plans(plan, &self.client, keys, stage).await
    }

    fn finish(&self) {
        // Dropped sessions go back to the driver's pool, which ends them with the client.
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    async fn audit_read(
        &self,
        plan: &RunPlan,
        wanted: &crate::audit::Wanted,
        stop: &CancellationToken,
    ) -> Result<crate::audit::Found, String> {
        super::audit::read(&self.client, &plan.target.database, wanted, stop).await
    }

    async fn invariants(&self, plan: &RunPlan) -> (Vec<super::invariant::Reading>, Vec<String>) {
        super::invariant::read(plan, &self.client).await
    }

    async fn prepare(
        &self,
        plan: &RunPlan,
        seed: u64,
        stop: &CancellationToken,
        foreign: super::setup::Foreign,
        begin: Option<SystemTime>,
        preloading: super::setup::Preloading<'_>,
    ) -> Result<Prepared, Error> {
        super::setup::prepare(plan, &self.setup, seed, stop, (foreign, preloading), begin).await
    }
}

impl MongoBackend {
    /// The handle of collection `collection` with the concerns of handle `on`.
    fn handle_for(&self, on: usize, collection: usize) -> Option<&Handle> {
        let own = self.handle_plans.get(on)?;
        // The operation's own collection (nearly every step): its handle, without a search
        // through a plan's handles (10,000 for a workload of 10,000 collections).
        if own.collection == collection {
            return self.handles.get(on);
        }
        let concerns = &own.concerns;
        let i = self
            .handle_plans
            .iter()
            .position(|h| h.collection == collection && &h.concerns == concerns)?;
        self.handles.get(i)
    }

    /// Several steps in order as one operation (in one transaction with `transaction = true`).
    async fn steps(&self, on: usize, req: StepsRequest) -> Outcome {
        if req.op.transaction {
            return self.transaction(on, req).await;
        }
        if self.causal(on) {
            let mut session = match self.session(on, (req.group, req.user)).await {
                Ok(s) => s,
                Err(e) => {
                    return Outcome {
                        error: Some(Box::new(super::classify::classify(e.clone()))),
                        ..Outcome::default()
                    }
                }
            };
            let (mut out, sent) = self.run_steps(on, &req, Some(&mut session)).await;
            self.keep((req.group, req.user), session);
            if let Err(e) = sent {
                out.error = Some(Box::new(super::classify::classify(e)));
            }
            return out;
        }
        let (mut out, sent) = self.run_steps(on, &req, None).await;
        if let Err(e) = sent {
            out.error = Some(Box::new(super::classify::classify(e)));
        }
        out
    }

    /// Each step made (before the clock, or at its turn when it reads an earlier one's result)
    /// and sent, in `session` when given; the first that matches nothing, or fails, ends it.
    /// Returns what they did and the failure, unclassified (a transaction reads its labels).
    async fn run_steps(
        &self,
        on: usize,
        req: &StepsRequest,
        mut session: Option<&mut mongodb::ClientSession>,
    ) -> (Outcome, mongodb::error::Result<()>) {
        let op = &req.op;
        // Every step runs (genny's): the operation found or wrote a document when one did.
        // Otherwise: when every step did (the first that does not ends it).
        let mut out = Outcome {
            matched: !op.every_step,
            ..Outcome::default()
        };
        // The same stream for every attempt: a retried transaction sends the same steps.
        let mut rng = rand::rngs::SmallRng::seed_from_u64(req.seed);
        let mut state = UserState::default();
        let mut results: Vec<Option<Document>> = Vec::with_capacity(op.steps.len());
        let mut timed: Vec<StepSample> = Vec::with_capacity(op.steps.len());
        for ((step, pre), policy) in op.steps.iter().zip(&req.built).zip(&op.policy) {
            let collection = req.collection_of(step.collection);
            let mut _late = None;
            let built = match pre {
                Some(r) => r.clone(),
                None => {
                    let Some((r, acks)) =
                        late_step(req, step, collection, &results, (&mut rng, &mut state))
                    else {
                        break;
                    };
                    // Acknowledged however the operation ends (even abandoned at its timeout).
                    _late = Some(acks);
                    r
                }
            };
            let Some(h) = self.handle_for(on, collection) else {
                break;
            };
            let mut one = Outcome::default();
            let mut result = None;
            let step_started = std::time::Instant::now();
            let sent = super::template::execute(
                super::template::On {
                    coll: &h.coll,
                    client: &self.client,
                    // In a transaction the write concern is the transaction's, at its commit.
                    write_concern: h.write_concern.as_ref().filter(|_| session.is_none()),
                    unacknowledged: h.unacknowledged && session.is_none(),
                    measure: self.measure,
                    shared: &self.shared,
                },
                built,
                &mut one,
                Some(&mut result),
                session.as_deref_mut(),
            )
            .await;
            let mut row = step_sample(step, step_started, &one);
            out.sent = out.sent.saturating_add(one.sent);
            out.received = out.received.saturating_add(one.received);
            out.modified |= one.modified;
            out.returned += one.returned;
            out.inserted += one.inserted;
            out.updated += one.updated;
            out.upserted += one.upserted;
            out.deleted += one.deleted;
            out.counted += one.counted;
            if let Err(e) = sent {
                // In a transaction a failure ends it, whatever the step says: the server has
                // aborted it.
                let goes_on = !op.transaction;
                match policy.on_error {
                    OnError::Record if goes_on => {
                        row.error = Some(StepFailure(Box::new(super::classify::classify(e))));
                    }
                    OnError::Ignore if goes_on => {}
                    _ => {
                        row.error =
                            Some(StepFailure(Box::new(super::classify::classify(e.clone()))));
                        timed.push(row);
                        out.matched = false;
                        out.extra = Some(Box::new(SampleExtra {
                            steps: timed,
                            ..SampleExtra::default()
                        }));
                        return (out, Err(e));
                    }
                }
                timed.push(row);
                results.push(None);
                continue;
            }
            timed.push(row);
            // A write sent with w:0 says nothing of what it matched: the steps go on.
            let unknown =
                h.unacknowledged && session.is_none() && step.verb.writes() && step.verb.at_w0();
            if op.every_step {
                out.matched |= one.matched || unknown;
            } else if !one.matched && !unknown {
                // Nothing to go on with: the operation ends here, as not matched.
                out.matched = false;
                break;
            }
            results.push(result);
        }
        out.extra = Some(Box::new(SampleExtra {
            steps: timed,
            ..SampleExtra::default()
        }));
        (out, Ok(()))
    }

    /// The steps in one transaction, retried as the drivers' convenient API does: the whole
    /// transaction again on TransientTransactionError, the commit again on
    /// UnknownTransactionCommitResult, until `TX_TIME_LIMIT` from the first attempt. A step that
    /// matches nothing aborts it; a commit whose outcome stays unknown is in doubt, never
    /// committed. Only the committed attempt's documents are counted (an aborted one's are
    /// rolled back).
    async fn transaction(&self, on: usize, req: StepsRequest) -> Outcome {
        let mut session = match self.session(on, (req.group, req.user)).await {
            Ok(s) => s,
            Err(e) => {
                return Outcome {
                    error: Some(Box::new(super::classify::classify(e.clone()))),
                    extra: Some(Box::new(SampleExtra {
                        tx: Some(crate::metrics::sample::TxSample {
                            state: crate::metrics::sample::TxState::Aborted,
                            ..Default::default()
                        }),
                        ..SampleExtra::default()
                    })),
                    ..Outcome::default()
                }
            }
        };
        let out = self.attempts(on, &req, &mut session).await;
        self.keep((req.group, req.user), session);
        out
    }

    /// A transaction's attempts in the user's `session` (see `transaction`).
    async fn attempts(
        &self,
        on: usize,
        req: &StepsRequest,
        session: &mut mongodb::ClientSession,
    ) -> Outcome {
        use crate::metrics::sample::{TxSample, TxState};
        use mongodb::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
        let started = std::time::Instant::now();
        let mut tx = TxSample::default();
        // The first attempt's time, taken when it ends (committed, retried or given up).
        let mut first: Option<u32> = None;
        let us = |d: std::time::Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
        let ended = |out: &mut Outcome, tx: TxSample, first: Option<u32>| {
            let extra = out.extra.get_or_insert_with(Default::default);
            extra.tx = Some(tx);
            extra.first_attempt_us = first;
        };
        let failed = |e: &mongodb::error::Error, tx: TxSample, first: Option<u32>| {
            let mut out = Outcome {
                error: Some(Box::new(super::classify::classify(e.clone()))),
                ..Outcome::default()
            };
            ended(&mut out, tx, first);
            out
        };
        let options = self.transaction_options(on);
        let holds = !req.op.held.is_zero();
        'attempt: loop {
            if let Err(e) = session
                .start_transaction()
                .with_options(options.clone())
                .await
            {
                tx.state = TxState::Aborted;
                return failed(&e, tx, first.or(Some(us(started.elapsed()))));
            }
            let attempt = std::time::Instant::now();
            let (mut out, sent) = self.run_steps(on, req, Some(&mut *session)).await;
            // A scan that holds its transaction open is not sent again (its hold again past the
            // operation's limit): genny counts the error and goes on.
            let retry = |e: &mongodb::error::Error| {
                e.contains_label(TRANSIENT_TRANSACTION_ERROR)
                    && started.elapsed() < TX_TIME_LIMIT
                    && !holds
            };
            match sent {
                Err(e) => {
                    let _ = session.abort_transaction().await;
                    first.get_or_insert(us(attempt.elapsed()));
                    if retry(&e) {
                        tx.retries = tx.retries.saturating_add(1);
                        continue 'attempt;
                    }
                    tx.state = TxState::Aborted;
                    return failed(&e, tx, first.or(Some(us(started.elapsed()))));
                }
                // (With `every_step`, as genny's withTransaction, it commits whatever they found.)
                Ok(()) if !out.matched && !req.op.every_step => {
                    // A step found nothing to go on with: the transaction is aborted.
                    let _ = session.abort_transaction().await;
                    tx.state = TxState::Aborted;
                    first.get_or_insert(us(attempt.elapsed()));
                    let mut aborted = Outcome {
                        sent: out.sent,
                        received: out.received,
                        extra: out.extra.take(),
                        ..Outcome::default()
                    };
                    ended(&mut aborted, tx, first);
                    return aborted;
                }
                Ok(()) => loop {
                    match session.commit_transaction().await {
                        Ok(()) => {
                            tx.state = TxState::Committed;
                            first.get_or_insert(us(attempt.elapsed()));
                            ended(&mut out, tx, first);
                            return out;
                        }
                        Err(e)
                            if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
                                && started.elapsed() < TX_TIME_LIMIT =>
                        {
                            tx.commit_retries = tx.commit_retries.saturating_add(1);
                        }
                        Err(e) if retry(&e) => {
                            first.get_or_insert(us(attempt.elapsed()));
                            tx.retries = tx.retries.saturating_add(1);
                            continue 'attempt;
                        }
                        Err(e) => {
                            tx.state = if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) {
                                TxState::InDoubt
                            } else {
                                TxState::Aborted
                            };
                            return failed(&e, tx, first.or(Some(us(started.elapsed()))));
                        }
                    }
                },
            }
        }
    }

    fn causal(&self, on: usize) -> bool {
        self.handle_plans
            .get(on)
            .is_some_and(|p| p.concerns.causal_consistency)
    }

    /// The session of `user` (group plan, user) sending on handle `on`: its own, kept from its
    /// last operation, or a new one (causally consistent when the group asks for it).
    async fn session(
        &self,
        on: usize,
        user: (usize, u32),
    ) -> mongodb::error::Result<mongodb::ClientSession> {
        let kept = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&user);
        match kept {
            Some(s) => Ok(s),
            None => {
                let options = mongodb::options::SessionOptions::builder()
                    .causal_consistency(Some(self.causal(on)))
                    .build();
                self.client.start_session().with_options(options).await
            }
        }
    }

    /// Keeps the user's session for its next operation.
    fn keep(&self, user: (usize, u32), session: mongodb::ClientSession) {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(user, session);
    }

    /// The group's read concern, write concern and read preference for its transactions.
    fn transaction_options(&self, on: usize) -> mongodb::options::TransactionOptions {
        let h = self.handles.get(on);
        let plan = self.handle_plans.get(on);
        mongodb::options::TransactionOptions::builder()
            .write_concern(h.and_then(|h| h.write_concern.clone()))
            .read_concern(plan.and_then(|p| p.concerns.read_concern).map(read_concern))
            .selection_criteria(h.and_then(|h| h.coll.selection_criteria().cloned()))
            .build()
    }
}

/// The virtual users' sessions, by (group plan, user): each user's own, however many groups
/// share a collection and concerns.
pub(crate) type Sessions =
    Arc<std::sync::Mutex<std::collections::HashMap<(usize, u32), mongodb::ClientSession>>>;

/// How long a transaction may be retried, from its first attempt: the drivers' convenient API's
/// limit (120 s).
pub(crate) const TX_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

fn read_concern(r: ReadConcernPlan) -> ReadConcern {
    match r {
        ReadConcernPlan::Local => ReadConcern::local(),
        ReadConcernPlan::Majority => ReadConcern::majority(),
        ReadConcernPlan::Available => ReadConcern::available(),
        ReadConcernPlan::Linearizable => ReadConcern::linearizable(),
        ReadConcernPlan::Snapshot => ReadConcern::snapshot(),
    }
}

/// A collection with a group's concerns, and its write concern (for a client-level bulkWrite).
pub(crate) fn handle(
    client: &mongodb::Client,
    database: &str,
    name: &str,
    c: &Concerns,
) -> (Collection<RawDocumentBuf>, Option<WriteConcern>) {
    let w = c.write.as_ref().map(|w| match w {
        WriteConcernPlan::Nodes(n) => Acknowledgment::Nodes(*n),
        WriteConcernPlan::Majority => Acknowledgment::Majority,
    });
    let write_concern = (w.is_some() || c.journal.is_some() || c.wtimeout.is_some()).then(|| {
        WriteConcern::builder()
            .w(w)
            .journal(c.journal)
            .w_timeout(c.wtimeout)
            .build()
    });
    let rp = &c.read_preference;
    let options = (!rp.tags.is_empty() || rp.max_staleness.is_some()).then(|| {
        ReadPreferenceOptions::builder()
            .tag_sets((!rp.tags.is_empty()).then(|| {
                rp.tags
                    .iter()
                    .map(|set| set.iter().cloned().collect::<TagSet>())
                    .collect()
            }))
            .max_staleness(rp.max_staleness)
            .build()
    });
    let read_pref = match rp.mode {
        ReadPref::Primary => ReadPreference::Primary,
        ReadPref::PrimaryPreferred => ReadPreference::PrimaryPreferred { options },
        ReadPref::Secondary => ReadPreference::Secondary { options },
        ReadPref::SecondaryPreferred => ReadPreference::SecondaryPreferred { options },
        ReadPref::Nearest => ReadPreference::Nearest { options },
    };
    let read_concern = c.read_concern.map(read_concern);
    let opts = CollectionOptions::builder()
        .write_concern(write_concern.clone())
        .read_concern(read_concern)
        .selection_criteria(SelectionCriteria::ReadPreference(read_pref))
        .build();
    (
        client
            .database(database)
            .collection_with_options(name, opts),
        write_concern,
    )
}

/// The target collection with the profile's write concern and read preference.
pub(crate) fn collection(client: &mongodb::Client, t: &TargetPlan) -> Collection<RawDocumentBuf> {
    collection_named(client, t, &t.collection)
}

/// A collection of the target database with `[target]`'s write concern and read preference.
pub(crate) fn collection_named(
    client: &mongodb::Client,
    t: &TargetPlan,
    name: &str,
) -> Collection<RawDocumentBuf> {
    let w = t.write_concern.as_ref().map(|w| match w {
        WriteConcernPlan::Nodes(n) => Acknowledgment::Nodes(*n),
        WriteConcernPlan::Majority => Acknowledgment::Majority,
    });
    let write_concern = (w.is_some() || t.journal.is_some())
        .then(|| WriteConcern::builder().w(w).journal(t.journal).build());
    let read_pref = match t.read_preference {
        ReadPref::Primary => ReadPreference::Primary,
        ReadPref::PrimaryPreferred => ReadPreference::PrimaryPreferred { options: None },
        ReadPref::Secondary => ReadPreference::Secondary { options: None },
        ReadPref::SecondaryPreferred => ReadPreference::SecondaryPreferred { options: None },
        ReadPref::Nearest => ReadPreference::Nearest { options: None },
    };
    let opts = CollectionOptions::builder()
        .write_concern(write_concern)
        .selection_criteria(SelectionCriteria::ReadPreference(read_pref))
        .build();
    client
        .database(&t.database)
        .collection_with_options(name, opts)
}

/// One step's sample: its row, time since `started`, the documents it moved, whether it matched.
fn step_sample(
    step: &crate::workload::command::TemplateOp,
    started: std::time::Instant,
    one: &Outcome,
) -> StepSample {
    StepSample {
        name: step.name.clone(),
        us: u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX),
        docs: OpDocs::new(
            one.returned,
            one.inserted,
            one.updated,
            one.upserted,
            one.deleted,
        )
        .counting(one.counted),
        matched: one.matched,
        error: None,
    }
}

/// A step that reads an earlier one's result, made at its turn (with the earlier `results`),
/// and the `_id`s it issued; None when its collection is not the run's.
fn late_step(
    req: &StepsRequest,
    step: &Arc<crate::workload::command::TemplateOp>,
    collection: usize,
    results: &[Option<Document>],
    (rng, state): (&mut rand::rngs::SmallRng, &mut UserState),
) -> Option<(
    crate::workload::command::TemplateRequest,
    crate::workload::keys::Acks,
)> {
    let (keys, gen) = req.collections.get(collection)?;
    let mut lookup = StepLookup {
        bound: &req.bound,
        results,
    };
    let mut cx = Cx {
        rng,
        lookup: &mut lookup,
        now_ms: crate::workload::lookup::now_ms(),
        user: req.user,
        state,
    };
    let r = step.build(
        &mut cx,
        &mut CollectionDocs {
            keys,
            document: gen,
        },
    );
    let acks = crate::workload::keys::Acks(Arc::clone(keys), r.issued.clone());
    Some((r, acks))
}
