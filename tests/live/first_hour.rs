//! What a new user meets in the first hour, against a real server: a wrong update told as one
//! line in the server's words (code, name, message, count, share), never as the driver's Debug
//! and never as an outage; a run directory that never mixes with another run's; a run that
//! fails before its first operation leaving nothing behind.

use crate::common;

use common::*;

/// Every file under `dir`, read as text (lossy).
fn all_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    out
}

#[test]
fn a_push_onto_a_string_field_is_one_line_in_the_servers_words_and_no_outage() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let db = unique_db("push_string");
    let dir = tempfile::tempdir().unwrap();
    // `state` is the string "GD" in every document: $push onto it is refused, every time, each
    // time about another document.
    let path = profile(
        dir.path(),
        &db,
        "drop = true\npreload = 200",
        "[[group]]\nname = \"tag\"\nthreads = 2\nduration = \"3s\"\n[group.updateOne]\nfilter = { _id = { \"^Key\" = {} } }\nupdate = { \"$push\" = { state = \"x\" } }\n",
    );
    let out = dir.path().join("run");
    let output = bin()
        .args(["run", path.to_str().unwrap(), "--uri", &server.uri, "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let summary = read_json(&out.join("summary.json"));
    let samples = row(&summary, "tag")["samples"].as_u64().unwrap();
    let errors = row(&summary, "tag")["errors"].as_u64().unwrap();
    assert!(samples > 20 && errors == samples, "{samples} {errors}");

    // The server's own count of failed updates is not readable; its documents are: none was
    // changed.
    assert_eq!(
        server.count(&db, "cities", mongodb::bson::doc! { "state": "GD" }),
        200
    );

    // One failure line: the server's code, its name, its message, the count and the share.
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains(" x (")).collect();
    assert_eq!(lines.len(), 1, "one line per kind of failure:\n{stdout}");
    let line = lines[0];
    assert!(
        line.contains(&format!("{errors} x (100.0 % of tag's operations)")),
        "{line}"
    );
    assert!(
        line.contains("rejected, the first: code 2 (BadValue): "),
        "{line}"
    );
    let failures = summary["runs"][0]["error_kinds"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0]["code"], 2);
    assert_eq!(failures[0]["code_name"], "BadValue");
    assert_eq!(failures[0]["count"].as_u64(), Some(errors));
    assert_eq!(
        summary["runs"][0]["errors_by_class"]["tag"]["rejected"],
        errors
    );

    // An application error is not an outage: no unavailability window.
    assert!(
        !stdout.contains("unavailable") && !stderr.contains("unavailable"),
        "{stdout}\n{stderr}"
    );
    let windows = &summary["runs"][0]["unavailable"];
    assert!(windows.as_array().is_none_or(|w| w.is_empty()), "{windows}");

    // The driver's Debug reaches no one: not the console, not a file of the run.
    let files = all_text(&out);
    for debug in ["Kind:", "labels:", "WriteError {", "code_name:"] {
        assert!(
            !stdout.contains(debug) && !stderr.contains(debug),
            "{debug} in\n{stdout}\n{stderr}"
        );
        assert!(!files.contains(debug), "{debug} in a file of the run");
    }
}

#[test]
fn a_run_into_a_directory_holding_a_run_is_refused_and_changes_nothing() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("old-run");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("audit.tsv"), "an earlier run's audit\n").unwrap();
    std::fs::write(out.join("summary.json"), "{}").unwrap();
    let before = all_text(&out);
    bin()
        .args(["run", "smoke", "--uri", &server.uri, "--quiet", "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "already holds a run (summary.json, audit.tsv)",
        ))
        .stderr(predicates::str::contains(
            "fix: choose a new directory with --out",
        ));
    assert_eq!(all_text(&out), before);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 2);
}

#[test]
fn a_run_that_cannot_reach_its_server_leaves_no_directory() {
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results/never");
    bin()
        .args(["run", "smoke", "--quiet", "--uri"])
        .arg("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=1000&connectTimeoutMS=1000")
        .arg("--out")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(3);
    assert!(
        !dir.path().join("results").exists(),
        "a failed run left a directory"
    );
}

#[test]
fn a_port_where_http_answers_is_named_at_once_not_after_the_timeout() {
    let _turn = common::shared();
    // A real HTTP server (Python's) on a free loopback port.
    let port = free_port();
    let http = std::process::Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 to start its http.server");
    let _http = KillOnDrop(http);
    let up = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            up.elapsed() < std::time::Duration::from_secs(20),
            "http.server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    bin()
        .args(["run", "smoke", "--quiet", "--uri"])
        .arg(format!("mongodb://127.0.0.1:{port}/"))
        .arg("--out")
        .arg(dir.path().join("run"))
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "an HTTP server answers on that port, not MongoDB (it replied",
        ))
        .stderr(predicates::str::contains("point --uri at the MongoDB port"));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "told after {:?}, not at once (the driver's timeout is 10 s)",
        started.elapsed()
    );
    assert!(!dir.path().join("run").exists());
}

/// A child process stopped when the test ends, passed or not.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_second_interrupt_quits_at_once_and_says_what_the_directory_keeps() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("second_interrupt");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"30s\"\n",
    );
    let out = dir.path().join("run");
    // Every insert's reply held 1.5 s: the operations in flight at the first interrupt take that
    // long to finish, so the second comes while they do (without the hold a run on a fast
    // server could finish before it, and end as a first interrupt does).
    let proxy = crate::common::proxy::start_proxy(
        crate::common::proxy::port_of(&server.uri),
        1,
        std::time::Duration::from_millis(1500),
    );
    let uri = format!("mongodb://127.0.0.1:{}/?directConnection=true", proxy.port);
    let mut child = std::process::Command::new(bin_path())
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &uri,
            "--interval",
            "1s",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stderr = String::new();
    // The first interval's line: the run is under way. Then the first interrupt, and the
    // second once the first is taken (it says so), while the held operations finish.
    let mut sent = 0;
    for line in lines.by_ref() {
        let line = line.unwrap();
        stderr.push_str(&line);
        stderr.push('\n');
        if sent == 0 && line.starts_with('[') {
            unsafe { libc::kill(pid, libc::SIGINT) };
            sent = 1;
        } else if sent == 1 && line.starts_with("interrupted:") {
            unsafe { libc::kill(pid, libc::SIGINT) };
            break;
        }
    }
    for line in lines {
        stderr.push_str(&line.unwrap());
        stderr.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let said = stderr
        .lines()
        .find(|l| l.starts_with("quit at once: "))
        .unwrap_or_else(|| panic!("no word of what was kept:\n{stderr}"));
    assert!(
        said.contains(&format!("{} keeps ", out.display())),
        "{said}"
    );
    assert!(
        said.contains("samples.tsv") && said.contains("run.json"),
        "{said}"
    );
    // What it says is kept is whole: every line of the sample log has all its fields.
    let samples = std::fs::read_to_string(out.join("samples.tsv")).unwrap();
    assert!(samples.ends_with('\n'));
    let fields = samples.lines().next().unwrap().split('\t').count();
    assert!(samples.lines().all(|l| l.split('\t').count() == fields));
}
