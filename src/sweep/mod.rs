//! `mongo-stress sweep`: how the deployment scales with concurrency. A step runs the profile
//! closed loop with every group at N users; without a list of users, N doubles from 1 until
//! throughput fell at two steps in a row, then steps between the best and its neighbours bracket
//! the peak. The Universal Scalability Law is fitted to the steps (`usl`).
//!
//! Owns: the choice of the next step, the measure of a step and the reasons to stop, the fit.
//! Never: runs anything (`app::sweep` does) or formats text (`report::sweep`).

pub(crate) mod usl;
pub(crate) mod watchers;

use serde::{Deserialize, Serialize};

use crate::capacity::Slo;
use crate::summary::Summary;

/// Steps added between the best step and its neighbours once throughput has turned down.
pub(crate) const REFINE_STEPS: usize = 3;
/// A step with more failed operations than this (percent) ends the sweep.
pub(crate) const MAX_ERROR_PCT: f64 = 1.0;
/// Judged against the step itself, the load generator distorted a step when its users were
/// between operations (Little's N short of the users) for more than this share of the step, or
/// its own delay per operation was more than this share of the operations' mean latency: then
/// it, not the server, may have set about that much of the step's throughput.
pub(crate) const MAX_GENERATOR_SHARE: f64 = 0.1;
/// Steps in a row the generator distorted before the sweep gives up on the machine.
pub(crate) const MAX_DISTORTED_IN_A_ROW: usize = 3;

/// One step: N users in every group, measured after its warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Step {
    /// Users per group.
    pub(crate) threads: u32,
    /// Users over every group.
    pub(crate) users: u32,
    /// Operations of the measured window per second of it. (The step's own summary gives
    /// JMeter's, over its first start to its last end, which counts the last operations'
    /// time past the window: R / (window + R) less, noticeable when R is not small against the
    /// step.)
    pub(crate) throughput: f64,
    pub(crate) median_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) mean_ms: f64,
    pub(crate) error_pct: f64,
    /// Little's law: the users the measurement implies, X x R (R the mean time in seconds).
    pub(crate) littles_n: f64,
    /// X(N) / (N X(1)), when the sweep has a step at one user per group.
    pub(crate) efficiency: Option<f64>,
    pub(crate) client_cpu_pct: Option<f64>,
    pub(crate) server_cpu_pct: Option<f64>,
    /// Operations that waited for a connection or started behind their schedule.
    pub(crate) late: u64,
    /// The SLO held (None without one).
    pub(crate) slo: Option<bool>,
    /// Why the SLO did not hold.
    pub(crate) why: Vec<String>,
    /// The step's run's own warning about the load generator (its CPU, or its waits for CPU,
    /// by fixed limits), as the run gave it. The sweep judges the step by `distorted` instead.
    pub(crate) load_generator: Option<String>,
    /// What the load generator added to each operation, in ms, measured per operation: its
    /// time from when the operation was owed to its send (`summary::ToolGap`), plus its
    /// threads' run-queue wait per operation while operations were in flight (None without
    /// either).
    #[serde(default)]
    pub(crate) generator_delay_ms: Option<f64>,
    /// Why the load generator, not the server, set this step's pace, judged against the step
    /// (`distortion`): such a step is marked and left out of the fit, and the sweep goes on.
    #[serde(default)]
    pub(crate) distorted: Option<String>,
    /// The step's run directory.
    pub(crate) dir: String,
    /// The documents each collection the profile does not drop held after the step (such a
    /// collection keeps what every step wrote, so later steps start from more data).
    #[serde(default)]
    pub(crate) held: Vec<Held>,
}

/// A collection's documents after a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Held {
    pub(crate) collection: String,
    pub(crate) documents: u64,
}

