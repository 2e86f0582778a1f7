//! Live metrics against a real Prometheus (Debian's `prometheus`, installed by scripts/test.sh,
//! started here on a free loopback port with a 1 s scrape interval and its remote-write
//! receiver on): it scrapes the tool's `/metrics` during a 10 s mixed run and receives the
//! series the tool pushes; then, through Prometheus's own HTTP API, each group's operations
//! equal the summary's `# Samples`, `histogram_quantile(0.99, ...)` is within the buckets' 5 %
//! of the summary's p99, and the errors by class are the summary's, for both the scraped and
//! the pushed series. A port already taken is a usage error before any load; a push URL that
//! refuses or hangs costs one warning and no samples; every query of the Grafana dashboard is
//! accepted by that Prometheus. `MONGO_STRESS_PROMETHEUS=path` names the binary when it is not
//! on PATH; `MONGO_STRESS_SKIP_PROMETHEUS=1` skips the tests that need it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, free_port, read_json, row, skip_if_set, TestServer};

/// A Prometheus of the test's own, stopped on drop.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(scrape_port: u16) -> Prometheus {
        let program = std::env::var_os("MONGO_STRESS_PROMETHEUS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("prometheus"));
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: scrape\n    static_configs:\n      - targets: ['127.0.0.1:{scrape_port}']\n"),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(&program)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--web.enable-remote-write-receiver")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start ({e}): run scripts/test.sh (installs Debian's prometheus), set MONGO_STRESS_PROMETHEUS, or MONGO_STRESS_SKIP_PROMETHEUS=1", program.display()));
        let p = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("http://127.0.0.1:{port}/-/ready"))
            .call()
            .is_err()
        {
            assert!(Instant::now() < deadline, "Prometheus did not get ready");
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// An instant query's result: (labels, value) per series; panics unless the API says success.
    fn query(&self, q: &str) -> Vec<(serde_json::Value, f64)> {
        let mut r = ureq::post(&format!("http://127.0.0.1:{}/api/v1/query", self.port))
            .send_form([("query", q)])
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        let v: serde_json::Value =
            serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        assert_eq!(v["status"], "success", "{q}: {v}");
        v["data"]["result"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| {
                        (
                            s["metric"].clone(),
                            s["value"][1]
                                .as_str()
                                .unwrap_or("0")
                                .parse()
                                .unwrap_or(f64::NAN),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The API accepts `q` (its result may be empty).
    fn accepts(&self, q: &str) -> Result<(), String> {
        let mut r = ureq::post(&format!("http://127.0.0.1:{}/api/v1/query", self.port))
            .config()
            .http_status_as_error(false)
            .build()
            .send_form([("query", q)])
            .map_err(|e| e.to_string())?;
        let v: serde_json::Value =
            serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        (v["status"] == "success")
            .then_some(())
            .ok_or_else(|| format!("{q}: {v}"))
    }
}

fn skip() -> bool {
    common::skip_live() || skip_if_set("MONGO_STRESS_SKIP_PROMETHEUS")
}

#[test]
fn prometheus_sees_what_the_summary_says_by_scrape_and_by_remote_write() {
    if skip() {
        return;
    }
    let Some(server) = TestServer::start() else {
        return;
    };
    let listen = free_port();
    let prom = Prometheus::start(listen);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live-run");
    let push = format!("http://127.0.0.1:{}/api/v1/write", prom.port);
    // Inserts, a mix of kinds, and a group whose every insert but the first is a duplicate (so
    // the errors by class have something to agree on).
    let db = common::unique_db("live");
    let profile = dir.path().join("live.toml");
    std::fs::write(
        &profile,
        format!("name = \"live\"\n[target]\ndatabase = \"{db}\"\nwrite_concern = 1\n[setup]\ndrop = true\npreload = 500\n[document]\ncity = {{ choice = [\"A\", \"B\"] }}\n[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 3\nduration = \"10s\"\n[[group]]\nname = \"mix\"\nmix = {{ get = 80, update = 20 }}\nset = [\"city\"]\nthreads = 3\nduration = \"10s\"\n[[group]]\nname = \"dup\"\nthreads = 1\nduration = \"10s\"\n[group.insertOne]\ndocument = {{ _id = \"the same\" }}\n"),
    )
    .unwrap();
    let listen_at = format!("127.0.0.1:{listen}");
    // Exit 1: the duplicates failed.
    let output = bin()
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .args(["--metrics-listen", &listen_at, "--metrics-push", &push])
        .timeout(Duration::from_secs(120))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let summary = read_json(&out.join("summary.json"));
    assert!(
        !stderr.contains("--metrics-push"),
        "no push failed: {stderr}"
    );
    let dups = &summary["runs"][0]["errors_by_class"]["dup"]["duplicate_key"];
    assert!(
        dups.as_u64().unwrap_or(0) > 0,
        "{}",
        summary["runs"][0]["errors_by_class"]
    );
    let groups = ["insert", "mix", "dup"];
    for job in ["scrape", "mongo-stress"] {
        let sel = format!("job=\"{job}\",run=\"live-run\"");
        // The last value of each series (a finished target's scraped series go stale).
        let ops = prom.query(&format!(
            "sum by (group) (last_over_time(mongo_stress_operations_total{{{sel}}}[10m]))"
        ));
        let p99 = prom.query(&format!("histogram_quantile(0.99, sum by (group, le) (last_over_time(mongo_stress_latency_seconds_bucket{{{sel}}}[10m])))"));
        let errors = prom.query(&format!(
            "sum by (group, class) (last_over_time(mongo_stress_errors_total{{{sel}}}[10m]))"
        ));
        for g in groups {
            let of = |r: &[(serde_json::Value, f64)]| {
                r.iter().find(|(m, _)| m["group"] == g).map(|(_, v)| *v)
            };
            let r = row(&summary, g);
            assert_eq!(
                of(&ops),
                Some(r["samples"].as_f64().unwrap()),
                "{job} {g}: operations"
            );
            let (got, want) = (of(&p99).unwrap() * 1000.0, r["p99_ms"].as_f64().unwrap());
            assert!(
                (got - want).abs() <= want * 0.05 + 0.05,
                "{job} {g}: p99 {got} ms, the summary's {want} ms"
            );
            let mut by_class: Vec<(String, f64)> = errors
                .iter()
                .filter(|(m, _)| m["group"] == g)
                .map(|(m, v)| (m["class"].as_str().unwrap().to_string(), *v))
                .collect();
            by_class.sort_by(|a, b| a.0.cmp(&b.0));
            let mut want: Vec<(String, f64)> = summary["runs"][0]["errors_by_class"][g]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
                        .collect()
                })
                .unwrap_or_default();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(by_class, want, "{job} {g}: errors by class");
        }
        // A mix: each kind's operations are its row's.
        let kinds = prom.query(&format!("sum by (kind) (last_over_time(mongo_stress_operations_total{{{sel},group=\"mix\"}}[10m]))"));
        for k in ["get", "update"] {
            let got = kinds.iter().find(|(m, _)| m["kind"] == k).map(|(_, v)| *v);
            assert_eq!(
                got,
                row(&summary, &format!("mix:{k}"))["samples"].as_f64(),
                "{job} mix:{k}"
            );
        }
    }
    // Every query of the Grafana dashboard is one this Prometheus accepts.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/mongo-stress.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut exprs = Vec::new();
    for p in dashboard["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    assert!(exprs.len() >= 9, "{exprs:?}");
    for e in exprs {
        let q = e
            .replace("$__rate_interval", "1m")
            .replace("$run", ".*")
            .replace("$job", ".*");
        prom.accepts(&q).unwrap();
    }
}

#[test]
fn a_metrics_port_already_taken_is_refused_before_any_load() {
    if common::skip_live() {
        return;
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let output = bin()
        .args([
            "run",
            "smoke",
            "--metrics-listen",
            &format!("127.0.0.1:{port}"),
            "--out",
        ])
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("port {port}")), "{stderr}");
    assert!(!out.exists(), "nothing created");
}

#[test]
fn a_push_url_that_refuses_or_hangs_costs_one_warning_and_no_samples() {
    let Some(server) = TestServer::start() else {
        return;
    };
    // One that refuses connections, one that accepts and never answers.
    let refused = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hang = format!(
        "http://127.0.0.1:{}/api/v1/write",
        hanging.local_addr().unwrap().port()
    );
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for c in hanging.incoming().take(64) {
            conns.push(c);
        }
    });
    for (name, url) in [("refused", refused), ("hanging", hang)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(name);
        let started = Instant::now();
        let (summary, _, stderr) =
            server.run_ok("smoke", &out, &["--duration", "3s", "--metrics-push", &url]);
        let warnings = stderr
            .lines()
            .filter(|l| l.starts_with("warning: --metrics-push"))
            .count();
        assert_eq!(warnings, 1, "{name}: {stderr}");
        let samples = std::fs::read_to_string(out.join("samples.tsv"))
            .unwrap()
            .lines()
            .count() as u64
            - 1;
        assert_eq!(
            samples,
            row(&summary, "TOTAL")["samples"].as_u64().unwrap(),
            "{name}"
        );
        assert!(samples > 0);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name}: {:?}",
            started.elapsed()
        );
        let _ = read_json(&out.join("summary.json"));
    }
    drop(held);
}
