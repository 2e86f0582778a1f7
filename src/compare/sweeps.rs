//! `compare` of two sweeps (before and after a change): the fitted USL parameters and the peak
//! side by side with their standard errors, a difference judged from those (99 %), and each
//! number of users both sweeps ran compared as two runs are (TOTAL's throughput and p99, their
//! noise from the steps' own intervals). Gates on the parameters: `peak_throughput < -10%`.
//!
//! The standard errors are each fit's: they know how well the curve fits its steps, not how much
//! two sweeps of one deployment differ from run to run; two sweeps of an unchanged deployment
//! can differ by more.

use serde::Serialize;

use super::gate::Limit;
use super::Verdict;
use crate::error::Error;
use crate::metrics::Label;
use crate::rundir::{RunDir, SweepDir};
use crate::sweep::usl::{Analysis, Estimate};
use crate::sweep::Step;

/// Two-sided 99 %: |difference| beyond this many standard errors of the difference.
const Z99: f64 = 2.576;

/// The fit's numbers compared, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Parameter {
    Lambda,
    Sigma,
    Kappa,
    PeakN,
    PeakThroughput,
}

impl Parameter {
    pub(crate) const ALL: [Parameter; 5] = [
        Parameter::Lambda,
        Parameter::Sigma,
        Parameter::Kappa,
        Parameter::PeakN,
        Parameter::PeakThroughput,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Parameter::Lambda => "lambda",
            Parameter::Sigma => "sigma",
            Parameter::Kappa => "kappa",
            Parameter::PeakN => "peak_n",
            Parameter::PeakThroughput => "peak_throughput",
        }
    }

    /// What it means, for the console.
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Parameter::Lambda => "throughput of one user, ops/s",
            Parameter::Sigma => "contention",
            Parameter::Kappa => "coherency",
            Parameter::PeakN => "users per group at the peak",
            Parameter::PeakThroughput => "throughput at the peak, ops/s",
        }
    }

    /// Its value and standard error in a sweep's fit; None where that sweep could not determine
    /// it.
    pub(crate) fn of(self, a: &Analysis) -> Option<Estimate> {
        let p = a.parameters.as_ref()?;
        let peak = |v: Option<f64>, se: Option<f64>| {
            v.map(|value| Estimate {
                value,
                se: se.unwrap_or(f64::NAN),
            })
        };
        match self {
            Parameter::Lambda => Some(p.lambda),
            Parameter::Sigma => p.sigma,
            Parameter::Kappa => p.kappa,
            Parameter::PeakN => peak(a.peak_n, a.peak_n_se),
            Parameter::PeakThroughput => peak(a.peak_throughput, a.peak_throughput_se),
        }
    }
}

/// How two estimates differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Difference {
    Higher,
    Lower,
    SameWithinUncertainty,
    /// A side could not determine it, or has no standard error.
    NotJudged,
}

