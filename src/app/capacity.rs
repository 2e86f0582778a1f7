//! `mongo-stress capacity PROFILE --slo EXPR`: reach the server once, then run one step after
//! another (each a whole run of the profile in open loop at the offered rate, into
//! `OUT/step-NN-RATE`), judge each against the SLO, let the search pick the next rate, and show
//! and write the steps and the knee (`capacity.tsv`, `capacity.json`, `capacity.html`).

use tokio_util::sync::CancellationToken;

use super::coordinate::series::{self, Runner};
use super::steps::{self, Series};
use crate::capacity::{Search, Slo, Step};
use crate::cli::CapacityArgs;
use crate::coordinate::SeriesKind;
use crate::error::Error;
use crate::plan::series::{StepLoad, StepSpec};
use crate::plan::RunPlan;
use crate::report;
use crate::report::capacity::CapacityResult;

/// The search: the profile and the SLO checked, the server reached, one step after another
/// until the search has its knee, and the steps shown and written.
pub(crate) async fn capacity(args: CapacityArgs, stop: CancellationToken) -> Result<i32, Error> {
    let (base, slo) = checked(&args)?;
    let doc = series::coordinated(SeriesKind::Capacity, &args.run)?;
    let mut series = Series::start("capacity", &args.run, &base, &stop).await?;
    let say = |msg: String| series.say(msg);
    say(format!(
        "capacity of {} within {} (steps of {} after a {} warm-up), results in {}",
        base.name,
        args.slo.join(", "),
        humantime::format_duration(args.step),
        humantime::format_duration(args.step_warmup),
        series.out_dir.display()
    ));
    let Some(runner) = Runner::start(doc, &args.run, &base, &series, &stop)
        .await
        .map_err(|e| series.failed(e))?
    else {
        return Ok(series.interrupted());
    };
    let (steps, failure) = search(&args, &base, &slo, &series, &runner, &stop).await;
    runner.shut_down().await;
    if steps.is_empty() {
        if let Some(e) = failure {
            return Err(series.failed(e));
        }
    }
    let result = CapacityResult {
        profile: base.name.clone(),
        slo: slo.rules.iter().map(|r| r.text.clone()).collect(),
        error_pct: args.error_pct,
        knee: Search::knee(&steps),
        warnings: warnings(&steps, &base, failure.as_ref(), args.max_rate),
        steps,
        interrupted: stop.is_cancelled(),
    };
    write(&result, &series.out_dir)?;
    say(format!("results: {}", series.out_dir.display()));
    let code = crate::summary::judge::Outcome {
        interrupted: result.interrupted,
        // A search cut short by a failure found no knee, but no SLO said so.
        threshold_failed: result.knee.is_none() && failure.is_none(),
        failed: failure.is_some(),
        data_lost: false,
    }
    .exit_code();
    series.end_page(code);
    Ok(code)
}

/// The base plan (the options a step sets itself refused) and the SLO, checked before anything
/// runs.
fn checked(args: &CapacityArgs) -> Result<(RunPlan, Slo), Error> {
    let run = &args.run;
    run.overrides.one_thread_count()?;
    let o = &run.overrides;
    let base = steps::base_plan(
        "capacity",
        run,
        &[
            (o.rate.is_some(), "--rate", "--start-rate and --max-rate"),
            (o.warmup.is_some(), "--warmup", "--step-warmup"),
        ],
        "sets each step's rate, length and warm-up itself",
    )?;
    check_profile(&base)?;
    if !(0.0..=100.0).contains(&args.error_pct) {
        return Err(Error::Usage(format!(
            "--error-pct {} is not a percentage\n  fix: a number from 0 to 100, e.g. --error-pct 1",
            args.error_pct
        )));
    }
    let names: Vec<String> = base.groups().map(|g| g.name.clone()).collect();
    let slo = Slo::parse(&args.slo, &names, args.error_pct)?;
    if args.max_rate < args.start_rate {
        return Err(Error::Usage(format!(
            "--max-rate {} is below --start-rate {}\n  fix: a ceiling above the first rate",
            args.max_rate, args.start_rate
        )));
    }
    Ok((base, slo))
}

/// Steps at the rates the search picks until it has its answer, Ctrl-C or a step that could
/// not run (its error returned beside the steps that did).
async fn search(
    args: &CapacityArgs,
    base: &RunPlan,
    slo: &Slo,
    series: &Series,
    runner: &Runner,
    stop: &CancellationToken,
) -> (Vec<Step>, Option<Error>) {
    let search = Search {
        start: args.start_rate,
        max: args.max_rate,
    };
    let mut steps: Vec<Step> = Vec::new();
    while let Some(rate) = search.next(&steps) {
        if stop.is_cancelled() {
            break;
        }
        let n = steps.len() + 1;
        let load = StepLoad::Rate {
            rate,
            first: steps.is_empty(),
        };
        match step(args, (slo, base), series, runner, (load, n, rate), stop).await {
            Ok((step, interrupted)) => {
                series.say(format!(
                    "step {n}: {rate:.1}/s offered, {:.1}/s achieved, p50 {:.2} ms, p99 {:.2} ms, {:.2} % errors: {}",
                    step.achieved,
                    step.p50_ms,
                    step.p99_ms,
                    step.error_pct,
                    if step.held { "held".to_string() } else { format!("failed ({})", step.why.join("; ")) }
                ));
                if interrupted {
                    break;
                }
                steps.push(step);
            }
            Err(e) => return (steps, Some(e)),
        }
    }
    (steps, None)
}

