//! The members of a replica set, each sampled on its own: a scripted three-member set on
//! loopback (`common::replset`: hello, serverStatus and replSetGetStatus from a script the test
//! changes mid-run, every data command passed on to the real server), a scripted cluster of two
//! such sets behind a scripted mongos (`listShards`, `config.changelog`), and the real
//! one-member set of secantusd-rs. The witnesses are the script's own counters, optimes, the
//! times it changed and the migration it logged, and for the real server its opcounters.

use crate::common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::replset::{ScriptedRouter, ScriptedSet};
use common::*;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// members.tsv's rows: (time_ms, member, cells by column name).
fn members_tsv(
    dir: &std::path::Path,
) -> Vec<(u64, String, std::collections::BTreeMap<String, String>)> {
    let text = std::fs::read_to_string(dir.join("members.tsv")).expect("members.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            let cells: std::collections::BTreeMap<String, String> = header
                .iter()
                .zip(l.split('\t'))
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect();
            (
                cells["time_ms"].parse().unwrap(),
                cells["member"].clone(),
                cells,
            )
        })
        .collect()
}

fn num(cells: &std::collections::BTreeMap<String, String>, k: &str) -> Option<f64> {
    cells[k].parse().ok()
}

/// One insert group at 20/s for `secs` against `uri` (a database of its own), started in the
/// background with `extra` options, output piped; its output directory and the child.
fn start_inserts(
    dir: &std::path::Path,
    db: &str,
    secs: u32,
    uri: &str,
    extra: &[&str],
) -> (std::path::PathBuf, std::process::Child) {
    let groups = format!(
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 2\nrate = 20\nduration = \"{secs}s\"\n"
    );
    let path = profile(dir, &unique_db(db), "drop = true", &groups);
    let out = dir.join("run");
    // Quiet, unless the live lines are asked for.
    let quiet = if extra.contains(&"--interval") {
        None
    } else {
        Some("--quiet")
    };
    let child = std::process::Command::new(bin_path())
        .args(["run", path.to_str().unwrap(), "--uri", uri])
        .args(quiet)
        .args(extra)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (out, child)
}

/// Sleeps until `at` after `t0`.
fn until(t0: Instant, at: Duration) {
    if let Some(left) = at.checked_sub(t0.elapsed()) {
        std::thread::sleep(left);
    }
}

