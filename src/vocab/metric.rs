//! The kinds of metric a threshold, an SLO or a comparison names (`p99`, `throughput`, `lost`).

/// What a metric measures (its value is read from a group's metrics in `metrics::metric`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MetricKind {
    Avg,
    Min,
    Max,
    Median,
    /// A percentile, 0 to 100 (`p99.9` is 99.9).
    Percentile(f64),
    Throughput,
    ErrorPct,
    Errors,
    Samples,
    /// The longest window with no successful operation (known after the run).
    UnavailableMax,
    /// Acknowledged writes the audit found not kept: lost, deleted and back, lost updates.
    Lost,
    /// The largest lag of a replica-set member behind its primary during the run (seconds;
    /// known after the run).
    LagMax,
}