impl Difference {
    pub(crate) fn words(self) -> &'static str {
        match self {
            Difference::Higher => "higher",
            Difference::Lower => "lower",
            Difference::SameWithinUncertainty => "same within uncertainty",
            Difference::NotJudged => "-",
        }
    }

    fn of(base: Option<Estimate>, new: Option<Estimate>) -> Difference {
        let (Some(b), Some(n)) = (base, new) else {
            return Difference::NotJudged;
        };
        let se = b.se.hypot(n.se);
        if !se.is_finite() {
            Difference::NotJudged
        } else if (n.value - b.value).abs() <= Z99 * se {
            Difference::SameWithinUncertainty
        } else if n.value > b.value {
            Difference::Higher
        } else {
            Difference::Lower
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ParameterCell {
    pub(crate) parameter: Parameter,
    pub(crate) base: Option<Estimate>,
    pub(crate) new: Option<Estimate>,
    pub(crate) change_pct: Option<f64>,
    pub(crate) difference: Difference,
}

/// One metric of the steps at one number of users.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StepCell {
    /// Users per group.
    pub(crate) threads: u32,
    /// `throughput` (operations/s of the measured window) or `p99` (ms).
    pub(crate) metric: crate::vocab::Compared,
    /// None where that sweep ran no step at these users.
    pub(crate) base: Option<f64>,
    pub(crate) new: Option<f64>,
    pub(crate) change_pct: Option<f64>,
    pub(crate) verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SweepGateResult {
    pub(crate) gate: String,
    pub(crate) change_pct: Option<f64>,
    pub(crate) difference: Difference,
    pub(crate) pass: bool,
    /// Why it could not be judged (and so failed).
    pub(crate) why: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SweepComparison {
    pub(crate) base: String,
    pub(crate) new: String,
    pub(crate) parameters: Vec<ParameterCell>,
    pub(crate) steps: Vec<StepCell>,
    pub(crate) gates: Vec<SweepGateResult>,
    pub(crate) notes: Vec<String>,
}

impl SweepComparison {
    pub(crate) fn failed(&self) -> bool {
        self.gates.iter().any(|g| !g.pass)
    }
}

pub(crate) const GRAMMAR: &str = "PARAMETER > +N% or PARAMETER < -N%, PARAMETER one of lambda, sigma, kappa, peak_n, peak_throughput; e.g. 'peak_throughput < -10%', 'kappa > +20%'";

/// A gate on a fitted parameter: fails when its change passes the limit and the difference is
/// beyond the fits' uncertainty, or when either sweep could not determine it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SweepGate {
    pub(crate) text: String,
    pub(crate) parameter: Parameter,
    pub(crate) above: bool,
    pub(crate) limit_pct: f64,
}

impl SweepGate {
    pub(crate) fn parse(expr: &str) -> Result<SweepGate, Error> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "--fail-if '{expr}': {why}\n  expected, comparing two sweeps: {GRAMMAR}"
            ))
        };
        let l = Limit::parse(expr).map_err(bad)?;
        let parameter = Parameter::ALL
            .into_iter()
            .find(|p| p.name() == l.key)
            .ok_or_else(|| bad("no fitted parameter of that name"))?;
        Ok(SweepGate {
            text: format!("{} {} {}", l.key, if l.above { ">" } else { "<" }, l.limit),
            parameter,
            above: l.above,
            limit_pct: l.limit_pct,
        })
    }

    fn judge(&self, cells: &[ParameterCell]) -> SweepGateResult {
        let cell = cells.iter().find(|c| c.parameter == self.parameter);
        let limit = Limit {
            key: self.parameter.name(),
            above: self.above,
            limit: "",
            limit_pct: self.limit_pct,
        };
        let (change_pct, difference) = cell.map_or((None, Difference::NotJudged), |c| {
            (c.change_pct, c.difference)
        });
        let missing = cell.and_then(|c| match (c.base, c.new) {
            (None, _) => Some("the base sweep did not determine it"),
            (_, None) => Some("the new sweep did not determine it"),
            _ => None,
        });
        // Within the uncertainty never fails; without a standard error on a side (a sweep.json
        // written before they were), the change alone decides, as for runs' counts.
        let pass = missing.is_none()
            && !(limit.exceeded_by(change_pct) && difference != Difference::SameWithinUncertainty);
        SweepGateResult {
            gate: self.text.clone(),
            change_pct,
            difference,
            pass,
            why: missing.map(|m| format!("{m}, so the gate cannot be judged")),
        }
    }
}

/// What keeps two sweeps from being compared as one plan: another profile, or groups that differ
/// (read from the first users both ran).
pub(crate) fn differences(base: &SweepDir, new: &SweepDir) -> Vec<String> {
    let mut out = Vec::new();
    if base.sweep.profile != new.sweep.profile {
        out.push(format!(
            "profile {:?} against {:?}",
            base.sweep.profile, new.sweep.profile
        ));
    }
    // The groups, from the first users both ran.
    let pair = base.sweep.by_threads().into_iter().find_map(|x| {
        let y = new.sweep.steps.iter().find(|y| y.threads == x.threads)?;
        Some((base.step_dir(x), new.step_dir(y)))
    });
    if let Some((Ok(x), Ok(y))) = pair.map(|(x, y)| (RunDir::open(&x), RunDir::open(&y))) {
        out.extend(
            super::differences(&x, &y)
                .into_iter()
                .filter(|d| !d.starts_with("profile")),
        );
    }
    out
}

fn change(base: f64, new: f64) -> Option<f64> {
    (base != 0.0).then(|| (new - base) * 100.0 / base)
}

/// The two runs of one number of users, compared as `compare` compares two runs.
fn step_runs(
    base: &SweepDir,
    new: &SweepDir,
    (x, y): (&Step, &Step),
    seed: u64,
) -> Result<super::Comparison, crate::error::Error> {
    let (rx, ry) = (
        RunDir::open(&base.step_dir(x))?,
        RunDir::open(&new.step_dir(y))?,
    );
    super::compare(&rx, &ry, &[], seed)
}

