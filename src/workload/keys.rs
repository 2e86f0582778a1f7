//! The key space: which `_id`s exist, for the operations that pick an existing document.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rand::Rng;

use super::distribution::Chooser;

/// The `_id`s the run has written: preload takes `0..n`, each insert takes the next one, and
/// updates by `_id` draw from everything acknowledged so far (a removed one shows as "not
/// matched"). Like YCSB's acknowledged counter, an `_id` can be drawn once its insert and every
/// insert issued before it has completed, so a get never asks for a document still in flight.
/// In a run of several parts (`plan::part`), part i of N issues `base + i`, `base + i + N`, ...,
/// so parts never collide.
#[derive(Debug)]
pub struct KeySpace {
    /// `_id`s this key space has issued.
    next: AtomicI64,
    /// How many of them, from the first, have completed (`acknowledge`).
    acked: AtomicI64,
    /// Completed out of order within `WINDOW` of `acked`, waiting for the ones before them:
    /// slot `k % WINDOW` holds `k + 1` (0 when free). No lock: the common case of a user's
    /// insert ending while a few others are in flight.
    window: Box<[AtomicI64]>,
    /// Completed further ahead than the window (an insert stalled while many others went on).
    ahead: Mutex<BTreeSet<i64>>,
    /// How many are in `ahead`: the lock is taken only when some are.
    ahead_len: AtomicUsize,
    /// The items when the first draw was made: what the scrambled zipfian hashes onto.
    fixed: OnceLock<i64>,
    base: i64,
    stride: i64,
    offset: i64,
}

/// Completions ahead of `acked` that need no lock.
const WINDOW: usize = 4096;

impl Default for KeySpace {
    fn default() -> Self {
        KeySpace::starting_at(0)
    }
}

impl KeySpace {
    pub fn starting_at(first: i64) -> Self {
        KeySpace::partitioned(first, 0, 1)
    }

    /// Part `index` of `count` continuing after `first`.
    pub(crate) fn partitioned(first: i64, index: u32, count: u32) -> Self {
        KeySpace {
            next: AtomicI64::new(0),
            acked: AtomicI64::new(0),
            window: (0..WINDOW).map(|_| AtomicI64::new(0)).collect(),
            ahead: Mutex::new(BTreeSet::new()),
            ahead_len: AtomicUsize::new(0),
            fixed: OnceLock::new(),
            base: first,
            stride: i64::from(count.max(1)),
            offset: i64::from(index),
        }
    }

    pub(crate) fn issue(&self) -> i64 {
        self.base + self.next.fetch_add(1, Ordering::Relaxed) * self.stride + self.offset
    }

    /// The insert of `id` (issued here) completed, whether it succeeded or not.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        reason = "`_id`s of the key space and `acked` count from 0 up, far below 2^62: a slot of the window is their remainder"
    )]
    pub(crate) fn acknowledge(&self, id: i64) {
        let k = (id - self.base - self.offset) / self.stride;
        // SeqCst here and in `advance`: a completion filed while another user advances past
        // the slot before it is seen by one of the two.
        let done = self.acked.load(Ordering::SeqCst);
        if k < done {
            return;
        }
        if k - done < WINDOW as i64 {
            // `acked` cannot pass k before k is filed, so the slot's last holder (k - WINDOW,
            // below `acked`) has left it.
            self.window[k as usize % WINDOW].store(k + 1, Ordering::SeqCst);
        } else {
            let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
            ahead.insert(k);
            self.ahead_len.fetch_add(1, Ordering::SeqCst);
        }
        self.advance();
    }

    /// Moves `acked` past every completion that follows it.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        reason = "`acked` counts from 0 up, far below 2^62: a slot of the window is its remainder"
    )]
    fn advance(&self) {
        loop {
            let a = self.acked.load(Ordering::SeqCst);
            // Only the one who empties slot `a` while it holds `a` moves `acked` from `a`.
            let slot = &self.window[a as usize % WINDOW];
            if slot
                .compare_exchange(a + 1, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                self.acked.store(a + 1, Ordering::SeqCst);
                continue;
            }
            if self.ahead_len.load(Ordering::SeqCst) == 0 {
                return;
            }
            let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
            // Checked again under the lock: `acked` may have moved meanwhile.
            let a = self.acked.load(Ordering::SeqCst);
            if !ahead.remove(&a) {
                return;
            }
            self.ahead_len.fetch_sub(1, Ordering::SeqCst);
            drop(ahead);
            // Held by no slot (it was filed too far ahead), so no one else can move from `a`.
            self.acked.store(a + 1, Ordering::SeqCst);
        }
    }

    /// Every `_id` issued so far has completed (after a preload batch).
    pub(crate) fn acknowledge_all(&self) {
        let _ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        self.acked
            .store(self.next.load(Ordering::Relaxed), Ordering::SeqCst);
    }

    /// One past the `_id`s issued so far (by every part, when they go at the same pace).
    pub(crate) fn issued(&self) -> i64 {
        self.base + self.next.load(Ordering::Relaxed) * self.stride
    }

    /// No document to draw yet (`existing` gives None).
    pub(crate) fn is_empty(&self) -> bool {
        self.base + self.acked.load(Ordering::Acquire) == 0
    }

    /// An `_id` that exists, drawn by `pick` (uniform, zipfian, ... over the items in `_id`
    /// order): one below where the run began (the preload, shared
    /// by every part) or one this key space issued (in a part, its own inserts: other parts'
    /// inserts run at their own pace, so drawing them could name an `_id` not yet written).
    /// None when there is none.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        reason = "the key space's counts are from 0 up, and a key drawn is below them"
    )]
    pub(crate) fn existing(&self, pick: &mut Chooser, rng: &mut impl Rng) -> Option<i64> {
        let own = self.acked.load(Ordering::Acquire);
        let n = self.base + own;
        (n > 0).then(|| {
            let fixed = *self.fixed.get_or_init(|| n);
            let r = pick.pick_key(n as u64, fixed as u64, rng) as i64;
            if r < self.base {
                r
            } else {
                self.base + (r - self.base) * self.stride + self.offset
            }
        })
    }
}