#[test]
fn a_scripted_three_member_set_is_sampled_member_by_member_its_lag_primary_change_and_removal_seen()
{
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let set = ScriptedSet::start(3, "rs0", proxy::port_of(&server.uri));
    // The script's counters: the primary takes 40 inserts/s and 5 commands/s, the secondaries
    // apply them (opcountersRepl) and serve 10 and 20 queries/s.
    set.change(|s| {
        s.members[0].ops_per_s = [40.0, 0.0, 0.0, 0.0, 0.0, 5.0];
        s.members[1].ops_per_s = [0.0, 10.0, 0.0, 0.0, 0.0, 0.0];
        s.members[1].repl_per_s = [40.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        s.members[2].ops_per_s = [0.0, 20.0, 0.0, 0.0, 0.0, 0.0];
        s.members[2].repl_per_s = [40.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    });
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let (out, child) = start_inserts(
        dir.path(),
        "members",
        14,
        &set.uri(),
        &["--threshold", "TOTAL.lag_max < 1s", "--interval", "1s"],
    );
    // Member 2 falls 3 s behind; member 1 becomes primary; member 2 leaves the set.
    until(t0, Duration::from_secs(5));
    let lagged_ms = set.change(|s| {
        s.members[2].lag_s = 3.0;
        now_ms()
    });
    until(t0, Duration::from_secs(9));
    let elected_ms = set.change(|s| {
        s.primary = Some(1);
        now_ms()
    });
    until(t0, Duration::from_secs(13));
    let removed_ms = set.change(|s| {
        s.members[2].present = false;
        now_ms()
    });
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(4),
        "the lag threshold fails: {stderr}"
    );

    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    let run = &summary["runs"][0];
    let lag = run["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == "lag_max")
        .unwrap();
    assert_eq!(lag["pass"], false);
    let lag_ms = lag["value"].as_f64().unwrap();
    assert!(
        (2000.0..=4000.0).contains(&lag_ms),
        "peak lag {lag_ms} ms, scripted 3 s"
    );
    // Every member found, and sampled on its own connection each second.
    let rows = members_tsv(&out);
    for (i, host) in set.hosts.iter().enumerate() {
        let mine: Vec<_> = rows.iter().filter(|r| &r.1 == host).collect();
        assert!(mine.len() >= 10, "{host}: {} rows", mine.len());
        let (status, _) = set.answered(i);
        assert!(
            status as usize >= mine.len(),
            "{host}: {status} serverStatus answered"
        );
    }
    let host = |i: usize| set.hosts[i].as_str();
    // Rates equal the script's (rows after the first of each member, before any change).
    let rate_rows = |i: usize, col: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r.1 == host(i) && r.0 < elected_ms - 1500)
            .filter_map(|r| num(&r.2, col))
            .collect()
    };
    for (i, col, want) in [
        (0, "insert_s", 40.0),
        (0, "command_s", 5.0),
        (1, "query_s", 10.0),
        (1, "repl_ops_s", 40.0),
        (2, "query_s", 20.0),
        (2, "repl_ops_s", 40.0),
    ] {
        let v = rate_rows(i, col);
        assert!(v.len() >= 5, "{} {col}: {v:?}", host(i));
        let avg = v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            (avg - want).abs() <= want * 0.1 + 1.0,
            "{} {col}: {avg} a second, scripted {want}: {v:?}",
            host(i)
        );
    }
    // The states, from the primary's replSetGetStatus.
    let first = rows.iter().find(|r| r.1 == host(0)).unwrap();
    assert_eq!(first.2["state"], "PRIMARY");
    // Lag: 3 s (within 1 s) from a second after the script's change, while member 2 is in;
    // none before it.
    assert!(rows
        .iter()
        .filter(|r| r.1 == host(2) && r.0 + 500 < lagged_ms)
        .all(|r| num(&r.2, "lag_s").is_some_and(|l| l < 1.0)));
    let lagging: Vec<f64> = rows
        .iter()
        .filter(|r| r.1 == host(2) && r.0 + 1500 < removed_ms && r.0 > lagged_ms + 1500)
        .map(|r| num(&r.2, "lag_s").unwrap_or_else(|| panic!("no lag read: {r:?}")))
        .collect();
    assert!(lagging.len() >= 4, "{lagging:?}");
    for l in &lagging {
        assert!((l - 3.0).abs() <= 1.0, "lag {l}, scripted 3 s: {lagging:?}");
    }
    let caught_up: Vec<f64> = rows
        .iter()
        .filter(|r| r.1 == host(1))
        .filter_map(|r| num(&r.2, "lag_s"))
        .collect();
    assert!(caught_up.len() >= 8, "{caught_up:?}");
    assert!(
        caught_up.iter().all(|l| *l <= 1.0),
        "member 1 was never behind: {caught_up:?}"
    );
    // The primary change, at the scripted time within 1 s, with the right members.
    let events = run["topology"].as_array().expect("topology events");
    let change = events
        .iter()
        .find(|e| e["kind"] == "primary_change" && e["to"] == host(1))
        .unwrap_or_else(|| panic!("no primary change to member 1: {events:#?}"));
    assert_eq!(change["from"], host(0));
    let at = change["time_ms"].as_u64().unwrap();
    assert!(
        at.abs_diff(elected_ms) <= 1000,
        "primary change at {at}, scripted at {elected_ms}"
    );
    assert!(events
        .iter()
        .any(|e| e["kind"] == "state_change" && e["member"] == host(0) && e["to"] == "SECONDARY"));
    // The member that left: an event, and no row of it after.
    let left = events
        .iter()
        .find(|e| e["kind"] == "member_removed")
        .unwrap_or_else(|| panic!("no member removed: {events:#?}"));
    assert_eq!(left["member"], host(2));
    let left_at = left["time_ms"].as_u64().unwrap();
    assert!(
        left_at >= removed_ms && left_at <= removed_ms + 2500,
        "removed at {removed_ms}, seen at {left_at}"
    );
    assert!(
        !rows.iter().any(|r| r.1 == host(2) && r.0 > left_at),
        "member 2 sampled after it left"
    );
    // The live lines said each as it was seen, in the order the summary has them.
    let said: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("members: "))
        .collect();
    let details: Vec<&str> = [change, left]
        .iter()
        .map(|e| e["detail"].as_str().unwrap())
        .collect();
    let at = |d: &str| {
        said.iter()
            .position(|s| *s == d)
            .unwrap_or_else(|| panic!("`{d}` not said live: {stderr}"))
    };
    assert!(at(details[0]) < at(details[1]), "{said:?}");
    // The per-member summary and the console's table.
    let members = run["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{members:#?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Members, each sampled"), "{stdout}");
    assert!(stdout.contains("topology: +"), "{stdout}");
    // The workload ran through it all.
    assert!(row(&summary, "ins")["samples"].as_u64().unwrap() > 100);

    // report.html in a browser: a line per member, the secondaries' lag, the events marked.
    let Some(browser) = crate::browser_report::browser() else {
        return;
    };
    let dom = crate::browser_report::drawn(
        &browser,
        &dir.path().join("browser-profile"),
        &out.join("report.html"),
    );
    let per_member = rows.len() - 3;
    assert!(
        crate::browser_report::points(&dom, "members:ops") >= per_member,
        "every member's seconds drawn"
    );
    assert!(crate::browser_report::points(&dom, "members:lag") >= 10);
    let marked = |chart: &str| -> usize {
        let at = dom.find(&format!("data-chart=\"{chart}\"")).unwrap();
        let tag = &dom[at..at + dom[at..].find('>').unwrap()];
        tag.split("data-topology=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert!(
        marked("throughput") >= 3,
        "the primary change, a state change, the removal"
    );
    let table = crate::browser_report::table_as_tsv(&dom, "members-table");
    assert_eq!(
        table.lines().count(),
        4,
        "a header and three members: {table}"
    );
}

