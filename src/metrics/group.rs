//! Per-group HdrHistograms (microseconds, `timing`'s) and counters, and the JMeter Aggregate
//! Report row computed from them.

use super::{real, whole};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::label::Label;
use super::row::{Row, TxCounts};
use super::sample::{ErrorClass, OpError, Sample};
use super::timing::{decode, encode, new_histogram, Timing};
use crate::vocab::OpName;
use hdrhistogram::Histogram;

#[derive(Debug, Clone)]
pub struct GroupMetrics {
    /// Latency as reported: from the intended start (open loop) or the actual start (closed loop).
    pub(crate) latency: Timing,
    /// Service time: from the actual start.
    pub(crate) service: Timing,
    pub(crate) samples: u64,
    pub(crate) errors: u64,
    pub(crate) first_start_us: u64,
    pub(crate) last_end_us: u64,
    pub(crate) sent_bytes: u64,
    pub(crate) received_bytes: u64,
    pub(crate) matched: u64,
    pub(crate) modified: u64,
    /// Documents the operations returned (cursors read to the end), inserted, upserted and
    /// deleted.
    pub(crate) docs: DocCounts,
    /// Transactions: how they ended and their retries.
    pub(crate) tx: TxCounts,
    /// Operations whose user was still busy with the previous one when they were due.
    pub(crate) late: u64,
    /// Largest delay of an actual start behind its intended start.
    pub(crate) max_behind_us: u64,
    /// Scheduled operations never started because the group's time ran out.
    pub(crate) missed: u64,
    pub(crate) errors_by_class: BTreeMap<ErrorClass, u64>,
    /// Each kind of failure (class and server code) with its count and first message (bounded,
    /// see `MAX_FAILURE_KINDS`): a wrong update fails the same way on every document, and is
    /// one line, not one per document.
    pub(crate) failures: BTreeMap<FailureKind, Seen>,
    /// A group that mixes operations: the same per operation kind (and a group of steps: the
    /// time of each step, and a transaction's first attempt).
    pub(crate) kinds: BTreeMap<OpName, GroupMetrics>,
    /// Known once the run is over: the longest window without a success, and the
    /// acknowledged writes the audit found not kept.
    pub(crate) outage: Outage,
}

/// What is known of a group once its run is over (`unavailable_max`, `lost`); merged as the
/// longest window and the sum of writes lost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Outage {
    pub(crate) unavailable_max_us: u64,
    pub(crate) lost: u64,
    /// The run's largest replica-set lag, in seconds (the deployment's, the same for every
    /// group); none when no member's lag was measured.
    pub(crate) lag_max_s: Option<f64>,
}

/// Kinds of failure a group keeps at most.
const MAX_FAILURE_KINDS: usize = 50;

/// A kind of failure: its class and, when the server returned it, the server's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FailureKind {
    pub(crate) class: ErrorClass,
    pub(crate) code: Option<crate::vocab::ServerCode>,
}

/// How often a kind of failure was seen, and the message of the first one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub(crate) count: u64,
    pub(crate) message: String,
}

impl Seen {
    pub(crate) fn add(
        map: &mut BTreeMap<FailureKind, Seen>,
        kind: FailureKind,
        count: u64,
        message: &str,
    ) {
        if let Some(seen) = map.get_mut(&kind) {
            seen.count += count;
        } else if map.len() < MAX_FAILURE_KINDS {
            map.insert(
                kind,
                Seen {
                    count,
                    message: message.to_string(),
                },
            );
        }
    }
}

/// Documents operations moved: returned (read to the end of their cursors), inserted,
/// upserted, deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DocCounts {
    pub(crate) returned: u64,
    pub(crate) inserted: u64,
    /// Documents updates changed (their `modifiedCount`).
    pub(crate) updated: u64,
    pub(crate) upserted: u64,
    pub(crate) deleted: u64,
    /// What counts answered (countDocuments, estimatedDocumentCount): not documents moved,
    /// but what genny counts as a count's documents (`rollups.json`).
    #[serde(default)]
    pub(crate) counted: u64,
}

impl DocCounts {
    /// One operation's counts.
    pub(crate) fn add_op(&mut self, o: &super::sample::OpDocs) {
        self.returned += u64::from(o.returned);
        self.inserted += u64::from(o.inserted);
        self.updated += u64::from(o.updated);
        self.upserted += u64::from(o.upserted);
        self.deleted += u64::from(o.deleted);
        self.counted += u64::from(o.counted);
    }

