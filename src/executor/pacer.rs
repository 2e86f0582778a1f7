//! Open-loop pacing: one shared schedule per group. The schedule starts after the group's
//! ramp-up and has one slot every 1/rate seconds; whichever user of the group is idle takes the
//! next slot, as a pool of application workers would, so an operation starts late only when every
//! user of the group is busy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::plan::GroupPlan;

#[derive(Debug)]
pub(crate) struct Schedule {
    /// The pace the group started with.
    first: Pace,
    /// Paces set while the group ran (the live page's control), in order; empty until then.
    later: Mutex<Vec<Pace>>,
    /// How many times the pace changed: while 0, a slot's time needs no lock.
    changes: AtomicU64,
    /// Wakes the workers waiting for a slot when the pace changes.
    changed: Notify,
    /// The next slot no user has taken.
    next: AtomicU64,
    /// Slots in all (loops x threads); None for a group that runs for a duration.
    total: Option<u64>,
    /// Slots a user has started.
    started: AtomicU64,
}

/// From slot `from` on: slot `from + k` is due at `first + k * period`.
#[derive(Debug, Clone, Copy)]
struct Pace {
    from: u64,
    first: Instant,
    period: Duration,
    /// The rate as asked: the period is whole nanoseconds, so `1 / period` is not it (300/s
    /// would read back as 300.00003/s, and a change to 300/s would look like a change).
    rate: f64,
}

impl Pace {
    fn due(&self, j: u64) -> Instant {
        // A slot's number stays far below 2^52 (a million a second for over a hundred years).
        #[allow(clippy::cast_precision_loss)]
        let k = j.saturating_sub(self.from) as f64;
        self.first + self.period.mul_f64(k)
    }

    /// Slots of this pace due before `t`, counted from slot 0 of the schedule.
    fn due_before(&self, t: Instant) -> u64 {
        if t <= self.first {
            return self.from;
        }
        // t > first, so the ratio is positive; `as` saturates a value beyond u64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = ((t - self.first).as_secs_f64() / self.period.as_secs_f64()).ceil() as u64;
        self.from.saturating_add(n)
    }
}

impl Schedule {
    /// The group's schedule, or None in closed loop.
    pub(crate) fn new(group: &GroupPlan, group_start: Instant) -> Option<Schedule> {
        let rate = group.rate?;
        Some(Schedule {
            first: Pace {
                from: 0,
                first: group_start + group.ramp_up,
                period: Duration::from_secs_f64(1.0 / rate),
                rate,
            },
            later: Mutex::new(Vec::new()),
            changes: AtomicU64::new(0),
            changed: Notify::new(),
            next: AtomicU64::new(0),
            total: group
                .stop
                .loops()
                .map(|l| l.saturating_mul(u64::from(group.threads))),
            started: AtomicU64::new(0),
        })
    }

    /// Takes the next slot: its number and when it is due; None when every slot is taken.
    pub(crate) fn claim(&self) -> Option<(u64, Instant)> {
        let j = self.next.fetch_add(1, Ordering::Relaxed);
        match self.total {
            Some(t) if j >= t => None,
            _ => Some((j, self.due(j))),
        }
    }

