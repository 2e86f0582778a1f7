//! A part's side: the plan fetched, the clock measured, the join, and the link that carries
//! everything after it on a thread of its own (a beat every `BEAT` when there is nothing else),
//! keeping the coordinator's latest order; and `Uplink`, the recorder's output that hands it
//! each interval and obeys a stop.
//!
//! Owns: talking to the coordinator. Never: runs the load or reads the run directory.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::error::Error;
use crate::executor::guard::StopReason;
use crate::metrics::{Flow, Output, RunEvent};

/// One request's longest wait (the plan, a report).
const TIMEOUT: Duration = Duration::from_secs(3);

/// The last report's (a part's whole run directory).
const DONE_TIMEOUT: Duration = Duration::from_secs(120);

/// How often the clock is measured again, from the beats' round trips.
const CLOCK_EVERY: Duration = Duration::from_secs(60);

/// A coordinator's address and token.
#[derive(Clone)]
pub(crate) struct Coordinator {
    base: String,
    token: String,
    agent: ureq::Agent,
    /// For a run directory's files, which may take long to send.
    done_agent: ureq::Agent,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Coordinator")
            .field("base", &self.base)
            .finish()
    }
}

fn agent(timeout: Duration, roots: &ureq::tls::RootCerts) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(roots.clone())
                .build(),
        )
        .build()
        .into()
}

