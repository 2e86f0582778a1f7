//! One run across several load generators, coordinated: `run --parts 3 --coordinator ADDR`
//! and three `part --join URL` processes against one real server. Witnesses: the documents on
//! the server, the parts' own run directories, and `merge` of them, which the coordinator's
//! directory must equal. Also a part killed mid-run, an abort judged on the whole run, and what
//! the coordinator refuses.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use mongodb::bson::doc;

pub(crate) const TOKEN: &str = "0123456789abcdef-test-token";

/// The coordinator, on a free loopback port; returns it and its URL once it listens.
fn coordinator(profile: &Path, uri: &str, out: &Path, extra: &[&str]) -> (Child, String) {
    let port = free_port();
    let child = Command::new(bin_path())
        .args(["run", profile.to_str().unwrap(), "--uri", uri])
        .args([
            "--parts",
            "3",
            "--coordinator",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--seed", "7", "--interval", "1s"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("MONGO_STRESS_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the coordinator");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the coordinator never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, format!("http://127.0.0.1:{port}"))
}

fn part(url: &str, token: &str, index: Option<u32>, out: &Path) -> Child {
    let mut c = Command::new(bin_path());
    c.args(["part", "--join", url, "--token", token, "--quiet"])
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(i) = index {
        c.args(["--index", &i.to_string()]);
    }
    c.spawn().expect("start a part")
}

pub(crate) fn finish(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `merge` of the parts' own directories into `out`: its summary.
pub(crate) fn merge_of(dirs: &[PathBuf], out: &Path) -> serde_json::Value {
    let m = bin()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    read_json(&out.join("summary.json"))
}

/// A coordinator and its three parts (`part-0` .. `part-2` in `tmp`), each asking for its
/// index, started on `groups`.
pub(crate) struct Three {
    pub(crate) coord: Child,
    pub(crate) parts: Vec<Child>,
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) out: PathBuf,
}

pub(crate) fn three(
    tmp: &Path,
    server: &TestServer,
    db: &str,
    groups: &str,
    extra: &[&str],
) -> Three {
    let profile = common::profile(tmp, db, "drop = true", groups);
    let out = tmp.join("coordinated");
    let (coord, url) = coordinator(&profile, &server.uri, &out, extra);
    let dirs: Vec<PathBuf> = (0..3).map(|i| tmp.join(format!("part-{i}"))).collect();
    let parts = (0..3)
        .map(|i| part(&url, TOKEN, Some(i), &dirs[i as usize]))
        .collect();
    Three {
        coord,
        parts,
        dirs,
        out,
    }
}

/// Every file under `dir`, read as text where it is text.
fn texts(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(texts(&p));
        } else if let Ok(t) = std::fs::read_to_string(&p) {
            out.push((p, t));
        }
    }
    out
}

/// The interval log's data lines (its header names the tool and the time it was written).
fn hlog_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("latency.hlog"))
        .expect("latency.hlog")
        .lines()
        .filter(|l| !l.starts_with("#[") && !l.starts_with("\"StartTimestamp\""))
        .map(str::to_string)
        .collect()
}

