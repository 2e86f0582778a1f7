//! The resource sampler: once a second, the server process's CPU, memory and disk I/O and the
//! IOPS of its data device (`local`, when the server runs on this machine), the tool's own CPU,
//! memory and health (`health`: waits to run, throttling, runtime lag), `serverStatus` over
//! the wire (`status`), and each `--server-metrics` exporter on the server hosts (`scrape`,
//! `node`), all read at once, each with its own time limit. Each row goes to a `RowSink` (the
//! `resources.tsv` writer) as it is taken, and is kept for the resource summary.
//!
//! Owns: taking rows. Never: formats them (the sink does) or blocks the async runtime (local
//! reads, scrapes and the sink's writes run on the blocking pool).

pub(crate) mod health;
pub(crate) mod local;
pub(crate) mod members;
pub(crate) mod node;
pub(crate) mod row;
pub(crate) mod scrape;
pub(crate) mod status;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::panic_message;
use local::Local;
pub(crate) use row::{HostRow, ResourceRow, HOST_COLUMNS, OPCOUNTERS};
use scrape::Scraper;

pub(crate) const PERIOD: Duration = Duration::from_secs(1);

/// A member's last row, at stop, is written only when it spans at least this long: a rate over
/// a few milliseconds of whole counters says more about the counters' grain than the member
/// (15 operations a second read over 30 ms is 0 or 33). Its events and warnings are kept.
const SHORTEST_MEMBER_ROW: Duration = Duration::from_millis(250);

/// Where each row goes as it is taken.
pub trait RowSink: Send {
    /// Writes one row; an error stops the writing (the rows are still kept).
    fn write(&mut self, row: &ResourceRow) -> std::io::Result<()>;
    /// What the sink writes to, for error messages.
    fn name(&self) -> String;
}

/// What to watch.
pub struct Target {
    pub(crate) client: mongodb::Client,
    /// The local server process, when known: a cell, as a restarted embedded server's pid
    /// changes and the sampler follows it.
    pub(crate) server_pid: Option<Arc<std::sync::atomic::AtomicU32>>,
    /// The loopback port the server process was found listening on (`--uri` to a local
    /// server, no `--server-pid`): when that process is gone, the one listening there next (a
    /// restart) is sampled instead.
    pub(crate) server_port: Option<u16>,
    /// Its data directory, when known, for the device's IOPS.
    pub(crate) data_dir: Option<PathBuf>,
    /// Prometheus exporter endpoints on the server hosts (`--server-metrics`).
    pub(crate) server_metrics: Vec<String>,
    /// The fault going on, for each row's `fault` column.
    pub(crate) events: Arc<EventMark>,
    /// A replica set's or cluster's members, each sampled on its own (`members.tsv`); none
    /// with `--no-members`.
    pub(crate) members: Option<members::MembersTarget>,
}

/// The fault going on now, and the last one begun since the sampler last looked: a row
/// names a fault that went on in any part of its interval.
#[derive(Debug, Default)]
pub(crate) struct EventMark(Mutex<(Option<&'static str>, Option<&'static str>)>);

impl EventMark {
    pub(crate) fn begin(&self, what: &'static str) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *m = (Some(what), Some(what));
    }

    pub(crate) fn end(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).0 = None;
    }

    /// What a row covering the time since the last call names.
    pub(crate) fn take(&self) -> Option<&'static str> {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.1.take().or(m.0)
    }
}

/// The rows the sink could not take, and what went wrong while taking or writing them. Rows
/// the sink took are in its file (`resources.tsv`), read back from there for the summary, so a
/// long run holds no row in memory; from a failed write on, the rows are kept here instead, so
/// nothing measured is lost.
#[derive(Debug, Default)]
pub struct Sampled {
    pub(crate) unwritten: Vec<ResourceRow>,
    pub(crate) failures: Vec<String>,
    /// How each `--server-metrics` endpoint answered.
    pub(crate) sources: Vec<MetricsSource>,
    /// The members' rows the sink could not take, the topology's events and the members'
    /// warnings (each said once).
    pub(crate) members_unwritten: Vec<members::MemberRow>,
    pub(crate) topology: Vec<members::TopologyEvent>,
    pub(crate) member_warnings: Vec<String>,
    /// Where the topology's events and the members' warnings are told while a run goes
    /// (`Sampler::tell`): its recorder's outputs.
    pub(crate) tell: Option<crate::metrics::Notify>,
}