    /// Marks a taken slot as started.
    pub(crate) fn start(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// The intended start of slot `j`, by the pace it falls under.
    pub(crate) fn due(&self, j: u64) -> Instant {
        if self.changes.load(Ordering::Acquire) == 0 {
            return self.first.due(j);
        }
        self.pace_of(j).due(j)
    }

    fn later(&self) -> std::sync::MutexGuard<'_, Vec<Pace>> {
        self.later.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pace slot `j` falls under.
    fn pace_of(&self, j: u64) -> Pace {
        self.later()
            .iter()
            .rev()
            .find(|p| p.from <= j)
            .copied()
            .unwrap_or(self.first)
    }

    /// The pace now (the last set).
    fn current(&self) -> Pace {
        self.later().last().copied().unwrap_or(self.first)
    }

    /// Operations per second now.
    pub(crate) fn rate(&self) -> f64 {
        self.current().rate
    }

    /// From `at` on, `rate` operations a second: the slots of the pace before that are due
    /// before `at` keep their times (late ones stay late); every later slot, taken by a worker
    /// already or not, is due on the new pace from `at` (or from the group's first slot, when
    /// that is later). Workers waiting for a slot are woken to read its new time.
    pub(crate) fn set_rate(&self, rate: f64, at: Instant) {
        {
            let mut later = self.later();
            let current = later.last().copied().unwrap_or(self.first);
            let first = at.max(current.first);
            let from = current.due_before(first);
            let pace = Pace {
                from,
                first,
                period: Duration::from_secs_f64(1.0 / rate),
                rate,
            };
            // A pace none of whose slots came due is replaced, not kept.
            while later.last().is_some_and(|p| p.from >= from) {
                later.pop();
            }
            later.push(pace);
        }
        self.changes.fetch_add(1, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Waits until slot `j` is due (woken to read its time again when the pace changes);
    /// returns when it is due.
    pub(crate) async fn until_due(&self, j: u64) -> Instant {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let due = self.due(j);
            if due <= Instant::now() {
                return due;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(due) => return due,
                _ = &mut changed => {}
            }
        }
    }

    /// Slots due before `deadline` that no user started: operations owed when time ran out.
    pub(crate) fn missed_before(&self, deadline: Instant) -> u64 {
        let pace = {
            let later = self.later();
            later
                .iter()
                .rev()
                .find(|p| p.first < deadline)
                .copied()
                .unwrap_or(self.first)
        };
        let due = pace.due_before(deadline);
        let due = self.total.map_or(due, |t| due.min(t));
        due.saturating_sub(self.started.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::StopAt;

    fn group(rate: f64, stop: StopAt) -> GroupPlan {
        GroupPlan {
            resume: None,
            index: 0,
            name: "g".into(),
            step_of: None,
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
            spread: Vec::new(),
            in_turn: false,
            timeout_per_step: false,
            chain: None,
            after: None,
            concerns: Default::default(),
            sleep_before: Duration::ZERO,
            sleep_after: Duration::ZERO,
            watch: None,
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

    #[test]
    fn a_new_rate_paces_every_slot_not_yet_due_from_its_time() {
        let t0 = Instant::now();
        let s = Schedule::new(&group(10.0, StopAt::Duration(Duration::from_secs(9))), t0).unwrap();
        // Slots at 1.0, 1.1, ... s; from 2.05 s on, 20 a second.
        s.set_rate(20.0, t0 + Duration::from_millis(2050));
        assert_eq!(
            s.due(10),
            t0 + Duration::from_secs(2),
            "due before the change: kept"
        );
        assert_eq!(
            s.due(11),
            t0 + Duration::from_millis(2050),
            "the first on the new pace"
        );
        assert_eq!(s.due(13), t0 + Duration::from_millis(2150));
        assert!((s.rate() - 20.0).abs() < 1e-9);
        // The rate reads back as asked, not as its period in whole nanoseconds says.
        s.set_rate(300.0, t0 + Duration::from_millis(2000));
        assert_eq!(s.rate(), 300.0);
        s.set_rate(20.0, t0 + Duration::from_millis(2000));
        // 11 slots before 2.05 s, then 19 (2.05, 2.10 .. 2.95): 30 due before 3.0 s.
        assert_eq!(s.missed_before(t0 + Duration::from_millis(3000)), 30);
        // A change before the first slot of the last pace came due replaces it.
        s.set_rate(5.0, t0 + Duration::from_millis(2000));
        assert_eq!(s.due(11), t0 + Duration::from_millis(2050));
        assert_eq!(s.due(12), t0 + Duration::from_millis(2250));
        // During the ramp-up: the new pace starts with the group's first slot.
        let s = Schedule::new(&group(10.0, StopAt::Duration(Duration::from_secs(9))), t0).unwrap();
        s.set_rate(100.0, t0 + Duration::from_millis(500));
        assert_eq!(s.due(0), t0 + Duration::from_secs(1));
        assert_eq!(s.due(1), t0 + Duration::from_millis(1010));
    }
}
