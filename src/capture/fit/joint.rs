//! A date field drawn by the rank of the field a read selects it with (`author` and `created >=
//! now - 12h`): where the source's documents of the busiest values are dated differently from
//! the others (a busy author's messages mostly recent), a date drawn apart from the author would
//! give each author's read the collection's share of recent documents, not its own. The
//! documents read are split into buckets by the value's rank (the top value, the top 10, 100,
//! 1,000, the tail; a bucket of fewer than PER_BUCKET documents joins the next), each bucket's
//! dates drawn from its own deciles (`{ by_rank_of, ranks, then }` in the document template).
//! Used only where a bucket's dates differ from the rest's by Kolmogorov-Smirnov's test at the
//! 1 % level; else the date is drawn alone, as before.

use mongodb::bson::Bson;
use toml::Value;

use super::{generator, relative, table};

/// Fewest documents a bucket of ranks needs for dates of its own.
const PER_BUCKET: usize = 50;
/// The buckets' upper bounds tried (ranks below each): the top value, 10, 100, 1,000.
const BOUNDS: [usize; 4] = [1, 10, 100, 1000];
/// Pieces of each bucket's dates: each a tenth of its documents, uniform within.
const PIECES: usize = 10;
/// Kolmogorov-Smirnov's coefficient at the 1 % level.
const KS_1PCT: f64 = 1.63;

/// The date field's generator by rank and what it is, for the profile's comment.
#[derive(Debug, Clone)]
pub(crate) struct Dated {
    pub(crate) gen: Value,
    pub(crate) note: String,
}

/// `pairs`: each document's value of field `of` and its date; `index_of`: the documents'
/// draw's index of a value of `of`. None when the dates do not differ by rank (or too few).
pub(crate) fn dated_by_rank(
    of: &str,
    pairs: &[(Bson, i64)],
    index_of: &dyn Fn(&Bson) -> Option<usize>,
    now_ms: i64,
) -> Option<Dated> {
    let indexed: Vec<(usize, i64)> = pairs
        .iter()
        .filter_map(|(v, ms)| Some((index_of(v)?, *ms)))
        .collect();
    let top = indexed.iter().map(|p| p.0).max()?;
    // Bounds within the ranks seen, each with enough documents below it and above it.
    let mut bounds: Vec<usize> = BOUNDS.iter().copied().filter(|&b| b <= top).collect();
    loop {
        let buckets = split(&indexed, &bounds);
        match buckets.iter().position(|b| b.len() < PER_BUCKET) {
            None => break,
            // A small bucket joins the next (the last joins the one before).
            Some(i) if i < bounds.len() => {
                bounds.remove(i);
            }
            Some(_) => {
                bounds.pop();
            }
        }
        if bounds.is_empty() {
            return None;
        }
    }
    let mut buckets = split(&indexed, &bounds);
    for b in &mut buckets {
        b.sort_unstable();
    }
    let all: Vec<i64> = {
        let mut a: Vec<i64> = indexed.iter().map(|p| p.1).collect();
        a.sort_unstable();
        a
    };
    if !buckets.iter().any(|b| differs(b, &all)) {
        return None;
    }
    let then: Vec<Value> = buckets.iter().map(|b| deciles(b, now_ms)).collect();
    let gen = table(&[
        ("by_rank_of", Value::String(of.to_string())),
        (
            "ranks",
            Value::Array(
                bounds
                    .iter()
                    .map(|&b| Value::Integer(crate::num::signed(b)))
                    .collect(),
            ),
        ),
        ("then", Value::Array(then)),
    ]);
    let mut lo = 0;
    let parts: Vec<String> = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let ranks = match bounds.get(i) {
                Some(&hi) if hi == lo + 1 => format!("rank {hi}"),
                Some(&hi) => format!("ranks {}-{hi}", lo + 1),
                None => format!("ranks above {lo}"),
            };
            lo = bounds.get(i).copied().unwrap_or(lo);
            format!(
                "{ranks}: {} documents, median {}",
                b.len(),
                relative(b[b.len() / 2] - now_ms)
            )
        })
        .collect();
    Some(Dated {
        gen,
        note: format!(
            "drawn by the rank of {of} (its documents' dates differ by rank: {}), each bucket from its deciles",
            parts.join("; ")
        ),
    })
}

