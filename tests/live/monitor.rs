//! The resource sampler never waits behind the workload: with 1000 virtual users on a pool of 100
//! (the bundled jmeter-2016 sizes, a few loops) against the embedded server, serverStatus answers
//! in at least 95 % of the sampled seconds of every stage, because the sampler has a client of
//! its own. (Measured before: empty in 40 of 41 seconds of the find stage.)

use crate::common;

use common::*;

#[test]
fn server_status_arrives_every_second_however_many_users_queue_for_the_pool() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = bin()
        .args([
            "run",
            "jmeter-2016",
            "--loops",
            "3",
            "--quiet",
            "--no-samples",
            "--out",
        ])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(600))
        .output()
        .unwrap();
    // Exit 0: every operation succeeded and no part of the tool (the sampler included) failed.
    // The profile's 15-minute operation timeout outlasts any queue for the pool, and a remove or
    // update that finds no document is counted as unmatched, not failed, so nothing here may
    // fail; exit 1 would hide a sampler that panicked or could not write resources.tsv.
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(
        row(&summary, "TOTAL")["errors"],
        0,
        "TOTAL errors in summary.json"
    );
    let stages = summary["resources"].as_array().unwrap();
    assert!(stages.len() >= 5, "{stages:?}");
    let mut checked = 0;
    for s in stages {
        let (seconds, answered) = (
            s["seconds"].as_u64().unwrap(),
            s["status_seconds"].as_u64().unwrap(),
        );
        // A stage shorter than a few sampled seconds says little either way.
        if seconds >= 3 {
            checked += 1;
            assert!(
                answered as f64 >= 0.95 * seconds as f64,
                "stage {}: serverStatus in {answered} of {seconds} seconds",
                s["label"]
            );
            // A peak is never below its average.
            for k in ["server_cpu_pct", "iops", "disk_write_kbs", "client_cpu_pct"] {
                if let (Some(a), Some(p)) = (s[k]["avg"].as_f64(), s[k]["peak"].as_f64()) {
                    assert!(p >= a, "{} {k}: {a} / {p}", s["label"]);
                }
            }
        }
    }
    assert!(checked >= 1, "some stage lasted 3 s: {stages:?}");
}