#[test]
fn three_parts_joined_to_a_coordinator_are_one_run_equal_to_the_merge_of_their_directories() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 6\nrate = 300\nduration = \"6s\"\n";
    let profile = common::profile(tmp.path(), &db, "drop = true", groups);
    let out = tmp.path().join("coordinated");
    let (coord, url) = coordinator(&profile, &server.uri, &out, &[]);
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| tmp.path().join(format!("part-{i}")))
        .collect();
    // Parts 2 and 0 ask for their index; the third takes the one left.
    let parts = vec![
        part(&url, TOKEN, Some(2), &dirs[2]),
        part(&url, TOKEN, Some(0), &dirs[0]),
        {
            std::thread::sleep(Duration::from_millis(300));
            part(&url, TOKEN, None, &dirs[1])
        },
    ];
    for p in parts {
        let (code, said) = finish(p);
        assert_eq!(code, Some(0), "a part failed: {said}");
    }
    let (code, said) = finish(coord);
    assert_eq!(code, Some(0), "the coordinator failed: {said}");
    for i in 0..3 {
        assert!(
            said.contains(&format!("part {i} of 3 joined from")),
            "{said}"
        );
    }
    assert!(said.contains("the stages begin at"), "{said}");
    // Merged intervals said while the run went: the three parts' histograms added.
    let merged_lines: Vec<&str> = said
        .lines()
        .filter(|l| l.contains(" 3 parts | TOTAL "))
        .collect();
    assert!(merged_lines.len() >= 4, "{said}");

    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    let inserts = row(&summary, "insert")["samples"].as_u64().unwrap();
    // Witness 1: the server's documents.
    assert_eq!(
        server.count(&db, "cities", doc! {}),
        inserts,
        "documents vs the coordinator's count"
    );
    // Witness 2: the parts' own directories, each written whole.
    let own: u64 = dirs
        .iter()
        .map(|d| {
            row(&read_json(&d.join("summary.json")), "insert")["samples"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(own, inserts);
    let rate = row(&summary, "insert")["throughput"].as_f64().unwrap();
    assert!(
        (270.0..=315.0).contains(&rate),
        "the three parts' 300/s: {rate}"
    );
    // Witness 3: `merge` of the parts' own directories: the same rows and intervals.
    let merged = tmp.path().join("merged");
    let by_merge = merge_of(&dirs, &merged);
    for label in ["insert", "TOTAL"] {
        let (a, b) = (row(&summary, label), row(&by_merge, label));
        for key in [
            "samples",
            "errors",
            "median_ms",
            "p90_ms",
            "p99_ms",
            "max_ms",
            "average_ms",
            "throughput",
            "latency_hdr",
        ] {
            assert!(!a[key].is_null(), "{label}.{key} is in the summary");
            assert_eq!(a[key], b[key], "{label}.{key}");
        }
    }
    assert_eq!(
        hlog_lines(&out),
        hlog_lines(&merged),
        "the merged interval logs"
    );
    // Each part's clock, as the coordinator measured it.
    let rows = summary["parts"].as_array().expect("parts");
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["part"], i);
        let offset = r["clock_offset_ms"].as_f64().expect("offset");
        let trip = r["round_trip_ms"].as_f64().expect("round trip");
        // One machine: one clock, read to within the round trip.
        assert!(offset.abs() <= trip.max(1.0), "{r}");
    }
    // The token is in no file of the run, the coordinator's or a part's.
    for d in std::iter::once(&out).chain(&dirs) {
        for (p, t) in texts(d) {
            assert!(!t.contains(TOKEN), "the token in {}", p.display());
        }
    }
}