#[test]
fn a_member_that_refuses_repl_set_get_status_gets_one_warning_with_the_role_and_the_run_completes()
{
    let Some(server) = TestServer::start() else {
        return;
    };
    let set = ScriptedSet::start(3, "rs0", proxy::port_of(&server.uri));
    set.change(|s| {
        for m in &mut s.members {
            m.refuse_status = true;
            m.ops_per_s = [0.0, 15.0, 0.0, 0.0, 0.0, 0.0];
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let groups =
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 2\nrate = 20\nduration = \"5s\"\n";
    let path = profile(dir.path(), &unique_db("unauth"), "drop = true", groups);
    let out = dir.path().join("run");
    let output = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &set.uri(),
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .timeout(Duration::from_secs(120))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("replSetGetStatus"))
        .collect();
    assert_eq!(warnings.len(), 1, "said once: {stderr}");
    assert!(
        warnings[0].contains("clusterMonitor") && warnings[0].contains(set.hosts[0].as_str()),
        "{}",
        warnings[0]
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["member_warnings"].as_array().unwrap().len(), 1);
    // Its other numbers: every member's operations, no lag.
    let rows = members_tsv(&out);
    for host in &set.hosts {
        let q: Vec<f64> = rows
            .iter()
            .filter(|r| &r.1 == host)
            .filter_map(|r| num(&r.2, "query_s"))
            .collect();
        assert!(q.len() >= 3, "{host}: {q:?}");
        assert!(q.iter().all(|v| (v - 15.0).abs() <= 2.5), "{host}: {q:?}");
    }
    assert!(
        rows.iter().all(|r| r.2["lag_s"] == "-"),
        "no lag without the role"
    );
    assert_eq!(row(&summary, "ins")["errors"], 0);
}

#[test]
fn the_real_one_member_set_has_its_member_row_a_line_a_second_and_a_step_down_with_its_window() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let groups =
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nrate = 200\nduration = \"8s\"\n";
    let path = profile(dir.path(), &unique_db("one_member"), "drop = true", groups);
    let out = dir.path().join("run");
    let before = server.opcounters();
    let output = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
        ])
        .args(["--fault", "stepdown@3s+2s", "--out"])
        .arg(&out)
        .timeout(Duration::from_secs(120))
        .assert()
        .get_output()
        .clone();
    let after = server.opcounters();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "done (writes refused in the step-down may fail): {stderr}"
    );
    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    let run = &summary["runs"][0];
    let members = run["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "{members:#?}");
    let me = members[0]["member"].as_str().unwrap().to_string();
    assert_eq!(members[0]["state"], "PRIMARY");
    assert_eq!(members[0]["lag_s"]["peak"], 0.0);
    // One line a second (the sampler's, and one at its stop).
    let rows = members_tsv(&out);
    // The member's summary counts every second of the run, the one taken at the stop too.
    let stage = &run["stages"][0];
    let (began, end) = (
        stage["began_ms"].as_u64().unwrap(),
        stage["end_ms"].as_u64().unwrap(),
    );
    let inside = rows
        .iter()
        .filter(|r| r.0 > began && r.0 <= end + 500)
        .count();
    assert_eq!(
        members[0]["seconds"].as_u64(),
        Some(inside as u64),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r.1 == me));
    let secs = run["wall_secs"].as_f64().unwrap();
    assert!(
        rows.len() as f64 >= secs - 1.0 && rows.len() as f64 <= secs + 4.0,
        "{} rows in a {secs} s run",
        rows.len()
    );
    for w in rows.windows(2).take(rows.len().saturating_sub(2)) {
        let gap = w[1].0 - w[0].0;
        assert!((900..=1200).contains(&gap), "rows {gap} ms apart");
    }
    // The member's inserts a second add up to the server's own opcounters over the run.
    let sampled: f64 = rows
        .iter()
        .filter_map(|r| Some(num(&r.2, "insert_s")? * num(&r.2, "interval_ms")? / 1000.0))
        .sum();
    let counted = (counter(&after, "insert") - counter(&before, "insert")) as f64;
    assert!(
        (sampled - counted).abs() <= counted * 0.05 + 20.0,
        "members.tsv says {sampled} inserts, the server counted {counted}"
    );
    // The step-down: the member's state and the primary, each way, with the window.
    let events = run["topology"].as_array().expect("topology");
    let down = events
        .iter()
        .find(|e| e["kind"] == "primary_change" && e["to"].is_null())
        .unwrap_or_else(|| panic!("no primary lost: {events:#?}"));
    let back = events
        .iter()
        .find(|e| e["kind"] == "primary_change" && e["to"] == me.as_str())
        .unwrap_or_else(|| panic!("no primary back: {events:#?}"));
    let (d, b) = (
        down["offset_secs"].as_f64().unwrap(),
        back["offset_secs"].as_f64().unwrap(),
    );
    assert!(
        (2.5..=4.5).contains(&d),
        "primary lost at +{d}s, stepped down at +3s"
    );
    assert!(
        (b - d - 2.0).abs() <= 1.2,
        "primary back {b}s, lost {d}s: a 2 s step-down"
    );
    let election = back["election_secs"].as_f64().expect("election time");
    assert!((1.5..=3.5).contains(&election), "{election}");
    assert!(
        down["unavailable"]["secs"].as_f64().unwrap() > 1.0,
        "{down}"
    );
}

