//! A run across many load generators (`run PROFILE --parts N --coordinator ADDR`, and
//! `part --join URL`): the coordinator's steps (check the plan, serve it, wait for the parts,
//! start them together, say each merged interval and each loss, merge their run directories)
//! and a part's (fetch the plan, join, run it as part I of N, send its files). `series.rs`:
//! the steps of `sweep` and `capacity` across the parts (and here), `abort.rs`: the whole run's
//! abort thresholds.

mod abort;
mod live;
pub(super) mod series;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::cli::{PartArgs, PartLoss, RunArgs, RunCommand};
use crate::coordinate::hub::{End, Hub, MergedRow, News};
use crate::coordinate::link::Coordinator;
use crate::coordinate::{self, PartFile, PlanDoc, ProfileSource, What};
use crate::error::{exit, Error};
use crate::plan::part::{Part, PartPlan};
use crate::plan::{profile, RunPlan};
use crate::rundir::File;

/// How often the coordinator moves the run on.
pub(super) const TICK: Duration = Duration::from_millis(100);

/// After a stop, how long the coordinator waits for the parts' files.
pub(super) const STOP_WAIT: Duration = Duration::from_secs(30);

/// A clock offset this large is warned of.
const OFFSET_WARN_US: i64 = 50_000;

/// The files of a part's run directory the coordinator merges (`merge` reads them).
const PART_FILES: [File; 6] = [
    File::SummaryJson,
    File::SummaryTsv,
    File::RunJson,
    File::LatencyHlog,
    File::Resources,
    File::Members,
];

/// `run PROFILE --parts N --coordinator ADDR`.
pub(crate) async fn coordinator(
    command: RunCommand,
    stop: CancellationToken,
) -> Result<i32, Error> {
    let RunCommand { args, console } = command;
    let (doc, plan) = plan_doc(&args, None)?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-{}", plan.name, super::session::now_stamp()))
    });
    empty_out(&out)?;
    // The page's and the metrics' ports taken before any part joins.
    let mut live = live::Live::start(&args, &plan, (&stop, &out))?;
    let groups: Vec<String> = plan.groups().map(|g| g.name.clone()).collect();
    let serving = Serving::start(&args, doc, &groups, (&plan.name, &out)).await?;
    let hub = Arc::clone(&serving.hub);
    let ended = steer(&hub, &args, (&plan, live.as_mut()), &stop).await;
    serving.close().await;
    let ended = match ended {
        Ok(e) => e,
        Err(e) => {
            if let Some(l) = live {
                l.end((&format!("failed: {e}"), e.exit_code()), &out).await;
            }
            return Err(e);
        }
    };
    // `merge` reads and writes files on threads of its own: off the runtime's.
    let wide = console.wide;
    let (theirs, dir) = (Arc::clone(&hub), out.clone());
    let interrupted = ended.interrupted;
    let merged =
        tokio::task::spawn_blocking(move || merge_parts(&theirs, &dir, (Some(wide), interrupted)))
            .await
            .map_err(|e| Error::Other(e.into()))?;
    let summary = match merged {
        Ok(s) => s,
        Err(e) => {
            if let Some(l) = live {
                l.end((&format!("failed: {e}"), e.exit_code()), &out).await;
            }
            return Err(e);
        }
    };
    let (code, words) = if ended.interrupted {
        (exit::INTERRUPTED, "interrupted".to_string())
    } else if ended.lost && summary.exit_code() < exit::ERRORS {
        (exit::ERRORS, "a part was lost or failed".to_string())
    } else {
        (summary.exit_code(), summary.outcome().words())
    };
    if let Some(l) = live {
        l.end((&words, code), &out).await;
    }
    Ok(code)
}