#[test]
fn a_part_killed_mid_run_is_said_lost_with_its_share_and_the_run_ends_with_what_was_measured() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_loss");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nrate = 150\nduration = \"20s\"\n";
    let Three {
        mut coord,
        mut parts,
        dirs,
        out,
    } = three(tmp.path(), &server, &db, groups, &["--quiet"]);
    let lines = lines_of(&mut coord);
    let mut said = Vec::new();
    let started = wait_for(&lines, "the stages begin at", &mut said);
    // Part 2 dies 4 s into the stages (they begin 2 s after this line).
    std::thread::sleep(Duration::from_secs(6).saturating_sub(started.elapsed()));
    let killed = Instant::now();
    parts[2].kill().unwrap();
    let lost_at = wait_for(&lines, "part 2 (from", &mut said);
    let lost_line = said.last().unwrap();
    assert!(
        lost_line.contains("insert 1 users at 50/s"),
        "its share: {lost_line}"
    );
    let after = lost_at.duration_since(killed);
    assert!(
        after <= Duration::from_millis(3_700),
        "said {after:?} after the kill"
    );
    let code = coord.wait().unwrap().code();
    said.extend(lines.try_iter().map(|(_, l)| l));
    let said = said.join("\n");
    assert_eq!(code, Some(1), "{said}");
    // The other parts were stopped, not left to run their 20 s, and kept their directories.
    for (i, p) in parts.drain(..2).enumerate() {
        let (_, out) = finish(p);
        let s = read_json(&dirs[i].join("summary.json"));
        let stopped = s["runs"][0]["stopped_early"].to_string();
        assert!(stopped.contains("part 2"), "part {i}: {stopped}\n{out}");
    }
    assert!(
        killed.elapsed() < Duration::from_secs(14),
        "the run went on to its end"
    );
    // The merged run: two parts, the lost one named.
    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    let rows = summary["parts"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        rows[2]["lost"].as_str().unwrap().starts_with("lost"),
        "{}",
        rows[2]
    );
    let inserts = row(&summary, "insert")["samples"].as_u64().unwrap();
    let own: u64 = (0..2)
        .map(|i| {
            row(&read_json(&dirs[i].join("summary.json")), "insert")["samples"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(
        inserts, own,
        "the merged run is the two parts that finished"
    );
    // The killed part's inserts are on the server too, but in no directory.
    assert!(server.count(&db, "cities", doc! {}) > inserts);
}

#[test]
fn a_wrong_token_a_taken_index_and_parts_that_never_come_are_refused_by_name() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_refused");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nduration = \"2s\"\n";
    let profile = common::profile(tmp.path(), &db, "drop = true", groups);
    let out = tmp.path().join("coordinated");
    let (coord, url) = coordinator(&profile, &server.uri, &out, &["--join-timeout", "4s"]);
    let (code, said) = finish(part(&url, "not-the-token", None, &tmp.path().join("x")));
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("refused: this part's token is not the run's"),
        "{said}"
    );
    assert!(!said.contains(TOKEN), "{said}");
    let first = part(&url, TOKEN, Some(0), &tmp.path().join("p0"));
    std::thread::sleep(Duration::from_millis(1500));
    let (code, said) = finish(part(&url, TOKEN, Some(0), &tmp.path().join("again")));
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("part 0 has already joined"), "{said}");
    // Only one of three parts ever joins: the coordinator ends, naming the missing ones, and
    // the part that waited is told; nothing ran.
    let (code, said) = finish(coord);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("1 of 3 parts joined within --join-timeout 4s; missing: part 1, part 2"),
        "{said}"
    );
    let (code, part_said) = finish(first);
    assert_ne!(code, Some(0), "{part_said}");
    assert!(part_said.contains("missing: part 1, part 2"), "{part_said}");
    assert!(!out.join("summary.json").exists());
    assert!(!tmp.path().join("p0").join("summary.json").exists());
    assert_eq!(server.count(&db, "cities", doc! {}), 0, "nothing half-run");
    assert!(!said.contains(TOKEN) && !part_said.contains(TOKEN));
}

/// The last intended start of a part's measured operations, epoch microseconds.
pub(crate) fn last_start_us(dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join("samples.tsv")).expect("samples.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (start, phase) = (col("start_us"), col("phase"));
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|c| c[phase] == "measure")
        .map(|c| c[start].parse::<u64>().unwrap())
        .max()
        .expect("measured operations")
}

