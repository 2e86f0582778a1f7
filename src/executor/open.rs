//! Open loop without a task per virtual user or per operation: a group's schedule is worked by
//! as many workers as it may have operations in flight (its users, at most the pool's
//! connections), each a task that takes the next slot of the schedule, waits until it is due,
//! takes an idle user and runs that user's operation itself. An idle user is only its state
//! (`User`, made the first time it is needed), so a million users cost what their operations in
//! flight cost, not a million tasks. Users take turns: those never needed yet go first, then the
//! ones that came back, in the order they came back. An operation also holds one of the pool's
//! connections (`Context::pool`, shared by the run's open-loop groups) until its reply. A slot
//! that came due before its worker was free again found every worker busy (each with a user
//! whose operation was in flight; a free one takes the next slot at once): it is late, and so
//! is one that then waited for a connection.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::pacer::Schedule;
use super::user::{one_op, Slot, User};
use super::Context;
use crate::metrics::panic_message;
use crate::ops::Backend;
use crate::plan::{GroupPlan, StopAt};

/// How often the users started during the ramp-up are counted.
const RAMP_TICK: Duration = Duration::from_millis(10);

/// The group's started users, taken off its active count however the group ends.
struct Started<'a>(&'a AtomicU32, u32);

impl Started<'_> {
    fn up_to(&mut self, n: u32) {
        if n > self.1 {
            self.0.fetch_add(n - self.1, Ordering::Relaxed);
            self.1 = n;
        }
    }
}

impl Drop for Started<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::Relaxed);
    }
}

/// Says which user's operation panicked: its worker's task id and the user's number, filed
/// while the panic unwinds (only then: nothing on an operation's way).
struct Panicked<'a> {
    n: u32,
    into: &'a Mutex<Vec<(tokio::task::Id, u32)>>,
}

impl Drop for Panicked<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.into
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((tokio::task::id(), self.n));
        }
    }
}

/// What a group's workers share: the schedule, the idle users, and how the group is ending.
struct Shared<B> {
    group: Arc<GroupPlan>,
    ctx: Arc<Context<B>>,
    schedule: Arc<Schedule>,
    deadline: Option<Instant>,
    warmup_end: Instant,
    idle: Mutex<Idle>,
    /// The recorder is gone: nothing more can be recorded.
    gone: AtomicBool,
    panicked: Mutex<Vec<(tokio::task::Id, u32)>>,
    /// A background group's end: the stage's other groups are done (None: not background).
    held: Option<CancellationToken>,
}

/// The users not in an operation: how many were made (the rest are made when first needed),
/// how many were lost (their operation panicked), and those that came back, in order.
#[derive(Default)]
struct Idle {
    made: u32,
    lost: u32,
    back: VecDeque<User>,
}

impl<B: Backend> Shared<B> {
    /// An idle user: one never needed yet, or the one that came back first; None when every
    /// user left is in an operation (only after some were lost).
    fn take(&self) -> Option<User> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.made < self.group.threads {
            idle.made += 1;
            return Some(User::new(&self.group, idle.made - 1, &self.ctx));
        }
        idle.back.pop_front()
    }

    fn give_back(&self, user: User) {
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .back
            .push_back(user);
    }

    /// A background group's end, for a wait: never for another group.
    async fn released(&self) {
        match &self.held {
            Some(h) => h.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The slot due at `due` may not start: it is due at or past the group's end, or the
    /// group's end has passed while it waited (for its time, a worker or a connection).
    fn past_deadline(&self, due: Instant) -> bool {
        self.deadline
            .is_some_and(|d| due >= d || Instant::now() >= d)
    }

    /// The end of the run or of the group's duration, for a wait with no other end.
    fn far(&self) -> Instant {
        self.deadline
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365))
    }
}

/// One worker: slot after slot, until the schedule, the group's duration or the run ends.
/// A worker that replaces one lost to a panic starts as free from `free_since`, so the slots
/// that came due while the group was a worker short are late.
async fn worker<B: Backend>(s: Arc<Shared<B>>, mut free_since: Option<Instant>) {
    // The operation timeout's timer, moved only when it fires (as a closed-loop user's).
    let mut timer = Box::pin(tokio::time::sleep(s.ctx.op_timeout));
    // `free_since`: when this worker's last operation ended (None before a first worker's
    // first).
    loop {
        if s.ctx.stop.is_cancelled()
            || s.gone.load(Ordering::Relaxed)
            || s.held.as_ref().is_some_and(CancellationToken::is_cancelled)
        {
            return;
        }
        let Some((j, due)) = s.schedule.claim() else {
            return;
        };
        if s.past_deadline(due) {
            return;
        }
        // Its time, read again if the rate changes while the worker waits for it.
        let due = if due > Instant::now() {
            tokio::select! {
                due = s.schedule.until_due(j) => due,
                // A slower rate can put the slot past the group's end.
                _ = tokio::time::sleep_until(s.far()) => return,
                _ = s.ctx.stop.cancelled() => return,
                () = s.released() => return,
            }
        } else {
            due
        };
        // A group ends at its end: a slot not started by then is never started (it is missed,
        // `Schedule::missed_before`), however late the server made it.
        if s.past_deadline(due) {
            return;
        }
        // Due before this worker was free again: every worker was busy then (a free one
        // would have taken it, slots being taken in order).
        let mut late = free_since.is_some_and(|f| due < f);
        // Owed from its due time, or from when a worker was free, if that was later (the
        // server kept every worker busy: that wait is not the tool's).
        let mut owed = free_since.map_or(due, |f| due.max(f));
        let Some(mut user) = s.take() else {
            return;
        };
        // A connection of the pool: waited for here, not in the driver.
        let connection = match Arc::clone(&s.ctx.pool).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                late = true;
                let permit = tokio::select! {
                    p = Arc::clone(&s.ctx.pool).acquire_owned() => p.ok(),
                    _ = tokio::time::sleep_until(s.far()) => None,
                    _ = s.ctx.stop.cancelled() => None,
                    () = s.released() => None,
                };
                match permit {
                    Some(p) => {
                        owed = owed.max(Instant::now());
                        p
                    }
                    None => return s.give_back(user),
                }
            }
        };
        if s.past_deadline(due) {
            return s.give_back(user);
        }
        s.schedule.start();
        let slot = Slot {
            due,
            late,
            connection,
        };
        let marker = Panicked {
            n: user.number(),
            into: &s.panicked,
        };
        let recorded = one_op(
            &s.group,
            &mut user,
            &s.ctx,
            Some(slot),
            owed,
            s.warmup_end,
            &mut timer,
        )
        .await
        .is_some();
        drop(marker);
        s.give_back(user);
        free_since = Some(Instant::now());
        if !recorded {
            s.gone.store(true, Ordering::Relaxed);
            return;
        }
    }
}

