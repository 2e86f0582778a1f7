//! `mongo-stress capture`: read the source, ask the live server what it knows of the captured
//! collections, build the profile, check that it validates, write the capture's directory, print
//! the shapes and the coverage.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::capture::{self, emit, CollectionInfo, GroupBy, LeftOut, Observed, Options, Sink};
use crate::cli::CaptureArgs;
use crate::error::{exit, Error};

/// Every Ctrl-C or SIGTERM only stops the capture: the profiler's settings are always put back
/// before the process ends.
pub(crate) async fn watch_signals(stop: CancellationToken) {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        return;
    };
    loop {
        tokio::select! {
            r = tokio::signal::ctrl_c() => if r.is_err() { return },
            _ = term.recv() => {}
        }
        errln!("\ninterrupted: ending the capture (the profiler's settings are put back first)");
        stop.cancel();
    }
}

/// What a source gave (its operations went to the collector as they were read): its name for
/// the account, and a client of the live server when one is known.
struct Source {
    name: String,
    client: Option<mongodb::Client>,
}

/// `mongo-stress capture`: reads the source, builds the profile, writes the capture's directory
/// and prints its account; the exit code.
pub(crate) async fn capture(args: CaptureArgs, stop: CancellationToken) -> Result<i32, Error> {
    let out = out_dir(&args)?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "captured".into());
    let mut blind = Vec::new();
    let mut opts = options(&args);
    let mut collected = emit::Collector::new(opts.group_by);
    let Source {
        name: source,
        client,
    } = if let Some(uri) = &args.from_profiler {
        from_profiler(uri, &args, &stop, &mut opts, &mut blind, &mut collected).await?
    } else {
        from_logs(&args, &mut collected, &mut blind).await?
    };
    collected.finish();
    let entries = collected.entries();
    if stop.is_cancelled() && entries == 0 {
        errln!("interrupted before any operation was captured; nothing written");
        return Ok(exit::INTERRUPTED);
    }

    let infos = collection_infos(client.as_ref(), &collected, &opts).await;
    let mut captured = emit::build(collected, &infos, &opts, &name, &source);
    if !captured.shapes.is_empty() && captured.shapes.iter().all(|s| s.plan.is_none()) {
        blind.push(
            "the source recorded no query plans (secantusd-rs's profiler keeps none): shapes.tsv has no plan, and indexes come from the server's list only".into(),
        );
    }
    captured.blind.splice(0..0, blind);
    if captured.operations == 0 {
        return Err(nothing_captured(
            &captured,
            entries,
            args.from_profiler.is_some(),
        ));
    }

    let profile_path = write_capture(&out, &captured)?;
    check_profile(&profile_path)?;
    let mut check_warnings = Vec::new();
    if !args.no_check && !stop.is_cancelled() {
        let checked = super::capture_check::check(
            &profile_path,
            &mut captured,
            client.as_ref(),
            args.server_bin.clone(),
            &stop,
        )
        .await;
        // What the source side measured is kept whatever the replay's side did.
        write_capture(&out, &captured)?;
        match checked {
            Ok(()) => {}
            Err(super::capture_check::Unchecked::Refused(why)) => check_warnings.push(format!(
                "the replay's work was not checked: {why}{}",
                if why.contains("fix:") {
                    ""
                } else {
                    "\n  fix: correct the profile where the message says (--no-check skips the check)"
                }
            )),
            Err(super::capture_check::Unchecked::NoServer(why)) => check_warnings.push(format!(
                "the replay's work was not checked: no scratch server could be started: {why}\n  fix: put mongod or secantusd-rs on PATH (or name it with --server-bin); --no-check skips the check"
            )),
        }
    }
    outln!("{}", emit::console(&captured).trim_end_matches('\n'));
    let (lines, warnings) = emit::work_table(&captured, super::capture_check::DRAWS);
    if !lines.is_empty() {
        outln!("{}", lines.trim_end_matches('\n'));
    }
    for w in captured
        .warnings
        .iter()
        .chain(&warnings)
        .chain(&check_warnings)
    {
        errln!("warning: {w}");
    }
    outln!(
        "profile: {} (run it: mongo-stress run {} --uri ...)",
        profile_path.display(),
        profile_path.display()
    );
    Ok(if stop.is_cancelled() {
        exit::INTERRUPTED
    } else {
        exit::OK
    })
}

