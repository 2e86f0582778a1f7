//! Writes PARTS synthetic parts of one run, for the merge benchmark (scripts/bench.sh merge):
//! a profile of GROUPS insert groups running SECONDS, each part with `summary.json`, `run.json`
//! and a `latency.hlog` of one interval per second per group (and TOTAL), as `run --part I/N`
//! writes them. Latencies are drawn from a log-normal (median ~2 ms), RATE per group per part
//! per second, so the interval histograms are as wide as a real run's.
//!
//! Usage: synth_parts OUT_DIR PARTS SECONDS GROUPS [RATE]

// Tests and examples compute with small known numbers (counts of a few thousand, seconds,
// percentages), where a cast loses nothing; and a test may be one long story, read top to bottom.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    reason = "small known numbers; a test reads as one story"
)]
// Tests and tools print as they like; the library's console is `outln!`/`errln!` (clippy.toml).
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongo_stress::metrics::interval::Tag;
use mongo_stress::metrics::Label;
use mongo_stress::metrics::{new_histogram, Activity, GroupMetrics, IntervalBatch, IntervalHist};
use mongo_stress::plan::part::{Part, PartPlan};
use mongo_stress::plan::{profile, Overrides, RunPlan};
use mongo_stress::samplelog::hlog::IntervalLog;
use mongo_stress::summary::run_info::{HostInfo, RunInfo};
use mongo_stress::summary::{Measured, RunResult, ServerInfo, ServerKind, Summary};
use rand::{Rng, SeedableRng};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: synth_parts OUT_DIR PARTS SECONDS GROUPS [RATE]";
    let out = Path::new(args.get(1).ok_or_else(|| anyhow::anyhow!(usage))?);
    let num = |i: usize, d: u64| args.get(i).map_or(Ok(d), |v| v.parse::<u64>());
    let (parts, seconds, groups, rate) = (num(2, 100)?, num(3, 3600)?, num(4, 4)?, num(5, 500)?);
    let mut text = String::from("name = \"synth\"\n[document]\ncity = \"Guangzhou\"\n");
    for g in 0..groups {
        text.push_str(&format!(
            "[[group]]\nname = \"g{g}\"\nop = \"insert\"\nthreads = {parts}\nduration = \"{seconds}s\"\n"
        ));
    }
    let loaded = profile::parse("synth.toml", &text, "synth")?;
    let plan = RunPlan::build(&loaded, &Overrides::default())?.divide(PartPlan {
        part: Part {
            index: 0,
            count: parts as u32,
        },
        setup_wait: Duration::from_secs(1),
        start_at: None,
    })?;
    let first = out.join("part-0");
    std::fs::create_dir_all(&first)?;
    write_part(&plan, &first, seconds, rate)?;
    // The other parts: the same data under their own index (each a file of its own).
    for i in 1..parts {
        let dir = out.join(format!("part-{i}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(first.join("latency.hlog"), dir.join("latency.hlog"))?;
        for name in ["summary.json", "run.json"] {
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(first.join(name))?)?;
            v["part"]["index"] = i.into();
            std::fs::write(dir.join(name), serde_json::to_vec(&v)?)?;
        }
    }
    println!(
        "{parts} parts of {groups} groups x {seconds} s in {}",
        out.display()
    );
    Ok(())
}

fn write_part(plan: &RunPlan, dir: &Path, seconds: u64, rate: u64) -> anyhow::Result<()> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let start = SystemTime::now() - Duration::from_secs(seconds + 10);
    let start_us = start.duration_since(UNIX_EPOCH)?.as_micros() as u64;
    let names: Vec<String> = plan.groups().map(|g| g.name.clone()).collect();
    let mut totals = vec![GroupMetrics::default(); names.len()];
    let log = IntervalLog::create(&dir.join("latency.hlog"), start, "mongo-stress synth")?;
    let tx = log.sender().expect("a new log");
    for s in 0..seconds {
        let at = start_us + s * 1_000_000;
        let mut hists = Vec::new();
        let mut total = new_histogram();
        for (g, m) in totals.iter_mut().enumerate() {
            let mut h = new_histogram();
            for k in 0..rate {
                // Log-normal around 2 ms: exp(N(ln 2000, 0.6)) microseconds.
                let z: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
                let us = (2000f64.ln() + 0.6 * z).exp() as u64 + 1;
                h.record(us)?;
                m.record_latency(at + k * 1_000_000 / rate, us);
            }
            total.add(&h)?;
            hists.push(IntervalHist {
                tag: Tag::latency(Label::group(&names[g])),
                hist: h,
            });
        }
        hists.push(IntervalHist {
            tag: Tag::latency(Label::Total),
            hist: total,
        });
        let activity = names
            .iter()
            .map(|n| Activity {
                tag: Tag::latency(Label::group(n)),
                users: 1,
                errors: 0,
            })
            .collect();
        tx.blocking_send(std::sync::Arc::new(IntervalBatch {
            start_epoch_us: at,
            duration: Duration::from_secs(1),
            hists,
            activity,
            spares: Default::default(),
        }))?;
    }
    drop(tx);
    log.finish()?;
    let server = ServerInfo {
        kind: ServerKind::External,
        version: "synthetic".into(),
        uri: "mongodb://synthetic".into(),
    };
    let mut summary = Summary::new(plan, 1, server);
    let result = RunResult::judged(
        plan,
        Measured {
            run: 1,
            started_at: humantime::format_rfc3339_seconds(start).to_string(),
            wall_secs: seconds as f64,
            groups: totals,
            warmup: vec![GroupMetrics::default(); names.len()],
            ..Measured::default()
        },
    );
    summary.add_run(result, &[], false);
    let mut json = Vec::new();
    mongo_stress::report::json::render(&summary, &mut json)?;
    std::fs::write(dir.join("summary.json"), json)?;
    let info = RunInfo::new(
        plan,
        &summary,
        vec!["synth_parts".into()],
        HostInfo::read(),
        (
            humantime::format_rfc3339_seconds(start).to_string(),
            Some(humantime::format_rfc3339_seconds(SystemTime::now()).to_string()),
        ),
        (std::time::Duration::from_secs(1), true),
        Default::default(),
    );
    mongo_stress::rundir::write_run_info(dir, &info)?;
    Ok(())
}