impl Coordinator {
    /// The coordinator at `url`, trusted by the CA in `ca` when it is https and given one.
    pub(crate) fn new(
        url: &str,
        token: &str,
        ca: Option<&std::path::Path>,
    ) -> Result<Coordinator, Error> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::Usage(format!(
                "--join {} is not a coordinator's address\n  fix: give it as the coordinator printed it, http://HOST:PORT",
                crate::redact::redact(url)
            )));
        }
        let roots = super::tls::root_certs(ca)?;
        Ok(Coordinator {
            base,
            token: token.to_string(),
            agent: agent(TIMEOUT, &roots),
            done_agent: agent(DONE_TIMEOUT, &roots),
        })
    }

    fn shown(&self) -> String {
        crate::redact::redact(&self.base)
    }

    /// A request's answer as `T`, or what went wrong in words (the coordinator's own refusal,
    /// or why it could not be reached).
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        agent: &ureq::Agent,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<T, Failure> {
        let url = format!("{}{path}", self.base);
        let auth = format!("Bearer {}", self.token);
        let sent = match body {
            Some(b) => agent
                .post(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(b),
            None => agent.get(&url).header("Authorization", &auth).call(),
        };
        let mut resp = sent.map_err(|e| Failure::Unreachable(e.to_string()))?;
        let status = resp.status();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .map_err(|e| Failure::Unreachable(e.to_string()))?;
        if !status.is_success() {
            let said = serde_json::from_slice::<Refusal>(&bytes)
                .map(|r| r.error)
                .unwrap_or_else(|_| format!("HTTP {status}"));
            return Err(Failure::Refused(said));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            Failure::Refused(format!(
                "its answer to {path} is not what this version reads ({e})"
            ))
        })
    }

    fn error(&self, f: Failure) -> Error {
        match f {
            Failure::Refused(why) => {
                Error::Usage(format!("the coordinator at {} refused: {why}", self.shown()))
            }
            Failure::Unreachable(why) if untrusted(&why) => Error::Usage(format!(
                "the coordinator at {} is not trusted here: its certificate was refused ({why})\n  fix: for a certificate of a private CA (or a self-signed one, made with basicConstraints CA:FALSE), give --tls-ca FILE, that CA's PEM; the certificate must also name the host in --join and be in date",
                self.shown()
            )),
            Failure::Unreachable(why) => Error::Usage(format!(
                "cannot reach the coordinator at {}: {why}\n  fix: start it first (mongo-stress run PROFILE --parts N --coordinator ADDR), and give --join the address it printed",
                self.shown()
            )),
        }
    }

    /// The run to join (blocking).
    /// A report sent, its answer read. A run directory's files (`files`) may take long to send,
    /// and are tried three times: a series' step without them would hold the series up.
    fn report(&self, body: &[u8], files: bool) -> Result<Answer, Failure> {
        let (agent, tries) = if files {
            (&self.done_agent, 3)
        } else {
            (&self.agent, 1)
        };
        let mut sent = self.call::<Answer>(agent, "/v1/report", Some(body));
        for _ in 1..tries {
            if sent.is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
            sent = self.call::<Answer>(agent, "/v1/report", Some(body));
        }
        sent
    }

    /// The coordinator may not listen yet: tried again every second for `wait` (said once),
    /// until `stop`.
    pub(crate) fn plan(&self, wait: Duration, stop: &CancellationToken) -> Result<PlanDoc, Error> {
        let began = Instant::now();
        let mut said = false;
        let plan: PlanDoc = loop {
            match self.call(&self.agent, "/v1/plan", None) {
                // Not a coordinator whose certificate is not trusted: it will not become so.
                Err(Failure::Unreachable(why))
                    if began.elapsed() < wait && !stop.is_cancelled() && !untrusted(&why) =>
                {
                    if !said {
                        errln!(
                            "waiting up to {} for the coordinator at {} to listen",
                            humantime::format_duration(wait),
                            self.shown()
                        );
                        said = true;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
                answer => break answer.map_err(|f| self.error(f))?,
            }
        };
        if plan.version != VERSION {
            return Err(Error::Usage(format!(
                "the coordinator at {} runs mongo-stress {}, this part {VERSION}\n  fix: run the same version of mongo-stress on every machine of the run",
                self.shown(),
                plan.version
            )));
        }
        Ok(plan)
    }

    /// This machine's clock against the coordinator's (blocking).
    pub(crate) fn clock(&self) -> Result<ClockReading, Error> {
        let mut rounds = Vec::new();
        for _ in 0..CLOCK_ROUNDS {
            let t0 = now_us();
            let a: hub::ClockAnswer = self
                .call(&self.agent, "/v1/clock", None)
                .map_err(|f| self.error(f))?;
            rounds.push(Round {
                t0,
                server: a.now_us,
                t1: now_us(),
            });
        }
        Ok(estimate(&rounds).expect("rounds were made"))
    }

    /// Joins as part `index` (or the first free one) of a run or a `series`, and starts the
    /// link (blocking).
    pub(crate) fn join(
        self,
        (index, series, live): (Option<u32>, bool, bool),
        host: String,
        stop: CancellationToken,
    ) -> Result<Arc<Link>, Error> {
        let clock = self.clock()?;
        let req = JoinRequest {
            version: VERSION.into(),
            host,
            index,
            clock,
        };
        let body = serde_json::to_vec(&req).map_err(|e| Error::Other(e.into()))?;
        let reply: JoinReply = self
            .call(&self.agent, "/v1/join", Some(&body))
            .map_err(|f| self.error(f))?;
        Ok(Link::start(self, (reply, series, live), clock, stop))
    }
}

/// Whether a request failed on the coordinator's certificate (rustls says `certificate`).
fn untrusted(why: &str) -> bool {
    why.contains("certificate")
}

enum Failure {
    Refused(String),
    Unreachable(String),
}

/// What a part of a series is told to do next.
#[derive(Debug)]
pub(crate) enum Next {
    Step(StepSpec),
    /// The series is over.
    Over,
    /// The coordinator stopped the series: why.
    Stopped(String),
}

/// A joined part's link to its coordinator.
pub struct Link {
    pub(crate) index: u32,
    pub(crate) parts: u32,
    clock: Mutex<ClockReading>,
    go: tokio::sync::watch::Receiver<Go>,
    tx: Mutex<Option<Sender<What>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    shown: String,
    /// The running repetition's stop and where it says why (`attach`): the coordinator's order
    /// to stop is obeyed as it comes.
    run: Mutex<Option<(CancellationToken, Arc<OnceLock<StopReason>>)>>,
    /// The step this part runs: 0 for a run, from 1 for a series' steps (`next_step`).
    step: std::sync::atomic::AtomicU32,
    /// A part of a series: its steps' files are not its last message.
    pub(crate) series: bool,
    /// The coordinator serves the run live: each interval carries the part's tallies.
    pub(crate) live: bool,
    /// The changes the coordinator made so far (each answer's), and how many this part made.
    changes: Mutex<Vec<Shared>>,
    made: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("index", &self.index)
            .field("coordinator", &self.shown)
            .finish()
    }
}

impl Link {
    fn start(
        coordinator: Coordinator,
        (reply, series, live): (JoinReply, bool, bool),
        clock: ClockReading,
        stop: CancellationToken,
    ) -> Arc<Link> {
        let (go_tx, go) = tokio::sync::watch::channel(Go::Wait {
            joined: 0,
            parts: reply.parts,
        });
        let (tx, rx) = channel::<What>();
        let link = Arc::new(Link {
            index: reply.index,
            parts: reply.parts,
            clock: Mutex::new(clock),
            go,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(None),
            shown: coordinator.shown(),
            run: Mutex::new(None),
            step: std::sync::atomic::AtomicU32::new(0),
            series,
            live,
            changes: Mutex::new(Vec::new()),
            made: std::sync::atomic::AtomicU32::new(0),
        });
        let theirs = Arc::clone(&link);
        let thread = std::thread::Builder::new()
            .name("coordinator-link".into())
            .spawn(move || theirs.carry(&coordinator, &rx, &go_tx, &stop))
            .expect("a thread for the coordinator's link");
        *link.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
        link
    }

