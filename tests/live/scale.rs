//! Scale and long runs against a real server: open loop with 100,000 virtual users stays under
//! 150 MB (peak RSS of the process, read by the kernel), starts every user (the interval log's
//! activity lines) and counts what the server holds (its documents) and what samples.tsv lists;
//! and a run of a minute with the sample log off (the resource sampler on) keeps its RSS and
//! open files flat while the interval log grows by about the same bytes each second. The 30-minute soak is
//! `scripts/soak.sh` (docs/performance.md); this is its short version.

use crate::common;

use std::time::{Duration, Instant};

use common::*;

/// Runs the tool with `args`, its stdout discarded; its exit code and its peak RSS in KiB, as the
/// kernel kept them. Started by a small python3 process that reports both: a child's peak RSS
/// (`ru_maxrss`) counts the address space of the process that spawned it as it was at the exec,
/// and this process is the live binary, which holds what every live test before this one took
/// (200 MB and more).
fn run_with_peak_rss(args: &[&str]) -> (i32, i64) {
    const WAIT4: &str = "import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
";
    let output = std::process::Command::new("python3")
        .args(["-c", WAIT4])
        .arg(bin_path())
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("python3 runs");
    let printed = String::from_utf8_lossy(&output.stdout);
    let mut words = printed.split_whitespace().map(|w| w.parse::<i64>());
    match (words.next(), words.next()) {
        (Some(Ok(code)), Some(Ok(rss_kb))) => (code as i32, rss_kb),
        _ => panic!("python3 reported no exit code and peak RSS: {printed:?}"),
    }
}

fn status_kb(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn open_files(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

#[test]
fn a_hundred_thousand_open_loop_users_start_fit_in_150_mb_and_count_true() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("scale");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 100000\nramp_up = \"2s\"\nduration = \"6s\"\nrate = 2000\n",
    );
    let out = dir.path().join("run");
    let (code, rss_kb) = run_with_peak_rss(&[
        "run",
        path.to_str().unwrap(),
        "--uri",
        &server.uri,
        "--quiet",
        "--no-resources",
        "--out",
        out.to_str().unwrap(),
    ]);
    eprintln!("peak RSS {rss_kb} KiB with 100,000 open-loop users");
    assert_eq!(code, 0, "the run failed");
    assert!(
        rss_kb < 150 * 1024,
        "peak RSS {rss_kb} KiB with 100,000 users"
    );
    let summary = read_json(&out.join("summary.json"));
    let total = row(&summary, "TOTAL");
    let samples = total["samples"].as_u64().unwrap();
    let lines = std::fs::read_to_string(out.join("samples.tsv"))
        .unwrap()
        .lines()
        .count() as u64
        - 1;
    assert_eq!(samples, lines, "summary and samples.tsv");
    assert_eq!(
        server.count(&db, "cities", Default::default()),
        total["inserted"].as_u64().unwrap(),
        "the server's documents"
    );
    // 4 s of slots at 2,000/s after the ramp-up: each one sent or counted as missed.
    let missed = total["missed"].as_u64().unwrap();
    assert!(samples > 1000, "{samples} sent");
    assert!(
        (samples + missed).abs_diff(8000) <= 1,
        "{samples} sent + {missed} missed of 8,000 slots"
    );
    // Every user started: the interval log's activity lines count them (`ins=USERS/ERRORS`).
    let hlog = std::fs::read_to_string(out.join("latency.hlog")).unwrap();
    let most = hlog
        .lines()
        .filter_map(|l| l.strip_prefix("#[Activity "))
        .filter_map(|l| {
            l.split("ins=")
                .nth(1)?
                .split('/')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max();
    assert_eq!(most, Some(100_000), "users started");
}

#[test]
fn rss_and_open_files_stay_flat_over_a_minute_with_the_sample_log_off() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("soak");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 500\nduration = \"62s\"\nrate = 500\n",
    );
    let out = dir.path().join("run");
    let mut child = std::process::Command::new(bin_path())
        .args(["run", path.to_str().unwrap(), "--uri", &server.uri])
        .args(["--quiet", "--no-samples", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    // (seconds, RSS KiB, open files, interval log bytes), once a second.
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(120) {
        if let (Some(rss), Some(fds)) = (status_kb(pid, "VmRSS:"), open_files(pid)) {
            let hlog = std::fs::metadata(out.join("latency.hlog")).map_or(0, |m| m.len());
            seen.push((t0.elapsed().as_secs_f64(), rss, fds, hlog));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(child.wait().unwrap().success(), "the run failed");
    let window = |from: f64, to: f64| -> Vec<&(f64, u64, usize, u64)> {
        seen.iter().filter(|s| s.0 >= from && s.0 < to).collect()
    };
    // From 30 s: the driver opens the pool in the background, a few connections a second.
    let (early, late) = (window(30.0, 40.0), window(50.0, 60.0));
    assert!(early.len() >= 5 && late.len() >= 5, "{seen:?}");
    let mean = |w: &[&(f64, u64, usize, u64)]| w.iter().map(|s| s.1).sum::<u64>() / w.len() as u64;
    let (rss_early, rss_late) = (mean(&early), mean(&late));
    assert!(
        rss_late <= rss_early + rss_early / 10,
        "RSS grew from {rss_early} to {rss_late} KiB: {seen:?}"
    );
    let most_fds = |w: &[&(f64, u64, usize, u64)]| w.iter().map(|s| s.2).max().unwrap();
    assert!(
        most_fds(&late) <= most_fds(&early),
        "open files grew: {seen:?}"
    );
    // The interval log grows by each second's lines, no faster later than earlier.
    let rate = |w: &[&(f64, u64, usize, u64)]| {
        let (a, b) = (w[0], w[w.len() - 1]);
        (b.3 - a.3) as f64 / (b.0 - a.0)
    };
    let (grow_early, grow_late) = (rate(&early), rate(&late));
    assert!(grow_early > 0.0, "the interval log did not grow: {seen:?}");
    assert!(
        grow_late <= grow_early * 1.5,
        "latency.hlog grew {grow_early:.0} B/s early, {grow_late:.0} B/s late"
    );
}