/// The capture's directory: `--out`, else one named by the time; refused when it already
/// holds a capture.
fn out_dir(args: &CaptureArgs) -> Result<PathBuf, Error> {
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("captured/capture-{}", super::session::now_stamp()))
    });
    if out.join("profile.toml").exists() {
        return Err(Error::Usage(format!(
            "{} already holds a capture (profile.toml)\n  fix: choose another --out, or remove that directory first",
            out.display()
        )));
    }
    Ok(out)
}

/// How the capture is turned into a profile, from the command line.
fn options(args: &CaptureArgs) -> Options {
    Options {
        coverage: args.coverage,
        max_shapes: args.max_shapes as usize,
        group_by: match args.group_by.as_str() {
            "namespace" => GroupBy::Namespace,
            "none" => GroupBy::None,
            _ => GroupBy::App,
        },
        scale: args.scale,
        keep_values: args.keep_values,
        sample_docs: args.sample_docs,
        sample_data: !args.no_sample_data,
        ..Options::default()
    }
}

/// Profiles the databases of `uri` for `--for` (or until `stop`), saying so on standard error;
/// sets the window and sample rate in `opts` and adds what the profiler cannot see to `blind`.
async fn from_profiler(
    uri: &str,
    args: &CaptureArgs,
    stop: &CancellationToken,
    opts: &mut Options,
    blind: &mut Vec<String>,
    sink: &mut (dyn Sink + Send),
) -> Result<Source, Error> {
    let dbs = profiled_dbs(uri, &args.dbs).await?;
    let connected = crate::ops::connect::connect(uri, 4, false).await?;
    existing_dbs(&connected.client, &dbs).await?;
    let shown = crate::redact::redact(uri);
    errln!(
        "capture: profiling {} on {shown} for {} ({}); Ctrl-C ends it early",
        dbs.join(", "),
        humantime::format_duration(args.for_),
        match args.sample_rate {
            Some(r) => format!("level 1, slowms 0, sample rate {r}"),
            None => "level 2".into(),
        }
    );
    let started = std::time::Instant::now();
    let got = capture::profiler::capture(
        &connected.client,
        &dbs,
        args.for_,
        args.sample_rate,
        stop,
        sink,
    )
    .await?;
    errln!(
        "capture: the profiler's settings are as they were on {}",
        dbs.join(", ")
    );
    for w in &got.warnings {
        errln!("warning: {w}");
    }
    blind.extend(got.warnings.iter().cloned());
    opts.window_s = Some(started.elapsed().as_secs_f64().max(1.0));
    if let Some(r) = args.sample_rate {
        opts.sample_rate = r;
        blind.push(format!(
            "the profiler sampled {r} of the operations: counts are of the sample, rates divided by {r}"
        ));
    }
    Ok(Source {
        name: format!("the profiler of {shown} ({})", dbs.join(", ")),
        client: Some(connected.client),
    })
}

/// Reads the logs of `--from-log` and connects to `--uri` when given; adds what a log cannot
/// see to `blind`.
async fn from_logs(
    args: &CaptureArgs,
    collected: &mut emit::Collector,
    blind: &mut Vec<String>,
) -> Result<Source, Error> {
    read_logs(&args.from_log, args.since, args.until, collected)?;
    blind.push(
        "a log holds only the operations slower than slowms (100 ms unless lowered): the shapes and rates are of those".into(),
    );
    let client = match &args.uri {
        Some(uri) => Some(crate::ops::connect::connect(uri, 4, false).await?.client),
        None => {
            blind.push(
                "no --uri: indexes are the ones the plans named, counts and documents are guessed"
                    .into(),
            );
            None
        }
    };
    let files: Vec<String> = args
        .from_log
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    Ok(Source {
        name: format!("the log {}", files.join(", ")),
        client,
    })
}

/// What only the live server knows, for the namespaces of the captured operations (none
/// without a server).
async fn collection_infos(
    client: Option<&mongodb::Client>,
    collected: &emit::Collector,
    opts: &Options,
) -> HashMap<(String, String), CollectionInfo> {
    let mut infos: HashMap<(String, String), CollectionInfo> = HashMap::new();
    if let Some(client) = client {
        let fields = collected.filter_fields();
        let none = BTreeSet::new();
        let namespaces: Vec<(String, String)> = collected
            .namespaces()
            .filter(|(_, c)| !c.starts_with("$cmd") && !c.starts_with("system."))
            .take(200)
            .map(|(d, c)| (d.clone(), c.clone()))
            .collect();
        for (db, coll) in namespaces {
            let wanted = fields.get(&(db.clone(), coll.clone())).unwrap_or(&none);
            let info = capture::profiler::collection_info(client, &db, &coll, wanted, opts).await;
            infos.insert((db, coll), info);
        }
    }
    infos
}

