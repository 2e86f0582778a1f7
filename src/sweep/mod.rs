//! `mongo-stress sweep`: how the deployment scales with concurrency. A step runs the profile
//! closed loop with every group at N users; without a list of users, N doubles from 1 until
//! throughput fell at two steps in a row, then steps between the best and its neighbours bracket
//! the peak. The Universal Scalability Law is fitted to the steps (`usl`).
//!
//! Owns: the choice of the next step, the measure of a step and the reasons to stop, the fit.
//! Never: runs anything (`app::sweep` does) or formats text (`report::sweep`).

pub mod usl;

use serde::{Deserialize, Serialize};

use crate::capacity::Slo;
use crate::summary::Summary;

/// Steps added between the best step and its neighbours once throughput has turned down.
pub const REFINE_STEPS: usize = 3;
/// A step with more failed operations than this (percent) ends the sweep.
pub const MAX_ERROR_PCT: f64 = 1.0;

/// One step: N users in every group, measured after its warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Users per group.
    pub threads: u32,
    /// Users over every group.
    pub users: u32,
    /// Operations of the measured window per second of it. (The step's own summary gives
    /// JMeter's, over its first start to its last end, which counts the last operations'
    /// time past the window: R / (window + R) less, noticeable when R is not small against the
    /// step.)
    pub throughput: f64,
    pub median_ms: f64,
    pub p99_ms: f64,
    pub mean_ms: f64,
    pub error_pct: f64,
    /// Little's law: the users the measurement implies, X x R (R the mean time in seconds).
    pub littles_n: f64,
    /// X(N) / (N X(1)), when the sweep has a step at one user per group.
    pub efficiency: Option<f64>,
    pub client_cpu_pct: Option<f64>,
    pub server_cpu_pct: Option<f64>,
    /// Operations that waited for a connection or started behind their schedule.
    pub late: u64,
    /// The SLO held (None without one).
    pub slo: Option<bool>,
    /// Why the SLO did not hold.
    pub why: Vec<String>,
    /// The load generator's own warning (its CPU, or its users all busy), when it gave one.
    pub load_generator: Option<String>,
    /// The step's run directory.
    pub dir: String,
    /// The documents each collection the profile does not drop held after the step (such a
    /// collection keeps what every step wrote, so later steps start from more data).
    #[serde(default)]
    pub held: Vec<Held>,
}

/// A collection's documents after a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Held {
    pub collection: String,
    pub documents: u64,
}

impl Step {
    /// A step's numbers from its run's summary (`users`: every group's users added; `window`:
    /// the measured length, warm-up left out).
    pub fn measure(
        summary: &Summary,
        threads: u32,
        users: u32,
        window: std::time::Duration,
        slo: &Slo,
        dir: String,
    ) -> Step {
        let judged = slo.judge(summary, 0.0, dir.clone());
        let total = summary.runs.first().and_then(|r| r.rows.last());
        let mean_ms = total.map_or(0.0, |t| t.average_ms);
        let throughput = total.map_or(0.0, |t| t.samples as f64) / window.as_secs_f64().max(1e-3);
        Step {
            threads,
            users,
            throughput,
            median_ms: judged.p50_ms,
            p99_ms: judged.p99_ms,
            mean_ms,
            error_pct: judged.error_pct,
            littles_n: throughput * mean_ms / 1000.0,
            efficiency: None,
            client_cpu_pct: judged.client_cpu_pct,
            server_cpu_pct: judged.server_cpu_pct,
            late: judged.late,
            slo: (!slo.rules.is_empty()).then_some(judged.why.is_empty()),
            why: judged.why,
            load_generator: judged.load_generator,
            dir,
            held: Vec::new(),
        }
    }
}

/// Why a sweep ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", content = "detail", rename_all = "snake_case")]
pub enum StopReason {
    /// Every step of `--threads` ran.
    Listed,
    /// Throughput fell at two steps in a row, and the peak was bracketed.
    Declined,
    /// The doubling reached `--max-threads` before throughput fell.
    MaxThreads(u32),
    /// A step broke the SLO.
    Slo(String),
    /// A step failed more than MAX_ERROR_PCT of its operations.
    Errors(String),
    /// The load generator, not the server, set the pace.
    Starved(String),
    /// Ctrl-C.
    Interrupted,
    /// A step could not run.
    Failed(String),
}

impl StopReason {
    pub fn text(&self) -> String {
        match self {
            StopReason::Listed => "every step of --threads ran".into(),
            StopReason::Declined => "throughput fell at two steps in a row, and steps between the best and its neighbours bracket the peak".into(),
            StopReason::MaxThreads(n) => format!("the doubling reached --max-threads {n} before throughput fell"),
            StopReason::Slo(w) => format!("a step broke the SLO: {w}"),
            StopReason::Errors(w) => format!("a step failed {w}"),
            StopReason::Starved(w) => format!("the load generator set the pace: {w}"),
            StopReason::Interrupted => "interrupted: the steps that completed are written and fitted".into(),
            StopReason::Failed(e) => format!("a step could not run: {e}"),
        }
    }
}