/// The coordinator's routes, served until `close`.
pub(super) struct Serving {
    pub(super) hub: Arc<Hub>,
    served: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Listens at `--coordinator` and serves `doc` to the parts behind the token (made and said
    /// once when none was given); says how the parts join.
    pub(super) async fn start(
        args: &RunArgs,
        doc: PlanDoc,
        groups: &[String],
        (name, out): (&str, &Path),
    ) -> Result<Serving, Error> {
        // The certificate read before anything listens.
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(coordinate::tls::server_config(cert, key)?),
            _ => None,
        };
        let addr = args.coordinator.clone().unwrap_or_default();
        let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| {
            Error::Usage(format!(
                "--coordinator {addr}: cannot listen there: {e}\n  fix: give a free HOST:PORT of this machine, e.g. 0.0.0.0:7700"
            ))
        })?;
        let bound = listener.local_addr().map_err(|e| Error::Other(e.into()))?;
        // Listening on every address: the parts join by this machine's name.
        let join_at = if bound.ip().is_unspecified() {
            format!("{}:{}", super::start::hostname(), bound.port())
        } else {
            bound.to_string()
        };
        let token = match &args.token {
            Some(t) => t.clone(),
            None => {
                let t = coordinate::new_token();
                // Said once, here; never written to a file.
                errln!("token: {t} (give it to each part: --token or MONGO_STRESS_TOKEN)");
                t
            }
        };
        let what = doc.series.map_or("profile", coordinate::SeriesKind::name);
        let (parts, seed) = (doc.parts, doc.seed);
        let hub = Arc::new(Hub::new(token, doc, args.hdr_interval, groups));
        let served = CancellationToken::new();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let task = {
            let served = served.clone();
            let router = coordinate::hub::router(Arc::clone(&hub));
            let until = async move { served.cancelled().await };
            match tls {
                Some(config) => {
                    let listener = coordinate::tls::TlsListener::new(listener, config)
                        .map_err(|e| Error::Other(e.into()))?;
                    tokio::spawn(async move {
                        let _ = axum::serve(listener, router)
                            .with_graceful_shutdown(until)
                            .await;
                    })
                }
                None => tokio::spawn(async move {
                    let _ = axum::serve(listener, router)
                        .with_graceful_shutdown(until)
                        .await;
                }),
            }
        };
        errln!(
            "coordinator: {what} {name} in {parts} parts, seed {seed}, results in {}; waiting up to {} for the parts: mongo-stress part --join {scheme}://{join_at}",
            out.display(),
            humantime::format_duration(args.join_timeout)
        );
        Ok(Serving { hub, served, task })
    }

    /// The routes close, once the parts heard the last order.
    pub(super) async fn close(self) {
        tokio::time::sleep(coordinate::BEAT * 3).await;
        self.served.cancel();
        let _ = self.task.await;
    }
}

/// How the coordinated run ended.
struct Steered {
    /// A part was lost or failed.
    lost: bool,
    interrupted: bool,
}

/// The run from the joins to every part's end: each piece of news said, a lost part handled
/// as `--on-part-loss` says, Ctrl-C passed on to the parts.
async fn steer(
    hub: &Hub,
    args: &RunArgs,
    (plan, mut live): (&RunPlan, Option<&mut live::Live>),
    stop: &CancellationToken,
) -> Result<Steered, Error> {
    let began = Instant::now();
    let (mut whole, notes) = abort::WholeAbort::new(plan);
    if whole.judges() || live.is_some() {
        hub.keep_series();
    }
    for n in notes {
        errln!("{n}");
    }
    let length_us = u64::try_from(args.hdr_interval.as_micros()).unwrap_or(u64::MAX);
    let mut lost = false;
    let mut stopped_at: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = stop.cancelled(), if stopped_at.is_none() => {}
        }
        // Every part done before this tick: the tick shows their last intervals, then the run
        // is over.
        let over = hub.finished();
        for news in hub.tick() {
            match &news {
                News::Lost { .. } | News::Failed { .. } => {
                    lost = true;
                    if args.on_part_loss == PartLoss::Stop && stopped_at.is_none() {
                        hub.stop(format!(
                            "{} (--on-part-loss stop)",
                            said(&news, plan, hub.parts())
                        ));
                        stopped_at = Some(Instant::now());
                    }
                }
                News::Started { .. } => {
                    if let Some(l) = live.as_deref_mut() {
                        l.begin();
                    }
                }
                News::Interval {
                    start_us, series, ..
                } => {
                    if let (Some(l), Some(s)) = (live.as_deref_mut(), series) {
                        for change in l.interval(*start_us, length_us, s) {
                            hub.share(change);
                        }
                    }
                    let broken = series
                        .as_ref()
                        .and_then(|s| whole.interval(*start_us, length_us, s));
                    if let Some(why) = broken {
                        errln!("stopping every part: {why}");
                        hub.stop(why);
                        stopped_at.get_or_insert_with(Instant::now);
                    }
                    if args.quiet {
                        continue;
                    }
                }
                _ => {}
            }
            errln!("{}", said(&news, plan, hub.parts()));
        }
        if over {
            return Ok(Steered {
                lost,
                interrupted: stop.is_cancelled(),
            });
        }
        if stop.is_cancelled() && stopped_at.is_none() {
            hub.stop("the coordinator was interrupted".into());
            stopped_at = Some(Instant::now());
        }
        if let (Some(l), Some(_)) = (live.as_deref(), stopped_at) {
            l.stopping();
        }
        if hub.started_at().is_none() {
            join_timeout(hub, args, began)?;
        }
        if stopped_at.is_some_and(|t| t.elapsed() >= STOP_WAIT) {
            hub.give_up();
        }
    }
}