/// The error when no operation was captured: why, and what to do instead.
fn nothing_captured(captured: &emit::Captured, observed: u64, profiler: bool) -> Error {
    Error::Usage(format!(
        "no operation to capture from {}: {}\n  fix: {}",
        captured.source,
        nothing_because(&captured.left_out, observed, profiler),
        if profiler {
            "capture while the application runs, for longer (--for), or name the databases it uses (--db)"
        } else {
            "give mongod's own log (systemLog.path, MongoDB 4.4 or later) from a time the application ran; lower slowms (db.setProfilingLevel(0, {slowms: 0})) so that every operation is logged"
        }
    ))
}

/// Writes the capture's directory (`profile.toml`, `shapes.tsv`, `capture.json`); returns the
/// profile's path.
fn write_capture(out: &Path, captured: &emit::Captured) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(out).map_err(|e| Error::Output {
        path: out.to_path_buf(),
        source: e,
    })?;
    let profile_path = out.join("profile.toml");
    write(&profile_path, &captured.profile)?;
    write(&out.join("shapes.tsv"), &emit::shapes_tsv(captured))?;
    let json = serde_json::to_string_pretty(captured).map_err(|e| Error::Other(e.into()))?;
    write(&out.join("capture.json"), &(json + "\n"))?;
    Ok(profile_path)
}

/// The profile must be one `run` executes unchanged: an error (a bug of capture) when it does
/// not validate.
fn check_profile(profile_path: &Path) -> Result<(), Error> {
    let checked = crate::plan::profile::load(&profile_path.to_string_lossy())
        .and_then(|p| crate::plan::RunPlan::build(&p, &Default::default()).map_err(Error::from));
    if let Err(e) = checked {
        return Err(Error::Other(anyhow::anyhow!(
            "the captured profile {} does not validate, which is a bug of capture: {e}",
            profile_path.display()
        )));
    }
    Ok(())
}

/// The databases to profile: `--db`, else the URI's own database.
async fn profiled_dbs(uri: &str, dbs: &[String]) -> Result<Vec<String>, Error> {
    if !dbs.is_empty() {
        return Ok(dbs.to_vec());
    }
    let opts = crate::ops::connect::parse(uri).await?;
    match opts.default_database {
        Some(db) => Ok(vec![db]),
        None => Err(Error::Usage(
            "capture --from-profiler needs the databases to profile\n  fix: name each with --db (e.g. --db shop), or put one in the URI (mongodb://host:27017/shop)".into(),
        )),
    }
}

/// Every database to profile must exist on the server: setting the profiler on one that does
/// not would create it on the source, and the capture would wait its window for nothing. A
/// user who may not list databases is taken at their word.
async fn existing_dbs(client: &mongodb::Client, dbs: &[String]) -> Result<(), Error> {
    let Ok(names) = client.list_database_names().await else {
        return Ok(());
    };
    for db in dbs {
        if names.contains(db) {
            continue;
        }
        let others: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| !matches!(*n, "admin" | "local" | "config"))
            .collect();
        let close = others
            .iter()
            .map(|n| {
                (
                    strsim::jaro_winkler(&db.to_lowercase(), &n.to_lowercase()),
                    *n,
                )
            })
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| n);
        let fix = match close {
            Some(n) => format!("did you mean --db {n}?"),
            None if others.is_empty() => {
                "the server holds no database of an application yet: start the application first"
                    .into()
            }
            None => format!("name one of the server's databases: {}", others.join(", ")),
        };
        return Err(Error::Usage(format!(
            "the server has no database `{db}`: capture would profile nothing (and setting the profiler would create it); nothing was changed on the server\n  fix: {fix}"
        )));
    }
    Ok(())
}

/// Why nothing was captured, in words.
fn nothing_because(left: &LeftOut, observed: u64, profiler: bool) -> String {
    if profiler && observed == 0 {
        return "the profiler recorded no operation during the window".into();
    }
    if left.not_json > 0 && left.not_operations == 0 && observed == 0 {
        return format!(
            "none of its {} lines is JSON: it is not a MongoDB 4.4+ log (older logs are text, which capture does not read)",
            left.not_json
        );
    }
    if observed == 0 && left.outside_window > 0 {
        return format!(
            "all {} operations are outside --since/--until",
            left.outside_window
        );
    }
    if observed == 0 {
        return format!(
            "no slow-operation line (id 51803) among its lines ({} JSON lines of other kinds)",
            left.not_operations
        );
    }
    format!(
        "its {observed} entries are driver, admin or DDL commands only ({} driver, {} other)",
        left.driver_total(),
        left.other_total()
    )
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    crate::rundir::write_atomically(path, text.as_bytes())
}

