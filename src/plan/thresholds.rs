//! Thresholds: `"find.p99" = "< 50ms"` in `[thresholds]`, `--threshold 'find.p99<50ms'` on the
//! command line, or `{ limit = "< 200ms", abort = true, after = "10s" }` to stop a run as soon as
//! one fails. A threshold names a group (or `TOTAL`), a metric, a comparison and a limit with its
//! unit; it is checked once, here, against the plan's groups.

use std::time::Duration;

use crate::metrics::{Label, Metric};

/// Written in files as its symbol (`<`, `<=`, `>`, `>=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Cmp {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Cmp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    pub(crate) fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Cmp::Lt => value < limit,
            Cmp::Le => value <= limit,
            Cmp::Gt => value > limit,
            Cmp::Ge => value >= limit,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThresholdPlan {
    /// As the summary shows it: `find.p99 < 50ms`.
    pub(crate) text: String,
    /// The row it is judged on: a group's, one kind of a mixed group's, or `TOTAL`.
    pub(crate) label: Label,
    /// The group's index; None for TOTAL.
    pub(crate) group: Option<usize>,
    /// For TOTAL: the groups that stand beside it, left out (watch groups' events).
    pub(crate) beside: Vec<usize>,
    /// One operation kind of a mixed group (`ycsb:get.p99`): that kind's row.
    pub(crate) kind: Option<crate::workload::op::OpName>,
    pub(crate) metric: Metric,
    pub(crate) cmp: Cmp,
    /// In the metric's unit (ms for latencies).
    pub(crate) limit: f64,
    /// Checked on the interval histograms as the run goes; a failure stops the run.
    pub(crate) abort: bool,
    /// With `abort`: not before this long after the run's start.
    pub(crate) after: Duration,
    /// A change against the `--baseline` run, in percent (`<= +10%`), judged with `compare`;
    /// `limit` is then that percentage and `compared` the metric's name there.
    pub(crate) relative: Option<crate::vocab::Compared>,
}

/// What a threshold may be written as, for error messages.
pub(crate) const GRAMMAR: &str = "\"GROUP.METRIC\" = \"< LIMIT\" (or <=, >, >=), GROUP a group's name, GROUP:KIND one kind of a mixed group (ycsb:get), or TOTAL; latencies need a unit (us, ms, s), e.g. \"find.p99\" = \"< 50ms\", \"insert.throughput\" = \"> 5000\", \"TOTAL.error_pct\" = \"< 0.1\", or { limit = \"< 200ms\", abort = true, after = \"10s\" }";

impl ThresholdPlan {
    /// `key` as `GROUP.METRIC`, `limit` as `< 50ms`; `groups` are the plan's names by index.
    pub(crate) fn parse(
        key: &str,
        limit: &str,
        abort: bool,
        after: Duration,
        groups: &[String],
    ) -> Result<ThresholdPlan, String> {
        // A group's name may hold dots: the metric is what follows the last dot that leaves a
        // metric name, trying from the left.
        let Some((label, metric_name, metric)) = Metric::split_key(key) else {
            return Err(format!(
                "`{key}` names no metric; metrics are: {}",
                crate::metrics::metric::NAMES
            ));
        };
        let (row, group, kind) = row_of(label, groups)?;
        let text = limit.trim();
        let (cmp, rest) = [
            ("<=", Cmp::Le),
            (">=", Cmp::Ge),
            ("<", Cmp::Lt),
            (">", Cmp::Gt),
        ]
        .iter()
        .find_map(|(s, c)| text.strip_prefix(s).map(|r| (*c, r.trim())))
        .ok_or_else(|| format!("`{limit}` does not start with <, <=, > or >="))?;
        if (rest.starts_with('+') || rest.starts_with('-')) && rest.ends_with('%') {
            // A change against the --baseline run, judged as `compare` judges it.
            let Some(compared) = metric.compared() else {
                return Err(format!(
                    "a change in percent works on {} (median is p50); not on `{metric_name}`",
                    crate::vocab::Compared::listed()
                ));
            };
            if abort {
                return Err(
                    "a change against a baseline is judged after the run: abort does not apply"
                        .into(),
                );
            }
            let pct: f64 = rest
                .trim_end_matches('%')
                .parse()
                .map_err(|_| format!("`{limit}` is not a change in percent such as +10%"))?;
            return Ok(ThresholdPlan {
                beside: Vec::new(),
                text: format!("{label}.{metric_name} {} {rest}", cmp.symbol()),
                label: row.clone(),
                group,
                kind,
                metric,
                cmp,
                limit: pct,
                abort,
                after,
                relative: Some(compared),
            });
        }
        let limit_value = limit_value(limit, rest, cmp, metric, metric_name)?;
        Ok(ThresholdPlan {
            beside: Vec::new(),
            text: format!("{label}.{metric_name} {} {}", cmp.symbol(), rest),
            label: row,
            group,
            kind,
            metric,
            cmp,
            limit: limit_value,
            abort,
            after,
            relative: None,
        })
    }

    /// `--threshold 'find.p99<50ms'`: the key, then the comparison.
    pub(crate) fn parse_cli(expr: &str, groups: &[String]) -> Result<ThresholdPlan, String> {
        let at = expr
            .find(['<', '>'])
            .ok_or_else(|| format!("`{expr}` has no comparison; write e.g. find.p99<50ms"))?;
        Self::parse(
            expr[..at].trim(),
            &expr[at..],
            false,
            Duration::ZERO,
            groups,
        )
    }
}