    pub(crate) fn clock(&self) -> ClockReading {
        *self.clock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The link's thread: each message sent (a beat when there is none), the answer's order
    /// kept; the clock measured again every minute from the round trips; a coordinator silent
    /// for `COORDINATOR_LOST_AFTER` stops the part (`stop`, and an order to stop).
    fn carry(
        &self,
        coordinator: &Coordinator,
        rx: &std::sync::mpsc::Receiver<What>,
        go: &tokio::sync::watch::Sender<Go>,
        stop: &CancellationToken,
    ) {
        let mut last_answer = Instant::now();
        let mut rounds: Vec<Round> = Vec::new();
        let mut measured = Instant::now();
        let mut lost = false;
        loop {
            let (what, last) = match rx.recv_timeout(BEAT) {
                Ok(w) => {
                    let last = match (&w, self.series) {
                        // A series' part sends a step's files and goes on to the next.
                        (What::Done { .. }, true) => false,
                        (What::Done { .. } | What::Failed { .. } | What::Bye, _) => true,
                        _ => false,
                    };
                    (w, last)
                }
                Err(RecvTimeoutError::Timeout) => (What::Beat, false),
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if lost && !last {
                continue;
            }
            let mut clock = None;
            if measured.elapsed() >= CLOCK_EVERY {
                if let Some(c) = estimate(&rounds) {
                    *self.clock.lock().unwrap_or_else(|e| e.into_inner()) = c;
                    clock = Some(c);
                }
                rounds.clear();
                measured = Instant::now();
            }
            let report = Report {
                index: self.index,
                clock,
                what,
            };
            let Ok(body) = serde_json::to_vec(&report) else {
                continue;
            };
            let t0 = now_us();
            match coordinator.report(&body, matches!(report.what, What::Done { .. })) {
                Ok(answer) => {
                    last_answer = Instant::now();
                    rounds.push(Round {
                        t0,
                        server: answer.now_us,
                        t1: now_us(),
                    });
                    if let Some(why) = self.stop_in(&answer.go) {
                        self.obey(format!("stopped early by the coordinator: {why}"));
                    }
                    if !answer.changes.is_empty() {
                        *self.changes.lock().unwrap_or_else(|e| e.into_inner()) = answer.changes;
                    }
                    go.send_replace(answer.go);
                }
                Err(f) => {
                    if matches!(report.what, What::Done { .. }) {
                        let why = match f {
                            Failure::Refused(w) | Failure::Unreachable(w) => w,
                        };
                        errln!(
                            "error: part {} could not send its results to the coordinator at {}: {why}; they are in its own run directory",
                            self.index,
                            self.shown,
                        );
                        // A series cannot go on without them: this part leaves it.
                        if self.series && !lost {
                            lost = true;
                            go.send_replace(Go::Stop {
                                why: format!("a step's results could not be sent: {why}"),
                            });
                        }
                    } else if last_answer.elapsed() >= COORDINATOR_LOST_AFTER && !lost {
                        lost = true;
                        let why = format!(
                            "the coordinator at {} has not answered for {} s",
                            self.shown,
                            COORDINATOR_LOST_AFTER.as_secs()
                        );
                        // The running repetition stops as on any order (its summary says
                        // why); before it began, the part stops as on Ctrl-C.
                        if !self.obey(format!("stopped early: {why}")) {
                            stop.cancel();
                        }
                        go.send_replace(Go::Stop { why });
                    }
                }
            }
            if last {
                return;
            }
        }
    }

    /// The repetition the coordinator's order to stop goes to, from its recorder's start.
    pub(crate) fn attach(&self, stop: CancellationToken, reason: Arc<OnceLock<StopReason>>) {
        *self.run.lock().unwrap_or_else(|e| e.into_inner()) = Some((stop, reason));
    }

    /// The coordinator's order to stop, obeyed by the running repetition (once; a stop before
    /// the recorder began is obeyed by its first interval, `Uplink`).
    fn obey(&self, message: String) -> bool {
        let run = self.run.lock().unwrap_or_else(|e| e.into_inner());
        let Some((stop, reason)) = run.as_ref() else {
            return false;
        };
        if !stop.is_cancelled() {
            let _ = reason.set(StopReason {
                message,
                threshold: None,
            });
            stop.cancel();
        }
        true
    }

    fn send(&self, what: What) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let _ = tx.send(what);
        }
    }

