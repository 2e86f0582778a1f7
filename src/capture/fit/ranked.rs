//! A field's values drawn from two measured distributions: the documents' (how often each value
//! occurs in the source collection, read from a sample of it) and the operations' (how often the
//! application asked for each value). Values are ranked by their documents, the most frequent
//! first, and each rank is one replay value (a placeholder, the value itself, or a preloaded
//! `_id`), so a value that is common in the data and queried often is both in the replay: the
//! preload draws the documents' distribution, the reads the operations' over the same ranks.
//!
//! The form: the top `MAX_LISTED` ranks listed with their frequencies (`^Choose`), the rest a
//! tail drawn uniformly over its ranks, carrying the rest of the weight; each distribution's Zipf
//! exponent, fitted on its listed frequencies, is said beside it with its fit error.

use std::collections::HashMap;

use mongodb::bson::Bson;
use toml::Value;

use super::{generator, table, MAX_LISTED};
use crate::capture::FieldData;

/// How a rank (0 = the most frequent value of the documents) is written in the replay.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Naming<'a> {
    /// `author-1`, `author-2`, ... (rank + 1), or with `keep` the value seen at that rank.
    Placeholder { leaf: &'a str, keep: bool },
    /// The referenced collection's preloaded `_id`s, `0 .. K-1`.
    Ids,
    /// A unique field, `name-0` .. `name-(K-1)`: the value `^Id` gives the preloaded document
    /// of that `_id`.
    Unique { leaf: &'a str },
}

impl Naming<'_> {
    fn one(self, rank: usize, seen: Option<&Bson>) -> Value {
        match (self, seen) {
            (Naming::Placeholder { keep: true, .. }, Some(Bson::String(s))) => {
                Value::String(s.clone())
            }
            (Naming::Placeholder { keep: true, .. }, Some(Bson::ObjectId(o))) => {
                generator("$oid", Value::String(o.to_hex()))
            }
            (Naming::Placeholder { leaf, .. }, _) => Value::String(format!("{leaf}-{}", rank + 1)),
            (Naming::Ids, _) => Value::Integer(crate::num::signed(rank)),
            (Naming::Unique { leaf }, _) => Value::String(format!("{leaf}-{rank}")),
        }
    }

    /// Ranks `lo ..= hi` drawn uniformly.
    fn tail(self, lo: usize, hi: usize) -> Value {
        let int = |a: usize, b: usize| {
            generator(
                "^RandomInt",
                table(&[
                    ("min", Value::Integer(crate::num::signed(a))),
                    ("max", Value::Integer(crate::num::signed(b))),
                ]),
            )
        };
        let format = |leaf: &str, g: Value| {
            generator(
                "^FormatString",
                table(&[
                    ("format", Value::String(format!("{leaf}-%d"))),
                    ("withArgs", Value::Array(vec![g])),
                ]),
            )
        };
        match self {
            Naming::Placeholder { leaf, .. } => format(leaf, int(lo + 1, hi + 1)),
            Naming::Ids => int(lo, hi),
            Naming::Unique { leaf } => format(leaf, int(lo, hi)),
        }
    }

    /// A value no replay document holds: what a read the source answered with nothing asks for.
    fn absent(self) -> Value {
        match self {
            Naming::Placeholder { leaf, .. } | Naming::Unique { leaf } => {
                Value::String(format!("{leaf}-absent"))
            }
            Naming::Ids => Value::Integer(-1),
        }
    }
}

/// A field fitted from both distributions.
#[derive(Debug, Clone)]
pub(crate) struct Ranked {
    /// What the preload's documents draw (None for a unique field: `^Id` makes its values).
    pub(crate) data: Option<Value>,
    /// What the operations draw.
    pub(crate) access: Value,
    /// Distinct values the replay's documents hold.
    pub(crate) distinct: u64,
    /// What the form is, for the profile's comment and the account.
    pub(crate) note: String,
}

/// The Zipf exponent s of frequencies `counts` (the most frequent first: frequency ~ rank^-s)
/// by least squares on their logarithms, and the fit's root-mean-square error in log10 of the
/// frequency; None for fewer than three values.
pub(crate) fn zipf(counts: &[u64]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, &c)| (crate::num::real_len(i + 1).ln(), crate::num::real(c).ln()))
        .collect();
    if pts.len() < 3 {
        return None;
    }
    let n = crate::num::real_len(pts.len());
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let rss: f64 = pts
        .iter()
        .map(|p| (p.1 - (my + slope * (p.0 - mx))).powi(2))
        .sum();
    Some((-slope, (rss / n).sqrt() / std::f64::consts::LN_10))
}