/// Not every part joined within `--join-timeout` of `began`: the run ends, the missing parts
/// named, the waiting parts told.
pub(super) fn join_timeout(hub: &Hub, args: &RunArgs, began: Instant) -> Result<(), Error> {
    if hub.joined() >= hub.parts() || began.elapsed() < args.join_timeout {
        return Ok(());
    }
    let missing: Vec<String> = hub.missing().iter().map(u32::to_string).collect();
    let why = format!(
        "{} of {} parts joined within --join-timeout {}; missing: part {}",
        hub.joined(),
        hub.parts(),
        humantime::format_duration(args.join_timeout),
        missing.join(", part ")
    );
    // The waiting parts hear it before the routes close (`Serving::close`).
    hub.stop(why.clone());
    Err(Error::Other(anyhow::anyhow!(
        "{why}; nothing was run\n  fix: start every part (mongo-stress part --join URL --token T), or a longer --join-timeout"
    )))
}

/// One piece of news in words.
pub(super) fn said(news: &News, plan: &RunPlan, parts: u32) -> String {
    match news {
        News::Joined { index, host, clock } => {
            let warn = if clock.offset_us.abs() > OFFSET_WARN_US {
                "; warning: its clock is more than 50 ms off the coordinator's, so its intervals and start are placed by the offset measured (synchronise the machines' clocks with NTP)"
            } else {
                ""
            };
            format!(
                "part {index} of {parts} joined from {host}: clock offset {:+.2} ms (round trip {:.2} ms){warn}",
                ms_signed(clock.offset_us),
                ms(clock.round_trip_us)
            )
        }
        News::AllJoined => format!("all {parts} parts joined: part 0 sets up, the others wait for it"),
        News::Started { at_us } => format!(
            "every part is set up: the stages begin at {} (the coordinator's clock)",
            humantime::format_rfc3339_millis(
                std::time::UNIX_EPOCH + Duration::from_micros(*at_us)
            )
        ),
        News::Lost { index, host } => format!(
            "part {index} (from {host}) is lost: nothing from it for {} s; its share of the load is missing from here on: {}",
            coordinate::LOST_AFTER.as_secs(),
            share(plan, *index, parts)
        ),
        News::Failed { index, error } => format!("part {index} could not run: {error}"),
        News::Done { index } => format!("part {index} is done and sent its results"),
        News::Interval {
            start_us,
            parts: from,
            rows,
            ..
        } => interval_line(*start_us, *from, rows),
    }
}

fn ms(us: u64) -> f64 {
    crate::num::real(us) / 1000.0
}

fn ms_signed(us: i64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // offsets of a few seconds at most
    let v = us as f64;
    v / 1000.0
}

/// A merged interval: each shown row's throughput, errors and percentiles, from the parts'
/// histograms added.
fn interval_line(start_us: u64, parts: usize, rows: &[MergedRow]) -> String {
    let at =
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_micros(start_us));
    let cells: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {} ops{} p50 {:.2} ms p99 {:.2} ms max {:.2} ms",
                r.tag,
                r.count,
                if r.errors > 0 {
                    format!(" ({} err)", r.errors)
                } else {
                    String::new()
                },
                ms(r.p50),
                ms(r.p99),
                ms(r.max)
            )
        })
        .collect();
    format!("{at} {parts} parts | {}", cells.join(" | "))
}

