//! Runs the thread groups of a stage at once on tokio: in closed loop one virtual user is one
//! task (`user`); in open loop one task per group (`open`) hands the slots of its schedule
//! (`pacer`) to idle users, each operation a task while it runs. Users stop at their loops,
//! their duration, the run's stop token (Ctrl-C) or the error-rate `guard`. Samples go to the
//! recorder over a bounded channel.
//!
//! Owns: stages, virtual users, pacing, stop conditions, and catching a user's panic so that it
//! fails the run instead of vanishing. Never: formats text, writes files, or calls the driver
//! except through `ops::Backend`.

pub(crate) mod guard;
mod open;
pub(crate) mod pacer;
pub mod steer;
mod user;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::{panic_message, Sample};
use crate::ops::Backend;
use crate::plan::{GroupPlan, Stage, StopAt};
use crate::workload::{DocGen, KeySpace};

pub use crate::metrics::Clock;
pub(crate) use guard::ErrorGuard;
pub(crate) use pacer::Schedule;
pub use user::user_seed;

/// How long in-flight operations may finish after a stop request before they are abandoned.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(3);

/// What every virtual user shares.
pub(crate) struct Context<B> {
    pub(crate) backend: B,
    /// By `RunPlan::collections` index: each collection's document template and key space.
    pub(crate) gens: Vec<Arc<DocGen>>,
    pub(crate) keys: Vec<Arc<KeySpace>>,
    /// The same pairs, for steps made at their turn.
    pub(crate) collections: crate::workload::command::CollectionsDocs,
    pub(crate) samples: mpsc::Sender<Sample>,
    pub(crate) stop: CancellationToken,
    /// Running virtual users per group, by `GroupPlan::index`.
    pub(crate) active: Arc<Vec<AtomicU32>>,
    /// Scheduled operations per group that never started (open loop, time ran out).
    pub(crate) missed: Vec<AtomicU64>,
    /// Per group: what its users' key choosers share (the sequential counter, latest's zetas).
    pub(crate) key_state: Vec<Arc<crate::workload::distribution::Shared>>,
    pub(crate) seed: u64,
    pub(crate) clock: Clock,
    pub(crate) op_timeout: Duration,
    /// The write audit's ledger (`--audit`): each write the audit can check, as it ended.
    pub(crate) audit: Option<crate::audit::Auditor>,
    /// Open loop: one permit per connection of the driver's pool (`pool_size`), held by each
    /// operation in flight, so a slot that finds every connection busy waits without a task.
    pub(crate) pool: Arc<tokio::sync::Semaphore>,
    /// The pool's size (`pool_size`): an open-loop group has at most this many workers.
    pub(crate) pool_size: u32,
    /// Each group's rate or users, changed while it runs (`--live-control`).
    pub(crate) steer: Arc<steer::Steer>,
    /// With watch groups: each acknowledged write the listeners can recognise, with when.
    pub(crate) listening: Option<Listening>,
    /// What the load generator added before each measured operation's send.
    pub(crate) gaps: Gaps,
    /// The state each state machine's user was last in, by (group plan, user), for a later
    /// group that resumes them (`resume_from`).
    pub(crate) last_states: LastStates,
}

/// The state each state machine's user was last in, by (group plan index, user number).
pub(crate) type LastStates =
    std::sync::Mutex<std::collections::HashMap<(usize, u32), crate::workload::op::OpName>>;

/// What the load generator added before the operations it measured (warm-up left out): from
/// when each was owed to its send, summed, and how many. An operation is owed at its due time
/// in open loop (or once a worker and a connection were free, when the server kept them busy
/// past it: that wait is the server's), so the timer's late wake-up (up to about a
/// millisecond, its resolution) is in it; in closed loop at the previous operation's end, or
/// when the pause the profile asks for (`sleep_before`, `sleep_after`) woke. So the gap holds
/// the building of the request, the handing on of the previous sample and every wait of the
/// tool's threads for a CPU between the two; not the time the operation was in flight. The
/// sweep (closed loop) judges by it.
#[derive(Debug, Default)]
pub(crate) struct Gaps {
    sum_us: AtomicU64,
    ops: AtomicU64,
}

impl Gaps {
    pub(crate) fn add(&self, gap: Duration) {
        let us = u64::try_from(gap.as_micros()).unwrap_or(u64::MAX);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.ops.fetch_add(1, Ordering::Relaxed);
    }

    /// The operations and their mean gap.
    pub(crate) fn measured(&self) -> crate::summary::ToolGap {
        crate::summary::ToolGap {
            ops: self.ops.load(Ordering::Relaxed),
            sum_us: self.sum_us.load(Ordering::Relaxed),
        }
    }
}

