//! The write audit and scheduled faults against the embedded server (secantusd-rs, and PyPI's
//! secantusd-py where it is asked for): a kill loses acknowledged inserts unless the server
//! syncs its commits, the lost `_id`s of audit.tsv are missing for an independent client too,
//! counters lose acknowledged increments, a step-down refuses writes for its length while
//! reads go on, a pause shows as latency and no errors, and an interrupted audit leaves every
//! file whole. Each run is bounded (seconds, not loops) and starts a server of its own.
//!
//! The independent witness: `--server-data` keeps the embedded server's data directory, and
//! the test starts a server of its own on it after the run and reads the collection with the
//! driver.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{bin, read_json, runtime, skip_if_set, skip_live};
use mongo_stress::server::EmbeddedServer;
use mongodb::bson::{doc, Document};

/// A run's result: its exit code, summary.json, console, run directory and the server's data.
struct Ran {
    code: i32,
    summary: serde_json::Value,
    stdout: String,
    out: PathBuf,
    data: PathBuf,
}

impl Ran {
    fn audit(&self) -> &serde_json::Value {
        &self.summary["runs"][0]["audit"]
    }

    fn group(&self, name: &str) -> &serde_json::Value {
        self.audit()["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group"] == name)
            .unwrap_or_else(|| panic!("no audit row {name}: {}", self.audit()))
    }

    fn n(&self, group: &str, field: &str) -> u64 {
        self.group(group)[field].as_u64().unwrap()
    }

    /// audit.tsv's lines of `kind`: (_id, detail).
    fn lines(&self, kind: &str) -> Vec<(i64, String)> {
        let text = std::fs::read_to_string(self.out.join("audit.tsv")).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("run\tgroup\twrite_concern\tkind\tcollection\t_id\tdetail")
        );
        lines
            .map(|l| l.split('\t').collect::<Vec<_>>())
            .filter(|c| c[3] == kind)
            .map(|c| (c[5].parse().unwrap(), c[6].to_string()))
            .collect()
    }
}

/// Runs `profile` on an embedded server started by the tool, keeping its data.
fn run(dir: &Path, name: &str, profile: &str, extra: &[&str]) -> Ran {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, profile).unwrap();
    let out = dir.join(name);
    let data = dir.join(format!("{name}-data"));
    let output = bin()
        .args(["run", path.to_str().unwrap(), "--no-resources", "--out"])
        .arg(&out)
        .arg("--server-data")
        .arg(&data)
        .args(extra)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let summary = read_json(&out.join("summary.json"));
    Ran {
        code: output.status.code().unwrap_or(-1),
        summary,
        stdout: format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)),
        out,
        data,
    }
}

/// A server of the test's own on a run's kept data, and the run's collection.
fn reopen(ran: &Ran, program: Option<&Path>) -> (EmbeddedServer, mongodb::Collection<Document>) {
    let server =
        EmbeddedServer::start(program, &[], Some(&ran.data)).expect("a server on the kept data");
    let client = runtime()
        .block_on(mongodb::Client::with_uri_str(server.uri()))
        .unwrap();
    let coll = client
        .database("mongo_stress")
        .collection::<Document>("cities");
    (server, coll)
}

fn count(coll: &mongodb::Collection<Document>, filter: Document) -> u64 {
    runtime()
        .block_on(async { coll.count_documents(filter).await })
        .unwrap()
}

const INSERTS: &str = "name = \"kill\"\naudit = true\n[target]\nwrite_concern = 1\n[setup]\ndrop = true\n[document]\ncity = \"A\"\n[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 10\nduration = \"8s\"\n";

