//! Mixes and key distributions against a real server, with the server as the witness: a 50/50
//! mix of gets and updates counted by serverStatus opcounters, a 95/5 mix's shares over 20,000
//! operations, and a hotspot's 80 % of updates on 20 % of the documents counted on the
//! documents themselves (each update increments their `updates` field).

use crate::common;

use common::*;
use mongodb::bson::{doc, Document};

/// The summary row of `label` in the first run.
fn samples(summary: &serde_json::Value, label: &str) -> u64 {
    row(summary, label)["samples"].as_u64().unwrap()
}

#[test]
fn a_mix_of_gets_and_updates_is_counted_per_kind_exactly_as_the_server_counts_it() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("mix");
    let path = profile(
        dir.path(),
        &db,
        "drop = true\npreload = 500",
        "[[group]]\nname = \"ab\"\nmix = { get = 50, update = 50 }\nset = [\"pop\"]\nthreads = 4\nloops = 500\n",
    );
    let before = server.opcounters();
    let (summary, _, _) = server.run_ok(
        path.to_str().unwrap(),
        &dir.path().join("r"),
        &["--no-resources"],
    );
    let after = server.opcounters();
    let delta = |k: &str| (counter(&after, k) - counter(&before, k)) as u64;
    let (gets, updates) = (samples(&summary, "ab:get"), samples(&summary, "ab:update"));
    assert_eq!(gets + updates, 2000, "four users of 500 operations");
    assert_eq!(samples(&summary, "ab"), 2000, "the group's total row");
    assert!(
        gets > 800 && updates > 800,
        "50/50: {gets} gets, {updates} updates"
    );
    // The setup's own two queries: the check for foreign documents before the drop, and the
    // last `_id`.
    assert_eq!(
        delta("query"),
        gets + 2,
        "opcounters.query = gets + setup's 2"
    );
    assert_eq!(delta("update"), updates, "opcounters.update = updates");
    // Every get found its document (the preload), and the sample log names each kind.
    assert_eq!(row(&summary, "ab:get")["matched"], gets);
    let log = std::fs::read_to_string(dir.path().join("r/samples.tsv")).unwrap();
    let logged_gets = log.lines().filter(|l| l.ends_with("\tget")).count() as u64;
    assert_eq!(logged_gets, gets, "the op column of samples.tsv");
    validate_schema(&summary);
}

#[test]
fn a_95_5_mix_draws_95_percent_gets_over_20000_operations() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("mix95");
    let path = profile(
        dir.path(),
        &db,
        "drop = true\npreload = 1000",
        "[[group]]\nname = \"b\"\nmix = { get = 95, update = 5 }\nset = [\"pop\"]\nthreads = 20\nloops = 1000\n",
    );
    let (summary, _, _) = server.run_ok(
        path.to_str().unwrap(),
        &dir.path().join("r"),
        &["--no-resources"],
    );
    let gets = samples(&summary, "b:get") as f64;
    let total = samples(&summary, "b") as f64;
    assert_eq!(total, 20_000.0);
    let share = gets / total;
    assert!(
        (share - 0.95).abs() <= 0.01,
        "gets are {:.2} % of the mix",
        share * 100.0
    );
}

#[test]
fn hotspot_keys_put_80_percent_of_the_updates_on_20_percent_of_the_documents() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("hotspot");
    let path = profile(
        dir.path(),
        &db,
        "drop = true\npreload = 1000",
        "[[group]]\nname = \"hot\"\nop = \"update\"\ninc = [\"updates\"]\nkeys = \"hotspot\"\nthreads = 10\nloops = 2000\n",
    );
    let (summary, _, _) = server.run_ok(
        path.to_str().unwrap(),
        &dir.path().join("r"),
        &["--no-resources"],
    );
    assert_eq!(samples(&summary, "hot"), 20_000);
    // The witness: each document's own count of the updates it received.
    let client = server.client();
    let docs: Vec<Document> = runtime().block_on(async {
        let coll = client.database(&db).collection::<Document>("cities");
        let mut cursor = coll.find(doc! {}).await.unwrap();
        let mut docs = Vec::new();
        while cursor.advance().await.unwrap() {
            docs.push(cursor.deserialize_current().unwrap());
        }
        docs
    });
    assert_eq!(docs.len(), 1000);
    let count = |d: &Document| d.get_i32("updates").map(i64::from).unwrap_or(0);
    let total: i64 = docs.iter().map(count).sum();
    let hot: i64 = docs
        .iter()
        .filter(|d| d.get_i64("_id").map(|id| id < 200).unwrap_or(false))
        .map(count)
        .sum();
    assert_eq!(total, 20_000, "every update incremented one document");
    let share = hot as f64 / total as f64;
    assert!(
        (share - 0.8).abs() <= 0.02,
        "{:.1} % of the updates went to the first 20 % of the documents",
        share * 100.0
    );
}