impl<B> Context<B> {
    /// Per group, the scheduled operations that never started.
    pub(crate) fn missed_counts(&self) -> Vec<u64> {
        self.missed
            .iter()
            .map(|m| m.load(std::sync::atomic::Ordering::Relaxed))
            .collect()
    }
}

/// What the writers tell the listeners: the acknowledged writes' book, and what the audit's
/// reading of a request needs to know of the plan.
pub(crate) struct Listening {
    pub(crate) acks: Arc<crate::listen::Acks>,
    pub(crate) plan: Arc<crate::audit::AuditPlan>,
}

impl Listening {
    /// Files the write `intent` if its end acknowledged it, at `at_us`: on `drawn`, the
    /// collection a group over several drew, else where the write says (a template's step may
    /// insert into another collection than its group's).
    fn acked(
        &self,
        (group, drawn): (&GroupPlan, usize),
        intent: crate::audit::Intent,
        done: &crate::audit::Done,
        at_us: u64,
    ) {
        use crate::audit::{Fate, Intent};
        use crate::listen::{DocId, DocKey, Op};
        if Fate::of(done.error, done.tx) != Some(Fate::Acked) {
            return;
        }
        let spread = !group.spread.is_empty();
        let key = |collection: usize, id: DocId| DocKey {
            collection: if spread { drawn } else { collection },
            id,
        };
        match intent {
            Intent::Insert {
                collection,
                ids,
                keyed,
                ..
            } => {
                for id in ids {
                    self.acks
                        .record(key(collection, DocId::Int(id)), Op::Insert, at_us);
                }
                for id in &keyed {
                    self.acks
                        .record(key(collection, DocId::of(id)), Op::Insert, at_us);
                }
            }
            Intent::Inc { id, .. } if done.matched => {
                self.acks
                    .record(key(drawn, DocId::Int(id)), Op::Update, at_us);
            }
            Intent::Inc { .. } => {}
            Intent::Remove(slot) => {
                if let Some(id) = slot.get().filter(|_| done.deleted > 0) {
                    self.acks
                        .record(key(drawn, DocId::of(id)), Op::Delete, at_us);
                }
            }
        }
    }
}

/// A stage's books of what runs: its users' tasks and what each one is, the groups running, and
/// what their users share.
struct Running<'a, B: Backend> {
    users: JoinSet<()>,
    who: Who,
    /// Open-loop groups with a duration: their schedules, for the slots they missed.
    paced: Vec<(usize, Arc<Schedule>, Instant)>,
    /// Closed-loop groups, for the users a change adds: each with its start.
    closed: Vec<(Arc<GroupPlan>, Instant)>,
    /// Tasks per group still running: a group whose tasks all ended can no longer be changed.
    alive: HashMap<usize, u32>,
    ctx: &'a Arc<Context<B>>,
    /// Open-loop groups file their users' panics here as they happen.
    open_failures: Arc<std::sync::Mutex<Vec<String>>>,
    /// Cancelled once every group that holds the stage open is done: background groups
    /// (genny's `Blocking: None`) stop then.
    held: CancellationToken,
}

impl<B: Backend> Running<'_, B> {
    /// Starts `group`'s users (or its open-loop schedule), `from` plus its start delay.
    fn start(&mut self, group: Arc<GroupPlan>, from: Instant) {
        let ctx = self.ctx;
        let group_start = from + group.start_delay;
        let schedule = Schedule::new(&group, group_start).map(Arc::new);
        if let (Some(s), StopAt::Duration(d)) = (&schedule, group.stop) {
            self.paced
                .push((group.index, Arc::clone(s), group_start + d));
        }
        if let Some(schedule) = schedule {
            ctx.steer.start_open(group.index, Arc::clone(&schedule));
            *self.alive.entry(group.index).or_insert(0) += 1;
            let task = self.users.spawn(open::group(
                Arc::clone(&group),
                Arc::clone(ctx),
                group_start,
                schedule,
                Arc::clone(&self.open_failures),
                self.held.clone(),
            ));
            self.who.insert(task.id(), (Arc::clone(&group), 0));
            return;
        }
        ctx.steer.start_closed(group.index, group.threads);
        for n in 0..group.threads {
            self.add_user(&group, n, group_start);
        }
        self.closed.push((group, group_start));
    }

    /// Closed-loop user `n` of `group`, started at `group_start` (or at once, if later).
    fn add_user(&mut self, group: &Arc<GroupPlan>, n: u32, group_start: Instant) {
        *self.alive.entry(group.index).or_insert(0) += 1;
        let task = self.users.spawn(user::virtual_user(
            Arc::clone(group),
            n,
            Arc::clone(self.ctx),
            group_start,
            self.held.clone(),
        ));
        self.who.insert(task.id(), (Arc::clone(group), n + 1));
    }
}

