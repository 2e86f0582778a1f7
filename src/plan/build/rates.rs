//! Rate steps and ramps: a group's `rate` (none, one, a list of steps or a ramp cut in steps)
//! and the group plans it becomes, one per step (`name@RATE/s`), each starting when the one
//! before ends; `--rate` replaces the steps with one rate.
//!
//! Owns: the rates a group runs at and the row label of a step. Never: paces an operation
//! (that is `executor::pacer`).

use std::time::Duration;

use super::groups::GroupAt;
use super::Env;
use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::{GroupPlan, Overrides};

use crate::plan::limits::{MAX_STEPS, RAMP_STEPS};

/// What a group's `rate` says.
enum Rates {
    /// Closed loop.
    None,
    One(f64),
    /// Increasing rates, each run for the duration.
    Steps(Vec<f64>, Duration),
}

impl Rates {
    /// Every rate times `x` (`--scale`), each checked by `scaled`; closed loop stays so.
    fn times(
        self,
        x: Option<f64>,
        scaled: impl Fn(f64, f64) -> Result<f64, ProfileError>,
    ) -> Result<Rates, ProfileError> {
        let Some(x) = x else {
            return Ok(self);
        };
        Ok(match self {
            Rates::None => Rates::None,
            Rates::One(r) => Rates::One(scaled(r, x)?),
            Rates::Steps(steps, length) => Rates::Steps(
                steps
                    .into_iter()
                    .map(|r| scaled(r, x))
                    .collect::<Result<_, _>>()?,
                length,
            ),
        })
    }
}

/// `--scale`'s record in the plan: its factor and the closed-loop groups it left as they are;
/// refused when no group has a rate (it would change nothing).
pub(super) fn scale(
    loaded: &crate::plan::profile::Loaded,
    ov: &Overrides,
    plan: &crate::plan::RunPlan,
) -> Result<Option<crate::plan::Scale>, ProfileError> {
    let Some(factor) = ov.scale else {
        return Ok(None);
    };
    let unscaled: Vec<String> = plan
        .groups()
        .filter(|g| g.rate.is_none())
        .map(|g| g.name.clone())
        .collect();
    if plan.groups().all(|g| g.rate.is_none()) {
        return Err(loaded.error_at(
            "",
            format!("--scale {factor} multiplies the groups' rates, and every group of this profile runs closed loop, with no rate: it would change nothing"),
            "a `rate` on the groups to scale (open loop), --rate R for every group, or --threads N to change closed-loop groups",
        ));
    }
    Ok(Some(crate::plan::Scale {
        factor,
        unscaled,
        threads: Vec::new(),
    }))
}

/// `--scale X` above 1 raises each open-loop group's users X times (rounded up), unless
/// `--scale-threads off` or `--threads` sets them: a rate X times higher keeps as many
/// operations in flight per user only with X times the users. Recorded in `plan.scale`.
pub(super) fn scale_threads(plan: &mut crate::plan::RunPlan, ov: &Overrides) {
    let Some(scale) = plan.scale.as_mut() else {
        return;
    };
    if scale.factor <= 1.0 || ov.scale_keeps_threads || ov.threads.is_some() {
        return;
    }
    let factor = scale.factor;
    for g in plan.stages.iter_mut().flat_map(|s| s.groups.iter_mut()) {
        // A group that stops by loops counts them per user: more users would do more work.
        if g.rate.is_none() || g.watch.is_some() || g.stop.counted().is_some() {
            continue;
        }
        let raised = crate::num::whole(
            (f64::from(g.threads) * factor)
                .ceil()
                .min(f64::from(crate::plan::limits::MAX_THREADS)),
        );
        let raised = u32::try_from(raised).unwrap_or(crate::plan::limits::MAX_THREADS);
        if raised > g.threads {
            // A rate step's group is one group of the profile: said once.
            let name = g.profile_name().to_string();
            if !scale.threads.iter().any(|(n, _, _)| *n == name) {
                scale.threads.push((name, g.threads, raised));
            }
            g.threads = raised;
        }
    }
}