#[test]
fn an_abort_threshold_is_judged_on_the_whole_run_and_stops_every_part_within_an_interval() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_abort");
    // 600 inserts is two seconds of the whole run's 300/s, but six of any one part's 100/s:
    // only the whole run's count breaks the limit this early.
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nrate = 300\nduration = \"20s\"\n\n[thresholds]\n\"insert.samples\" = { limit = \"< 600\", abort = true }\n";
    let Three {
        mut coord,
        parts,
        dirs,
        out,
    } = three(tmp.path(), &server, &db, groups, &["--quiet"]);
    let err = BufReader::new(coord.stderr.take().unwrap());
    let mut said = Vec::new();
    let mut breach = None;
    for l in err.lines().map_while(Result::ok) {
        if l.starts_with("stopping every part:") && breach.is_none() {
            breach = Some(std::time::SystemTime::now());
        }
        said.push(l);
    }
    let said = said.join("\n");
    let code = coord.wait().unwrap().code();
    assert_eq!(code, Some(4), "{said}");
    let breach = breach.unwrap_or_else(|| panic!("no abort said: {said}"));
    assert!(
        said.contains(
            "stopping every part: threshold `insert.samples < 600` failed on the whole run"
        ),
        "{said}"
    );
    let breach_us = breach
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    for (i, p) in parts.into_iter().enumerate() {
        let (_, out) = finish(p);
        let s = read_json(&dirs[i].join("summary.json"));
        let stopped = s["runs"][0]["stopped_early"].to_string();
        assert!(
            stopped.contains("stopped early by the coordinator: threshold"),
            "part {i}: {stopped}\n{out}"
        );
        // No operation of the part was due later than one interval (1 s) after the breach.
        let last = last_start_us(&dirs[i]);
        assert!(
            last <= breach_us + 1_000_000,
            "part {i} went on {} ms after the breach",
            (last as i64 - breach_us as i64) / 1000
        );
        // Far fewer than its own 600: the whole run's count stopped it.
        let own = row(&s, "insert")["samples"].as_u64().unwrap();
        assert!(own < 450, "part {i} ran {own}");
    }
    let summary = read_json(&out.join("summary.json"));
    let t = &summary["runs"][0]["thresholds"][0];
    assert_eq!(t["pass"], false, "{t}");
    let inserts = row(&summary, "insert")["samples"].as_u64().unwrap();
    assert!((600..1500).contains(&inserts), "{inserts}");
    assert_eq!(server.count(&db, "cities", doc! {}), inserts);
}

#[test]
fn stop_on_error_pct_is_judged_on_the_whole_run_and_stops_every_part() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    let server = mongo_stress::server::EmbeddedServer::start(None, &[], None).expect("a server");
    let tmp = tempfile::tempdir().unwrap();
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nrate = 300\nduration = \"60s\"\n";
    let profile = common::profile(
        tmp.path(),
        &unique_db("coordinated_errors"),
        "drop = true",
        groups,
    );
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(&profile, format!("stop_on_error_pct = 50\n{text}")).unwrap();
    let uri = format!("{}&serverSelectionTimeoutMS=500", server.uri());
    let out = tmp.path().join("coordinated");
    let began = Instant::now();
    let (coord, url) = coordinator(&profile, &uri, &out, &["--quiet"]);
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| tmp.path().join(format!("part-{i}")))
        .collect();
    let parts: Vec<Child> = (0..3)
        .map(|i| part(&url, TOKEN, Some(i), &dirs[i as usize]))
        .collect();
    // The server dies once the parts have run a few seconds.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dirs[0].join("samples.tsv").exists() {
        assert!(Instant::now() < deadline, "part 0 never began");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    server.stop();
    let (code, said) = finish(coord);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        began.elapsed() < Duration::from_secs(40),
        "a 60 s run should stop early: {said}"
    );
    assert!(
        said.contains("stopping every part: ")
            && said.contains("of the whole run's last")
            && said.contains("stop_on_error_pct = 50"),
        "{said}"
    );
    for (i, p) in parts.into_iter().enumerate() {
        let (_, text) = finish(p);
        let s = read_json(&dirs[i].join("summary.json"));
        let stopped = s["runs"][0]["stopped_early"].to_string();
        // The coordinator's judgment, not the part's own guard.
        assert!(
            stopped.contains("stopped early by the coordinator:")
                && stopped.contains("stop_on_error_pct = 50"),
            "part {i}: {stopped}\n{text}"
        );
    }
    let merged = read_json(&out.join("summary.json"));
    assert_eq!(merged["parts"].as_array().unwrap().len(), 3, "{merged}");
}

