//! `mongo-stress sweep PROFILE`: reach the server once, then run one step after another (each a
//! whole closed-loop run of the profile with every group at N users, into `OUT/steps/NN-N`),
//! let `sweep::next` pick the next N, fit the Universal Scalability Law to the steps, and show
//! and write them (`sweep.tsv`, `sweep.json`, `sweep.html`).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::run::Server;
use super::steps::{self, Series};
use crate::capacity::Slo;
use crate::cli::SweepArgs;
use crate::error::Error;
use crate::ops::connect;
use crate::plan::{RunPlan, StopAt};
use crate::report;
use crate::sweep::{self, Step, StopReason, SweepResult};

/// A step's warm-up without --warmup.
const DEFAULT_WARMUP: Duration = Duration::from_secs(5);

pub async fn sweep(args: SweepArgs, stop: CancellationToken) -> Result<i32, Error> {
    let run = &args.run;
    let o = &run.overrides;
    let mut base = steps::base_plan(
        "sweep",
        run,
        &[(o.rate.is_some(), "--rate", "capacity, for open-loop rates")],
        "runs each step closed loop for --step after --warmup",
    )?;
    let listed: Option<Vec<u32>> = o.threads.as_ref().map(|t| t.0.clone());
    let warmup = o.warmup.unwrap_or(DEFAULT_WARMUP);
    check_profile(&base)?;
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
    let most = listed
        .as_ref()
        .and_then(|l| l.iter().max().copied())
        .unwrap_or(args.max_threads);
    let mut notes = Vec::new();
    let users = most.saturating_mul(groups);
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
    let series = Series::start(run, &base).await?;
    let out_dir = &series.out_dir;
    let say = |msg: String| series.say(msg);
    say(format!(
        "sweep of {} (steps of {} after a {} warm-up, {}), results in {}",
        base.name,
        humantime::format_duration(args.step),
        humantime::format_duration(warmup),
        match &listed {
            Some(l) => format!(
                "users per group {}",
                l.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            None => format!(
                "users per group doubled from 1 until throughput falls, at most {}",
                args.max_threads
            ),
        },
        out_dir.display()
    ));
    let server = Server::reach(run, &base, &say).await?;
    let mut steps: Vec<Step> = Vec::new();
    let mut failure: Option<Error> = None;
    let reason = loop {
        if stop.is_cancelled() {
            break StopReason::Interrupted;
        }
        let n = match sweep::next(&steps, listed.as_deref(), args.max_threads) {
            Ok(n) => n,
            Err(why) => break why,
        };
        let plan = step_plan(&base, n, warmup + args.step, warmup);
        let dir = out_dir
            .join("steps")
            .join(format!("{:02}-{n}", steps.len() + 1));
        match series.run_step(run, &server, &plan, &dir, &stop).await {
            Ok(summary) => {
                let mut step = Step::measure(
                    &summary,
                    n,
                    n.saturating_mul(groups),
                    args.step,
                    &slo,
                    dir.display().to_string(),
                );
                // Not after Ctrl-C: the sweep ends now.
                let kept = base.collections.iter().filter(|c| !c.setup.drop);
                for c in kept.filter(|_| !summary.interrupted) {
                    let client = &server.connected.client;
                    if let Some(documents) =
                        connect::document_count(client, &base.target.database, &c.name).await
                    {
                        step.held.push(sweep::Held {
                            collection: c.name.clone(),
                            documents,
                        });
                    }
                }
                say(format!(
                    "step {}: {n} users per group, {:.1}/s, median {:.2} ms, p99 {:.2} ms, {:.2} % errors, Little's N {:.1}",
                    steps.len() + 1,
                    step.throughput,
                    step.median_ms,
                    step.p99_ms,
                    step.error_pct,
                    step.littles_n
                ));
                if summary.interrupted {
                    break StopReason::Interrupted;
                }
                let ends = sweep::stops(&step);
                steps.push(step);
                if let Some(why) = ends {
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
    server.shut_down().await;
    if steps.is_empty() {
        if let Some(e) = failure {
            return Err(e);
        }
    }
    sweep::efficiencies(&mut steps);
    let result = SweepResult::new(&base.name, &args.slo, steps, reason, notes);
    report::sweep::render(&result, &mut std::io::stdout().lock()).ok();
    report::write_to(
        &out_dir.join("sweep.tsv"),
        &result,
        report::sweep::render_tsv,
    )?;
    report::write_to(
        &out_dir.join("sweep.json"),
        &result,
        report::sweep::render_json,
    )?;
    report::write_atomically(
        &out_dir.join("sweep.html"),
        report::sweep::render_html(&result).as_bytes(),
    )?;
    say(format!("results: {}", out_dir.display()));
    Ok(match result.stop {
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
    })
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

/// The profile with every group at `threads` users, closed loop (no rate), running `length` of
/// which `warmup` is not counted, all users from the start.
fn step_plan(base: &RunPlan, threads: u32, length: Duration, warmup: Duration) -> RunPlan {
    let mut plan = base.clone();
    for stage in &mut plan.stages {
        for g in &mut stage.groups {
            g.threads = threads;
            g.rate = None;
            g.stop = StopAt::Duration(length);
            g.warmup = warmup;
            g.ramp_up = Duration::ZERO;
            g.start_delay = Duration::ZERO;
        }
    }
    plan
}
