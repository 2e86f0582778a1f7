//! One virtual user: waits for its ramp-up slot, then sends operations until its stop condition
//! (loops, duration, or the run's stop token), pacing them in open loop, timing each one and
//! handing the sample to the recorder.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rand::SeedableRng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Context;
use crate::metrics::sample::GroupId;
use crate::metrics::sample::OpDocs;
use crate::metrics::Sample;
use crate::ops::{Backend, Outcome};
use crate::plan::{GroupPlan, StopAt};
use crate::workload::lookup::{now_ms, GroupLookup};
use crate::workload::request::CollectionDocs;
use crate::workload::template::{Cx, UserState};
use crate::workload::{Chooser, DocGen, KeySpace, OpSpec, Request};

/// Acknowledges an insert's `_id`s when dropped.
struct Ack<'a>(&'a KeySpace, Vec<i64>);

impl Drop for Ack<'_> {
    fn drop(&mut self) {
        for id in &self.1 {
            self.0.acknowledge(*id);
        }
    }
}

/// Decrements a group's active count when the user ends, however it ends.
struct Active<'a>(&'a AtomicU32);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A running user that waits (fewer users wanted): not counted as running until it is back.
struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    fn new(active: &'a AtomicU32) -> Self {
        active.fetch_sub(1, Ordering::Relaxed);
        Waiting(active)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one virtual user carries from one operation to the next: its number, its random
/// stream, its key chooser and its generators' `^Inc` counters. In open loop, all an idle user
/// is (no task of its own); made the first time the user is needed.
pub(super) struct User {
    n: u32,
    rng: rand::rngs::SmallRng,
    pick: Chooser,
    state: UserState,
    /// A state machine's (`GroupPlan::chain`): the state it enters next (None: not drawn yet),
    /// and the pause the last transition asked for, taken before it.
    next: Option<u32>,
    pause: std::time::Duration,
    /// The state it entered last (a state machine's), and whether its next visit sends
    /// nothing (`skip_first` of a resumed one).
    last: Option<u32>,
    skip: bool,
    /// Its operations so far (`collections_in_turn`: the next one's collection).
    turns: u64,
}

impl User {
    pub(super) fn new<B>(group: &GroupPlan, n: u32, ctx: &Context<B>) -> User {
        User {
            n,
            rng: rand::rngs::SmallRng::seed_from_u64(user_seed(ctx.seed, group.index, n)),
            pick: Chooser::new(group.keys, Arc::clone(&ctx.key_state[group.index])),
            state: UserState::default(),
            next: None,
            pause: std::time::Duration::ZERO,
            last: None,
            skip: false,
            turns: 0,
        }
    }

    /// A resumed state machine's user (`resume_from`): it enters first the state its
    /// counterpart was last in, its steps not sent again with `skip_first`.
    fn resume<B>(&mut self, group: &GroupPlan, ctx: &Context<B>) {
        let Some(r) = group.resume else {
            return;
        };
        let last = ctx
            .last_states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(r.from, self.n))
            .cloned();
        if let Some(at) = last.and_then(|name| group.mix.iter().position(|(s, _)| s.kind() == name))
        {
            self.next = u32::try_from(at).ok();
            self.skip = r.skip_first;
        }
    }

    /// Keeps the state it was last in, for a later group that resumes it.
    fn keep_state<B>(&self, group: &GroupPlan, ctx: &Context<B>) {
        if let Some(at) = self.last.filter(|_| group.chain.is_some()) {
            let Ok(at) = usize::try_from(at) else {
                return;
            };
            ctx.last_states
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((group.index, self.n), group.mix[at].0.kind());
        }
    }

    /// Its number in the group, from 0.
    pub(super) fn number(&self) -> u32 {
        self.n
    }
}

