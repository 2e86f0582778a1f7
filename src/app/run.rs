//! `mongo-stress run`: the steps in order. Load and plan, resolve the options, prepare the run
//! directory, start or reach the server, start the sampler, run the session, show the summary.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::session::{RunOptions, Session};
use crate::cli::{ConsoleArgs, RunArgs, RunCommand};
use crate::error::Error;
use crate::monitor::{self, Sampler};
use crate::ops::connect::{self};
use crate::ops::MongoBackend;
use crate::plan::part::{self, Part, PartPlan};
use crate::plan::{profile, RunPlan};
use crate::rundir::Fresh;
use crate::summary::Summary;

use super::start::*;

pub(crate) async fn run(command: RunCommand, stop: CancellationToken) -> Result<i32, Error> {
    run_linked(command, stop, None).await
}

/// `run`; a coordinated part's with its `link` to the coordinator.
pub(crate) async fn run_linked(
    command: RunCommand,
    stop: CancellationToken,
    link: Option<std::sync::Arc<crate::coordinate::link::Link>>,
) -> Result<i32, Error> {
    let RunCommand { args, console } = command;
    args.overrides.one_thread_count()?;
    let loaded = profile::load_with(&args.profile, &args.overrides.genny())?;
    for n in loaded.genny.iter().flat_map(|g| &g.notes) {
        errln!("note: {n}");
    }
    if loaded.genny.as_ref().is_some_and(|g| g.idle) {
        errln!("nothing to run: {}", crate::plan::genny::IDLE);
        return Ok(crate::error::exit::OK);
    }
    let plan = RunPlan::build(&loaded, &(&args.overrides).into())?;
    if let Some(w) = plan.scale.as_ref().and_then(crate::plan::Scale::warning) {
        errln!("warning: {w}");
    }
    if let Some(line) = plan
        .scale
        .as_ref()
        .and_then(crate::plan::Scale::threads_line)
    {
        errln!("{line}");
    }
    let part = which_part(&args)?;
    check_part(&args, part.is_some())?;
    check_faults(&args, &plan, part.is_some())?;
    let plan = divide(plan, part, &args)?;
    let mut opts = options(&args, &plan)?;
    opts.link = link;
    check_baseline(&plan, opts.baseline.as_deref())?;
    if let Some(uri) = &args.uri {
        // A malformed URI is a usage error: refuse it before creating anything.
        connect::parse(uri).await?;
    }
    let out_dir = out_dir_path(args.out.as_deref(), &plan);
    // Live metrics and the live page: their ports are taken before anything is created or run.
    // A coordinated part serves neither: its coordinator serves the whole run's.
    let (live, endpoint) = if opts.link.is_some() {
        (None, None)
    } else {
        live_metrics(&args, &plan, &out_dir)?
    };
    let page = live_page(&args, &stop, "run")?;
    // New, or empty: a run never mixes with another's files; and one that fails before it
    // measured anything (the server unreachable, a refusal at setup) leaves nothing behind.
    let fresh = Fresh::make(&out_dir, args.out.is_none())?;
    super::writing_into(&fresh.dir);
    let loaded = load(
        Load {
            args: &args,
            plan: &plan,
            part,
            opts: &opts,
            out_dir: &fresh.dir,
            stop: &stop,
            page: page.as_ref().map(|p| &p.0),
        },
        live,
        endpoint,
        console,
    )
    .await;
    if let Some((page, endpoint)) = page {
        if let Err(e) = &loaded {
            page.end(
                &format!("failed: {e}"),
                e.exit_code(),
                &fresh.dir,
                crate::rundir::File::Report.name(),
            );
        }
        endpoint.close();
    }
    if loaded.is_err() {
        fresh.discard_unmeasured();
    }
    loaded
}

/// What `load` works from.
struct Load<'a> {
    args: &'a RunArgs,
    plan: &'a RunPlan,
    part: Option<Part>,
    opts: &'a RunOptions,
    out_dir: &'a Path,
    stop: &'a CancellationToken,
    page: Option<&'a crate::watch::Page>,
}

