//! `mongo-stress sweep PROFILE`: reach the server once, then run one step after another (each a
//! whole closed-loop run of the profile with every group at N users, into `OUT/steps/NN-N`),
//! let `sweep::next` pick the next N, fit the Universal Scalability Law to the steps, and show
//! and write them (`sweep.tsv`, `sweep.json`, `sweep.html`).

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::coordinate::series::{self, Runner};
use super::start::Server;
use super::steps::{self, Series};
use crate::capacity::Slo;
use crate::cli::SweepArgs;
use crate::coordinate::SeriesKind;
use crate::error::Error;
use crate::ops::connect;
use crate::plan::series::{StepLoad, StepSpec};
use crate::plan::RunPlan;
use crate::report;
use crate::summary::Summary;
use crate::sweep::{self, Step, StopReason, SweepResult};

/// A step's warm-up without --warmup.
const DEFAULT_WARMUP: Duration = Duration::from_secs(5);

pub(crate) async fn sweep(args: SweepArgs, stop: CancellationToken) -> Result<i32, Error> {
    if let Some(list) = args.watchers.clone() {
        return watchers(args, &list.0, stop).await;
    }
    let run = &args.run;
    let o = &run.overrides;
    let mut base = steps::base_plan(
        "sweep",
        run,
        &[
            (o.rate.is_some(), "--rate", "capacity, for open-loop rates"),
            (
                run.start_at.is_some(),
                "--start-at",
                "`at`, cron or a CI schedule to start the sweep later (each step starts when the last ends)",
            ),
            (
                run.baseline.is_some(),
                "--baseline",
                "--slo for each step, and `compare` of two sweeps for a change",
            ),
        ],
        "runs each step closed loop for --step after --warmup",
    )?;
    let listed: Option<Vec<u32>> = o.threads.as_ref().map(|t| t.0.clone());
    let warmup = o.warmup.unwrap_or(DEFAULT_WARMUP);
    check_profile(&base)?;
    let (slo, groups) = slo_and_groups(&args, &base)?;
    let most = listed
        .as_ref()
        .and_then(|l| l.iter().max().copied())
        .unwrap_or(args.max_threads);
    let notes = prepare(&mut base, most.saturating_mul(groups));
    let doc = series::coordinated(SeriesKind::Sweep, run)?;
    let first = run.parts.filter(|_| doc.is_some()).unwrap_or(1);
    check_parts(first, listed.as_deref(), args.max_threads)?;
    let mut series = Series::start("sweep", run, &base, &stop).await?;
    let out_dir = &series.out_dir;
    let say = |msg: String| series.say(msg);
    say(opening(
        &args,
        &base,
        warmup,
        listed.as_deref(),
        out_dir,
        first,
    ));
    let Some(runner) = Runner::start(doc, run, &base, &series, &stop)
        .await
        .map_err(|e| series.failed(e))?
    else {
        return Ok(series.interrupted());
    };
    let sweeper = Sweeper {
        args: &args,
        base: &base,
        series: &series,
        runner: &runner,
        stop: &stop,
        listed: listed.as_deref(),
        warmup,
        slo: &slo,
        groups,
    };
    let (mut steps, reason, failure) = sweeper.run_steps().await;
    runner.shut_down().await;
    if steps.is_empty() {
        if let Some(e) = failure {
            return Err(series.failed(e));
        }
    }
    sweep::efficiencies(&mut steps);
    let result = SweepResult::new(&base.name, &args.slo, steps, reason, notes);
    show_and_write(&result, out_dir)?;
    say(format!("results: {}", out_dir.display()));
    let code = exit_code(&result.stop);
    series.end_page(code);
    Ok(code)
}

/// The SLO the steps are judged by (`--slo`, else none, with every error allowed), and the
/// number of groups (at least 1).
fn slo_and_groups(args: &SweepArgs, base: &RunPlan) -> Result<(Slo, u32), Error> {
    let names: Vec<String> = base.groups().map(|g| g.name.clone()).collect();
    let slo = if args.slo.is_empty() {
        Slo {
            rules: Vec::new(),
            error_pct: 100.0,
        }
    } else {
        Slo::parse(&args.slo, &names, 100.0)?
    };
    let groups = u32::try_from(names.len()).unwrap_or(u32::MAX).max(1);
    Ok((slo, groups))
}