/// A closed-loop virtual user: waits for its ramp-up slot, then sends operations one after the
/// other until its loops, its group's duration or the run's stop end it.
pub(super) async fn virtual_user<B: Backend>(
    group: Arc<GroupPlan>,
    n: u32,
    ctx: Arc<Context<B>>,
    group_start: Instant,
    held: CancellationToken,
) {
    // A user added while the group runs (`--live-control`) starts at once.
    let offset = if n < group.threads {
        group
            .ramp_up
            .mul_f64(f64::from(n) / f64::from(group.threads))
    } else {
        std::time::Duration::ZERO
    };
    let deadline = match group.stop {
        StopAt::Duration(d) => Some(group_start + d),
        _ => None,
    };
    let loops = match group.stop {
        StopAt::Loops(l) => l,
        _ => u64::MAX,
    };
    // At least so many loops and at least so long (genny's `Repeat` with `Duration`).
    let at_least = match group.stop {
        StopAt::AtLeast(l, d) => Some((l, group_start + d)),
        _ => None,
    };
    let background = group.stop == StopAt::Background;
    tokio::select! {
        _ = tokio::time::sleep_until(group_start + offset) => {}
        _ = ctx.stop.cancelled() => return,
    }
    let active = &ctx.active[group.index];
    active.fetch_add(1, Ordering::Relaxed);
    let _active = Active(active);
    let mut user = User::new(&group, n, &ctx);
    user.resume(&group, &ctx);
    let warmup_end = group_start + group.warmup;
    let mut timer = Box::pin(tokio::time::sleep(ctx.op_timeout));
    // When the next operation is owed: the previous one's end, or the end of a pause.
    let mut owed = Instant::now();
    for done in 0..loops {
        if ctx.stop.is_cancelled() {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if at_least.is_some_and(|(l, d)| done >= l && Instant::now() >= d) {
            break;
        }
        if background && held.is_cancelled() {
            break;
        }
        if !pause(group.sleep_before, &ctx.stop, background.then_some(&held)).await {
            break;
        }
        if !group.sleep_before.is_zero() {
            owed = Instant::now();
        }
        // Fewer users wanted now (`--live-control`): this one waits, not counted as running.
        if !ctx.steer.wanted(group.index, n) {
            // Not counted while it waits, however the wait ends (an abort included).
            let back = {
                let _waiting = Waiting::new(active);
                ctx.steer
                    .wait_wanted(group.index, n, &ctx.stop, deadline)
                    .await
            };
            if !back {
                break;
            }
            owed = Instant::now();
        }
        if std::mem::take(&mut user.skip) {
            // A resumed state entered again without its steps: its way out is taken.
            let _ = next_spec(&group, &mut user);
        } else {
            match one_op(&group, &mut user, &ctx, None, owed, warmup_end, &mut timer).await {
                Some(end) => owed = end,
                None => break,
            }
        }
        let after = group.sleep_after + std::mem::take(&mut user.pause);
        // A pause ends with the group's time, as genny shortens a sleep to its phase's end.
        let after = deadline.map_or(after, |d| {
            after.min(d.saturating_duration_since(Instant::now()))
        });
        if !pause(after, &ctx.stop, background.then_some(&held)).await {
            break;
        }
        if !after.is_zero() {
            owed = Instant::now();
        }
    }
    user.keep_state(&group, &ctx);
}

/// Sleeps `d` (genny's `SleepBefore`/`SleepAfter`) unless the run stops or, for a background
/// group, its stage's other groups are done first; false then.
async fn pause(
    d: std::time::Duration,
    stop: &CancellationToken,
    held: Option<&CancellationToken>,
) -> bool {
    if d.is_zero() {
        return true;
    }
    let held = async {
        match held {
            Some(h) => h.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = stop.cancelled() => false,
        _ = held => false,
    }
}

/// An open-loop operation's slot: when it was due, whether it started late (it came due while
/// every worker of the group was busy, or waited for a connection), and the connection of the
/// pool it holds until its reply.
pub(super) struct Slot {
    pub(crate) due: Instant,
    pub(crate) late: bool,
    pub(crate) connection: tokio::sync::OwnedSemaphorePermit,
}

/// One operation of `user`: built, sent (bounded by the operation timeout, on `timer`: the
/// closed-loop user's own, or the open-loop worker's), timed and handed to the recorder; `due`
/// is its slot in open loop, `late` whether it came due with every worker busy or waited for a
/// connection; `owed` when the tool owed its send (`Gaps`). Its end, or None once the
/// recorder is gone.
pub(super) async fn one_op<B: Backend>(
    group: &GroupPlan,
    user: &mut User,
    ctx: &Context<B>,
    slot: Option<Slot>,
    owed: Instant,
    warmup_end: Instant,
    timer: &mut std::pin::Pin<Box<tokio::time::Sleep>>,
) -> Option<Instant> {
    let (due, late, connection) = match slot {
        Some(s) => (Some(s.due), s.late, Some(s.connection)),
        None => (None, false, None),
    };
    // A plan would need 2^32 group plans (each with its histograms) to fail this.
    let group_id = GroupId::try_from(group.index).expect("fewer than 2^32 group plans");
    let (collection, handle) = group.target(&mut user.rng, u64::from(user.n) + user.turns);
    user.turns += 1;
    let keys: &KeySpace = &ctx.keys[collection];
    let spec = next_spec(group, user);
    let op = spec.kind();
    // The `_id`s a template or the steps insert, acknowledged however the operation ends.
    let (mut req, issued) = build(group, collection, spec, user, ctx);
    // Acknowledged however the insert ends, even by a panic: a later `_id` is drawn only
    // once every insert before it has ended.
    req.of_group(group.index);
    let _ack = Ack(keys, issued);
    // What the audit will check of it, read before the request is sent away; abandoned at a
    // stop, it is filed as in doubt.
    // The listeners of watch groups are told of it too, with when it was acknowledged.
    let intent = match (&ctx.audit, &ctx.listening) {
        (Some(a), _) => crate::audit::Intent::of(a.plan(), group.index, &mut req),
        (None, Some(l)) => crate::audit::Intent::of(&l.plan, group.index, &mut req),
        (None, None) => None,
    };
    let heard = ctx.listening.as_ref().and_then(|_| intent.clone());
    let pending = ctx
        .audit
        .as_ref()
        .zip(intent)
        .map(|(a, i)| crate::audit::Pending::with(a, group.index, i));
    let started = Instant::now();
    let limit = group.op_limit(spec, ctx.op_timeout);
    let out = within(|| ctx.backend.execute(handle, req), timer, started, limit)
        .await
        .unwrap_or_else(|| abandoned(spec, limit));
    let elapsed = started.elapsed();
    let warmup = due.unwrap_or(started) < warmup_end;
    if !warmup {
        ctx.gaps.add(started.saturating_duration_since(owed));
    }
    // The connection is free again once the reply is in: handing the sample on is not the
    // pool's wait.
    drop(connection);
    let done = crate::audit::Done {
        error: out.error.as_ref().map(|e| e.class),
        tx: out.extra.as_ref().and_then(|x| x.tx).map(|t| t.state),
        matched: out.matched,
        deleted: out.deleted,
    };
    if let (Some(l), Some(i)) = (&ctx.listening, heard) {
        l.acked(
            (group, collection),
            i,
            &done,
            ctx.clock.epoch_us(started + elapsed),
        );
    }
    if let Some(p) = pending {
        p.settle(done);
    }
    let start_us = ctx.clock.epoch_us(started);
    let sample = Sample {
        group: group_id,
        op,
        mixed: !group.mix.is_empty(),
        thread: user.n + 1,
        start_us,
        intended_us: due.map_or(start_us, |d| ctx.clock.epoch_us(d)),
        elapsed_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        late,
        warmup,
        sent: out.sent,
        received: out.received,
        matched: out.matched,
        modified: out.modified,
        extra: out.extra,
        docs: OpDocs::new(
            out.returned,
            out.inserted,
            out.updated,
            out.upserted,
            out.deleted,
        )
        .counting(out.counted),
        error: out.error,
    };
    ctx.samples
        .send(sample)
        .await
        .is_ok()
        .then_some(started + elapsed)
}

/// The operation `user` does next: a state machine's user enters its next state (its first
/// drawn by `initial`) and takes the way out of it now (the pause is taken after the
/// operation); any other draws from the group's mix.
fn next_spec<'g>(group: &'g GroupPlan, user: &mut User) -> &'g OpSpec {
    let Some(chain) = &group.chain else {
        return group.draw(&mut user.rng);
    };
    let at = match user.next.and_then(|s| usize::try_from(s).ok()) {
        Some(s) => s,
        None => chain.first(&mut user.rng),
    };
    let way = chain.next(at, &mut user.rng);
    // A state machine has far fewer than 2^32 states.
    user.next = u32::try_from(way.to).ok();
    user.last = u32::try_from(at).ok();
    let mut lookup = crate::workload::template::NoLookup;
    user.pause = way.pause(&mut Cx {
        rng: &mut user.rng,
        lookup: &mut lookup,
        now_ms: now_ms(),
        user: user.n,
        state: &mut user.state,
    });
    group.mix.get(at).map_or(&group.op, |(s, _)| s)
}