#[test]
fn a_scripted_cluster_of_two_shards_has_every_member_under_its_shard_and_a_migration_on_the_timeline(
) {
    let Some(server) = TestServer::start() else {
        return;
    };
    let upstream = proxy::port_of(&server.uri);
    // Two shards, each a scripted set of three under a set name that is not the shard's (the
    // shard's name comes from listShards' `_id`). Each primary takes inserts its secondaries
    // apply; every member serves queries at a rate of its own (4, 8, ... 24 a second), so each
    // member's row is seen to be its own.
    let sets = [
        ("shA", ScriptedSet::start(3, "rsA", upstream)),
        ("shB", ScriptedSet::start(3, "rsB", upstream)),
    ];
    let query_rate = |s: usize, i: usize| 4.0 * (3 * s + i + 1) as f64;
    for (s, (_, set)) in sets.iter().enumerate() {
        set.change(|st| {
            for (i, m) in st.members.iter_mut().enumerate() {
                m.ops_per_s = [0.0, query_rate(s, i), 0.0, 0.0, 0.0, 0.0];
                m.repl_per_s = [30.0, 0.0, 0.0, 0.0, 0.0, 0.0];
            }
            st.members[0].ops_per_s[0] = 30.0;
            st.members[0].repl_per_s = [0.0; 6];
        });
    }
    let router = ScriptedRouter::start(
        sets.iter()
            .map(|(name, set)| (name.to_string(), set))
            .collect(),
        upstream,
    );
    let dir = tempfile::tempdir().unwrap();
    let groups =
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 2\nrate = 20\nduration = \"6s\"\n";
    let path = profile(dir.path(), &unique_db("cluster"), "drop = true", groups);
    let out = dir.path().join("run");
    let args: Vec<String> = vec![
        "run".into(),
        path.to_str().unwrap().into(),
        "--uri".into(),
        router.uri(),
        "--quiet".into(),
        "--out".into(),
        out.to_str().unwrap().into(),
    ];
    let run = std::thread::spawn(move || {
        bin()
            .args(&args)
            .timeout(Duration::from_secs(120))
            .output()
            .expect("the tool ran")
    });
    // The migration 2 s after the first insert came through the router (the stage's start,
    // about a second after the tool's): inside the stage, after the sampler found the members.
    let deadline = Instant::now() + Duration::from_secs(60);
    while router.relayed("insert") == 0 && !run.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(2));
    let migrated_ms = router.add_migration("db.orders", "shA", "shB");
    let output = run.join().expect("the tool's thread");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        router.relayed("insert") > 0,
        "the workload went through the router: {stderr}"
    );
    assert!(
        router.status_answered() > 0,
        "the deployment's serverStatus is the router's"
    );

    // members.tsv: all six, each under its shard, in its state, with its own rates.
    let rows = members_tsv(&out);
    let named: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(named.len(), 6, "{named:?}");
    for (s, (shard, set)) in sets.iter().enumerate() {
        for (i, host) in set.hosts.iter().enumerate() {
            let mine: Vec<_> = rows.iter().filter(|r| &r.1 == host).collect();
            assert!(mine.len() >= 4, "{shard}/{host}: {} rows", mine.len());
            assert!(
                mine.iter().all(|r| r.2["shard"] == *shard),
                "{host} is in {shard}: {mine:?}"
            );
            let state = if i == 0 { "PRIMARY" } else { "SECONDARY" };
            let known: Vec<&str> = mine
                .iter()
                .map(|r| r.2["state"].as_str())
                .filter(|v| *v != "-")
                .collect();
            assert!(
                known.len() >= 3 && known.iter().all(|v| *v == state),
                "{shard}/{host} is {state}: {known:?}"
            );
            // Over the time the rows cover (a short last row's rate is coarse).
            let q: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|r| Some((num(&r.2, "query_s")?, num(&r.2, "interval_ms")?)))
                .collect();
            assert!(q.len() >= 3, "{shard}/{host}: {q:?}");
            let secs = q.iter().map(|(_, ms)| ms).sum::<f64>() / 1000.0;
            let avg = q.iter().map(|(v, ms)| v * ms / 1000.0).sum::<f64>() / secs;
            let want = query_rate(s, i);
            assert!(
                (avg - want).abs() <= want * 0.1 + 1.0,
                "{shard}/{host} query_s {avg} a second, scripted {want}: {q:?}"
            );
        }
    }

    // The summary: six members with their shards; the migration where and when it was logged.
    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    let run0 = &summary["runs"][0];
    let members = run0["members"].as_array().unwrap();
    assert_eq!(members.len(), 6, "{members:#?}");
    for (shard, set) in &sets {
        for host in &set.hosts {
            let m = members
                .iter()
                .find(|m| m["member"] == host.as_str())
                .unwrap_or_else(|| panic!("no summary of {host}: {members:#?}"));
            assert_eq!(m["shard"], *shard, "{m}");
        }
    }
    let events = run0["topology"].as_array().expect("topology events");
    let migrations: Vec<_> = events.iter().filter(|e| e["kind"] == "migration").collect();
    assert_eq!(migrations.len(), 1, "seen once: {events:#?}");
    let migration = migrations[0];
    assert_eq!(migration["from"], "shA");
    assert_eq!(migration["to"], "shB");
    assert!(
        migration["detail"].as_str().unwrap().contains("db.orders"),
        "{migration}"
    );
    let at = migration["time_ms"].as_u64().unwrap();
    assert!(
        at.abs_diff(migrated_ms) <= 1,
        "migration at {at}, the changelog says {migrated_ms}"
    );
    let offset = migration["offset_secs"].as_f64().unwrap();
    assert!((1.0..=6.0).contains(&offset), "migration at +{offset}s");

    // The console: members named shard/host, the migration on the timeline.
    assert!(stdout.contains("Members, each sampled"), "{stdout}");
    for (shard, set) in &sets {
        for host in &set.hosts {
            assert!(stdout.contains(&format!("{shard}/{host}")), "{stdout}");
        }
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("topology: +") && l.contains("db.orders")),
        "{stdout}"
    );
    // The workload ran through it all.
    assert_eq!(row(&summary, "ins")["errors"], 0);
    assert!(row(&summary, "ins")["samples"].as_u64().unwrap() > 50);
}

