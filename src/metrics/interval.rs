//! Interval histograms: what the recorder hands to the interval log (`latency.hlog`) at the end
//! of each `--hdr-interval`, and the tags that name them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::timing::Timing;
use super::Label;

/// Histograms an interval is done with (written to the interval log, or not logged), back for
/// the recorder to empty and use again instead of allocating new ones (about 184 KiB each).
/// `Spares::default()` keeps none (a merge's interval log, whose histograms are not reused).
#[derive(Debug, Clone, Default)]
pub struct Spares(Option<Arc<Mutex<Vec<Histogram<u64>>>>>);

/// Most histograms kept for use again.
const MAX_SPARES: usize = 256;

impl Spares {
    /// A pool that keeps what it is given.
    pub(crate) fn keeping() -> Self {
        Spares(Some(Default::default()))
    }

    pub(crate) fn give(&self, h: Histogram<u64>) {
        if let Some(pool) = &self.0 {
            let mut spares = pool.lock().unwrap_or_else(|e| e.into_inner());
            if spares.len() < MAX_SPARES {
                spares.push(h);
            }
        }
    }

    /// An empty timing: a spare histogram emptied, or a new one.
    pub(crate) fn timing(&self) -> Timing {
        let spare = self
            .0
            .as_ref()
            .and_then(|pool| pool.lock().unwrap_or_else(|e| e.into_inner()).pop());
        spare.map_or_else(Timing::default, Timing::with)
    }

    /// Histograms kept now.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |pool| {
            pool.lock().unwrap_or_else(|e| e.into_inner()).len()
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One interval: a histogram per series that had operations, and what each group did.
#[derive(Debug, Clone)]
pub struct IntervalBatch {
    /// Start of the interval, microseconds since the Unix epoch.
    pub start_epoch_us: u64,
    pub duration: Duration,
    pub hists: Vec<IntervalHist>,
    pub activity: Vec<Activity>,
    /// Where the histograms go once written.
    pub spares: Spares,
}

impl IntervalBatch {
    /// Nothing ran and no user was running: nothing to log or show.
    pub fn is_empty(&self) -> bool {
        self.hists.is_empty() && self.activity.is_empty()
    }

    /// The histograms back to the spares, to be emptied and used again, by the last holder of
    /// the interval (the recorder, or the interval log's writer once it has written them).
    pub fn give_back(batch: std::sync::Arc<IntervalBatch>) {
        if let Some(batch) = std::sync::Arc::into_inner(batch) {
            for h in batch.hists {
                batch.spares.give(h.hist);
            }
        }
    }
}

/// One interval's histogram of one series.
#[derive(Debug, Clone)]
pub struct IntervalHist {
    /// `insert`, `TOTAL`, `svc:insert`, `warmup:insert`, ...
    pub tag: Tag,
    pub hist: Histogram<u64>,
}

/// A group in an interval: virtual users running at its end, and failed operations in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    /// The group's latency tag.
    pub tag: Tag,
    pub users: u32,
    pub errors: u64,
}

/// Which histogram of a group an interval log line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Series {
    /// Latency as the summary counts it.
    Latency,
    /// Service time (open loop only): from the actual start.
    Service,
}

/// The interval log's name of one series: a row's latency or service time, counted or in the
/// warm-up. Written as `[warmup:][svc:]LABEL`; HdrHistogram tags cannot hold a space or a
/// comma, so those become `_` in the label (the plan refuses two groups that would then share
/// a tag, so a tag's text names one series).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag {
    pub(crate) label: Label,
    pub(crate) series: Series,
    pub(crate) warmup: bool,
}

impl Tag {
    pub fn new(label: Label, series: Series, warmup: bool) -> Tag {
        Tag {
            label,
            series,
            warmup,
        }
    }

    /// A tag as an interval log holds it (read back to be written again, as `merge` does):
    /// its text is written back unchanged.
    pub(crate) fn parse(text: &str) -> Tag {
        let (warmup, rest) = match text.strip_prefix("warmup:") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (series, rest) = match rest.strip_prefix("svc:") {
            Some(rest) => (Series::Service, rest),
            None => (Series::Latency, rest),
        };
        Tag::new(Label::parse(rest), series, warmup)
    }

    /// A row's latency as the summary counts it.
    pub fn latency(label: Label) -> Tag {
        Tag::new(label, Series::Latency, false)
    }
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.warmup {
            f.write_str("warmup:")?;
        }
        if self.series == Series::Service {
            f.write_str("svc:")?;
        }
        let clean: String = self
            .label
            .to_string()
            .chars()
            .map(|c| if c == ' ' || c == ',' { '_' } else { c })
            .collect();
        f.write_str(&clean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_what_hdrhistogram_accepts() {
        let tag =
            |name: &str, series, warmup| Tag::new(Label::group(name), series, warmup).to_string();
        assert_eq!(tag("insert", Series::Latency, false), "insert");
        assert_eq!(tag("my group,1", Series::Service, false), "svc:my_group_1");
        assert_eq!(tag("find", Series::Service, true), "warmup:svc:find");
        assert_eq!(Tag::latency(Label::Total).to_string(), "TOTAL");
        assert_eq!(Tag::latency(Label::kind("g", "get")).to_string(), "g:get");
        for text in [
            "g",
            "TOTAL",
            "svc:TOTAL",
            "warmup:svc:g:get",
            "run@500/s",
            "a_b",
            "g:",
        ] {
            assert_eq!(Tag::parse(text).to_string(), text, "{text} read back");
        }
        let t = tag("a b,c", Series::Latency, true);
        assert!(hdrhistogram::serialization::interval_log::Tag::new(&t).is_some());
    }
}