/// The independent check of an insert run's audit: every lost `_id` of audit.tsv is missing,
/// and the collection holds exactly the acknowledged inserts less the lost, plus the in-doubt
/// ones found there.
fn check_inserts(ran: &Ran, program: Option<&Path>) {
    let (inserts, lost) = (ran.n("insert", "inserts"), ran.n("insert", "lost"));
    let samples = common::row(&ran.summary, "insert")["samples"]
        .as_u64()
        .unwrap();
    let errors = common::row(&ran.summary, "insert")["errors"]
        .as_u64()
        .unwrap();
    assert_eq!(
        inserts,
        samples - errors,
        "every successful insert is acknowledged"
    );
    let listed = ran.lines("lost");
    assert_eq!(
        listed.len() as u64,
        lost,
        "audit.tsv lists each lost insert"
    );
    let (_server, coll) = reopen(ran, program);
    let ids: Vec<i64> = listed.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        count(&coll, doc! { "_id": { "$in": ids } }),
        0,
        "an independent client finds none of the lost _ids"
    );
    assert_eq!(
        count(&coll, doc! {}),
        inserts - lost + ran.n("insert", "in_doubt_present"),
        "the collection: acknowledged - lost + in doubt and present"
    );
}

/// Runs until a kill loses acknowledged writes (at most 3 tries: how much a kill loses depends
/// on when the server last flushed its journal); each try is checked independently.
fn until_lost(
    dir: &Path,
    name: &str,
    profile: &str,
    extra: &[&str],
    program: Option<&Path>,
) -> Ran {
    for attempt in 1..=3 {
        let ran = run(dir, &format!("{name}{attempt}"), profile, extra);
        check_inserts(&ran, program);
        if ran.n("insert", "lost") > 0 {
            return ran;
        }
        eprintln!("try {attempt}: the kill lost nothing; again");
    }
    panic!("three kills under {name} lost no acknowledged insert");
}

#[test]
fn a_kill_under_w1_loses_acknowledged_inserts_which_audit_tsv_lists_and_the_server_lacks() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let thresholds = [
        "--threshold",
        "TOTAL.lost<1",
        "--threshold",
        "insert.unavailable_max<1s",
    ];
    let mut args = vec!["--fault", "kill@4s+2s"];
    args.extend(thresholds);
    let ran = until_lost(dir.path(), "w1", INSERTS, &args, None);
    // Exit 5, before the failed thresholds' 4.
    assert_eq!(
        ran.code, 5,
        "lost acknowledged data exits 5: {}",
        ran.stdout
    );
    let t = ran.summary["runs"][0]["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert!(t.iter().all(|t| t["pass"] == false), "{t:?}");
    assert_eq!(t[0]["value"].as_f64(), Some(ran.n("insert", "lost") as f64));
    assert!(ran.stdout.contains("lost _ids"), "{}", ran.stdout);
    let fault = &ran.summary["runs"][0]["faults"][0];
    assert_eq!(fault["kind"], "kill", "{fault}");
    assert!(fault["error"].is_null(), "{fault}");
    // The server was gone from 4 s for at least the 2 s before its restart.
    let windows = ran.summary["runs"][0]["unavailable"].as_array().unwrap();
    let w = windows
        .iter()
        .find(|w| w["label"] == "insert")
        .expect("a window");
    assert!(w["secs"].as_f64().unwrap() >= 2.0, "{w}");
    assert!(
        (w["offset_secs"].as_f64().unwrap() - 4.0).abs() < 0.5,
        "{w}"
    );
}

#[test]
fn a_kill_of_a_server_that_syncs_each_commit_loses_nothing() {
    if skip_live() {
        return;
    }
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let ran = run(
        dir.path(),
        "sync",
        INSERTS,
        &["--fault", "kill@4s+2s", "--server-arg=--sync-on-commit"],
    );
    assert_ne!(ran.code, 5, "{}", ran.stdout);
    assert_eq!(ran.n("insert", "lost"), 0, "{}", ran.audit());
    assert!(ran.n("insert", "inserts") > 1000, "{}", ran.audit());
    check_inserts(&ran, None);
}