/// Step `n` at `rate`, judged; whether Ctrl-C cut it short. A step that failed with no sign of
/// saturation (no late operation, the rate achieved) may have met a spell of this machine's
/// noise: it runs once more, and fails only if it fails again.
async fn step(
    args: &CapacityArgs,
    (slo, base): (&Slo, &RunPlan),
    series: &Series,
    runner: &Runner,
    (load, n, rate): (StepLoad, usize, f64),
    stop: &CancellationToken,
) -> Result<(Step, bool), Error> {
    let spec = |dir: String, load: StepLoad| {
        StepSpec::new(
            n,
            dir,
            load,
            args.step_warmup + args.step,
            args.step_warmup,
            base.target.pool_size,
        )
    };
    let once = spec(format!("step-{n:02}-{rate:.0}"), load.clone());
    let dir = series.out_dir.join(&once.dir);
    let summary = runner.step(series, &args.run, base, &once, stop).await?;
    let first = slo.judge(&summary, rate, dir.display().to_string());
    let again = !first.held
        && first.late == 0
        && first.achieved >= crate::capacity::ACHIEVED_SHARE * rate
        && !summary.interrupted;
    if !again {
        return Ok((first, summary.interrupted));
    }
    series.say(format!(
        "step {n}: {rate:.1}/s failed ({}) without late operations: running it again",
        first.why.join("; ")
    ));
    // Run again as it was: the data as the first run left it.
    let again = spec(
        format!("step-{n:02}-{rate:.0}-again"),
        StepLoad::Rate { rate, first: false },
    );
    let dir = series.out_dir.join(&again.dir);
    let summary = runner.step(series, &args.run, base, &again, stop).await?;
    Ok((
        slo.judge(&summary, rate, dir.display().to_string()),
        summary.interrupted,
    ))
}

/// The steps and the knee on the terminal, and as `capacity.tsv`, `.json` and `.html`.
fn write(result: &CapacityResult, out_dir: &std::path::Path) -> Result<(), Error> {
    report::capacity::render(result, &mut std::io::stdout().lock()).ok();
    report::write_to(
        &out_dir.join("capacity.tsv"),
        result,
        report::capacity::render_tsv,
    )?;
    report::write_to(
        &out_dir.join("capacity.json"),
        result,
        report::capacity::render_json,
    )?;
    report::write_atomically(
        &out_dir.join("capacity.html"),
        report::capacity::render_html(result).as_bytes(),
    )
}

/// A step offers one rate to groups that run at once: one stage, no start delays, no rate
/// steps of their own.
fn check_profile(plan: &RunPlan) -> Result<(), Error> {
    let refuse = |what: String| {
        Err(Error::Usage(format!(
            "capacity offers one rate to groups that run at once, but {what}\n  fix: a profile of one stage whose groups start together (or a copy of it with only the groups to drive)"
        )))
    };
    if plan.stages.len() > 1 {
        return refuse(format!("`{}` has {} stages", plan.name, plan.stages.len()));
    }
    if plan.metrics_listen.is_some() || plan.metrics_push.is_some() {
        return Err(Error::Usage(
            "capacity runs many short steps, each its own run: live metrics are for `mongo-stress run`\n  fix: leave out [metrics] (and --metrics-listen, --metrics-push) for capacity".into(),
        ));
    }
    if plan.audit || !plan.faults.is_empty() {
        return Err(Error::Usage(
            "capacity searches for the highest rate the deployment holds; an audit or faults belong to one run at a known load\n  fix: run the profile with `mongo-stress run` (with --rate for the load), or leave out --audit and --fault".into(),
        ));
    }
    if let Some(g) = plan.groups().find(|g| !g.start_delay.is_zero()) {
        return refuse(format!(
            "group `{}` starts after a delay (start_delay, or rate steps)",
            g.name
        ));
    }
    Ok(())
}

/// What the reader must be told about the search (and `max` the ceiling it was given): when the load generator (its CPU, or the
/// users being all busy) rather than the server may have set the knee, and a step that broke off.
fn warnings(steps: &[Step], plan: &RunPlan, failure: Option<&Error>, max: f64) -> Vec<String> {
    let mut out = Vec::new();
    if Search::knee(steps).is_some_and(|k| k >= max) {
        out.push(format!(
            "every rate up to --max-rate {max} held: the knee is above it, not at it"
        ));
    }
    if let Some(e) = failure {
        out.push(format!("the search stopped early: {e}"));
    }
    let knee = Search::knee(steps);
    let first_failed = steps
        .iter()
        .filter(|s| !s.held && knee.is_none_or(|k| s.offered > k))
        .min_by(|a, b| a.offered.total_cmp(&b.offered));
    if let Some(s) = first_failed {
        if let Some(w) = &s.load_generator {
            out.push(format!(
                "at {:.1}/s, the first rate that failed: {w}",
                s.offered
            ));
        }
        let users: u32 = plan.groups().map(|g| g.threads).sum();
        let carry = f64::from(users) * 1000.0 / s.svc_p50_ms.max(0.001);
        // Only when the users could not have carried much more than the rate that failed.
        if s.late > 0 && carry < 1.25 * s.offered {
            out.push(format!(
                "at {:.1}/s, the first rate that failed, {} operations started late: all {users} users were busy; with a service time (p50 from the actual start) of {:.2} ms that many users carry at most about {:.0}/s (users / service time), so the users (threads), not the server, may have set the knee: more threads would tell",
                s.offered,
                s.late,
                s.svc_p50_ms,
                carry
            ));
        }
    }
    out
}
