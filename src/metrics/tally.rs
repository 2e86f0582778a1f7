//! A row's counters without its histograms (`Tally`): what a coordinated part sends beside
//! each interval's histograms when its coordinator serves the run live (a page, Prometheus).
//! The coordinator adds the parts' tallies, and the intervals' histograms into the run's, and
//! `into_metrics` gives back the row's metrics: those `merge` makes of the parts' summaries
//! afterwards, while the run goes.
//!
//! Owns: the counters' form on the wire. Never: histograms (the interval's encoding carries
//! them) or where a row's label comes from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::group::{DocCounts, FailureKind, GroupMetrics, Seen};
use super::row::TxCounts;
use super::timing::Timing;
use crate::vocab::{ErrorClass, ServerCode};
use hdrhistogram::Histogram;

/// A row's counters as its part has them so far (warm-up excluded, as the summary's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tally {
    pub(crate) samples: u64,
    pub(crate) errors: u64,
    pub(crate) first_start_us: u64,
    pub(crate) last_end_us: u64,
    pub(crate) sent_bytes: u64,
    pub(crate) received_bytes: u64,
    pub(crate) matched: u64,
    pub(crate) modified: u64,
    pub(crate) docs: DocCounts,
    pub(crate) tx: TxCounts,
    pub(crate) late: u64,
    pub(crate) max_behind_us: u64,
    pub(crate) missed: u64,
    pub(crate) latency: Spread,
    pub(crate) service: Spread,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) errors_by_class: BTreeMap<ErrorClass, u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) failures: Vec<Failed>,
    /// A change's row: its whole latency and service histograms (encoded as summary.json's),
    /// which the interval log does not carry under the row's own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hdr: Option<(String, String)>,
}

/// A timing's exact sum, least and most (its histogram travels apart).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spread {
    pub(crate) sum_us: u64,
    pub(crate) min_us: u64,
    pub(crate) max_us: u64,
}

/// A kind of failure, how often, and its first message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Failed {
    pub(crate) class: ErrorClass,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<i32>,
    pub(crate) count: u64,
    pub(crate) message: String,
}

impl Spread {
    fn of(t: &Timing) -> Spread {
        Spread {
            sum_us: u64::try_from(t.sum_us).unwrap_or(u64::MAX),
            min_us: t.min_us,
            max_us: t.max_us,
        }
    }

    fn add(&mut self, o: &Spread) {
        self.sum_us = self.sum_us.saturating_add(o.sum_us);
        self.min_us = self.min_us.min(o.min_us);
        self.max_us = self.max_us.max(o.max_us);
    }

    fn timing(self, hist: Histogram<u64>) -> Timing {
        Timing {
            hist,
            sum_us: u128::from(self.sum_us),
            min_us: self.min_us,
            max_us: self.max_us,
        }
    }
}

impl Tally {
    /// `m`'s counters (its kinds apart: each is a row of its own).
    pub(crate) fn of(m: &GroupMetrics) -> Tally {
        Tally {
            samples: m.samples,
            errors: m.errors,
            first_start_us: m.first_start_us,
            last_end_us: m.last_end_us,
            sent_bytes: m.sent_bytes,
            received_bytes: m.received_bytes,
            matched: m.matched,
            modified: m.modified,
            docs: m.docs,
            tx: m.tx.clone(),
            late: m.late,
            max_behind_us: m.max_behind_us,
            missed: m.missed,
            latency: Spread::of(&m.latency),
            service: Spread::of(&m.service),
            errors_by_class: m.errors_by_class.clone(),
            failures: m
                .failures
                .iter()
                .map(|(k, s)| Failed {
                    class: k.class,
                    code: k.code.map(|c| c.0),
                    count: s.count,
                    message: s.message.clone(),
                })
                .collect(),
            hdr: None,
        }
    }

    /// A change's row's counters, with its whole histograms.
    pub(crate) fn with_histograms(m: &GroupMetrics) -> Tally {
        Tally {
            hdr: Some((
                super::timing::encode(&m.latency.hist),
                super::timing::encode(&m.service.hist),
            )),
            ..Tally::of(m)
        }
    }

    /// The row's histograms as sent (`with_histograms`), added over the parts; none for a row
    /// whose histograms come from the interval log.
    pub(crate) fn histograms(&self) -> Option<(Histogram<u64>, Histogram<u64>)> {
        let (l, s) = self.hdr.as_ref()?;
        Some((
            super::timing::decode(l).ok()?,
            super::timing::decode(s).ok()?,
        ))
    }

