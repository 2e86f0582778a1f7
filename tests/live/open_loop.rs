//! Open loop that a server can be held to: with one shared schedule per group, a slow reply
//! delays only its own operation while other users are idle, so the share of slow operations is
//! the share of slow replies; and when every user is busy, operations start late and the warning
//! says how many users the rate needs. The server is real; a loopback proxy in front of it holds
//! chosen replies.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::proxy::{port_of, start_proxy, Proxy};
use common::*;

fn run_through(
    server: &TestServer,
    proxy: &Proxy,
    groups: &str,
    tag: &str,
) -> (serde_json::Value, String, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db(tag);
    let path = profile(dir.path(), &db, "drop = true", groups);
    let out = dir.path().join("run");
    let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", proxy.port);
    let output = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &uri,
            "--quiet",
            "--no-resources",
            "--out",
        ])
        .arg(&out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let _ = server;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        matches!(output.status.code(), Some(0)),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let latencies = std::fs::read_to_string(out.join("samples.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').nth(9).unwrap().parse().unwrap())
        .collect();
    (read_json(&out.join("summary.json")), stdout, latencies)
}

#[test]
fn with_idle_users_the_share_of_slow_operations_is_the_share_of_slow_replies() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    // 2.00 % of inserts held 300 ms; 20 users at 200/s have plenty idle. A stall of the shared
    // machine makes unheld operations slow too, so a run whose timing misses gets one more try;
    // the counts must hold in every run.
    let mut misses = Vec::new();
    for attempt in 1..=2 {
        let proxy = start_proxy(port_of(&server.uri), 50, Duration::from_millis(300));
        let groups =
            "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 20\nduration = \"5s\"\nrate = 200\n";
        let (summary, _, latencies) = run_through(&server, &proxy, groups, "heldshare");
        let inserts = proxy.inserts.load(Ordering::SeqCst);
        let held = proxy.held.load(Ordering::SeqCst);
        assert_eq!(
            inserts,
            latencies.len() as u64,
            "every insert is one line of samples.tsv"
        );
        match timing(&summary, &latencies, held, inserts) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("attempt {attempt}: {e}");
                misses.push(e);
            }
        }
    }
    panic!("the timing missed in both runs: {misses:?}");
}

/// The share of operations over 50 ms is the share of held replies, service and latency agree,
/// and at most 1 % started late.
fn timing(
    summary: &serde_json::Value,
    latencies: &[u64],
    held: u64,
    inserts: u64,
) -> Result<(), String> {
    let held_pct = held as f64 * 100.0 / inserts as f64;
    let slow_pct =
        latencies.iter().filter(|l| **l > 50_000).count() as f64 * 100.0 / latencies.len() as f64;
    if (slow_pct - held_pct).abs() > 0.5 {
        return Err(format!(
            "{slow_pct:.2} % of operations over 50 ms, {held_pct:.2} % of replies held"
        ));
    }
    let r = row(summary, "ins");
    let f = |k: &str| r[k].as_f64().unwrap();
    // Service and latency agree: no operation waited for a user.
    if (f("average_ms") - f("service_average_ms")).abs() >= 2.0
        || (f("p99_ms") - f("service_p99_ms")).abs() >= 10.0
    {
        return Err(format!("latency and service time differ: {r}"));
    }
    if r["late"].as_u64().unwrap() * 100 > r["samples"].as_u64().unwrap() {
        return Err(format!("more than 1 % late: {r}"));
    }
    Ok(())
}

#[test]
fn with_every_user_busy_operations_are_late_and_the_warning_says_how_many_users_are_needed() {
    let Some(server) = TestServer::start() else {
        return;
    };
    // Every insert held 50 ms: 2 users serve at most 40/s of the 100/s asked.
    let proxy = start_proxy(port_of(&server.uri), 1, Duration::from_millis(50));
    let groups =
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 2\nduration = \"3s\"\nrate = 100\n";
    let (summary, stdout, _) = run_through(&server, &proxy, groups, "allbusy");

    let r = row(&summary, "ins");
    assert!(r["late"].as_u64().unwrap() > 0, "{r}");
    let warning = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "late_operations")
        .unwrap_or_else(|| panic!("no late_operations warning: {summary}"));
    let message = warning["message"].as_str().unwrap();
    eprintln!("{message}");
    assert!(stdout.contains(message), "{stdout}");
    // rate x service p99 = 100/s x the row's service p99 (at least the 50 ms hold): at least 5
    // users, more when the machine stretched some replies.
    let needed: f64 = message
        .split("about ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    let service_p99 = r["service_p99_ms"].as_f64().unwrap();
    assert!(service_p99 >= 50.0, "{r}");
    assert_eq!(
        needed,
        (100.0 * service_p99 / 1000.0).ceil().max(1.0),
        "{message}"
    );
    assert!(needed >= 5.0, "{message}");
    assert!(message.contains("all 2 users busy"), "{message}");
}
