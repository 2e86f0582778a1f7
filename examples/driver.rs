//! The bare driver: what a user of the Rust driver would write to send the same commands as
//! `mongo-stress run` does for scripts/bench.sh, with nothing of the tool's (no `ops::Backend`,
//! no `Request`, no document generator): documents built with `rawdoc!` from a `SmallRng`,
//! one tokio task per user, one shared counter. The limit the tool is measured against.
//!
//! Usage: cargo run --release --example driver -- WORKLOAD URI USERS LOOPS|DURATION [RATE]
//!        cargo run --release --example driver -- count URI COLLECTION   (documents in it)
//!   WORKLOAD  insert     insertOne of the `insert` profile's city documents (`_id` 0, 1, ...)
//!             find       find by `city` (limit 50, read to the end) on 10,000 preloaded
//!                        documents indexed on `city`, as the `find` profile
//!             template   scripts/bench-template.toml's mix on 10,000 preloaded orders:
//!                        findOne by `_id` 70, insertOne 20, updateOne `$inc` 10
//!   LOOPS     operations per user (`400`), or a DURATION (`10s`) for every user
//!   RATE      open loop: operations per second shared by the users (each idle user takes the
//!             next slot of one schedule, as the tool's open loop does)
//!   ramp=D    users start over D, user n at D x n / USERS, as a profile's `ramp_up` does (the
//!             bundled insert and find profiles ramp over 2 s)
//! Prints: operations, seconds, operations per second (tab-separated).

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

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::bson::{doc, rawdoc, RawDocumentBuf};
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The 2016 experiment's cities and the `pop` string paired with each (the bundled profiles').
const CITIES: [&str; 8] = [
    "Zhongshan",
    "Zhuhai",
    "Shenzhen",
    "Guangzhou",
    "Meizhou",
    "Qingyuan",
    "Shaoguang",
    "Zhaoqing",
];
const POPS: [&str; 8] = [
    "528400", "528401", "528402", "528403", "528404", "528405", "528406", "528407",
];
const PRELOAD: i64 = 10_000;

fn city(id: i64, rng: &mut SmallRng) -> RawDocumentBuf {
    let c = rng.random_range(0..CITIES.len());
    rawdoc! {
        "_id": id,
        "city": CITIES[c],
        "loc": { "x": 203_i64, "y": 102_i64 },
        "pop": POPS[c],
        "state": "GD",
    }
}

