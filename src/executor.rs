//! Runs the thread groups of a stage at once on tokio. One virtual user is one task: it waits for
//! its ramp-up slot, then sends operations until its stop condition (loops, duration, or the run's
//! stop token), timing each one and handing the sample to the collector over a bounded channel.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mongodb::bson::RawDocumentBuf;
use mongodb::Collection;
use rand::SeedableRng;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::plan::{GroupPlan, Stage, StopAt};
use crate::sample::Sample;
use crate::workload::{DocGen, KeySpace, Request};

/// How long in-flight operations may finish after a stop request before they are abandoned.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// What every virtual user shares.
pub struct Context {
    pub coll: Collection<RawDocumentBuf>,
    pub gen: Arc<DocGen>,
    pub keys: Arc<KeySpace>,
    pub samples: mpsc::Sender<Sample>,
    pub stop: CancellationToken,
    /// Running virtual users per group, by `GroupPlan::index`.
    pub active: Arc<Vec<AtomicU32>>,
    /// Scheduled operations per group that never started (open loop, time ran out).
    pub missed: Vec<AtomicU64>,
    pub seed: u64,
    pub clock: Clock,
    pub op_timeout: Duration,
}

/// Wall-clock microseconds for sample start times, read from a monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
    origin_epoch_us: u64,
}

impl Clock {
    pub fn new() -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            origin: Instant::now(),
            origin_epoch_us: since.as_micros() as u64,
        }
    }

    pub fn epoch_us(&self, at: Instant) -> u64 {
        self.origin_epoch_us + at.saturating_duration_since(self.origin).as_micros() as u64
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs one stage to its end, or until `ctx.stop` fires and in-flight operations had
/// `STOP_GRACE` to finish.
pub async fn run_stage(stage: &Stage, ctx: &Arc<Context>) {
    let start = Instant::now();
    let mut users = JoinSet::new();
    for group in &stage.groups {
        let group = Arc::new(group.clone());
        for n in 0..group.threads {
            users.spawn(virtual_user(Arc::clone(&group), n, Arc::clone(ctx), start));
        }
    }
    tokio::select! {
        _ = drain(&mut users) => {}
        _ = ctx.stop.cancelled() => {
            if tokio::time::timeout(STOP_GRACE, drain(&mut users)).await.is_err() {
                users.abort_all();
                drain(&mut users).await;
            }
        }
    }
}

async fn drain(users: &mut JoinSet<()>) {
    while users.join_next().await.is_some() {}
}

/// Decrements a group's active count when the user ends, however it ends.
struct Active<'a>(&'a AtomicU32);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// When a virtual user's operations are due. Closed loop: whenever the previous one ended.
/// Open loop (a group `rate`): the group's schedule starts after its ramp-up and has one slot every
/// 1/rate seconds; user n of N owns slots n, n + N, n + 2N, ..., so the users share the rate
/// evenly instead of firing in bursts.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    first: Instant,
    period: Duration,
}

impl Pacer {
    pub fn new(group: &GroupPlan, user: u32, group_start: Instant) -> Option<Pacer> {
        let rate = group.rate?;
        Some(Pacer {
            first: group_start + group.ramp_up + Duration::from_secs_f64(f64::from(user) / rate),
            period: Duration::from_secs_f64(f64::from(group.threads) / rate),
        })
    }

    /// The intended start of this user's `j`-th operation.
    pub fn due(&self, j: u64) -> Instant {
        self.first + self.period.mul_f64(j as f64)
    }

    /// Slots from `j` on that fall before `deadline` (at most `left`).
    fn before(&self, j: u64, deadline: Instant, left: u64) -> u64 {
        let due = self.due(j);
        if due >= deadline {
            return 0;
        }
        let n = ((deadline - due).as_secs_f64() / self.period.as_secs_f64()).ceil() as u64;
        n.min(left)
    }
}

async fn virtual_user(group: Arc<GroupPlan>, n: u32, ctx: Arc<Context>, stage_start: Instant) {
    let offset = group
        .ramp_up
        .mul_f64(f64::from(n) / f64::from(group.threads));
    let group_start = stage_start + group.start_delay;
    let deadline = match group.stop {
        StopAt::Duration(d) => Some(group_start + d),
        StopAt::Loops(_) => None,
    };
    let loops = match group.stop {
        StopAt::Loops(l) => l,
        StopAt::Duration(_) => u64::MAX,
    };
    let pacer = Pacer::new(&group, n, group_start);
    tokio::select! {
        _ = tokio::time::sleep_until((group_start + offset).into()) => {}
        _ = ctx.stop.cancelled() => return,
    }
    let active = &ctx.active[group.index];
    active.fetch_add(1, Ordering::Relaxed);
    let _active = Active(active);

    let mut rng = rand::rngs::SmallRng::seed_from_u64(user_seed(ctx.seed, group.index, n));
    let thread = n + 1;
    let group_id = group.index as u16;
    for j in 0..loops {
        if ctx.stop.is_cancelled() {
            break;
        }
        let now = Instant::now();
        let (due, late) = match (&pacer, deadline) {
            (None, Some(d)) if now >= d => break,
            (None, _) => (None, false),
            (Some(p), d) => {
                let due = p.due(j);
                if d.is_some_and(|d| due >= d) {
                    break;
                }
                if let Some(d) = d.filter(|d| now >= *d) {
                    // Time is up with operations still owed: count them, never drop them silently.
                    ctx.missed[group.index].fetch_add(p.before(j, d, loops - j), Ordering::Relaxed);
                    break;
                }
                if due > now {
                    tokio::select! {
                        _ = tokio::time::sleep_until(due.into()) => {}
                        _ = ctx.stop.cancelled() => break,
                    }
                }
                (Some(due), due <= now)
            }
        };
        let req = Request::build(&group.op, &ctx.gen, &ctx.keys, &mut rng);
        let started = Instant::now();
        let out =
            match tokio::time::timeout(ctx.op_timeout, crate::ops::execute(&ctx.coll, req)).await {
                Ok(out) => out,
                Err(_) => crate::ops::Outcome::timed_out(ctx.op_timeout),
            };
        let elapsed = started.elapsed();
        let start_us = ctx.clock.epoch_us(started);
        let sample = Sample {
            group: group_id,
            thread,
            start_us,
            intended_us: due.map_or(start_us, |d| ctx.clock.epoch_us(d)),
            elapsed_us: elapsed.as_micros() as u64,
            late,
            sent: out.sent,
            received: out.received,
            matched: out.matched,
            modified: out.modified,
            error: out.error,
        };
        if ctx.samples.send(sample).await.is_err() {
            break;
        }
    }
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