/// A sweep as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepResult {
    pub profile: String,
    pub slo: Vec<String>,
    /// In the order they ran.
    pub steps: Vec<Step>,
    pub fit: usl::Analysis,
    /// The most users per group whose step held the SLO, below every step that broke it.
    pub slo_knee: Option<u32>,
    pub stop: StopReason,
    pub stop_text: String,
    pub notes: Vec<String>,
}

impl SweepResult {
    pub fn new(
        profile: &str,
        slo: &[String],
        steps: Vec<Step>,
        stop: StopReason,
        notes: Vec<String>,
    ) -> SweepResult {
        let fit = analyse(&steps);
        let first_broken = steps
            .iter()
            .filter(|s| s.slo == Some(false))
            .map(|s| s.threads)
            .min()
            .unwrap_or(u32::MAX);
        let slo_knee = steps
            .iter()
            .filter(|s| s.slo == Some(true) && s.threads < first_broken)
            .map(|s| s.threads)
            .max();
        SweepResult {
            profile: profile.to_string(),
            slo: slo.to_vec(),
            steps,
            fit,
            slo_knee,
            stop_text: stop.text(),
            stop,
            notes,
        }
    }

    /// The steps by users, ascending.
    pub fn by_threads(&self) -> Vec<&Step> {
        by_threads(&self.steps)
    }
}

/// Steps by users, ascending.
pub fn by_threads(steps: &[Step]) -> Vec<&Step> {
    let mut s: Vec<&Step> = steps.iter().collect();
    s.sort_by_key(|s| s.threads);
    s
}

/// Throughput fell at the last two steps of the doubling (in order of users).
fn fell_twice(steps: &[Step]) -> bool {
    let s = by_threads(steps);
    s.len() >= 3 && {
        let n = s.len();
        s[n - 1].throughput < s[n - 2].throughput && s[n - 2].throughput < s[n - 3].throughput
    }
}

/// The steps to run: the listed ones, in order; or doubled from 1 to `max`, then up to
/// REFINE_STEPS between the best step and its neighbours. None when the sweep is done, with why.
pub fn next(steps: &[Step], listed: Option<&[u32]>, max: u32) -> Result<u32, StopReason> {
    if let Some(list) = listed {
        return list
            .iter()
            .copied()
            .find(|n| !steps.iter().any(|s| s.threads == *n))
            .ok_or(StopReason::Listed);
    }
    let Some(last) = steps.iter().map(|s| s.threads).max() else {
        return Ok(1);
    };
    // Doubling, until throughput fell twice in a row (the doubled steps alone).
    let doubled: Vec<Step> = steps
        .iter()
        .filter(|s| s.threads.is_power_of_two() || s.threads == max)
        .cloned()
        .collect();
    if !fell_twice(&doubled) {
        if last >= max {
            return Err(StopReason::MaxThreads(max));
        }
        return Ok((last * 2).min(max));
    }
    let refined = steps.len() - doubled.len();
    if refined >= REFINE_STEPS {
        return Err(StopReason::Declined);
    }
    let s = by_threads(steps);
    let best = s
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.throughput.total_cmp(&b.1.throughput))
        .map_or(0, |(i, _)| i);
    let mut candidates = Vec::new();
    if best + 1 < s.len() {
        candidates.push((s[best].threads + s[best + 1].threads) / 2);
    }
    if best > 0 {
        candidates.push((s[best - 1].threads + s[best].threads).div_ceil(2));
    }
    candidates
        .into_iter()
        .find(|n| !steps.iter().any(|s| s.threads == *n))
        .ok_or(StopReason::Declined)
}

/// Why a measured step ends the sweep, if it does.
pub fn stops(step: &Step) -> Option<StopReason> {
    if step.slo == Some(false) {
        return Some(StopReason::Slo(step.why.join("; ")));
    }
    if step.error_pct > MAX_ERROR_PCT {
        return Some(StopReason::Errors(format!(
            "{:.2} % of its operations at {} users per group, above {MAX_ERROR_PCT} %",
            step.error_pct, step.threads
        )));
    }
    step.load_generator
        .as_ref()
        .map(|w| StopReason::Starved(format!("at {} users per group: {w}", step.threads)))
}

