//! Measurements: the `Sample` each operation yields, the `recorder` that consumes them, and the
//! per-group HdrHistograms and counters (`group`) that become summary `Row`s.
//!
//! Owns: the one place percentiles are computed. Never: formats text for people, writes files,
//! or decides when a run stops (a `Watch` from the executor does).

pub mod availability;
pub mod clock;
pub mod group;
pub mod interval;
pub mod label;
pub mod metric;
pub mod recorder;
pub mod row;
pub mod sample;

pub use clock::Clock;
pub use group::{decode, encode, new_histogram, GroupMetrics, Timing};
pub use interval::{Activity, IntervalBatch, IntervalHist, Series};
pub use label::Label;
pub use metric::{Metric, MetricKind};
pub use recorder::{panic_message, IntervalCheck, IntervalSink, Recorded, Recorder, Watch};
pub use row::Row;
pub use sample::{ErrorClass, Logged, OpError, Sample};