#[test]
fn a_run_without_faults_loses_nothing_and_has_nothing_in_doubt() {
    if skip_live() {
        return;
    }
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let ran = run(
        dir.path(),
        "calm",
        &INSERTS.replace("\"8s\"", "\"3s\""),
        &[],
    );
    assert_eq!(ran.code, 0, "{}", ran.stdout);
    assert_eq!(ran.n("insert", "lost"), 0);
    assert_eq!(ran.n("insert", "in_doubt"), 0);
    // A stall of the shared machine may leave a window, but never one of failures.
    let windows = ran.summary["runs"][0]["unavailable"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        windows
            .iter()
            .all(|w| w["classes"].as_array().unwrap().is_empty()),
        "{windows:?}"
    );
    assert!(
        ran.stdout
            .contains("every acknowledged write the audit can check was kept"),
        "{}",
        ran.stdout
    );
    check_inserts(&ran, None);
}

#[test]
fn journaled_writes_survive_a_kill_of_secantusd_py_and_not_of_secantusd_rs() {
    if skip_live() || skip_if_set("MONGO_STRESS_SKIP_SECANTUSD_PY") {
        return;
    }
    let _turn = common::shared();
    let py = std::env::var_os("MONGO_STRESS_SECANTUSD_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("secantusd-py"));
    let dir = tempfile::tempdir().unwrap();
    let journaled = INSERTS.replace("write_concern = 1\n", "write_concern = 1\njournal = true\n");
    let py_arg = py.to_str().unwrap();
    // The Python server honours j: true: nothing acknowledged is lost.
    let ran = run(
        dir.path(),
        "py-j",
        &journaled,
        &["--fault", "kill@4s+2s", "--server-bin", py_arg],
    );
    assert_eq!(ran.group("insert")["write_concern"], "w:1 j:true");
    assert_eq!(ran.n("insert", "lost"), 0, "{}", ran.audit());
    assert!(ran.n("insert", "inserts") > 100, "{}", ran.audit());
    assert_ne!(ran.code, 5, "{}", ran.stdout);
    check_inserts(&ran, Some(&py));
    // The same without j: the audit is what tells the two apart (a loss is possible, not sure).
    let ran = run(
        dir.path(),
        "py-w1",
        INSERTS,
        &["--fault", "kill@4s+2s", "--server-bin", py_arg],
    );
    eprintln!(
        "secantusd-py, w:1 without j: {} of {} lost",
        ran.n("insert", "lost"),
        ran.n("insert", "inserts")
    );
    check_inserts(&ran, Some(&py));
    // secantusd-rs accepts j: true and does not wait for its journal.
    let ran = until_lost(
        dir.path(),
        "rs-j",
        &journaled,
        &["--fault", "kill@4s+2s"],
        None,
    );
    assert_eq!(ran.group("insert")["write_concern"], "w:1 j:true");
    assert_eq!(ran.code, 5);
}

#[test]
fn a_kill_loses_acknowledged_increments_and_audit_tsv_names_each_counter() {
    if skip_live() {
        return;
    }
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let profile = "name = \"inc\"\naudit = true\n[target]\nwrite_concern = 1\n[setup]\ndrop = true\npreload = 200\n[document]\ncity = \"A\"\n[[group]]\nname = \"bump\"\nop = \"update\"\ninc = [\"updates\"]\nthreads = 10\nduration = \"7s\"\n";
    for attempt in 1..=3 {
        let ran = run(
            dir.path(),
            &format!("inc{attempt}"),
            profile,
            &["--fault", "kill@3s+1s"],
        );
        let (acked, lost) = (ran.n("bump", "increments"), ran.n("bump", "lost_updates"));
        let doubt = ran.n("bump", "increments_in_doubt");
        assert!(acked > 1000, "{}", ran.audit());
        // A retried increment the server applied twice across its restart is a phantom one.
        let phantom = ran.n("bump", "phantom");
        // The witness: the counters on the server, read by a client of the test's own.
        let (_server, coll) = reopen(&ran, None);
        let docs: Vec<Document> = runtime().block_on(async {
            let mut c = coll.find(doc! {}).await.unwrap();
            let mut v = Vec::new();
            while c.advance().await.unwrap() {
                v.push(c.deserialize_current().unwrap());
            }
            v
        });
        assert_eq!(docs.len(), 200);
        let value = |d: &Document| match d.get("updates") {
            Some(mongodb::bson::Bson::Int32(n)) => i64::from(*n),
            Some(mongodb::bson::Bson::Int64(n)) => *n,
            _ => 0,
        };
        let total: i64 = docs.iter().map(value).sum();
        let (low, high) = (acked - lost + phantom, acked - lost + doubt + phantom);
        assert!(
            (low as i64..=high as i64).contains(&total),
            "the counters hold {total}: {acked} acknowledged - {lost} lost + {phantom} phantom (+ up to {doubt} in doubt)"
        );
        for (id, detail) in ran.lines("lost_update") {
            let d = docs
                .iter()
                .find(|d| d.get_i64("_id") == Ok(id))
                .expect("the document");
            assert!(
                detail.starts_with(&format!("updates: {},", value(d))),
                "audit.tsv says {detail}; the server has {}",
                value(d)
            );
        }
        if lost > 0 {
            assert_eq!(ran.code, 5, "{}", ran.stdout);
            return;
        }
        eprintln!("try {attempt}: the kill lost no increment; again");
    }
    panic!("three kills lost no acknowledged increment");
}

#[test]
fn a_step_down_refuses_writes_for_its_length_while_reads_go_on() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let profile = "name = \"stepdown\"\n[target]\nwrite_concern = 1\n[setup]\ndrop = true\npreload = 1000\n[document]\ncity = \"A\"\n[[group]]\nname = \"write\"\nop = \"insert\"\nthreads = 4\nduration = \"9s\"\n[[group]]\nname = \"read\"\nop = \"get\"\nthreads = 4\nduration = \"9s\"\n";
    let ran = run(
        dir.path(),
        "stepdown",
        profile,
        &["--fault", "stepdown@3s+3s"],
    );
    let run0 = &ran.summary["runs"][0];
    let classes = &run0["errors_by_class"]["write"];
    assert!(classes["not_primary"].as_u64().unwrap_or(0) > 0, "{run0}");
    assert!(
        run0["errors_by_class"]["read"].is_null(),
        "reads go on: {}",
        run0["errors_by_class"]
    );
    let windows = run0["unavailable"].as_array().unwrap();
    let w: Vec<_> = windows.iter().filter(|w| w["label"] == "write").collect();
    assert_eq!(w.len(), 1, "{windows:?}");
    let secs = w[0]["secs"].as_f64().unwrap();
    assert!((secs - 3.0).abs() <= 0.5, "the writes' window: {secs} s");
    assert_eq!(w[0]["classes"][0], "not_primary");
    assert!(
        !windows
            .iter()
            .any(|w| w["label"] == "read" || w["label"] == "TOTAL"),
        "{windows:?}"
    );
    let fault = &run0["faults"][0];
    assert_eq!(fault["kind"], "stepdown");
    let back = fault["recovery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "write")
        .unwrap();
    assert!(
        (back["first_success_secs"].as_f64().unwrap() - 3.0).abs() <= 0.5,
        "{back}"
    );
    // The report carries the fault for its charts' band.
    let html = std::fs::read_to_string(ran.out.join("report.html")).unwrap();
    assert!(
        html.contains("stepdown@3s+3s"),
        "the report names the fault"
    );
    assert!(ran.stdout.contains("write: unavailable"), "{}", ran.stdout);
}

#[test]
fn a_pause_shows_as_latency_and_a_window_without_errors() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let profile = INSERTS
        .replace("audit = true\n", "")
        .replace("\"8s\"", "\"6s\"");
    let ran = run(dir.path(), "pause", &profile, &["--fault", "pause@2s+2s"]);
    assert_eq!(ran.code, 0, "no errors: {}", ran.stdout);
    let row = common::row(&ran.summary, "insert");
    let max = row["max_ms"].as_f64().unwrap();
    assert!((1800.0..2600.0).contains(&max), "max latency {max} ms");
    let w = &ran.summary["runs"][0]["unavailable"][0];
    // The pause, and the moment the driver takes to find the server again after it.
    let secs = w["secs"].as_f64().unwrap();
    assert!((1.8..2.8).contains(&secs), "{w}");
    assert_eq!(w["classes"].as_array().unwrap().len(), 0, "{w}");
}

