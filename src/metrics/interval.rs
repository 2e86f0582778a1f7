//! Interval histograms: what the recorder hands to the interval log (`latency.hlog`) at the end
//! of each `--hdr-interval`, and the tags that name them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::group::Timing;

/// Histograms an interval is done with (written to the interval log, or not logged), back for
/// the recorder to empty and use again instead of allocating new ones (about 184 KiB each).
/// `Spares::default()` keeps none (a merge's interval log, whose histograms are not reused).
#[derive(Debug, Clone, Default)]
pub struct Spares(Option<Arc<Mutex<Vec<Histogram<u64>>>>>);

/// Most histograms kept for use again.
const MAX_SPARES: usize = 256;

impl Spares {
    /// A pool that keeps what it is given.
    pub fn keeping() -> Self {
        Spares(Some(Default::default()))
    }

    pub fn give(&self, h: Histogram<u64>) {
        if let Some(pool) = &self.0 {
            let mut spares = pool.lock().unwrap_or_else(|e| e.into_inner());
            if spares.len() < MAX_SPARES {
                spares.push(h);
            }
        }
    }

    /// An empty timing: a spare histogram emptied, or a new one.
    pub fn timing(&self) -> Timing {
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

/// One interval's histogram of one series.
#[derive(Debug, Clone)]
pub struct IntervalHist {
    /// `insert`, `TOTAL`, `svc:insert`, `warmup:insert`, ... (see `tag`).
    pub tag: String,
    pub hist: Histogram<u64>,
}

/// A group in an interval: virtual users running at its end, and failed operations in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    /// The group's latency tag.
    pub tag: String,
    pub users: u32,
    pub errors: u64,
}

/// Which histogram of a group an interval log line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Series {
    /// Latency as the summary counts it.
    Latency,
    /// Service time (open loop only): from the actual start.
    Service,
}

/// The interval log tag of a group's (or `TOTAL`'s) series. HdrHistogram tags cannot hold a
/// space or a comma, so those become `_` in a group's name.
pub fn tag(name: &str, series: Series, warmup: bool) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c == ' ' || c == ',' { '_' } else { c })
        .collect();
    let svc = match series {
        Series::Latency => "",
        Series::Service => "svc:",
    };
    let phase = if warmup { "warmup:" } else { "" };
    format!("{phase}{svc}{clean}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_what_hdrhistogram_accepts() {
        assert_eq!(tag("insert", Series::Latency, false), "insert");
        assert_eq!(tag("my group,1", Series::Service, false), "svc:my_group_1");
        assert_eq!(tag("find", Series::Service, true), "warmup:svc:find");
        let t = tag("a b,c", Series::Latency, true);
        assert!(hdrhistogram::serialization::interval_log::Tag::new(&t).is_some());
    }
}