impl Sampled {
    /// Says a warning about the members at once and keeps it for the summary: while a run's
    /// stages go, through its recorder (the console's lines print it, above the bars on a
    /// terminal); else on stderr.
    fn warn_now(&mut self, w: String) {
        let told = self
            .tell
            .as_ref()
            .is_some_and(|t| t.send(crate::metrics::Notice::Warning(w.clone())).is_ok());
        if !told {
            errln!("warning: {w}");
        }
        self.member_warnings.push(w);
    }
}

/// How one `--server-metrics` endpoint answered over the run (for the summary's note).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetricsSource {
    /// The URL, password hidden.
    pub(crate) url: String,
    /// host:port, the suffix of its `resources.tsv` columns.
    pub(crate) host: String,
    /// Seconds asked, and of them those answered within 500 ms with an exporter's page.
    pub(crate) seconds: u64,
    pub(crate) answered: u64,
    /// The first thing that went wrong, if anything.
    pub(crate) problem: Option<String>,
}

/// The running sampler; rows can be read while it runs.
pub struct Sampler {
    shared: Arc<Mutex<Sampled>>,
    stop: CancellationToken,
    task: JoinHandle<()>,
    /// When the last whole round began (epoch ms): each round's rows are in once it is sent.
    rounds: tokio::sync::watch::Receiver<u64>,
    /// Whether it reads the members of a replica set or cluster (`members.tsv`).
    members: bool,
}

/// How long a run waits for the sampler's first round after its end before it is judged on
/// what was read by then (a member that does not answer holds a round up to its time limit).
pub(crate) const ROUND_AFTER_END: Duration = Duration::from_secs(5);

fn lock(m: &Mutex<Sampled>) -> std::sync::MutexGuard<'_, Sampled> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sampler {
    pub fn start(target: Target, sink: Box<dyn RowSink>) -> Sampler {
        let shared = Arc::new(Mutex::new(Sampled::default()));
        let stop = CancellationToken::new();
        let members = target.members.is_some();
        let (round, rounds) = tokio::sync::watch::channel(0);
        let task = tokio::spawn(sample(
            target,
            sink,
            Arc::clone(&shared),
            stop.clone(),
            round,
        ));
        Sampler {
            shared,
            stop,
            task,
            rounds,
            members,
        }
    }

    /// Waits for the sampler's first round that began after a run's end (`end_ms`, epoch
    /// ms): the member rows a run counts reach half a second past its end and its topology
    /// events a second (`summary::members::of_run`), and with rounds a second apart no later
    /// round holds one (a chunk migration committed in that second but read later is the
    /// exception). At once with `--no-members` or when the sampler has ended; false when it
    /// gave up after `ROUND_AFTER_END` (the run is then judged on what was read). Ctrl-C does
    /// not cut it short: the wait is a second or so (`ROUND_AFTER_END` at most, when a member
    /// does not answer), and an interrupted run is judged whole.
    pub(crate) async fn through(&self, end_ms: u64) -> bool {
        if !self.members {
            return true;
        }
        let mut rounds = self.rounds.clone();
        tokio::select! {
            _ = rounds.wait_for(|&began| began > end_ms) => true,
            () = tokio::time::sleep(ROUND_AFTER_END) => false,
        }
    }

    /// The rows taken so far that the sink could not take (after it failed).
    pub(crate) fn unwritten(&self) -> Vec<ResourceRow> {
        lock(&self.shared).unwritten.clone()
    }

    /// The members' rows so far that their sink could not take, and the topology's events.
    pub(crate) fn members_so_far(&self) -> (Vec<members::MemberRow>, Vec<members::TopologyEvent>) {
        let s = lock(&self.shared);
        (s.members_unwritten.clone(), s.topology.clone())
    }

    /// Tells the topology's events and the members' warnings as they are seen to a run's
    /// recorder (`notify`), until told another or none.
    pub(crate) fn tell(&self, notify: Option<crate::metrics::Notify>) {
        lock(&self.shared).tell = notify;
    }

    /// A warning about the members, said with the sampler's own.
    pub(crate) fn warn(&self, warning: String) {
        lock(&self.shared).member_warnings.push(warning);
    }

    /// Stops sampling; returns every row taken and every failure.
    pub async fn stop(self) -> Sampled {
        self.stop.cancel();
        if let Err(e) = self.task.await {
            if e.is_panic() {
                lock(&self.shared).failures.push(format!(
                    "the resource sampler panicked: {}",
                    panic_message(e.into_panic().as_ref())
                ));
            }
        }
        std::mem::take(&mut *lock(&self.shared))
    }
}