/// Raises the connection pool to the `users` of the largest step, and returns the notes the
/// result shows: the profile's rates set aside, that raise, and whether each step starts from
/// the same data.
fn prepare(base: &mut RunPlan, users: u32) -> Vec<String> {
    let mut notes = Vec::new();
    let rates: Vec<String> = base
        .groups()
        .filter_map(|g| g.rate.map(|r| format!("{} {r}/s", g.name)))
        .collect();
    if !rates.is_empty() {
        notes.push(format!(
            "the profile's rates ({}) were set aside: every step runs closed loop, each user sending its next operation when the last one ends (`capacity` finds the highest rate held)",
            rates.join(", ")
        ));
    }
    if base.target.pool_size < users {
        notes.push(format!(
            "the connection pool was raised from {} to {users}, the users of the largest step the sweep may run, so that no user waits for a connection",
            base.target.pool_size
        ));
        base.target.pool_size = users;
    }
    if base.collections.iter().any(|c| !c.setup.drop) {
        notes.push("a collection the profile does not drop keeps what each step wrote: later steps start from more data (setup.drop = true brings every step back to the same start)".into());
    } else if !base.collections.is_empty() {
        notes.push(
            "every step starts from the same data: its collections are dropped and preloaded again before it"
                .into(),
        );
    }
    notes
}

/// Each part must have a user of every group at every step: a coordinated sweep's steps begin
/// at `parts` users per group.
fn check_parts(parts: u32, listed: Option<&[u32]>, max: u32) -> Result<(), Error> {
    let fewest = listed.map_or(max, |l| l.iter().copied().min().unwrap_or(max));
    if fewest < parts {
        return Err(Error::Usage(format!(
            "a sweep across {parts} parts needs at least {parts} users per group at each step (one a part), but {} is {fewest}\n  fix: {} of at least {parts}",
            if listed.is_some() { "the smallest of --threads" } else { "--max-threads" },
            if listed.is_some() { "list users per group" } else { "a --max-threads" }
        )));
    }
    Ok(())
}

/// The sweep's first line: the profile, the steps' length and warm-up, the users per group
/// (`listed`, or doubled from `first` up to `--max-threads`) and where the results go.
fn opening(
    args: &SweepArgs,
    base: &RunPlan,
    warmup: Duration,
    listed: Option<&[u32]>,
    out_dir: &Path,
    first: u32,
) -> String {
    format!(
        "sweep of {} (steps of {} after a {} warm-up, {}), results in {}",
        base.name,
        humantime::format_duration(args.step),
        humantime::format_duration(warmup),
        match listed {
            Some(l) => format!(
                "users per group {}",
                l.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            None => format!(
                "users per group doubled from {first} until throughput falls, at most {}",
                args.max_threads
            ),
        },
        out_dir.display()
    )
}

/// What every step of a sweep shares: the command line, the base plan, the series and the
/// server it runs on, the stop, the users per group listed (if any), the warm-up, the SLO and
/// the number of groups.
struct Sweeper<'a> {
    args: &'a SweepArgs,
    base: &'a RunPlan,
    series: &'a Series,
    runner: &'a Runner,
    stop: &'a CancellationToken,
    listed: Option<&'a [u32]>,
    warmup: Duration,
    slo: &'a Slo,
    groups: u32,
}