    pub(crate) fn add(&mut self, o: &DocCounts) {
        self.returned += o.returned;
        self.inserted += o.inserted;
        self.updated += o.updated;
        self.upserted += o.upserted;
        self.deleted += o.deleted;
        self.counted += o.counted;
    }

    /// Every document read or written.
    pub(crate) fn moved(&self) -> u64 {
        self.returned + self.inserted + self.updated + self.upserted + self.deleted
    }
}

impl Default for GroupMetrics {
    fn default() -> Self {
        Self::with_timings(Timing::default(), Timing::default())
    }
}

impl GroupMetrics {
    /// Empty metrics around the given (empty) timings: histograms used again.
    pub(crate) fn with_timings(latency: Timing, service: Timing) -> Self {
        Self {
            latency,
            service,
            samples: 0,
            errors: 0,
            first_start_us: u64::MAX,
            last_end_us: 0,
            sent_bytes: 0,
            received_bytes: 0,
            matched: 0,
            modified: 0,
            docs: DocCounts::default(),
            tx: TxCounts::default(),
            late: 0,
            max_behind_us: 0,
            missed: 0,
            errors_by_class: BTreeMap::new(),
            failures: BTreeMap::new(),
            kinds: BTreeMap::new(),
            outage: Outage::default(),
        }
    }
}

/// The row of a transaction's first attempt (`transfer:first-attempt`): its latency before any
/// retry, beside the whole transaction's in the group's row.
pub(crate) const FIRST_ATTEMPT: &str = "first-attempt";

/// The kind a summary row's label names when it is one of group `group`'s kind rows
/// (`group:kind`, as the recorder labels a mix's kinds); None for any other row.
pub(crate) fn kind_row_of(label: &Label, group: &str) -> Option<OpName> {
    match label {
        Label::Kind { group: g, kind } if g.is(group) => Some(kind.clone()),
        _ => None,
    }
}

impl GroupMetrics {
    pub fn record(&mut self, s: &Sample) {
        self.record_with(s, &super::interval::Spares::default());
    }

    /// `record`, a kind's first sample of the interval taking its histograms from `spares`.
    pub(crate) fn record_with(&mut self, s: &Sample, spares: &super::interval::Spares) {
        let kind = |kinds: &mut BTreeMap<OpName, GroupMetrics>, name: &OpName| {
            if !kinds.contains_key(name) {
                let m = GroupMetrics::with_timings(spares.timing(), spares.timing());
                kinds.insert(name.clone(), m);
            }
        };
        if s.mixed {
            kind(&mut self.kinds, &s.op);
            if let Some(m) = self.kinds.get_mut(&s.op) {
                m.record_one(s);
            }
        }
        // Steps: each its own row's time (`group:step`), and a transaction's first attempt.
        if let Some(e) = &s.extra {
            for step in &e.steps {
                kind(&mut self.kinds, &step.name);
                if let Some(m) = self.kinds.get_mut(&step.name) {
                    m.record_latency(s.start_us, u64::from(step.us));
                    m.docs.add_op(&step.docs);
                    m.matched += u64::from(step.matched);
                    if let Some(e) = &step.error {
                        m.record_error(&e.0);
                    }
                }
            }
            if let Some(us) = e.first_attempt_us {
                let name = OpName::from(FIRST_ATTEMPT);
                kind(&mut self.kinds, &name);
                if let Some(m) = self.kinds.get_mut(&name) {
                    m.record_latency(s.start_us, u64::from(us));
                }
            }
        }
        self.record_one(s);
    }

    fn record_one(&mut self, s: &Sample) {
        self.record_timing(s.start_us, s.latency_us(), s.elapsed_us);
        self.max_behind_us = self.max_behind_us.max(s.behind_us());
        self.late += u64::from(s.late);
        self.sent_bytes += u64::from(s.sent);
        self.received_bytes += u64::from(s.received);
        self.matched += u64::from(s.matched);
        self.modified += u64::from(s.modified);
        self.docs.add_op(&s.docs);
        if let Some(t) = s.extra.as_ref().and_then(|e| e.tx.as_ref()) {
            self.tx.add_op(t);
        }
        if let Some(e) = &s.error {
            self.record_error(e);
        }
    }

