//! The live page (`--live`, `--live-control`, `--live-token`) on real runs: a rate changed from
//! 200/s to 400/s and a closed-loop group's users from 2 to 6 mid-run, seen in the interval log
//! (throughput and active users stepping at the change), in rows of their own, in summary.json's
//! changes and in report.html's markers, with the server's opcounters as the witness of the count;
//! the stream's last totals equal to summary.json's; refusals (no token, a wrong one, malformed
//! bodies, an unknown group, a rate for a closed-loop group, the rate a group runs at already, a
//! change taken back in its interval) that change nothing and split no row; `POST /api/stop`
//! ending the run as Ctrl-C does (exit 130, files whole); the token never printed; `compare` of
//! the steered run against an unsteered one: a note, the rows of two loads not judged, each
//! change's row judged against the unsteered group at its value.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// One HTTP request on loopback: the status and the body.
pub(crate) fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("the live page answers");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {text}"));
    let body = text.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    (status, body)
}

/// The event stream, read on a thread: each event's name and data as they come.
pub(crate) fn events(
    port: u16,
    token: Option<&str>,
) -> mpsc::Receiver<(String, serde_json::Value)> {
    let (tx, rx) = mpsc::channel();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("the live page answers");
    s.write_all(
        format!(
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(s).lines();
        // The headers.
        for l in lines.by_ref() {
            if l.map_or(true, |l| l.is_empty()) {
                break;
            }
        }
        let mut name = String::new();
        for l in lines {
            let Ok(l) = l else { break };
            if let Some(n) = l.strip_prefix("event: ") {
                name = n.to_string();
            } else if let Some(d) = l.strip_prefix("data: ") {
                let v: serde_json::Value =
                    serde_json::from_str(d).expect("an event's data is JSON");
                if tx.send((name.clone(), v)).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// Waits for the page to answer on `port` (the run prints its URL before it reaches the server).
pub(crate) fn wait_for_page(port: u16, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its page answered"
        );
        assert!(Instant::now() < deadline, "the live page never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mongo-stress run PROFILE --uri URI --out OUT EXTRA...` in the background.
pub(crate) fn spawn(
    profile: &std::path::Path,
    uri: &str,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Child {
    let mut args = vec![profile.to_str().unwrap(), "--uri", uri];
    args.extend(extra);
    spawn_run(&args, out)
}

/// `mongo-stress run ARGS... --out OUT` in the background, its output piped.
fn spawn_run(args: &[&str], out: &std::path::Path) -> std::process::Child {
    std::process::Command::new(bin_path())
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most `secs`) for the child, returning its exit code and stderr.
pub(crate) fn finish(mut child: std::process::Child, secs: u64) -> (i32, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_rate_and_users_changed_mid_run_step_at_the_change_in_rows_events_and_markers_of_their_own() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("live_change");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 10\nrate = 200\nduration = \"14s\"\n\n\
                  [[group]]\nname = \"look\"\nop = \"find\"\nthreads = 2\nduration = \"14s\"\n";
    let path = profile(dir.path(), &db, "drop = true", groups);
    let out = dir.path().join("run");
    let port = free_port();
    let before = server.opcounters();
    let mut child = spawn(
        &path,
        &server.uri,
        &out,
        &[
            "--quiet",
            "--live",
            &format!("127.0.0.1:{port}"),
            "--live-control",
        ],
    );
    wait_for_page(port, &mut child);
    let stream = events(port, None);
    // Four intervals at 200/s and 2 users, then the changes.
    let mut seen = Vec::new();
    let mut intervals = 0;
    while intervals < 4 {
        let (name, data) = stream
            .recv_timeout(Duration::from_secs(30))
            .expect("events while the run goes");
        intervals += usize::from(name == "interval");
        seen.push((name, data));
    }
    let (status, body) = http(port, "POST", "/api/groups/ins", &[], r#"{"rate": 400}"#);
    assert_eq!(status, 202, "{body}");
    assert!(body.contains("200/s -> 400/s"), "{body}");
    let (status, body) = http(
        port,
        "POST",
        "/api/groups/look",
        &["X-Mongo-Stress-From: page"],
        r#"{"users": 6}"#,
    );
    assert_eq!(status, 202, "{body}");
    // The rest of the stream, to its end.
    while let Ok(e) = stream.recv_timeout(Duration::from_secs(30)) {
        let end = e.0 == "end";
        seen.push(e);
        if end {
            break;
        }
    }
    let (code, stderr) = finish(child, 60);
    assert_eq!(code, 0, "{stderr}");
    // Each change said on the console once, a quiet run's too.
    for said in [
        "live: ins 200/s -> 400/s (api 127.0.0.1)",
        "live: look 2 users -> 6 users (page 127.0.0.1)",
    ] {
        assert_eq!(stderr.matches(said).count(), 1, "{said}: {stderr}");
    }
    let after = server.opcounters();
    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);

    // The changes, in summary.json: when, from what to what, who.
    let changes = summary["runs"][0]["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 2, "{changes:?}");
    let rate = changes.iter().find(|c| c["group"] == "ins").unwrap();
    assert_eq!(
        (
            rate["setting"].as_str(),
            rate["from"].as_f64(),
            rate["to"].as_f64()
        ),
        (Some("rate"), Some(200.0), Some(400.0))
    );
    assert_eq!(rate["row"], "ins@400/s");
    assert_eq!(rate["who"], "api 127.0.0.1");
    let users = changes.iter().find(|c| c["group"] == "look").unwrap();
    assert_eq!(
        (users["from"].as_f64(), users["to"].as_f64()),
        (Some(2.0), Some(6.0))
    );
    assert_eq!(users["who"], "page 127.0.0.1");
    assert_eq!(users["row"], "look@6 users");

    // Rows of their own, the group's row holding both; each at its rate.
    let whole = row(&summary, "ins")["samples"].as_u64().unwrap();
    let (slow, fast) = (row(&summary, "ins@200/s"), row(&summary, "ins@400/s"));
    assert_eq!(
        slow["samples"].as_u64().unwrap() + fast["samples"].as_u64().unwrap(),
        whole
    );
    let fast_rate = fast["throughput"].as_f64().unwrap();
    // Twice the first rate, within what a loaded two-core CI machine keeps
    // of it in a debug build (377/s seen there).
    assert!(
        (340.0..=420.0).contains(&fast_rate),
        "ins@400/s ran at {fast_rate}/s"
    );
    let slow_rate = slow["throughput"].as_f64().unwrap();
    assert!(
        (190.0..=210.0).contains(&slow_rate),
        "ins@200/s ran at {slow_rate}/s"
    );
    assert_eq!(
        row(&summary, "look@2 users")["samples"].as_u64().unwrap()
            + row(&summary, "look@6 users")["samples"].as_u64().unwrap(),
        row(&summary, "look")["samples"].as_u64().unwrap()
    );
    // The server saw every insert the rows count.
    assert_eq!(
        counter(&after, "insert") - counter(&before, "insert"),
        whole as i64
    );

    // The interval log: throughput steps within one interval of the change, users follow.
    let run = mongo_stress::rundir::RunDir::open(&out).unwrap();
    let at = rate["time_ms"].as_f64().unwrap() / 1000.0 - run.base_secs;
    let ins = &run.intervals["ins"];
    // The whole intervals on each side: after the first, before the change; from the change
    // (it takes effect at the end of the interval it was asked in) to the one before the last
    // (the group's end).
    let end = ins.iter().map(|i| i.start + i.length).fold(0.0, f64::max);
    let whole_before: Vec<f64> = ins
        .iter()
        .filter(|i| i.start > 0.5 && i.start + i.length <= at + 0.01)
        .map(|i| i.count as f64 / i.length)
        .collect();
    let whole_after: Vec<f64> = ins
        .iter()
        .filter(|i| i.start >= at - 0.01 && i.start + i.length < end - 0.5)
        .map(|i| i.count as f64 / i.length)
        .collect();
    assert!(
        whole_before.len() >= 2 && whole_after.len() >= 2,
        "{ins:?} around {at}"
    );
    assert!(
        whole_before.iter().all(|r| (170.0..=230.0).contains(r)),
        "before: {whole_before:?}"
    );
    assert!(
        whole_after.iter().all(|r| (340.0..=460.0).contains(r)),
        "after: {whole_after:?}"
    );
    let look = &run.activity["look"];
    let users_at = |f: &dyn Fn(f64) -> bool| -> Vec<u32> {
        look.iter()
            .filter(|a| f(a.start + a.length))
            .map(|a| a.users)
            .collect()
    };
    assert!(
        users_at(&|t| t > 1.0 && t < at - 0.01)
            .iter()
            .all(|u| *u == 2),
        "{look:?}"
    );
    let later = users_at(&|t| t > at + 1.05 && t < end - 0.5);
    assert!(
        !later.is_empty() && later.iter().all(|u| *u == 6),
        "{look:?}"
    );

    // The stream: a `change` event per change, and its last totals exactly summary.json's.
    assert_eq!(seen.iter().filter(|(n, _)| n == "change").count(), 2);
    let last = seen
        .iter()
        .rev()
        .find(|(n, _)| n == "state")
        .expect("a state event");
    for r in summary["runs"][0]["rows"].as_array().unwrap() {
        let label = r["label"].as_str().unwrap();
        assert_eq!(last.1["totals"][label]["samples"], r["samples"], "{label}");
        assert_eq!(last.1["totals"][label]["errors"], r["errors"], "{label}");
    }
    let end = &seen.last().unwrap().1;
    assert_eq!(end["exit_code"], 0, "{end}");

    // report.html's data carries both changes as markers for its charts (report.js draws them
    // on the canvas, which the DOM does not show).
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("ins 200/s -> 400/s (api 127.0.0.1)"),
        "no marker of the rate change"
    );
    assert!(
        html.contains("look 2 users -> 6 users (page 127.0.0.1)"),
        "no marker of the users change"
    );

    // compare, against a run of the profile that nobody steered: it says so first, leaves the
    // rows of two loads (the changed groups' own, TOTAL) unjudged, and judges each change's
    // row against the unsteered group that ran at its value (ins@200/s against ins at 200/s).
    let base = dir.path().join("unsteered");
    let (code, stderr) = finish(
        spawn(&path, &server.uri, &base, &["--quiet", "--duration", "6s"]),
        60,
    );
    assert_eq!(code, 0, "{stderr}");
    let compared = bin()
        .arg("compare")
        .arg(&base)
        .arg(&out)
        .args(["--json", "-"])
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&compared.stderr);
    assert_eq!(compared.status.code(), Some(0), "{console}");
    let c: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    let first = console.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("TOTAL: throughput ")
            && first.contains("p99 ")
            && first.contains("(not judged: steered)"),
        "{console}"
    );
    assert!(
        console.contains("note: the new run was steered live: ")
            && console.contains("ins 200/s -> 400/s (api 127.0.0.1)")
            && console.contains("look 2 users -> 6 users (page 127.0.0.1)"),
        "{console}"
    );
    assert!(console.contains("ins@200/s (base: ins)"), "{console}");
    let cell = |label: &str, metric: &str| -> serde_json::Value {
        c["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["label"] == label && x["metric"] == metric)
            .unwrap_or_else(|| panic!("no {label} {metric} in {c}"))
            .clone()
    };
    for (label, metric) in [("ins", "p99"), ("look", "throughput"), ("TOTAL", "p50")] {
        assert_eq!(
            cell(label, metric)["verdict"],
            "steered",
            "{label} {metric}"
        );
    }
    for (label, base_label) in [("ins@200/s", "ins"), ("look@2 users", "look")] {
        let x = cell(label, "p50");
        assert_eq!(x["base_label"], base_label, "{x}");
        assert!(
            ["faster", "slower", "same_within_noise"].contains(&x["verdict"].as_str().unwrap()),
            "judged from its intervals: {x}"
        );
    }
    assert!(
        !c["cells"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["label"] == "ins@400/s"),
        "ins@400/s has no counterpart in a run at 200/s"
    );
    // A gate on a row of two loads: refused, with the way out.
    let gated = bin()
        .arg("compare")
        .arg(&base)
        .arg(&out)
        .args(["--fail-if", "TOTAL.p99 > +10%"])
        .output()
        .unwrap();
    let says = String::from_utf8_lossy(&gated.stderr);
    assert_eq!(gated.status.code(), Some(2), "{says}");
    assert!(
        says.contains("steered live") && says.contains("gate a change's row"),
        "{says}"
    );
}

#[test]
fn refusals_change_nothing_the_token_is_never_shown_and_stop_ends_the_run_as_ctrl_c() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("live_refuse");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 2\nduration = \"60s\"\n\n\
                  [[group]]\nname = \"looped\"\nop = \"find\"\nthreads = 1\nloops = 100000000\n\n\
                  [[group]]\nname = \"paced\"\nop = \"find\"\nthreads = 2\nrate = 150\nduration = \"60s\"\n";
    let path = profile(dir.path(), &db, "drop = true", groups);
    let token = "s3cret-live-token";
    let port = free_port();

    // Beyond loopback without a token: refused before anything runs.
    let refused = dir.path().join("refused");
    let (code, stderr) = finish(
        spawn(
            &path,
            &server.uri,
            &refused,
            &["--live", &format!("0.0.0.0:{port}")],
        ),
        30,
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--live-token"), "{stderr}");
    assert!(!refused.exists(), "nothing was created");

    let out = dir.path().join("run");
    let mut child = spawn(
        &path,
        &server.uri,
        &out,
        &[
            "--live",
            &format!("0.0.0.0:{port}"),
            "--live-control",
            "--live-token",
            token,
        ],
    );
    wait_for_page(port, &mut child);
    let auth = format!("Authorization: Bearer {token}");
    let stream = events(port, Some(token));
    // The run has begun (a first interval) before the requests.
    while stream
        .recv_timeout(Duration::from_secs(30))
        .expect("events")
        .0
        != "interval"
    {}
    for (path, headers, body) in [
        ("/", vec![], ""),
        ("/events", vec!["Authorization: Bearer wrong-token-123"], ""),
        ("/api/run", vec![], ""),
    ] {
        let (status, _) = http(port, "GET", path, &headers, body);
        assert_eq!(status, 401, "GET {path} without the token");
    }
    let (status, page) = http(port, "GET", &format!("/?token={token}"), &[], "");
    assert_eq!(status, 200, "the page with its token");
    assert!(!page.contains(token), "the page holds the token");
    let (status, totals) = http(port, "GET", "/api/run", &[&auth], "");
    assert_eq!(status, 200);
    assert!(!totals.contains(token), "/api/run holds the token");
    let (status, _) = http(
        port,
        "POST",
        "/api/groups/ins",
        &["Authorization: Bearer wrong-token-123"],
        r#"{"users": 5}"#,
    );
    assert_eq!(status, 401, "a change with a wrong token");
    let (status, _) = http(port, "POST", "/api/stop", &[], "");
    assert_eq!(status, 401, "a stop without the token");
    for (path, body, want, says) in [
        ("/api/groups/ins", "{users: 5", 400, "not JSON"),
        ("/api/groups/ins", r#"{"users": -3}"#, 400, "whole number"),
        ("/api/groups/ins", r#"{"users": 99999999}"#, 400, "users"),
        ("/api/groups/ins", r#"{"rate": 500}"#, 400, "closed loop"),
        ("/api/groups/ins", r#"{"users": 5, "rate": 1}"#, 400, "both"),
        (
            "/api/groups/nope",
            r#"{"users": 5}"#,
            404,
            "no group `nope`",
        ),
        ("/api/groups/ins", r#"{"users": 2}"#, 409, "already"),
        ("/api/groups/looped", r#"{"users": 3}"#, 409, "loops"),
    ] {
        let (status, reply) = http(port, "POST", path, &[&auth], body);
        assert_eq!(status, want, "{body}: {reply}");
        assert!(reply.contains(says), "{body}: {reply}");
    }
    // The rate a group runs at already, within the row name's two decimals (150/s is a period
    // of 6666667 ns, which reads back as 149.99999/s): nothing to change. A change asked, then
    // taken back in the same interval (asked right after one began): made neither.
    while stream
        .recv_timeout(Duration::from_secs(30))
        .expect("events")
        .0
        != "interval"
    {}
    for (body, want, says) in [
        (r#"{"rate": 150}"#, 409, "runs at 150/s already"),
        (r#"{"rate": 150.001}"#, 409, "runs at 150/s already"),
        (
            r#"{"rate": 300}"#,
            202,
            "150/s -> 300/s from the next interval",
        ),
        (
            r#"{"rate": 300}"#,
            409,
            "goes to 300/s from the next interval already",
        ),
        (
            r#"{"rate": 150}"#,
            200,
            "the change to 300/s asked before (api 127.0.0.1) is taken back; it stays at 150/s",
        ),
    ] {
        let (status, reply) = http(port, "POST", "/api/groups/paced", &[&auth], body);
        assert_eq!(status, want, "{body}: {reply}");
        assert!(reply.contains(says), "{body}: {reply}");
    }
    // Two intervals later nothing was changed.
    let mut n = 0;
    while n < 2 {
        let (name, _) = stream
            .recv_timeout(Duration::from_secs(30))
            .expect("events");
        assert_ne!(name, "change", "a refused request changed the run");
        n += usize::from(name == "interval");
    }
    let (status, reply) = http(port, "POST", "/api/stop", &[&auth], "");
    assert_eq!(status, 202, "{reply}");
    let (code, stderr) = finish(child, 30);
    assert_eq!(code, 130, "{stderr}");
    assert!(!stderr.contains(token), "the token was printed: {stderr}");
    assert!(stderr.contains("?token=<your --live-token>"), "{stderr}");
    // The files whole: the summary parses, the sample log holds every operation it counts.
    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    assert_eq!(summary["runs"][0]["interrupted"], true, "{summary}");
    assert!(
        summary["runs"][0].get("changes").is_none(),
        "nothing changed: {summary}"
    );
    let labels: Vec<&str> = summary["runs"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.iter().all(|l| !l.contains('@') && !l.contains('#')),
        "no row of a change: {labels:?}"
    );
    let samples = row(&summary, "ins")["samples"].as_u64().unwrap();
    let logged = std::fs::read_to_string(out.join("samples.tsv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert_eq!(
        logged as u64,
        row(&summary, "TOTAL")["samples"].as_u64().unwrap()
    );
    assert_eq!(server.count(&db, "cities", mongodb::bson::doc! {}), samples);
    let run_json = read_json(&out.join("run.json"));
    let line: Vec<&str> = run_json["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(line.join(" ").contains("--live-token ****"), "{line:?}");
    for f in ["summary.json", "run.json", "report.html", "latency.hlog"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(!text.contains(token), "{f} holds the token");
    }
}

/// Headless Chromium on the live page, loopback only, its DOM once the page closed its stream
/// (at the run's end: virtual time waits while the stream is open).
fn live_dom(
    browser: &std::path::Path,
    profile_dir: &std::path::Path,
    url: &str,
) -> std::process::Child {
    // Loopback only: every other name unresolved, and the proxy dead.
    std::process::Command::new(browser)
        .args(crate::browser_report::offline(
            "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ))
        .args(["--dump-dom", "--virtual-time-budget=60000"])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg(url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the browser starts")
}

/// The body's `data-NAME` attribute in a dumped DOM.
fn body_attr(dom: &str, name: &str) -> Option<String> {
    let body = dom.split("<body").nth(1)?.split('>').next()?;
    let rest = body.split(&format!("data-{name}=\"")).nth(1)?;
    Some(rest.split('"').next()?.replace("&quot;", "\""))
}

#[test]
fn pages_opened_early_and_half_way_in_a_browser_draw_the_whole_run_with_the_summarys_totals() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let Some(browser) = crate::browser_report::browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("live_browser");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nrate = 100\nduration = \"12s\"\n\n\
                  [[group]]\nname = \"look\"\nop = \"find\"\nthreads = 2\nduration = \"12s\"\n";
    let path = profile(dir.path(), &db, "drop = true", groups);
    let out = dir.path().join("run");
    let port = free_port();
    let mut child = spawn(
        &path,
        &server.uri,
        &out,
        &["--quiet", "--live", &format!("127.0.0.1:{port}")],
    );
    wait_for_page(port, &mut child);
    let stream = events(port, None);
    let url = format!("http://127.0.0.1:{port}/");
    let mut pages = Vec::new();
    let mut intervals = 0;
    let mut last_totals = serde_json::Value::Null;
    while let Ok((name, data)) = stream.recv_timeout(Duration::from_secs(30)) {
        if name == "interval" {
            intervals += 1;
            // One page after the first interval, one a third of the way (time to start and
            // connect before the end, on a loaded machine).
            if intervals == 1 || intervals == 4 {
                let profile_dir = dir.path().join(format!("chromium-{intervals}"));
                pages.push(live_dom(&browser, &profile_dir, &url));
            }
        }
        if name == "state" {
            last_totals = data["totals"].clone();
        }
        if name == "end" {
            break;
        }
    }
    let (code, stderr) = finish(child, 60);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(pages.len(), 2, "{intervals} intervals");
    let summary = read_json(&out.join("summary.json"));
    // Each browser's output read on a thread of its own (a DOM is larger than a pipe holds).
    let dumps: Vec<mpsc::Receiver<(Option<i32>, String)>> = pages
        .into_iter()
        .map(|page| {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let o = page.wait_with_output().unwrap();
                let _ = tx.send((
                    o.status.code(),
                    String::from_utf8_lossy(&o.stdout).into_owned(),
                ));
            });
            rx
        })
        .collect();
    for (k, dump) in dumps.into_iter().enumerate() {
        let (code, dom) = dump
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!("page {k}: the browser did not finish within 60 s of the run's end")
            });
        assert_eq!(code, Some(0), "page {k}");
        assert_eq!(
            body_attr(&dom, "ready").as_deref(),
            Some("1"),
            "page {k} never drew: {dom}"
        );
        assert_eq!(
            body_attr(&dom, "errors"),
            None,
            "page {k} raised a script error: {dom}"
        );
        assert_eq!(
            body_attr(&dom, "ended").as_deref(),
            Some("1"),
            "page {k}: the end not shown"
        );
        assert_eq!(body_attr(&dom, "exit").as_deref(), Some("0"));
        // Every interval of the run, whenever the page was opened.
        assert_eq!(
            body_attr(&dom, "intervals"),
            Some(intervals.to_string()),
            "page {k}"
        );
        // The page's last totals: exactly summary.json's, row by row.
        let totals: serde_json::Value =
            serde_json::from_str(&body_attr(&dom, "totals").unwrap()).unwrap();
        assert_eq!(totals, last_totals, "page {k}");
        for r in summary["runs"][0]["rows"].as_array().unwrap() {
            let label = r["label"].as_str().unwrap();
            assert_eq!(totals[label]["samples"], r["samples"], "page {k}: {label}");
        }
        // The report's tables and charts, drawn from the stream.
        assert!(dom.contains("id=\"summary-table\""), "page {k}");
        for label in ["ins", "look", "TOTAL"] {
            assert!(
                dom.contains(&format!("<td class=\"text\">{label}</td>")),
                "page {k}: no row {label}"
            );
        }
        let points = |chart: &str| -> usize {
            dom.split(&format!("data-chart=\"{chart}\""))
                .nth(1)
                .and_then(|r| r.split("data-points=\"").nth(1))
                .and_then(|r| r.split('"').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        assert!(
            points("throughput") >= intervals,
            "page {k}: {} throughput points",
            points("throughput")
        );
        assert!(points("latency:look") > 0, "page {k}");
        assert!(
            dom.contains("id=\"report-link\""),
            "page {k}: no link to report.html"
        );
    }
}

#[test]
fn a_fault_is_said_on_the_console_and_drawn_on_the_page_from_its_own_times() {
    if skip_live() {
        return;
    }
    let _turn = shared();
    // A pause needs the embedded server: the tool starts its own.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let port = free_port();
    let live = format!("127.0.0.1:{port}");
    let mut child = spawn_run(
        &[
            "smoke",
            "--duration",
            "4s",
            "--fault",
            "pause@1s+1s",
            "--interval",
            "1s",
            "--live",
            &live,
        ],
        &out,
    );
    wait_for_page(port, &mut child);
    let stream = events(port, None);
    let mut faults = serde_json::Value::Null;
    loop {
        let (name, data) = stream
            .recv_timeout(Duration::from_secs(60))
            .expect("events until the end");
        match name.as_str() {
            "state" => faults = data["faults"].clone(),
            "end" => break,
            _ => {}
        }
    }
    let (code, stderr) = finish(child, 60);
    assert_eq!(code, 0, "{stderr}");
    // The console says when it began and when it was over, with what was done.
    let begun = stderr.find("fault pause@1s+1s: begun").expect(&stderr);
    let over = stderr
        .find("fault pause@1s+1s: over (pid ")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(begun < over, "{stderr}");
    // The page's band is the fault's own span, as summary.json has it (to the millisecond, not
    // to the sampler's second).
    let summary = read_json(&out.join("summary.json"));
    let fault = &summary["runs"][0]["faults"][0];
    let span_s = (fault["end_ms"].as_f64().unwrap() - fault["start_ms"].as_f64().unwrap()) / 1000.0;
    let faults = faults.as_array().expect("the last state's faults");
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0]["label"], "pause@1s+1s");
    let (from, to) = (
        faults[0]["from"].as_f64().unwrap(),
        faults[0]["to"].as_f64().expect("over"),
    );
    assert!(
        (to - from - span_s).abs() < 0.01,
        "{faults:?} against {fault}"
    );
    // It began when the fault was done (the page's times count from its run's start, a few
    // milliseconds before the first stage's, which the summary's offset counts from).
    let offset = fault["offset_secs"].as_f64().unwrap();
    assert!((from - offset).abs() < 0.1, "{faults:?} against {fault}");
}
