//! Open loop without a task per virtual user: one task per group takes each slot of the
//! group's schedule when it falls due and hands it to an idle user, whose operation runs as a
//! task of its own until it ends; the user is then idle again. An idle user is only its state
//! (`User`, made the first time it is needed), so a million users cost what their operations in
//! flight cost, not a million tasks. Users take turns: those never needed yet go first, then the
//! ones that came back, in the order they came back. An operation also holds one of the pool's
//! connections (`Context::pool`, as many as `pool_size`) until its reply, so users beyond the
//! pool wait here, as a count, not as tasks queued in the driver. A slot that finds every user or
//! every connection busy waits for the first to come back and counts as late, and so do the
//! slots that came due during that wait.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

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

/// Says which user's operation panicked: its task's id and the user's number, filed while the
/// panic unwinds (only then: nothing on an operation's way).
struct Panicked {
    n: u32,
    into: Arc<Mutex<Vec<(tokio::task::Id, u32)>>>,
}

impl Drop for Panicked {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.into
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((tokio::task::id(), self.n));
        }
    }
}

/// Runs an open-loop group to its end: its users started over the ramp-up, then every slot of
/// its schedule until its duration or loops are over or the run stops. Each user whose
/// operation panicked goes into `failures` at once, named as `run_stage` names them (so an
/// abort after the stop's grace loses none).
pub(super) async fn group<B: Backend>(
    group: Arc<GroupPlan>,
    ctx: Arc<Context<B>>,
    group_start: Instant,
    schedule: Arc<Schedule>,
    failures: Arc<Mutex<Vec<String>>>,
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

    let deadline = match group.stop {
        StopAt::Duration(d) => Some(group_start + d),
        StopAt::Loops(_) => None,
    };
    let far = || deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
    let warmup_end = group_start + group.warmup;
    let (back, mut idle) = mpsc::unbounded_channel::<User>();
    let gone = Arc::new(AtomicBool::new(false));
    let panicked: Arc<Mutex<Vec<(tokio::task::Id, u32)>>> = Default::default();
    // Users made so far, and those lost (their operation panicked): the rest are idle or busy.
    let mut made = 0u32;
    let mut lost = 0u32;
    // The group waited for a user or a connection until then: a slot due before it is late too,
    // though it found one at once (the backlog of the same wait).
    let mut caught_up = group_start;
    let mut ops = JoinSet::new();
    'slots: loop {
        while let Some(ended) = ops.try_join_next_with_id() {
            lost += note_panic(ended, &panicked, &group, &failures);
        }
        if ctx.stop.is_cancelled() || gone.load(Ordering::Relaxed) || lost >= threads {
            break;
        }
        let Some((_, due)) = schedule.claim() else {
            break;
        };
        if deadline.is_some_and(|d| due >= d) {
            break;
        }
        if due > Instant::now() {
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {}
                _ = ctx.stop.cancelled() => break,
            }
        }
        // An idle user: one never needed yet, or the one that came back first.
        let mut waited = false;
        let mut user = if made < threads {
            made += 1;
            User::new(&group, made - 1, &ctx)
        } else if let Ok(u) = idle.try_recv() {
            u
        } else {
            // Every user is busy: the slot waits for the first to come back (an operation that
            // ends in a panic brings none back, and is counted).
            waited = true;
            loop {
                tokio::select! {
                    u = idle.recv() => match u {
                        Some(u) => break u,
                        None => break 'slots,
                    },
                    Some(ended) = ops.join_next_with_id() => {
                        lost += note_panic(ended, &panicked, &group, &failures);
                        if lost >= threads || gone.load(Ordering::Relaxed) {
                            break 'slots;
                        }
                    }
                    _ = tokio::time::sleep_until(far()) => break 'slots,
                    _ = ctx.stop.cancelled() => break 'slots,
                }
            }
        };
        // A connection of the pool: waited for here, not by a task of the operation's own.
        let connection = match Arc::clone(&ctx.pool).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                waited = true;
                let permit = tokio::select! {
                    p = Arc::clone(&ctx.pool).acquire_owned() => p.ok(),
                    _ = tokio::time::sleep_until(far()) => None,
                    _ = ctx.stop.cancelled() => None,
                };
                match permit {
                    Some(p) => p,
                    None => break,
                }
            }
        };
        if waited {
            caught_up = Instant::now();
        }
        let slot = Slot {
            due,
            late: waited || due < caught_up,
            connection,
        };
        schedule.start();
        let (group, ctx, back, gone) = (
            Arc::clone(&group),
            Arc::clone(&ctx),
            back.clone(),
            Arc::clone(&gone),
        );
        let marker = Panicked {
            n: user.number(),
            into: Arc::clone(&panicked),
        };
        ops.spawn(async move {
            let _marker = marker;
            if one_op(&group, &mut user, &ctx, Some(slot), warmup_end, None).await {
                let _ = back.send(user);
            } else {
                // The recorder is gone: nothing more can be recorded.
                gone.store(true, Ordering::Relaxed);
            }
        });
    }
    // Operations in flight end on their own (bounded by the operation timeout); at a stop,
    // `run_stage` aborts this task after its grace, and with it every one of them.
    while let Some(ended) = ops.join_next_with_id().await {
        note_panic(ended, &panicked, &group, &failures);
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
