//! The key space: which `_id`s exist, for the operations that pick an existing document.

use std::sync::atomic::{AtomicI64, Ordering};

use rand::Rng;

/// The `_id`s the run has written: preload takes `0..n`, each insert takes the next one, and
/// updates by `_id` draw from everything issued so far (a removed one shows as "not matched").
#[derive(Debug, Default)]
pub struct KeySpace {
    next: AtomicI64,
}

impl KeySpace {
    pub fn starting_at(first: i64) -> Self {
        KeySpace {
            next: AtomicI64::new(first),
        }
    }

    pub fn issue(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub fn issued(&self) -> i64 {
        self.next.load(Ordering::Relaxed)
    }

    /// A uniformly drawn `_id` already issued, or None when nothing has been.
    pub fn existing(&self, rng: &mut impl Rng) -> Option<i64> {
        let n = self.issued();
        (n > 0).then(|| rng.random_range(0..n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn key_space_draws_only_issued_ids() {
        let k = KeySpace::starting_at(0);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        assert_eq!(k.existing(&mut rng), None);
        for _ in 0..10 {
            k.issue();
        }
        assert!((0..100).all(|_| k.existing(&mut rng).unwrap() < 10));
    }
}