/// The dates of each bucket of ranks: below `bounds[0]`, below `bounds[1]`, ..., the rest.
fn split(indexed: &[(usize, i64)], bounds: &[usize]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new(); bounds.len() + 1];
    for &(i, ms) in indexed {
        let b = bounds.iter().take_while(|&&r| i >= r).count();
        out[b].push(ms);
    }
    out
}

/// Does `part` (sorted) differ from `all` (sorted) by Kolmogorov-Smirnov's test at 1 %? The
/// rest of `all` is compared, so a part as large as the whole does not.
fn differs(part: &[i64], all: &[i64]) -> bool {
    let (n, m) = (part.len(), all.len().saturating_sub(part.len()));
    if n == 0 || m == 0 {
        return false;
    }
    // The rest's distribution: all's counts less part's, at each date.
    let (mut i, mut j) = (0usize, 0usize);
    let mut d: f64 = 0.0;
    while i < n || j < all.len() {
        let x = match (part.get(i), all.get(j)) {
            (Some(&a), Some(&b)) => a.min(b),
            (Some(&a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => break,
        };
        while part.get(i).is_some_and(|&a| a <= x) {
            i += 1;
        }
        while all.get(j).is_some_and(|&b| b <= x) {
            j += 1;
        }
        let rest_le = j.saturating_sub(i);
        let f1 = crate::num::real_len(i) / crate::num::real_len(n);
        let f2 = crate::num::real_len(rest_le) / crate::num::real_len(m);
        d = d.max((f1 - f2).abs());
    }
    let (n, m) = (crate::num::real_len(n), crate::num::real_len(m));
    d > KS_1PCT * ((n + m) / (n * m)).sqrt()
}

/// Dates drawn from `sorted`'s deciles: a tenth of the weight uniform within each.
fn deciles(sorted: &[i64], now_ms: i64) -> Value {
    let at = |q: usize| sorted[(q * (sorted.len() - 1)) / PIECES] - now_ms;
    let from: Vec<Value> = (0..PIECES)
        .map(|q| {
            generator(
                "^RandomDate",
                table(&[
                    ("min", Value::String(relative(at(q)))),
                    ("max", Value::String(relative(at(q + 1)))),
                ]),
            )
        })
        .collect();
    generator("^Choose", table(&[("from", Value::Array(from))]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;
    const HOUR: i64 = 3_600_000;

    fn value(i: usize) -> Bson {
        Bson::String(format!("u{i}"))
    }

    /// 2,000 documents: value i's rank is i; `date(i, n)` the n-th document's date.
    fn pairs(date: impl Fn(usize, usize) -> i64) -> Vec<(Bson, i64)> {
        (0..2000)
            .map(|n| {
                let i = (n * n) % 997 % 300; // skewed toward small ranks
                (value(i), date(i, n))
            })
            .collect()
    }

    fn index(v: &Bson) -> Option<usize> {
        v.as_str()?.strip_prefix('u')?.parse().ok()
    }

    #[test]
    fn dates_that_differ_by_rank_are_drawn_by_rank() {
        // The top 10 values' documents are of the last hour, the others' of the last two days.
        let p = pairs(|i, n| {
            let span = if i < 10 { HOUR } else { 48 * HOUR };
            NOW - (i64::try_from(n).unwrap() * 7919) % span
        });
        let d = dated_by_rank("author", &p, &index, NOW).expect("they differ");
        let t = d.gen.as_table().unwrap();
        assert_eq!(t["by_rank_of"].as_str(), Some("author"));
        let ranks: Vec<i64> = t["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_integer().unwrap())
            .collect();
        assert!(ranks.contains(&10), "{ranks:?}");
        assert_eq!(t["then"].as_array().unwrap().len(), ranks.len() + 1);
        assert!(
            d.note.contains("ranks 2-10") || d.note.contains("ranks 1-10"),
            "{}",
            d.note
        );
    }

    #[test]
    fn dates_alike_for_every_rank_are_drawn_alone() {
        let p = pairs(|_, n| NOW - (i64::try_from(n).unwrap() * 7919) % (48 * HOUR));
        assert!(dated_by_rank("author", &p, &index, NOW).is_none());
    }
}