/// The run itself, into its fresh directory: reach the server, check the templates, start the
/// sampler and the faults, run the session, show the summary.
async fn load(
    l: Load<'_>,
    live: Option<crate::exporter::Live>,
    endpoint: Option<crate::exporter::Endpoint>,
    console: ConsoleArgs,
) -> Result<i32, Error> {
    let Load {
        args,
        plan,
        part,
        opts,
        out_dir,
        stop,
        page,
    } = l;
    let say = |msg: String| {
        if opts.chatty {
            errln!("{msg}");
        }
    };
    say(opening(plan, part, opts, out_dir));
    for note in plan.groups().filter_map(rate_after_ramp) {
        say(note);
    }
    let server = Server::reach(args, plan, &say).await?;
    let server = check_templates(plan, server).await?;
    let events = std::sync::Arc::new(monitor::EventMark::default());
    let exporter = live.as_ref().map(|l| &l.exporter);
    let sampler = resources_sampler(
        args,
        plan,
        &server,
        out_dir,
        &say,
        &events,
        (exporter, page),
    )
    .await?;
    let injector = injector(plan, &server, &say, events).await?;
    let session = Session {
        plan,
        backend: MongoBackend::new(&server.connected.client, plan)
            .with_listeners(&server.uri, plan)
            .await?,
        opts,
        out_dir,
        stop,
        server: server.info(),
        command_line: crate::redact::command_line(std::env::args()),
        url: jtl_url(&server.uri, plan),
        injector,
        live: live.clone(),
        page: page.map(|p| crate::watch::PageRun {
            page: p.clone(),
            title: None,
            steerable: true,
        }),
        later_plans: Default::default(),
    };
    let result = session.run(sampler).await;
    if let (Some(p), Ok(s)) = (page, &result) {
        let outcome = s.outcome();
        p.end(
            &outcome.words(),
            outcome.exit_code(),
            out_dir,
            crate::rundir::File::Report.name(),
        );
    }
    // Its share of the live metrics goes with it: the pusher below is the last one's.
    drop(session);
    server.shut_down().await;
    let summary = finish(result, live, endpoint, (args, out_dir), console).await?;
    say(format!("results: {}", out_dir.display()));
    Ok(summary.exit_code())
}

/// What a part of a run cannot do: start its own embedded server (every part must load one
/// deployment), compare with a baseline, or repeat.
pub(super) fn check_part(args: &RunArgs, part: bool) -> Result<(), Error> {
    if part && args.uri.is_none() {
        return Err(Error::Usage(
            "the parts of a run must load one deployment, but without --uri each part would start an embedded server of its own\n  fix: give every part the same --uri (or MONGODB_URI)".into(),
        ));
    }
    if part && args.baseline.is_some() {
        return Err(Error::Usage(
            "--baseline compares a whole run, but this is one part of a run\n  fix: merge the parts, then compare the merged run with the baseline (mongo-stress compare BASE MERGED --fail-if ...)".into(),
        ));
    }
    if part && args.repeat > 1 {
        // Part 0 would set up the next run while other parts still ran the last one.
        return Err(Error::Usage(format!(
            "--repeat {} cannot be split into parts: part 0 would set up run 2 under parts still in run 1
  fix: run the parts (the Indexed Job) {} times, each with its own --out, and merge each",
            args.repeat, args.repeat
        )));
    }
    Ok(())
}

/// The plan of this part of the run (with `--setup-wait` and `--start-at`), or the whole plan.
fn divide(plan: RunPlan, part: Option<Part>, args: &RunArgs) -> Result<RunPlan, Error> {
    Ok(match part {
        Some(part) => plan.divide(PartPlan {
            part,
            setup_wait: args.setup_wait,
            start_at: args.start_at.clone(),
        })?,
        None => plan,
    })
}

/// An open-loop group's rate begins once its users have ramped up, inside its duration: said,
/// with what that leaves, so `--rate 500 --duration 5s` giving 1,500 operations is no surprise.
fn rate_after_ramp(g: &crate::plan::GroupPlan) -> Option<String> {
    let rate = g.rate?;
    if g.ramp_up.is_zero() {
        return None;
    }
    let ramp = humantime::format_duration(g.ramp_up);
    Some(match g.stop {
        crate::plan::StopAt::Duration(d) => {
            let left = d.saturating_sub(g.ramp_up);
            format!(
                "{}: {rate}/s begins after its {ramp} ramp-up, which counts in its {}: {} at {rate}/s, about {:.0} operations (ramp_up = \"0s\" starts the rate at once)",
                g.name,
                humantime::format_duration(d),
                humantime::format_duration(left),
                rate * left.as_secs_f64()
            )
        }
        _ => format!(
            "{}: {rate}/s begins after its {ramp} ramp-up (ramp_up = \"0s\" starts the rate at once)",
            g.name
        ),
    })
}

