//! The exposition formats: Prometheus text (0.0.4) and OpenMetrics 1.0, from one list of
//! families.

use std::fmt::Write;

/// What a family is to Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One sample: the family's name plus `suffix` (`_total`, `_bucket`, ...), its labels, its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub(crate) suffix: &'static str,
    pub(crate) labels: Vec<(&'static str, String)>,
    pub(crate) value: f64,
}

/// A metric family: `name` without `_total` (counters get it as their samples' suffix).
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) kind: Kind,
    /// `seconds`, or empty.
    pub(crate) unit: &'static str,
    pub samples: Vec<Sample>,
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.is_nan() {
        "NaN".to_string()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        // A whole number below 10^15: exact as an i64.
        #[allow(clippy::cast_possible_truncation)]
        let whole = v as i64;
        format!("{whole}")
    } else {
        format!("{v}")
    }
}

fn sample_line(out: &mut String, name: &str, s: &Sample) {
    out.push_str(name);
    out.push_str(s.suffix);
    if !s.labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in s.labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", number(s.value));
}

/// Prometheus's text format 0.0.4.
pub fn prometheus(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            _ => f.name.to_string(),
        };
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# HELP {name} {}", f.help);
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in &f.samples {
            sample_line(&mut out, f.name, s);
        }
    }
    out
}

/// OpenMetrics 1.0 text, ending in `# EOF`.
pub fn openmetrics(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        if !f.unit.is_empty() {
            let _ = writeln!(out, "# UNIT {} {}", f.name, f.unit);
        }
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        for s in &f.samples {
            sample_line(&mut out, f.name, s);
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> Vec<Family> {
        vec![
            Family {
                name: "mongo_stress_operations",
                help: "Operations completed.",
                kind: Kind::Counter,
                unit: "",
                samples: vec![Sample {
                    suffix: "_total",
                    labels: vec![("group", "in\"s".into())],
                    value: 3.0,
                }],
            },
            Family {
                name: "mongo_stress_latency_seconds",
                help: "Latency.",
                kind: Kind::Histogram,
                unit: "seconds",
                samples: vec![
                    Sample {
                        suffix: "_bucket",
                        labels: vec![("le", "+Inf".into())],
                        value: 2.0,
                    },
                    Sample {
                        suffix: "_sum",
                        labels: vec![],
                        value: 0.25,
                    },
                ],
            },
        ]
    }

    #[test]
    fn both_formats_name_types_and_escape_labels() {
        let p = prometheus(&families());
        assert!(
            p.contains("# TYPE mongo_stress_operations_total counter\n"),
            "{p}"
        );
        assert!(
            p.contains("mongo_stress_operations_total{group=\"in\\\"s\"} 3\n"),
            "{p}"
        );
        assert!(
            p.contains("mongo_stress_latency_seconds_bucket{le=\"+Inf\"} 2\n"),
            "{p}"
        );
        assert!(p.contains("mongo_stress_latency_seconds_sum 0.25\n"), "{p}");
        let o = openmetrics(&families());
        assert!(
            o.contains("# TYPE mongo_stress_operations counter\n"),
            "{o}"
        );
        assert!(
            o.contains("# UNIT mongo_stress_latency_seconds seconds\n"),
            "{o}"
        );
        assert!(o.ends_with("# EOF\n"));
    }
}
