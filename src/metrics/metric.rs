//! The metrics a threshold names (`find.p99`, `TOTAL.error_pct`, `insert.svc_p99.9`), and each one's
//! value from a group's metrics: percentiles come from the histograms, never from rounded cells.

use super::group::{GroupMetrics, Timing};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MetricKind {
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
}

/// A metric of a group: a latency one (of service time when `service`), or a count or rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    pub kind: MetricKind,
    /// Service time (from the actual start) instead of latency; open loop.
    pub service: bool,
}

/// The metric names, for error messages.
pub const NAMES: &str = "avg, min, max, median, pNN or pNN.N (p50, p99, p99.9), throughput, error_pct, errors, samples, and svc_avg, svc_min, svc_max, svc_median, svc_pNN (service time, open loop)";

impl Metric {
    pub fn parse(name: &str) -> Option<Metric> {
        let (service, base) = match name.strip_prefix("svc_") {
            Some(b) => (true, b),
            None => (false, name),
        };
        let kind = match base {
            "avg" => MetricKind::Avg,
            "min" => MetricKind::Min,
            "max" => MetricKind::Max,
            "median" => MetricKind::Median,
            "throughput" => MetricKind::Throughput,
            "error_pct" => MetricKind::ErrorPct,
            "errors" => MetricKind::Errors,
            "samples" => MetricKind::Samples,
            p => {
                let n: f64 = p.strip_prefix('p')?.parse().ok()?;
                if !(n > 0.0 && n < 100.0) || p.contains(['e', 'E', '+', '-']) {
                    return None;
                }
                MetricKind::Percentile(n)
            }
        };
        (!service
            || matches!(
                kind,
                MetricKind::Avg
                    | MetricKind::Min
                    | MetricKind::Max
                    | MetricKind::Median
                    | MetricKind::Percentile(_)
            ))
        .then_some(Metric { kind, service })
    }

    /// A latency, in milliseconds (a threshold on it needs a time unit).
    pub fn is_time(&self) -> bool {
        matches!(
            self.kind,
            MetricKind::Avg
                | MetricKind::Min
                | MetricKind::Max
                | MetricKind::Median
                | MetricKind::Percentile(_)
        )
    }

    /// It grows with the load (a throughput or a count), so one part of a run in parts cannot
    /// judge a limit meant for the whole run: `merge` judges it.
    pub fn scales_with_load(&self) -> bool {
        matches!(
            self.kind,
            MetricKind::Throughput | MetricKind::Errors | MetricKind::Samples
        )
    }

    /// The unit its values are in.
    pub fn unit(&self) -> &'static str {
        match self.kind {
            MetricKind::Throughput => "/s",
            MetricKind::ErrorPct => "%",
            MetricKind::Errors | MetricKind::Samples => "",
            _ => "ms",
        }
    }

    /// Its value for `m`: milliseconds, operations per second, percent or a count.
    pub fn value(&self, m: &GroupMetrics) -> f64 {
        let t: &Timing = if self.service { &m.service } else { &m.latency };
        match self.kind {
            MetricKind::Avg => t.average_ms(),
            MetricKind::Min if m.samples == 0 => 0.0,
            MetricKind::Min => t.min_us as f64 / 1000.0,
            MetricKind::Max => t.max_us as f64 / 1000.0,
            MetricKind::Median => t.quantile_ms(0.5),
            MetricKind::Percentile(p) => t.quantile_ms(p / 100.0),
            MetricKind::Throughput => {
                let span = m.span_secs();
                if span > 0.0 {
                    m.samples as f64 / span
                } else {
                    0.0
                }
            }
            MetricKind::ErrorPct if m.samples == 0 => 0.0,
            MetricKind::ErrorPct => m.errors as f64 * 100.0 / m.samples as f64,
            MetricKind::Errors => m.errors as f64,
            MetricKind::Samples => m.samples as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Sample;

    #[test]
    fn names_parse_and_values_come_from_the_histograms() {
        assert_eq!(
            Metric::parse("p99.9"),
            Some(Metric {
                kind: MetricKind::Percentile(99.9),
                service: false
            })
        );
        assert!(Metric::parse("svc_p99").unwrap().service);
        for bad in ["p100", "p0", "svc_throughput", "p", "p9e1", "mean", "p-5"] {
            assert_eq!(Metric::parse(bad), None, "{bad}");
        }
        let mut m = GroupMetrics::default();
        for i in 1..=100u64 {
            m.record(&Sample::at(i * 1000, i * 1000));
        }
        let v = |n: &str| Metric::parse(n).unwrap().value(&m);
        assert_eq!(v("p99"), m.row("g").p99_ms);
        assert_eq!(
            v("median"),
            m.row("g").median_ms,
            "50 ms at 3 significant digits"
        );
        assert_eq!(
            (v("samples"), v("errors"), v("error_pct")),
            (100.0, 0.0, 0.0)
        );
        assert_eq!(v("max"), 100.0);
    }
}