/// One log's operations, read as they are needed (gzip by its magic bytes, `-` for standard
/// input).
type LogEntries = capture::log::Entries<Box<dyn BufRead>>;

fn open_log(p: &Path, since: Option<i64>, until: Option<i64>) -> Result<LogEntries, Error> {
    let reader: Box<dyn Read> = if p.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(p).map_err(|e| {
            Error::Usage(format!(
                "cannot read the log {}: {e}\n  fix: give the path of mongod's log file (systemLog.path), or - for standard input",
                p.display()
            ))
        })?)
    };
    let mut buffered = BufReader::new(reader);
    let gz = buffered
        .fill_buf()
        .map(|b| b.starts_with(&[0x1f, 0x8b]))
        .unwrap_or(false);
    let input: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(buffered)))
    } else {
        Box::new(buffered)
    };
    Ok(capture::log::Entries::new(input, since, until))
}

/// The next operation of a log, or None at its end.
fn next_of(p: &Path, entries: &mut LogEntries) -> Result<Option<Observed>, Error> {
    entries.next().transpose().map_err(|e| {
        Error::Usage(format!(
            "cannot read the log {}: {e}\n  fix: give a MongoDB 4.4+ JSON log, plain or gzip",
            p.display()
        ))
    })
}

/// Adds what a log held that is no operation to the capture's account.
fn count_left(collected: &mut emit::Collector, entries: &LogEntries) {
    let left = &mut collected.left;
    left.not_json += entries.left.not_json;
    left.not_operations += entries.left.not_operations;
    left.outside_window += entries.left.outside_window;
}

/// Reads every log into the collector, their operations merged in time order (rotated files, or
/// several servers' logs, named in any order). Each file is first opened for its first
/// operation's time only; then a file is open while its operations are being merged, so
/// hundreds of rotated files hold a few open at a time.
fn read_logs(
    paths: &[PathBuf],
    since: Option<i64>,
    until: Option<i64>,
    collected: &mut emit::Collector,
) -> Result<(), Error> {
    if paths.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(Error::Usage(
            "--from-log names standard input (-) more than once\n  fix: give - once".into(),
        ));
    }
    // Each log's first operation's time (standard input is read once, so it stays open).
    let mut starts: Vec<(i64, usize)> = Vec::new();
    let mut stdin: Option<(usize, LogEntries, Observed)> = None;
    for (i, p) in paths.iter().enumerate() {
        let mut entries = open_log(p, since, until)?;
        match next_of(p, &mut entries)? {
            None => count_left(collected, &entries), // no operation: its lines counted
            Some(first) if p.as_os_str() == "-" => stdin = Some((i, entries, first)),
            Some(first) => starts.push((first.ts_ms, i)),
        }
    }
    starts.sort();
    let mut waiting = starts.into_iter().peekable();
    // The open logs' next operations, the earliest first (ties by the order they were named).
    let mut heads: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize)>> =
        std::collections::BinaryHeap::new();
    let mut open: HashMap<usize, (LogEntries, Observed)> = HashMap::new();
    if let Some((i, entries, first)) = stdin {
        heads.push(std::cmp::Reverse((first.ts_ms, i)));
        open.insert(i, (entries, first));
    }
    loop {
        // Open every log whose first operation comes before the earliest head.
        while let Some(&(ts, i)) = waiting.peek() {
            if heads.peek().is_some_and(|h| h.0 .0 < ts) {
                break;
            }
            waiting.next();
            let mut entries = open_log(&paths[i], since, until)?;
            if let Some(first) = next_of(&paths[i], &mut entries)? {
                heads.push(std::cmp::Reverse((first.ts_ms, i)));
                open.insert(i, (entries, first));
            }
        }
        let Some(std::cmp::Reverse((_, i))) = heads.pop() else {
            break;
        };
        let Some((mut entries, o)) = open.remove(&i) else {
            break;
        };
        collected.take(o);
        match next_of(&paths[i], &mut entries)? {
            Some(next) => {
                heads.push(std::cmp::Reverse((next.ts_ms, i)));
                open.insert(i, (entries, next));
            }
            None => count_left(collected, &entries),
        }
    }
    Ok(())
}
