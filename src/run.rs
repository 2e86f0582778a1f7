//! `mongo-stress run`: the steps in order. Load and plan, prepare outputs, start or reach the
//! server, then per repetition: set up, execute the stages while collecting, summarise, export.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mongodb::bson::RawDocumentBuf;
use mongodb::options::{
    Acknowledgment, CollectionOptions, ReadPreference, SelectionCriteria, WriteConcern,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cli::RunArgs;
use crate::collector::{self, Live};
use crate::connect::{self, redact};
use crate::error::{exit, Error};
use crate::executor::{self, Clock, Context};
use crate::plan::{RunPlan, WriteConcernPlan};
use crate::profile;
use crate::report;
use crate::resources::{self, StageSpan};
use crate::samplelog::SampleLog;
use crate::sampler::{self, Sampler};
use crate::server::EmbeddedServer;
use crate::summary::{self, RunResult, ServerInfo, Summary};

/// Capacity of the sample channel between virtual users and the collector.
const SAMPLE_CHANNEL: usize = 64 * 1024;

pub async fn run(args: RunArgs, stop: CancellationToken) -> Result<i32, Error> {
    let loaded = profile::load(&args.profile)?;
    let plan = RunPlan::build(&loaded, &(&args.overrides).into())?;
    let seed = args.seed.unwrap_or_else(rand::random);
    if let Some(uri) = &args.uri {
        // A malformed URI is a usage error: refuse it before creating anything.
        connect::parse(uri).await?;
    }
    let out_dir = prepare_out_dir(args.out.as_deref(), &plan.name)?;
    let say = |msg: String| {
        if !args.quiet {
            eprintln!("{msg}");
        }
    };
    say(format!(
        "profile {} ({}), seed {seed}, results in {}",
        plan.name,
        plan.origin,
        out_dir.display()
    ));

    let mut embedded = None;
    let (uri, kind) = match &args.uri {
        Some(u) => (u.clone(), "external"),
        None => {
            let s = EmbeddedServer::start(args.server_bin.as_deref())?;
            say(format!(
                "embedded server: {} (pid {}) on {}, data in {}",
                s.version,
                s.pid(),
                s.address,
                s.data_dir().display()
            ));
            let uri = s.uri();
            embedded = Some(s);
            (uri, "embedded")
        }
    };
    let connected = connect::connect(&uri, plan.target.pool_size).await?;
    let version = match &embedded {
        Some(s) => format!("{} ({})", s.version, connected.server_version),
        None => connected.server_version.clone(),
    };
    say(format!("connected to {} ({version})", redact(&uri)));
    let coll = collection(&connected.client, &plan);

    let server_pid = match (&embedded, args.server_pid) {
        (Some(s), _) => Some(s.pid()),
        (None, Some(pid)) => Some(pid),
        (None, None) => local_port(&uri).await.and_then(sampler::pid_listening_on),
    };
    let data_dir = match &embedded {
        Some(s) => Some(s.data_dir().to_path_buf()),
        None => sampler::data_dir_of(&connected.client, server_pid).await,
    };
    match (server_pid, kind) {
        (Some(pid), "external") => say(format!("sampling server process {pid}{}", data_dir.as_ref().map_or(String::new(), |d| format!(", data in {}", d.display())))),
        (None, _) => say("server process not found on this host: resources.tsv has serverStatus columns only (--server-pid names it)".into()),
        _ => {}
    }
    let sampler = if args.no_resources {
        None
    } else {
        let target = sampler::Target {
            client: connected.client.clone(),
            server_pid,
            data_dir,
        };
        Some(Sampler::start(target, &out_dir.join("resources.tsv")).map_err(before_load)?)
    };

    let mut summary = Summary {
        schema_version: summary::SCHEMA_VERSION,
        tool: format!("mongo-stress {}", env!("CARGO_PKG_VERSION")),
        profile: plan.name.clone(),
        origin: plan.origin.clone(),
        seed,
        server: ServerInfo {
            kind: kind.into(),
            version,
            uri: redact(&uri),
        },
        groups: summary::group_info(&plan),
        runs: Vec::new(),
        spread: Vec::new(),
        resources: Vec::new(),
        interrupted: false,
    };
    let started_at = now_rfc3339();
    write_run_json(&out_dir, &plan, &summary, &started_at, None)?;
    let samples_path = (!args.no_samples).then(|| out_dir.join("samples.tsv"));
    let sample_log = SampleLog::create(
        samples_path.as_deref(),
        args.jtl.as_deref(),
        plan.groups().map(|g| g.name.clone()).collect(),
        format!(
            "{}/{}.{}",
            redact(&uri)
                .split('?')
                .next()
                .unwrap_or("")
                .trim_end_matches('/'),
            plan.target.database,
            plan.target.collection
        ),
    )
    .map_err(before_load)?;

    for run in 1..=args.repeat {
        if stop.is_cancelled() {
            break;
        }
        if args.repeat > 1 {
            say(format!("run {run} of {}", args.repeat));
        }
        let keys = crate::setup::prepare(
            &plan,
            &coll,
            seed.wrapping_add(u64::from(run)),
            &stop,
            args.quiet,
            args.force,
        )
        .await?;
        if stop.is_cancelled() {
            break;
        }
        let env = Env {
            plan: &plan,
            coll: &coll,
            args: &args,
            stop: &stop,
            log: sample_log.sender(),
        };
        let result = execute(&env, keys, seed.wrapping_add(u64::from(run) - 1), run).await;
        summary.interrupted |= result.interrupted;
        summary.runs.push(result);
        summary.spread = summary::spread(&summary.runs);
        if let Some(sampler) = &sampler {
            summary.refresh_resources(&sampler.rows());
        }
        // Rewritten after every run, so an interruption keeps what completed.
        write_summaries(&out_dir, &summary)?;
    }
    if summary.runs.is_empty() {
        summary.interrupted = true;
    }
    if let Some(sampler) = sampler {
        summary.refresh_resources(&sampler.stop().await);
    }
    // A sample log that failed (a full disk) was reported when it happened; the summary is
    // whole all the same, so it is still printed, and the exit code says something failed.
    let log_failed = match sample_log.finish() {
        Ok(logged) => {
            let measured: u64 = summary.runs.iter().map(|r| r.total().samples).sum();
            let incomplete = (samples_path.is_some() || args.jtl.is_some()) && logged != measured;
            if incomplete {
                eprintln!(
                    "error: the sample log has {logged} lines but {measured} samples were measured"
                );
            }
            incomplete
        }
        Err(e) => {
            eprintln!("error: {e}");
            true
        }
    };
    write_summaries(&out_dir, &summary)?;
    write_run_json(&out_dir, &plan, &summary, &started_at, Some(now_rfc3339()))?;
    drop(embedded);

    let to_stdout = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let console_to_stderr = to_stdout(&args.tsv) || to_stdout(&args.json);
    if console_to_stderr {
        report::table::render(&summary, &mut std::io::stderr().lock()).ok();
    } else {
        println!();
        report::table::render(&summary, &mut std::io::stdout().lock()).ok();
    }
    if let Some(p) = &args.tsv {
        report::write_to(p, &summary, report::tsv::render)?;
    }
    if let Some(p) = &args.json {
        report::write_to(p, &summary, report::json::render)?;
    }
    say(format!("results: {}", out_dir.display()));

    Ok(if summary.interrupted {
        exit::INTERRUPTED
    } else if log_failed || summary.runs.iter().any(|r| r.total().errors > 0) {
        exit::ERRORS
    } else {
        exit::OK
    })
}

/// What every run of a `--repeat` shares.
struct Env<'a> {
    plan: &'a RunPlan,
    coll: &'a mongodb::Collection<RawDocumentBuf>,
    args: &'a RunArgs,
    stop: &'a CancellationToken,
    log: Option<mpsc::Sender<Vec<crate::samplelog::Logged>>>,
}