fn order(id: i64, rng: &mut SmallRng) -> RawDocumentBuf {
    let status = match rng.random_range(0..10) {
        0..2 => "open",
        2..5 => "paid",
        _ => "shipped",
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    let created = mongodb::bson::DateTime::from_millis(now - rng.random_range(0..30 * 86_400_000));
    let note: String = (0..rng.random_range(10..=40))
        .map(|_| rng.random_range(b'a'..=b'z') as char)
        .collect();
    let mut items = mongodb::bson::RawArrayBuf::new();
    for _ in 0..rng.random_range(1..=4) {
        items.push(rawdoc! { "qty": rng.random_range(1..=5) });
    }
    rawdoc! {
        "_id": id,
        "status": status,
        "created": created,
        "customer": rng.random_range(1..=1000),
        "note": note,
        "items": items,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    Insert,
    Find,
    Template,
}

/// When every user stops: after its loops, or at a deadline.
#[derive(Clone, Copy)]
enum Stop {
    Loops(u64),
    At(Instant),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().collect();
    let ramp = match args.iter().position(|a| a.starts_with("ramp=")) {
        Some(i) => humantime::parse_duration(&args.remove(i)["ramp=".len()..])?,
        None => Duration::ZERO,
    };
    if let [_, count, uri, name] = args.as_slice() {
        if count == "count" {
            let client = Client::with_uri_str(uri).await?;
            let coll: Collection<RawDocumentBuf> = client.database("mongo_stress").collection(name);
            println!("{}", coll.count_documents(doc! {}).await?);
            return Ok(());
        }
    }
    let (workload, uri, users, length, rate) = match args.as_slice() {
        [_, w, u, n, l] => (w, u, n, l, None),
        [_, w, u, n, l, r] => (w, u, n, l, Some(r.parse::<f64>()?)),
        _ => anyhow::bail!("usage: driver insert|find|template URI USERS LOOPS|DURATION [RATE]"),
    };
    let workload = match workload.as_str() {
        "insert" => Workload::Insert,
        "find" => Workload::Find,
        "template" => Workload::Template,
        other => anyhow::bail!("unknown workload `{other}`: insert, find or template"),
    };
    let users: u64 = users.parse()?;
    let mut opts = ClientOptions::parse(uri).await?;
    opts.max_pool_size = Some(100);
    let client = Client::with_options(opts)?;
    let name = if workload == Workload::Template {
        "orders"
    } else {
        "cities"
    };
    // The profiles' concerns: `insert` and `find` set `write_concern = 1` (sent with every
    // write); bench-template.toml sets none.
    let opts = mongodb::options::CollectionOptions::builder()
        .write_concern((workload != Workload::Template).then(|| {
            mongodb::options::WriteConcern::builder()
                .w(mongodb::options::Acknowledgment::Nodes(1))
                .build()
        }))
        .build();
    let coll: Collection<RawDocumentBuf> = client
        .database("mongo_stress")
        .collection_with_options(name, opts);
    coll.drop().await?;
    let next = Arc::new(AtomicI64::new(0));
    if workload != Workload::Insert {
        let mut rng = SmallRng::seed_from_u64(1);
        for batch in 0..PRELOAD / 1000 {
            let docs: Vec<_> = (batch * 1000..(batch + 1) * 1000)
                .map(|id| match workload {
                    Workload::Template => order(id, &mut rng),
                    _ => city(id, &mut rng),
                })
                .collect();
            coll.insert_many(docs).await?;
        }
        next.store(PRELOAD, Ordering::Relaxed);
        if workload == Workload::Find {
            let index = mongodb::IndexModel::builder()
                .keys(doc! { "city": 1 })
                .build();
            coll.create_index(index).await?;
        }
    }

    let start = Instant::now();
    let stop = match humantime::parse_duration(length) {
        Ok(d) => Stop::At(start + d),
        Err(_) => Stop::Loops(length.parse()?),
    };
    // Open loop: one schedule, a slot every 1/rate seconds, taken by whichever user is idle.
    let period = rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let slot = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..users {
        let (coll, next, slot) = (coll.clone(), Arc::clone(&next), Arc::clone(&slot));
        let offset = ramp.mul_f64(n as f64 / users as f64);
        tasks.spawn(async move {
            tokio::time::sleep_until((start + offset).into()).await;
            let mut rng = SmallRng::seed_from_u64(n);
            let mut done = 0u64;
            loop {
                match stop {
                    Stop::Loops(l) if done >= l => break,
                    Stop::At(t) if Instant::now() >= t => break,
                    _ => {}
                }
                if let Some(p) = period {
                    let due = start + p.mul_f64(slot.fetch_add(1, Ordering::Relaxed) as f64);
                    if matches!(stop, Stop::At(t) if due >= t) {
                        break;
                    }
                    tokio::time::sleep_until(due.into()).await;
                }
                let sent = match workload {
                    Workload::Insert => {
                        let id = next.fetch_add(1, Ordering::Relaxed);
                        coll.insert_one(city(id, &mut rng)).await.map(|_| ())
                    }
                    Workload::Find => {
                        let filter = doc! { "city": CITIES[rng.random_range(0..CITIES.len())] };
                        match coll.find(filter).limit(50).await {
                            Ok(mut cursor) => loop {
                                match cursor.advance().await {
                                    Ok(true) => {}
                                    Ok(false) => break Ok(()),
                                    Err(e) => break Err(e),
                                }
                            },
                            Err(e) => Err(e),
                        }
                    }
                    Workload::Template => {
                        let draw = rng.random_range(0..100);
                        let key = rng.random_range(0..next.load(Ordering::Relaxed));
                        if draw < 70 {
                            coll.find_one(doc! { "_id": key }).await.map(|_| ())
                        } else if draw < 90 {
                            let id = next.fetch_add(1, Ordering::Relaxed);
                            coll.insert_one(order(id, &mut rng)).await.map(|_| ())
                        } else {
                            coll.update_one(doc! { "_id": key }, doc! { "$inc": { "views": 1 } })
                                .await
                                .map(|_| ())
                        }
                    }
                };
                if let Err(e) = sent {
                    eprintln!("{e}");
                }
                done += 1;
            }
            done
        });
    }
    let mut ops = 0;
    while let Some(done) = tasks.join_next().await {
        ops += done?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{ops}\t{secs:.3}\t{:.1}", ops as f64 / secs);
    Ok(())
}
