//! The live page (`--live`, `--live-control`, `--live-token`): the run served as report.html
//! growing, while it goes. `GET /` the page (`report::html::render_live`, the report's own
//! drawing fed by the stream), `GET /events` server-sent events (the current run's history,
//! then each new event), `GET /api/run` the totals now; with `--live-control`,
//! `POST /api/groups/NAME` (`{"rate": R}` or `{"users": N}`) and `POST /api/stop`.
//!
//! The events are the interval records the run already keeps: each interval's histograms as the
//! recorder hands them to `latency.hlog` (their counts and percentiles, read with the function the
//! report reads the log with), the run's totals as rows (`summary::rows`, the summary's own), the
//! sampler's rows. They are made once per interval on the recorder's task, whatever the number of
//! viewers; each viewer's stream is a response body fed by its queue, and one that cannot
//! keep up is dropped (its page reconnects and is sent the history again), never waited for.
//!
//! Owns: the endpoint, the events and their history, who may watch and steer, and a change from
//! its request to the interval it takes effect at. Never: records samples, decides how a group
//! runs (`executor::steer` does), or writes the run directory.

mod events;
mod frames;
mod http;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::executor::steer::Steers;
use crate::metrics::Clock;
use crate::plan::RunPlan;
use crate::summary::Change;

pub use events::{Control, View};
pub(crate) use frames::PageHeader;
pub(crate) use http::Endpoint;

/// What the command line asked of the page.
#[derive(Clone)]
pub struct Options {
    pub addr: SocketAddr,
    /// `--live-control`: changes and the stop may be posted.
    pub control: bool,
    /// `--live-token`: every request must carry it (needed beyond loopback).
    pub token: Option<String>,
}

impl std::fmt::Debug for Options {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("addr", &self.addr)
            .field("control", &self.control)
            .field("token", &self.token.as_ref().map(|_| "****"))
            .finish()
    }
}

/// `--live`'s address: `HOST:PORT`, `:PORT` or a port alone (then on loopback); none: a free
/// port on loopback.
pub(crate) fn listen_address(s: Option<&str>) -> Result<SocketAddr, String> {
    match s.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(SocketAddr::from(([127, 0, 0, 1], 0))),
        Some(s) => crate::exporter::listen_address(s)
            .map_err(|e| format!("{e} (the profile goes before --live, or write --live=ADDR)")),
    }
}

impl Options {
    /// An address beyond loopback needs a token: anyone who reaches it could watch the run,
    /// and with `--live-control` steer or stop it.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(t) = &self.token {
            if t.len() < 8 || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err("--live-token must be at least 8 characters, without spaces".into());
            }
        }
        if !self.addr.ip().is_loopback() && self.token.is_none() {
            return Err(format!(
                "--live {} listens beyond this machine: anyone who reaches it could watch the run{}\n  fix: add --live-token T (the page is then opened with ?token=T), or listen on 127.0.0.1",
                self.addr,
                if self.control { ", and change or stop it" } else { "" }
            ));
        }
        Ok(())
    }
}

/// The page of one session: its runs' titles, and whether they may be changed.
#[derive(Clone)]
pub struct PageRun {
    pub(crate) page: Page,
    /// Shown above a run (a series' step: `step 3: 8 users`).
    pub(crate) title: Option<String>,
    /// A series' steps cannot be changed.
    pub(crate) steerable: bool,
}

/// A new viewer's history, and its queue of the events to come.
type Subscribed = (Vec<Arc<str>>, tokio::sync::mpsc::Receiver<Arc<str>>);

/// A viewer's queue of events: one that falls this far behind is dropped.
const VIEWER_QUEUE: usize = 1024;

/// The page of one command: its endpoint, and the current run's events.
#[derive(Clone)]
pub struct Page {
    inner: Arc<Inner>,
}