/// Fills each step's efficiency X(N) / (N X(1)) from the step at one user per group.
pub fn efficiencies(steps: &mut [Step]) {
    let Some(one) = steps.iter().find(|s| s.threads == 1).map(|s| s.throughput) else {
        return;
    };
    for s in steps.iter_mut() {
        s.efficiency = (one > 0.0).then(|| s.throughput / (f64::from(s.threads) * one));
    }
}

/// A step whose throughput says nothing about the server: its load generator set the pace, or
/// it failed more than MAX_ERROR_PCT of its operations.
pub fn unfit(s: &Step) -> bool {
    s.load_generator.is_some() || s.error_pct > MAX_ERROR_PCT || s.throughput <= 0.0
}

/// The fit of the whole throughput against users per group (N), the steps `unfit` names left
/// out and said.
pub fn analyse(steps: &[Step]) -> usl::Analysis {
    let points: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| !unfit(s))
        .map(|s| (f64::from(s.threads), s.throughput))
        .collect();
    let mut a = usl::analyse(&points);
    let out: Vec<String> = steps
        .iter()
        .filter(|s| unfit(s))
        .map(|s| s.threads.to_string())
        .collect();
    if !out.is_empty() {
        a.notes.push(format!(
            "left out of the fit, as their throughput says nothing about the server (a starved load generator, or errors over {MAX_ERROR_PCT} %): {} users per group",
            out.join(", ")
        ));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(threads: u32, throughput: f64) -> Step {
        Step {
            threads,
            users: threads,
            throughput,
            median_ms: 1.0,
            p99_ms: 1.0,
            mean_ms: 1.0,
            error_pct: 0.0,
            littles_n: 0.0,
            efficiency: None,
            client_cpu_pct: None,
            server_cpu_pct: None,
            late: 0,
            slo: None,
            why: Vec::new(),
            load_generator: None,
            dir: String::new(),
            held: Vec::new(),
        }
    }

    /// Runs the search against a USL curve.
    fn sweep(curve: impl Fn(f64) -> f64, max: u32) -> (Vec<u32>, StopReason) {
        let mut steps = Vec::new();
        loop {
            match next(&steps, None, max) {
                Ok(n) => steps.push(step(n, curve(f64::from(n)))),
                Err(why) => return (steps.iter().map(|s| s.threads).collect(), why),
            }
            assert!(steps.len() < 40);
        }
    }

    #[test]
    fn doubles_until_throughput_falls_twice_then_brackets_the_peak() {
        // Peak near sqrt(0.95 / 0.002) = 21.8.
        let usl = |n: f64| 1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let (ran, why) = sweep(usl, 1024);
        assert_eq!(&ran[..7], &[1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(why, StopReason::Declined);
        assert_eq!(ran.len(), 7 + REFINE_STEPS, "{ran:?}");
        // Every added step lies between 16 and 32, the best step's neighbours.
        assert!(ran[7..].iter().all(|&n| n > 8 && n < 64), "{ran:?}");
    }

    #[test]
    fn a_curve_that_never_falls_stops_at_max_threads_and_a_list_runs_as_given() {
        let (ran, why) = sweep(|n| 100.0 * n, 64);
        assert_eq!(ran, vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(why, StopReason::MaxThreads(64));
        let mut steps = vec![step(4, 1.0)];
        assert_eq!(next(&steps, Some(&[4, 1, 16]), 8), Ok(1));
        steps.push(step(1, 1.0));
        steps.push(step(16, 1.0));
        assert_eq!(next(&steps, Some(&[4, 1, 16]), 8), Err(StopReason::Listed));
    }

    #[test]
    fn a_max_that_is_not_a_power_of_two_still_turns_down() {
        // Peak near 40: throughput rises to 32, falls at 64 and at the ceiling, 100.
        let usl = |n: f64| 1000.0 * n / (1.0 + 0.01 * (n - 1.0) + 0.000619 * n * (n - 1.0));
        let (ran, why) = sweep(usl, 100);
        assert_eq!(&ran[..8], &[1, 2, 4, 8, 16, 32, 64, 100]);
        assert_eq!(why, StopReason::Declined, "{ran:?}");
    }

    #[test]
    fn efficiency_and_the_reasons_a_step_ends_the_sweep() {
        let mut steps = vec![step(1, 100.0), step(4, 300.0)];
        efficiencies(&mut steps);
        assert_eq!(steps[1].efficiency, Some(0.75));
        let mut bad = step(8, 10.0);
        bad.error_pct = 2.0;
        assert!(matches!(stops(&bad), Some(StopReason::Errors(_))));
        let mut slow = step(8, 10.0);
        slow.slo = Some(false);
        slow.why = vec!["TOTAL.p99<5ms was 7.00ms".into()];
        assert!(matches!(stops(&slow), Some(StopReason::Slo(_))));
        assert_eq!(stops(&step(8, 10.0)), None);
    }
}