    /// The changes the coordinator made that this part has not made yet; from now on they
    /// are made.
    fn unmade(&self) -> Vec<Shared> {
        use std::sync::atomic::Ordering;
        let changes = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        let made = self.made.load(Ordering::Acquire);
        let new: Vec<Shared> = changes
            .iter()
            .filter(|c| c.number > made)
            .cloned()
            .collect();
        if let Some(last) = new.last() {
            self.made.store(last.number, Ordering::Release);
        }
        new
    }

    /// The coordinator's order to stop, once it gave one: the run's, or the step's this part
    /// runs.
    pub(crate) fn stop_order(&self) -> Option<String> {
        self.stop_in(&self.go.borrow())
    }

    fn stop_in(&self, go: &Go) -> Option<String> {
        match go {
            Go::Stop { why } => Some(why.clone()),
            Go::StopStep { step, why }
                if *step == self.step.load(std::sync::atomic::Ordering::Relaxed) =>
            {
                Some(why.clone())
            }
            _ => None,
        }
    }

    /// Waits for the coordinator's order that is not `Wait`/`Setup` (per `until`); a stop is
    /// an error that says why.
    async fn until(
        &self,
        stop: &CancellationToken,
        done: impl Fn(&Go) -> Option<u64>,
    ) -> Result<u64, Error> {
        let mut go = self.go.clone();
        loop {
            {
                let now = go.borrow_and_update();
                if let Go::Stop { why } = &*now {
                    return Err(Error::Other(anyhow::anyhow!(
                        "the coordinator stopped the run before this part began: {why}"
                    )));
                }
                if let Some(v) = done(&now) {
                    return Ok(v);
                }
            }
            tokio::select! {
                changed = go.changed() => if changed.is_err() {
                    return Err(Error::Other(anyhow::anyhow!("the link to the coordinator ended")));
                },
                _ = stop.cancelled() => return Err(Error::Other(anyhow::anyhow!("interrupted before the run began"))),
            }
        }
    }

    /// Waits until every part has joined.
    pub(crate) async fn all_joined(&self, stop: &CancellationToken) -> Result<(), Error> {
        self.until(stop, |g| {
            matches!(g, Go::Setup | Go::Start { .. }).then_some(0)
        })
        .await
        .map(|_| ())
    }

    /// Says this part is set up, and waits for the common start: when it is on this machine's
    /// clock, and the instant itself (the coordinator's), which every part records alike.
    pub(crate) async fn ready(
        &self,
        stop: &CancellationToken,
    ) -> Result<(SystemTime, SystemTime), Error> {
        let mine = self.step.load(std::sync::atomic::Ordering::Relaxed);
        self.send(What::Ready { step: mine });
        let at_us = self
            .until(stop, |g| match g {
                Go::Start { step, at_us } if *step == mine => Some(*at_us),
                _ => None,
            })
            .await?;
        let local = i64::try_from(at_us).unwrap_or(i64::MAX) - self.clock().offset_us;
        Ok((
            UNIX_EPOCH + Duration::from_micros(u64::try_from(local).unwrap_or(0)),
            UNIX_EPOCH + Duration::from_micros(at_us),
        ))
    }

    /// A series' next order after step `after` (the coordinator's number of the last step
    /// this part ran): a step, the series' end, or the coordinator's stop.
    pub(crate) async fn next_step(
        &self,
        after: u32,
        stop: &CancellationToken,
    ) -> Result<Next, Error> {
        let mut go = self.go.clone();
        loop {
            {
                let now = go.borrow_and_update();
                match &*now {
                    Go::Stop { why } => return Ok(Next::Stopped(why.clone())),
                    Go::Finished => return Ok(Next::Over),
                    Go::Step { spec } if spec.number > after => {
                        self.step
                            .store(spec.number, std::sync::atomic::Ordering::Relaxed);
                        return Ok(Next::Step(spec.clone()));
                    }
                    _ => {}
                }
            }
            tokio::select! {
                changed = go.changed() => if changed.is_err() {
                    return Err(Error::Other(anyhow::anyhow!("the link to the coordinator ended")));
                },
                _ = stop.cancelled() => return Err(Error::Other(anyhow::anyhow!("interrupted between the series' steps"))),
            }
        }
    }

    /// A series' step ended: its directory's files (or why it could not run, the last message).
    pub(crate) fn step_done(&self, what: What) {
        self.send(what);
    }