    /// One failure: counted, by class, and by kind with its first message.
    fn record_error(&mut self, e: &OpError) {
        self.errors += 1;
        *self.errors_by_class.entry(e.class).or_default() += 1;
        let kind = FailureKind {
            class: e.class,
            code: e.code,
        };
        match self.failures.get_mut(&kind) {
            Some(seen) => seen.count += 1,
            None => Seen::add(&mut self.failures, kind, 1, &e.message.as_str()),
        }
    }

    /// A closed-loop sample's timing: latency and service time are the same.
    pub fn record_latency(&mut self, start_us: u64, elapsed_us: u64) {
        self.record_timing(start_us, elapsed_us, elapsed_us);
    }

    /// Counts one sample's timing (the part of `record` unit tests can drive directly).
    pub(crate) fn record_timing(&mut self, start_us: u64, latency_us: u64, service_us: u64) {
        self.latency.record(latency_us);
        self.service.record(service_us);
        self.samples += 1;
        self.first_start_us = self.first_start_us.min(start_us);
        self.last_end_us = self.last_end_us.max(start_us + service_us);
    }

    /// The group's own row alone (its kinds' rows left out): a steps group's whole operation.
    pub(crate) fn without_kinds(&self) -> GroupMetrics {
        let mut m = self.clone();
        m.kinds.clear();
        m
    }

    pub(crate) fn merge(&mut self, o: &GroupMetrics) {
        for (k, m) in &o.kinds {
            self.kinds.entry(k.clone()).or_default().merge(m);
        }
        self.missed += o.missed;
        self.outage.unavailable_max_us = self
            .outage
            .unavailable_max_us
            .max(o.outage.unavailable_max_us);
        self.outage.lost += o.outage.lost;
        self.outage.lag_max_s = match (self.outage.lag_max_s, o.outage.lag_max_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if o.samples == 0 {
            return;
        }
        self.latency.merge(&o.latency);
        self.service.merge(&o.service);
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
        for (c, n) in &o.errors_by_class {
            *self.errors_by_class.entry(*c).or_default() += n;
        }
        for (kind, seen) in &o.failures {
            Seen::add(&mut self.failures, *kind, seen.count, &seen.message);
        }
    }

    /// Group `name`'s metrics from a run's rows, with its kinds from the `name:kind` rows (so
    /// a threshold on one kind of a mixed group can be judged again); None without its row.
    pub(crate) fn from_rows(rows: &[Row], name: &str) -> Option<GroupMetrics> {
        let mut m = Self::from_row(rows.iter().find(|r| r.label == Label::group(name))?).ok()?;
        for r in rows {
            if let (Some(kind), Ok(km)) = (kind_row_of(&r.label, name), Self::from_row(r)) {
                m.kinds.insert(kind, km);
            }
        }
        Some(m)
    }

    /// The metrics a summary row was made from: its whole-run histograms, counts, span and
    /// bytes (errors by class and messages are the run's, merged beside it). `merge` of these
    /// equals recording every part's samples into one, so parts of a run merge exactly.
    pub(crate) fn from_row(r: &Row) -> Result<GroupMetrics, String> {
        let n = r.samples;
        let us = |ms: f64| whole(ms * 1000.0);
        let timing = |hdr: &str, average_ms: f64, min_us: u64, max_us: u64| {
            let hist = decode(hdr)?;
            let ours = new_histogram();
            if (hist.low(), hist.high(), hist.sigfig()) != (ours.low(), ours.high(), ours.sigfig())
            {
                return Err(format!(
                    "the histogram of `{}` has other bounds than mongo-stress writes",
                    r.label
                ));
            }
            if hist.len() != n {
                return Err(format!(
                    "the histogram of `{}` holds {} samples, its row {n}",
                    r.label,
                    hist.len()
                ));
            }
            Ok::<_, String>(Timing {
                hist,
                sum_us: u128::from(whole(average_ms * 1000.0 * real(n))),
                min_us,
                max_us,
            })
        };
        let latency_hdr = r
            .latency_hdr
            .as_deref()
            .ok_or_else(|| format!("the row `{}` has no histogram (latency_hdr)", r.label))?;
        let empty_min = if n == 0 { u64::MAX } else { us(r.min_ms) };
        let latency = timing(latency_hdr, r.average_ms, empty_min, us(r.max_ms))?;
        let service = match &r.service_hdr {
            Some(h) => {
                let mut t = timing(h, r.service_average_ms, u64::MAX, us(r.service_max_ms))?;
                t.min_us = if n == 0 { u64::MAX } else { t.hist.min() };
                t
            }
            None => latency.clone(),
        };
        Ok(GroupMetrics {
            latency,
            service,
            samples: n,
            errors: r.errors,
            first_start_us: if n == 0 { u64::MAX } else { r.first_start_us },
            last_end_us: r.last_end_us,
            sent_bytes: r.sent_bytes,
            received_bytes: r.received_bytes,
            matched: r.matched,
            modified: r.modified,
            tx: r.transactions.clone().unwrap_or_default(),
            docs: DocCounts {
                returned: r.returned,
                inserted: r.inserted,
                updated: r.updated,
                upserted: r.upserted,
                deleted: r.deleted,
                counted: 0,
            },
            late: r.late,
            max_behind_us: us(r.max_behind_ms),
            missed: r.missed,
            errors_by_class: BTreeMap::new(),
            failures: BTreeMap::new(),
            kinds: BTreeMap::new(),
            // Known only to the run itself (a merge has neither faults nor an audit).
            outage: Outage::default(),
        })
    }

    /// Seconds from the first start to the last end, as JMeter's Aggregate Report uses.
    pub(crate) fn span_secs(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            real(self.last_end_us.saturating_sub(self.first_start_us)) / 1e6
        }
    }

