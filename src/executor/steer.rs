//! Steering a group while it runs (`--live-control`): an open-loop group's rate, a closed-loop
//! group's users. The executor registers each group here when it starts and when it ends; a
//! change reaches the group at once: a new pace for the schedule's slots not yet due, users
//! beyond the number wanted parked after their operation in flight (and woken again when more
//! are wanted), users never started spawned by `run_stage`.
//!
//! Owns: what may be changed of a running group, and the handles that change it. Never: decides
//! when a change is made or who may make it (the live page's control does), or records it.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::pacer::Schedule;

/// What a running group is now, as a change reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Now {
    /// Open loop: operations per second.
    Rate(f64),
    /// Closed loop: users wanted.
    Users(u32),
}

/// What the live page's control changes: the groups of a run here (`Steer`), or a coordinated
/// run's whole, which its coordinator splits over the parts.
pub trait Steers: Send + Sync {
    /// The group now, while it runs; None before it starts and after it ends.
    fn now(&self, g: usize) -> Option<Now>;
    /// A running open-loop group's rate from `at` on; false when it does not run now.
    fn set_rate(&self, g: usize, rate: f64, at: Instant) -> bool;
    /// A running closed-loop group's users from now on; false when it does not run now.
    fn set_users(&self, g: usize, users: u32) -> bool;
    /// Why `users` cannot be had (a coordinated run needs a user per part); none: it can.
    fn refuse_users(&self, _users: u32) -> Option<String> {
        None
    }
}

impl Steers for Steer {
    fn now(&self, g: usize) -> Option<Now> {
        Steer::now(self, g)
    }

    fn set_rate(&self, g: usize, rate: f64, at: Instant) -> bool {
        Steer::set_rate(self, g, rate, at)
    }

    fn set_users(&self, g: usize, users: u32) -> bool {
        Steer::set_users(self, g, users)
    }
}

/// Every group's handles, by `GroupPlan::index`.
#[derive(Debug, Default)]
pub struct Steer {
    groups: Vec<GroupSteer>,
    /// A closed-loop group wants more users than were started: `run_stage` starts them.
    pub(super) grown: Notify,
}

#[derive(Debug, Default)]
struct GroupSteer {
    running: AtomicBool,
    /// Open loop: the group's schedule while it runs.
    schedule: Mutex<Option<Arc<Schedule>>>,
    /// Closed loop: users wanted now (those numbered from it on wait).
    wanted: AtomicU32,
    /// Closed loop: users started so far (only `run_stage` starts them).
    started: AtomicU32,
    /// Wakes parked users when more are wanted.
    woken: Notify,
}

impl Steer {
    pub fn new(groups: usize) -> Steer {
        Steer {
            groups: (0..groups).map(|_| GroupSteer::default()).collect(),
            grown: Notify::new(),
        }
    }

    /// The group now, while it runs; None before it starts and after it ends.
    pub(crate) fn now(&self, g: usize) -> Option<Now> {
        let s = self.groups.get(g)?;
        if !s.running.load(Ordering::Acquire) {
            return None;
        }
        let schedule = s.schedule.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Some(match schedule {
            Some(sch) => Now::Rate(sch.rate()),
            None => Now::Users(s.wanted.load(Ordering::Acquire)),
        })
    }

    /// A running open-loop group's rate from `at` on; false when it does not run now.
    pub(crate) fn set_rate(&self, g: usize, rate: f64, at: Instant) -> bool {
        let Some(s) = self.groups.get(g) else {
            return false;
        };
        let schedule = s.schedule.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match schedule {
            Some(sch) if s.running.load(Ordering::Acquire) => {
                sch.set_rate(rate, at);
                true
            }
            _ => false,
        }
    }

    /// A running closed-loop group's users from now on; false when it does not run now.
    pub(crate) fn set_users(&self, g: usize, users: u32) -> bool {
        let Some(s) = self.groups.get(g) else {
            return false;
        };
        if !s.running.load(Ordering::Acquire) || s.schedule_is_set() {
            return false;
        }
        s.wanted.store(users, Ordering::Release);
        s.woken.notify_waiters();
        if users > s.started.load(Ordering::Acquire) {
            self.grown.notify_one();
        }
        true
    }

    pub(super) fn start_open(&self, g: usize, schedule: Arc<Schedule>) {
        if let Some(s) = self.groups.get(g) {
            *s.schedule.lock().unwrap_or_else(|e| e.into_inner()) = Some(schedule);
            s.running.store(true, Ordering::Release);
        }
    }

    pub(super) fn start_closed(&self, g: usize, users: u32) {
        if let Some(s) = self.groups.get(g) {
            s.wanted.store(users, Ordering::Release);
            s.started.store(users, Ordering::Release);
            s.running.store(true, Ordering::Release);
        }
    }

    pub(super) fn end(&self, g: usize) {
        if let Some(s) = self.groups.get(g) {
            s.running.store(false, Ordering::Release);
            s.schedule.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
    }

    /// Closed loop: the users to start now (numbered from the first not started), counted as
    /// started.
    pub(super) fn to_start(&self, g: usize) -> std::ops::Range<u32> {
        let Some(s) = self.groups.get(g) else {
            return 0..0;
        };
        let wanted = s.wanted.load(Ordering::Acquire);
        let started = s.started.fetch_max(wanted, Ordering::AcqRel);
        started..wanted.max(started)
    }

    /// Closed loop: is user `n` (from 0) wanted now?
    pub(super) fn wanted(&self, g: usize, n: u32) -> bool {
        self.groups
            .get(g)
            .is_none_or(|s| n < s.wanted.load(Ordering::Acquire))
    }

    /// Closed loop: waits until user `n` is wanted again; false when the run stops or the
    /// group's time runs out first.
    pub(super) async fn wait_wanted(
        &self,
        g: usize,
        n: u32,
        stop: &CancellationToken,
        deadline: Option<Instant>,
    ) -> bool {
        let Some(s) = self.groups.get(g) else {
            return true;
        };
        let far = || Instant::now() + std::time::Duration::from_secs(86_400 * 365);
        loop {
            let woken = s.woken.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if n < s.wanted.load(Ordering::Acquire) {
                return true;
            }
            tokio::select! {
                _ = &mut woken => {}
                _ = stop.cancelled() => return false,
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(far)) => return false,
            }
        }
    }
}

impl GroupSteer {
    fn schedule_is_set(&self) -> bool {
        self.schedule
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn users_beyond_the_wanted_wait_until_wanted_again_and_more_are_started() {
        let steer = Arc::new(Steer::new(1));
        assert_eq!(steer.now(0), None, "not running: nothing to change");
        assert!(!steer.set_users(0, 3));
        steer.start_closed(0, 4);
        assert_eq!(steer.now(0), Some(Now::Users(4)));
        assert!(steer.set_users(0, 2));
        assert!(steer.wanted(0, 1) && !steer.wanted(0, 2));
        let stop = CancellationToken::new();
        let waiting = {
            let (steer, stop) = (Arc::clone(&steer), stop.clone());
            tokio::spawn(async move { steer.wait_wanted(0, 3, &stop, None).await })
        };
        tokio::task::yield_now().await;
        assert!(steer.set_users(0, 6));
        assert!(waiting.await.unwrap(), "woken when wanted again");
        assert_eq!(steer.to_start(0), 4..6, "users 5 and 6 were never started");
        assert_eq!(steer.to_start(0), 6..6);
        steer.end(0);
        assert!(!steer.set_users(0, 1), "ended: nothing to change");
    }
}