#[test]
fn a_run_interrupted_during_the_audit_writes_every_file_whole_and_says_so() {
    let Some(server) = common::TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let proxy = common::proxy::Cuttable::start(common::proxy::port_of(&server.uri));
    let db = common::unique_db("audit_int");
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        format!("audit = true\n[target]\ndatabase = \"{db}\"\nop_timeout = \"1s\"\n[setup]\ndrop = true\n[document]\ncity = \"A\"\n[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 2\nduration = \"3s\"\n"),
    )
    .unwrap();
    let out = dir.path().join("run");
    let uri = format!(
        "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=500",
        proxy.port
    );
    let child = std::process::Command::new(common::bin_path())
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &uri,
            "--no-resources",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The server goes away before the load ends: the read-back after it waits for it.
    std::thread::sleep(Duration::from_millis(2500));
    proxy.cut();
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("audit: reading back"), "{stderr}");
    assert!(
        stdout.contains("audit: did not finish (interrupted"),
        "{stdout}"
    );
    let s = read_json(&out.join("summary.json"));
    let audit = &s["runs"][0]["audit"];
    assert_eq!(audit["finished"], false, "{audit}");
    common::validate_schema(&s);
    // Every file whole: the audit's only its header, the sample log one line per sample.
    let audit_tsv = std::fs::read_to_string(out.join("audit.tsv")).unwrap();
    assert_eq!(audit_tsv.lines().count(), 1, "{audit_tsv}");
    let samples = std::fs::read_to_string(out.join("samples.tsv")).unwrap();
    assert!(samples.ends_with('\n'));
    assert_eq!(
        samples.lines().count() as u64 - 1,
        common::row(&s, "insert")["samples"].as_u64().unwrap()
    );
}