/// The row a threshold names (a group's, `group:kind` for one kind of a mixed group, or
/// TOTAL), its group's index among `groups` and its kind.
fn row_of(
    label: &str,
    groups: &[String],
) -> Result<(Label, Option<usize>, Option<crate::workload::op::OpName>), String> {
    let row = Label::parse(label);
    let (group_name, kind) = match &row {
        Label::Total => ("TOTAL".to_string(), None),
        Label::Kind { group, kind } => (group.to_string(), Some(kind.clone())),
        Label::Group(g) if g.name.contains(':') => {
            let k = g.name.rsplit_once(':').map_or("", |(_, k)| k);
            return Err(format!(
                "`{label}`: `{k}` is not an operation kind; a mixed group's row is GROUP:KIND with KIND one of {}",
                crate::workload::OpKind::listed()
            ));
        }
        Label::Group(_) | Label::Stage(_) => (label.to_string(), None),
    };
    let group = if row == Label::Total {
        None
    } else {
        Some(groups.iter().position(|g| *g == group_name).ok_or_else(|| {
            format!(
                "`{group_name}` is not a group of this profile; thresholds name one of: {}, TOTAL (or GROUP:KIND for a kind of a mixed group)",
                groups.join(", ")
            )
        })?)
    };
    Ok((row, group, kind))
}

/// The limit of an absolute threshold (`rest`, after its comparison) in its metric's unit:
/// milliseconds for a time, else the metric's own.
fn limit_value(
    limit: &str,
    rest: &str,
    cmp: Cmp,
    metric: Metric,
    metric_name: &str,
) -> Result<f64, String> {
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, unit) = rest.split_at(number_end);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{limit}` has no number after {}", cmp.symbol()))?;
    let unit = unit.trim();
    let limit_value = if metric.is_time() {
        match unit {
            "us" | "µs" => value / 1000.0,
            "ms" => value,
            "s" => value * 1000.0,
            "" => {
                return Err(format!(
                    "`{limit}` needs a unit for a latency: us, ms or s (e.g. < 50ms)"
                ))
            }
            u => return Err(format!("`{u}` is not a time unit; use us, ms or s")),
        }
    } else {
        match (metric.unit(), unit) {
            (_, "") => value,
            ("%", "%") | ("/s", "/s") => value,
            (want, u) => {
                return Err(format!(
                    "`{u}` is not the unit of {metric_name} ({})",
                    if want.is_empty() {
                        "a count, no unit"
                    } else {
                        want
                    }
                ))
            }
        }
    };
    Ok(limit_value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> Vec<String> {
        vec!["find".into(), "v1.2".into()]
    }

    #[test]
    fn limits_carry_their_units_and_groups_are_checked() {
        let t =
            ThresholdPlan::parse("find.p99", "< 50ms", false, Duration::ZERO, &groups()).unwrap();
        assert_eq!((t.group, t.limit, t.cmp), (Some(0), 50.0, Cmp::Lt));
        let t = ThresholdPlan::parse_cli("find.p99.9<=200us", &groups()).unwrap();
        assert_eq!((t.limit, t.cmp), (0.2, Cmp::Le));
        let t = ThresholdPlan::parse_cli("v1.2.throughput>5000", &groups()).unwrap();
        assert_eq!((t.group, t.limit), (Some(1), 5000.0));
        let t = ThresholdPlan::parse_cli("TOTAL.error_pct < 0.1%", &groups()).unwrap();
        assert_eq!((t.group, t.limit), (None, 0.1));
        let e = ThresholdPlan::parse_cli("find.p99<50", &groups()).unwrap_err();
        assert!(e.contains("needs a unit"), "{e}");
        let e = ThresholdPlan::parse_cli("insert.p99<50ms", &groups()).unwrap_err();
        assert!(e.contains("find, v1.2, TOTAL"), "{e}");
        let e = ThresholdPlan::parse_cli("find.p42x<1ms", &groups()).unwrap_err();
        assert!(e.contains("svc_avg"), "{e}");
        let t = ThresholdPlan::parse_cli("find.median <= +10%", &groups()).unwrap();
        assert_eq!(
            (t.relative, t.limit),
            (Some(crate::vocab::Compared::P50), 10.0)
        );
        let e = ThresholdPlan::parse_cli("find.svc_p99 <= +10%", &groups()).unwrap_err();
        assert!(e.contains("change in percent works on"), "{e}");
    }

    #[test]
    fn a_kind_of_a_mixed_group_is_named_group_colon_kind() {
        let groups = vec!["ab".to_string(), "ins".to_string()];
        let t = ThresholdPlan::parse_cli("ab:get.p99 < 5ms", &groups).unwrap();
        assert_eq!(
            (t.group, t.kind),
            (Some(0), Some(crate::workload::OpKind::Get.into()))
        );
        assert_eq!(t.text, "ab:get.p99 < 5ms");
        let t = ThresholdPlan::parse_cli("ab.p99 < 5ms", &groups).unwrap();
        assert_eq!((t.group, t.kind), (Some(0), None));
        // Whether `fetch` is one of the group's operations is the plan's check (it knows them).
        let t = ThresholdPlan::parse_cli("ab:fetch.p99 < 5ms", &groups).unwrap();
        assert_eq!(t.kind, Some("fetch".into()));
        let e = ThresholdPlan::parse_cli("zz:get.p99 < 5ms", &groups).unwrap_err();
        assert!(e.contains("`zz` is not a group"), "{e}");
    }
}