#[test]
fn the_bundled_ycsb_workloads_run_on_the_embedded_server() {
    let _turn = common::shared();
    // As the README's first command runs a profile: no --uri, the embedded server.
    if skip_live() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (w, kinds) in [
        ("a", &["get", "update"][..]),
        ("b", &["get", "update"][..]),
        ("c", &[][..]),
        ("d", &["get", "insert"][..]),
        ("e", &["scan", "insert"][..]),
        ("f", &["get", "rmw"][..]),
    ] {
        let out = dir.path().join(w);
        let run = bin()
            .args([
                "run",
                &format!("ycsb-{w}"),
                "--recordcount",
                "2000",
                "--duration",
                "2s",
            ])
            .args(["--threads", "8", "--quiet", "--no-resources", "--out"])
            .arg(&out)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        assert_eq!(
            run.status.code(),
            Some(0),
            "ycsb-{w}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let summary = read_json(&out.join("summary.json"));
        validate_schema(&summary);
        validate_against(&read_json(&out.join("run.json")), "docs/run.schema.json");
        assert_eq!(
            summary["runs"][0]["load"]["documents"], 2000,
            "ycsb-{w}'s load phase"
        );
        let total = samples(&summary, "run");
        assert!(total > 100, "ycsb-{w}: {total} operations");
        let mut sum = 0;
        for k in kinds {
            let r = row(&summary, &format!("run:{k}"));
            sum += r["samples"].as_u64().unwrap();
            // Every read finds its document: only acknowledged inserts are drawn.
            if ["get", "scan", "rmw"].contains(k) {
                assert_eq!(r["matched"], r["samples"], "ycsb-{w} {k}: {r}");
            }
        }
        if !kinds.is_empty() {
            assert_eq!(sum, total, "ycsb-{w}: the kinds add up to the group");
        }
    }
}

/// Every bundled profile but the YCSB ones (above) runs briefly, and the run.json and
/// summary.json it writes validate against their schemas in docs/. `kill-under-load` kills the
/// embedded server, so it runs on one of its own, long enough for its fault (exit 5 when the
/// audit finds acknowledged writes the killed server lost, as secantusd-rs may).
#[test]
fn every_bundled_profile_writes_files_that_validate_against_their_schemas() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<&str> = mongo_stress::plan::profile::bundled::ALL
        .iter()
        .map(|b| b.name)
        .filter(|n| !n.starts_with("ycsb-"))
        .collect();
    assert!(names.len() >= 11, "{names:?}");
    for name in names {
        let out = dir.path().join(name);
        let mut cmd = bin();
        cmd.args([
            "run",
            name,
            "--threads",
            "2",
            "--quiet",
            "--no-resources",
            "--out",
        ])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(180));
        let allowed: &[i32] = if name == "kill-under-load" {
            cmd.args(["--duration", "8s"]);
            &[0, 5]
        } else {
            cmd.args(["--duration", "2s", "--uri", &server.uri]);
            &[0]
        };
        let run = cmd.output().unwrap();
        assert!(
            run.status.code().is_some_and(|c| allowed.contains(&c)),
            "{name}: exit {:?}: {}",
            run.status.code(),
            String::from_utf8_lossy(&run.stderr)
        );
        for (file, schema) in [
            ("summary.json", "docs/summary.schema.json"),
            ("run.json", "docs/run.schema.json"),
        ] {
            let value = read_json(&out.join(file));
            let check = std::panic::catch_unwind(|| validate_against(&value, schema));
            assert!(check.is_ok(), "{name}'s {file}");
        }
    }
}
