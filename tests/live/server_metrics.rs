//! The server's host as an exporter sees it (`--server-metrics`), and serverStatus the mongostat
//! way, against real parts: Debian's `prometheus-node-exporter` started here on a free loopback
//! port, and the server started by the test (so the tool does not know its process). Then
//! endpoints that answer garbage, hang, or are down: the run is whole, their columns empty, one
//! warning each, and no password shown.
//!
//! The exporter is found as `MONGO_STRESS_NODE_EXPORTER`, else `prometheus-node-exporter` or
//! `node_exporter` on PATH (scripts/test.sh installs Debian's); without one the test fails,
//! unless `MONGO_STRESS_SKIP_NODE_EXPORTER=1`.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn node_exporter() -> Option<PathBuf> {
    if skip_if_set("MONGO_STRESS_SKIP_NODE_EXPORTER") {
        return None;
    }
    if let Ok(p) = std::env::var("MONGO_STRESS_NODE_EXPORTER") {
        return Some(p.into());
    }
    for name in ["prometheus-node-exporter", "node_exporter"] {
        let found = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        });
        if found.is_some() {
            return found;
        }
    }
    panic!(
        "no node_exporter: install Debian's prometheus-node-exporter (scripts/test.sh does), set MONGO_STRESS_NODE_EXPORTER=path, or MONGO_STRESS_SKIP_NODE_EXPORTER=1 to skip this test"
    );
}

/// A process killed on drop.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts node_exporter on a free loopback port; returns it and its metrics URL once it answers.
fn start_node_exporter(binary: &PathBuf) -> (Killed, String) {
    let port = free_port();
    let child = Command::new(binary)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let guard = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            if text.contains("node_cpu_seconds_total") {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "node_exporter did not answer on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (guard, format!("http://127.0.0.1:{port}/metrics"))
}

/// KB written so far to this machine's whole, non-virtual disks (`/sys/block` names), from
/// /proc/diskstats (sectors of 512 bytes), the same devices node_exporter reports by default.
fn disk_written_kb() -> f64 {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = *f.get(2)?;
            let whole = std::path::Path::new("/sys/block").join(name).exists();
            let virtual_ = ["loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd"]
                .iter()
                .any(|p| name.starts_with(p));
            (whole && !virtual_)
                .then(|| f.get(9)?.parse::<f64>().ok().map(|s| s * 512.0 / 1024.0))?
        })
        .sum()
}

