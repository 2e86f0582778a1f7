//! `sweep` across three coordinated parts, against a deployment of known scaling: the real
//! server behind the Universal Scalability Law's proxy (`common::proxy::start_usl_proxy`, whose
//! law counts every request in flight, whichever part sent it). Witnesses: the law's own peak,
//! and the server's `opcounters.insert`, read every 100 ms beside the sweep on a connection of
//! the test's own, which must hold each step's operations. And `capacity` across two parts
//! against a proxy of known capacity: its knee, and the server's documents.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::proxy::{port_of, start_usl_proxy};
use common::*;

use super::coordinated::finish;
use mongodb::bson::doc;

const TOKEN: &str = "series-test-token-0123456789";

/// Inserts into a collection kept between steps: nothing but the steps inserts, so the
/// server's insert counter between two steps stands still.
const PROFILE: &str = r#"
name = "usl-insert"
[[collection]]
name = "kv"
drop = false
[collection.document]
v = 1
[[group]]
name = "put"
op = "insert"
threads = 1
duration = "10s"
"#;

pub(crate) fn epoch_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// `opcounters.insert` as read, with the time (epoch ms) it was read at.
pub(crate) type Readings = Arc<Mutex<Vec<(i64, i64)>>>;

/// `opcounters.insert` every 100 ms until `done`, with the time it was read.
pub(crate) fn inserts_read_beside(
    uri: String,
    done: Arc<AtomicBool>,
) -> (std::thread::JoinHandle<()>, Readings) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let theirs = Arc::clone(&seen);
    let handle = std::thread::spawn(move || {
        let client = runtime()
            .block_on(mongodb::Client::with_uri_str(&uri))
            .expect("client");
        while !done.load(Ordering::SeqCst) {
            let status = runtime()
                .block_on(async {
                    client
                        .database("admin")
                        .run_command(doc! { "serverStatus": 1 })
                        .await
                })
                .expect("serverStatus");
            let n = status
                .get_document("opcounters")
                .unwrap()
                .get("insert")
                .and_then(mongodb::bson::Bson::as_i64)
                .or_else(|| {
                    status
                        .get_document("opcounters")
                        .unwrap()
                        .get_i32("insert")
                        .ok()
                        .map(i64::from)
                })
                .unwrap();
            theirs.lock().unwrap().push((epoch_ms(), n));
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    (handle, seen)
}

fn spawn(c: &mut Command) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mongo-stress")
}

/// lambda 50/s, sigma 0.05, kappa 0.002: the peak at sqrt(0.95 / 0.002) = 21.8 users. Three
/// parts double from 3 users per group (one a part): 3, 6, 12, 24, 48, 96, then refine. The
/// parts start before the coordinator listens (`--join-wait`), as pods may.
#[test]
fn a_sweep_across_three_parts_finds_the_peak_and_each_step_is_what_the_server_counted() {
    let Some(server) = TestServer::start_alone() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let (l, s, k) = (50.0, 0.05, 0.002);
    let proxy = start_usl_proxy(port_of(&server.uri), l, s, k);
    let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", proxy.port);
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("usl.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    let out = tmp.path().join("sweep");
    let done = Arc::new(AtomicBool::new(false));
    let (poller, seen) = inserts_read_beside(server.uri.clone(), Arc::clone(&done));
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    // The parts start first, as pods may: they wait for the coordinator to listen.
    let parts: Vec<Child> = (0..3)
        .map(|i| {
            spawn(
                Command::new(bin_path())
                    .args(["part", "--join", &url, "--token", TOKEN, "--quiet"])
                    .args(["--join-wait", "60s", "--out"])
                    .arg(tmp.path().join(format!("part{i}"))),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let page = free_port();
    let mut coordinator = spawn(
        Command::new(bin_path())
            .args(["sweep", profile.to_str().unwrap(), "--uri", &uri])
            .args([
                "--parts",
                "3",
                "--coordinator",
                &format!("127.0.0.1:{port}"),
            ])
            .args(["--step", "3s", "--warmup", "1s", "--no-resources", "--out"])
            .arg(&out)
            .args(["--live", &format!("127.0.0.1:{page}")])
            .env("MONGO_STRESS_TOKEN", TOKEN),
    );
    crate::live_page::wait_for_page(page, &mut coordinator);
    let events = crate::live_page::events(page, None);
    let (code, said) = finish(coordinator);
    for (i, p) in parts.into_iter().enumerate() {
        let (c, text) = finish(p);
        assert_eq!(c, Some(0), "part {i}: {text}\ncoordinator: {said}");
    }
    done.store(true, Ordering::SeqCst);
    poller.join().unwrap();
    assert_eq!(code, Some(0), "{said}");
    let json = read_json(&out.join("sweep.json"));
    let want_n: f64 = ((1.0 - s) / k).sqrt();
    let peak_n = json["fit"]["peak_n"]
        .as_f64()
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        (peak_n - want_n).abs() <= 0.2 * want_n,
        "peak {peak_n} users against {want_n}: {said}"
    );
    let steps = json["steps"].as_array().unwrap();
    let ran: Vec<u64> = steps
        .iter()
        .map(|s| s["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(&ran[..5], &[3, 6, 12, 24, 48], "{said}");
    // The coordinator's page showed each step, its intervals the step's merged operations.
    let mut shown: Vec<(String, u64)> = Vec::new();
    while let Ok((name, data)) = events.recv_timeout(Duration::from_secs(5)) {
        match name.as_str() {
            "run" => shown.push((data["title"].as_str().unwrap_or("").to_string(), 0)),
            "interval" => {
                if let Some(last) = shown.last_mut() {
                    last.1 += data["series"]["put"]["count"].as_u64().unwrap_or(0);
                }
            }
            "end" => break,
            _ => {}
        }
    }
    assert_eq!(shown.len(), steps.len(), "{shown:?}");
    let seen = seen.lock().unwrap().clone();
    for (st, (title, on_page)) in steps.iter().zip(&shown) {
        let dir = Path::new(st["dir"].as_str().unwrap());
        let summary = read_json(&dir.join("summary.json"));
        assert_eq!(summary["parts"].as_array().unwrap().len(), 3, "{summary}");
        let name = dir.file_name().unwrap().to_string_lossy();
        assert_eq!(*title, format!("sweep step {name}"));
        assert_eq!(
            Some(*on_page),
            row(&summary, "put")["samples"].as_u64(),
            "step {name} on the coordinator's page"
        );
        let run = &summary["runs"][0];
        let stage = &run["stages"][0];
        let (began, end) = (
            stage["began_ms"].as_i64().unwrap(),
            stage["end_ms"].as_i64().unwrap(),
        );
        let measured = run["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == "TOTAL")
            .unwrap()["samples"]
            .as_i64()
            .unwrap();
        let warm: i64 = run["warmup"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["samples"].as_i64().unwrap())
            .sum();
        // The counter just before the step began (the start is set 2 s after every part is
        // ready, and nothing inserts in between) and once its last replies came back.
        let before = seen
            .iter()
            .rev()
            .find(|(t, _)| *t <= began - 200)
            .unwrap()
            .1;
        let after = seen.iter().find(|(t, _)| *t >= end + 1_000).unwrap().1;
        let counted = after - before;
        let tool = measured + warm;
        eprintln!(
            "step at {} users: merged {tool}, server {counted}, {}/s",
            st["threads"], st["throughput"]
        );
        #[allow(clippy::cast_precision_loss)]
        let off = (tool - counted).abs() as f64 / counted as f64;
        assert!(
            off <= 0.02,
            "step at {} users: the parts merged {tool} inserts ({measured} measured, {warm} warm-up), the server counted {counted}",
            st["threads"]
        );
    }
}

/// `capacity --parts 2` against the real server behind a proxy that holds every insert's reply
/// 50 ms, 20 users in all (10 a part): at most 20 / 50 ms = 400 inserts/s. The knee within 10 %
/// of the users over the reply time; and every insert of every step, merged from the two parts,
/// is a document on the server (the collection is kept from the first step on).
#[test]
fn capacity_across_two_parts_finds_the_knee_and_every_insert_is_on_the_server() {
    let Some(server) = TestServer::start_alone() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_capacity");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 20\nduration = \"1s\"\n";
    let profile = common::profile(tmp.path(), &db, "drop = true", groups);
    let proxy = common::proxy::start_proxy(port_of(&server.uri), 1, Duration::from_millis(50));
    let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", proxy.port);
    let port = free_port();
    let out = tmp.path().join("cap");
    let coordinator = spawn(
        Command::new(bin_path())
            .args(["capacity", profile.to_str().unwrap(), "--uri", &uri])
            .args([
                "--parts",
                "2",
                "--coordinator",
                &format!("127.0.0.1:{port}"),
            ])
            .args(["--slo", "p99<100ms", "--start-rate", "50"])
            .args([
                "--step",
                "3s",
                "--step-warmup",
                "1s",
                "--no-resources",
                "--out",
            ])
            .arg(&out)
            .env("MONGO_STRESS_TOKEN", TOKEN),
    );
    let url = format!("http://127.0.0.1:{port}");
    let parts: Vec<Child> = (0..2)
        .map(|i| {
            spawn(
                Command::new(bin_path())
                    .args(["part", "--join", &url, "--token", TOKEN, "--quiet"])
                    .args(["--join-wait", "30s", "--out"])
                    .arg(tmp.path().join(format!("part{i}"))),
            )
        })
        .collect();
    let (code, said) = finish(coordinator);
    for (i, p) in parts.into_iter().enumerate() {
        let (c, text) = finish(p);
        assert_eq!(c, Some(0), "part {i}: {text}\ncoordinator: {said}");
    }
    assert_eq!(code, Some(0), "{said}");
    let result = read_json(&out.join("capacity.json"));
    let steps = result["steps"].as_array().unwrap();
    let lowest = steps
        .iter()
        .min_by(|a, b| {
            a["offered"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["offered"].as_f64().unwrap())
        })
        .unwrap();
    let reply_ms = lowest["p50_ms"].as_f64().unwrap();
    // The proxy's hold, and the server's and the proxy's own millisecond or two: the reply time
    // is the deployment's, not a number of the tool's own.
    assert!(
        (50.0..56.0).contains(&reply_ms),
        "p50 {reply_ms} ms at the lowest rate: {said}"
    );
    let knee = result["knee"]
        .as_f64()
        .unwrap_or_else(|| panic!("no knee: {said}"));
    let expected = 20.0 * 1000.0 / reply_ms;
    assert!(
        (knee - expected).abs() <= 0.1 * expected,
        "knee {knee}/s, expected {expected:.1}/s (users / reply time) within 10 %:\n{said}"
    );
    // Every step's directory (the runs again included): the two parts merged, and their
    // inserts, warm-up and measured, are the collection's documents.
    let mut inserted = 0;
    for e in std::fs::read_dir(&out).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let s = read_json(&dir.join("summary.json"));
        assert_eq!(s["parts"].as_array().unwrap().len(), 2, "{}", dir.display());
        let run = &s["runs"][0];
        inserted += row(&s, "ins")["samples"].as_u64().unwrap();
        inserted += run["warmup"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["samples"].as_u64().unwrap())
            .sum::<u64>();
    }
    assert_eq!(server.count(&db, "cities", doc! {}), inserted, "{said}");
}