/// The next request of `spec` for `user`, built before the clock starts, and the `_id`s it
/// inserts from the key space. (The generation context is not `Send`: it lives here, not
/// across the operation's await.)
/// The request of `spec` on `collection` (the group's, or the one it drew).
fn build<B>(
    group: &GroupPlan,
    collection: usize,
    spec: &OpSpec,
    user: &mut User,
    ctx: &Context<B>,
) -> (Request, Vec<i64>) {
    let User {
        n,
        rng,
        pick,
        state,
        ..
    } = user;
    let keys: &KeySpace = &ctx.keys[collection];
    let gen: &DocGen = &ctx.gens[collection];
    let mut issued = Vec::new();
    let mut lookup = GroupLookup {
        keys,
        pick,
        document: gen,
    };
    let mut cx = Cx {
        rng,
        lookup: &mut lookup,
        now_ms: now_ms(),
        user: *n,
        state,
    };
    let mut docs = CollectionDocs {
        keys,
        document: gen,
    };
    let req = match spec {
        OpSpec::Steps(s) => Request::Steps(s.build(
            &mut cx,
            &mut docs,
            (group.collection, collection),
            &ctx.collections,
            &mut issued,
        )),
        OpSpec::Template(t) => {
            let req = t.build(&mut cx, &mut docs);
            issued.clone_from(&req.issued);
            Request::Template(req)
        }
    };
    (req, issued)
}