impl Sweeper<'_> {
    /// Runs one step after another until `sweep::next` or a step says to stop, a step fails or
    /// the run is interrupted: the steps measured, why the sweep stopped, and a failed step's
    /// error.
    async fn run_steps(&self) -> (Vec<Step>, StopReason, Option<Error>) {
        let mut steps: Vec<Step> = Vec::new();
        let mut failure: Option<Error> = None;
        let reason = loop {
            if self.stop.is_cancelled() {
                break StopReason::Interrupted;
            }
            let first = self.runner.parts();
            let n = match sweep::next(&steps, self.listed, self.args.max_threads, first) {
                Ok(n) => n,
                Err(why) => break why,
            };
            let number = steps.len() + 1;
            let spec = StepSpec::new(
                number,
                format!("steps/{number:02}-{n}"),
                StepLoad::Users { threads: n },
                self.warmup + self.args.step,
                self.warmup,
                self.base.target.pool_size,
            );
            let dir = self.series.out_dir.join(&spec.dir);
            let ran = self
                .runner
                .step(self.series, &self.args.run, self.base, &spec, self.stop)
                .await;
            match ran {
                Ok(summary) => {
                    let step = self.measure(&summary, n, &dir).await;
                    self.series.say(format!(
                        "step {}: {n} users per group, {:.1}/s, median {:.2} ms, p99 {:.2} ms, {:.2} % errors, Little's N {:.1}{}",
                        steps.len() + 1,
                        step.throughput,
                        step.median_ms,
                        step.p99_ms,
                        step.error_pct,
                        step.littles_n,
                        step.generator_delay_ms.map_or(String::new(), |d| format!(
                            ", the tool's delay {d:.2} ms an operation (mean latency {:.2} ms)",
                            step.mean_ms
                        ))
                    ));
                    if let Some(why) = &step.distorted {
                        self.series.say(format!(
                            "step {}: distorted by the load generator, left out of the fit: {why}",
                            steps.len() + 1
                        ));
                    }
                    if summary.interrupted {
                        break StopReason::Interrupted;
                    }
                    steps.push(step);
                    if let Some(why) = sweep::stops(&steps) {
                        break why;
                    }
                }
                Err(e) => {
                    let why = StopReason::Failed(e.to_string());
                    failure = Some(e);
                    break why;
                }
            }
        };
        (steps, reason, failure)
    }

    /// The step at `n` users per group measured from its `summary` (run into `dir`), with the
    /// documents each collection the profile does not drop holds after it.
    async fn measure(&self, summary: &Summary, n: u32, dir: &Path) -> Step {
        let mut step = Step::measure(
            summary,
            n,
            n.saturating_mul(self.groups),
            self.args.step,
            self.slo,
            dir.display().to_string(),
        );
        // Not after Ctrl-C: the sweep ends now.
        let kept = self.base.collections.iter().filter(|c| !c.setup.drop);
        for c in kept.filter(|_| !summary.interrupted) {
            let client = self.runner.client();
            if let Some(documents) =
                connect::document_count(client, &self.base.target.database, &c.name).await
            {
                step.held.push(sweep::Held {
                    collection: c.name.clone(),
                    documents,
                });
            }
        }
        step
    }
}

/// The result on the console, then in `sweep.tsv`, `sweep.json` and `sweep.html` in `out_dir`.
fn show_and_write(result: &SweepResult, out_dir: &Path) -> Result<(), Error> {
    report::sweep::render(result, &mut std::io::stdout().lock()).ok();
    report::write_to(
        &out_dir.join("sweep.tsv"),
        result,
        report::sweep::render_tsv,
    )?;
    report::write_to(
        &out_dir.join("sweep.json"),
        result,
        report::sweep::render_json,
    )?;
    report::write_atomically(
        &out_dir.join("sweep.html"),
        report::sweep::render_html(result).as_bytes(),
    )?;
    Ok(())
}

/// The exit code of a sweep that stopped for `stop`: an interrupted or failed run's, else OK.
fn exit_code(stop: &StopReason) -> i32 {
    match stop {
        StopReason::Interrupted => crate::summary::judge::Outcome {
            interrupted: true,
            threshold_failed: false,
            failed: false,
            data_lost: false,
        }
        .exit_code(),
        StopReason::Failed(_) => crate::summary::judge::Outcome {
            interrupted: false,
            threshold_failed: false,
            failed: true,
            data_lost: false,
        }
        .exit_code(),
        _ => crate::error::exit::OK,
    }
}

/// Steps run every group at once with the same users: one stage, no start delays, no live
/// metrics, audit or faults.
fn check_profile(plan: &RunPlan) -> Result<(), Error> {
    if plan.stages.len() > 1 {
        return Err(Error::Usage(format!(
            "sweep runs every group at once with N users each, but `{}` has {} stages\n  fix: a profile of one stage (or a copy of it with only the groups to drive)",
            plan.name,
            plan.stages.len()
        )));
    }
    if plan.metrics_listen.is_some() || plan.metrics_push.is_some() {
        return Err(Error::Usage(
            "sweep runs many steps, each its own run: live metrics are for `mongo-stress run`\n  fix: leave out [metrics] (and --metrics-listen, --metrics-push) for sweep".into(),
        ));
    }
    if plan.audit || !plan.faults.is_empty() {
        return Err(Error::Usage(
            "sweep measures how throughput grows with users; an audit or faults belong to one run at a known load\n  fix: run the profile with `mongo-stress run`, or leave out --audit and --fault".into(),
        ));
    }
    Ok(())
}

/// What a step of `sweep --watchers` measured, as its console line.
fn step_line(number: usize, step: &crate::sweep::watchers::WatchStep) -> String {
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} ms"));
    format!(
        "step {number}: {} listeners, writes {:.1}/s, p99 {:.2} ms, lag p50 {} p99 {}, missing {}",
        step.listeners,
        step.writes_per_s,
        step.write_p99_ms,
        ms(step.lag_p50_ms),
        ms(step.lag_p99_ms),
        step.missing
            .map_or("- (not judged)".to_string(), |m| m.to_string())
    )
}