/// How many distinct values the collection holds: `distinct`'s answer, else every document's
/// values when all were read, else Chao1's estimate from the sample (the values read once and
/// twice say how many were missed), never fewer than read nor more than `docs`; and how it was
/// known.
pub(crate) fn data_cardinality(data: &FieldData, docs: Option<u64>) -> (u64, &'static str) {
    let seen = data.counts.len() as u64;
    if let Some(d) = data.distinct {
        return (d.max(seen).max(1), "distinct");
    }
    if data.whole {
        return (seen.max(1), "every document read");
    }
    let f1 = data.counts.iter().filter(|c| c.1 == 1).count();
    let f2 = data.counts.iter().filter(|c| c.1 == 2).count();
    let (d, f1, f2) = (
        crate::num::real(seen),
        crate::num::real_len(f1),
        crate::num::real_len(f2),
    );
    let chao1 = if f2 > 0.0 {
        d + f1 * f1 / (2.0 * f2)
    } else {
        d + f1 * (f1 - 1.0) / 2.0
    };
    let most = docs.unwrap_or(u64::MAX).max(seen);
    (
        crate::num::whole(chao1).max(seen).min(most).max(1),
        "estimated from the sample (Chao1)",
    )
}

/// How a field's replay values are written: its last path part and the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Placeholder { keep: bool },
    Ids,
    Unique,
}

/// Everything a ranked field is fitted from: its documents' values (None for a unique field),
/// the values every operation asked for, and the replay's number of values.
#[derive(Debug, Clone)]
pub(crate) struct Ranking {
    pub(crate) data: Option<FieldData>,
    pub(crate) pooled: Vec<(Bson, u64)>,
    pub(crate) k: u64,
    pub(crate) leaf: String,
    pub(crate) form: Form,
}

/// The ranks of one field: the values in rank order (with their documents and the times they
/// were asked for), how many are listed, and whether a value not among them is known absent.
struct Ranks {
    order: Vec<(Bson, u64, u64)>,
    rank_of: HashMap<String, usize>,
    listed: usize,
    k: usize,
    complete: bool,
}

/// Fewest times one read asked for a field's values for it to draw its own (else every read
/// of the field draws the values all of them asked for).
pub(crate) const OWN_ACCESS: u64 = 30;

