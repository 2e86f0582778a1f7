//! Faults during a run: a server frozen past the operation timeout, a server killed mid-run with
//! stop_on_error_pct, and a collection the tool did not write. Each run must end on time, count
//! its failures by class, keep samples.tsv equal to `# Samples`, and exit with the documented code.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use mongo_stress::server::EmbeddedServer;
use mongodb::bson::doc;
use predicates::prelude::PredicateBooleanExt;

fn sample_lines(out: &std::path::Path) -> u64 {
    std::fs::read_to_string(out.join("samples.tsv"))
        .unwrap()
        .lines()
        .count() as u64
        - 1
}

#[test]
fn a_server_frozen_past_the_operation_timeout_fails_operations_as_timeouts_and_the_run_ends_on_time(
) {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let server = EmbeddedServer::start(None, &[], None).expect("a server to start");
    let pid = server.pid() as i32;
    let dir = tempfile::tempdir().unwrap();
    let setup = "drop = true";
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"5s\"\n";
    let path = profile(dir.path(), &unique_db("frozen"), setup, groups);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("[target]\n", "[target]\nop_timeout = \"1s\"\n");
    std::fs::write(&path, text).unwrap();
    let out = dir.path().join("run");
    let t = Instant::now();
    let child = spawn_run(&path, &server.uri(), &out);
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(3));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let output = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);

    assert_eq!(
        output.status.code(),
        Some(1),
        "done with failures: {stderr}"
    );
    // Setup and connecting take a moment; the load itself is 5 s plus at most one timeout.
    assert!(took < Duration::from_secs(12), "took {took:?}");
    let summary = read_json(&out.join("summary.json"));
    let ins = row(&summary, "ins");
    assert!(
        summary["runs"][0]["errors_by_class"]["ins"]["timeout"]
            .as_u64()
            .unwrap()
            >= 4,
        "{summary}"
    );
    assert_eq!(sample_lines(&out), ins["samples"].as_u64().unwrap());
    assert!(
        stdout.contains("no reply within the operation timeout of 1s"),
        "{stdout}"
    );
}

#[test]
fn a_server_killed_mid_run_stops_it_early_with_stop_on_error_pct() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let server = EmbeddedServer::start(None, &[], None).expect("a server to start");
    let dir = tempfile::tempdir().unwrap();
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"60s\"\n";
    let path = profile(dir.path(), &unique_db("killed"), "drop = true", groups);
    let text = format!(
        "stop_on_error_pct = 50\n{}",
        std::fs::read_to_string(&path).unwrap()
    );
    std::fs::write(&path, text).unwrap();
    let out = dir.path().join("run");
    let uri = format!("{}&serverSelectionTimeoutMS=500", server.uri());
    let t = Instant::now();
    let child = spawn_run(&path, &uri, &out);
    std::thread::sleep(Duration::from_secs(2));
    server.stop();
    let output = child.wait_with_output().unwrap();
    let took = t.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);

    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        took < Duration::from_secs(20),
        "a 60 s run should stop early, took {took:?}"
    );
    assert!(stdout.contains("STOPPED: stopped early"), "{stdout}");
    let summary = read_json(&out.join("summary.json"));
    assert!(summary["runs"][0]["stopped_early"]
        .as_str()
        .unwrap()
        .contains("stop_on_error_pct = 50"));
    assert_eq!(summary["interrupted"], false);
    let classes = &summary["runs"][0]["errors_by_class"]["ins"];
    assert!(
        classes
            .as_object()
            .unwrap()
            .keys()
            .all(|k| ["network", "server_selection", "timeout"].contains(&k.as_str())),
        "{classes}"
    );
    assert_eq!(
        sample_lines(&out),
        row(&summary, "ins")["samples"].as_u64().unwrap()
    );
}

#[test]
fn setup_drop_refuses_a_collection_another_program_wrote_unless_forced() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let db = unique_db("foreign");
    let client = server.client();
    runtime()
        .block_on(async {
            client
                .database(&db)
                .collection("cities")
                .insert_one(doc! { "name": "not ours" })
                .await
        })
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 1\nloops = 3\n",
    );
    bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
            "--out",
        ])
        .arg(dir.path().join("refused"))
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("did not write").and(predicates::str::contains("--force")),
        );
    assert_eq!(
        server.count(&db, "cities", doc! { "name": "not ours" }),
        1,
        "nothing was dropped"
    );
    // Refused at setup, before its first operation: it leaves no run directory behind.
    assert!(!dir.path().join("refused").exists());

    server.run_ok(
        path.to_str().unwrap(),
        &dir.path().join("forced"),
        &["--force"],
    );
    assert_eq!(server.count(&db, "cities", doc! { "name": "not ours" }), 0);
    assert_eq!(server.count(&db, "cities", doc! {}), 3);
}
