//! One run in three parts, as a Kubernetes Indexed Job runs it: three local processes with
//! `JOB_COMPLETION_INDEX=0..2`, `--parts 3` and one `--start-at`, against one real server, then
//! `merge`. Witnesses: the documents in the collection, the three parts' own summaries, and the
//! union of their `samples.tsv` files. Also what `merge` refuses.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use common::*;
use mongodb::bson::doc;

const PRELOAD: u64 = 100;
// 7 and 4 users do not divide by 3: the shares are 3/2/2 and 2/1/1, the rates shared alike.
const GROUPS: &str = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 7\nrate = 300\nduration = \"4s\"\n\n[[group]]\nname = \"update\"\nop = \"update\"\nset = [\"pop\"]\nthreads = 4\nrate = 60\nduration = \"4s\"\n";

/// Part `i` of 3 as the Indexed Job's pod runs it (the same arguments and environment).
fn spawn_part(profile: &Path, uri: &str, i: u32, start_at: &str, out: &Path) -> Child {
    Command::new(bin_path())
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            uri,
            "--parts",
            "3",
        ])
        .args(["--start-at", start_at, "--seed", "7", "--quiet"])
        // One threshold each part judges, one only the whole run can (a throughput).
        .args([
            "--threshold",
            "insert.p99<10s",
            "--threshold",
            "insert.throughput>250",
        ])
        .arg("--out")
        .arg(out)
        .env("JOB_COMPLETION_INDEX", i.to_string())
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a part")
}

fn wait_ok(child: Child, what: &str) {
    let out = child.wait_with_output().expect("wait for a part");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `samples.tsv` lines of `group` in the measured phase: (start_us, latency_us).
fn samples(dir: &Path, group: &str) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(dir.join("samples.tsv")).expect("samples.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (start, group_col, latency, phase) = (
        col("start_us"),
        col("group"),
        col("latency_us"),
        col("phase"),
    );
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|c| c[group_col] == group && c[phase] == "measure")
        .map(|c| (c[start].parse().unwrap(), c[latency].parse().unwrap()))
        .collect()
}