    /// The last message: the run directory's files, or why it could not run; waits for it
    /// to be sent (blocking).
    pub(crate) fn finish(&self, what: What) {
        self.send(what);
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}

/// The recorder's output of a part: each interval to the coordinator; its order to stop
/// obeyed as a threshold abort is, within the interval it came in.
pub(crate) struct Uplink {
    pub(crate) link: Arc<Link>,
    pub(crate) stopped: bool,
    /// The groups' names, by `GroupPlan::index` (their rows' labels).
    pub(crate) names: Vec<String>,
}

impl Output for Uplink {
    fn name(&self) -> &'static str {
        "the coordinator's link"
    }

    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        let (RunEvent::Interval(closed) | RunEvent::End(closed)) = event else {
            return Flow::More;
        };
        let batch = closed.batch;
        let mut serializer = V2DeflateSerializer::new();
        let hists = batch
            .hists
            .iter()
            .filter_map(|h| {
                let mut bytes = Vec::new();
                serializer.serialize(&h.hist, &mut bytes).ok()?;
                Some((
                    h.tag.to_string(),
                    base64::engine::general_purpose::STANDARD.encode(bytes),
                ))
            })
            .collect();
        let activity = batch
            .activity
            .iter()
            .map(|a| (a.tag.to_string(), a.users, a.errors))
            .collect();
        let tallies = if self.link.live {
            tallies(&self.names, closed.totals, closed.segments)
        } else {
            Vec::new()
        };
        self.link.send(What::Interval(IntervalReport {
            start_us: batch.start_epoch_us,
            duration_us: u64::try_from(batch.duration.as_micros()).unwrap_or(u64::MAX),
            hists,
            activity,
            tallies,
        }));
        if !self.stopped {
            if let Some(why) = self.link.stop_order() {
                self.stopped = true;
                self.link
                    .obey(format!("stopped early by the coordinator: {why}"));
            }
        }
        Flow::More
    }
}

/// Every row's counters: each group's, its kinds', then the rows of the changes made.
fn tallies(
    names: &[String],
    totals: &[crate::metrics::GroupMetrics],
    segments: &[crate::metrics::Segment],
) -> Vec<(Label, Tally)> {
    let mut out = Vec::new();
    for (name, m) in names.iter().zip(totals) {
        out.push((Label::group(name), Tally::of(m)));
        for (kind, k) in &m.kinds {
            out.push((Label::kind(name, kind.clone()), Tally::of(k)));
        }
    }
    // A change's row is not in the interval log under its own name: its histograms travel.
    for seg in segments {
        out.push((seg.label.clone(), Tally::with_histograms(&seg.metrics)));
    }
    out
}

/// A part's steering: each change the coordinator made, made here at this part's next
/// interval's end with its share, its rows named as the coordinator named them.
pub(crate) struct Steering {
    pub(crate) link: Arc<Link>,
    pub(crate) steer: Arc<crate::executor::steer::Steer>,
    /// Changes whose group does not run here yet (its stage began later on this machine),
    /// with the intervals they were tried at.
    pub(crate) waiting: Vec<(Shared, u32)>,
}

/// Intervals a change waits for its group to run on a part before it is dropped, said.
const CHANGE_TRIES: u32 = 5;

impl crate::metrics::Steering for Steering {
    fn at_interval(&mut self, now_us: u64) -> Vec<crate::metrics::Split> {
        let at = tokio::time::Instant::now();
        let mut splits = Vec::new();
        let mut due = std::mem::take(&mut self.waiting);
        due.extend(self.link.unmade().into_iter().map(|c| (c, 0)));
        for (c, tried) in due {
            let Some(&share) = c.shares.get(self.link.index as usize) else {
                continue;
            };
            let done = match c.setting {
                Setting::Rate => self.steer.set_rate(c.group, share, at),
                Setting::Users => self.steer.set_users(
                    c.group,
                    u32::try_from(crate::num::whole(share)).unwrap_or(u32::MAX),
                ),
            };
            if !done && tried + 1 < CHANGE_TRIES {
                self.waiting.push((c, tried + 1));
                continue;
            }
            if !done {
                errln!(
                    "part {}: {} of `{}` -> {} not made here: the group did not run in {CHANGE_TRIES} intervals",
                    self.link.index,
                    c.setting.word(),
                    c.name,
                    share
                );
                continue;
            }
            splits.push(crate::metrics::Split {
                group: c.group,
                name: c.name,
                setting: c.setting,
                from: c.from,
                to: c.to,
                who: c.who,
                before: c.before,
                after: c.after,
                at_us: now_us,
            });
        }
        splits
    }
}