/// Runs an open-loop group to its end: its users started over the ramp-up, then every slot of
/// its schedule until its duration or loops are over, the stage's other groups are done (a
/// background group: `held` cancelled) or the run stops. Each user whose
/// operation panicked goes into `failures` at once, named as `run_stage` names them (so an
/// abort after the stop's grace loses none), and its worker is replaced while users remain.
pub(super) async fn group<B: Backend>(
    group: Arc<GroupPlan>,
    ctx: Arc<Context<B>>,
    group_start: Instant,
    schedule: Arc<Schedule>,
    failures: Arc<Mutex<Vec<String>>>,
    held: CancellationToken,
) {
    tokio::select! {
        _ = tokio::time::sleep_until(group_start) => {}
        _ = ctx.stop.cancelled() => return,
    }
    // Users start at their ramp-up offsets (user n at ramp_up * n / threads), as closed-loop
    // users do; the schedule's first slot comes after the last of them.
    let threads = group.threads;
    let mut started = Started(&ctx.active[group.index], 0);
    let ramp = group.ramp_up.as_secs_f64();
    loop {
        let since = Instant::now().saturating_duration_since(group_start);
        let due = if ramp <= 0.0 || since.as_secs_f64() >= ramp {
            threads
        } else {
            // since < ramp here, so the product lies in [0, threads): it fits a u32 and is not
            // negative.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ramped = (since.as_secs_f64() / ramp * f64::from(threads)) as u32;
            (ramped + 1).min(threads)
        };
        started.up_to(due);
        if started.1 >= threads {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(RAMP_TICK) => {}
            _ = ctx.stop.cancelled() => return,
        }
    }

    let shared = Arc::new(Shared {
        deadline: match group.stop {
            StopAt::Duration(d) => Some(group_start + d),
            _ => None,
        },
        warmup_end: group_start + group.warmup,
        idle: Mutex::new(Idle::default()),
        gone: AtomicBool::new(false),
        panicked: Mutex::default(),
        group: Arc::clone(&group),
        ctx: Arc::clone(&ctx),
        schedule,
        held: (group.stop == StopAt::Background).then_some(held),
    });
    // As many operations in flight as there are users, and at most the pool's connections.
    let workers = threads.min(ctx.pool_size.max(1));
    let mut running = JoinSet::new();
    for _ in 0..workers {
        running.spawn(worker(Arc::clone(&shared), None));
    }
    // Workers end with the schedule, the group's duration or the run; at a stop, `run_stage`
    // aborts this task after its grace, and with it every worker and its operation.
    while let Some(ended) = running.join_next_with_id().await {
        if note_panic(ended, &shared.panicked, &group, &failures) == 0 {
            continue;
        }
        let left = {
            let mut idle = shared.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.lost += 1;
            threads - idle.lost.min(threads)
        };
        let ending = ctx.stop.is_cancelled() || shared.gone.load(Ordering::Relaxed);
        if !ending && u32::try_from(running.len()).unwrap_or(u32::MAX) < left {
            running.spawn(worker(Arc::clone(&shared), Some(Instant::now())));
        }
    }
}

/// Files an operation's panic, if it was one; 1 when it was (its user is lost), else 0.
fn note_panic(
    ended: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
    panicked: &Mutex<Vec<(tokio::task::Id, u32)>>,
    group: &GroupPlan,
    failures: &Mutex<Vec<String>>,
) -> u32 {
    let Err(e) = ended else { return 0 };
    if !e.is_panic() {
        return 0;
    }
    let id = e.id();
    let n = panicked
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(t, _)| *t == id)
        .map(|(_, n)| *n);
    let message = panic_message(e.into_panic().as_ref());
    failures
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(match n {
            Some(n) => format!(
                "virtual user {} of group `{}` ({}) panicked: {message}",
                n + 1,
                group.name,
                group.op.kind()
            ),
            None => format!(
                "a virtual user of group `{}` panicked: {message}",
                group.name
            ),
        });
    1
}