/// A number of steps (at most `MAX_STEPS`) as a time's multiplier.
fn times(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The row label of one rate step: `run@500/s`, `run@2.5/s`.
pub(super) fn step_name(group: &str, rate: f64) -> String {
    crate::metrics::Label::step_name(group, rate)
}

impl GroupAt<'_> {
    /// What only a closed-loop group does: at least loops and a duration, sleeps.
    fn closed_loop_only(&self, g: &GroupPlan) -> Result<(), ProfileError> {
        let what = match g.stop {
            crate::plan::StopAt::AtLeast(..) => Some("at_least"),
            _ if !g.sleep_before.is_zero() => Some("sleep_before"),
            _ if !g.sleep_after.is_zero() => Some("sleep_after"),
            _ => None,
        };
        match what {
            Some(k) => Err(self.err(
                k,
                format!("`{k}` is for a closed-loop group, and this one has a rate (open loop)"),
            )),
            None => Ok(()),
        }
    }

    /// The group as planned: one group, or one per rate step (`name@RATE/s`), each starting
    /// when the one before ends, in the same stage.
    pub(super) fn build_steps(
        &self,
        ov: &Overrides,
        env: &Env<'_>,
        next_index: &mut usize,
    ) -> Result<Vec<GroupPlan>, ProfileError> {
        if self.g.watch.is_some() {
            return self.build_watch(ov, env, next_index);
        }
        let rates = match (
            self.rates()?.times(ov.scale, |r, x| self.scaled(r, x))?,
            ov.rate,
        ) {
            // --rate replaces the steps: one rate for as long as the steps would have run.
            (Rates::Steps(steps, length), Some(r)) => {
                let mut one = self.build(ov, env, Some(length * times(steps.len())))?;
                one.rate = Some(r);
                one.index = *next_index;
                *next_index += 1;
                return Ok(vec![one]);
            }
            (_, Some(r)) => Rates::One(r),
            (rates, None) => rates,
        };
        let Rates::Steps(steps, length) = rates else {
            let mut one = self.build(ov, env, None)?;
            one.rate = match rates {
                Rates::One(r) => Some(r),
                _ => None,
            };
            if one.rate.is_some() {
                self.closed_loop_only(&one)?;
            }
            one.index = *next_index;
            *next_index += 1;
            return Ok(vec![one]);
        };
        if self.g.loops.is_some() || ov.loops.is_some() {
            return Err(self.err(
                "loops",
                "rate steps are timed, each `step` long; loops cannot count them".into(),
            ));
        }
        if self.g.duration.is_some() {
            return Err(self.err(
                "duration",
                "the rate steps set the group's length (steps x step); remove duration".into(),
            ));
        }
        let length = ov.duration.unwrap_or(length);
        let mut out = Vec::new();
        for (i, rate) in steps.iter().enumerate() {
            let mut g = self.build(ov, env, Some(length))?;
            g.name = step_name(&self.g.name, *rate);
            g.step_of = Some(self.g.name.clone());
            g.rate = Some(*rate);
            g.start_delay += length * times(i);
            g.index = *next_index;
            *next_index += 1;
            out.push(g);
        }
        Ok(out)
    }

    /// A rate of the profile times `--scale`'s `x`, within the tool's bounds.
    fn scaled(&self, rate: f64, x: f64) -> Result<f64, ProfileError> {
        let r = rate * x;
        limits::check_rate(r)
            .map_err(|p| self.err("rate", format!("{rate}/s x --scale {x} = {r}/s: {p}")))
    }

    /// A rate step long enough to measure.
    fn measurable_step(&self, step: Duration) -> Result<(), ProfileError> {
        if step < limits::MIN_INTERVAL {
            return Err(self.err(
                "step",
                format!(
                    "steps shorter than {} are too short to measure",
                    humantime::format_duration(limits::MIN_INTERVAL)
                ),
            ));
        }
        Ok(())
    }

    /// `rate`: none (closed loop), one, or steps with their length (a list, or a ramp cut in
    /// steps); `--rate` replaces them with one.
    fn rates(&self) -> Result<Rates, ProfileError> {
        let g = self.g;
        let check = |r: f64, k: &str| limits::check_rate(r).map_err(|p| self.err(k, p));
        let number = |v: &toml::Value| {
            v.as_float()
                .or_else(|| v.as_integer().map(crate::num::real_signed))
        };
        let step = self.duration("step", &g.step)?;
        let Some(value) = &g.rate else {
            return match step {
                Some(_) => Err(self.err("step", "`step` needs a list of rates or a ramp".into())),
                None => Ok(Rates::None),
            };
        };
        if let Some(r) = number(value) {
            if step.is_some() {
                return Err(self.err(
                    "step",
                    "`step` needs a list of rates or a ramp, not one rate".into(),
                ));
            }
            return Ok(Rates::One(check(r, "rate")?));
        }
        if let Some(list) = value.as_array() {
            let mut rates = Vec::new();
            for v in list {
                let r = number(v)
                    .ok_or_else(|| self.err("rate", "a rate step must be a number".into()))?;
                rates.push(check(r, "rate")?);
            }
            if rates.is_empty() {
                return Err(self.err("rate", "an empty list of rate steps runs nothing".into()));
            }
            if rates.windows(2).any(|w| w[1] <= w[0]) {
                return Err(self.err(
                    "rate",
                    "rate steps must increase, each above the one before".into(),
                ));
            }
            let step = step.ok_or_else(|| {
                self.err(
                    "rate",
                    "a list of rates needs `step`, the length of each, e.g. step = \"30s\"".into(),
                )
            })?;
            self.measurable_step(step)?;
            if rates.len() > MAX_STEPS {
                return Err(self.err(
                    "rate",
                    format!(
                        "{} steps are more than the {MAX_STEPS} a group may have",
                        rates.len()
                    ),
                ));
            }
            return Ok(Rates::Steps(rates, step));
        }
        if let Some(t) = value.as_table() {
            if let Some(k) = t
                .keys()
                .find(|k| !["from", "to", "over"].contains(&k.as_str()))
            {
                return Err(self.err(
                    "rate",
                    format!("`{k}` is not part of a ramp (from, to, over)"),
                ));
            }
            let (from, to) = (t.get("from").and_then(number), t.get("to").and_then(number));
            let over = t
                .get("over")
                .and_then(|v| v.as_str())
                .map(limits::parse_duration);
            let (Some(from), Some(to), Some(Ok(over))) = (from, to, over) else {
                return Err(self.err(
                    "rate",
                    "a ramp needs from, to (operations per second) and over (a duration)".into(),
                ));
            };
            let (from, to) = (check(from, "rate")?, check(to, "rate")?);
            if to <= from || over.is_zero() {
                return Err(self.err(
                    "rate",
                    "a ramp must rise (to above from) over a time above 0".into(),
                ));
            }
            let step = step.unwrap_or(over / RAMP_STEPS);
            self.measurable_step(step)?;
            let n = crate::num::whole_len(over.as_secs_f64() / step.as_secs_f64()).max(2);
            if n > MAX_STEPS {
                return Err(self.err(
                    "step",
                    format!("{n} steps are more than the {MAX_STEPS} a group may have; take a longer step"),
                ));
            }
            let rates = (0..n)
                .map(|i| from + (to - from) * crate::num::real_len(i) / crate::num::real_len(n - 1))
                .collect();
            return Ok(Rates::Steps(rates, over / times(n)));
        }
        Err(self.err("rate", "not a rate".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::build::test_profile::{build, DOC};
    use crate::plan::StopAt;

    #[test]
    fn rate_steps_and_ramps_become_one_group_per_step() {
        let plan = build(&format!("{DOC}[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 4\nstart_delay = \"1s\"\nrate = [100, 250.5]\nstep = \"2s\"\n")).unwrap();
        let g: Vec<_> = plan.groups().collect();
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].name.as_str(), g[1].name.as_str()),
            ("g@100/s", "g@250.5/s")
        );
        assert_eq!((g[0].rate, g[1].rate), (Some(100.0), Some(250.5)));
        assert_eq!(g[1].start_delay, Duration::from_secs(3));
        assert_eq!(g[1].stop, StopAt::Duration(Duration::from_secs(2)));
        assert_eq!((g[0].index, g[1].index), (0, 1));
        let plan = build(&format!("{DOC}[[group]]\nname = \"r\"\nop = \"insert\"\nthreads = 4\nrate = {{ from = 100, to = 1000, over = \"10s\" }}\n")).unwrap();
        let rates: Vec<f64> = plan.groups().map(|g| g.rate.unwrap()).collect();
        assert_eq!(
            rates,
            vec![100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0]
        );
        for (bad, says) in [
            ("rate = [200, 100]\nstep = \"1s\"", "must increase"),
            ("rate = [100, 200]", "needs `step`"),
            (
                "rate = [100, 200]\nstep = \"1s\"\nduration = \"5s\"",
                "remove duration",
            ),
            ("rate = { from = 100 }", "a ramp needs from, to"),
            (
                "rate = 100\nstep = \"1s\"\nduration = \"5s\"",
                "not one rate",
            ),
        ] {
            let e = build(&format!(
                "{DOC}[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 1\n{bad}\n"
            ))
            .unwrap_err();
            assert!(e.problem.contains(says), "{bad}: {e}");
        }
    }
}
