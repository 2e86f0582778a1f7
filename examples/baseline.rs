//! The bare-driver baseline of scripts/bench.sh: the same profile, documents, setup, virtual
//! users, ramp-up and pool as `mongo-stress run`, and the same operations (the tool's own
//! `MongoBackend`, with payload sizes off), with nothing measured but one counter per user: no
//! clock per operation, no histogram, no sample channel, no log, no sampler.
//!
//! Usage: cargo run --release --example baseline -- PROFILE URI THREADS DURATION
//! Prints: operations, seconds, operations per second (tab-separated).

use std::sync::Arc;
use std::time::Instant;

use mongo_stress::ops::{Backend, MongoBackend};
use mongo_stress::plan::{Overrides, RunPlan};
use mongo_stress::workload::Request;
use mongodb::options::ClientOptions;
use mongodb::Client;
use rand::SeedableRng;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, profile, uri, threads, duration] = args.as_slice() else {
        anyhow::bail!("usage: baseline PROFILE URI THREADS DURATION");
    };
    let duration = humantime::parse_duration(duration)?;
    let loaded = mongo_stress::plan::profile::load(profile).map_err(|e| anyhow::anyhow!("{e}"))?;
    let overrides = Overrides {
        threads: Some(threads.parse()?),
        duration: Some(duration),
        ..Overrides::default()
    };
    let plan = RunPlan::build(&loaded, &overrides).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut opts = ClientOptions::parse(uri).await?;
    opts.max_pool_size = Some(plan.target.pool_size);
    let client = Client::with_options(opts)?;
    let backend = MongoBackend {
        measure: false,
        ..MongoBackend::new(&client, &plan)
    };
    let keys = backend
        .prepare(&plan, 1, &CancellationToken::new(), true, None)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .keys;
    let keys = Arc::new(keys.into_iter().next().unwrap_or_default());
    let group = Arc::new(plan.groups().next().expect("a group").clone());
    let gen = Arc::clone(plan.document());

    let start = Instant::now();
    let deadline = start + duration;
    let mut users = tokio::task::JoinSet::new();
    for n in 0..group.threads {
        let (group, gen, keys, backend) = (
            Arc::clone(&group),
            Arc::clone(&gen),
            Arc::clone(&keys),
            backend.clone(),
        );
        users.spawn(async move {
            let offset = group
                .ramp_up
                .mul_f64(f64::from(n) / f64::from(group.threads));
            tokio::time::sleep_until((start + offset).into()).await;
            let mut rng =
                rand::rngs::SmallRng::seed_from_u64(mongo_stress::executor::user_seed(7, 0, n));
            let mut done = 0u64;
            let mut pick = mongo_stress::workload::Chooser::new(group.keys, Default::default());
            while Instant::now() < deadline {
                let spec = group.draw(&mut rng);
                backend
                    .execute(0, Request::build(spec, &gen, &keys, &mut pick, &mut rng))
                    .await;
                done += 1;
            }
            done
        });
    }
    let mut ops = 0;
    while let Some(done) = users.join_next().await {
        ops += done?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{ops}\t{secs:.3}\t{:.1}", ops as f64 / secs);
    Ok(())
}
