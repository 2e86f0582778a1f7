//! Open-loop runs at a target rate: the rate and the operation count against the server's own
//! opcounters, `--scale 2` doubling every group's rate (the server's documents and opcounters
//! as the witness) and leaving a closed-loop group as it is, and a server frozen mid-run
//! (SIGSTOP) showing in the intended-start latency.

use crate::common;

use std::time::Duration;

use common::*;
use mongodb::bson::doc;

fn insert_group(rate: u32, threads: u32, duration: &str) -> String {
    format!("[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = {threads}\nduration = \"{duration}\"\nrate = {rate}\n")
}

#[test]
fn a_rate_of_200_per_second_for_5_seconds_sends_1000_operations_evenly() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("rate");
    let path = profile(dir.path(), &db, "drop = true", &insert_group(200, 10, "5s"));
    let before = server.opcounters();
    let out = dir.path().join("run");
    let (summary, stdout, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    let after = server.opcounters();

    let r = row(&summary, "ins");
    let samples = r["samples"].as_u64().unwrap();
    assert!(
        (980..=1020).contains(&samples),
        "{samples} operations, expected 1000 within 2 %"
    );
    let throughput = r["throughput"].as_f64().unwrap();
    assert!(
        (190.0..=210.0).contains(&throughput),
        "{throughput}/s, expected 200 within 5 %"
    );
    assert_eq!(r["missed"], 0);
    // The server saw exactly what the summary counts.
    assert_eq!(
        counter(&after, "insert") - counter(&before, "insert"),
        samples as i64
    );
    assert_eq!(server.count(&db, "cities", doc! {}), samples);
    assert!(stdout.contains("Open loop (ins at 200/s)"), "{stdout}");

    // Evenly, not in bursts: no 100 ms window of the run holds more than twice its share (20).
    let log = std::fs::read_to_string(out.join("samples.tsv")).unwrap();
    let mut starts: Vec<u64> = log
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    starts.sort_unstable();
    let busiest = starts
        .iter()
        .enumerate()
        .map(|(i, s)| starts[i..].iter().take_while(|t| **t < s + 100_000).count())
        .max()
        .unwrap();
    assert!(busiest <= 40, "{busiest} operations started within 100 ms");
}

/// `run --scale 2`: each open-loop group at twice its profile's rate, counted by the server
/// (the inserts' documents, the finds' query opcounter), not by the tool; the closed-loop group
/// left as it is, with a warning that names it; run.json and the plan say so.
#[test]
fn scale_2_runs_every_open_loop_group_at_twice_its_rate_as_the_server_counts_it() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("scale");
    let (ins_rate, look_rate, secs) = (60.0, 30.0, 5.0);
    let groups = format!(
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 10\nrate = {ins_rate}\nduration = \"{secs}s\"\n\n\
         [[group]]\nname = \"look\"\nop = \"find\"\nfilter = [\"city\"]\nlimit = 1\nthreads = 5\nrate = {look_rate}\nduration = \"{secs}s\"\n\n\
         [[group]]\nname = \"pinger\"\nthreads = 1\nloops = 50\n[group.command]\nping = 1\n"
    );
    let path = profile(dir.path(), &db, "drop = true", &groups);

    // The plan says it before anything runs.
    let plan = bin()
        .args(["validate", path.to_str().unwrap(), "--scale", "2"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let shown = String::from_utf8_lossy(&plan.stdout);
    assert!(shown.contains("open loop at 120/s"), "{shown}");
    assert!(shown.contains("open loop at 60/s"), "{shown}");
    assert!(
        shown.contains("scale: every rate x2") && shown.contains("left as they are: pinger"),
        "{shown}"
    );

    let before = server.opcounters();
    let out = dir.path().join("run");
    let run = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
        ])
        .args(["--scale", "2", "--out"])
        .arg(&out)
        .timeout(Duration::from_secs(90))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let after = server.opcounters();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("warning: --scale 2 multiplies rates, and group pinger runs closed loop"),
        "{stderr}"
    );
    let summary = read_json(&out.join("summary.json"));

    // The server's witness: documents inserted, queries served, each over the group's time at
    // twice the profile's rate, within 3 %.
    let within = |what: &str, n: f64, rate: f64| {
        let want = 2.0 * rate * secs;
        assert!(
            (n - want).abs() <= want * 0.03,
            "{what}: {n}, expected {want} (2 x {rate}/s for {secs} s) within 3 %"
        );
    };
    let inserted = server.count(&db, "cities", doc! {});
    assert_eq!(inserted, row(&summary, "ins")["samples"].as_u64().unwrap());
    within("documents the server holds", inserted as f64, ins_rate);
    let queries = counter(&after, "query") - counter(&before, "query");
    let finds = row(&summary, "look")["samples"].as_u64().unwrap();
    assert!(queries >= finds as i64, "{queries} queries, {finds} finds");
    within("queries the server served", queries as f64, look_rate);
    assert_eq!(row(&summary, "look")["missed"], 0);

    // The closed-loop group: its one user, no rate.
    let run_json = read_json(&out.join("run.json"));
    let plan = &run_json["plan"];
    assert_eq!(plan["scale"]["factor"], 2.0, "{plan}");
    assert_eq!(plan["scale"]["unscaled"], serde_json::json!(["pinger"]));
    let group = |name: &str| {
        plan["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("no group {name} in {plan}"))
            .clone()
    };
    assert_eq!(group("ins")["rate"], 2.0 * ins_rate);
    assert_eq!(group("look")["rate"], 2.0 * look_rate);
    assert_eq!(group("pinger")["rate"], serde_json::Value::Null);
    assert_eq!(group("pinger")["threads"], 1);
    assert_eq!(row(&summary, "pinger")["samples"], 50);
}

#[test]
fn a_one_second_freeze_shows_in_the_intended_start_latency_but_not_in_the_service_time() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let pid = server
        .pid()
        .expect("the freeze test needs a server it started itself") as i32;
    let dir = tempfile::tempdir().unwrap();
    let path = profile(
        dir.path(),
        &unique_db("freeze"),
        "drop = true",
        &insert_group(200, 20, "6s"),
    );
    let out = dir.path().join("run");
    let child = spawn_run(&path, &server.uri, &out);
    std::thread::sleep(Duration::from_millis(2500));
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(1));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = read_json(&out.join("summary.json"));
    let r = row(&summary, "ins");
    let f = |k: &str| r[k].as_f64().unwrap();

    // Still rate x duration: the operations due during the freeze queued, none were skipped.
    let samples = r["samples"].as_u64().unwrap();
    assert!(
        (1176..=1224).contains(&samples),
        "{samples}, expected 1200 within 2 %"
    );
    assert_eq!(r["missed"], 0);
    // The operation due first in the freeze waited for all of it.
    assert!(f("max_ms") >= 950.0, "max {} ms", f("max_ms"));
    // About 200 of 1200 operations were due during the freeze: the 95 % and 99 % lines show it.
    assert!(f("p99_ms") >= 500.0, "p99 {} ms", f("p99_ms"));
    assert!(f("p95_ms") >= 100.0, "p95 {} ms", f("p95_ms"));
    assert!(r["late"].as_u64().unwrap() >= 100, "{r}");
    assert!(f("max_behind_ms") >= 500.0, "{r}");
    // The service time alone understates it: only the ~20 operations in flight saw the freeze.
    assert!(f("service_average_ms") * 3.0 < f("average_ms"), "{r}");
    assert!(f("service_p90_ms") * 10.0 < f("p95_ms"), "{r}");
}