impl Ranking {
    fn naming(&self) -> Naming<'_> {
        match self.form {
            Form::Placeholder { keep } => Naming::Placeholder {
                leaf: &self.leaf,
                keep,
            },
            Form::Ids => Naming::Ids,
            Form::Unique => Naming::Unique { leaf: &self.leaf },
        }
    }

    fn ranks(&self) -> Ranks {
        let k = usize::try_from(self.k.max(1)).unwrap_or(usize::MAX);
        let mut asked_of: HashMap<String, u64> = HashMap::new();
        for (v, n) in &self.pooled {
            *asked_of.entry(v.to_string()).or_default() += n;
        }
        // By the documents' frequency, then by how often asked (a unique field: by how often
        // asked alone).
        let mut order: Vec<(Bson, u64, u64)> = match &self.data {
            Some(d) => d
                .counts
                .iter()
                .map(|(v, c)| {
                    let asked = asked_of.get(&v.to_string()).copied().unwrap_or(0);
                    (v.clone(), *c, asked)
                })
                .collect(),
            None => {
                let mut seen: HashMap<String, (Bson, u64)> = HashMap::new();
                for (v, n) in &self.pooled {
                    seen.entry(v.to_string())
                        .or_insert_with(|| (v.clone(), 0))
                        .1 += n;
                }
                seen.into_values().map(|(v, n)| (v, 1, n)).collect()
            }
        };
        order.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(b.2.cmp(&a.2))
                .then_with(|| a.0.to_string().cmp(&b.0.to_string()))
        });
        let listed = order.len().min(MAX_LISTED).min(k);
        let rank_of = order
            .iter()
            .enumerate()
            .map(|(i, (v, _, _))| (v.to_string(), i))
            .collect();
        let complete = self
            .data
            .as_ref()
            .is_some_and(|d| d.whole || d.distinct == Some(d.counts.len() as u64));
        Ranks {
            order,
            rank_of,
            listed,
            k,
            complete,
        }
    }

    /// The operations' draw of values `asked` (with how often) over the ranks, and per listed
    /// rank its weight, the tail's and the absent values' weights.
    fn access_of(&self, r: &Ranks, asked: &[(Bson, u64)]) -> (Value, Vec<(usize, u64)>, u64) {
        let naming = self.naming();
        let mut by_rank: HashMap<usize, u64> = HashMap::new();
        let (mut tail, mut absent) = (0u64, 0u64);
        for (v, n) in asked {
            match r.rank_of.get(&v.to_string()) {
                Some(&i) if i < r.listed => *by_rank.entry(i).or_default() += n,
                Some(_) => tail += n,
                None if r.complete => absent += n,
                None => tail += n,
            }
        }
        let mut per_rank: Vec<(usize, u64)> = by_rank.into_iter().collect();
        per_rank.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        if r.k <= r.listed {
            absent += tail;
            tail = 0;
        }
        let mut from: Vec<Value> = per_rank
            .iter()
            .map(|&(i, _)| naming.one(i, r.order.get(i).map(|o| &o.0)))
            .collect();
        let mut weights: Vec<u64> = per_rank.iter().map(|p| p.1).collect();
        if tail > 0 {
            from.push(naming.tail(r.listed, r.k - 1));
            weights.push(tail);
        }
        if absent > 0 {
            from.push(naming.absent());
            weights.push(absent);
        }
        let g = if from.is_empty() {
            naming.tail(0, r.k - 1)
        } else {
            choose(from, &weights)
        };
        (g, per_rank, absent)
    }

    /// The index of the documents' draw (`fit`'s data) that gives each value of the documents
    /// read: its rank when listed, else the tail's (the index after the listed ones).
    pub(crate) fn data_index(&self) -> impl Fn(&Bson) -> Option<usize> {
        let r = self.ranks();
        let (listed, tail) = (r.listed, self.data_tail(&r) > 0);
        // A rank beyond the listed ones is the tail's, or none the replay draws.
        move |v: &Bson| {
            let &i = r.rank_of.get(&v.to_string())?;
            (i < listed || tail).then_some(i.min(listed))
        }
    }

    /// The documents' weight of the ranks beyond the listed ones (drawn as one tail choice):
    /// those read beyond them and the unseen ones (Good-Turing: as many as the values read
    /// once); 0 when there is no tail.
    fn data_tail(&self, r: &Ranks) -> u64 {
        let beyond: u64 = r.order[r.listed..].iter().map(|o| o.1).sum();
        let unseen = if r.complete || r.order.len() >= r.k {
            0
        } else {
            (r.order.iter().filter(|o| o.1 == 1).count() as u64).max(1)
        };
        if r.k > r.listed {
            beyond + unseen
        } else {
            0
        }
    }

    /// What one operation's slot draws: the values it asked for itself, over the field's
    /// ranks.
    pub(crate) fn access(&self, asked: &[(Bson, u64)]) -> Value {
        self.access_of(&self.ranks(), asked).0
    }

    /// The field fitted: the documents' draw, every operation's, and what the form is.
    pub(crate) fn fit(&self, how: &str) -> Ranked {
        let r = self.ranks();
        let naming = self.naming();
        let data_gen = self.data.as_ref().map(|_| {
            let mut from: Vec<Value> = r.order[..r.listed]
                .iter()
                .enumerate()
                .map(|(i, (v, _, _))| naming.one(i, Some(v)))
                .collect();
            let mut weights: Vec<u64> = r.order[..r.listed].iter().map(|o| o.1).collect();
            let tail = self.data_tail(&r);
            if tail > 0 {
                from.push(naming.tail(r.listed, r.k - 1));
                weights.push(tail);
            }
            choose(from, &weights)
        });
        let (access, per_rank, absent) = self.access_of(&r, &self.pooled);
        let access = if self.pooled.is_empty() {
            data_gen.clone().unwrap_or(access)
        } else {
            access
        };
        let describe = |counts: &[u64]| match zipf(counts) {
            Some((s, e)) => {
                format!("Zipf exponent {s:.2} (rms error {e:.2} in log10 of the frequency)")
            }
            None => "too few values for a Zipf exponent".into(),
        };
        let asked_total: u64 = self.pooled.iter().map(|p| p.1).sum();
        let top = per_rank
            .iter()
            .take((per_rank.len() / 10).max(1))
            .map(|p| p.1)
            .sum::<u64>();
        let note = format!(
            "{}; reads: {} values asked for, the top tenth of them {:.0} % of {} asked, {}{}; a read asked {} times or more draws its own",
            match &self.data {
                Some(d) => format!(
                    "documents: {} distinct values ({how}), the top {} listed with their frequencies in {} documents read{}, {}",
                    r.k,
                    r.listed,
                    d.read,
                    if r.k > r.listed { ", the rest drawn uniformly" } else { "" },
                    describe(&r.order[..r.listed].iter().map(|o| o.1).collect::<Vec<_>>())
                ),
                None => format!(
                    "documents: each of the {} holds its own value (a unique index), from its _id (^Id)",
                    r.k
                ),
            },
            per_rank.len(),
            if asked_total > 0 {
                100.0 * crate::num::real(top) / crate::num::real(asked_total)
            } else {
                0.0
            },
            asked_total,
            describe(&per_rank.iter().map(|p| p.1).collect::<Vec<_>>()),
            if absent > 0 {
                format!(", {absent} asked for a value the source does not hold")
            } else {
                String::new()
            },
            OWN_ACCESS
        );
        Ranked {
            data: data_gen,
            access,
            distinct: r.k as u64,
            note,
        }
    }
}

/// `^Choose` of `from` with `weights` (one value: the value itself).
fn choose(mut from: Vec<Value>, weights: &[u64]) -> Value {
    if from.len() == 1 {
        return from.remove(0);
    }
    generator(
        "^Choose",
        table(&[
            ("from", Value::Array(from)),
            (
                "weights",
                Value::Array(
                    weights
                        .iter()
                        .map(|&w| Value::Integer(crate::num::signed(w)))
                        .collect(),
                ),
            ),
        ]),
    )
}