    /// The row with its whole histograms encoded (service time too when `service`).
    pub(crate) fn summary_row(&self, label: impl Into<Label>, service: bool) -> Row {
        Row {
            latency_hdr: Some(encode(&self.latency.hist)),
            service_hdr: service.then(|| encode(&self.service.hist)),
            ..self.row(label)
        }
    }

    pub(crate) fn row(&self, label: impl Into<Label>) -> Row {
        let ms = |us: u64| real(us) / 1000.0;
        let (l, sv) = (&self.latency, &self.service);
        let span = self.span_secs();
        let per_sec = |x: f64| if span > 0.0 { x / span } else { 0.0 };
        let n = self.samples;
        let empty = n == 0;
        Row {
            label: label.into(),
            samples: n,
            average_ms: l.average_ms(),
            median_ms: l.quantile_ms(0.50),
            p90_ms: l.quantile_ms(0.90),
            p95_ms: l.quantile_ms(0.95),
            p99_ms: l.quantile_ms(0.99),
            min_ms: if empty { 0.0 } else { ms(l.min_us) },
            max_ms: ms(l.max_us),
            error_pct: if empty {
                0.0
            } else {
                real(self.errors) * 100.0 / real(n)
            },
            throughput: per_sec(real(n)),
            received_kb_sec: per_sec(real(self.received_bytes) / 1024.0),
            sent_kb_sec: per_sec(real(self.sent_bytes) / 1024.0),
            p999_ms: l.quantile_ms(0.999),
            stddev_ms: if empty { 0.0 } else { l.hist.stdev() / 1000.0 },
            errors: self.errors,
            matched: self.matched,
            modified: self.modified,
            returned: self.docs.returned,
            inserted: self.docs.inserted,
            updated: self.docs.updated,
            upserted: self.docs.upserted,
            deleted: self.docs.deleted,
            docs_per_sec: per_sec(real(self.docs.moved())),
            transactions: self.tx.any().then(|| self.tx.clone()),
            service_average_ms: sv.average_ms(),
            service_median_ms: sv.quantile_ms(0.50),
            service_p90_ms: sv.quantile_ms(0.90),
            service_p99_ms: sv.quantile_ms(0.99),
            service_max_ms: ms(sv.max_us),
            late: self.late,
            max_behind_ms: ms(self.max_behind_us),
            missed: self.missed,
            first_start_us: if empty { 0 } else { self.first_start_us },
            last_end_us: self.last_end_us,
            sent_bytes: self.sent_bytes,
            received_bytes: self.received_bytes,
            latency_hdr: None,
            service_hdr: None,
        }
    }
}

/// HdrHistogram's percentile spectrum of a histogram of microseconds (5 ticks per half
/// distance): x = 1 / (1 - p), y = milliseconds, up to but not at p = 1.
pub(crate) fn spectrum(h: &Histogram<u64>) -> (Vec<f64>, Vec<f64>) {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for v in h.iter_quantiles(5) {
        let q = v.quantile_iterated_to();
        if q >= 1.0 {
            break;
        }
        x.push(1.0 / (1.0 - q));
        y.push(real(v.value_iterated_to()) / 1000.0);
    }
    (x, y)
}

#[cfg(test)]
mod tests;