/// What part `index` of `parts` runs: each group's users and rate.
fn share(plan: &RunPlan, index: u32, parts: u32) -> String {
    let part = plan.clone().divide(PartPlan {
        part: Part {
            index,
            count: parts,
        },
        setup_wait: Duration::ZERO,
        start_at: None,
    });
    let Ok(part) = part else {
        return format!("1/{parts} of the users");
    };
    let groups: Vec<String> = part
        .groups()
        .map(|g| match g.rate {
            Some(r) => format!("{} {} users at {r}/s", g.name, g.threads),
            None => format!("{} {} users", g.name, g.threads),
        })
        .collect();
    groups.join(", ")
}

/// The plan the parts are served, checked here first as a part would check it.
/// A series' plan (`series`) is its profile's: each step's load is ordered as it comes, and a
/// sweep's users are checked against the parts by the sweep.
pub(super) fn plan_doc(
    args: &RunArgs,
    series: Option<coordinate::SeriesKind>,
) -> Result<(PlanDoc, RunPlan), Error> {
    let parts = args.parts.unwrap_or(1);
    // A sweep's --threads lists its steps.
    if series != Some(coordinate::SeriesKind::Sweep) {
        args.overrides.one_thread_count()?;
    }
    for (given, what) in [
        (args.tsv.is_some(), "--tsv"),
        (args.json.is_some(), "--json"),
        (args.jtl.is_some(), "--jtl"),
        (
            !args.overrides.genny_overrides.is_empty(),
            "--genny-override",
        ),
    ] {
        if given {
            return Err(Error::Usage(format!(
                "{what} is not yet served by {}\n  fix: leave out {what}; read the merged run directory afterwards (mongo-stress report, compare)",
                if series.is_some() {
                    "the coordinator of a sweep or capacity search (its console says each step, and each step's directory is the merged run)"
                } else {
                    "a coordinator (its console says each merged interval, and its run directory is the merged run)"
                }
            )));
        }
    }
    let loaded = profile::load_with(&args.profile, &args.overrides.genny())?;
    let whole = RunPlan::build(&loaded, &(&args.overrides).into())?;
    super::run::check_part(args, true)?;
    super::run::check_faults(args, &whole, true)?;
    // Every part's share must be a plan of its own (at least a user per group).
    let users_set_by_steps = series == Some(coordinate::SeriesKind::Sweep);
    for index in (0..parts).filter(|_| !users_set_by_steps) {
        whole.clone().divide(PartPlan {
            part: Part {
                index,
                count: parts,
            },
            setup_wait: args.setup_wait,
            start_at: None,
        })?;
    }
    let profile = match Path::new(&args.profile) {
        p if p.is_file() => ProfileSource::File {
            name: p.file_name().map_or_else(
                || "profile.toml".into(),
                |n| n.to_string_lossy().into_owned(),
            ),
            text: std::fs::read_to_string(p)
                .map_err(|e| Error::Usage(format!("cannot read {}: {e}", p.display())))?,
        },
        _ => ProfileSource::Bundled {
            name: args.profile.clone(),
        },
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    let live = args.live.is_some()
        || args.metrics_listen.is_some()
        || args.metrics_push.is_some()
        || whole.metrics_listen.is_some()
        || whole.metrics_push.is_some();
    let mut sent = args.clone();
    // The coordinator serves the page and the metrics; the parts none of their own.
    sent.live = None;
    sent.live_control = false;
    sent.live_token = None;
    sent.metrics_listen = None;
    sent.metrics_push = None;
    sent.coordinator = None;
    sent.parts = None;
    sent.out = None;
    sent.seed = Some(seed);
    Ok((
        PlanDoc {
            version: coordinate::VERSION.into(),
            parts,
            seed,
            args: sent,
            profile,
            series,
            live,
        },
        whole,
    ))
}

/// The merged run's directory must be new or empty: checked before any part joins.
fn empty_out(out: &Path) -> Result<(), Error> {
    let others = crate::rundir::fresh::others_in(out);
    let holds = std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some());
    if out.is_file() || holds || !others.is_empty() {
        return Err(Error::Usage(format!(
            "--out {} is not empty: the merged run written into it would mix with what is there\n  fix: choose a new directory with --out (it is created)",
            out.display()
        )));
    }
    Ok(())
}

