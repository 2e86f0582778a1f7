//! What a coordinator costs: the real `mongo-stress run --parts 64 --coordinator` process,
//! given 64 parts (threads of this program speaking its protocol over loopback HTTP) that each
//! send, every second, the interval histograms of 50 rows (49 groups and TOTAL, each of VALUES
//! latencies, in the hlog's V2 deflate base64 encoding: 200 is 640,000 operations a second in
//! all, 2,000 ten times that). Measured on the coordinator's
//! process alone, over the steady window: its CPU (utime + stime from /proc) as a share of one
//! core, its peak resident memory (VmHWM), and the merged intervals it said (each must hold all
//! 64 parts). The parts' own encoding is this program's cost, not counted.
//!
//! `cargo run --release --example coordinator_cost [-- SECONDS [VALUES]]` (default 30 s, 200
//! values); see docs/performance.md.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    reason = "small known numbers; a benchmark reads as one story"
)]
#![allow(clippy::disallowed_macros)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

const PARTS: usize = 64;
const GROUPS: usize = 49;
const TOKEN: &str = "coordinator-cost-benchmark";

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// utime + stime of a process, in clock ticks (100 a second).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn post(agent: &ureq::Agent, url: &str, body: &Value) -> Value {
    let mut r = agent
        .post(url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .header("Content-Type", "application/json")
        .send(serde_json::to_vec(body).unwrap().as_slice())
        .expect("the coordinator answers");
    serde_json::from_slice(&r.body_mut().read_to_vec().unwrap()).unwrap()
}

/// One row's interval: `values` latencies from 0.2 ms to ~50 ms, encoded as the hlog has it.
fn encoded(seed: &mut u64, values: u64) -> String {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for _ in 0..values {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        h.record(200 + (*seed % 50_000)).unwrap();
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&h, &mut bytes)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn main() {
    let seconds: u64 = std::env::args().nth(1).map_or(30, |s| s.parse().unwrap());
    let values: u64 = std::env::args().nth(2).map_or(200, |s| s.parse().unwrap());
    let bin = std::env::var("MONGO_STRESS_BIN")
        .unwrap_or_else(|_| "target/release/mongo-stress".to_string());
    let dir = tempfile::tempdir().unwrap();
    // 49 groups of 64 users, so each of the 64 parts runs one user of each.
    let mut profile = String::from(
        "name = \"cost\"\n[target]\ndatabase = \"cost\"\ncollection = \"c\"\n[document]\nx = 1\n",
    );
    for g in 0..GROUPS {
        profile.push_str(&format!(
            "[[group]]\nname = \"g{g}\"\nop = \"insert\"\nthreads = {PARTS}\nduration = \"1h\"\n"
        ));
    }
    let path = dir.path().join("cost.toml");
    std::fs::write(&path, profile).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut coord = Command::new(&bin)
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            "mongodb://127.0.0.1:1",
        ])
        .args(["--parts", &PARTS.to_string()])
        .args(["--coordinator", &format!("127.0.0.1:{port}")])
        .args(["--join-timeout", "1m", "--on-part-loss", "continue"])
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("MONGO_STRESS_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the coordinator (cargo build --release first)");
    let pid = coord.id();
    let said = Arc::new(AtomicU64::new(0));
    let full = Arc::new(AtomicU64::new(0));
    {
        let (said, full) = (Arc::clone(&said), Arc::clone(&full));
        let err = coord.stderr.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                if l.contains(" parts | TOTAL ") {
                    said.fetch_add(1, Ordering::Relaxed);
                    if l.contains(&format!(" {PARTS} parts | ")) {
                        full.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
    }
    let base = format!("http://127.0.0.1:{port}");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Each part's rows, encoded once (the coordinator decodes every one it is sent).
    let mut seed = 88_172_645_463_325_252u64;
    let rows: Arc<Vec<(String, String)>> = Arc::new(
        std::iter::once("TOTAL".to_string())
            .chain((0..GROUPS).map(|g| format!("g{g}")))
            .map(|tag| (tag, encoded(&mut seed, values)))
            .collect(),
    );
    let done = Arc::new(AtomicBool::new(false));
    let window: Arc<std::sync::Mutex<Option<(Instant, u64)>>> = Arc::default();
    let parts: Vec<_> = (0..PARTS)
        .map(|i| {
            let (base, rows, done) = (base.clone(), Arc::clone(&rows), Arc::clone(&done));
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(Duration::from_secs(10)))
                    .build()
                    .into();
                let joined = post(
                    &agent,
                    &format!("{base}/v1/join"),
                    &json!({"version": env!("CARGO_PKG_VERSION"), "host": format!("sim-{i}"),
                            "index": i, "clock": {"offset_us": 0, "round_trip_us": 100}}),
                );
                assert_eq!(joined["index"], i, "{joined}");
                let report = |what: Value| {
                    post(
                        &agent,
                        &format!("{base}/v1/report"),
                        &json!({"index": i, "what": what}),
                    )
                };
                // Every part joined, then every part ready: the start.
                let at = loop {
                    let a = report(json!({"kind": "ready"}));
                    if let Some(at) = a["go"]["at_us"].as_u64() {
                        break at;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                };
                let mut next = at;
                while !done.load(Ordering::Relaxed) {
                    let wait = next.saturating_sub(now_us());
                    std::thread::sleep(Duration::from_micros(wait));
                    let hists: Vec<Value> = rows.iter().map(|(t, h)| json!([t, h])).collect();
                    let activity: Vec<Value> = (0..GROUPS)
                        .map(|g| json!([format!("g{g}"), 1, 0]))
                        .collect();
                    report(json!({"kind": "interval", "start_us": next - 1_000_000,
                                  "duration_us": 1_000_000, "hists": hists, "activity": activity}));
                    next += 1_000_000;
                }
            })
        })
        .collect();
    // The steady window: from 5 s after the first merged interval.
    while said.load(Ordering::Relaxed) == 0 {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(5));
    let (t0, c0, n0) = (Instant::now(), cpu_ticks(pid), said.load(Ordering::Relaxed));
    *window.lock().unwrap() = Some((t0, c0));
    std::thread::sleep(Duration::from_secs(seconds));
    let (t1, c1, n1) = (Instant::now(), cpu_ticks(pid), said.load(Ordering::Relaxed));
    let hwm = vm_hwm_kib(pid);
    done.store(true, Ordering::Relaxed);
    for p in parts {
        let _ = p.join();
    }
    let _ = coord.kill();
    let _ = coord.wait();
    let secs = (t1 - t0).as_secs_f64();
    let cpu = (c1 - c0) as f64 / 100.0 / secs * 100.0;
    println!(
        "coordinator, {PARTS} parts x {} rows of {values} latencies each second, over {secs:.1} s: CPU {cpu:.2} % of one core, peak RSS {:.1} MB; {} merged intervals said in the window ({} of all {PARTS} parts in all)",
        GROUPS + 1,
        hwm as f64 / 1024.0,
        n1 - n0,
        full.load(Ordering::Relaxed)
    );
    println!(
        "targets: CPU under 5 % of one core ({}), under 100 MB ({})",
        if cpu < 5.0 { "met" } else { "MISSED" },
        if hwm < 100 * 1024 { "met" } else { "MISSED" }
    );
}