async fn sample(
    target: Target,
    sink: Box<dyn RowSink>,
    shared: Arc<Mutex<Sampled>>,
    stopped: CancellationToken,
    round: tokio::sync::watch::Sender<u64>,
) {
    let (pid, dir, port) = (
        target.server_pid.clone(),
        target.data_dir.clone(),
        target.server_port,
    );
    let mut local =
        match tokio::task::spawn_blocking(move || Local::new(pid, dir.as_deref()).following(port))
            .await
        {
            Ok(l) => {
                l.health.start_heartbeat(stopped.clone());
                Some(l)
            }
            Err(e) => {
                lock(&shared).failures.push(format!(
                    "the resource sampler's local readings could not start: {}",
                    join_error(e)
                ));
                None
            }
        };
    let mut sink = Some(sink);
    let mut members = MemberWatch {
        pending: target.members,
        ..Default::default()
    };
    members.start_finding(&target.client);
    let mut status = status::Status::default();
    let mut scrapers: Vec<Option<Scraper>> = target
        .server_metrics
        .iter()
        .map(|u| Some(Scraper::new(u)))
        .collect();
    let hosts: Vec<Arc<str>> = target
        .server_metrics
        .iter()
        .map(|u| scrape::host_of(u).into())
        .collect();
    // The first reading only primes the counters (rates need two).
    let mut last_at = Instant::now();
    let mut primer = read_local(&mut local, ResourceRow::default(), 1.0, &shared).await;
    // The members are found (and their counters primed) beside the server's first reading.
    tokio::join!(
        status.read(&target.client, &mut primer, 1.0),
        members.found(&shared, true)
    );
    scrape_all(&mut scrapers, &hosts, &shared, true).await;
    let mut tick = tokio::time::interval_at(Instant::now() + PERIOD, PERIOD);
    // After a slow round the next comes a period later, never at once: rounds stay a second
    // apart (a run's members are those of the first round after its end, see `through`).
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // On stop, one last row covers the time since the previous one.
        let last = tokio::select! {
            _ = tick.tick() => false,
            _ = stopped.cancelled() => true,
        };
        let now = Instant::now();
        let elapsed = now.duration_since(last_at);
        let secs = elapsed.as_secs_f64().max(1e-3);
        last_at = now;
        let began = row_time();
        let row = ResourceRow {
            time_ms: began,
            interval_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            ..Default::default()
        };
        let mut row = read_local(&mut local, row, secs, &shared).await;
        row.fault = target.events.take().map(str::to_string);
        // serverStatus and the exporters' pages at once, each with its own time limit.
        let scraped = scrape_all(&mut scrapers, &hosts, &shared, false);
        let ((), host_rows, ()) = tokio::join!(
            status.read(&target.client, &mut row, secs),
            scraped,
            members.tick(
                &target.client,
                &shared,
                !(last && elapsed < SHORTEST_MEMBER_ROW)
            )
        );
        row.hosts = host_rows;
        write_row(&mut sink, &row, &shared).await;
        if sink.is_none() {
            lock(&shared).unwritten.push(row);
        }
        round.send_replace(began);
        if last {
            break;
        }
    }
    lock(&shared).sources = sources(&scrapers, &target.server_metrics);
}

/// How each `--server-metrics` endpoint answered over the run.
fn sources(scrapers: &[Option<Scraper>], urls: &[String]) -> Vec<MetricsSource> {
    scrapers
        .iter()
        .zip(urls)
        .map(|(s, url)| match s {
            Some(s) => MetricsSource {
                url: s.shown(),
                host: s.host().to_string(),
                seconds: s.asked,
                answered: s.answered,
                problem: s.problem.clone(),
            },
            None => MetricsSource {
                url: scrape::shown(url),
                host: scrape::host_of(url),
                seconds: 0,
                answered: 0,
                problem: Some("its scraper failed".into()),
            },
        })
        .collect()
}

/// The members being watched: found at the start (and, when that fails, again every 10 s on a
/// task of its own, so a set without an answering member holds up no second), then sampled
/// each second into their sink.
#[derive(Default)]
struct MemberWatch {
    /// What to watch, while it is not found.
    pending: Option<members::MembersTarget>,
    finding: Option<Finding>,
    members: Option<members::Members>,
    sink: Option<Box<dyn members::MemberSink>>,
    ticks: u64,
    said: bool,
}