/// The parts' files written out and merged into `out`, with each part's clock and fate told
/// to the summary; the merge's exit code.
pub(super) fn merge_parts(
    hub: &Hub,
    out: &Path,
    (show, interrupted): (Option<bool>, bool),
) -> Result<crate::summary::Summary, Error> {
    let members = hub.members();
    let scratch = tempfile::Builder::new()
        .prefix(".mongo-stress-parts-")
        .tempdir()
        .map_err(|e| Error::Other(e.into()))?;
    let mut dirs = Vec::new();
    for (index, m) in members.iter().enumerate() {
        if let Some((_, _, Some(End::Done(files)))) = m {
            let dir = scratch.path().join(format!("part{index}"));
            write_part(&dir, files)?;
            dirs.push(dir);
        }
    }
    if dirs.is_empty() {
        return Err(Error::Other(anyhow::anyhow!(
            "no part finished its run: nothing to merge"
        )));
    }
    let missing = dirs.len() < members.len();
    super::merge::merge_told(&dirs, out, (missing, show), |summary| {
        // The coordinator's Ctrl-C (or the page's stop) stopped every part: the run was.
        summary.interrupted |= interrupted;
        for row in &mut summary.parts {
            row.dir = format!("part {} (sent to the coordinator)", row.part);
            if let Some(Some((host, clock, _))) = members.get(row.part as usize) {
                row.host = Some(host.clone());
                row.clock_offset_ms = Some(ms_signed(clock.offset_us));
                row.round_trip_ms = Some(ms(clock.round_trip_us));
            }
        }
        for (index, m) in members.iter().enumerate() {
            let lost = match m {
                None => "never joined".to_string(),
                Some((_, _, Some(End::Lost))) => format!(
                    "lost: nothing from it for {} s",
                    coordinate::LOST_AFTER.as_secs()
                ),
                Some((_, _, Some(End::Failed(e)))) => format!("could not run: {e}"),
                _ => continue,
            };
            let host = m.as_ref().map(|(h, _, _)| h.clone());
            summary.parts.push(crate::summary::PartRow {
                part: u32::try_from(index).unwrap_or(u32::MAX),
                dir: String::new(),
                host,
                samples: 0,
                throughput: 0.0,
                client_cpu_avg: None,
                client_cpu_peak: None,
                late_start_ms: None,
                clock_offset_ms: m.as_ref().map(|(_, c, _)| ms_signed(c.offset_us)),
                round_trip_ms: m.as_ref().map(|(_, c, _)| ms(c.round_trip_us)),
                lost: Some(lost),
            });
        }
        summary.parts.sort_by_key(|p| p.part);
    })
}

fn write_part(dir: &Path, files: &[PartFile]) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Output {
        path: dir.to_path_buf(),
        source,
    })?;
    for f in files {
        // Only the files a run directory has, by their own names.
        let Some(file) = PART_FILES.iter().find(|k| k.name() == f.name) else {
            continue;
        };
        let path = file.path(dir);
        std::fs::write(&path, &f.text).map_err(|source| Error::Output { path, source })?;
    }
    Ok(())
}