/// The run's first line: the profile, its origin, the part, the seed and where the results go.
fn opening(plan: &RunPlan, part: Option<Part>, opts: &RunOptions, out_dir: &Path) -> String {
    format!(
        "profile {} ({}){}, seed {}, results in {}",
        plan.name,
        plan.origin,
        part.map_or(String::new(), |p| format!(", part {p}")),
        opts.seed,
        out_dir.display()
    )
}

/// The server's own check of every template, before anything is written: its warnings shown;
/// on a refusal the server is shut down (the run directory is removed by `run`).
async fn check_templates(plan: &RunPlan, server: Server) -> Result<Server, Error> {
    match crate::ops::explain::check(plan, &server.connected.client).await {
        Ok(checked) => {
            for w in checked.warnings {
                errln!("warning: {w}");
            }
            Ok(server)
        }
        Err(e) => {
            server.shut_down().await;
            Err(e)
        }
    }
}

/// The resources sampler, unless `--no-resources`.
async fn resources_sampler(
    args: &RunArgs,
    plan: &RunPlan,
    server: &Server,
    out_dir: &Path,
    say: &impl Fn(String),
    events: &std::sync::Arc<monitor::EventMark>,
    shown_to: ShownTo<'_>,
) -> Result<Option<Sampler>, Error> {
    if args.no_resources {
        return Ok(None);
    }
    Ok(Some(
        start_sampler(args, plan, server, out_dir, say, events, shown_to).await?,
    ))
}

/// The fault injector, if the plan has faults (each announced), marking its events in `events`.
async fn injector(
    plan: &RunPlan,
    server: &Server,
    say: &impl Fn(String),
    events: std::sync::Arc<monitor::EventMark>,
) -> Result<Option<std::sync::Arc<crate::fault::Injector>>, Error> {
    if plan.faults.is_empty() {
        return Ok(None);
    }
    for f in &plan.faults {
        say(format!(
            "fault: {} at {} from the first stage's start",
            f.text(),
            humantime::format_duration(f.at)
        ));
    }
    Ok(Some(std::sync::Arc::new(crate::fault::Injector {
        faults: plan.faults.clone(),
        server: server.embedded.clone(),
        client: Some(connect::monitor(&server.uri).await?),
        mark: events,
    })))
}

/// After the session: the last live numbers pushed and scraped while the summary is shown
/// (none for a run that failed), then the run's summary, or why the run or its showing failed.
async fn finish(
    result: Result<Summary, Error>,
    live: Option<crate::exporter::Live>,
    endpoint: Option<crate::exporter::Endpoint>,
    (args, out_dir): (&RunArgs, &Path),
    console: ConsoleArgs,
) -> Result<Summary, Error> {
    let summary = result;
    // The last numbers pushed and scraped (the endpoint waits for one scrape of them), both at
    // once, whatever else happens below.
    let families = live.as_ref().map(|l| l.exporter.families());
    let pushed = live.and_then(|l| l.pusher).map(|p| {
        let families = families.clone().unwrap_or_default();
        tokio::task::spawn_blocking(move || p.finish(families))
    });
    let closed = endpoint.map(|e| tokio::task::spawn_blocking(move || e.close()));
    let shown = match &summary {
        Ok(s) => show(s, (args, out_dir), console),
        Err(_) => Ok(()),
    };
    if let Some(p) = pushed {
        let _ = p.await;
    }
    if let Some(c) = closed {
        let _ = c.await;
    }
    shown?;
    summary
}

/// `--metrics-listen` (else `MONGO_STRESS_METRICS_LISTEN`, clap's env, else `[metrics] listen`)
/// and `--metrics-push` likewise: the exporter, its endpoint bound (a port in use is a usage
/// error, before anything runs) and the pusher started.
pub(super) fn live_metrics(
    args: &RunArgs,
    plan: &RunPlan,
    out_dir: &Path,
) -> Result<
    (
        Option<crate::exporter::Live>,
        Option<crate::exporter::Endpoint>,
    ),
    Error,