    /// Another part's tally of the same row added, as `GroupMetrics::merge` adds theirs.
    pub(crate) fn add(&mut self, o: &Tally) {
        self.missed += o.missed;
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            let missed = self.missed;
            *self = o.clone();
            self.missed = missed;
            return;
        }
        self.samples += o.samples;
        self.errors += o.errors;
        self.first_start_us = self.first_start_us.min(o.first_start_us);
        self.last_end_us = self.last_end_us.max(o.last_end_us);
        self.sent_bytes += o.sent_bytes;
        self.received_bytes += o.received_bytes;
        self.matched += o.matched;
        self.modified += o.modified;
        self.docs.add(&o.docs);
        self.tx.add(&o.tx);
        self.late += o.late;
        self.max_behind_us = self.max_behind_us.max(o.max_behind_us);
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        for (c, n) in &o.errors_by_class {
            *self.errors_by_class.entry(*c).or_default() += n;
        }
        // A change's row: the parts' histograms added, kept encoded as they travel.
        if let (Some(mine), Some(theirs)) = (self.histograms(), o.histograms()) {
            let (mut l, mut s) = mine;
            if l.add(&theirs.0).is_ok() && s.add(&theirs.1).is_ok() {
                self.hdr = Some((super::timing::encode(&l), super::timing::encode(&s)));
            }
        }
        for f in &o.failures {
            match self
                .failures
                .iter_mut()
                .find(|s| s.class == f.class && s.code == f.code)
            {
                Some(s) => s.count += f.count,
                None => self.failures.push(f.clone()),
            }
        }
    }

    /// The row's metrics: these counters around the row's whole histograms (`service`: none
    /// in closed loop, where service time is the latency).
    pub(crate) fn into_metrics(
        self,
        latency: Histogram<u64>,
        service: Option<Histogram<u64>>,
    ) -> GroupMetrics {
        let service = match service {
            Some(h) => self.service.timing(h),
            None => self.service.timing(latency.clone()),
        };
        let mut m = GroupMetrics::with_timings(self.latency.timing(latency), service);
        m.samples = self.samples;
        m.errors = self.errors;
        m.first_start_us = self.first_start_us;
        m.last_end_us = self.last_end_us;
        m.sent_bytes = self.sent_bytes;
        m.received_bytes = self.received_bytes;
        m.matched = self.matched;
        m.modified = self.modified;
        m.docs = self.docs;
        m.tx = self.tx;
        m.late = self.late;
        m.max_behind_us = self.max_behind_us;
        m.missed = self.missed;
        m.errors_by_class = self.errors_by_class;
        for f in self.failures {
            let kind = FailureKind {
                class: f.class,
                code: f.code.map(ServerCode),
            };
            Seen::add(&mut m.failures, kind, f.count, &f.message);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::sample::{OpError, Sample};

    fn sample(start: u64, us: u64, failed: bool) -> Sample {
        Sample {
            error: failed.then(|| {
                Box::new(OpError {
                    class: ErrorClass::Timeout,
                    code: None,
                    message: "timed out".into(),
                })
            }),
            sent: 100,
            ..Sample::at(start, us)
        }
    }

    /// Two parts' tallies added, around the parts' histograms added, are the metrics of every
    /// sample recorded in one: what `merge` makes of them.
    #[test]
    fn tallies_added_are_the_samples_recorded_in_one() {
        let (mut a, mut b, mut one) = (
            GroupMetrics::default(),
            GroupMetrics::default(),
            GroupMetrics::default(),
        );
        for i in 0..40u64 {
            let s = sample(1_000 + i * 10, 100 + i * 7, i % 9 == 0);
            if i % 3 == 0 { &mut a } else { &mut b }.record(&s);
            one.record(&s);
        }
        let text = serde_json::to_string(&Tally::of(&a)).unwrap();
        let mut sum: Tally = serde_json::from_str(&text).unwrap();
        sum.add(&Tally::of(&b));
        let mut hist = a.latency.hist.clone();
        hist.add(&b.latency.hist).unwrap();
        let back = sum.into_metrics(hist, None);
        let row = |m: &GroupMetrics| m.row("insert");
        assert_eq!(row(&back), row(&one));
        assert_eq!(back.errors_by_class, one.errors_by_class);
        assert_eq!(back.failures, one.failures);
        // A change's row carries its histograms, added over the parts.
        let mut fast = Tally::with_histograms(&a);
        fast.add(&Tally::with_histograms(&b));
        let (latency, _) = fast.histograms().expect("histograms");
        assert_eq!(latency, one.latency.hist);
        // A part with nothing yet adds nothing but its missed operations.
        let mut empty = Tally {
            missed: 2,
            ..Tally::default()
        };
        empty.add(&Tally::of(&a));
        assert_eq!((empty.samples, empty.missed), (a.samples, 2 + a.missed));
    }
}