/// The table on the console, and watchers.tsv, .json and .html in `out_dir`.
fn write_watchers(
    result: &crate::sweep::watchers::WatchSweep,
    out_dir: &std::path::Path,
) -> Result<(), Error> {
    report::watchers::render(result, &mut std::io::stdout().lock()).ok();
    report::write_to(
        &out_dir.join("watchers.tsv"),
        result,
        report::watchers::render_tsv,
    )?;
    report::write_to(
        &out_dir.join("watchers.json"),
        result,
        report::watchers::render_json,
    )?;
    report::write_atomically(
        &out_dir.join("watchers.html"),
        report::watchers::render_html(result).as_bytes(),
    )?;
    Ok(())
}

/// `sweep --watchers LIST`: the profile as written, once per number of listeners, every watch
/// group at that many (`0`: none); the writers' numbers and the listeners' lag per step.
async fn watchers(args: SweepArgs, list: &[u32], stop: CancellationToken) -> Result<i32, Error> {
    use crate::sweep::watchers::{WatchStep, WatchSweep};
    let run = &args.run;
    if run.coordinator.is_some() {
        return Err(Error::Usage(
            "sweep --watchers runs on one machine: its listeners' lag is read where they run\n  fix: leave out --parts and --coordinator (or sweep users across the parts without --watchers)".into(),
        ));
    }
    let o = &run.overrides;
    let base = steps::base_plan(
        "sweep --watchers",
        run,
        &[
            (
                o.threads.is_some(),
                "--threads",
                "the profile's own threads for the writers (a sweep of users is `sweep` without --watchers)",
            ),
            (run.start_at.is_some(), "--start-at", "`at` or cron"),
            (run.baseline.is_some(), "--baseline", "compare of the steps' run directories"),
            (!args.slo.is_empty(), "--slo", "the table's writers' p99 at each step"),
        ],
        "runs the profile as written at each number of listeners",
    )?;
    if !base.groups().any(|g| g.watch.is_some()) {
        return Err(Error::Usage(format!(
            "--watchers steps the listeners of the profile's watch groups, and {} has none\n  fix: add a group with `watch = {{ collection = \"...\" }}` (docs/change-streams.md), or try the bundled profile: mongo-stress sweep change-streams --watchers 0,1,15",
            base.name
        )));
    }
    let loaded = crate::plan::profile::load_with(&run.profile, &o.genny())?;
    let series = Series::start("sweep", run, &base, &stop).await?;
    let out_dir = series.out_dir.clone();
    let say = |msg: String| series.say(msg);
    say(format!(
        "sweep of {} over listeners per watch group {} (each step the profile as written; --step is not used), results in {}",
        base.name,
        list.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        out_dir.display()
    ));
    let server = Server::reach(run, &base, &say)
        .await
        .map_err(|e| series.failed(e))?;
    let mut result = WatchSweep {
        profile: base.name.clone(),
        ..WatchSweep::default()
    };
    let mut failure = None;
    for (i, n) in list.iter().enumerate() {
        if stop.is_cancelled() {
            result.stopped = Some("interrupted".into());
            break;
        }
        let mut overrides: crate::plan::Overrides = o.into();
        overrides.watchers = Some(*n);
        let plan = match RunPlan::build(&loaded, &overrides) {
            Ok(p) => p,
            Err(e) => {
                failure = Some(Error::from(e));
                break;
            }
        };
        let dir = out_dir.join("steps").join(format!("{:02}-{n}", i + 1));
        match series.run_step(run, &server, &plan, &dir, &stop).await {
            Ok(summary) => {
                let step = WatchStep::measure(&summary, *n, dir.display().to_string());
                say(step_line(i + 1, &step));
                let interrupted = summary.interrupted;
                result.steps.push(step);
                if interrupted {
                    result.stopped = Some("interrupted".into());
                    break;
                }
            }
            Err(e) => {
                result.stopped = Some(format!("step {} failed: {e}", i + 1));
                failure = Some(e);
                break;
            }
        }
    }
    server.shut_down().await;
    if result.steps.is_empty() {
        if let Some(e) = failure {
            return Err(series.failed(e));
        }
    }
    write_watchers(&result, &out_dir)?;
    say(format!("results: {}", out_dir.display()));
    let code = match (&result.stopped, failure) {
        (Some(s), _) if s == "interrupted" => exit_code(&StopReason::Interrupted),
        (_, Some(e)) => exit_code(&StopReason::Failed(e.to_string())),
        _ => 0,
    };
    let mut series = series;
    series.end_page(code);
    Ok(code)
}