fn merge(dirs: &[&Path], out: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let o = bin()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .args(extra)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("merge");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn three_parts_with_one_start_merge_into_the_exact_run() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("parts");
    let profile = common::profile(
        tmp.path(),
        &db,
        &format!("drop = true\npreload = {PRELOAD}"),
        GROUPS,
    );
    // A start a few seconds ahead: time for three processes to start and part 0 to set up.
    let start_at =
        humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(5)).to_string();
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| tmp.path().join(format!("part-{i}")))
        .collect();
    let children: Vec<Child> = (0..3)
        .map(|i| spawn_part(&profile, &server.uri, i, &start_at, &dirs[i as usize]))
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        wait_ok(c, &format!("part {i}"));
    }
    let merged = tmp.path().join("merged");
    let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (code, stdout, stderr) = merge(&refs, &merged, &[]);
    assert_eq!(code, Some(0), "merge failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Parts (3 merged"), "{stdout}");

    let summary = read_json(&merged.join("summary.json"));
    let parts: Vec<serde_json::Value> = dirs
        .iter()
        .map(|d| read_json(&d.join("summary.json")))
        .collect();
    validate_schema(&summary);
    validate_schema(&read_json(&dirs[1].join("summary.json")));
    let insert = row(&summary, "insert");
    let merged_inserts = insert["samples"].as_u64().unwrap();

    // Witness 1: the documents on the server (and nothing else: the marker is elsewhere).
    let on_server = server.count(&db, "cities", doc! { "_id": { "$type": "number" } });
    assert_eq!(
        on_server,
        PRELOAD + merged_inserts,
        "documents vs merged inserts"
    );
    assert_eq!(
        server.count(&db, "cities", doc! {}),
        on_server,
        "only documents remain"
    );
    // Witness 2: the parts' own summaries.
    let sum: u64 = parts
        .iter()
        .map(|p| row(p, "insert")["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, merged_inserts);
    // Every update found its document: parts draw only _ids that exist (the shared preload and
    // their own inserts), whatever pace the other parts insert at.
    let update = row(&summary, "update");
    assert!(update["samples"].as_u64().unwrap() > 100, "{update}");
    assert_eq!(update["matched"], update["samples"], "{update}");
    // merge judged both thresholds on the whole run.
    let t = &summary["runs"][0]["thresholds"];
    assert_eq!(t.as_array().unwrap().len(), 2, "{t}");
    assert!(
        t[1]["value"].as_f64().unwrap() > 250.0 && t[1]["pass"] == true,
        "{t}"
    );
    assert!(t[1].get("deferred").is_none(), "{t}");
    assert_eq!(
        insert["errors"], 0,
        "no duplicate keys or other errors: {insert}"
    );
    assert_eq!(summary["groups"][0]["threads"], 7);
    assert_eq!(summary["groups"][0]["rate"], 300.0);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p["part"]["index"], i, "each part knows its index");
        let share = [3, 2, 2][i];
        assert_eq!(p["groups"][0]["threads"], share, "7 users in 3 parts");
        let rate = p["groups"][0]["rate"].as_f64().unwrap();
        assert!(
            (rate - 300.0 * f64::from(share) / 7.0).abs() < 1e-9,
            "{rate}"
        );
        // The throughput limit is the whole run's: a part leaves it to merge.
        let t = &p["runs"][0]["thresholds"];
        assert_eq!(t[1]["deferred"], true, "{t}");
        assert_eq!(t[0]["pass"], true, "{t}");
        let info = read_json(&dirs[i].join("run.json"));
        assert_eq!(info["part"]["count"], 3, "{}", info["part"]);
    }

    // Witness 3: the union of the three sample logs, percentiles computed exactly.
    let mut all: Vec<(u64, u64)> = dirs.iter().flat_map(|d| samples(d, "insert")).collect();
    assert_eq!(
        all.len() as u64,
        merged_inserts,
        "sample log lines vs merged samples"
    );
    let mut lat: Vec<u64> = all.iter().map(|s| s.1).collect();
    lat.sort_unstable();
    let exact = |q: f64| lat[((q * lat.len() as f64).ceil() as usize).max(1) - 1] as f64 / 1000.0;
    for (key, q) in [
        ("median_ms", 0.5),
        ("p90_ms", 0.9),
        ("p99_ms", 0.99),
        ("max_ms", 1.0),
    ] {
        let got = insert[key].as_f64().unwrap();
        // HdrHistogram with 3 significant digits: within 0.1 % (and its microsecond unit).
        assert!(
            (got - exact(q)).abs() <= exact(q) * 0.001 + 0.001,
            "{key}: merged {got} ms, exactly {} ms from the union of the sample logs",
            exact(q)
        );
    }
    let throughput = insert["throughput"].as_f64().unwrap();
    assert!(
        (throughput - 300.0).abs() <= 9.0,
        "rate 300 in three parts: merged throughput {throughput}/s"
    );

    // The parts' first operations began together (from their sample logs).
    let firsts: Vec<u64> = dirs
        .iter()
        .map(|d| {
            ["insert", "update"]
                .iter()
                .flat_map(|g| samples(d, g))
                .map(|s| s.0)
                .min()
                .unwrap()
        })
        .collect();
    let spread = firsts.iter().max().unwrap() - firsts.iter().min().unwrap();
    assert!(
        spread <= 50_000,
        "first operations {spread} us apart: {firsts:?}"
    );
    all.sort_unstable();

    // The merged interval log holds every sample, in wall-clock intervals.
    let hlog = std::fs::read_to_string(merged.join("latency.hlog")).unwrap();
    let (_, intervals, _) = mongo_stress::rundir::parse_hlog(&hlog).unwrap();
    let logged: u64 = intervals["insert"].iter().map(|i| i.count).sum();
    assert_eq!(
        logged, merged_inserts,
        "merged interval histograms vs samples"
    );
    // Each merged second holds one second of each part, never two of one part and none of
    // another: none exceeds the rate by more than a tick's jitter.
    let busiest = intervals["insert"].iter().map(|i| i.count).max().unwrap();
    assert!(
        busiest <= 345,
        "a merged 1 s interval holds {busiest} inserts at 300/s"
    );
    assert!(merged.join("report.html").is_file() && merged.join("parts.tsv").is_file());
    let parts_tsv = std::fs::read_to_string(merged.join("parts.tsv")).unwrap();
    assert_eq!(parts_tsv.lines().count(), 4, "{parts_tsv}");
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(
        html.contains(r#""parts_tsv":"Part\t"#),
        "the report shows the parts table"
    );
    assert!(
        html.contains("merged from 3 parts"),
        "the report names the parts' hosts"
    );

    // What merge refuses, each named.
    let (code, _, err) = merge(&refs[..2], &tmp.path().join("m2"), &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("part 2 of 3 is missing"), "{err}");
    // Allowed, two parts of three are merged, and say so; they carry 5/7 of the load, so the
    // whole run's throughput limit (250/s) fails: exit 4.
    let (code, out, err) = merge(&refs[..2], &tmp.path().join("m3"), &["--allow-missing"]);
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(
        out.contains("merged without part 2 (--allow-missing)"),
        "{out}"
    );
    let partial = read_json(&tmp.path().join("m3/summary.json"));
    assert_eq!(partial["missing_parts"], serde_json::json!([2]));
    let (code, _, err) = merge(
        &[refs[0], refs[0], refs[1], refs[2]],
        &tmp.path().join("m4"),
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("are both part 0 of 3"), "{err}");
    // A part of another seed (its summary edited: what merge reads is what it checks).
    let reseeded = tmp.path().join("reseeded-2");
    std::fs::create_dir_all(&reseeded).unwrap();
    for f in ["summary.json", "summary.tsv", "run.json", "latency.hlog"] {
        std::fs::copy(dirs[2].join(f), reseeded.join(f)).unwrap();
    }
    let mut s2 = read_json(&reseeded.join("summary.json"));
    s2["seed"] = 8.into();
    std::fs::write(reseeded.join("summary.json"), s2.to_string()).unwrap();
    let (code, _, err) = merge(&[refs[0], refs[1], &reseeded], &tmp.path().join("m6"), &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("different seeds: 7 and 8"), "{err}");
    // A part of another profile (its own single part 0, on its own database).
    let other_db = unique_db("parts_other");
    let other = common::profile(
        tmp.path(),
        &other_db,
        "drop = true",
        "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nloops = 5\n",
    );
    let other_dir = tmp.path().join("other-0");
    bin()
        .args([
            "run",
            other.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--part",
            "0/3",
        ])
        .args(["--seed", "7", "--quiet", "--no-resources", "--out"])
        .arg(&other_dir)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    let (code, _, err) = merge(&[&other_dir, refs[1], refs[2]], &tmp.path().join("m5"), &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ran different profiles"), "{err}");
    assert!(err.contains(&other_db) && err.contains(&db), "{err}");
}
