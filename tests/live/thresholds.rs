//! Thresholds on real runs: one that must pass passes (exit 0), one that must fail gives exit 4
//! and the table names it, and `abort = true` stops a 30 s run within its `after` plus two
//! intervals.

use crate::common;

use std::time::Duration;

use common::*;

const INSERT_30S: &str =
    "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"30s\"\n";

fn run(
    server: &TestServer,
    extra_profile: &str,
    duration: &str,
    args: &[&str],
    tag: &str,
) -> (Option<i32>, String, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db(tag);
    let groups = format!("{INSERT_30S}{extra_profile}");
    let path = profile(dir.path(), &db, "drop = true", &groups);
    let out = dir.path().join("run");
    let output = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
            "--no-resources",
            "--out",
        ])
        .arg(&out)
        .args(["--duration", duration])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        out,
        dir,
    )
}

#[test]
fn thresholds_that_hold_pass_and_one_that_cannot_gives_exit_4() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let table = "[thresholds]\n\"ins.samples\" = \"> 10\"\n";
    let (code, stdout, out, _dir) = run(
        &server,
        table,
        "2s",
        &[
            "--threshold",
            "TOTAL.error_pct<0.1",
            "--threshold",
            "ins.p99<10s",
        ],
        "thrpass",
    );
    assert_eq!(code, Some(0), "{stdout}");
    let tsv = std::fs::read_to_string(out.join("thresholds.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), 4, "{tsv}");
    assert!(tsv.lines().skip(1).all(|l| l.ends_with("\tpass")), "{tsv}");
    let summary = read_json(&out.join("summary.json"));
    let samples = row(&summary, "ins")["samples"].as_f64().unwrap();
    let judged = &summary["runs"][0]["thresholds"][0];
    assert_eq!(judged["threshold"], "ins.samples > 10");
    assert_eq!(
        judged["value"].as_f64().unwrap(),
        samples,
        "judged on the summary's numbers"
    );

    let (code, stdout, out, _dir) = run(
        &server,
        "",
        "2s",
        &["--threshold", "ins.p99<1us"],
        "thrfail",
    );
    assert_eq!(code, Some(4), "{stdout}");
    assert!(
        stdout.contains("ins.p99 < 1us") && stdout.contains("FAIL"),
        "{stdout}"
    );
    assert!(stdout.contains("THRESHOLDS FAILED: 1 (exit 4)"), "{stdout}");
    let summary = read_json(&out.join("summary.json"));
    let judged = &summary["runs"][0]["thresholds"][0];
    assert_eq!(judged["pass"], false);
    assert_eq!(
        judged["value"].as_f64().unwrap(),
        row(&summary, "ins")["p99_ms"].as_f64().unwrap()
    );
}

#[test]
fn an_aborting_threshold_stops_a_30_second_run_soon_after_its_after() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let table = "[thresholds]\n\"ins.p99\" = { limit = \"< 1us\", abort = true, after = \"2s\" }\n";
    let (code, stdout, out, _dir) = run(&server, table, "30s", &[], "thrabort");
    assert_eq!(code, Some(4), "{stdout}");
    let summary = read_json(&out.join("summary.json"));
    let wall = summary["runs"][0]["wall_secs"].as_f64().unwrap();
    // after (2 s) plus two 1 s intervals; in-flight inserts end within milliseconds.
    assert!(wall <= 4.5, "the run went on for {wall} s");
    let reason = summary["runs"][0]["stopped_early"].as_str().unwrap();
    assert!(
        reason.contains("threshold `ins.p99 < 1us` failed"),
        "{reason}"
    );
    assert_eq!(summary["runs"][0]["thresholds"][0]["aborted"], true);
    assert!(stdout.contains("FAIL (stopped the run)"), "{stdout}");
}

#[test]
fn a_threshold_on_one_kind_of_a_mix_is_judged_on_that_kinds_row() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("kind_thresholds");
    let path = profile(
        dir.path(),
        &db,
        "drop = true\npreload = 200",
        "[[group]]\nname = \"ab\"\nmix = { get = 50, update = 50 }\nset = [\"pop\"]\nthreads = 2\nloops = 300\n\n[thresholds]\n\"ab:get.samples\" = \"> 0\"\n\"ab:update.samples\" = \"< 1\"\n",
    );
    let out = dir.path().join("run");
    let output = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
        ])
        .args(["--no-resources", "--out"])
        .arg(&out)
        .args(["--threshold", "ab:get.p99 < 60s"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The update kind's threshold cannot hold: exit 4, and only it fails.
    assert_eq!(output.status.code(), Some(4), "{stdout}");
    let summary = read_json(&out.join("summary.json"));
    let samples = |label: &str| row(&summary, label)["samples"].as_f64().unwrap();
    assert_eq!(samples("ab:get") + samples("ab:update"), 600.0);
    let judged = summary["runs"][0]["thresholds"].as_array().unwrap();
    let find = |text: &str| {
        judged
            .iter()
            .find(|t| t["threshold"].as_str().unwrap().starts_with(text))
            .unwrap_or_else(|| panic!("{text} not judged: {judged:?}"))
    };
    // Each judged on its own kind's row, not the group's 600.
    assert_eq!(
        find("ab:get.samples")["value"].as_f64(),
        Some(samples("ab:get"))
    );
    assert_eq!(find("ab:get.samples")["pass"], true);
    assert_eq!(
        find("ab:update.samples")["value"].as_f64(),
        Some(samples("ab:update"))
    );
    assert_eq!(find("ab:update.samples")["pass"], false);
    let p99 = find("ab:get.p99");
    assert_eq!(p99["pass"], true);
    assert_eq!(
        p99["value"].as_f64(),
        row(&summary, "ab:get")["p99_ms"].as_f64()
    );
}
