//! The embedded server: `run smoke` with no --uri starts one, prints the table, and leaves no
//! process or directory behind; a wrong --uri exits 3 within its timeout; Ctrl-C mid-run prints
//! what completed, keeps the output files whole and exits 130; a console whose reader went away
//! (`2>&1 | head -2`) changes nothing: the run goes on, writes every file and exits as its result
//! says.

use crate::common;

use std::time::{Duration, Instant};

use common::*;

fn data_dir_of(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("embedded server:"))
        .unwrap_or_else(|| panic!("no server line in {stderr}"));
    line.rsplit("data in ").next().unwrap().trim().to_string()
}

#[test]
fn run_smoke_without_uri_uses_the_embedded_server_and_cleans_up() {
    if skip_live() {
        return;
    }
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["run", "smoke", "--out"])
        .arg(dir.path().join("run"))
        .timeout(Duration::from_secs(120))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("Label") && stdout.contains("# Samples") && stdout.contains("TOTAL"),
        "{stdout}"
    );
    let data = data_dir_of(&stderr);
    assert!(
        !std::path::Path::new(&data).exists(),
        "server directory {data} left behind"
    );
    assert_eq!(
        processes_mentioning(&data),
        Vec::<u32>::new(),
        "server process left behind"
    );
    let summary = read_json(&dir.path().join("run/summary.json"));
    assert_eq!(
        row(&summary, "TOTAL")["samples"],
        4 * 100 + 4 * 50 + 4 * 50 + 2 * 50
    );
    assert_eq!(summary["server"]["kind"], "embedded");
    assert_eq!(summary["schema_version"], 1);
}

/// `mongo-stress run smoke 2>&1 | head -2`: head takes two lines and goes, and every later line
/// (the rest of the server's and setup's, the summary table) meets a closed pipe. Rust ignores
/// SIGPIPE, so each such write fails with EPIPE: the run used to panic on it (exit 101) and lose
/// its directory. Now it finishes, writes every file and exits as its result says (0).
#[test]
fn a_console_closed_by_head_changes_nothing_the_run_writes_every_file_and_exits_0() {
    if skip_live() {
        return;
    }
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    // bash's PIPESTATUS: the tool's exit, not head's.
    let out = assert_cmd::Command::new("bash")
        .args([
            "-c",
            r#""$0" run smoke --out "$1" 2>&1 | head -2; exit "${PIPESTATUS[0]}""#,
        ])
        .arg(bin_path())
        .arg(&run)
        .current_dir(dir.path())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(shown.lines().count(), 2, "head's two lines: {shown}");
    assert_eq!(out.status.code(), Some(0), "{shown}");
    // Every file a finished run writes, whole: the typed reader takes the directory, the
    // summary is its schema's, the sample log holds every operation the summary counts.
    for f in mongo_stress::rundir::File::ALL {
        let needed = !f.optional()
            || matches!(
                f,
                mongo_stress::rundir::File::LatencyHlog
                    | mongo_stress::rundir::File::Resources
                    | mongo_stress::rundir::File::ResourcesSummary
                    | mongo_stress::rundir::File::Report
                    | mongo_stress::rundir::File::Samples
            );
        assert!(!needed || f.path(&run).is_file(), "{} missing", f.name());
    }
    mongo_stress::rundir::RunDir::open(&run).expect("the run directory reads back");
    let summary = read_json(&run.join("summary.json"));
    validate_schema(&summary);
    let total = row(&summary, "TOTAL")["samples"].as_u64().unwrap();
    assert_eq!(total, 4 * 100 + 4 * 50 + 4 * 50 + 2 * 50);
    let logged = std::fs::read_to_string(run.join("samples.tsv")).unwrap();
    assert_eq!(logged.lines().count() as u64 - 1, total);
    assert!(read_json(&run.join("run.json"))["finished_at"].is_string());
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        report.trim_end().ends_with("</html>"),
        "report.html cut short"
    );
}

#[test]
fn a_wrong_uri_exits_3_within_the_connect_timeout() {
    let _turn = common::shared();
    let port = common::free_port();
    let t = Instant::now();
    bin()
        .args([
            "run",
            "smoke",
            "--uri",
            &format!("mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=1500"),
        ])
        .arg("--out")
        .arg(tempfile::tempdir().unwrap().path().join("r"))
        .timeout(Duration::from_secs(30))
        .assert()
        .code(3)
        .stderr(predicates::str::contains("cannot reach the server"));
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn ctrl_c_mid_run_prints_what_completed_and_exits_130_with_whole_files() {
    interrupted_mid_run(libc::SIGINT);
}

#[test]
fn sigterm_mid_run_is_handled_like_ctrl_c() {
    interrupted_mid_run(libc::SIGTERM);
}

fn interrupted_mid_run(signal: i32) {
    if skip_live() {
        return;
    }
    // Alone: the load must be past setup within the 6 s it is given.
    let _turn = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("run");
    let mut child = std::process::Command::new(bin_path())
        .args([
            "run",
            "crud-mixed",
            "--duration",
            "60s",
            "--interval",
            "1s",
            "--out",
        ])
        .arg(&out_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it get past setup and run for a while.
    std::thread::sleep(Duration::from_secs(6));
    let t = Instant::now();
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "no exit 30 s after SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(20));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stdout.contains("INTERRUPTED") && stdout.contains("TOTAL"),
        "{stdout}"
    );
    let summary = read_json(&out_dir.join("summary.json"));
    assert_eq!(summary["interrupted"], true);
    let total = row(&summary, "TOTAL")["samples"].as_u64().unwrap();
    assert!(total > 0);
    let logged = std::fs::read_to_string(out_dir.join("samples.tsv")).unwrap();
    assert_eq!(
        logged.lines().count() as u64 - 1,
        total,
        "samples.tsv lines vs # Samples"
    );
    assert!(logged.ends_with('\n'), "no torn last line");
    let tsv = std::fs::read_to_string(out_dir.join("summary.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), 1 + 5);
    assert!(tsv.ends_with('\n'));
    assert!(read_json(&out_dir.join("run.json"))["finished_at"].is_string());
    let data = data_dir_of(&stderr);
    assert!(
        !std::path::Path::new(&data).exists(),
        "server directory {data} left behind"
    );
    assert_eq!(processes_mentioning(&data), Vec::<u32>::new());
}

/// A wrapper script around secantusd-py is started as secantusd-py: the tool asks the program
/// (`--version`) what it is instead of guessing from its file name (it was started with
/// secantusd-rs's expectations and never seen listening).
#[test]
fn a_wrapper_script_around_secantusd_py_is_known_by_its_answer() {
    if skip_live() || skip_if_set("MONGO_STRESS_SKIP_SECANTUSD_PY") {
        return;
    }
    let _turn = common::shared();
    let py = std::env::var("MONGO_STRESS_SECANTUSD_PY").unwrap_or_else(|_| "secantusd-py".into());
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("my-database");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec '{py}' \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = Instant::now();
    let out = bin()
        .args([
            "run",
            "smoke",
            "--duration",
            "2s",
            "--no-resources",
            "--server-bin",
        ])
        .arg(&wrapper)
        .arg("--out")
        .arg(dir.path().join("run"))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("embedded server:"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
}