/// `resources.tsv` as rows of column name to cell.
fn resources(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split('\t')
        .map(String::from)
        .collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            assert_eq!(cells.len(), header.len(), "{l}");
            header
                .iter()
                .cloned()
                .zip(cells.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::HashMap<String, String>, col: &str) -> Option<f64> {
    row.get(col).and_then(|c| c.parse().ok())
}

#[test]
fn node_exporter_gives_the_server_hosts_cpu_and_disks_and_serverstatus_the_mongostat_columns() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let Some(binary) = node_exporter() else {
        return;
    };
    let (_exporter, url) = start_node_exporter(&binary);
    let host = url
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("node_exporter");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 8\nduration = \"6s\"\n\n[[group]]\nname = \"find\"\nop = \"find\"\nfilter = [\"city\"]\nthreads = 2\nduration = \"6s\"\n",
    );
    let out = dir.path().join("r");
    // secantusd-rs does not fsync (measured: neither j:true writes nor its fsync command reach
    // the device), so its journal reaches the disk on the kernel's writeback, up to 30 s later,
    // as chance has it. sync(2) in the middle of the insert stage puts the server's inserts on
    // the disk within the stage, as a real mongod's journal fsyncs would; the device's own
    // counters, read here around the run, are the witness.
    let before = disk_written_kb();
    let tsv = out.join("resources.tsv");
    let syncer = std::thread::spawn(move || {
        // Two sampled seconds into the stage (header and two rows), at most 20 s from now.
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline
            && std::fs::read_to_string(&tsv).map_or(0, |t| t.lines().count()) < 3
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::sync() };
    });
    let (summary, stdout, stderr) =
        server.run_ok(path.to_str().unwrap(), &out, &["--server-metrics", &url]);
    syncer.join().unwrap();
    let device_kb = disk_written_kb() - before;
    validate_schema(&summary);
    let rows = resources(&out.join("resources.tsv"));
    let inside: Vec<_> = rows
        .iter()
        .filter(|r| num(r, "interval_ms").is_some_and(|ms| ms >= 900.0))
        .collect();
    assert!(inside.len() >= 5, "{} rows", rows.len());
    // Host CPU every second, and near this host's own /proc reading of the same seconds.
    let col = |name: &str| format!("{name}@{host}");
    let (mut remote, mut local) = (Vec::new(), Vec::new());
    for r in &inside {
        let n = num(r, &col("node_cpu_pct"))
            .unwrap_or_else(|| panic!("no host CPU from node_exporter in {r:?}"));
        remote.push(n);
        local.push(num(r, "host_cpu_pct").expect("local host CPU"));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (m_remote, m_local) = (mean(&remote), mean(&local));
    assert!(
        (m_remote - m_local).abs() <= 15.0,
        "node_exporter host CPU {m_remote:.1} vs local /proc {m_local:.1} ({remote:?} vs {local:?})"
    );
    // Disk writes while inserting, and no more than the devices themselves counted around the
    // whole run (the sampled seconds are part of it).
    let written: f64 = rows
        .iter()
        .filter_map(|r| {
            Some(num(r, &col("node_disk_write_kbs"))? * num(r, "interval_ms")? / 1000.0)
        })
        .sum();
    assert!(written > 0.0, "no disk writes seen by node_exporter");
    // Each second's rate is over the exporter's own scrape-to-scrape time, a few ms off the
    // row's: 10 % either way of the devices' count, most of which the sync put inside the run.
    assert!(
        written <= device_kb * 1.1 + 64.0 && written >= device_kb * 0.3,
        "node_exporter saw {written:.0} KB written, the devices counted {device_kb:.0} KB"
    );
    for c in ["node_mem_used_mb", "node_load1", "node_disk_util_pct"] {
        assert!(
            inside.iter().all(|r| num(r, &col(c)).is_some()),
            "{c} missing"
        );
    }
    // The summary names the source of each figure: the exporter, since the tool was given no
    // local server process.
    let stage = &summary["resources"][0];
    let cpu_source = stage["cpu_source"].as_str().unwrap();
    assert!(
        cpu_source.contains(&format!("node_exporter at {host}")),
        "{cpu_source}"
    );
    assert!(
        stage["disk_source"]
            .as_str()
            .unwrap()
            .contains("node_exporter"),
        "{stage}"
    );
    assert!(stage["server_cpu_pct"]["avg"].as_f64().is_some(), "{stage}");
    assert!(
        stdout.contains(&format!("Server CPU from node_exporter at {host}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("IOPS and disk from node_exporter at {host}")),
        "{stdout}"
    );
    assert!(!stderr.contains("warning: server metrics"), "{stderr}");
    assert_eq!(
        summary["metrics_sources"][0]["answered"],
        summary["metrics_sources"][0]["seconds"]
    );
    // mongostat's columns, those this server reports, in (nearly) every second.
    let answered = |c: &str| inside.iter().filter(|r| num(r, c).is_some()).count();
    for c in [
        "qr",
        "qw",
        "ar",
        "aw",
        "dirty_pct",
        "used_pct",
        "flushes",
        "vsize_mb",
        "res_mb",
        "connections",
        "net_in_kbs",
        "net_out_kbs",
        "writes_us",
        "reads_us",
        "commands_us",
    ] {
        assert!(
            answered(c) + 1 >= inside.len(),
            "{c} in {} of {} seconds",
            answered(c),
            inside.len()
        );
    }
    // The server's own write latency is below what the client measured (it excludes the
    // network and the client's queueing).
    let server_write_us: Vec<f64> = inside.iter().filter_map(|r| num(r, "writes_us")).collect();
    let client_ms = row(&summary, "insert")["average_ms"].as_f64().unwrap();
    assert!(
        mean(&server_write_us) / 1000.0 <= client_ms,
        "server {:.3} ms vs client {client_ms} ms",
        mean(&server_write_us) / 1000.0
    );
    // The load generator's health is recorded every second.
    for c in ["client_wait_ms", "client_run_ms", "client_lag_max_ms"] {
        assert!(answered(c) + 1 >= inside.len(), "{c}");
    }
}

/// A loopback endpoint that answers every request with an HTML page, or never answers.
fn bad_endpoint(hang: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = stream;
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                if hang {
                    std::thread::sleep(Duration::from_secs(60));
                } else {
                    let body = "<html><body>not metrics</body></html>\n";
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            });
        }
    });
    port
}

