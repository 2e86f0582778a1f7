//! A coordinated run served live by its coordinator: `run --parts 3 --coordinator ADDR --live
//! --live-control --metrics-listen ADDR`, three parts, one real server. The page's rate change
//! is split over the parts. Witnesses: the server's `opcounters.insert` read every 100 ms beside
//! the run, each part's own run directory, and the coordinator's merged run, which the page's
//! events and the last scrape must equal.

use crate::common;
use crate::coordinated::{finish, three};
use crate::coordinated_series::{epoch_ms, inserts_read_beside};
use crate::live_page::{events, http};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

/// A Prometheus sample's value: the first line of `name` whose labels hold every one of `has`.
fn sample(text: &str, name: &str, has: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| has.iter().all(|h| l.contains(h)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// 600/s over three parts (2 users each), raised to 900/s on the coordinator's page after four
/// merged intervals: each part's share goes to 300/s, and the server counts 900/s within 2 %.
#[test]
fn the_coordinators_page_and_metrics_are_the_merged_run_and_a_rate_change_is_split_over_the_parts()
{
    let Some(server) = TestServer::start_alone() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_live");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 6\nrate = 600\nduration = \"18s\"\n";
    let (page, scrape) = (free_port(), free_port());
    let done = Arc::new(AtomicBool::new(false));
    let (reader, readings) = inserts_read_beside(server.uri.clone(), Arc::clone(&done));
    let run = three(
        tmp.path(),
        &server,
        &db,
        groups,
        &[
            "--live",
            &format!("127.0.0.1:{page}"),
            "--live-control",
            "--metrics-listen",
            &format!("127.0.0.1:{scrape}"),
        ],
    );
    let stream = events(page, None);
    let mut seen = Vec::new();
    let mut intervals = 0;
    while intervals < 4 {
        let (name, data) = stream
            .recv_timeout(Duration::from_secs(60))
            .expect("the coordinator's page sends the merged intervals");
        intervals += usize::from(name == "interval");
        seen.push((name, data));
    }
    let (status, body) = http(page, "POST", "/api/groups/insert", &[], r#"{"rate": 900}"#);
    assert_eq!(status, 202, "{body}");
    let changed_ms = epoch_ms();
    assert!(body.contains("600/s -> 900/s"), "{body}");
    // A user per part at least: fewer would leave a part none.
    let (status, body) = http(page, "POST", "/api/groups/insert", &[], r#"{"users": 2}"#);
    assert_eq!(status, 400, "a rate group takes no users: {body}");
    let mut scraped = String::new();
    while let Ok(e) = stream.recv_timeout(Duration::from_secs(60)) {
        let end = e.0 == "end";
        seen.push(e);
        if end {
            // The endpoint lingers until a scrape has seen the last numbers.
            scraped = reqwest_get(scrape, "/metrics");
            break;
        }
    }
    for p in run.parts {
        let (code, said) = finish(p);
        assert_eq!(code, Some(0), "a part failed: {said}");
    }
    let (code, said) = finish(run.coord);
    done.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    assert_eq!(code, Some(0), "the coordinator failed: {said}");
    assert!(
        said.contains(
            "live: insert 600/s -> 900/s (api 127.0.0.1); each part's share: 300/s, 300/s, 300/s"
        ),
        "{said}"
    );

    let summary = read_json(&run.out.join("summary.json"));
    validate_schema(&summary);
    let samples = |s: &serde_json::Value, label: &str| row(s, label)["samples"].as_u64().unwrap();
    let whole = samples(&summary, "insert");
    assert_eq!(server.count(&db, "cities", mongodb::bson::doc! {}), whole);
    // Each part made its share of the change, its rows named as the coordinator named them.
    for d in &run.dirs {
        let own = read_json(&d.join("summary.json"));
        let fast = row(&own, "insert@900/s");
        let rate = fast["throughput"].as_f64().unwrap();
        assert!(
            (285.0..=312.0).contains(&rate),
            "a part's share ran at {rate}/s"
        );
        assert_eq!(
            samples(&own, "insert@600/s") + samples(&own, "insert@900/s"),
            samples(&own, "insert")
        );
        // A part's rows are judged against its share of each rate, not the whole run's.
        for w in own["warnings"].as_array().unwrap() {
            let m = w["message"].as_str().unwrap_or("");
            assert!(
                !m.contains("of the target 600/s") && !m.contains("of the target 900/s"),
                "a part judged against the whole run's rate: {w}"
            );
        }
    }
    let parts_fast: u64 = run
        .dirs
        .iter()
        .map(|d| samples(&read_json(&d.join("summary.json")), "insert@900/s"))
        .sum();
    assert_eq!(samples(&summary, "insert@900/s"), parts_fast);

    // The page's intervals add up to the merged run; its last totals and the last scrape are it.
    let counted: u64 = seen
        .iter()
        .filter(|(n, _)| n == "interval")
        .filter_map(|(_, d)| d["series"]["insert"]["count"].as_u64())
        .sum();
    assert_eq!(counted, whole, "the page's intervals");
    let last = seen
        .iter()
        .rev()
        .find(|(n, _)| n == "state")
        .map(|(_, d)| d.clone())
        .expect("a state");
    assert_eq!(last["totals"]["insert"]["samples"].as_u64(), Some(whole));
    assert_eq!(
        last["totals"]["insert@900/s"]["samples"].as_u64(),
        Some(parts_fast)
    );
    // And the percentiles of every row, a change's too: the page's last table is the merged one.
    let tsv = last["summary_tsv"].as_str().expect("the page's table");
    let mut lines = tsv.lines();
    let head: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for label in ["insert", "insert@600/s", "insert@900/s"] {
        let cells: Vec<&str> = lines
            .clone()
            .map(|l| l.split('\t').collect::<Vec<_>>())
            .find(|c| c[0] == label)
            .unwrap_or_else(|| panic!("no {label} in the page's table:\n{tsv}"));
        for (column, key) in [
            ("Median", "median_ms"),
            ("99% Line", "p99_ms"),
            ("Max", "max_ms"),
        ] {
            let on_page: f64 = cells[col(column)].parse().unwrap();
            let merged = row(&summary, label)[key].as_f64().unwrap();
            assert!(
                (on_page - merged).abs() < 0.006,
                "{label} {column}: the page {on_page}, the merged run {merged}"
            );
        }
    }
    let changes: Vec<_> = seen.iter().filter(|(n, _)| n == "change").collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let ops = sample(
        &scraped,
        "mongo_stress_operations_total",
        &["group=\"insert\"", "outcome=\"ok\""],
    )
    .unwrap_or_else(|| panic!("no operations in the last scrape:\n{scraped}"));
    assert_eq!(ops.to_string(), whole.to_string(), "the last scrape");

    // The server's count, from 3 s after the change for 8 s: the new rate within 2 %.
    let readings = readings.lock().unwrap().clone();
    let at = |ms: i64| {
        readings
            .iter()
            .find(|(t, _)| *t >= ms)
            .copied()
            .expect("a reading then")
    };
    let (a, b) = (at(changed_ms + 3_000), at(changed_ms + 11_000));
    #[allow(clippy::cast_precision_loss)]
    let rate = (b.1 - a.1) as f64 * 1000.0 / (b.0 - a.0) as f64;
    assert!(
        (rate - 900.0).abs() <= 18.0,
        "the server counted {rate}/s after the change to 900/s"
    );
}

/// A GET on loopback: the body.
fn reqwest_get(port: u16, path: &str) -> String {
    let (status, body) = http(port, "GET", path, &[], "");
    assert_eq!(status, 200, "{body}");
    body
}

/// Part 2 reaches the server through a proxy that holds every 10th insert's reply 150 ms; parts
/// 0 and 1 reach it directly. None of them alone breaks `insert.p99 < 100ms`, judged from 3 s
/// on; their merged p99 does (a thirtieth of the whole held), so the coordinator stops all three
/// within an interval of the breach.
#[test]
fn an_abort_on_the_merged_p99_stops_every_part_even_those_whose_own_p99_is_fine() {
    let Some(server) = TestServer::start_alone() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_p99");
    let proxy = common::proxy::start_proxy(
        common::proxy::port_of(&server.uri),
        10,
        Duration::from_millis(150),
    );
    let slow = format!("mongodb://127.0.0.1:{}/?directConnection=true", proxy.port);
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 6\nrate = 300\nduration = \"20s\"\n\n[thresholds]\n\"insert.p99\" = { limit = \"< 100ms\", abort = true, after = \"3s\" }\n";
    let profile = common::profile(tmp.path(), &db, "drop = true", groups);
    let port = free_port();
    let out = tmp.path().join("coordinated");
    let coord = std::process::Command::new(bin_path())
        .args(["run", profile.to_str().unwrap(), "--uri", &server.uri])
        .args([
            "--parts",
            "3",
            "--coordinator",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--seed", "7", "--token", crate::coordinated::TOKEN])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the coordinator");
    let url = format!("http://127.0.0.1:{port}");
    let dirs: Vec<_> = (0..3)
        .map(|i| tmp.path().join(format!("part-{i}")))
        .collect();
    let parts: Vec<_> = (0..3u32)
        .map(|i| {
            let uri = if i == 2 {
                slow.clone()
            } else {
                server.uri.clone()
            };
            std::process::Command::new(bin_path())
                .args(["part", "--join", &url, "--token", crate::coordinated::TOKEN])
                .args(["--index", &i.to_string(), "--join-wait", "30s", "--quiet"])
                .args(["--uri", &uri])
                .arg("--out")
                .arg(&dirs[i as usize])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("a part")
        })
        .collect();
    let mut coord = coord;
    let err = std::io::BufReader::new(coord.stderr.take().unwrap());
    let mut said = Vec::new();
    let mut breach_us = None;
    for l in std::io::BufRead::lines(err).map_while(Result::ok) {
        if l.starts_with("stopping every part:") && breach_us.is_none() {
            breach_us = Some(u64::try_from(epoch_ms()).unwrap() * 1000);
        }
        said.push(l);
    }
    let said = said.join("\n");
    let code = coord.wait().unwrap().code();
    assert_eq!(code, Some(4), "{said}");
    assert!(
        said.contains(
            "stopping every part: threshold `insert.p99 < 100ms` failed on the whole run"
        ),
        "{said}"
    );
    let breach_us = breach_us.expect("the stop said");
    let summary = read_json(&out.join("summary.json"));
    let p99 = row(&summary, "insert")["p99_ms"].as_f64().unwrap();
    assert!(p99 >= 100.0, "the merged p99 {p99} ms");
    let mut last = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        let (_, own_said) = finish(p);
        let s = read_json(&dirs[i].join("summary.json"));
        let stopped = s["runs"][0]["stopped_early"].to_string();
        assert!(
            stopped.contains("stopped early by the coordinator: threshold"),
            "part {i}: {stopped}\n{own_said}"
        );
        let own = row(&s, "insert")["p99_ms"].as_f64().unwrap();
        if i < 2 {
            assert!(
                own < 100.0,
                "part {i}'s own p99 is {own} ms: it alone breaks the limit"
            );
        }
        last.push(crate::coordinated::last_start_us(&dirs[i]));
    }
    // No operation of any part was due more than an interval (1 s) after the breach.
    for (i, l) in last.iter().enumerate() {
        assert!(
            *l <= breach_us + 1_000_000,
            "part {i} went on {} ms after the breach",
            (*l).saturating_sub(breach_us) / 1000
        );
    }
    let inserts = row(&summary, "insert")["samples"].as_u64().unwrap();
    assert!(inserts < 300 * 12, "the run went on: {inserts} inserts");
    assert_eq!(server.count(&db, "cities", mongodb::bson::doc! {}), inserts);
}
