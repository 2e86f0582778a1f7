//! Measurements: the `Sample` each operation yields, the `recorder` that consumes them, and the
//! per-group HdrHistograms and counters (`group`) that become summary `Row`s.
//!
//! Owns: the one place percentiles are computed. Never: formats text for people, writes files,
//! or decides when a run stops (a `Watch` from the executor does).

pub(crate) mod availability;
pub(crate) mod clock;
pub(crate) mod group;
pub mod interval;
pub(crate) use crate::vocab::label;
pub(crate) mod metric;
pub mod output;
pub(crate) mod recorder;
pub(crate) mod row;
pub mod sample;
pub(crate) mod tally;
pub(crate) mod timing;

pub use clock::Clock;
pub use group::{FailureKind, GroupMetrics, Seen};
pub use interval::{Activity, IntervalBatch, IntervalHist, Series};
pub use label::Label;
pub(crate) use metric::{Metric, MetricKind};
pub use output::{Closed, Flow, Notice, Notify, Output, RunEvent, Segment, Split, Window};
pub use recorder::{panic_message, Recorded, Recorder, Steering, Watch};
pub(crate) use row::Row;
pub use sample::{ErrorClass, Logged, OpError, Sample, StepSample};
pub use timing::{decode, encode, new_histogram, Timing};

pub(crate) use crate::num::{real, real_len, whole};
