//! Live metrics where the team already looks: Prometheus. `--metrics-listen ADDR` serves
//! `/metrics` (Prometheus's text format, or OpenMetrics when the scraper asks for it) for the
//! whole run; `--metrics-push URL` sends the same series by Prometheus remote write (`push`).
//! The numbers are the recorder's own, taken at the end of each interval from the run's totals
//! (the histograms and counters the summary is made of, warm-up excluded), and the sampler's
//! last row, so every figure agrees with the summary, `latency.hlog` and `resources.tsv`.
//!
//! Owns: the metric families and their names, the scrape endpoint, the remote-write sender.
//! Never: records samples, judges a result or writes the run directory.

pub mod push;
pub mod text;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use text::{Family, Kind, Sample};

use crate::error::Error;
use crate::metrics::{Flow, GroupMetrics, Output, RunEvent};
use crate::monitor::{ResourceRow, RowSink};
use crate::plan::RunPlan;
use crate::workload::op::OpName;
use axum::response::IntoResponse;

/// Upper bounds of the latency buckets, in seconds: from 25 µs up by 5 % to past 2 minutes,
/// so `histogram_quantile` lands within 5 % of the summary's percentiles.
pub(crate) fn bounds() -> &'static [f64] {
    static B: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let mut v = Vec::new();
        let mut b = 25e-6;
        while b < 150.0 {
            v.push((b * 1e9f64).round() / 1e9);
            b *= 1.05;
        }
        v
    })
}

/// What the families need to know of a group.
#[derive(Debug, Clone)]
struct GroupView {
    name: String,
    /// A mix's kinds (their rows), or the group's one operation.
    kinds: Vec<OpName>,
    mixed: bool,
    rate: Option<f64>,
}