/// The operation `send` makes, bounded by `limit` from `started` on the one `timer`, armed at
/// some operation's deadline; when it fires before this one's, it is moved on to it. An
/// operation that ends in time (nearly all) moves no timer, and the timer is polled once per
/// operation (to hold the task's waker) and again only once it has fired. None: no reply in
/// time. (The operation's future is made here, in place, not moved in.)
async fn within<F: Future<Output = Outcome>>(
    send: impl FnOnce() -> F,
    timer: &mut std::pin::Pin<Box<tokio::time::Sleep>>,
    started: Instant,
    limit: std::time::Duration,
) -> Option<Outcome> {
    let sent = send();
    tokio::pin!(sent);
    let mut watching = false;
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(out) = sent.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(out));
        }
        while !watching || timer.is_elapsed() {
            // Unconstrained: out of tokio's cooperative budget a sleep would return Pending
            // without holding the waker, and never be looked at again.
            let mut poll = tokio::task::unconstrained(timer.as_mut());
            match std::pin::Pin::new(&mut poll).poll(cx) {
                std::task::Poll::Pending => watching = true,
                std::task::Poll::Ready(()) => {
                    let due = started + limit;
                    if Instant::now() >= due {
                        return std::task::Poll::Ready(None);
                    }
                    timer.as_mut().reset(due);
                    watching = false;
                }
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// An operation abandoned at its timeout; mid-transaction, whether it committed is not known.
fn abandoned(spec: &OpSpec, limit: std::time::Duration) -> Outcome {
    let mut out = Outcome::timed_out(limit);
    if matches!(spec, OpSpec::Steps(s) if s.transaction) {
        out.extra = Some(Box::new(crate::metrics::sample::SampleExtra {
            tx: Some(crate::metrics::sample::TxSample {
                state: crate::metrics::sample::TxState::InDoubt,
                ..Default::default()
            }),
            ..Default::default()
        }));
    }
    out
}

/// A distinct, reproducible stream per virtual user (splitmix64 of seed, group and user).
pub fn user_seed(seed: u64, group: usize, user: u32) -> u64 {
    let mut z = seed ^ ((group as u64) << 32 | u64::from(user)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Clock;
    use crate::ops::Prepared;
    use crate::plan::RunPlan;

    /// Answers every operation at once with nothing sent or received.
    struct Idle;

    impl Backend for Idle {
        async fn execute(&self, _on: usize, _req: Request) -> Outcome {
            Outcome::default()
        }

        async fn prepare(
            &self,
            _plan: &RunPlan,
            _seed: u64,
            _stop: &CancellationToken,
            _foreign: crate::ops::setup::Foreign,
            _begin: Option<std::time::SystemTime>,
            _preloading: crate::ops::setup::Preloading<'_>,
        ) -> Result<Prepared, crate::error::Error> {
            unreachable!("a virtual user never prepares the target")
        }
    }

    #[tokio::test]
    async fn a_sample_names_its_group_past_65535_group_plans() {
        let text = "[document]\ncity = { choice = [\"a\"] }\n[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 1\nloops = 1\n";
        let loaded = crate::plan::profile::parse("p.toml", text, "p").unwrap();
        let plan = RunPlan::build(&loaded, &Default::default()).unwrap();
        // The 65,537th group plan: 66 groups of 1,000 rate steps reach it.
        let index = usize::from(u16::MAX) + 1;
        let mut group = plan.groups().next().unwrap().clone();
        group.index = index;
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let ctx = Arc::new(Context {
            backend: Idle,
            gens: vec![Arc::clone(plan.document())],
            keys: vec![Arc::new(KeySpace::starting_at(0))],
            collections: Arc::new([]),
            samples: tx,
            stop: CancellationToken::new(),
            active: Arc::new((0..=index).map(|_| AtomicU32::new(0)).collect()),
            missed: Vec::new(),
            key_state: (0..=index).map(|_| Default::default()).collect(),
            seed: 1,
            clock: Clock::new(),
            op_timeout: std::time::Duration::from_secs(1),
            audit: None,
            listening: None,
            gaps: crate::executor::Gaps::default(),
            last_states: Default::default(),
            pool: Arc::new(tokio::sync::Semaphore::new(1)),
            pool_size: 1,
            steer: Default::default(),
        });
        virtual_user(
            Arc::new(group),
            0,
            ctx,
            Instant::now(),
            CancellationToken::new(),
        )
        .await;
        let sample = rx.recv().await.expect("the user's one sample");
        assert_eq!(usize::from(sample.group), index);
    }

    #[test]
    fn an_idle_user_is_its_state_alone_a_few_hundred_bytes_at_most() {
        // What an open-loop user that has run costs while it waits (one that has not run yet
        // costs nothing): its random stream, key chooser and `^Inc` counters, no task.
        let size = std::mem::size_of::<User>();
        assert!(size <= 192, "{size} bytes");
    }

    #[test]
    fn user_seeds_differ_across_users_and_groups_and_repeat_for_the_same_seed() {
        let seeds: std::collections::HashSet<u64> = (0..4)
            .flat_map(|g| (0..1000).map(move |u| user_seed(42, g, u)))
            .collect();
        assert_eq!(seeds.len(), 4000);
        assert_eq!(user_seed(42, 1, 7), user_seed(42, 1, 7));
        assert_ne!(user_seed(42, 1, 7), user_seed(43, 1, 7));
    }
}