#[test]
fn no_members_turns_the_member_sampler_off() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(
        "insert",
        &out,
        &["--duration", "2s", "--threads", "2", "--no-members"],
    );
    assert!(!out.join("members.tsv").exists());
    assert!(summary["runs"][0].get("members").is_none());
    assert!(
        out.join("resources.tsv").exists(),
        "the rest of the sampler runs"
    );
    // The same server without it: its member is sampled.
    let with = dir.path().join("with");
    let (summary, _, _) = server.run_ok("insert", &with, &["--duration", "2s", "--threads", "2"]);
    if std::env::var("MONGO_STRESS_TEST_URI").is_err() {
        assert!(with.join("members.tsv").exists());
        assert_eq!(summary["runs"][0]["members"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn a_primary_that_goes_down_is_lost_then_replaced_and_the_new_primary_names_the_old_one() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let set = ScriptedSet::start(3, "rs0", proxy::port_of(&server.uri));
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let (out, child) = start_inserts(dir.path(), "down", 10, &set.uri(), &[]);
    // Member 0 goes down with no primary after it; 3 s later member 1 is elected.
    until(t0, Duration::from_secs(4));
    let down_ms = set.change(|s| {
        s.members[0].down = true;
        s.primary = None;
        now_ms()
    });
    until(t0, Duration::from_secs(7));
    let elected_ms = set.change(|s| {
        s.primary = Some(1);
        now_ms()
    });
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(matches!(output.status.code(), Some(0 | 1)), "{stderr}");
    let summary = read_json(&out.join("summary.json"));
    let events = summary["runs"][0]["topology"]
        .as_array()
        .expect("events")
        .clone();
    let changes: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "primary_change")
        .collect();
    assert_eq!(changes.len(), 2, "{events:#?}");
    let (host0, host1) = (set.hosts[0].as_str(), set.hosts[1].as_str());
    assert_eq!(
        (changes[0]["from"].as_str(), changes[0]["to"].as_str()),
        (Some(host0), None)
    );
    let lost = changes[0]["time_ms"].as_u64().unwrap();
    assert!(
        lost >= down_ms && lost <= down_ms + 2000,
        "lost at {lost}, down at {down_ms}"
    );
    // The new primary's event is from the one lost.
    assert_eq!(
        (changes[1]["from"].as_str(), changes[1]["to"].as_str()),
        (Some(host0), Some(host1))
    );
    let at = changes[1]["time_ms"].as_u64().unwrap();
    assert!(
        at.abs_diff(elected_ms) <= 1000,
        "elected at {elected_ms}, event at {at}"
    );
    assert!(changes[1]["detail"].as_str().unwrap().contains("none for"));
    // The member that went down: one warning, and `-` in its cells from then on.
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(host0) && l.contains("does not answer"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    let rows = members_tsv(&out);
    let gone: Vec<_> = rows
        .iter()
        .filter(|r| r.1 == host0 && r.0 > down_ms + 1500)
        .collect();
    assert!(
        !gone.is_empty() && gone.iter().all(|r| r.2["insert_s"] == "-"),
        "{gone:?}"
    );
}