/// The run's labels, and the families as the last update left them.
struct State {
    base: Vec<(&'static str, String)>,
    groups: Vec<GroupView>,
    families: Arc<Vec<Family>>,
    resources: Arc<Vec<Family>>,
    /// Bumped at each update; the endpoint notes which one it last served.
    version: u64,
}

/// The live metrics of a run: updated by the recorder and the sampler, read by the endpoint
/// and the pusher.
#[derive(Clone)]
pub struct Exporter {
    state: Arc<Mutex<State>>,
    active: Arc<Vec<AtomicU32>>,
    served: Arc<AtomicU64>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Exporter {
    /// For `plan`'s groups, labelled `run` (the run directory's name) and `part` (a part's).
    pub fn new(plan: &RunPlan, run: &str, active: Arc<Vec<AtomicU32>>) -> Exporter {
        let mut base = vec![("run", run.to_string())];
        if let Some(p) = &plan.part {
            base.push(("part", p.part.to_string()));
        }
        let groups = plan
            .groups()
            .map(|g| GroupView {
                name: g.name.clone(),
                kinds: if g.mix.is_empty() {
                    vec![g.op.kind()]
                } else {
                    g.mix.iter().map(|(s, _)| s.kind()).collect()
                },
                mixed: !g.mix.is_empty(),
                rate: g.rate,
            })
            .collect();
        let e = Exporter {
            state: Arc::new(Mutex::new(State {
                base,
                groups,
                families: Arc::default(),
                resources: Arc::default(),
                version: 0,
            })),
            active,
            served: Arc::new(AtomicU64::new(0)),
        };
        e.update(&vec![GroupMetrics::default(); plan.groups().count()]);
        e
    }

    /// The users' counts of a new repetition's recorder.
    pub(crate) fn with_active(&self, active: Arc<Vec<AtomicU32>>) -> Exporter {
        Exporter {
            state: Arc::clone(&self.state),
            active,
            served: Arc::clone(&self.served),
        }
    }

    /// Every family now, the groups' then the sampler's.
    pub fn families(&self) -> Vec<Family> {
        self.snapshot().0
    }

    /// The families and the update they are from, read together.
    fn snapshot(&self) -> (Vec<Family>, u64) {
        let (groups, resources, version) = {
            let st = lock(&self.state);
            (
                Arc::clone(&st.families),
                Arc::clone(&st.resources),
                st.version,
            )
        };
        let all = groups.iter().chain(resources.iter()).cloned().collect();
        (all, version)
    }

    /// The run's totals so far, by group plan index.
    pub fn update(&self, totals: &[GroupMetrics]) {
        let active: Vec<u32> = self
            .active
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        let (base, groups) = {
            let st = lock(&self.state);
            (st.base.clone(), st.groups.clone())
        };
        // Built outside the lock: a scrape never waits for it.
        let families = Arc::new(group_families(&base, &groups, totals, &active));
        let mut st = lock(&self.state);
        st.families = families;
        st.version += 1;
    }

    /// The sampler's newest row.
    pub(crate) fn resources(&self, row: &ResourceRow) {
        let base = lock(&self.state).base.clone();
        let families = Arc::new(resource_families(&base, row));
        lock(&self.state).resources = families;
    }

    /// Serves `/metrics` on `addr` until the returned endpoint is stopped. A port that cannot
    /// be had is a usage error (nothing has run yet).
    pub(crate) fn serve(&self, addr: SocketAddr) -> Result<Endpoint, Error> {
        let router = axum::Router::new()
            // Any method, as the endpoint always answered.
            .route("/metrics", axum::routing::any(scrape))
            .fallback(|| async {
                (
                    axum::http::StatusCode::NOT_FOUND,
                    "mongo-stress: the metrics are at /metrics\n",
                )
            })
            .with_state(self.clone());
        let served = crate::serve::serve(addr, router, "metrics-endpoint").map_err(|e| {
            Error::Usage(format!(
                "--metrics-listen {addr}: cannot listen there ({e})\n  fix: choose a free port (e.g. --metrics-listen 127.0.0.1:9464), or stop what holds port {}",
                addr.port()
            ))
        })?;
        Ok(Endpoint {
            addr: served.addr,
            served,
            exporter: self.clone(),
        })
    }
}

/// `GET /metrics`: Prometheus's text format, or OpenMetrics when the scraper asks for it.
async fn scrape(
    axum::extract::State(me): axum::extract::State<Exporter>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    let om = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let (families, version) = me.snapshot();
    let (body, ctype) = if om {
        (
            text::openmetrics(&families),
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )
    } else {
        (
            text::prometheus(&families),
            "text/plain; version=0.0.4; charset=utf-8",
        )
    };
    // Counted as served once handed over: a scraper that asked has it.
    me.served.fetch_max(version, Ordering::Relaxed);
    ([(axum::http::header::CONTENT_TYPE, ctype)], body).into_response()
}

/// The scrape endpoint of a run.
pub struct Endpoint {
    served: crate::serve::Served,
    exporter: Exporter,
    pub addr: SocketAddr,
}

/// The longest the endpoint waits, after the run, for a scrape of its final numbers.
pub(crate) const LINGER: Duration = Duration::from_secs(3);

impl Endpoint {
    /// Closes the endpoint once a scrape has seen the final numbers, or after `LINGER`.
    pub(crate) fn close(self) {
        let last = lock(&self.exporter.state).version;
        let deadline = Instant::now() + LINGER;
        while self.exporter.served.load(Ordering::Relaxed) < last && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.served.close();
    }
}

/// `--metrics-listen`'s address: `HOST:PORT`, or a port alone (then on loopback).
pub(crate) fn listen_address(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let with_host = if s.parse::<u16>().is_ok() {
        format!("127.0.0.1:{s}")
    } else if let Some(p) = s.strip_prefix(':') {
        format!("127.0.0.1:{p}")
    } else {
        s.to_string()
    };
    use std::net::ToSocketAddrs;
    with_host
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            format!(
                "`{s}` is not an address to listen on; give HOST:PORT (127.0.0.1:9464) or a port"
            )
        })
}

/// `--metrics-push`'s URL: http(s), with a host.
pub(crate) fn check_push_url(url: &str) -> Result<(), String> {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url
            .parse::<ureq::http::Uri>()
            .ok()
            .is_some_and(|u| u.host().is_some_and(|h| !h.is_empty()));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not an http(s) URL of a Prometheus remote-write endpoint; give e.g. http://prometheus:9090/api/v1/write",
            crate::monitor::scrape::shown(url)
        ))
    }
}