impl Step {
    /// A step's numbers from its run's summary (`users`: every group's users added; `window`:
    /// the measured length, warm-up left out).
    pub(crate) fn measure(
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
        let throughput =
            total.map_or(0.0, |t| crate::num::real(t.samples)) / window.as_secs_f64().max(1e-3);
        let littles_n = throughput * mean_ms / 1000.0;
        let tool = Some(Tool {
            between_ms: summary
                .runs
                .first()
                .and_then(|r| r.tool_gap)
                .and_then(|g| g.mean_ms()),
            wait_ms_per_s: summary.resources.first().and_then(|r| r.client_wait_ms.avg),
        });
        let generator_delay_ms = tool.and_then(|t| t.delay_ms(throughput, mean_ms));
        let distorted = distortion(users, littles_n, mean_ms, throughput, window, tool);
        Step {
            threads,
            users,
            throughput,
            median_ms: judged.p50_ms,
            p99_ms: judged.p99_ms,
            mean_ms,
            error_pct: judged.error_pct,
            littles_n,
            efficiency: None,
            client_cpu_pct: judged.client_cpu_pct,
            server_cpu_pct: judged.server_cpu_pct,
            late: judged.late,
            slo: (!slo.rules.is_empty()).then_some(judged.why.is_empty()),
            why: judged.why,
            load_generator: judged.load_generator,
            generator_delay_ms,
            distorted,
            dir,
            held: Vec::new(),
        }
    }
}

/// What the load generator did to a step's operations over its measured window, measured, not
/// inferred from a timer: a heartbeat's wake-up lag is the timer's granularity (about a
/// millisecond on any step, busy or not), not a delay of the operations, and is not used.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tool {
    /// Its mean time per operation from when the operation was owed to its send, ms
    /// (`summary::ToolGap`): outside the operation's latency.
    pub(crate) between_ms: Option<f64>,
    /// Its threads' time waiting to run, ms per second (schedstat), all threads added.
    pub(crate) wait_ms_per_s: Option<f64>,
}

impl Tool {
    /// Its run-queue wait per operation at `throughput` operations/s, ms: the wait spread over
    /// the operations, and at most their mean latency `mean_ms` (a wait while an operation is
    /// in flight is inside its latency; one longer than it was not while one was in flight).
    fn wait_per_op_ms(&self, throughput: f64, mean_ms: f64) -> Option<f64> {
        self.wait_ms_per_s
            .filter(|_| throughput > 0.0)
            .map(|w| (w / throughput).min(mean_ms.max(0.0)))
    }

    /// What it added to each operation, ms: its time before the send plus its run-queue wait
    /// per operation.
    pub(crate) fn delay_ms(&self, throughput: f64, mean_ms: f64) -> Option<f64> {
        match (self.between_ms, self.wait_per_op_ms(throughput, mean_ms)) {
            (None, None) => None,
            (b, w) => Some(b.unwrap_or(0.0) + w.unwrap_or(0.0)),
        }
    }
}