/// A discovery going on: what it was given back, and what it found.
type Finding = JoinHandle<(
    members::MembersTarget,
    Result<Option<members::Members>, String>,
)>;

/// How often a discovery that failed is tried again, in sampled seconds.
const FIND_AGAIN_EVERY: u64 = 10;

impl MemberWatch {
    fn start_finding(&mut self, client: &mongodb::Client) {
        let Some(t) = self.pending.take() else { return };
        let client = client.clone();
        self.finding = Some(tokio::spawn(async move {
            let found = members::Members::discover(&client, &t.options).await;
            (t, found)
        }));
    }

    /// Takes in a discovery that ended (`wait`: waits for it): its members' counters primed,
    /// or one warning when it failed (it is tried again).
    async fn found(&mut self, shared: &Mutex<Sampled>, wait: bool) {
        if !wait && !self.finding.as_ref().is_some_and(|f| f.is_finished()) {
            return;
        }
        let Some(finding) = self.finding.take() else {
            return;
        };
        let Ok((target, found)) = finding.await else {
            return;
        };
        match found {
            Ok(Some(mut m)) => {
                // Primes each member's counters, as `primer` does the server's.
                m.tick().await;
                let mut s = lock(shared);
                for w in m.take_warnings() {
                    s.warn_now(w);
                }
                drop(s);
                self.members = Some(m);
                self.sink = Some(target.sink);
            }
            // A standalone server: no members.
            Ok(None) => {}
            Err(e) => {
                if !self.said {
                    self.said = true;
                    let w = format!("members: not found yet: {e}; looked for again every {FIND_AGAIN_EVERY} s, the run goes on");
                    lock(shared).warn_now(w);
                }
                self.pending = Some(target);
            }
        }
    }

    /// One second: every member's row to the sink (unless `rows` is false), the events and
    /// warnings kept.
    async fn tick(&mut self, client: &mongodb::Client, shared: &Mutex<Sampled>, rows: bool) {
        self.ticks += 1;
        let Some(m) = self.members.as_mut() else {
            self.found(shared, false).await;
            if self.pending.is_some() && self.ticks.is_multiple_of(FIND_AGAIN_EVERY) {
                self.start_finding(client);
            }
            return;
        };
        let (read, events) = m.tick().await;
        let warnings = m.take_warnings();
        if rows {
            write_members(&mut self.sink, read, shared).await;
        }
        let mut s = lock(shared);
        if let Some(tell) = &s.tell {
            for e in &events {
                let _ = tell.send(crate::metrics::Notice::Member {
                    time_us: e.time_ms * 1000,
                    detail: e.detail.clone(),
                });
            }
        }
        s.topology.extend(events);
        for w in warnings {
            s.warn_now(w);
        }
    }
}

/// Hands a second's member rows to their sink on the blocking pool; after a failure the rows
/// are kept in memory.
async fn write_members(
    sink: &mut Option<Box<dyn members::MemberSink>>,
    rows: Vec<members::MemberRow>,
    shared: &Mutex<Sampled>,
) {
    let Some(mut s) = sink.take() else {
        lock(shared).members_unwritten.extend(rows);
        return;
    };
    match tokio::task::spawn_blocking(move || {
        let result = s.write(&rows);
        (s, rows, result)
    })
    .await
    {
        Ok((s, _, Ok(()))) => *sink = Some(s),
        Ok((s, rows, Err(e))) => {
            let message = format!(
                "writing {} failed: {e}; it is incomplete from here on (the member summary is not)",
                s.name()
            );
            errln!("error: {message}");
            let mut sh = lock(shared);
            sh.failures.push(message);
            sh.members_unwritten.extend(rows);
        }
        Err(e) => lock(shared)
            .failures
            .push(format!("the members.tsv writer failed: {}", join_error(e))),
    }
}

