//! mongo-stress: a MongoDB CRUD stress tester in the spirit of JMeter.
//!
//! Data flows one way: `profile` (file) -> `plan` (validated) -> `executor` (virtual users calling
//! `ops` with requests from `workload`) -> `sample`s -> `collector` (`metrics`) -> `summary` ->
//! `report`. `server` starts the embedded server, `connect` reaches any server.

// Profile errors carry file, line, key, value and the fix; they occur once per run, before any
// load, so their size costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

pub mod cli;
pub mod collector;
pub mod connect;
pub mod error;
pub mod executor;
pub mod metrics;
pub mod ops;
pub mod plan;
pub mod profile;
pub mod report;
pub mod resources;
pub mod run;
pub mod sample;
pub mod samplelog;
pub mod sampler;
pub mod server;
pub mod setup;
pub mod summary;
pub mod workload;

use tokio_util::sync::CancellationToken;

use cli::{Cli, Command};
use error::{exit, Error};

/// Runs a parsed command line; returns the process exit code.
pub async fn main(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Profiles => {
            for b in profile::bundled::ALL {
                println!("{:<12} {}", b.name, b.summary);
            }
            Ok(exit::OK)
        }
        Command::Validate { profile, overrides } => {
            let loaded = profile::load(&profile)?;
            let plan = plan::RunPlan::build(&loaded, &(&overrides).into())?;
            print_plan(&plan);
            Ok(exit::OK)
        }
        Command::Run(args) => {
            let stop = CancellationToken::new();
            tokio::spawn(watch_signals(stop.clone()));
            run::run(args, stop).await
        }
    }
}

fn print_plan(plan: &plan::RunPlan) {
    println!("profile {} ({}): valid", plan.name, plan.origin);
    if !plan.description.is_empty() {
        println!("  {}", plan.description);
    }
    let t = &plan.target;
    let w = match &t.write_concern {
        None => "the deployment's default".to_string(),
        Some(plan::WriteConcernPlan::Nodes(n)) => format!("w={n}"),
        Some(plan::WriteConcernPlan::Majority) => "w=majority".to_string(),
    };
    println!(
        "target {}.{}  pool {}  read {}  write concern {w}  operation timeout {}",
        t.database,
        t.collection,
        t.pool_size,
        t.read_preference,
        humantime::format_duration(t.op_timeout)
    );
    if let Some(pct) = plan.stop_on_error_pct {
        println!("stop when {pct} % of the recent operations failed");
    }
    println!(
        "setup drop={} preload={} indexes={}",
        plan.setup.drop,
        plan.setup.preload,
        plan.setup.indexes.len()
    );
    for stage in &plan.stages {
        if !stage.name.is_empty() {
            println!("stage {}", stage.name);
        }
        for g in &stage.groups {
            let stop = match g.stop {
                plan::StopAt::Loops(l) => {
                    format!(
                        "{l} loops = {} operations",
                        l.saturating_mul(u64::from(g.threads))
                    )
                }
                plan::StopAt::Duration(d) => format!("for {}", humantime::format_duration(d)),
            };
            let stop = match g.rate {
                Some(r) => format!("{stop}, open loop at {r}/s"),
                None => stop,
            };
            println!(
                "  group {:<14} {:<6} threads {:>5}  ramp-up {}  delay {}  {stop}",
                g.name,
                g.op.kind(),
                g.threads,
                humantime::format_duration(g.ramp_up),
                humantime::format_duration(g.start_delay)
            );
        }
    }
    match plan.planned_operations() {
        Some(n) => println!("total: {n} operations"),
        None => println!("total: time-bound (some groups run for a duration)"),
    }
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
            eprintln!("\ninterrupted: finishing operations in flight (up to {}s), then the summary; interrupt again to quit at once", executor::STOP_GRACE.as_secs());
            stop.cancel();
        } else {
            server::emergency_cleanup();
            std::process::exit(exit::INTERRUPTED);
        }
    }
}
