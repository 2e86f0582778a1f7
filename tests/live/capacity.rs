//! `capacity` against a deployment of known capacity: a real server behind a loopback proxy that
//! holds every insert's reply 50 ms, driven by 20 users, can take at most 20 / 50 ms = 400
//! inserts/s (a long hold, so this machine's noise of a few ms is a small share of it). The search must find its knee within 10 % of that, and the steps must show p99
//! crossing the SLO right after the knee.

use crate::common;

use std::time::Duration;

use common::proxy::{port_of, start_proxy};
use common::*;

const HOLD_MS: u64 = 50;
const USERS: u64 = 20;
const SLO_MS: f64 = 100.0;

#[test]
fn capacity_finds_the_knee_of_a_server_that_holds_users_over_reply_time() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = profile(
        dir.path(),
        &unique_db("capacity"),
        "drop = true",
        &format!(
            "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = {USERS}\nduration = \"1s\"\n"
        ),
    );
    let proxy = start_proxy(port_of(&server.uri), 1, Duration::from_millis(HOLD_MS));
    let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", proxy.port);
    let out = dir.path().join("cap");
    let mut cmd = bin();
    cmd.args(["capacity", path.to_str().unwrap(), "--uri", &uri])
        .args(["--slo", &format!("p99<{SLO_MS}ms"), "--start-rate", "50"])
        .args(["--step", "3s", "--step-warmup", "1s", "--quiet", "--out"])
        .arg(&out)
        .timeout(Duration::from_secs(300));
    if let Some(pid) = server.pid() {
        cmd.args(["--server-pid", &pid.to_string()]);
    }
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("knee:"), "{stdout}");
    eprintln!("{stdout}");

    let result = read_json(&out.join("capacity.json"));
    let mut steps: Vec<&serde_json::Value> = result["steps"].as_array().unwrap().iter().collect();
    steps.sort_by(|a, b| {
        a["offered"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["offered"].as_f64().unwrap())
    });
    // The capacity: users over the reply time, as the lowest step measured it (the 50 ms held
    // plus the proxy's and the server's own ~1-2 ms); about 20 / 51.5 ms = 388/s.
    let reply_ms = steps[0]["p50_ms"].as_f64().unwrap();
    assert!(
        (HOLD_MS as f64..HOLD_MS as f64 + 5.0).contains(&reply_ms),
        "{stdout}"
    );
    let knee = result["knee"].as_f64().expect("a knee");
    // The reply time under load: the slower of the lowest step's and the service time (from the
    // actual start) of the first rate above the knee, which a loaded machine (a debug build
    // beside other tests) stretches by a few milliseconds.
    let loaded_ms = steps
        .iter()
        .find(|s| s["offered"].as_f64().unwrap() > knee)
        .and_then(|s| s["svc_p50_ms"].as_f64())
        .unwrap_or(reply_ms)
        .max(reply_ms);
    let expected = USERS as f64 * 1000.0 / loaded_ms;
    assert!(
        (knee - expected).abs() <= 0.1 * expected,
        "knee {knee}/s, expected {expected:.1}/s (users / reply time under load) within 10 %:\n{stdout}"
    );
    // The steps by offered rate: the knee held with p99 under the SLO, and the first rate above
    // it failed with p99 over it.
    let at = steps
        .iter()
        .position(|s| s["offered"].as_f64() == Some(knee))
        .unwrap();
    assert_eq!(steps[at]["held"], true);
    assert!(steps[at]["p99_ms"].as_f64().unwrap() < SLO_MS, "{stdout}");
    let after = steps[at + 1];
    assert_eq!(after["held"], false, "{stdout}");
    assert!(
        after["p99_ms"].as_f64().unwrap() > SLO_MS,
        "p99 crosses the SLO right after the knee:\n{stdout}"
    );
    // Below the knee every step held, and the achieved rate followed the offered one.
    for s in &steps[..=at] {
        let (o, a) = (
            s["offered"].as_f64().unwrap(),
            s["achieved"].as_f64().unwrap(),
        );
        assert!(s["held"] == true && a >= 0.95 * o, "{s}");
    }
    // Each step is a run directory of its own, and the chart is written.
    assert!(std::path::Path::new(steps[0]["dir"].as_str().unwrap())
        .join("summary.json")
        .is_file());
    let html = std::fs::read_to_string(out.join("capacity.html")).unwrap();
    assert!(html.contains("\"knee\":"), "capacity.html carries its data");
    assert!(out.join("capacity.tsv").is_file());
}