/// One page from every exporter, each on the blocking pool with its own 500 ms limit; a row
/// per host, empty for those that did not answer. The first problem of each source is printed
/// once; `primer` readings only start the counters.
async fn scrape_all(
    scrapers: &mut [Option<Scraper>],
    hosts: &[Arc<str>],
    shared: &Mutex<Sampled>,
    primer: bool,
) -> Vec<HostRow> {
    let handles: Vec<_> = scrapers
        .iter_mut()
        .map(|s| {
            s.take().map(|mut s| {
                tokio::task::spawn_blocking(move || {
                    let (row, problem) = s.scrape(!primer);
                    (s, row, problem)
                })
            })
        })
        .collect();
    let mut rows = Vec::with_capacity(hosts.len());
    for ((slot, handle), host) in scrapers.iter_mut().zip(handles).zip(hosts) {
        let empty = || HostRow {
            host: Arc::clone(host),
            kind: "node_exporter",
            values: Default::default(),
        };
        let Some(handle) = handle else {
            rows.push(empty());
            continue;
        };
        match handle.await {
            Ok((s, row, problem)) => {
                if let Some(p) = problem {
                    errln!(
                        "warning: server metrics from {}: {p}; its columns show - while it does not answer (said once)",
                        s.shown()
                    );
                }
                *slot = Some(s);
                rows.push(row);
            }
            Err(e) => {
                lock(shared)
                    .failures
                    .push(format!("the scraper of {host} failed: {}", join_error(e)));
                rows.push(empty());
            }
        }
    }
    rows
}

async fn read_local(
    local: &mut Option<Local>,
    row: ResourceRow,
    secs: f64,
    shared: &Mutex<Sampled>,
) -> ResourceRow {
    let Some(mut l) = local.take() else {
        return row;
    };
    let blank = ResourceRow {
        time_ms: row.time_ms,
        interval_ms: row.interval_ms,
        ..Default::default()
    };
    let mut row = row;
    match tokio::task::spawn_blocking(move || {
        l.read(&mut row, secs);
        (l, row)
    })
    .await
    {
        Ok((l, row)) => {
            *local = Some(l);
            row
        }
        Err(e) => {
            lock(shared).failures.push(format!(
                "the resource sampler's local readings failed: {}",
                join_error(e)
            ));
            blank
        }
    }
}

/// Hands `row` to the sink on the blocking pool; after a failure the sink is dropped (the rows
/// are then kept in memory for the summary) and the failure is reported at once and at the end.
async fn write_row(
    sink: &mut Option<Box<dyn RowSink>>,
    row: &ResourceRow,
    shared: &Mutex<Sampled>,
) {
    let Some(mut s) = sink.take() else { return };
    let r = row.clone();
    match tokio::task::spawn_blocking(move || {
        let result = s.write(&r);
        (s, result)
    })
    .await
    {
        Ok((s, Ok(()))) => *sink = Some(s),
        Ok((s, Err(e))) => {
            let message = format!(
                "writing {} failed: {e}; it is incomplete from here on (the resource summary is not)",
                s.name()
            );
            errln!("error: {message}");
            lock(shared).failures.push(message);
        }
        Err(e) => lock(shared).failures.push(format!(
            "the resources.tsv writer failed: {}",
            join_error(e)
        )),
    }
}

fn join_error(e: tokio::task::JoinError) -> String {
    if e.is_panic() {
        panic_message(e.into_panic().as_ref())
    } else {
        e.to_string()
    }
}

fn row_time() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Broken;
    impl RowSink for Broken {
        fn write(&mut self, _: &ResourceRow) -> std::io::Result<()> {
            Err(std::io::Error::other("disk full"))
        }
        fn name(&self) -> String {
            "resources.tsv".into()
        }
    }

    #[tokio::test]
    async fn a_failed_write_is_reported_and_the_rows_are_kept() {
        // No server listens there: serverStatus fails fast, the local readings go on.
        let client = mongodb::Client::with_uri_str(
            "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100&connectTimeoutMS=100",
        )
        .await
        .unwrap();
        let target = Target {
            client,
            server_pid: None,
            server_port: None,
            data_dir: None,
            server_metrics: Vec::new(),
            events: Default::default(),
            members: None,
        };
        let sampler = Sampler::start(target, Box::new(Broken));
        tokio::time::sleep(PERIOD + Duration::from_millis(300)).await;
        let sampled = sampler.stop().await;
        assert!(!sampled.unwritten.is_empty());
        assert!(sampled.unwritten.iter().all(|r| r.client_cpu_pct.is_some()));
        assert_eq!(sampled.failures.len(), 1, "{:?}", sampled.failures);
        assert!(sampled.failures[0].contains("writing resources.tsv failed: disk full"));
    }
}