fn labels(
    base: &[(&'static str, String)],
    more: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    let mut l = base.to_vec();
    l.extend(more.iter().map(|(k, v)| (*k, v.to_string())));
    l
}

fn family(name: &'static str, help: &'static str, kind: Kind, samples: Vec<Sample>) -> Family {
    Family {
        name,
        help,
        kind,
        unit: if name.ends_with("_seconds") {
            "seconds"
        } else {
            ""
        },
        samples,
    }
}

fn histogram(
    out: &mut Vec<Sample>,
    l: &[(&'static str, String)],
    t: &crate::metrics::Timing,
    n: u64,
) {
    let b = bounds();
    let mut counts = vec![0u64; b.len()];
    let mut over = 0u64;
    for v in t.hist.iter_recorded() {
        let secs = crate::num::real(v.value_iterated_to()) / 1e6;
        // The first bound at or above it (the buckets are sorted).
        match b.partition_point(|x| *x < secs) {
            i if i < b.len() => counts[i] += v.count_at_value(),
            _ => over += v.count_at_value(),
        }
    }
    let _ = over;
    let mut cum = 0u64;
    for (i, c) in counts.iter().enumerate() {
        cum += c;
        let mut l = l.to_vec();
        l.push(("le", format!("{}", b[i])));
        out.push(Sample {
            suffix: "_bucket",
            labels: l,
            value: crate::num::real(cum),
        });
    }
    let mut inf = l.to_vec();
    inf.push(("le", "+Inf".into()));
    out.push(Sample {
        suffix: "_bucket",
        labels: inf,
        value: crate::num::real(n),
    });
    out.push(Sample {
        suffix: "_sum",
        labels: l.to_vec(),
        // A sum of microseconds beyond 2^53 (285 years of them) is rounded to the nearest
        // double, as Prometheus holds it anyway.
        value: crate::num::real(u64::try_from(t.sum_us).unwrap_or(u64::MAX)) / 1e6,
    });
    out.push(Sample {
        suffix: "_count",
        labels: l.to_vec(),
        value: crate::num::real(n),
    });
}

/// A group's operations by kind and outcome (`ok`, `error`).
fn outcomes(
    base: &[(&'static str, String)],
    g: &GroupView,
    m: &GroupMetrics,
    ops: &mut Vec<Sample>,
) {
    let none = GroupMetrics::default();
    for k in &g.kinds {
        let km = if g.mixed {
            m.kinds.get(k).unwrap_or(&none)
        } else {
            m
        };
        let kind = k.to_string();
        for (outcome, v) in [("ok", km.samples - km.errors), ("error", km.errors)] {
            ops.push(Sample {
                suffix: "_total",
                labels: labels(
                    base,
                    &[("group", &g.name), ("kind", &kind), ("outcome", outcome)],
                ),
                value: crate::num::real(v),
            });
        }
    }
}

/// A group's documents returned, inserted, updated, upserted and deleted.
fn documents(
    base: &[(&'static str, String)],
    g: &GroupView,
    m: &GroupMetrics,
    docs: &mut Vec<Sample>,
) {
    let d = &m.docs;
    for (what, n) in [
        ("returned", d.returned),
        ("inserted", d.inserted),
        ("updated", d.updated),
        ("upserted", d.upserted),
        ("deleted", d.deleted),
    ] {
        docs.push(Sample {
            suffix: "_total",
            labels: labels(base, &[("group", &g.name), ("what", what)]),
            value: crate::num::real(n),
        });
    }
}

fn group_families(
    base: &[(&'static str, String)],
    groups: &[GroupView],
    totals: &[GroupMetrics],
    active: &[u32],
) -> Vec<Family> {
    let none = GroupMetrics::default();
    let (mut ops, mut errs, mut lat, mut svc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut users, mut rate, mut late, mut docs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, g) in groups.iter().enumerate() {
        let m = totals.get(i).unwrap_or(&none);
        let gl = labels(base, &[("group", &g.name)]);
        outcomes(base, g, m, &mut ops);
        for (class, n) in &m.errors_by_class {
            errs.push(Sample {
                suffix: "_total",
                labels: labels(base, &[("group", &g.name), ("class", class.as_str())]),
                value: crate::num::real(*n),
            });
        }
        histogram(&mut lat, &gl, &m.latency, m.samples);
        if g.rate.is_some() {
            histogram(&mut svc, &gl, &m.service, m.samples);
        }
        users.push(Sample {
            suffix: "",
            labels: gl.clone(),
            value: f64::from(active.get(i).copied().unwrap_or(0)),
        });
        if let Some(r) = g.rate {
            rate.push(Sample {
                suffix: "",
                labels: gl.clone(),
                value: r,
            });
        }
        late.push(Sample {
            suffix: "_total",
            labels: gl.clone(),
            value: crate::num::real(m.late),
        });
        documents(base, g, m, &mut docs);
    }
    let mut f = vec![
        family("mongo_stress_operations", "Operations completed, by group, kind and outcome (warm-up excluded), as the summary's # Samples.", Kind::Counter, ops),
        family("mongo_stress_errors", "Failed operations by error class, as the summary's failures.", Kind::Counter, errs),
        family("mongo_stress_latency_seconds", "Latency as reported (from the intended start in open loop).", Kind::Histogram, lat),
    ];
    if !svc.is_empty() {
        f.push(family(
            "mongo_stress_service_seconds",
            "Service time, from the actual start (open loop).",
            Kind::Histogram,
            svc,
        ));
    }
    f.push(family(
        "mongo_stress_users",
        "Virtual users running.",
        Kind::Gauge,
        users,
    ));
    if !rate.is_empty() {
        f.push(family(
            "mongo_stress_target_rate",
            "The operations per second an open-loop group is to offer.",
            Kind::Gauge,
            rate,
        ));
    }
    f.push(family(
        "mongo_stress_late_operations",
        "Open-loop operations started after they were due (every user busy).",
        Kind::Counter,
        late,
    ));
    f.push(family(
        "mongo_stress_documents",
        "Documents the operations returned, inserted, updated, upserted, deleted.",
        Kind::Counter,
        docs,
    ));
    f
}

fn resource_families(base: &[(&'static str, String)], r: &ResourceRow) -> Vec<Family> {
    let g = |name: &'static str, help: &'static str, v: Option<f64>| {
        v.map(|v| {
            family(
                name,
                help,
                Kind::Gauge,
                vec![Sample {
                    suffix: "",
                    labels: base.to_vec(),
                    value: v,
                }],
            )
        })
    };
    // In base units, as Prometheus names them: CPU in cores, bytes, seconds.
    let scaled = |v: Option<f64>, by: f64| v.map(|v| v * by);
    let mut out: Vec<Family> = [
        g(
            "mongo_stress_server_cpu_cores",
            "The server process's CPU, in cores (the sampler's last second).",
            scaled(r.server_cpu_pct, 0.01),
        ),
        g(
            "mongo_stress_server_disk_operations_per_second",
            "Reads and writes completed per second on the server's data device (IOPS).",
            r.iops,
        ),
        g(
            "mongo_stress_server_disk_write_bytes_per_second",
            "The server process's writes to storage, bytes per second.",
            scaled(r.disk_write_kbs, 1024.0),
        ),
        g(
            "mongo_stress_server_cache_used_bytes",
            "WiredTiger cache in use, bytes.",
            scaled(r.cache_used_mb, 1_048_576.0),
        ),
        g(
            "mongo_stress_server_connections",
            "The server's open connections.",
            r.connections,
        ),
        g(
            "mongo_stress_client_cpu_cores",
            "The tool's own CPU, in cores.",
            scaled(r.client_cpu_pct, 0.01),
        ),
        g(
            "mongo_stress_client_wait_seconds_per_second",
            "Time the tool's threads waited to run, seconds per second.",
            scaled(r.health.wait_ms, 0.001),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let ops: Vec<Sample> = crate::monitor::OPCOUNTERS
        .iter()
        .zip(r.ops_s)
        .filter_map(|(op, v)| {
            v.map(|v| Sample {
                suffix: "",
                labels: labels(base, &[("op", op)]),
                value: v,
            })
        })
        .collect();
    if !ops.is_empty() {
        out.push(family(
            "mongo_stress_server_operations_per_second",
            "serverStatus opcounters per second, by operation.",
            Kind::Gauge,
            ops,
        ));
    }
    out
}

/// A run's live metrics: the exporter (serving `/metrics`, if listening) and the pusher.
#[derive(Clone)]
pub struct Live {
    pub(crate) exporter: Exporter,
    pub(crate) pusher: Option<Arc<push::Pusher>>,
}

/// Hands the recorder's totals to the exporter at the end of each interval and at the end,
/// and offers them to the pusher.
pub(crate) struct Feed(pub Live);

impl Feed {
    /// For one repetition's recorder, with its users' counts.
    pub(crate) fn new(live: &Live, active: Arc<Vec<AtomicU32>>) -> Feed {
        Feed(Live {
            exporter: live.exporter.with_active(active),
            pusher: live.pusher.clone(),
        })
    }
}

impl Output for Feed {
    fn name(&self) -> &'static str {
        "the live metrics"
    }

    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        if let RunEvent::Interval(closed) | RunEvent::End(closed) = event {
            self.0.exporter.update(closed.totals);
            if let Some(p) = &self.0.pusher {
                p.offer(self.0.exporter.families());
            }
        }
        Flow::More
    }
}

/// `resources.tsv`'s writer, with each row shown to the exporter too.
pub(crate) struct Tee(pub Box<dyn RowSink>, pub Exporter);

impl RowSink for Tee {
    fn write(&mut self, row: &ResourceRow) -> std::io::Result<()> {
        self.1.resources(row);
        self.0.write(row)
    }

    fn name(&self) -> String {
        self.0.name()
    }
}

#[cfg(test)]
mod tests;
