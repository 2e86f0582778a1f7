//! What every command that sends load starts from (run, sweep, capacity and their steps): the
//! server, embedded or reached; the run's options and tags; the live page; the resource sampler
//! and what it is shown to; the output directory; the JTL's URL.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::session::{before_load, RunOptions};
use crate::cli::{ConsoleArgs, RunArgs};
use crate::error::Error;
use crate::monitor::{self, Sampler};
use crate::ops::connect::{self, Connected};
use crate::plan::part::{self};
use crate::plan::RunPlan;
use crate::redact::redact;
use crate::report;
use crate::rundir::Fresh;
use crate::server::{local, EmbeddedServer};
use crate::summary::{ServerInfo, ServerKind, Summary};

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

pub(super) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "mongo-stress".into())
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
        link: None,
    })
}

/// `--tag KEY=VALUE`s as a map; a key given twice is refused.
pub(super) fn tags(args: &RunArgs) -> Result<std::collections::BTreeMap<String, String>, Error> {
    let mut out = std::collections::BTreeMap::new();
    for t in &args.tags {
        let (k, v) = crate::history::ledger::parse_tag(t).map_err(Error::Usage)?;
        if let Some(before) = out.insert(k.clone(), v) {
            return Err(Error::Usage(format!(
                "--tag {k} is given twice (first {k}={before})\n  fix: one value per key"
            )));
        }
    }
    match args.tsv.as_deref() {
        Some(p) if args.append && p.as_os_str() != "-" => {
            // Another's file is refused now, before any load, not after it.
            report::tsv::appendable(p)?;
        }
        _ if args.append => {
            return Err(Error::Usage(
                "--append adds this run's rows to the file --tsv names, and none is named\n  fix: --tsv FILE --append (a file, not -)".into(),
            ));
        }
        _ => {}
    }
    Ok(out)
}

/// The server the run talks to: one the tool started, or the one `--uri` names.
pub(super) struct Server {
    pub(super) embedded: Option<std::sync::Arc<EmbeddedServer>>,
    pub(super) uri: String,
    pub(super) connected: Connected,
    pub(super) version: String,
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
            Ok(c) => match connect::authorized(&c.client, &uri, &plan.target.database).await {
                Ok(()) => c,
                Err(e) => {
                    if let Some(s) = embedded {
                        s.shut_down().await;
                    }
                    return Err(e);
                }
            },
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
pub(super) fn server_metrics(args: &RunArgs, plan: &RunPlan) -> Vec<String> {
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
    // The port the server was found on, so that a restart there is followed.
    let mut server_port = None;
    let server_pid = match (&server.embedded, args.server_pid) {
        (Some(s), _) => Some(s.pid()),
        (None, Some(pid)) => Some(pid),
        // Exporters name the server's host: no guess at a local process (--server-pid still
        // names one).
        (None, None) if !server_metrics.is_empty() => None,
        (None, None) => match local::local_port(&server.uri).await {
            Some(port) => {
                let pid = tokio::task::spawn_blocking(move || local::pid_listening_on(port))
                    .await
                    .ok()
                    .flatten();
                server_port = pid.map(|_| port);
                pid
            }
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
        server_port,
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
pub(super) fn show(
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
pub(super) fn out_dir_path(out: Option<&Path>, plan: &RunPlan) -> PathBuf {
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