/// Whether the load generator, not the server, set a step's pace, judged against the step and
/// not by fixed limits: its `users` were between operations (Little's N = X x R short of them)
/// more than MAX_GENERATOR_SHARE of the time, or its delay per operation (`Tool::delay_ms`) was
/// more than MAX_GENERATOR_SHARE of the operations' mean latency. A step where every user was
/// busy and the tool's delay was a few percent of the latency is the server's, even on a
/// machine the server keeps busy. None when the step is the server's; else why, in words.
///
/// X counts the operations that started in the measured `window`: each user starts window / R
/// of them, give or take one, so X x R may fall short of the users by up to R / window with
/// every user busy (all users start together, so their edges do not average out). That much
/// shortfall is allowed on top.
pub(crate) fn distortion(
    users: u32,
    littles_n: f64,
    mean_ms: f64,
    throughput: f64,
    window: std::time::Duration,
    tool: Option<Tool>,
) -> Option<String> {
    if throughput <= 0.0 || users == 0 {
        return None;
    }
    let mut why = Vec::new();
    let idle = 1.0 - littles_n / f64::from(users);
    let edges = mean_ms / (window.as_secs_f64() * 1000.0).max(1.0);
    if idle > MAX_GENERATOR_SHARE + edges {
        why.push(format!(
            "Little's N {littles_n:.1} of {users} users: they spent {:.0} % of the step between operations, waiting on the load generator",
            100.0 * idle
        ));
    }
    let tool = tool.unwrap_or_default();
    if let Some(delay) = tool.delay_ms(throughput, mean_ms).filter(|_| mean_ms > 0.0) {
        if delay >= MAX_GENERATOR_SHARE * mean_ms {
            let part = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3} ms"));
            // Little's law with the delay in: each user's cycle is the latency and the time
            // before the send, so X x (R + between) is the users busy.
            let busy = throughput * (mean_ms + tool.between_ms.unwrap_or(0.0)) / 1000.0;
            why.push(format!(
                "the load generator added {delay:.3} ms to each operation ({} before its send, run-queue wait {} while in flight), {:.0} % of the mean latency of {mean_ms:.3} ms (at {throughput:.0} operations/s, {busy:.1} of {users} users busy)",
                part(tool.between_ms),
                part(tool.wait_per_op_ms(throughput, mean_ms)),
                100.0 * delay / mean_ms
            ));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Why a sweep ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", content = "detail", rename_all = "snake_case")]
pub(crate) enum StopReason {
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
    /// The load generator, not the server, set the pace of MAX_DISTORTED_IN_A_ROW steps in a
    /// row.
    Starved(String),
    /// Ctrl-C.
    Interrupted,
    /// A step could not run.
    Failed(String),
}

impl StopReason {
    pub(crate) fn text(&self) -> String {
        match self {
            StopReason::Listed => "every step of --threads ran".into(),
            StopReason::Declined => "throughput fell at two steps in a row, and steps between the best and its neighbours bracket the peak".into(),
            StopReason::MaxThreads(n) => format!("the doubling reached --max-threads {n} before throughput fell"),
            StopReason::Slo(w) => format!("a step broke the SLO: {w}"),
            StopReason::Errors(w) => format!("a step failed {w}"),
            StopReason::Starved(w) => format!("the load generator, not the server, set the pace of {w}"),
            StopReason::Interrupted => "interrupted: the steps that completed are written and fitted".into(),
            StopReason::Failed(e) => format!("a step could not run: {e}"),
        }
    }
}

/// A sweep as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SweepResult {
    pub(crate) profile: String,
    pub(crate) slo: Vec<String>,
    /// In the order they ran.
    pub(crate) steps: Vec<Step>,
    pub(crate) fit: usl::Analysis,
    /// The most users per group whose step held the SLO, below every step that broke it.
    pub(crate) slo_knee: Option<u32>,
    pub(crate) stop: StopReason,
    pub(crate) stop_text: String,
    pub(crate) notes: Vec<String>,
}

impl SweepResult {
    pub(crate) fn new(
        profile: &str,
        slo: &[String],
        steps: Vec<Step>,
        stop: StopReason,
        notes: Vec<String>,
    ) -> SweepResult {
        let fit = analyse(&steps, &stop);
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
    pub(crate) fn by_threads(&self) -> Vec<&Step> {
        by_threads(&self.steps)
    }
}

/// Steps by users, ascending.
pub(crate) fn by_threads(steps: &[Step]) -> Vec<&Step> {
    let mut s: Vec<&Step> = steps.iter().collect();
    s.sort_by_key(|s| s.threads);
    s
}

/// Throughput fell at the last two steps of the doubling (in order of users).
fn fell_twice(steps: &[&Step]) -> bool {
    let mut s = steps.to_vec();
    s.sort_by_key(|s| s.threads);
    s.len() >= 3 && {
        let n = s.len();
        s[n - 1].throughput < s[n - 2].throughput && s[n - 2].throughput < s[n - 3].throughput
    }
}

/// The steps to run: the listed ones, in order; or doubled from `first` (1, or the parts of a
/// coordinated sweep, each of which needs a user) to `max`, then up to REFINE_STEPS between the
/// best step and its neighbours. None when the sweep is done, with why.
/// Throughput's turn and the best step are read from the steps the load generator did not
/// distort: a distorted step's throughput is the generator's.
pub(crate) fn next(
    steps: &[Step],
    listed: Option<&[u32]>,
    max: u32,
    first: u32,
) -> Result<u32, StopReason> {
    let first = first.max(1);
    if let Some(list) = listed {
        return list
            .iter()
            .copied()
            .find(|n| !steps.iter().any(|s| s.threads == *n))
            .ok_or(StopReason::Listed);
    }
    let Some(last) = steps.iter().map(|s| s.threads).max() else {
        return Ok(first.min(max));
    };
    let doubling = |s: &&Step| {
        (s.threads.is_multiple_of(first) && (s.threads / first).is_power_of_two())
            || s.threads == max
    };
    // Doubling, until throughput fell twice in a row (the doubled steps alone).
    let doubled: Vec<&Step> = steps
        .iter()
        .filter(doubling)
        .filter(|s| s.distorted.is_none())
        .collect();
    if !fell_twice(&doubled) {
        if last >= max {
            return Err(StopReason::MaxThreads(max));
        }
        return Ok((last * 2).min(max));
    }
    let refined = steps.iter().filter(|s| !doubling(s)).count();
    if refined >= REFINE_STEPS {
        return Err(StopReason::Declined);
    }
    let judged: Vec<Step> = steps
        .iter()
        .filter(|s| s.distorted.is_none())
        .cloned()
        .collect();
    let s = by_threads(&judged);
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

/// Why the sweep ends after its last step, if it does: that step broke the SLO or failed more
/// than MAX_ERROR_PCT of its operations, or the load generator distorted the last
/// MAX_DISTORTED_IN_A_ROW steps (a step it distorted alone is marked, and the sweep goes on).
pub(crate) fn stops(steps: &[Step]) -> Option<StopReason> {
    let step = steps.last()?;
    if step.slo == Some(false) {
        return Some(StopReason::Slo(step.why.join("; ")));
    }
    if step.error_pct > MAX_ERROR_PCT {
        return Some(StopReason::Errors(format!(
            "{:.2} % of its operations at {} users per group, above {MAX_ERROR_PCT} %",
            step.error_pct, step.threads
        )));
    }
    let row = steps.len().checked_sub(MAX_DISTORTED_IN_A_ROW)?;
    let distorted: Vec<&Step> = steps[row..]
        .iter()
        .filter(|s| s.distorted.is_some())
        .collect();
    (distorted.len() == MAX_DISTORTED_IN_A_ROW).then(|| {
        let each: Vec<String> = distorted.iter().map(|s| s.threads.to_string()).collect();
        StopReason::Starved(format!(
            "{MAX_DISTORTED_IN_A_ROW} steps in a row ({} users per group); at {}: {}",
            each.join(", "),
            step.threads,
            step.distorted.as_deref().unwrap_or_default()
        ))
    })
}

/// Fills each step's efficiency X(N) / (N X(1)) from the step at one user per group (or, in a
/// coordinated sweep that begins at one user a part, X(N) N0 / (N X(N0)) from its first, N0).
pub(crate) fn efficiencies(steps: &mut [Step]) {
    let Some((n0, x0)) = steps
        .iter()
        .min_by_key(|s| s.threads)
        .map(|s| (s.threads, s.throughput))
    else {
        return;
    };
    for s in steps.iter_mut() {
        s.efficiency =
            (x0 > 0.0).then(|| s.throughput * f64::from(n0) / (f64::from(s.threads) * x0));
    }
}

/// Why a step's throughput says nothing about the server, if it does not: the load generator
/// distorted it, it failed more than MAX_ERROR_PCT of its operations, or it did none. Such a
/// step is left out of the fit.
pub(crate) fn unfit(s: &Step) -> Option<&'static str> {
    if s.distorted.is_some() {
        Some("the load generator")
    } else if s.error_pct > MAX_ERROR_PCT {
        Some("errors")
    } else if s.throughput <= 0.0 {
        Some("no throughput")
    } else {
        None
    }
}

/// The fit of the whole throughput against users per group (N), the steps `unfit` names left
/// out and said, with what to do when there is no fit, by why the sweep stopped.
pub(crate) fn analyse(steps: &[Step], stop: &StopReason) -> usl::Analysis {
    let points: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| unfit(s).is_none())
        .map(|s| (f64::from(s.threads), s.throughput))
        .collect();
    let mut a = usl::analyse(&points);
    let out: Vec<String> = by_threads(steps)
        .into_iter()
        .filter_map(|s| unfit(s).map(|why| format!("{} ({why})", s.threads)))
        .collect();
    if !out.is_empty() {
        a.notes.push(format!(
            "left out of the fit, as their throughput says nothing about the server: {} users per group",
            out.join(", ")
        ));
    }
    if a.peak_n.is_none() {
        if let Some(limit) = server_limit(steps) {
            a.notes.push(limit);
        }
    }
    if a.parameters.is_none() {
        a.notes.push(advice(steps, points.len(), stop));
    }
    a
}

/// The server as the limit, in words, when its CPU says so: from some step on, the server's CPU
/// stayed within 10 % of the most it reached (and that at least 80 %, most of a core), at two
/// steps or more whose users at least doubled, while throughput rose by less than a quarter. None
/// otherwise: then the steps cannot tell.
fn server_limit(steps: &[Step]) -> Option<String> {
    let usable: Vec<&Step> = by_threads(steps)
        .into_iter()
        .filter(|s| unfit(s).is_none())
        .collect();
    let most = usable
        .iter()
        .filter_map(|s| s.server_cpu_pct)
        .fold(0.0, f64::max);
    if most < 80.0 {
        return None;
    }
    let pegged = |s: &&Step| s.server_cpu_pct.is_some_and(|c| c >= 0.9 * most);
    let from = usable.iter().position(pegged)?;
    let level = &usable[from..];
    let first = level.first()?;
    let last = level.last()?;
    let best = level.iter().map(|s| s.throughput).fold(0.0, f64::max);
    if level.len() < 2
        || !level.iter().all(pegged)
        || last.threads < 2 * first.threads
        || best > 1.25 * first.throughput
    {
        return None;
    }
    let low = level
        .iter()
        .filter_map(|s| s.server_cpu_pct)
        .fold(f64::MAX, f64::min);
    let least = level.iter().map(|s| s.throughput).fold(f64::MAX, f64::min);
    Some(format!(
        "the server is the limit: from {} users per group on, its CPU stayed at {low:.0}-{most:.0} % (the most it reached) while throughput stayed between {least:.0} and {best:.0}/s with {}x the users; how the curve would bend beyond, these steps cannot tell",
        first.threads,
        last.threads / first.threads.max(1)
    ))
}

/// What would give a fit, after a sweep of `fitted` usable steps that stopped for `stop`.
fn advice(steps: &[Step], fitted: usize, stop: &StopReason) -> String {
    let ran: Vec<u32> = by_threads(steps).iter().map(|s| s.threads).collect();
    let list = |l: &[u32]| l.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    // The steps run, and as many more as the fit lacks: doubled above the largest.
    let mut more = ran.clone();
    let mut top = ran.last().copied().unwrap_or(1);
    while more.len() < ran.len() + usl::MIN_STEPS.saturating_sub(fitted) {
        top = top.saturating_mul(2);
        more.push(top);
    }
    // Or halfway between the steps run, when throughput already turned down.
    let mut between = ran.clone();
    between.extend(ran.windows(2).map(|w| (w[0] + w[1]) / 2));
    between.sort_unstable();
    between.dedup();
    match stop {
        StopReason::Listed => format!(
            "--threads gave {fitted} steps the fit can use; list more, e.g. --threads {}",
            list(&more)
        ),
        StopReason::Declined => format!(
            "throughput turned down after too few usable steps; list steps between them, e.g. --threads {}",
            list(&between)
        ),
        StopReason::MaxThreads(m) => format!(
            "the doubling stopped at --max-threads {m}; raise it, or list the steps, e.g. --threads {}",
            list(&more)
        ),
        StopReason::Slo(_) => "the sweep ends at the first step that breaks --slo; sweep without --slo to fit the curve beyond it (the SLO knee is read from these steps)".into(),
        StopReason::Errors(_) => "a step failed too many of its operations: its report (under steps/) says which and why; fix that and sweep again".into(),
        StopReason::Starved(_) => "the load generator set the pace step after step: give it CPU of its own (the tool on another host with --uri, or the server and the tool on separate cores), then sweep again".into(),
        StopReason::Interrupted => "the sweep was interrupted; run it to its end for a fit".into(),
        StopReason::Failed(_) => "a step could not run (the error above); fix that and sweep again".into(),
    }
}

#[cfg(test)]
mod tests;
