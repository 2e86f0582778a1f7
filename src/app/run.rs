//! `mongo-stress run`: the steps in order. Load and plan, resolve the options, prepare the run
//! directory, start or reach the server, start the sampler, run the session, show the summary.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::session::{before_load, RunOptions, Session};
use crate::cli::{ConsoleArgs, RunArgs, RunCommand};
use crate::error::Error;
use crate::monitor::{self, Sampler};
use crate::ops::connect::{self, Connected};
use crate::ops::MongoBackend;
use crate::plan::part::{self, Part, PartPlan};
use crate::plan::{profile, RunPlan};
use crate::redact::redact;
use crate::report;
use crate::rundir::Fresh;
use crate::server::{local, EmbeddedServer};
use crate::summary::{ServerInfo, ServerKind, Summary};

pub(crate) async fn run(command: RunCommand, stop: CancellationToken) -> Result<i32, Error> {
    let RunCommand { args, console } = command;
    args.overrides.one_thread_count()?;
    let loaded = profile::load_with(&args.profile, &args.overrides.genny())?;
    for n in loaded.genny.iter().flat_map(|g| &g.notes) {
        errln!("note: {n}");
    }
    let plan = RunPlan::build(&loaded, &(&args.overrides).into())?;
    if let Some(w) = plan.scale.as_ref().and_then(crate::plan::Scale::warning) {
        errln!("warning: {w}");
    }
    let part = which_part(&args)?;
    check_part(&args, part.is_some())?;
    check_faults(&args, &plan, part.is_some())?;
    let plan = divide(plan, part, &args)?;
    let opts = options(&args, &plan)?;
    check_baseline(&plan, opts.baseline.as_deref())?;
    if let Some(uri) = &args.uri {
        // A malformed URI is a usage error: refuse it before creating anything.
        connect::parse(uri).await?;
    }
    let out_dir = out_dir_path(args.out.as_deref(), &plan);
    // Live metrics and the live page: their ports are taken before anything is created or run.
    let (live, endpoint) = live_metrics(&args, &plan, &out_dir)?;
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

/// `--live`: the page's endpoint bound before anything runs (a port that cannot be had, or an
/// address beyond loopback without a token, is a usage error), and its URL said, never the
/// token. `--live-control` is for `run`: a series' steps are its own.
pub(super) fn live_page(
    args: &RunArgs,
    stop: &CancellationToken,
    command: &str,
) -> Result<Option<(crate::watch::Page, crate::watch::Endpoint)>, Error> {
    let Some(addr) = &args.live else {
        return Ok(None);
    };
    if args.live_control && command != "run" {
        return Err(Error::Usage(format!(
            "{command} sets each step's load itself, so --live-control could not change it\n  fix: leave out --live-control; --live alone shows each step as it runs"
        )));
    }
    let addr = crate::watch::listen_address(Some(addr))
        .map_err(|p| Error::Usage(format!("--live: {p}")))?;
    let (page, endpoint) = crate::watch::Page::serve(
        crate::watch::Options {
            addr,
            control: args.live_control,
            token: args.live_token.clone(),
        },
        stop.clone(),
    )?;
    errln!(
        "live: {}{}",
        endpoint.url(args.live_token.is_some()),
        if args.live_control {
            " (with controls: rate, users, stop)"
        } else {
            ""
        }
    );
    Ok(Some((page, endpoint)))
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
fn check_part(args: &RunArgs, part: bool) -> Result<(), Error> {
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
fn live_metrics(
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

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "mongo-stress".into())
}

/// Faults on the server's process and its flags need the embedded server; a run in parts
/// cannot audit or fault one deployment from several machines. Checked before anything runs.
fn check_faults(args: &RunArgs, plan: &RunPlan, part: bool) -> Result<(), Error> {
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

pub(super) fn options(args: &RunArgs, plan: &RunPlan) -> Result<RunOptions, Error> {
    // Checked here, not by clap, whose message would repeat the value with its password.
    crate::monitor::scrape::check_urls(&server_metrics(args, plan))
        .map_err(|p| Error::Usage(format!("--server-metrics: {p}")))?;
    let start_at = args
        .start_at
        .as_deref()
        .map(|s| part::parse_start_at(s, SystemTime::now()))
        .transpose()
        .map_err(|e| Error::Usage(format!("--start-at: {e}")))?;
    // Parts must agree on the seed: without --seed they derive it from what they share.
    let seed = args.seed.unwrap_or_else(|| match &plan.part {
        Some(p) => part::shared_seed(&plan.name, p.part.count, args.start_at.as_deref()),
        None => rand::random(),
    });
    Ok(RunOptions {
        seed,
        start_at,
        repeat: args.repeat,
        live: (!args.quiet).then_some(args.interval),
        chatty: !args.quiet,
        foreign: if args.force {
            crate::ops::setup::Foreign::Drop
        } else {
            crate::ops::setup::Foreign::Refuse
        },
        samples: !args.no_samples,
        jtl: args.jtl.clone(),
        hdr_interval: args.hdr_interval,
        interval_log: !args.no_interval_log,
        baseline: args.baseline.clone(),
        tags: tags(args)?,
    })
}

/// `--tag KEY=VALUE`s as a map; a key given twice is refused.
fn tags(args: &RunArgs) -> Result<std::collections::BTreeMap<String, String>, Error> {
    let mut out = std::collections::BTreeMap::new();
    for t in &args.tags {
        let (k, v) = crate::history::ledger::parse_tag(t).map_err(Error::Usage)?;
        if let Some(before) = out.insert(k.clone(), v) {
            return Err(Error::Usage(format!(
                "--tag {k} is given twice (first {k}={before})\n  fix: one value per key"
            )));
        }
    }
    if args.append && args.tsv.as_deref().is_none_or(|p| p.as_os_str() == "-") {
        return Err(Error::Usage(
            "--append adds this run's rows to the file --tsv names, and none is named\n  fix: --tsv FILE --append (a file, not -)".into(),
        ));
    }
    Ok(out)
}

/// The server the run talks to: one the tool started, or the one `--uri` names.
pub(super) struct Server {
    pub(super) embedded: Option<std::sync::Arc<EmbeddedServer>>,
    pub(super) uri: String,
    pub(super) connected: Connected,
    version: String,
}

impl Server {
    pub(super) async fn reach(
        args: &RunArgs,
        plan: &RunPlan,
        say: &impl Fn(String),
    ) -> Result<Self, Error> {
        let (embedded, uri) = match &args.uri {
            Some(u) => (None, u.clone()),
            None => {
                let s = std::sync::Arc::new(
                    EmbeddedServer::launch(
                        args.server_bin.clone(),
                        plan.server_args.clone(),
                        args.server_data.clone(),
                    )
                    .await?,
                );
                say(format!(
                    "embedded server: {} (pid {}) on {}, data in {}",
                    s.version,
                    s.pid(),
                    s.address,
                    s.data_dir().display()
                ));
                let uri = s.uri();
                (Some(s), uri)
            }
        };
        let open_loop = plan.groups().any(|g| g.rate.is_some());
        let connected = match connect::connect(&uri, plan.target.pool_size, open_loop).await {
            Ok(c) => c,
            Err(e) => {
                if let Some(s) = embedded {
                    s.shut_down().await;
                }
                return Err(e);
            }
        };
        let version = match &embedded {
            Some(s) => format!("{} ({})", s.version, connected.server_version),
            None => connected.server_version.clone(),
        };
        say(format!("connected to {} ({version})", redact(&uri)));
        Ok(Server {
            embedded,
            uri,
            connected,
            version,
        })
    }

    pub(super) fn info(&self) -> ServerInfo {
        ServerInfo {
            kind: match self.embedded {
                Some(_) => ServerKind::Embedded,
                None => ServerKind::External,
            },
            version: self.version.clone(),
            uri: redact(&self.uri),
        }
    }

    pub(super) async fn shut_down(self) {
        if let Some(s) = self.embedded {
            s.shut_down().await;
        }
    }
}

/// The exporter endpoints: `--server-metrics`, else `MONGO_STRESS_SERVER_METRICS`, else the
/// profile's `target.server_metrics`.
fn server_metrics(args: &RunArgs, plan: &RunPlan) -> Vec<String> {
    if !args.server_metrics.is_empty() {
        return args.server_metrics.clone();
    }
    match std::env::var("MONGO_STRESS_SERVER_METRICS") {
        Ok(v) if !v.trim().is_empty() => monitor::scrape::split_env(&v),
        _ => plan.target.server_metrics.clone(),
    }
}

/// Finds the server process to sample (ours, `--server-pid`, or the listener of a loopback
/// URI's port) and starts sampling into `resources.tsv`.
/// Who is shown each of the sampler's rows besides `resources.tsv`: the live metrics, the live
/// page.
pub(super) type ShownTo<'a> = (
    Option<&'a crate::exporter::Exporter>,
    Option<&'a crate::watch::Page>,
);

pub(super) async fn start_sampler(
    args: &RunArgs,
    plan: &RunPlan,
    server: &Server,
    out_dir: &Path,
    say: &impl Fn(String),
    events: &std::sync::Arc<monitor::EventMark>,
    (exporter, page): ShownTo<'_>,
) -> Result<Sampler, Error> {
    let server_metrics = server_metrics(args, plan);
    let server_pid = match (&server.embedded, args.server_pid) {
        (Some(s), _) => Some(s.pid()),
        (None, Some(pid)) => Some(pid),
        // Exporters name the server's host: no guess at a local process (--server-pid still
        // names one).
        (None, None) if !server_metrics.is_empty() => None,
        (None, None) => match local::local_port(&server.uri).await {
            Some(port) => tokio::task::spawn_blocking(move || local::pid_listening_on(port))
                .await
                .ok()
                .flatten(),
            None => None,
        },
    };
    let data_dir = match &server.embedded {
        Some(s) => Some(s.data_dir().to_path_buf()),
        None => local::data_dir_of(&server.connected.client, server_pid).await,
    };
    match (server_pid, &server.embedded) {
        (Some(pid), None) => say(format!(
            "sampling server process {pid}{}",
            data_dir
                .as_ref()
                .map_or(String::new(), |d| format!(", data in {}", d.display()))
        )),
        (None, _) if !server_metrics.is_empty() => say("no local server process sampled: server CPU and disks from the exporters (--server-pid names a local one)".into()),
        (None, _) => say("server process not found on this host: resources.tsv has serverStatus columns only (--server-pid names it, --server-metrics reads a remote host)".into()),
        _ => {}
    }
    let hosts: Vec<String> = server_metrics
        .iter()
        .map(|u| monitor::scrape::host_of(u))
        .collect();
    for u in &server_metrics {
        say(format!(
            "server metrics from {} (columns @{})",
            monitor::scrape::shown(u),
            monitor::scrape::host_of(u)
        ));
    }
    let file =
        crate::rundir::ResourcesFile::create(&crate::rundir::File::Resources.path(out_dir), &hosts)
            .map_err(before_load)?;
    let target = monitor::Target {
        // Its own client: serverStatus must not wait in the virtual users' pool.
        client: connect::monitor(&server.uri).await?,
        // The embedded server's pid follows its restarts.
        server_pid: match &server.embedded {
            Some(s) => Some(s.pid_cell()),
            None => server_pid.map(|p| std::sync::Arc::new(std::sync::atomic::AtomicU32::new(p))),
        },
        data_dir,
        server_metrics,
        events: std::sync::Arc::clone(events),
        members: if args.no_members {
            None
        } else {
            Some(monitor::members::MembersTarget {
                options: connect::parse(&server.uri).await?,
                sink: Box::new(crate::rundir::members::MembersFile::new(
                    &crate::rundir::File::Members.path(out_dir),
                )),
            })
        },
    };
    let sink: Box<dyn monitor::RowSink> = match exporter {
        Some(e) => Box::new(crate::exporter::Tee(Box::new(file), e.clone())),
        None => Box::new(file),
    };
    let sink: Box<dyn monitor::RowSink> = match page {
        Some(p) => Box::new(crate::watch::Tee(sink, p.clone(), hosts.clone())),
        None => sink,
    };
    Ok(Sampler::start(target, sink))
}

/// The summary on the console (stderr when a `-` output takes stdout), as wide as a terminal
/// unless `--wide`, then `--tsv`/`--json`.
fn show(
    summary: &Summary,
    (args, out_dir): (&RunArgs, &Path),
    console: ConsoleArgs,
) -> Result<(), Error> {
    use report::layout::console_width;
    use report::table::render_within;
    let to_stdout = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if to_stdout(&args.tsv) || to_stdout(&args.json) {
        let width = console_width(&std::io::stderr(), console.wide);
        render_within(summary, width, &mut std::io::stderr().lock()).ok();
    } else {
        outln!();
        let width = console_width(&std::io::stdout(), console.wide);
        render_within(summary, width, &mut std::io::stdout().lock()).ok();
    }
    match &args.tsv {
        Some(p) if args.append => report::tsv::append(p, summary, &tags(args)?, out_dir)?,
        Some(p) => report::write_to(p, summary, report::tsv::render)?,
        None => {}
    }
    if let Some(p) = &args.json {
        report::write_to(p, summary, report::json::render)?;
    }
    Ok(())
}

/// The JTL's URL column: the deployment without options, then database.collection.
pub(super) fn jtl_url(uri: &str, plan: &RunPlan) -> String {
    format!(
        "{}/{}.{}",
        redact(uri)
            .split('?')
            .next()
            .unwrap_or("")
            .trim_end_matches('/'),
        plan.target.database,
        plan.target.collection
    )
}

/// `--out`, or `results/<profile>-<YYYYmmdd-HHMMSS>` (with `-part<I>` for a part).
fn out_dir_path(out: Option<&Path>, plan: &RunPlan) -> PathBuf {
    match out {
        Some(d) => d.to_path_buf(),
        None => {
            let part = plan
                .part
                .as_ref()
                .map_or(String::new(), |p| format!("-part{}", p.part.index));
            PathBuf::from("results").join(format!(
                "{}-{}{part}",
                plan.name,
                super::session::now_stamp()
            ))
        }
    }
}

/// The run directory of `out` (else the default path), new or empty: see `rundir::Fresh`.
pub(super) fn prepare_out_dir(out: Option<&Path>, plan: &RunPlan) -> Result<Fresh, Error> {
    Fresh::make(&out_dir_path(out, plan), out.is_none())
}