/// `part --join URL`: the plan fetched, the join, the run as part I of N, its files sent.
pub(crate) async fn part(args: PartArgs, stop: CancellationToken) -> Result<i32, Error> {
    let token = args.token.clone().ok_or_else(|| {
        Error::Usage(
            "a part needs the coordinator's token\n  fix: give --token T (or MONGO_STRESS_TOKEN) as the coordinator printed it or was given it".into(),
        )
    })?;
    let coordinator = Coordinator::new(&args.join, &token, args.tls_ca.as_deref())?;
    let (doc, coordinator) = {
        let (c, wait, stop) = (coordinator.clone(), args.join_wait, stop.clone());
        let doc = tokio::task::spawn_blocking(move || c.plan(wait, &stop))
            .await
            .map_err(|e| Error::Other(e.into()))??;
        (doc, coordinator)
    };
    let host = super::start::hostname();
    let index = args.index;
    let (series, live) = (doc.series, doc.live);
    let link = {
        let stop = stop.clone();
        tokio::task::spawn_blocking(move || {
            coordinator.join((index, series.is_some(), live), host, stop)
        })
        .await
        .map_err(|e| Error::Other(e.into()))??
    };
    let clock = link.clock();
    if !args.quiet {
        errln!(
            "part {} of {} joined {}: clock offset {:+.2} ms (round trip {:.2} ms); waiting for the other parts",
            link.index,
            link.parts,
            args.join,
            ms_signed(clock.offset_us),
            ms(clock.round_trip_us)
        );
    }
    if doc.series.is_some() {
        let ran = series::part_steps(&args, &doc, &link, &stop).await;
        let last = match &ran {
            Ok(_) => What::Bye,
            Err(e) => What::Failed {
                error: e.to_string(),
            },
        };
        let theirs = Arc::clone(&link);
        let _ = tokio::task::spawn_blocking(move || theirs.finish(last)).await;
        return ran;
    }
    let ran = run_part(&args, &doc, &link, &stop).await;
    let (what, result) = match ran {
        Ok((code, out)) => (
            What::Done {
                step: 0,
                files: read_files(&out),
            },
            Ok(code),
        ),
        Err(e) => (
            What::Failed {
                error: e.to_string(),
            },
            Err(e),
        ),
    };
    let theirs = Arc::clone(&link);
    let _ = tokio::task::spawn_blocking(move || theirs.finish(what)).await;
    result
}

/// The run itself, once every part joined: the profile as the coordinator has it, this part's
/// index, the coordinator's options but the URI and directory this machine gives.
async fn run_part(
    args: &PartArgs,
    doc: &PlanDoc,
    link: &Arc<coordinate::link::Link>,
    stop: &CancellationToken,
) -> Result<(i32, PathBuf), Error> {
    link.all_joined(stop).await?;
    let scratch = tempfile::tempdir().map_err(|e| Error::Other(e.into()))?;
    let run = part_args(args, doc, link, scratch.path())?;
    let out = run.out.clone().unwrap_or_default();
    let code = super::run::run_linked(
        RunCommand {
            args: run,
            console: args.console,
        },
        stop.clone(),
        Some(Arc::clone(link)),
    )
    .await?;
    Ok((code, out))
}

/// This part's `run` options: the coordinator's, with the profile (written into `scratch` when
/// it is a file), this part's index and seed, and the URI and directory this machine gives.
pub(super) fn part_args(
    args: &PartArgs,
    doc: &PlanDoc,
    link: &coordinate::link::Link,
    scratch: &Path,
) -> Result<RunArgs, Error> {
    let profile = match &doc.profile {
        ProfileSource::Bundled { name } => name.clone(),
        ProfileSource::File { name, text } => {
            let path = scratch.join(name);
            std::fs::write(&path, text).map_err(|source| Error::Output {
                path: path.clone(),
                source,
            })?;
            path.to_string_lossy().into_owned()
        }
    };
    let stem = Path::new(&profile)
        .file_stem()
        .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
    let what = doc
        .series
        .map_or(String::new(), |k| format!("-{}", k.name()));
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!(
            "{stem}{what}-{}-part{}",
            super::session::now_stamp(),
            link.index
        ))
    });
    let mut run = doc.args.clone();
    run.profile = profile;
    run.part = Some(Part {
        index: link.index,
        count: link.parts,
    });
    run.parts = None;
    run.coordinator = None;
    run.start_at = None;
    run.seed = Some(doc.seed);
    run.out = Some(out);
    run.quiet = args.quiet;
    if args.uri.is_some() {
        run.uri = args.uri.clone();
    }
    Ok(run)
}

/// The files of a part's run directory the coordinator merges, those it has.
pub(super) fn read_files(dir: &Path) -> Vec<PartFile> {
    PART_FILES
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f.path(dir)).ok()?;
            Some(PartFile {
                name: f.name().to_string(),
                text,
            })
        })
        .collect()
}
