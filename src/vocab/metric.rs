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

/// A metric `compare` sets side by side: each row's own (`Compared::RUN`, in column order; a
/// gate and a relative threshold name one of these, or `median` for p50) and those compared
/// where either run has them (`Compared::EXTRA`). Written in files as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(into = "&'static str")]
pub enum Compared {
    Samples,
    Throughput,
    Avg,
    P50,
    P90,
    P99,
    P999,
    Max,
    ErrorPct,
    /// Documents per second (the profile's own operations).
    DocsPerSec,
    /// Retries per transaction.
    RetriesPerTx,
    /// Acknowledged writes the audit found not kept.
    Lost,
    /// The longest window without a success, in seconds.
    UnavailableMax,
}

impl Compared {
    /// Every row's metrics, in column order.
    pub const RUN: [Compared; 9] = [
        Compared::Samples,
        Compared::Throughput,
        Compared::Avg,
        Compared::P50,
        Compared::P90,
        Compared::P99,
        Compared::P999,
        Compared::Max,
        Compared::ErrorPct,
    ];

    /// Compared besides `RUN` where either run has them: documents per second, retries per
    /// transaction, acknowledged writes not kept (`lost`) and the longest window without a
    /// success (`unavailable_max`).
    pub const EXTRA: [Compared; 4] = [
        Compared::DocsPerSec,
        Compared::RetriesPerTx,
        Compared::Lost,
        Compared::UnavailableMax,
    ];

    /// Its one written form.
    pub fn name(self) -> &'static str {
        match self {
            Compared::Samples => "samples",
            Compared::Throughput => "throughput",
            Compared::Avg => "avg",
            Compared::P50 => "p50",
            Compared::P90 => "p90",
            Compared::P99 => "p99",
            Compared::P999 => "p99.9",
            Compared::Max => "max",
            Compared::ErrorPct => "error_pct",
            Compared::DocsPerSec => "docs_per_sec",
            Compared::RetriesPerTx => "retries_per_tx",
            Compared::Lost => "lost",
            Compared::UnavailableMax => "unavailable_max",
        }
    }

    /// The metric of this written form, if `compare` has one.
    #[cfg(test)]
    pub(crate) fn from_name(name: &str) -> Option<Compared> {
        Compared::RUN
            .into_iter()
            .chain(Compared::EXTRA)
            .find(|c| c.name() == name)
    }

    /// Is the higher value the better one (throughput and documents per second)?
    pub(crate) fn higher_is_better(self) -> bool {
        matches!(self, Compared::Throughput | Compared::DocsPerSec)
    }

    /// `samples, throughput, ...`: the row metrics, for messages.
    pub(crate) fn listed() -> String {
        Compared::RUN.map(Compared::name).join(", ")
    }
}

impl From<Compared> for &'static str {
    fn from(c: Compared) -> &'static str {
        c.name()
    }
}

impl std::fmt::Display for Compared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq<&str> for Compared {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}