/// Compares; step verdicts from each pair of step directories, `seed` for their bootstrap.
pub(crate) fn compare(
    base: &SweepDir,
    new: &SweepDir,
    gates: &[SweepGate],
    seed: u64,
) -> SweepComparison {
    let (b, n) = (&base.sweep, &new.sweep);
    let parameters: Vec<ParameterCell> = Parameter::ALL
        .into_iter()
        .map(|p| {
            let (bv, nv) = (p.of(&b.fit), p.of(&n.fit));
            ParameterCell {
                parameter: p,
                base: bv,
                new: nv,
                change_pct: bv.zip(nv).and_then(|(x, y)| change(x.value, y.value)),
                difference: Difference::of(bv, nv),
            }
        })
        .collect();
    let mut notes = Vec::new();
    for (side, s) in [("base", b), ("new", n)] {
        let missing: Vec<&str> = Parameter::ALL
            .into_iter()
            .filter(|p| p.of(&s.fit).is_none())
            .map(Parameter::name)
            .collect();
        if s.fit.parameters.is_none() {
            notes.push(format!(
                "the {side} sweep has no fit: {}",
                s.fit.notes.join("; ")
            ));
        } else if !missing.is_empty() {
            notes.push(format!(
                "{} not determined by the {side} sweep: {}",
                missing.join(", "),
                s.fit.notes.join("; ")
            ));
        }
    }
    let mut users: Vec<u32> = b.steps.iter().chain(&n.steps).map(|s| s.threads).collect();
    users.sort_unstable();
    users.dedup();
    let mut steps = Vec::new();
    let mut unread = Vec::new();
    for u in users {
        let find = |s: &[Step]| s.iter().find(|s| s.threads == u).cloned();
        let (bs, ns) = (find(&b.steps), find(&n.steps));
        // The two runs at these users, compared as `compare` compares two runs.
        let judged = match (&bs, &ns) {
            (Some(x), Some(y)) => step_runs(base, new, (x, y), seed)
                .map_err(|e| unread.push(format!("{u} ({})", first_line(&e.to_string()))))
                .ok(),
            _ => None,
        };
        for (metric, value) in [
            (
                crate::vocab::Compared::Throughput,
                (|s: &Step| s.throughput) as fn(&Step) -> f64,
            ),
            (crate::vocab::Compared::P99, |s: &Step| s.p99_ms),
        ] {
            let (bv, nv) = (bs.as_ref().map(value), ns.as_ref().map(value));
            let verdict = judged
                .as_ref()
                .and_then(|c| {
                    c.cells
                        .iter()
                        .find(|c| c.label == Label::Total && c.metric == metric)
                })
                .map_or(Verdict::NotJudged, |c| c.verdict);
            steps.push(StepCell {
                threads: u,
                metric,
                base: bv,
                new: nv,
                change_pct: bv.zip(nv).and_then(|(x, y)| change(x, y)),
                verdict,
            });
        }
    }
    if !unread.is_empty() {
        notes.push(format!(
            "steps not judged for noise, as their run directories could not be read or compared: {}",
            unread.join("; ")
        ));
    }
    let gates = gates.iter().map(|g| g.judge(&parameters)).collect();
    SweepComparison {
        base: base.path.display().to_string(),
        new: new.path.display().to_string(),
        parameters,
        steps,
        gates,
        notes,
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, se: f64) -> Option<Estimate> {
        Some(Estimate { value, se })
    }

    #[test]
    fn a_difference_is_judged_from_both_standard_errors() {
        // Difference 1.0; se of the difference 0.5 x sqrt(2) = 0.707; 2.576 x 0.707 = 1.82.
        assert_eq!(
            Difference::of(e(10.0, 0.5), e(11.0, 0.5)),
            Difference::SameWithinUncertainty
        );
        assert_eq!(
            Difference::of(e(10.0, 0.1), e(11.0, 0.1)),
            Difference::Higher
        );
        assert_eq!(Difference::of(e(10.0, 0.1), e(9.0, 0.1)), Difference::Lower);
        assert_eq!(Difference::of(e(10.0, 0.1), None), Difference::NotJudged);
        assert_eq!(
            Difference::of(e(10.0, f64::NAN), e(20.0, 0.1)),
            Difference::NotJudged
        );
    }

    #[test]
    fn sweep_gates_fail_beyond_the_uncertainty_or_when_not_determined() {
        let g = SweepGate::parse("peak_throughput < -10%").unwrap();
        assert_eq!(
            (g.parameter, g.above, g.limit_pct),
            (Parameter::PeakThroughput, false, -10.0)
        );
        assert!(SweepGate::parse("TOTAL.p99 > +10%").is_err());
        assert!(
            SweepGate::parse("peak_n > 10%").is_err(),
            "a sign is required"
        );
        let cell = |base, new| {
            let (b, n): (Option<Estimate>, Option<Estimate>) = (base, new);
            ParameterCell {
                parameter: Parameter::PeakThroughput,
                base: b,
                new: n,
                change_pct: b.zip(n).and_then(|(x, y)| change(x.value, y.value)),
                difference: Difference::of(b, n),
            }
        };
        // 20 % lower, well beyond the uncertainty: fails.
        assert!(!g.judge(&[cell(e(100.0, 1.0), e(80.0, 1.0))]).pass);
        // 20 % lower but within it: passes.
        assert!(g.judge(&[cell(e(100.0, 10.0), e(80.0, 10.0))]).pass);
        // 5 % lower, beyond the uncertainty but within the limit: passes.
        assert!(g.judge(&[cell(e(100.0, 0.1), e(95.0, 0.1))]).pass);
        // No standard error on a side: the change alone decides.
        assert!(!g.judge(&[cell(e(100.0, f64::NAN), e(50.0, 1.0))]).pass);
        assert!(g.judge(&[cell(e(100.0, f64::NAN), e(95.0, 1.0))]).pass);
        // Not determined by the new sweep: fails, and says why.
        let r = g.judge(&[cell(e(100.0, 1.0), None)]);
        assert!(!r.pass && r.why.unwrap().contains("new sweep"));
    }
}
