//! The metrics a threshold names (`find.p99`, `TOTAL.error_pct`, `insert.svc_p99.9`), and each one's
//! value from a group's metrics: percentiles come from the histograms, never from rounded cells.

use super::group::GroupMetrics;
use super::real;
use super::timing::Timing;
use crate::vocab::Compared;

pub(crate) use crate::vocab::MetricKind;

/// A metric of a group: a latency one (of service time when `service`), or a count or rate.
/// Written in files as its name (`p99.9`, `svc_median`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub(crate) struct Metric {
    pub(crate) kind: MetricKind,
    /// Service time (from the actual start) instead of latency; open loop.
    pub(crate) service: bool,
}

/// The metric names, for error messages.
pub(crate) const NAMES: &str = "avg, min, max, median, pNN or pNN.N (p50, p99, p99.9), throughput, error_pct, errors, samples, unavailable_max (the longest window without a success), lost (acknowledged writes the audit found not kept), lag_max (the largest replica-set lag), and svc_avg, svc_min, svc_max, svc_median, svc_pNN (service time, open loop)";

impl Metric {
    /// `GROUP.METRIC` split at the dot after which a metric name stands (a group's name may
    /// hold dots: `v1.2.p99.9` is group `v1.2`, metric `p99.9`).
    pub(crate) fn split_key(key: &str) -> Option<(&str, &str, Metric)> {
        key.match_indices('.')
            .map(|(i, _)| (&key[..i], &key[i + 1..]))
            .find_map(|(label, name)| Metric::parse(name).map(|m| (label, name, m)))
    }

    /// The metric `compare` has for it (`median` is `p50` there), when it has one.
    pub(crate) fn compared(&self) -> Option<Compared> {
        if self.service {
            return None;
        }
        Some(match self.kind {
            MetricKind::Samples => Compared::Samples,
            MetricKind::Throughput => Compared::Throughput,
            MetricKind::Avg => Compared::Avg,
            MetricKind::Median => Compared::P50,
            MetricKind::Max => Compared::Max,
            MetricKind::ErrorPct => Compared::ErrorPct,
            MetricKind::Percentile(p) => {
                let name = format!("p{p}");
                return Compared::RUN.into_iter().find(|c| c.name() == name);
            }
            MetricKind::Min
            | MetricKind::Errors
            | MetricKind::UnavailableMax
            | MetricKind::Lost
            | MetricKind::LagMax => return None,
        })
    }

    pub(crate) fn parse(name: &str) -> Option<Metric> {
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
            "unavailable_max" => MetricKind::UnavailableMax,
            "lost" => MetricKind::Lost,
            "lag_max" => MetricKind::LagMax,
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

    /// Its name, as `parse` reads it.
    pub(crate) fn name(&self) -> String {
        let base = match self.kind {
            MetricKind::Avg => "avg".to_string(),
            MetricKind::Min => "min".to_string(),
            MetricKind::Max => "max".to_string(),
            MetricKind::Median => "median".to_string(),
            MetricKind::Percentile(p) => format!("p{p}"),
            MetricKind::Throughput => "throughput".to_string(),
            MetricKind::ErrorPct => "error_pct".to_string(),
            MetricKind::Errors => "errors".to_string(),
            MetricKind::Samples => "samples".to_string(),
            MetricKind::UnavailableMax => "unavailable_max".to_string(),
            MetricKind::Lost => "lost".to_string(),
            MetricKind::LagMax => "lag_max".to_string(),
        };
        if self.service {
            format!("svc_{base}")
        } else {
            base
        }
    }

    /// A latency, in milliseconds (a threshold on it needs a time unit).
    pub(crate) fn is_time(&self) -> bool {
        matches!(
            self.kind,
            MetricKind::Avg
                | MetricKind::Min
                | MetricKind::Max
                | MetricKind::Median
                | MetricKind::Percentile(_)
                | MetricKind::UnavailableMax
                | MetricKind::LagMax
        )
    }

    /// It grows with the load (a throughput or a count), so one part of a run in parts cannot
    /// judge a limit meant for the whole run: `merge` judges it.
    pub(crate) fn scales_with_load(&self) -> bool {
        matches!(
            self.kind,
            MetricKind::Throughput | MetricKind::Errors | MetricKind::Samples
        )
    }

    /// The unit its values are in.
    pub(crate) fn unit(&self) -> &'static str {
        match self.kind {
            MetricKind::Throughput => "/s",
            MetricKind::ErrorPct => "%",
            MetricKind::Errors | MetricKind::Samples | MetricKind::Lost => "",
            _ => "ms",
        }
    }