> {
    let listen = args
        .metrics_listen
        .clone()
        .or_else(|| plan.metrics_listen.clone());
    let push = args
        .metrics_push
        .clone()
        .or_else(|| plan.metrics_push.clone());
    if listen.is_none() && push.is_none() {
        return Ok((None, None));
    }
    // The run's name: its directory's, or for a part the directory above the parts' (so all
    // parts of a run share it, and their series add up).
    let dir = match &plan.part {
        Some(_) => out_dir.parent().filter(|p| !p.as_os_str().is_empty()),
        None => Some(out_dir),
    };
    let run = dir
        .and_then(|d| d.file_name())
        .map_or_else(|| plan.name.clone(), |n| n.to_string_lossy().into_owned());
    let exporter = crate::exporter::Exporter::new(plan, &run, std::sync::Arc::new(Vec::new()));
    let endpoint = listen
        .map(|l| {
            let addr = crate::exporter::listen_address(&l)
                .map_err(|p| Error::Usage(format!("--metrics-listen: {p}")))?;
            exporter.serve(addr)
        })
        .transpose()?;
    let pusher = match push {
        Some(url) => {
            crate::exporter::check_push_url(&url)
                .map_err(|p| Error::Usage(format!("--metrics-push: {p}")))?;
            let host = hostname();
            Some(std::sync::Arc::new(crate::exporter::push::Pusher::start(
                url.clone(),
                crate::monitor::scrape::shown(&url),
                host,
            )))
        }
        None => None,
    };
    Ok((Some(crate::exporter::Live { exporter, pusher }), endpoint))
}

/// Faults on the server's process and its flags need the embedded server; a run in parts
/// cannot audit or fault one deployment from several machines. Checked before anything runs.
pub(super) fn check_faults(args: &RunArgs, plan: &RunPlan, part: bool) -> Result<(), Error> {
    if part && (plan.audit || !plan.faults.is_empty()) {
        return Err(Error::Usage(
            "an audit and faults belong to one whole run, but this is one part of a run (each part would audit only its own writes, and every part would do each fault)\n  fix: run the audit or the faults as one run, without --part/--parts".into(),
        ));
    }
    if args.uri.is_none() {
        return Ok(());
    }
    if let Some(f) = plan.faults.iter().find(|f| f.kind.needs_process()) {
        return Err(Error::Usage(format!(
            "the fault {} acts on the server's process, which only the embedded server gives the tool; --uri names a deployment it did not start\n  fix: leave out --uri (the embedded server), or use stepdown@AT+LEN, which works on any deployment you may step down",
            f.text()
        )));
    }
    if args.server_data.is_some() {
        return Err(Error::Usage(
            "--server-data is the embedded server's data directory, but --uri names a deployment the tool did not start\n  fix: leave out one of the two".into(),
        ));
    }
    if !plan.server_args.is_empty() {
        return Err(Error::Usage(format!(
            "server flags ({}) are for the embedded server, but --uri names a deployment the tool did not start\n  fix: leave out --uri, or set those flags on your own server",
            plan.server_args.join(" ")
        )));
    }
    Ok(())
}

/// Relative thresholds need a baseline, and a baseline must be a run directory: both checked
/// before anything runs (exit 2).
fn check_baseline(plan: &RunPlan, baseline: Option<&Path>) -> Result<(), Error> {
    let relative: Vec<&str> = plan
        .thresholds
        .iter()
        .filter(|t| t.relative.is_some())
        .map(|t| t.text.as_str())
        .collect();
    match baseline {
        None if !relative.is_empty() => Err(Error::Usage(format!(
            "the threshold {} is a change against a baseline run\n  fix: name that run's directory with --baseline DIR",
            relative.join(", ")
        ))),
        Some(dir) => crate::rundir::RunDir::open(dir).map(|_| ()),
        None => Ok(()),
    }
}

/// `--part I/N`, or `--parts N` with the index from `JOB_COMPLETION_INDEX`.
fn which_part(args: &RunArgs) -> Result<Option<Part>, Error> {
    match (args.part, args.parts) {
        (Some(p), _) => Ok(Some(p)),
        (None, Some(n)) => {
            Part::from_env(n, std::env::var(part::INDEX_VAR).ok().as_deref()).map(Some)
        }
        (None, None) => Ok(None),
    }
}