#[test]
fn removes_cut_off_by_their_timeout_are_in_doubt_not_documents_lost() {
    if skip_live() {
        return;
    }
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    // A pause longer than the operation timeout: removes time out after choosing their
    // document, and the server deletes it once it goes on.
    let profile = "name = \"rm\"\naudit = true\n[target]\nwrite_concern = 1\nop_timeout = \"1s\"\n[setup]\ndrop = true\npreload = 2000\n[document]\ncity = { choice = [\"A\", \"B\"] }\n[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 4\nduration = \"6s\"\n[[group]]\nname = \"remove\"\nop = \"remove\"\nthreads = 4\nduration = \"6s\"\n";
    let ran = run(dir.path(), "rm", profile, &["--fault", "pause@2s+2s"]);
    let timeouts = &ran.summary["runs"][0]["errors_by_class"]["remove"]["timeout"];
    assert!(
        timeouts.as_u64().unwrap_or(0) > 0,
        "{}",
        ran.summary["runs"][0]["errors_by_class"]
    );
    assert!(ran.n("remove", "deletes") > 100, "{}", ran.audit());
    assert_eq!(ran.audit()["total"]["lost"], 0, "{}", ran.audit());
    assert_eq!(ran.audit()["total"]["back"], 0, "{}", ran.audit());
    assert_ne!(ran.code, 5, "{}", ran.stdout);
    // The witness: the collection holds the preload and the acknowledged inserts less what was
    // deleted, within what is in doubt.
    let (_server, coll) = reopen(&ran, None);
    let there = count(&coll, doc! {}) as i64;
    let inserted = ran.n("insert", "inserts") as i64;
    let deleted = ran.n("remove", "deletes") as i64;
    let doubt_ins = ran.n("insert", "in_doubt") as i64;
    let removes = common::row(&ran.summary, "remove")["samples"]
        .as_i64()
        .unwrap();
    let expected = 2000 + inserted - deleted;
    assert!(
        there <= expected + doubt_ins && there >= expected - removes,
        "{there} documents: 2000 + {inserted} inserted - {deleted} deleted (± in doubt)"
    );
}
