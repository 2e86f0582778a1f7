//! Open-loop pacing: one shared schedule per group. The schedule starts after the group's
//! ramp-up and has one slot every 1/rate seconds; whichever user of the group is idle takes the
//! next slot, as a pool of application workers would, so an operation starts late only when every
//! user of the group is busy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::plan::{GroupPlan, StopAt};

#[derive(Debug)]
pub struct Schedule {
    first: Instant,
    period: Duration,
    /// The next slot no user has taken.
    next: AtomicU64,
    /// Slots in all (loops x threads); None for a group that runs for a duration.
    total: Option<u64>,
    /// Slots a user has started.
    started: AtomicU64,
}

impl Schedule {
    /// The group's schedule, or None in closed loop.
    pub fn new(group: &GroupPlan, group_start: Instant) -> Option<Schedule> {
        let rate = group.rate?;
        Some(Schedule {
            first: group_start + group.ramp_up,
            period: Duration::from_secs_f64(1.0 / rate),
            next: AtomicU64::new(0),
            total: match group.stop {
                StopAt::Loops(l) => Some(l.saturating_mul(u64::from(group.threads))),
                StopAt::Duration(_) => None,
            },
            started: AtomicU64::new(0),
        })
    }

    /// Takes the next slot: its number and when it is due; None when every slot is taken.
    pub fn claim(&self) -> Option<(u64, Instant)> {
        let j = self.next.fetch_add(1, Ordering::Relaxed);
        match self.total {
            Some(t) if j >= t => None,
            _ => Some((j, self.due(j))),
        }
    }

    /// Marks a taken slot as started.
    pub fn start(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// The intended start of slot `j`.
    pub fn due(&self, j: u64) -> Instant {
        // A slot's number stays far below 2^52 (a million a second for over a hundred years).
        #[allow(clippy::cast_precision_loss)]
        let j = j as f64;
        self.first + self.period.mul_f64(j)
    }

    /// Slots due before `deadline` that no user started: operations owed when time ran out.
    pub fn missed_before(&self, deadline: Instant) -> u64 {
        if deadline <= self.first {
            return 0;
        }
        // deadline > first, so the ratio is positive; `as` saturates a value beyond u64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let due = ((deadline - self.first).as_secs_f64() / self.period.as_secs_f64()).ceil() as u64;
        let due = self.total.map_or(due, |t| due.min(t));
        due.saturating_sub(self.started.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(rate: f64, stop: StopAt) -> GroupPlan {
        GroupPlan {
            index: 0,
            name: "g".into(),
            op: crate::workload::OpSpec::Template(crate::workload::command::TemplateOp::stub("g")),
            threads: 4,
            ramp_up: Duration::from_secs(1),
            start_delay: Duration::ZERO,
            warmup: Duration::ZERO,
            stop,
            rate: Some(rate),
            mix: Vec::new(),
            keys: Default::default(),
            collection: 0,
            handle: 0,
            concerns: Default::default(),
        }
    }

    #[test]
    fn slots_are_shared_in_order_and_end_with_the_loops() {
        let t0 = Instant::now();
        let s = Schedule::new(&group(100.0, StopAt::Loops(2)), t0).unwrap();
        let claimed: Vec<u64> = std::iter::from_fn(|| s.claim().map(|(j, _)| j)).collect();
        assert_eq!(claimed, (0..8).collect::<Vec<_>>(), "4 users x 2 loops");
        assert_eq!(s.due(0), t0 + Duration::from_secs(1), "after the ramp-up");
        assert_eq!(s.due(5) - s.due(0), Duration::from_millis(50));
    }

    #[test]
    fn unstarted_slots_before_the_deadline_are_missed() {
        let t0 = Instant::now();
        let s = Schedule::new(&group(10.0, StopAt::Duration(Duration::from_secs(3))), t0).unwrap();
        for _ in 0..15 {
            s.start();
        }
        // Slots at 1.0, 1.1, ..., 2.9 s: 20 due before 3 s, 15 started.
        assert_eq!(s.missed_before(t0 + Duration::from_secs(3)), 5);
    }
}
