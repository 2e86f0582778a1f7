//! Which existing document an operation picks: YCSB's request distributions over the items
//! `0..n` (0 the oldest `_id`, `n - 1` the newest), with YCSB's definitions and defaults:
//!
//! - `uniform`: every item alike.
//! - `zipfian`: YCSB's scrambled zipfian: a zipfian rank over 10^10 items (constant 0.99, its
//!   zeta precomputed, as YCSB does) hashed (FNV-1a 64) onto the items, so the popular items are
//!   spread over the key space rather than all at its start. O(1) per draw, no set-up.
//! - `hotspot`: 20 % of the items (the oldest) take 80 % of the operations, uniform within each
//!   part.
//! - `latest`: zipfian over the items counted back from the newest, so recent inserts are the
//!   most popular (YCSB's skewed-latest). Its zeta follows the item count as inserts go on:
//!   summed exactly up to 10^6 items, beyond by the Euler-Maclaurin formula (error below 1e-9),
//!   so growing costs O(1) amortised and 10^8 items set up at once.
//! - `sequential`: item after item, wrapping, one counter per group.
//! - `exponential`: YCSB's exponential, skewed to the newest: 95 % of the operations on the newest
//!   85.7 % of the items (`exponential.percentile` 95, `exponential.frac` 0.8571428571).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::Rng;

/// A request distribution, as named in profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum KeyDist {
    #[default]
    Uniform,
    Zipfian,
    Hotspot,
    Latest,
    Sequential,
    Exponential,
}

impl KeyDist {
    pub(crate) const ALL: [KeyDist; 6] = [
        KeyDist::Uniform,
        KeyDist::Zipfian,
        KeyDist::Hotspot,
        KeyDist::Latest,
        KeyDist::Sequential,
        KeyDist::Exponential,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            KeyDist::Uniform => "uniform",
            KeyDist::Zipfian => "zipfian",
            KeyDist::Hotspot => "hotspot",
            KeyDist::Latest => "latest",
            KeyDist::Sequential => "sequential",
            KeyDist::Exponential => "exponential",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<KeyDist> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }

    /// `"uniform", "zipfian", ... or "exponential"`, for error texts.
    pub(crate) fn listed() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|d| format!("\"{}\"", d.name()))
            .collect();
        let (last, rest) = names.split_last().expect("six names");
        format!("{} or {last}", rest.join(", "))
    }
}

impl std::fmt::Display for KeyDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// YCSB's zipfian constant.
pub(crate) const ZIPFIAN_CONSTANT: f64 = 0.99;
/// The items of YCSB's scrambled zipfian, and their zeta for the constant 0.99 (YCSB's
/// `ScrambledZipfianGenerator.ZETAN`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;
/// Hotspot: the share of the items that is hot, and of the operations that go to it.
pub(crate) const HOT_ITEMS: f64 = 0.2;
pub(crate) const HOT_OPERATIONS: f64 = 0.8;
/// Exponential: YCSB's `exponential.percentile` and `exponential.frac`.
const EXP_PERCENTILE: f64 = 95.0;
const EXP_FRAC: f64 = 0.857_142_857_1;
/// Up to this many items the zeta of `latest` is summed term by term.
const EXACT_ZETA_ITEMS: u64 = 1_000_000;

/// zeta(n, theta) = sum of 1 / i^theta for i in 1..=n, from `from` items whose sum is `sum`.
fn zeta_from(from: u64, sum: f64, n: u64, theta: f64) -> f64 {
    let exact_to = n.min(EXACT_ZETA_ITEMS).max(from);
    let mut s = sum;
    for i in from + 1..=exact_to {
        s += 1.0 / crate::num::real(i).powf(theta);
    }
    if n <= exact_to {
        return s;
    }
    // Euler-Maclaurin for the terms exact_to+1 ..= n of f(x) = x^-theta.
    let (a, b) = (crate::num::real(exact_to), crate::num::real(n));
    let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
    let ends = (b.powf(-theta) - a.powf(-theta)) / 2.0;
    let slope = -theta * (b.powf(-theta - 1.0) - a.powf(-theta - 1.0)) / 12.0;
    s + integral + ends + slope
}

/// The zeta of `n` items, from none (the tests' reference).
#[cfg(test)]
fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, 0.0, n, theta)
}