/// Runs one stage to its end, or until `ctx.stop` fires and in-flight operations had
/// `STOP_GRACE` to finish. Returns what failed inside it: each virtual user that panicked,
/// named by group, operation and user, with the panic's message.
pub(crate) async fn run_stage<B: Backend>(stage: &Stage, ctx: &Arc<Context<B>>) -> Vec<String> {
    let start = Instant::now();
    let mut run = Running {
        users: JoinSet::new(),
        who: HashMap::new(),
        paced: Vec::new(),
        closed: Vec::new(),
        alive: HashMap::new(),
        ctx,
        open_failures: Default::default(),
        held: CancellationToken::new(),
    };
    // The users (one per open-loop group) of the groups that hold the stage open.
    let mut holding: u32 = 0;
    // Groups that start when another of the stage ends (`after`), by the one they wait for.
    let mut waiting: HashMap<usize, Vec<Arc<GroupPlan>>> = HashMap::new();
    let in_stage: std::collections::HashSet<usize> = stage.groups.iter().map(|g| g.index).collect();
    // A watch group's listeners are the session's, open for the whole run.
    for group in stage.groups.iter().filter(|g| g.watch.is_none()) {
        let group = Arc::new(group.clone());
        if group.stop != StopAt::Background {
            holding += if group.rate.is_some() {
                1
            } else {
                group.threads
            };
        }
        match group.after.filter(|a| in_stage.contains(a)) {
            Some(a) => waiting.entry(a).or_default().push(group),
            None => run.start(group, start),
        }
    }
    let mut failures = Vec::new();
    loop {
        tokio::select! {
            ended = run.users.join_next_with_id() => match ended {
                Some(ended) => {
                    let id = match &ended {
                        Ok((id, ())) => *id,
                        Err(e) => e.id(),
                    };
                    if let Some((g, _)) = run.who.get(&id).cloned() {
                        let left = run.alive.entry(g.index).or_insert(1);
                        *left = left.saturating_sub(1);
                        if *left == 0 {
                            ctx.steer.end(g.index);
                            // The groups that waited for it start now.
                            if !ctx.stop.is_cancelled() {
                                for next in waiting.remove(&g.index).unwrap_or_default() {
                                    run.start(next, Instant::now());
                                }
                            }
                        }
                        if g.stop != StopAt::Background {
                            holding = holding.saturating_sub(1);
                            if holding == 0 {
                                run.held.cancel();
                            }
                        }
                    }
                    note(ended, &run.who, &mut failures);
                }
                None => break,
            },
            // A closed-loop group wants more users than it started (`--live-control`).
            _ = ctx.steer.grown.notified() => {
                for (group, group_start) in run.closed.clone() {
                    for n in ctx.steer.to_start(group.index) {
                        if group.stop != StopAt::Background {
                            holding += 1;
                        }
                        run.add_user(&group, n, group_start);
                    }
                }
            }
            _ = ctx.stop.cancelled() => {
                if tokio::time::timeout(STOP_GRACE, drain(&mut run.users, &run.who, &mut failures)).await.is_err() {
                    run.users.abort_all();
                    drain(&mut run.users, &run.who, &mut failures).await;
                }
                break;
            }
        }
    }
    for group in &stage.groups {
        ctx.steer.end(group.index);
    }
    failures.extend(std::mem::take(
        &mut *run.open_failures.lock().unwrap_or_else(|e| e.into_inner()),
    ));
    // Slots that fell due before a group's time ran out but found no user: never dropped
    // silently (an interruption is not the group's time running out).
    if !ctx.stop.is_cancelled() {
        for (g, schedule, deadline) in run.paced {
            ctx.missed[g].fetch_add(schedule.missed_before(deadline), Ordering::Relaxed);
        }
    }
    failures
}

type Who = HashMap<tokio::task::Id, (Arc<crate::plan::GroupPlan>, u32)>;

async fn drain(users: &mut JoinSet<()>, who: &Who, failures: &mut Vec<String>) {
    while let Some(ended) = users.join_next_with_id().await {
        note(ended, who, failures);
    }
}

/// A user (or an open-loop group) that ended: its panic, if it was one, named.
fn note(
    ended: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
    who: &Who,
    failures: &mut Vec<String>,
) {
    let Err(e) = ended else { return };
    if !e.is_panic() {
        return; // aborted after the stop grace: not a failure of the user
    }
    let id = e.id();
    let message = panic_message(e.into_panic().as_ref());
    failures.push(match who.get(&id) {
        Some((g, n)) if *n > 0 => format!(
            "virtual user {n} of group `{}` ({}) panicked: {message}",
            g.name,
            g.op.kind()
        ),
        Some((g, _)) => format!("group `{}` ({}) panicked: {message}", g.name, g.op.kind()),
        None => format!("a virtual user panicked: {message}"),
    });
}