struct Inner {
    opts: Options,
    state: Mutex<State>,
    /// The command's stop (Ctrl-C's): `POST /api/stop` fires it.
    stop: CancellationToken,
    /// The address bound (its port when 0 was asked for).
    bound: std::sync::OnceLock<SocketAddr>,
    /// Event streams being written now, at most `http::MAX_VIEWERS`.
    streams: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct State {
    /// The current run's events, as sent (`event: NAME\ndata: JSON\n\n`).
    history: Vec<Arc<str>>,
    /// Where the last `state` is in the history (the only one kept).
    state_at: Option<usize>,
    viewers: Vec<tokio::sync::mpsc::Sender<Arc<str>>>,
    run: Option<RunNow>,
    /// Changes asked for, made at the next interval's end.
    pending: Vec<events::Pending>,
    /// Changes made in the current run.
    changes: Vec<Change>,
    /// `GET /api/run`: the last totals (none before the first interval).
    totals: Option<frames::Ordered<frames::RowTotals>>,
    /// The current run's stages so far.
    stages: Vec<StageNow>,
    /// The header each run's first event carries.
    header: Option<PageHeader>,
    /// The faults done so far, as `--fault` writes them (seconds from the run's base; `to` None
    /// while going on).
    faults: Vec<(String, f64, Option<f64>)>,
    ended: bool,
}

/// A stage of the run now: seconds from the run's base.
#[derive(Debug, Clone)]
struct StageNow {
    label: String,
    /// The profile's name of it (empty: a profile without stages).
    name: String,
    began: f64,
    /// After its warm-ups.
    start: f64,
    end: Option<f64>,
}

/// The run going on now: what a change needs.
struct RunNow {
    groups: Vec<events::GroupNow>,
    steer: Arc<dyn Steers>,
    /// The run's base: its events' times are seconds from it.
    base_us: u64,
    /// A series' steps cannot be steered (each step's load is the series').
    steerable: bool,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Page {
    /// Binds the endpoint (a port that cannot be had is a usage error: nothing has run yet)
    /// and says where the page is, without the token.
    pub fn serve(opts: Options, stop: CancellationToken) -> Result<(Page, http::Endpoint), Error> {
        // Its words name the option already (`--live ADDR ...`, `--live-token ...`).
        opts.check().map_err(Error::Usage)?;
        let page = Page {
            inner: Arc::new(Inner {
                opts,
                state: Mutex::default(),
                stop,
                bound: std::sync::OnceLock::new(),
                streams: Default::default(),
            }),
        };
        let endpoint = http::serve(&page)?;
        Ok((page, endpoint))
    }

    /// The header of the runs to come.
    pub(crate) fn set_header(&self, header: PageHeader) {
        lock(&self.inner.state).header = Some(header);
    }

    pub(crate) fn control(&self) -> bool {
        self.inner.opts.control
    }

    /// A new run begins (a repetition, or a series' step): the history starts again with it.
    /// `steerable`: its groups may be changed (with `--live-control`).
    pub fn begin_run(
        &self,
        plan: &RunPlan,
        title: Option<String>,
        (steer, clock, steerable): (Arc<dyn Steers>, Clock, bool),
    ) -> u64 {
        let base_us = clock.now_us();
        let groups = events::groups(plan);
        let header = lock(&self.inner.state).header.clone();
        let event = frames::PageEvent::Run(&frames::RunFrame {
            title,
            header,
            groups: groups.iter().flat_map(events::GroupNow::frames).collect(),
            stages: plan
                .stages
                .iter()
                .map(|s| frames::StageLabel {
                    label: plan.stage_label(s),
                })
                .collect(),
            control: self.inner.opts.control && steerable,
        })
        .frame();
        {
            let mut st = lock(&self.inner.state);
            st.history.clear();
            st.state_at = None;
            st.faults.clear();
            st.pending.clear();
            st.changes.clear();
            st.stages.clear();
            st.run = Some(RunNow {
                groups,
                steer,
                base_us,
                steerable,
            });
        }
        self.publish(event);
        base_us
    }

    /// A stage of the current run (its row's label and its name) began at `began_us`, its
    /// counted part at `start_us` (epoch microseconds).
    pub(crate) fn stage_began(
        &self,
        (label, name): (String, String),
        began_us: u64,
        start_us: u64,
    ) {
        let mut st = lock(&self.inner.state);
        let Some(base) = st.run.as_ref().map(|r| r.base_us) else {
            return;
        };
        let s = |us: u64| events::secs(us, base);
        st.stages.push(StageNow {
            label,
            name,
            began: s(began_us),
            start: s(start_us),
            end: None,
        });
    }

    /// A fault was done from `began_us`: a band from then until it is over.
    pub(crate) fn fault_began(&self, fault: &str, began_us: u64) {
        let mut st = lock(&self.inner.state);
        let Some(base) = st.run.as_ref().map(|r| r.base_us) else {
            return;
        };
        let from = events::secs(began_us, base);
        st.faults.push((fault.to_string(), from, None));
    }

    /// The fault going on was over at `end_us`.
    pub(crate) fn fault_ended(&self, end_us: u64) {
        let mut st = lock(&self.inner.state);
        let Some(base) = st.run.as_ref().map(|r| r.base_us) else {
            return;
        };
        if let Some(going) = st.faults.last_mut().filter(|f| f.2.is_none()) {
            going.2 = Some(events::secs(end_us, base));
        }
    }

    pub(crate) fn stage_ended(&self, end_us: u64) {
        let mut st = lock(&self.inner.state);
        let Some(base) = st.run.as_ref().map(|r| r.base_us) else {
            return;
        };
        if let Some(last) = st.stages.last_mut() {
            last.end = Some(events::secs(end_us, base));
        }
    }

    /// The current run ended: no change is taken for it any more (the recorder told the
    /// summary those made).
    pub(crate) fn run_ended(&self) {
        let mut st = lock(&self.inner.state);
        st.run = None;
        st.pending.clear();
        st.changes.clear();
    }

    /// The command ended: the page says so and where its report is.
    /// `report`: the page of it in `dir` (`report.html`, a series' `sweep.html`).
    pub(crate) fn end(
        &self,
        exit_words: &str,
        exit_code: i32,
        dir: &std::path::Path,
        report: &str,
    ) {
        // Where a reader finds it, whatever the directory the command ran in.
        let dir = &std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let (started, now) = {
            let st = lock(&self.inner.state);
            let started = st.header.as_ref().map(|h| h.started_at.clone());
            (started, std::time::SystemTime::now())
        };
        let duration = started
            .and_then(|s| humantime::parse_rfc3339(&s).ok())
            .and_then(|s| now.duration_since(s).ok())
            .map(|d| {
                humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
            });
        let event = frames::PageEvent::End(&frames::EndFrame {
            finished_at: humantime::format_rfc3339_seconds(now).to_string(),
            duration,
            exit: exit_words.to_string(),
            exit_code,
            dir: dir.display().to_string(),
            report: dir.join(report).display().to_string(),
        })
        .frame();
        self.publish(event);
        let mut st = lock(&self.inner.state);
        st.ended = true;
        // Each viewer's stream sends what is queued, then ends.
        st.viewers.clear();
    }

    /// Sends an event to every viewer and keeps it for those to come. A viewer whose queue is
    /// full is dropped: the load never waits for a page.
    fn publish(&self, event: Arc<str>) {
        let mut st = lock(&self.inner.state);
        if st.ended {
            return;
        }
        st.viewers
            .retain(|v| v.try_send(Arc::clone(&event)).is_ok());
        // A state is the run's totals now: the history keeps the last one only, so it grows by
        // an interval's series, not by every interval's whole table.
        if event.starts_with("event: state\n") {
            if let Some(at) = st.state_at.take() {
                st.history.remove(at);
            }
            st.state_at = Some(st.history.len());
        }
        st.history.push(event);
    }

    /// A new viewer: the history so far, and its queue of what comes next (None once the
    /// command ended, or with too many viewers).
    fn subscribe(&self) -> Result<Subscribed, String> {
        let mut st = lock(&self.inner.state);
        let streams = self
            .inner
            .streams
            .load(std::sync::atomic::Ordering::Relaxed);
        if st.viewers.len().max(streams) >= http::MAX_VIEWERS {
            return Err(format!(
                "{} pages are watching already; close one",
                http::MAX_VIEWERS
            ));
        }
        let (tx, rx) = tokio::sync::mpsc::channel(VIEWER_QUEUE);
        if !st.ended {
            st.viewers.push(tx);
        }
        Ok((st.history.clone(), rx))
    }

    /// Viewers now (the cost benchmark reads it).
    pub fn viewers(&self) -> usize {
        lock(&self.inner.state).viewers.len()
    }
}

/// `resources.tsv`'s writer, with each row shown to the page too (its columns as the file's).
pub(crate) struct Tee(
    pub(crate) Box<dyn crate::monitor::RowSink>,
    pub(crate) Page,
    /// The `--server-metrics` hosts, whose columns the rows carry.
    pub(crate) Vec<String>,
);

impl crate::monitor::RowSink for Tee {
    fn write(&mut self, row: &crate::monitor::ResourceRow) -> std::io::Result<()> {
        self.1.resources(row, &self.2);
        self.0.write(row)
    }

    fn name(&self) -> String {
        self.0.name()
    }
}

impl Page {
    /// A row of the sampler: each numeric column of `resources.tsv`, by name.
    fn resources(&self, row: &crate::monitor::ResourceRow, hosts: &[String]) {
        let base = match &lock(&self.inner.state).run {
            Some(r) => r.base_us,
            None => return,
        };
        let header = crate::rundir::resources::header(hosts, &[]);
        let line = crate::rundir::resources::line(row, &[]);
        let values: frames::Ordered<f64> = header
            .split('\t')
            .zip(line.split('\t'))
            .filter(|(name, _)| *name != "time_ms" && *name != "interval_ms")
            .filter_map(|(name, cell)| Some((name.to_string(), cell.parse::<f64>().ok()?)))
            .collect();
        let t = (crate::num::real(row.time_ms) * 1000.0 - crate::num::real(base)) / 1e6;
        self.publish(frames::PageEvent::Resources(&frames::ResourcesFrame { t, values }).frame());
    }
}