/// `_id`s issued by a key space, acknowledged when this is dropped, however the operation that
/// inserts them ends.
#[derive(Debug)]
pub struct Acks(pub Arc<KeySpace>, pub Vec<i64>);

impl Drop for Acks {
    fn drop(&mut self) {
        for id in &self.1 {
            self.0.acknowledge(*id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn uniform() -> Chooser {
        Chooser::new(
            crate::workload::distribution::KeyDist::Uniform,
            Default::default(),
        )
    }

    #[test]
    fn key_space_draws_only_issued_ids() {
        let k = KeySpace::starting_at(0);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        assert_eq!(k.existing(&mut uniform(), &mut rng), None);
        for _ in 0..10 {
            k.issue();
        }
        k.acknowledge_all();
        assert!((0..100).all(|_| k.existing(&mut uniform(), &mut rng).unwrap() < 10));
    }

    #[test]
    fn parts_issue_disjoint_ids_that_together_fill_the_range() {
        let parts: Vec<KeySpace> = (0..3).map(|i| KeySpace::partitioned(100, i, 3)).collect();
        let mut all: Vec<i64> = parts
            .iter()
            .flat_map(|k| (0..5).map(|_| k.issue()).collect::<Vec<_>>())
            .collect();
        all.sort();
        assert_eq!(all, (100..115).collect::<Vec<_>>());
        assert!(parts.iter().all(|k| k.issued() == 115));
        // Draws name the shared preload or the part's own inserts, never another part's.
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let one = KeySpace::partitioned(100, 1, 3);
        let mine: Vec<i64> = (0..4).map(|_| one.issue()).collect();
        one.acknowledge_all();
        for _ in 0..1000 {
            let id = one.existing(&mut uniform(), &mut rng).unwrap();
            assert!(id < 100 || mine.contains(&id), "{id}");
        }
    }

    #[test]
    fn only_inserts_completed_in_order_can_be_drawn() {
        let k = KeySpace::partitioned(10, 1, 2);
        let ids: Vec<i64> = (0..4).map(|_| k.issue()).collect();
        assert_eq!(ids, vec![11, 13, 15, 17]);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        let mut most = || {
            (0..2000)
                .map(|_| k.existing(&mut uniform(), &mut rng).unwrap())
                .max()
                .unwrap()
        };
        // Nothing acknowledged: only the ten documents before the run.
        assert_eq!(most(), 9);
        // 13 completed before 11: neither can be drawn until 11 has.
        k.acknowledge(13);
        assert_eq!(most(), 9);
        k.acknowledge(11);
        assert_eq!(most(), 13);
        k.acknowledge(17);
        assert_eq!(most(), 13);
        k.acknowledge(15);
        assert_eq!(most(), 17);
    }
}
