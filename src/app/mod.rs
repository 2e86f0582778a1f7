//! The commands, one file each, each a short list of named steps: `run` (with `session`, the
//! runs themselves), `report`, `compare`, `merge`, `capture`, `sweep`, `capacity` (with `steps`,
//! what the commands of steps share), `history`; `validate` and `profiles` are here, in `main`.
//! `start` is what every command that sends load starts from (server, options, live page,
//! sampler, output directory).
//! Also the signal watcher that turns Ctrl-C and SIGTERM into a stop.
//!
//! Owns: turning the command line into a plan and options, and the order of the steps. Nothing
//! imports it.

pub(crate) mod capacity;
pub(crate) mod capture;
mod capture_check;
pub mod compare;
mod coordinate;
pub(crate) mod history;
pub mod merge;
pub(crate) mod report;
pub(crate) mod run;
pub mod session;
mod start;
mod steps;
pub(crate) mod sweep;

use tokio_util::sync::CancellationToken;

use crate::cli::{Cli, Command};
use crate::error::{exit, Error};
use crate::plan::{profile, RunPlan};

/// Runs a parsed command line; returns the process exit code.
pub async fn main(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Profiles => {
            for b in profile::bundled::ALL {
                outln!("{:<12} {}", b.name, b.summary);
            }
            Ok(exit::OK)
        }
        Command::Validate {
            profile,
            uri,
            expand,
            overrides,
        } => validate(&profile, uri.as_deref(), expand, &overrides).await,
        Command::Compare {
            base,
            new,
            fail_if,
            tsv,
            json,
            html,
            force,
            seed,
        } => compare::compare(compare::CompareArgs {
            base: &base,
            new: &new,
            fail_if: &fail_if,
            tsv: tsv.as_ref(),
            json: json.as_ref(),
            html: html.as_ref(),
            force,
            seed,
        }),
        Command::History(args) => tokio::task::spawn_blocking(move || history::history(*args))
            .await
            .map_err(|e| Error::Other(e.into()))?,
        Command::Report { run_dir, out } => report::report(&run_dir, out.as_deref()),
        Command::Merge {
            dirs,
            out,
            allow_missing,
            console,
        } => tokio::task::spawn_blocking(move || {
            merge::merge_shown(&dirs, &out, allow_missing, console.wide)
        })
        .await
        .map_err(|e| Error::Other(e.into()))?,
        Command::Capture(args) => {
            let stop = CancellationToken::new();
            tokio::spawn(capture::watch_signals(stop.clone()));
            capture::capture(*args, stop).await
        }
        Command::Sweep(args) => {
            let stop = CancellationToken::new();
            tokio::spawn(watch_signals(stop.clone()));
            sweep::sweep(*args, stop).await
        }
        Command::Capacity(args) => {
            let stop = CancellationToken::new();
            tokio::spawn(watch_signals(stop.clone()));
            capacity::capacity(*args, stop).await
        }
        Command::Part(args) => {
            let stop = CancellationToken::new();
            tokio::spawn(watch_signals(stop.clone()));
            coordinate::part(*args, stop).await
        }
        Command::Run(args) => {
            let stop = CancellationToken::new();
            tokio::spawn(watch_signals(stop.clone()));
            if args.args.coordinator.is_some() {
                coordinate::coordinator(*args, stop).await
            } else {
                run::run(*args, stop).await
            }
        }
    }
}

/// `validate`: the plan a profile becomes (a genny workload's expansion with `--expand`), and with
/// `--uri` the server's check of every template first.
async fn validate(
    profile: &str,
    uri: Option<&str>,
    expand: bool,
    overrides: &crate::cli::OverrideArgs,
) -> Result<i32, Error> {
    overrides.one_thread_count()?;
    let loaded = profile::load_with(profile, &overrides.genny())?;
    if let Some(g) = &loaded.genny {
        if expand {
            outln!("# {profile}, preprocessed\n{}", g.expanded);
            outln!("# as a mongo-stress profile\n{}", g.toml);
        }
        for n in &g.notes {
            outln!("note: {n}");
        }
        if g.idle {
            outln!("valid: {}", crate::plan::genny::IDLE);
            return Ok(exit::OK);
        }
    } else if expand {
        return Err(Error::Usage(format!(
            "--expand shows a genny workload preprocessed, and {profile} is not one (.yml)\n  fix: leave it out"
        )));
    }
    let plan = RunPlan::build(&loaded, &overrides.into())?;
    if let Some(w) = plan.scale.as_ref().and_then(crate::plan::Scale::warning) {
        errln!("warning: {w}");
    }
    // The server's check first: "valid" is said only of a profile it accepts.
    let checked = match uri {
        Some(uri) => {
            let connected = crate::ops::connect::connect(uri, plan.target.pool_size, false).await?;
            Some(crate::ops::explain::check(&plan, &connected.client).await?)
        }
        None => None,
    };
    crate::console::written(crate::report::plan::render(
        &plan,
        &mut std::io::stdout().lock(),
    ))
    .map_err(|e| Error::Other(e.into()))?;
    if let (Some(checked), Some(uri)) = (checked, uri) {
        for w in &checked.warnings {
            errln!("warning: {w}");
        }
        outln!(
            "templates: checked against {} with explain; the server accepts them",
            crate::redact::redact(uri)
        );
    }
    Ok(exit::OK)
}

/// The directory the command is writing into, for a second interrupt to say what it keeps.
static WRITING_INTO: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Says that the command now writes into `dir`.
pub(crate) fn writing_into(dir: &std::path::Path) {
    if let Ok(mut w) = WRITING_INTO.lock() {
        *w = Some(dir.to_path_buf());
    }
}

/// What a second interrupt leaves: the directory's files as written so far (every file is
/// written whole or appended line by line, so none is cut mid-record), and whether the summary
/// made it.
fn kept() -> String {
    let dir = WRITING_INTO.lock().ok().and_then(|w| w.clone());
    let Some(dir) = dir else {
        return "quit at once: nothing had been written yet".into();
    };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        return format!("quit at once: {} holds nothing yet", dir.display());
    }
    let has = |f: crate::rundir::File| names.iter().any(|n| n == f.name());
    let logs: Vec<&str> = [
        crate::rundir::File::Samples,
        crate::rundir::File::LatencyHlog,
    ]
    .into_iter()
    .filter(|f| has(*f))
    .map(|f| f.name())
    .collect();
    let summary = if has(crate::rundir::File::SummaryJson) {
        "its summary is the one written before this interrupt".to_string()
    } else if logs.is_empty() {
        "no summary was written".to_string()
    } else {
        format!(
            "no summary was written: {} hold{} the operations that ended",
            logs.join(" and "),
            if logs.len() == 1 { "s" } else { "" }
        )
    };
    format!(
        "quit at once: {} keeps {}, each whole as written so far; {summary}",
        dir.display(),
        names.join(", ")
    )
}

/// First Ctrl-C or SIGTERM: stop starting operations. Second: kill the embedded server and exit.
async fn watch_signals(stop: CancellationToken) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return,
    };
    let mut count = 0;
    loop {
        tokio::select! {
            r = tokio::signal::ctrl_c() => if r.is_err() { return },
            _ = term.recv() => {}
        }
        count += 1;
        if count == 1 {
            errln!("\ninterrupted: finishing operations in flight (up to {}s), then the summary; interrupt again to quit at once", crate::executor::STOP_GRACE.as_secs());
            stop.cancel();
        } else {
            crate::server::emergency_cleanup();
            errln!("{}", kept());
            std::process::exit(crate::error::exit::INTERRUPTED);
        }
    }
}