/// Gray et al.'s zipfian draw (YCSB's `ZipfianGenerator.nextLong`): a rank in `0..n`, 0 the
/// most popular, given the zeta of `n`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "YCSB's (long) of a double: truncated toward 0, as Java does"
)]
fn zipf_rank(n: u64, zetan: f64, theta: f64, u: f64) -> u64 {
    let alpha = 1.0 / (1.0 - theta);
    let zeta2 = 1.0 + 0.5f64.powf(theta);
    let eta = (1.0 - (2.0 / crate::num::real(n)).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let uz = u * zetan;
    if uz < 1.0 {
        return 0;
    }
    if uz < 1.0 + 0.5f64.powf(theta) {
        return 1.min(n - 1);
    }
    ((crate::num::real(n) * (eta * u - eta + 1.0).powf(alpha)) as u64).min(n - 1)
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `v`, low byte first.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "YCSB's Math.abs of the hash read as a long"
)]
pub(crate) fn fnv64(mut v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(1_099_511_628_211);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// What the users of one group share for their draws: the `sequential` counter, and the zetas
/// of `latest` (summed once for the group, grown as the inserts go on).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    next: AtomicU64,
    /// Item counts and their zeta, the last few computed (the key space, and the choice lists
    /// of filter fields).
    zetas: Mutex<Vec<(u64, f64)>>,
}

impl Shared {
    /// The zeta of `n` items: kept, or grown from the largest count below it kept (the key
    /// space grows with the inserts: only the new terms are summed, once for the group).
    fn zeta_of(&self, n: u64) -> f64 {
        let mut zetas = self.zetas.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, z)) = zetas.iter().find(|(m, _)| *m == n) {
            return *z;
        }
        let (from, sum) = zetas
            .iter()
            .filter(|(m, _)| *m < n)
            .max_by_key(|(m, _)| *m)
            .copied()
            .unwrap_or((0, 0.0));
        let z = zeta_from(from, sum, n, ZIPFIAN_CONSTANT);
        match zetas.iter_mut().find(|(m, _)| *m == from && from > 0) {
            Some(slot) => *slot = (n, z),
            None => {
                if zetas.len() >= 4 {
                    zetas.remove(0);
                }
                zetas.push((n, z));
            }
        }
        z
    }
}

/// One virtual user's chooser: the distribution, and what its group shares.
#[derive(Debug)]
pub(crate) struct Chooser {
    dist: KeyDist,
    shared: Arc<Shared>,
    /// `latest`: the item counts and zetas of this user's last draws (the key space, and a
    /// filter field's choices), the most recent first; grown by the user itself while the
    /// count grows by a little (no lock), from the group's when by much.
    zetas: [(u64, f64); 2],
}

/// Items a user sums itself to grow its zeta; more are taken from the group's (summed once for
/// the group, under its lock).
const OWN_ZETA_TERMS: u64 = 32;

impl Chooser {
    pub(crate) fn new(dist: KeyDist, shared: Arc<Shared>) -> Chooser {
        Chooser {
            dist,
            shared,
            zetas: [(0, 0.0); 2],
        }
    }

    fn zeta_of(&mut self, n: u64) -> f64 {
        let near = |&(m, _): &(u64, f64)| m > 0 && m <= n && n - m <= OWN_ZETA_TERMS;
        let (i, z) = match self.zetas.iter().position(near) {
            Some(i) => {
                let (m, z) = self.zetas[i];
                (
                    i,
                    if m == n {
                        z
                    } else {
                        zeta_from(m, z, n, ZIPFIAN_CONSTANT)
                    },
                )
            }
            // The older entry gives way.
            None => (1, self.shared.zeta_of(n)),
        };
        self.zetas[i] = (n, z);
        self.zetas.swap(0, i);
        z
    }

    /// An item in `0..n` (n > 0) of a list that does not grow (a filter field's choices).
    pub(crate) fn pick(&mut self, n: u64, rng: &mut impl Rng) -> u64 {
        self.pick_key(n, n, rng)
    }

