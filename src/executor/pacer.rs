//! Open-loop pacing: when each of a virtual user's operations is due.

use std::time::Duration;

use tokio::time::Instant;

use crate::plan::GroupPlan;

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
    pub fn before(&self, j: u64, deadline: Instant, left: u64) -> u64 {
        let due = self.due(j);
        if due >= deadline {
            return 0;
        }
        let n = ((deadline - due).as_secs_f64() / self.period.as_secs_f64()).ceil() as u64;
        n.min(left)
    }
}