#[test]
fn endpoints_that_answer_garbage_hang_or_are_down_cost_only_their_columns() {
    let Some(server) = TestServer::start() else {
        return;
    };
    // A password with a comma (legal in a URL's user info) stays whole and hidden.
    let garbage = format!(
        "http://scraper:s3cret,x@127.0.0.1:{}/metrics",
        bad_endpoint(false)
    );
    let hanging = format!("http://127.0.0.1:{}/metrics", bad_endpoint(true));
    let down = format!("http://127.0.0.1:{}/metrics", free_port());
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("bad_metrics");
    // The endpoints from the profile this time (the other test gives --server-metrics).
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        // 6000 inserts at 2000/s: 3 s, a few sampled seconds however fast the machine is (a
        // release build does them in one second in closed loop).
        "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 4\nloops = 1500\nrate = 2000\n",
    );
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "[target]\n",
        &format!("[target]\nserver_metrics = [\"{garbage}\", \"{hanging}\", \"{down}\"]\n"),
    );
    std::fs::write(&path, text).unwrap();
    let out = dir.path().join("r");
    let (summary, stdout, stderr) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    validate_schema(&summary);
    // The run is whole: every operation, and every document on the server.
    assert_eq!(row(&summary, "insert")["samples"], 6000);
    assert_eq!(row(&summary, "insert")["errors"], 0);
    assert_eq!(server.count(&db, "cities", mongodb::bson::doc! {}), 6000);
    // Their columns are empty in every row, the others are not.
    let rows = resources(&out.join("resources.tsv"));
    assert!(rows.len() >= 2, "{rows:?}");
    // A row every second: the hanging endpoint costs at most its 500 ms limit (the first row
    // also covers the primer reading).
    for r in &rows {
        let ms = num(r, "interval_ms").unwrap();
        assert!(ms <= 2000.0, "a row after {ms} ms");
    }
    for r in &rows {
        for (k, v) in r {
            if k.contains('@') {
                assert!(v.is_empty(), "{k} = {v}");
            }
        }
        assert!(num(r, "client_cpu_pct").is_some());
    }
    // One warning per source, naming it with its password hidden; a note in the summary.
    let shown_garbage = garbage.replace("s3cret,x", "****");
    for (url, why) in [
        (&shown_garbage, "no node_exporter"),
        (&hanging, "no answer within 500 ms"),
        (&down, "refused"),
    ] {
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with(&format!("warning: server metrics from {url}:")))
            .collect();
        assert_eq!(warnings.len(), 1, "{url}: {stderr}");
        assert!(warnings[0].contains(why), "{}", warnings[0]);
        assert!(
            stdout.contains(&format!("note: server metrics from {url} answered in 0 of")),
            "{stdout}"
        );
    }
    let sources = summary["metrics_sources"].as_array().unwrap();
    assert_eq!(sources.len(), 3);
    assert!(sources
        .iter()
        .all(|s| s["answered"] == 0 && s["seconds"].as_u64() > Some(0)));
    let codes = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == "metrics_source")
        .count();
    assert_eq!(codes, 3);
    // The password appears nowhere.
    assert!(!stdout.contains("s3cret") && !stderr.contains("s3cret"));
    for f in std::fs::read_dir(&out).unwrap().flatten() {
        let bytes = std::fs::read(f.path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cret"),
            "{} shows the password",
            f.path().display()
        );
    }
}