    /// An item in `0..n` (n > 0) of the key space, which grows with the inserts. `fixed` (at
    /// most `n`) is the item count the run began with: the scrambled zipfian hashes onto it, as
    /// YCSB hashes onto its record count, so its popular items stay the same documents while
    /// inserts go on.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        reason = "YCSB's (long) of a double in the hotspot's and exponential's draws"
    )]
    pub(crate) fn pick_key(&mut self, n: u64, fixed: u64, rng: &mut impl Rng) -> u64 {
        debug_assert!(n > 0);
        match self.dist {
            KeyDist::Uniform => rng.random_range(0..n),
            KeyDist::Zipfian => {
                let rank = zipf_rank(
                    SCRAMBLED_ITEMS,
                    SCRAMBLED_ZETAN,
                    ZIPFIAN_CONSTANT,
                    rng.random(),
                );
                fnv64(rank) % fixed.clamp(1, n)
            }
            KeyDist::Hotspot => {
                let hot = ((crate::num::real(n) * HOT_ITEMS) as u64).max(1);
                if hot >= n || rng.random::<f64>() < HOT_OPERATIONS {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(hot..n)
                }
            }
            KeyDist::Latest => {
                let zetan = self.zeta_of(n);
                n - 1 - zipf_rank(n, zetan, ZIPFIAN_CONSTANT, rng.random())
            }
            KeyDist::Sequential => self.shared.next.fetch_add(1, Ordering::Relaxed) % n,
            KeyDist::Exponential => {
                let gamma = -(1.0 - EXP_PERCENTILE / 100.0).ln() / (crate::num::real(n) * EXP_FRAC);
                loop {
                    let back = (-rng.random::<f64>().ln() / gamma) as u64;
                    if back < n {
                        return n - 1 - back;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "test data within the bounds of every type"
)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const DRAWS: usize = 1_000_000;

    fn counts(dist: KeyDist, n: u64) -> Vec<u64> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut c = Chooser::new(dist, Default::default());
        let mut hits = vec![0u64; n as usize];
        for _ in 0..DRAWS {
            hits[c.pick(n, &mut rng) as usize] += 1;
        }
        hits
    }

    /// Pearson's chi-square statistic of `hits` against `expected` shares.
    fn chi_square(hits: &[u64], expected: impl Fn(usize) -> f64) -> f64 {
        hits.iter()
            .enumerate()
            .map(|(i, h)| {
                let e = expected(i) * crate::num::real_len(DRAWS);
                (crate::num::real(*h) - e).powi(2) / e
            })
            .sum()
    }

    #[test]
    fn names_round_trip() {
        for d in KeyDist::ALL {
            assert_eq!(KeyDist::from_name(d.name()), Some(d));
        }
        assert!(KeyDist::listed().ends_with("or \"exponential\""));
    }

    #[test]
    fn uniform_passes_chi_square() {
        // 99 degrees of freedom: the 99.9 % point of chi-square is 148.2.
        let x = chi_square(&counts(KeyDist::Uniform, 100), |_| 0.01);
        assert!(x < 148.2, "chi-square {x}");
    }

    /// The share of rank `k` (0 the most popular) under YCSB's zipfian draw over `n` items:
    /// ranks 0 and 1 exactly 1/zeta and 0.5^theta/zeta, and from rank 2 on what Gray et al.'s
    /// formula gives, P(rank >= k) = (1 - (k/n)^(1-theta)) / eta.
    fn ycsb_zipf_share(k: u64, n: u64, zetan: f64) -> f64 {
        let t = ZIPFIAN_CONSTANT;
        let eta = (1.0 - (2.0 / crate::num::real(n)).powf(1.0 - t))
            / (1.0 - (1.0 + 0.5f64.powf(t)) / zetan);
        let at_least =
            |k: u64| (1.0 - (crate::num::real(k) / crate::num::real(n)).powf(1.0 - t)) / eta;
        match k {
            0 => 1.0 / zetan,
            1 => 0.5f64.powf(t) / zetan,
            2 => 1.0 - (1.0 + 0.5f64.powf(t)) / zetan - at_least(3),
            _ if k + 1 >= n => at_least(k),
            _ => at_least(k) - at_least(k + 1),
        }
    }

    #[test]
    fn latest_is_ycsbs_zipfian_from_the_newest_and_passes_chi_square() {
        let n = 50u64;
        let z = zeta(n, ZIPFIAN_CONSTANT);
        let hits = counts(KeyDist::Latest, n);
        // Item n - 1 - r holds rank r. 49 degrees of freedom: the 99.9 % point is 85.4.
        let x = chi_square(&hits, |i| ycsb_zipf_share(n - 1 - i as u64, n, z));
        assert!(x < 85.4, "chi-square {x}");
        assert_eq!(
            hits.iter().enumerate().max_by_key(|(_, h)| **h).unwrap().0,
            n as usize - 1
        );
    }

    #[test]
    fn scrambled_zipfian_puts_ycsbs_top_shares_on_hashed_items() {
        let n = 10_000u64;
        let hits = counts(KeyDist::Zipfian, n);
        let mut sorted = hits.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        // Rank 0 of 10^10 holds 1 / zeta = 3.78 % of the draws, ranks 0..9 together 11.8 %
        // (YCSB's formula); hash collisions onto 10^4 items add about 0.01 %.
        let top1 = crate::num::real(sorted[0]) / crate::num::real_len(DRAWS);
        let top10: f64 =
            crate::num::real(sorted[..10].iter().sum::<u64>()) / crate::num::real_len(DRAWS);
        let want10: f64 = (0..10)
            .map(|k| ycsb_zipf_share(k, SCRAMBLED_ITEMS, SCRAMBLED_ZETAN))
            .sum();
        assert!(
            (top1 - 1.0 / SCRAMBLED_ZETAN).abs() < 0.001,
            "top 1: {top1}"
        );
        assert!(
            (top10 - want10).abs() < 0.003,
            "top 10: {top10} vs {want10}"
        );
        // Scrambled: the most popular item is where rank 0 hashes, not item 0.
        assert_eq!(
            hits.iter().enumerate().max_by_key(|(_, h)| **h).unwrap().0 as u64,
            fnv64(0) % n
        );
    }

    #[test]
    fn hotspot_sends_80_percent_to_the_first_20_percent() {
        let hits = counts(KeyDist::Hotspot, 1000);
        let hot: u64 = hits[..200].iter().sum();
        let share = crate::num::real(hot) / crate::num::real_len(DRAWS);
        assert!((share - 0.8).abs() < 0.002, "{share}");
        // Uniform within each part: chi-square over the hot items (199 dof, 99.9 %: 267.5).
        let x = chi_square(&hits[..200], |_| 0.8 / 200.0);
        assert!(x < 267.5, "{x}");
    }

    #[test]
    fn sequential_walks_every_item_in_turn() {
        let hits = counts(KeyDist::Sequential, 1000);
        assert!(hits.iter().all(|h| *h == (DRAWS / 1000) as u64));
    }

    #[test]
    fn exponential_puts_95_percent_on_the_newest_857_thousandths() {
        let n = 10_000u64;
        let hits = counts(KeyDist::Exponential, n);
        let newest = (crate::num::real(n) * EXP_FRAC) as usize;
        let share = crate::num::real(hits[n as usize - newest..].iter().sum::<u64>())
            / crate::num::real_len(DRAWS);
        // 95 % of the exponential falls within the newest 85.7 %; draws beyond the oldest item
        // are drawn again, which lifts it to 0.95 / (1 - 0.05^(1/0.857)) = 97.97 %.
        let want = 0.95 / (1.0 - 0.05f64.powf(1.0 / EXP_FRAC));
        assert!((share - want).abs() < 0.002, "{share} vs {want}");
    }

    #[test]
    fn zeta_beyond_the_exact_sum_is_exact_enough_and_fast() {
        // Against a plain sum at 3 * 10^6 items.
        let plain: f64 = (1..=3_000_000u64)
            .map(|i| 1.0 / crate::num::real(i).powf(0.99))
            .sum();
        let fast = zeta(3_000_000, 0.99);
        assert!((plain - fast).abs() < 1e-9 * plain, "{plain} vs {fast}");
        // YCSB's constant for 10^10 items.
        assert!((zeta(10_000_000_000, 0.99) - SCRAMBLED_ZETAN).abs() < 1e-6);
        // Over 10^8 items the first draw sums 10^6 terms and adds the formula's tail; one more
        // item costs one term: the same zeta as summing afresh.
        let mut c = Chooser::new(KeyDist::Latest, Default::default());
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        assert!(c.pick(100_000_000, &mut rng) < 100_000_000);
        c.pick(100_000_001, &mut rng);
        let z = c.shared.zeta_of(100_000_001);
        assert!((z - zeta(100_000_001, 0.99)).abs() < 1e-9);
        // A filter's choice list beside the key space keeps both.
        c.pick(8, &mut rng);
        assert_eq!(c.shared.zetas.lock().unwrap().len(), 2);
    }

    #[test]
    fn the_scrambled_zipfians_popular_items_stay_put_while_inserts_go_on() {
        // 10^4 items when the run began, growing by one per draw: the most drawn item is where
        // rank 0 hashes onto the first 10^4, whatever the count has grown to.
        let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
        let mut c = Chooser::new(KeyDist::Zipfian, Default::default());
        let mut hits = vec![0u64; 10_000];
        for i in 0..200_000u64 {
            let item = c.pick_key(10_000 + i, 10_000, &mut rng);
            hits[item as usize] += 1;
        }
        let top = hits.iter().enumerate().max_by_key(|(_, h)| **h).unwrap();
        assert_eq!(top.0 as u64, fnv64(0) % 10_000);
        assert!(crate::num::real(*top.1) / 200_000.0 > 0.036, "{}", top.1);
    }
}
