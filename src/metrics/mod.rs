//! Measurements: the `Sample` each operation yields, the `recorder` that consumes them, and the
//! per-group HdrHistograms and counters (`group`) that become summary `Row`s.
//!
//! Owns: the one place percentiles are computed. Never: formats text for people, writes files,
//! or decides when a run stops (a `Watch` from the executor does).

// Every numeric cast says why it is safe: a cast that truncates, wraps or loses precision is
// refused here unless allowed where it is, with the reason (`real` and `whole` below).
#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::cast_lossless
)]

pub(crate) mod availability;
pub(crate) mod clock;
pub(crate) mod group;
pub mod interval;
pub(crate) use crate::vocab::label;
pub(crate) mod metric;
pub(crate) mod recorder;
pub(crate) mod row;
pub mod sample;

pub use clock::Clock;
pub use group::{decode, encode, new_histogram, FailureKind, GroupMetrics, Seen, Timing};
pub use interval::{Activity, IntervalBatch, IntervalHist, Series};
pub use label::Label;
pub(crate) use metric::{Metric, MetricKind};
pub use recorder::{
    panic_message, IntervalCheck, IntervalSink, IntervalView, Recorded, Recorder, Segment, Split,
    Steering, Watch,
};
pub(crate) use row::Row;
pub use sample::{ErrorClass, Logged, OpError, Sample};

/// A count or a number of microseconds as a double, for averages, rates and milliseconds: exact
/// below 2^53 (285 years of microseconds), the nearest double beyond, which is all a rate needs.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn real(n: u64) -> f64 {
    n as f64
}

/// A length as a double (see `real`).
pub(crate) fn real_len(n: usize) -> f64 {
    real(u64::try_from(n).unwrap_or(u64::MAX))
}

/// A non-negative number of microseconds (or a count) read back as a double: rounded to the
/// nearest whole one, 0 below 0 or when not a number, `u64::MAX` beyond it.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(crate) fn whole(x: f64) -> u64 {
    // `as` from a float saturates (and maps NaN to 0), which is what is said above.
    x.round() as u64
}