    /// Its value for `m`: milliseconds, operations per second, percent or a count.
    pub(crate) fn value(&self, m: &GroupMetrics) -> f64 {
        let t: &Timing = if self.service { &m.service } else { &m.latency };
        match self.kind {
            MetricKind::Avg => t.average_ms(),
            MetricKind::Min if m.samples == 0 => 0.0,
            MetricKind::Min => real(t.min_us) / 1000.0,
            MetricKind::Max => real(t.max_us) / 1000.0,
            MetricKind::Median => t.quantile_ms(0.5),
            MetricKind::Percentile(p) => t.quantile_ms(p / 100.0),
            MetricKind::Throughput => {
                let span = m.span_secs();
                if span > 0.0 {
                    real(m.samples) / span
                } else {
                    0.0
                }
            }
            MetricKind::ErrorPct if m.samples == 0 => 0.0,
            MetricKind::ErrorPct => real(m.errors) * 100.0 / real(m.samples),
            MetricKind::Errors => real(m.errors),
            MetricKind::Samples => real(m.samples),
            MetricKind::UnavailableMax => real(m.outage.unavailable_max_us) / 1000.0,
            MetricKind::Lost => real(m.outage.lost),
            // Not measured: no lag to hold against the limit (a warning says why).
            MetricKind::LagMax => m.outage.lag_max_s.map_or(0.0, |s| s * 1000.0),
        }
    }
}

impl From<Metric> for String {
    fn from(m: Metric) -> String {
        m.name()
    }
}

impl TryFrom<String> for Metric {
    type Error = String;
    fn try_from(s: String) -> Result<Metric, String> {
        Metric::parse(&s).ok_or_else(|| format!("`{s}` is not a metric; metrics are: {NAMES}"))
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
        // Known once the run is over: the longest window (ms, a time) and the writes lost.
        m.outage.unavailable_max_us = 3_250_000;
        m.outage.lost = 7;
        let v = |name: &str| Metric::parse(name).unwrap().value(&m);
        assert_eq!((v("unavailable_max"), v("lost")), (3250.0, 7.0));
        assert!(Metric::parse("unavailable_max").unwrap().is_time());
        assert!(!Metric::parse("lost").unwrap().is_time());
        assert_eq!(Metric::parse("svc_lost"), None);
    }

    #[test]
    fn keys_split_at_the_metric_and_compare_names_median_p50() {
        let (label, name, m) = Metric::split_key("v1.2.p99.9").unwrap();
        assert_eq!((label, name), ("v1.2", "p99.9"));
        assert_eq!(m.compared(), Some(Compared::P999));
        assert_eq!(
            Metric::parse("median").unwrap().compared(),
            Some(Compared::P50)
        );
        assert_eq!(
            Metric::parse("p50").unwrap().compared(),
            Some(Compared::P50)
        );
        assert_eq!(Metric::parse("p95").unwrap().compared(), None);
        assert_eq!(Metric::parse("svc_p99").unwrap().compared(), None);
        for n in ["p99.9", "svc_median", "p50", "error_pct", "svc_p99"] {
            assert_eq!(Metric::parse(n).unwrap().name(), n);
        }
        for c in Compared::RUN {
            assert_eq!(Metric::parse(c.name()).and_then(|m| m.compared()), Some(c));
        }
        assert!(Metric::split_key("find").is_none());
    }
}
