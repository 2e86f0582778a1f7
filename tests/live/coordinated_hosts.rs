//! A coordinated run whose parts are on hosts of their own: three network namespaces, each with
//! its own address on a veth pair to the root namespace and its own host name, the server (behind
//! a forwarder on the root namespace's addresses) and the coordinator in the root namespace.
//! 3 parts x 20 s at 900/s in all: the coordinator's count = the parts' = the server's documents;
//! every interval the coordinator said while the run went and the whole run equal `merge` of the
//! parts' directories; each part's host and clock offset in the summary. Needs root (CI is), as
//! network namespaces do; MONGO_STRESS_SKIP_NETNS=1 skips it explicitly.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, UNIX_EPOCH};

use base64::Engine;
use common::*;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use mongodb::bson::doc;

const TOKEN: &str = "hosts-test-token-0123456789";

/// Three namespaces, each a host: removed when dropped.
struct Hosts {
    names: Vec<String>,
    links: Vec<String>,
    /// Each host's address of the root namespace (its gateway), and its own.
    addrs: Vec<(String, String)>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Hosts {
    fn make(n: usize) -> Hosts {
        let id = std::process::id() % 100_000;
        let net = 200 + (id % 50);
        let mut h = Hosts {
            names: Vec::new(),
            links: Vec::new(),
            addrs: Vec::new(),
        };
        for i in 0..n {
            let (ns, outer, inner) = (
                format!("mst{id}n{i}"),
                format!("mst{id}h{i}"),
                format!("mst{id}p{i}"),
            );
            let (gw, me) = (format!("10.{net}.{i}.1"), format!("10.{net}.{i}.2"));
            ip(&["netns", "add", &ns]);
            h.names.push(ns.clone());
            ip(&[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ]);
            h.links.push(outer.clone());
            ip(&["link", "set", &inner, "netns", &ns]);
            ip(&["addr", "add", &format!("{gw}/30"), "dev", &outer]);
            ip(&["link", "set", &outer, "up"]);
            ip(&["-n", &ns, "addr", "add", &format!("{me}/30"), "dev", &inner]);
            ip(&["-n", &ns, "link", "set", &inner, "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            h.addrs.push((gw, me));
        }
        h
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for l in &self.links {
            let _ = Command::new("ip").args(["link", "del", l]).output();
        }
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// A forwarder on every address of this namespace to the server on loopback; its port.
fn forward(upstream: u16) -> u16 {
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    port
}

/// Part `i`, in host `i`'s namespace under the host name `lg-i`.
fn part_on(hosts: &Hosts, i: usize, coordinator_port: u16, db_port: u16, out: &Path) -> Child {
    let (gw, _) = &hosts.addrs[i];
    Command::new("ip")
        .args([
            "netns",
            "exec",
            &hosts.names[i],
            "unshare",
            "--uts",
            "sh",
            "-c",
        ])
        .arg(format!("hostname lg-{i} && exec \"$0\" \"$@\""))
        .arg(bin_path())
        .args(["part", "--join", &format!("http://{gw}:{coordinator_port}")])
        .args([
            "--uri",
            &format!("mongodb://{gw}:{db_port}/?directConnection=true"),
        ])
        .args(["--index", &i.to_string(), "--quiet", "--out"])
        .arg(out)
        .env("MONGO_STRESS_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a part in its namespace")
}

/// The merged interval log's TOTAL per interval: its start (whole seconds since the epoch) and
/// histogram.
fn merged_intervals(dir: &Path) -> BTreeMap<u64, Histogram<u64>> {
    let text = std::fs::read(dir.join("latency.hlog")).unwrap();
    let mut base = 0.0;
    let mut out = BTreeMap::new();
    for entry in IntervalLogIterator::new(&text) {
        match entry.expect("a well-formed interval log") {
            LogEntry::BaseTime(b) => base = b.as_secs_f64(),
            LogEntry::Interval(h) if h.tag().map(|t| t.as_str()) == Some("TOTAL") => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(h.encoded_histogram())
                    .unwrap();
                let hist: Histogram<u64> =
                    Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
                let start = (base + h.start_timestamp().as_secs_f64()).round() as u64;
                out.insert(start, hist);
            }
            _ => {}
        }
    }
    out
}

/// The coordinator's merged interval lines: start (seconds since the epoch) -> TOTAL's cell.
fn said_intervals(said: &str) -> BTreeMap<u64, String> {
    said.lines()
        .filter_map(|l| {
            let (at, rest) = l.split_once(' ')?;
            let t = humantime::parse_rfc3339(at).ok()?;
            let total = rest.split(" | ").find(|c| c.starts_with("TOTAL "))?;
            Some((
                t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
                total.to_string(),
            ))
        })
        .collect()
}

#[test]
fn three_parts_on_hosts_of_their_own_are_one_run_exact_in_every_interval() {
    if skip_if_set("MONGO_STRESS_SKIP_NETNS") {
        return;
    }
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let hosts = Hosts::make(3);
    let db_port = forward(proxy_port(&server.uri));
    let tmp = tempfile::tempdir().unwrap();
    let db = unique_db("coordinated_hosts");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 9\nrate = 900\nduration = \"20s\"\n";
    let profile = common::profile(tmp.path(), &db, "drop = true", groups);
    let out = tmp.path().join("coordinated");
    let port = free_port();
    let mut coord = Command::new(bin_path())
        .args(["run", profile.to_str().unwrap(), "--uri", &server.uri])
        .args(["--parts", "3", "--coordinator", &format!("0.0.0.0:{port}")])
        .arg("--out")
        .arg(&out)
        .env("MONGO_STRESS_TOKEN", TOKEN)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the coordinator never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dirs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("lg-{i}"))).collect();
    let parts: Vec<Child> = (0..3)
        .map(|i| part_on(&hosts, i, port, db_port, &dirs[i]))
        .collect();
    let err = BufReader::new(coord.stderr.take().unwrap());
    let said: Vec<String> = err.lines().map_while(Result::ok).collect();
    let said = said.join("\n");
    assert_eq!(coord.wait().unwrap().code(), Some(0), "{said}");
    for (i, p) in parts.into_iter().enumerate() {
        let o = p.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "part {i}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    for i in 0..3 {
        assert!(
            said.contains(&format!("part {i} of 3 joined from lg-{i}")),
            "{said}"
        );
    }

    // Counts: the coordinator's, the parts', the server's.
    let summary = read_json(&out.join("summary.json"));
    validate_schema(&summary);
    let inserts = row(&summary, "insert")["samples"].as_u64().unwrap();
    let own: u64 = dirs
        .iter()
        .map(|d| {
            row(&read_json(&d.join("summary.json")), "insert")["samples"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(own, inserts);
    assert_eq!(server.count(&db, "cities", doc! {}), inserts);
    let rate = row(&summary, "insert")["throughput"].as_f64().unwrap();
    assert!((800.0..=945.0).contains(&rate), "900/s in all: {rate}");

    // The whole run and its intervals: `merge` of the parts' own directories.
    let merged = tmp.path().join("merged");
    let by_merge = crate::coordinated::merge_of(&dirs, &merged);
    for key in [
        "samples",
        "errors",
        "median_ms",
        "p90_ms",
        "p99_ms",
        "max_ms",
        "throughput",
        "latency_hdr",
    ] {
        assert!(
            !row(&summary, "insert")[key].is_null(),
            "{key} is in the summary"
        );
        assert_eq!(
            row(&summary, "insert")[key],
            row(&by_merge, "insert")[key],
            "{key}"
        );
    }
    // Every interval the coordinator said while the run went is merge's, exactly.
    let offline = merged_intervals(&merged);
    let live = said_intervals(&said);
    assert!(live.len() >= 18, "{} intervals said: {said}", live.len());
    for (start, cell) in &live {
        let h = offline
            .get(start)
            .unwrap_or_else(|| panic!("merge has no interval at {start}: {cell}"));
        let ms = |v: u64| v as f64 / 1000.0;
        let expect = format!(
            "TOTAL {} ops p50 {:.2} ms p99 {:.2} ms max {:.2} ms",
            h.len(),
            ms(h.value_at_quantile(0.5)),
            ms(h.value_at_quantile(0.99)),
            ms(h.max())
        );
        assert!(
            cell.starts_with(&expect),
            "at {start}: said `{cell}`, merge `{expect}`"
        );
    }
    // Each part: its host and its clock, as the coordinator measured it.
    let rows = summary["parts"].as_array().unwrap();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["host"], format!("lg-{i}"), "{r}");
        assert!(r["clock_offset_ms"].as_f64().unwrap().abs() < 5.0, "{r}");
        assert!(r["round_trip_ms"].as_f64().unwrap() > 0.0, "{r}");
    }
}

/// The port of a `mongodb://host:port/...` URI.
fn proxy_port(uri: &str) -> u16 {
    crate::common::proxy::port_of(uri)
}