/// The coordinator's stderr lines as they come, with when.
fn lines_of(child: &mut Child) -> std::sync::mpsc::Receiver<(Instant, String)> {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send((Instant::now(), l));
        }
    });
    rx
}

/// Waits for the line containing `what`; returns when it came.
fn wait_for(
    lines: &std::sync::mpsc::Receiver<(Instant, String)>,
    what: &str,
    said: &mut Vec<String>,
) -> Instant {
    loop {
        let (at, l) = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no `{what}` in {said:#?}"));
        let found = l.contains(what);
        said.push(l);
        if found {
            return at;
        }
    }
}

#[test]
fn with_continue_the_other_parts_run_to_the_end_and_a_lost_coordinator_stops_every_part() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_continue");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nrate = 150\nduration = \"8s\"\n";
    let Three {
        mut coord,
        mut parts,
        dirs,
        out,
    } = three(
        tmp.path(),
        &server,
        &db,
        groups,
        &["--quiet", "--on-part-loss", "continue"],
    );
    let lines = lines_of(&mut coord);
    let mut said = Vec::new();
    let started = wait_for(&lines, "the stages begin at", &mut said);
    std::thread::sleep(Duration::from_secs(5).saturating_sub(started.elapsed()));
    parts[2].kill().unwrap();
    wait_for(&lines, "part 2 (from", &mut said);
    let code = coord.wait().unwrap().code();
    said.extend(lines.try_iter().map(|(_, l)| l));
    // The stages began 2 s after `started` and ran their 8 s: the run ended on time.
    let took = started.elapsed();
    assert!(
        (Duration::from_secs(10)..Duration::from_secs(20)).contains(&took),
        "{took:?}: {said:#?}"
    );
    assert_eq!(code, Some(1), "a part's share was missing: {said:#?}");
    for (i, p) in parts.drain(..2).enumerate() {
        let (code, out) = finish(p);
        assert_eq!(code, Some(0), "part {i}: {out}");
        let s = read_json(&dirs[i].join("summary.json"));
        assert!(
            s["runs"][0]["stopped_early"].is_null(),
            "part {i} ran to its end: {}",
            s["runs"][0]["stopped_early"]
        );
        let n = row(&s, "insert")["samples"].as_u64().unwrap();
        assert!((380..=420).contains(&n), "part {i}: {n} of 8 s at 50/s");
    }
    let summary = read_json(&out.join("summary.json"));
    assert!(
        summary["parts"][2]["lost"]
            .as_str()
            .unwrap()
            .starts_with("lost"),
        "{}",
        summary["parts"]
    );

    // Now the coordinator dies mid-run: every part stops within 5 s, its directory whole.
    let db = unique_db("coordinated_orphans");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nrate = 150\nduration = \"30s\"\n";
    let orphans = tempfile::tempdir().unwrap();
    let Three {
        mut coord,
        parts,
        dirs,
        out,
    } = three(orphans.path(), &server, &db, groups, &["--quiet"]);
    let lines = lines_of(&mut coord);
    let mut said = Vec::new();
    let started = wait_for(&lines, "the stages begin at", &mut said);
    std::thread::sleep(Duration::from_secs(5).saturating_sub(started.elapsed()));
    coord.kill().unwrap();
    let killed = Instant::now();
    for (i, p) in parts.into_iter().enumerate() {
        let (_, out) = finish(p);
        // 5 s of silence, then the operations in flight and the summary.
        assert!(
            killed.elapsed() < Duration::from_secs(9),
            "part {i} went on: {out}"
        );
        assert!(
            out.contains("could not send its results to the coordinator"),
            "part {i}: {out}"
        );
        let s = read_json(&dirs[i].join("summary.json"));
        validate_schema(&s);
        let stopped = s["runs"][0]["stopped_early"].to_string();
        assert!(
            stopped.contains("has not answered for 5 s"),
            "part {i}: {stopped}"
        );
        assert!(row(&s, "insert")["samples"].as_u64().unwrap() > 100);
    }
    assert!(!out.join("summary.json").exists());
}
