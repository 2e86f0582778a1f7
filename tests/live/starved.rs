//! A starved load generator is named, from what the kernel says: the tool pinned with `taskset`
//! to one core that a busy process of higher priority (the tool runs at `nice 19`) holds does a
//! fraction of its work with little CPU use, so only its waits to run and its runtime's lag tell;
//! the same run unpinned gives no such warning. Also: host CPU counts the machine's CPUs, not
//! the one the tool may use (the busy core alone is about 100 % of one core).
//!
//! Alone on the machine (`TestServer::start_alone`): no other live test competes for the CPU
//! meanwhile.

use crate::common;

use std::process::{Command, Stdio};

use common::*;

fn run(
    server: &TestServer,
    profile: &std::path::Path,
    out: &std::path::Path,
    pin: Option<usize>,
) -> (serde_json::Value, String) {
    let tool = bin_path();
    let mut cmd = match pin {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu.to_string(), "nice", "-n", "19"])
                .arg(&tool);
            c
        }
        None => Command::new(&tool),
    };
    let output = cmd
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
            "--out",
        ])
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .expect("taskset and nice (util-linux, coreutils)");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (read_json(&out.join("summary.json")), stdout)
}

#[test]
fn a_starved_load_generator_is_named_and_an_unstarved_one_is_not() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("starved");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 4\nduration = \"5s\"\n",
    );
    let (calm, calm_out) = run(&server, &path, &dir.path().join("calm"), None);
    validate_schema(&calm);
    for stage in calm["resources"].as_array().unwrap() {
        assert!(stage["starved"].is_null(), "unstarved run flagged: {stage}");
        assert!(stage["client_wait_ms"]["avg"].as_f64().is_some(), "{stage}");
    }
    assert!(!calm_out.contains("starved"), "{calm_out}");

    let cpu = first_allowed_cpu();
    let busy = Command::new("taskset")
        .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
        .spawn()
        .expect("taskset");
    let _busy = KillOnDrop(busy);
    let (starved, out) = run(&server, &path, &dir.path().join("starved"), Some(cpu));
    validate_schema(&starved);
    let stage = &starved["resources"][0];
    let warning = stage["starved"]
        .as_str()
        .unwrap_or_else(|| panic!("no starvation named: {stage}\n{out}"));
    assert!(
        warning.contains("waited") && warning.contains("ms per second"),
        "{warning}"
    );
    assert!(
        out.contains("warning: insert: the load generator was starved of CPU"),
        "{out}"
    );
    assert!(
        starved["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "load_generator"),
        "{}",
        starved["warnings"]
    );
    // The busy process alone holds one core: the machine is at least ~90 % of one core busy,
    // however few CPUs the tool itself may use.
    let host = stage_host_cpu(&dir.path().join("starved"));
    assert!(host >= 90.0, "host CPU {host:.0} % with a core spinning");
    // And the starved tool did far less than the calm one.
    let ops = |s: &serde_json::Value| row(s, "insert")["samples"].as_u64().unwrap();
    assert!(
        ops(&starved) < ops(&calm),
        "{} vs {}",
        ops(&starved),
        ops(&calm)
    );
}

/// Average host_cpu_pct over the full seconds of resources.tsv.
fn stage_host_cpu(dir: &std::path::Path) -> f64 {
    let text = std::fs::read_to_string(dir.join("resources.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (iv, host) = (at("interval_ms"), at("host_cpu_pct"));
    let v: Vec<f64> = lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|c| c[iv].parse::<f64>().is_ok_and(|ms| ms >= 900.0))
        .filter_map(|c| c[host].parse().ok())
        .collect();
    assert!(!v.is_empty());
    v.iter().sum::<f64>() / v.len() as f64
}