async fn execute(env: &Env<'_>, keys: crate::workload::KeySpace, seed: u64, run: u32) -> RunResult {
    let Env {
        plan,
        coll,
        args,
        stop,
        ..
    } = *env;
    let log = env.log.clone();
    let groups = plan.groups().count();
    let active: Arc<Vec<AtomicU32>> = Arc::new((0..groups).map(|_| AtomicU32::new(0)).collect());
    let (tx, rx) = mpsc::channel(SAMPLE_CHANNEL);
    let live = (!args.quiet).then(|| Live {
        interval: args.interval,
        groups: plan.groups().map(|g| (g.name.clone(), g.threads)).collect(),
    });
    // The run's own stop: Ctrl-C (the parent) stops it, and so does the error guard, which
    // must not stop later runs of --repeat.
    let run_stop = stop.child_token();
    let stopped_early = Arc::new(std::sync::OnceLock::new());
    let guard = plan
        .stop_on_error_pct
        .map(|pct| collector::ErrorGuard::new(pct, run_stop.clone(), Arc::clone(&stopped_early)));
    let collector = tokio::spawn(collector::collect(
        rx,
        groups,
        live,
        Arc::clone(&active),
        log,
        guard,
    ));
    let ctx = Arc::new(Context {
        coll: coll.clone(),
        gen: Arc::clone(&plan.document),
        keys: Arc::new(keys),
        samples: tx,
        stop: run_stop.clone(),
        active,
        missed: (0..groups).map(|_| AtomicU64::new(0)).collect(),
        seed,
        clock: Clock::new(),
        op_timeout: plan.target.op_timeout,
    });
    let started_at = now_rfc3339();
    let t0 = Instant::now();
    let mut spans = Vec::new();
    for stage in &plan.stages {
        if run_stop.is_cancelled() {
            break;
        }
        if !stage.name.is_empty() && !args.quiet {
            eprintln!(
                "stage {}: {}",
                stage.name,
                stage
                    .groups
                    .iter()
                    .map(|g| format!("{} x{}", g.name, g.threads))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let start_ms = epoch_ms();
        executor::run_stage(stage, &ctx).await;
        spans.push(StageSpan {
            label: resources::stage_label(plan, stage),
            start_ms,
            end_ms: epoch_ms(),
        });
    }
    let missed: Vec<u64> = ctx
        .missed
        .iter()
        .map(|m| m.load(Ordering::Relaxed))
        .collect();
    drop(ctx);
    let mut metrics = collector
        .await
        .unwrap_or_else(|_| vec![Default::default(); groups]);
    for (m, missed) in metrics.iter_mut().zip(missed) {
        m.missed = missed;
    }
    let mut result = RunResult::new(
        run,
        started_at,
        t0.elapsed().as_secs_f64(),
        stop.is_cancelled(),
        plan,
        &metrics,
    );
    result.stages = spans;
    result.stopped_early = stopped_early.get().cloned();
    result
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The target collection with the profile's write concern and read preference.
pub fn collection(client: &mongodb::Client, plan: &RunPlan) -> mongodb::Collection<RawDocumentBuf> {
    let t = &plan.target;
    let w = t.write_concern.as_ref().map(|w| match w {
        WriteConcernPlan::Nodes(n) => Acknowledgment::Nodes(*n),
        WriteConcernPlan::Majority => Acknowledgment::Majority,
    });
    let write_concern = (w.is_some() || t.journal.is_some())
        .then(|| WriteConcern::builder().w(w).journal(t.journal).build());
    let read_pref = match t.read_preference.as_str() {
        "primaryPreferred" => ReadPreference::PrimaryPreferred { options: None },
        "secondary" => ReadPreference::Secondary { options: None },
        "secondaryPreferred" => ReadPreference::SecondaryPreferred { options: None },
        "nearest" => ReadPreference::Nearest { options: None },
        _ => ReadPreference::Primary,
    };
    let opts = CollectionOptions::builder()
        .write_concern(write_concern)
        .selection_criteria(SelectionCriteria::ReadPreference(read_pref))
        .build();
    client
        .database(&t.database)
        .collection_with_options(&t.collection, opts)
}

fn prepare_out_dir(out: Option<&Path>, profile: &str) -> Result<PathBuf, Error> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => {
            let stamp: String = now_rfc3339()
                .chars()
                .filter(|c| c.is_ascii_digit())
                .take(14)
                .collect();
            PathBuf::from("results").join(format!("{profile}-{}-{}", &stamp[..8], &stamp[8..]))
        }
    };
    let usage = |e: std::io::Error| {
        Error::Usage(format!("cannot use {} as the run directory: {e}\n  fix: choose a writable directory with --out", dir.display()))
    };
    std::fs::create_dir_all(&dir).map_err(usage)?;
    // Prove it is writable before any load starts.
    let probe = dir.join(".write-test");
    std::fs::write(&probe, b"").map_err(usage)?;
    let _ = std::fs::remove_file(probe);
    Ok(dir)
}

/// An output that cannot be written before any load is a usage problem (exit 2), not a failure.
fn before_load(e: Error) -> Error {
    match e {
        Error::Output { .. } => Error::Usage(e.to_string()),
        e => e,
    }
}

fn write_summaries(dir: &Path, summary: &Summary) -> Result<(), Error> {
    report::write_to(&dir.join("summary.tsv"), summary, report::tsv::render)?;
    report::write_to(
        &dir.join("resources-summary.tsv"),
        summary,
        report::tsv::render_resources,
    )?;
    report::write_to(&dir.join("summary.json"), summary, report::json::render)
}

fn write_run_json(
    dir: &Path,
    plan: &RunPlan,
    summary: &Summary,
    started_at: &str,
    finished_at: Option<String>,
) -> Result<(), Error> {
    let args: Vec<String> = std::env::args().map(|a| redact(&a)).collect();
    let host = serde_json::json!({
        "hostname": sysinfo::System::host_name(),
        "os": sysinfo::System::long_os_version(),
        "kernel": sysinfo::System::kernel_version(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memory_bytes": sysinfo::System::new_with_specifics(sysinfo::RefreshKind::nothing().with_memory(sysinfo::MemoryRefreshKind::everything())).total_memory(),
    });
    let doc = serde_json::json!({
        "schema_version": summary::SCHEMA_VERSION,
        "tool": summary.tool,
        "command_line": args,
        "profile": { "name": plan.name, "origin": plan.origin, "description": plan.description, "text": plan.profile_text },
        "plan": { "target": plan.target, "setup": { "drop": plan.setup.drop, "preload": plan.setup.preload, "indexes": plan.setup.indexes.iter().map(|d| d.to_string()).collect::<Vec<_>>() }, "groups": summary.groups },
        "seed": summary.seed,
        "server": summary.server,
        "host": host,
        "started_at": started_at,
        "finished_at": finished_at,
        "interrupted": summary.interrupted,
    });
    let bytes = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Other(e.into()))?;
    report::write_atomically(&dir.join("run.json"), &bytes)
}

/// The port of a URI's single host when that host is this machine (loopback).
async fn local_port(uri: &str) -> Option<u16> {
    let hosts = mongodb::options::ClientOptions::parse(uri)
        .await
        .ok()?
        .hosts;
    match hosts.as_slice() {
        [mongodb::options::ServerAddress::Tcp { host, port }]
            if host == "localhost" || host == "::1" || host.starts_with("127.") =>
        {
            Some(port.unwrap_or(27017))
        }
        _ => None,
    }
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
