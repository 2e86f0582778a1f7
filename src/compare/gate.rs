//! Regression gates: `--fail-if 'find.p99 > +10%'` fails when the change of that cell exceeds
//! the limit *and* is beyond the noise (a change the data cannot tell from noise never fails).

use serde::Serialize;

use super::{Cell, Verdict};
use crate::error::Error;
use crate::metrics::{Label, Metric};

#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// As the user wrote it, normalised in spacing: `TOTAL.median > +10%`.
    pub(crate) text: String,
    pub(crate) label: Label,
    /// The compared metric it judges (`median` is `p50`).
    pub(crate) metric: crate::vocab::Compared,
    /// `>`: fails above `limit_pct`; `<`: below.
    pub(crate) above: bool,
    pub(crate) limit_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    pub gate: String,
    pub(crate) change_pct: Option<f64>,
    pub(crate) verdict: Verdict,
    pub pass: bool,
}

pub(crate) const GRAMMAR: &str = "GROUP.METRIC > +N% or GROUP.METRIC < -N%, GROUP a group's name, GROUP:KIND or TOTAL, METRIC one of samples, throughput, avg, p50 (or median), p90, p99, p99.9, max, error_pct; e.g. 'find.p99 > +10%', 'TOTAL.throughput < -5%'";

/// A gate's `KEY > +N%` or `KEY < -N%`, split.
pub(crate) struct Limit<'a> {
    pub(crate) key: &'a str,
    /// `>`: fails above `limit_pct`; `<`: below.
    pub(crate) above: bool,
    /// As written: `+10%`.
    pub(crate) limit: &'a str,
    pub(crate) limit_pct: f64,
}

impl<'a> Limit<'a> {
    pub(crate) fn parse(expr: &'a str) -> Result<Limit<'a>, &'static str> {
        let at = expr.find(['<', '>']).ok_or("no < or >")?;
        let (key, rest) = (expr[..at].trim(), &expr[at..]);
        let limit = rest[1..].trim();
        let limit_pct: f64 = limit
            .strip_suffix('%')
            .filter(|n| n.starts_with(['+', '-']))
            .and_then(|n| n.parse().ok())
            .ok_or("the limit is a signed change in percent, such as +10% or -5%")?;
        Ok(Limit {
            key,
            above: rest.starts_with('>'),
            limit,
            limit_pct,
        })
    }

    /// The change goes past the limit, in the limit's direction.
    pub(crate) fn exceeded_by(&self, change_pct: Option<f64>) -> bool {
        exceeds(self.above, self.limit_pct, change_pct)
    }
}

fn exceeds(above: bool, limit_pct: f64, change_pct: Option<f64>) -> bool {
    change_pct.is_some_and(|c| if above { c > limit_pct } else { c < limit_pct })
}

impl Gate {
    pub fn parse(expr: &str) -> Result<Gate, Error> {
        let bad =
            |why: &str| Error::Usage(format!("--fail-if '{expr}': {why}\n  expected: {GRAMMAR}"));
        let Limit {
            key,
            above,
            limit,
            limit_pct,
        } = Limit::parse(expr).map_err(bad)?;
        let (label, written, metric) = Metric::split_key(key)
            .and_then(|(l, w, m)| Some((l, w, m.compared()?)))
            .ok_or_else(|| bad("no metric it knows"))?;
        Ok(Gate {
            text: format!(
                "{label}.{written} {} {limit}",
                if above { ">" } else { "<" }
            ),
            label: Label::parse(label),
            metric,
            above,
            limit_pct,
        })
    }

    pub(crate) fn judge(&self, cells: &[Cell]) -> Result<GateResult, Error> {
        let cell = cells
            .iter()
            .find(|c| c.label == self.label && c.metric == self.metric)
            .ok_or_else(|| {
                let mut labels: Vec<String> = cells.iter().map(|c| c.label.to_string()).collect();
                labels.dedup();
                Error::Usage(format!(
                    "--fail-if '{}': no label `{}` in both runs; they have: {}",
                    self.text,
                    self.label,
                    labels.join(", ")
                ))
            })?;
        if cell.verdict == Verdict::Steered {
            return Err(Error::Usage(format!(
                "--fail-if '{}': {} holds operations from before and after a live change of a run steered live: two loads in one number, which a gate cannot judge\n  fix: gate a change's row (one load; compare lists them), or compare runs that were not steered",
                self.text, self.label
            )));
        }
        let over = exceeds(self.above, self.limit_pct, cell.change_pct);
        let beyond_noise = matches!(cell.verdict, Verdict::Faster | Verdict::Slower)
            // Counts are not judged for noise: their change alone decides.
            || cell.verdict == Verdict::NotJudged;
        Ok(GateResult {
            gate: self.text.clone(),
            change_pct: cell.change_pct,
            verdict: cell.verdict,
            pass: !(over && beyond_noise),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_with_signed_percent_and_dotted_metrics() {
        let g = Gate::parse("find.p99.9 > +10%").unwrap();
        assert_eq!(
            (g.label.to_string().as_str(), g.metric, g.above, g.limit_pct),
            ("find", crate::vocab::Compared::P999, true, 10.0)
        );
        let g = Gate::parse("TOTAL.median > +10%").unwrap();
        assert_eq!(
            (g.metric, g.text.as_str()),
            (crate::vocab::Compared::P50, "TOTAL.median > +10%")
        );
        let g = Gate::parse("TOTAL.throughput<-5%").unwrap();
        assert_eq!((g.above, g.limit_pct), (false, -5.0));
        assert!(Gate::parse("find.p99 > 10%").is_err(), "a sign is required");
        assert!(Gate::parse("find.p42 > +1%").is_err());
    }

    #[test]
    fn a_change_within_noise_never_fails_a_gate() {
        let cell = |verdict| Cell {
            label: Label::Total,
            metric: crate::vocab::Compared::P50,
            base: 1.0,
            new: 1.5,
            change_pct: Some(50.0),
            verdict,
            noise: "intervals".into(),
            base_label: None,
        };
        let g = Gate::parse("TOTAL.p50 > +10%").unwrap();
        assert!(!g.judge(&[cell(Verdict::Slower)]).unwrap().pass);
        assert!(g.judge(&[cell(Verdict::SameWithinNoise)]).unwrap().pass);
        // A row of two loads (a run steered live) cannot be gated: refused, naming the way out.
        let e = g.judge(&[cell(Verdict::Steered)]).unwrap_err().to_string();
        assert!(
            e.contains("steered live") && e.contains("change's row"),
            "{e}"
        );
    }
}
