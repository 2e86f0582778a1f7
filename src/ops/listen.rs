//! A watch group's listener on the driver: its change stream opened as the plan says, each
//! event handed to its `listen::Book` and its lag sent to the recorder as a sample of the
//! group; a stream that breaks opened again from its last token (each time a `Resume`); a
//! token the oplog no longer holds (`ChangeStreamHistoryLost`) ends the listener, as a failed
//! sample, never reopened from now. After the writers stop it reads on until it has every
//! write it was due or the plan's drain is over.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mongodb::bson::{Bson, Document, RawDocumentBuf};
use mongodb::change_stream::event::ResumeToken;
use mongodb::change_stream::ChangeStream;
use mongodb::options::{FullDocumentBeforeChangeType, FullDocumentType};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::listen::{Acks, Admits, Book, DocId, Event, Lag, Op};
use crate::metrics::{Clock, OpError, Sample};
use crate::plan::{GroupPlan, RunPlan, WatchPlan, WatchScope};
use crate::summary::streams::Resume;

/// The server's code for a resume token the oplog no longer holds.
pub(crate) const HISTORY_LOST: i32 = 286;

/// How long a listener reads on after Ctrl-C for the writes already acknowledged.
const STOP_DRAIN: Duration = Duration::from_secs(1);

/// How often a listener looks again at events waiting for their writes' replies, and at
/// whether its drain is over.
const TICK: Duration = Duration::from_millis(20);

/// What one listener shares with the run.
pub struct ListenRun {
    pub(crate) acks: Arc<Acks>,
    pub(crate) samples: mpsc::Sender<Sample>,
    pub(crate) clock: Clock,
    /// Cancelled when the last stage has ended: the drain begins.
    pub(crate) writers_done: CancellationToken,
    /// Ctrl-C: it stops at once.
    pub(crate) stop: CancellationToken,
    /// Keep `changes.tsv`'s lines.
    pub(crate) keep_lines: bool,
}

/// One listener's end: its book, resumes, why it stopped early (if it did) and what its
/// stream admits of the run's writes.
pub struct Listened {
    pub(crate) book: Book,
    pub(crate) resumes: Vec<Resume>,
    pub(crate) failed: Option<String>,
    pub(crate) admits: Admits,
}

/// The resumes of the listeners' streams, as the driver's command events show them (each
/// listener has a client of its own): a listener's command fails, and later an `aggregate` of
/// its stream with `resumeAfter` succeeds. The driver resumes a broken stream by itself, so this is the
/// one place a resume is seen.
#[derive(Default)]
pub(crate) struct Resumes {
    state: std::sync::Mutex<ResumeState>,
}

#[derive(Default)]
struct ResumeState {
    /// Commands in flight: request id to the listener's mark and whether it resumes.
    pending: std::collections::HashMap<i32, (String, bool)>,
    /// Per listener mark: when its stream broke (epoch ms, and the clock), and why.
    broke: std::collections::HashMap<String, (u64, std::time::Instant, String)>,
    done: Vec<(String, Resume)>,
}

/// Listener `n` of group `g`, as the resumes are filed.
fn mark(g: usize, n: u32) -> String {
    format!("mongo-stress watch {g}:{n}")
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Resumes {
    /// The command event handler of listener `n` of group `g`'s client, that files them.
    pub(crate) fn handler(
        this: &Arc<Resumes>,
        g: usize,
        n: u32,
    ) -> mongodb::event::EventHandler<mongodb::event::command::CommandEvent> {
        use mongodb::event::command::CommandEvent;
        let this = Arc::clone(this);
        let m = mark(g, n);
        mongodb::event::EventHandler::callback(move |e: CommandEvent| {
            let mut s = this.state.lock().unwrap_or_else(|p| p.into_inner());
            match e {
                CommandEvent::Started(c) => {
                    if !matches!(c.command_name.as_str(), "aggregate" | "getMore") {
                        return;
                    }
                    let resuming = c.command_name == "aggregate"
                        && c.command
                            .get_array("pipeline")
                            .ok()
                            .and_then(|p| p.first())
                            .and_then(|s| s.as_document())
                            .and_then(|s| s.get_document("$changeStream").ok())
                            .is_some_and(|cs| {
                                cs.contains_key("resumeAfter") || cs.contains_key("startAfter")
                            });
                    s.pending.insert(c.request_id, (m.clone(), resuming));
                }
                CommandEvent::Failed(f) => {
                    if let Some((m, _)) = s.pending.remove(&f.request_id) {
                        let why = crate::driver_error::said(&f.failure);
                        s.broke
                            .entry(m)
                            .or_insert((epoch_ms(), std::time::Instant::now(), why));
                    }
                }
                CommandEvent::Succeeded(ok) => {
                    let Some((m, resuming)) = s.pending.remove(&ok.request_id) else {
                        return;
                    };
                    if !resuming {
                        return;
                    }
                    if let Some((at_ms, at, error)) = s.broke.remove(&m) {
                        let took = u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX);
                        s.done.push((
                            m,
                            Resume {
                                listener: 0,
                                at_ms,
                                took_ms: took,
                                error,
                                replayed: 0,
                                missing_before: 0,
                                missing_after: 0,
                            },
                        ));
                    }
                }
                _ => {}
            }
        })
    }

    /// Listener `n` of group `g`'s resumes, taken; and why its stream is broken now, if it is.
    fn take(&self, g: usize, n: u32) -> (Vec<Resume>, Option<String>) {
        let m = mark(g, n);
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut mine = Vec::new();
        s.done.retain(|(k, r)| {
            if *k == m {
                mine.push(Resume {
                    listener: n + 1,
                    ..r.clone()
                });
                false
            } else {
                true
            }
        });
        let broken = s.broke.remove(&m).map(|b| b.2);
        (mine, broken)
    }
}

/// The pipeline listener `n` opens (its generators made for it).
pub(crate) fn pipeline(w: &WatchPlan, n: u32, seed: u64) -> Vec<Document> {
    use rand::SeedableRng;
    let Some(t) = &w.pipeline else {
        return Vec::new();
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ u64::from(n));
    let mut lookup = crate::workload::template::NoLookup;
    let mut state = crate::workload::template::UserState::default();
    let mut cx = crate::workload::template::Cx {
        rng: &mut rng,
        lookup: &mut lookup,
        now_ms: crate::workload::lookup::now_ms(),
        user: n,
        state: &mut state,
    };
    match t.generate(&mut cx) {
        Bson::Array(stages) => stages
            .into_iter()
            .filter_map(|s| match s {
                Bson::Document(d) => Some(d),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

async fn open(
    client: &mongodb::Client,
    w: &WatchPlan,
    pipeline: &[Document],
    resume: Option<ResumeToken>,
) -> mongodb::error::Result<ChangeStream<RawDocumentBuf>> {
    let full = w.full_document.as_deref().map(|f| match f {
        "updateLookup" => FullDocumentType::UpdateLookup,
        "whenAvailable" => FullDocumentType::WhenAvailable,
        "required" => FullDocumentType::Required,
        other => FullDocumentType::Other(other.to_string()),
    });
    let before = w.full_document_before_change.as_deref().map(|f| match f {
        "whenAvailable" => FullDocumentBeforeChangeType::WhenAvailable,
        "required" => FullDocumentBeforeChangeType::Required,
        _ => FullDocumentBeforeChangeType::Off,
    });
    let options = mongodb::options::ChangeStreamOptions::builder()
        .full_document(full)
        .full_document_before_change(before)
        .batch_size(w.batch_size)
        .max_await_time(w.max_await_time)
        .resume_after(resume)
        .build();
    let pipeline = pipeline.to_vec();
    // Each event as its bytes: the few fields the books read are read from them, with no
    // document built (a full document from `updateLookup` is not parsed at all).
    Ok(match &w.scope {
        WatchScope::Collection { database, name } => client
            .database(database)
            .collection::<Document>(name)
            .watch()
            .pipeline(pipeline)
            .with_options(options)
            .await?
            .with_type::<RawDocumentBuf>(),
        WatchScope::Database(d) => client
            .database(d)
            .watch()
            .pipeline(pipeline)
            .with_options(options)
            .await?
            .with_type::<RawDocumentBuf>(),
        WatchScope::Cluster => client
            .watch()
            .pipeline(pipeline)
            .with_options(options)
            .await?
            .with_type::<RawDocumentBuf>(),
    })
}

/// Before anything is written: each watch group's stream opened once and closed, so a
/// pipeline the server refuses is a usage error (exit 2) with the server's message.
pub(crate) async fn check(plan: &RunPlan, client: &mongodb::Client) -> Result<(), Error> {
    for g in plan.groups() {
        let Some(w) = &g.watch else { continue };
        if let Err(e) = open(client, w, &pipeline(w, 0, 0), None).await {
            let message = crate::driver_error::said(&e);
            if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(_)) {
                return Err(Error::Usage(format!(
                    "{}: the server refuses the change stream of watch group `{}` ({}): {message}\n  fix: correct its `watch` (pipeline, full_document, scope); nothing was run or written",
                    plan.origin, g.name, w.scope
                )));
            }
            return Err(Error::Server(format!(
                "cannot open the change stream of watch group `{}`: {message}",
                g.name
            )));
        }
    }
    Ok(())
}

fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    crate::driver_error::server_error(e).map(|s| s.code)
}

/// Listener `n` (from 0) of watch group `g`: opened, reported on `opened`, read until the
/// drain is over or the run is stopped.
pub(crate) async fn listen(
    client: mongodb::Client,
    seen: Option<Arc<Resumes>>,
    g: Arc<GroupPlan>,
    n: u32,
    seed: u64,
    run: ListenRun,
    opened: tokio::sync::oneshot::Sender<Result<(), String>>,
) -> Listened {
    let Some(w) = g.watch.clone() else {
        unreachable!("a listener is started for a watch group")
    };
    let stages = pipeline(&w, n, seed);
    let admits = Admits::of(&w.scope, &stages);
    let mut book = Book::new(n + 1, run.keep_lines);
    let mut resumes: Vec<Resume> = Vec::new();
    let sample = |lag: Lag, error: Option<OpError>| event_sample(&g, n, lag, error);
    let mut stream = match open_first(&client, &w, &stages, &run.stop).await {
        Ok(s) => s,
        Err(e) => return not_opened(&e, opened, book, admits),
    };
    let _ = opened.send(Ok(()));
    let mut failed = None;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Once the writers are done: until when it waits, and how many writes it is due.
    let mut drain: Option<(tokio::time::Instant, u64)> = None;
    let mut stopping = false;
    // Times the stream broke since its last event.
    let mut broken = 0u32;
    loop {
        tokio::select! {
            biased;
            // Ctrl-C: the events of writes already acknowledged, for a second at most.
            _ = run.stop.cancelled(), if !stopping => {
                stopping = true;
                book.writers_done_us.get_or_insert(run.clock.now_us());
                let due = run.acks.admitted(&admits).len() as u64;
                let until = tokio::time::Instant::now() + w.drain.min(STOP_DRAIN);
                drain = Some((drain.map_or(until, |(u, _)| u.min(until)), due));
            }
            _ = run.writers_done.cancelled(), if drain.is_none() => {
                book.writers_done_us = Some(run.clock.now_us());
                let due = run.acks.admitted(&admits).len() as u64;
                drain = Some((tokio::time::Instant::now() + w.drain, due));
            }
            _ = tick.tick() => {
                for lag in book.retry(&run.acks, run.clock.now_us(), false) {
                    if run.samples.send(sample(lag, None)).await.is_err() {
                        break;
                    }
                }
                if let Some((until, due)) = drain {
                    let done = book.counts.delivered >= due && book.waiting() == 0;
                    if done || tokio::time::Instant::now() >= until {
                        break;
                    }
                }
            }
            next = stream.next() => match next {
                Some(Ok(e)) => {
                    let event = event_of(&e, run.clock.now_us());
                    if let Some(lag) = book.receive(&run.acks, event) {
                        if run.samples.send(sample(lag, None)).await.is_err() {
                            break;
                        }
                    }
                    broken = 0;
                    think(w.think, &run.stop).await;
                }
                Some(Err(e)) if code_of(&e) == Some(HISTORY_LOST) => {
                    failed = Some(lost(&e));
                    let now = Lag { from_us: run.clock.now_us(), lag_us: 0, basis: crate::listen::Basis::Ack };
                    let _ = run.samples.send(sample(now, Some(crate::ops::classify::classify(e)))).await;
                    break;
                }
                // The server ended the stream (its collection or database dropped or renamed):
                // there is nothing to resume.
                None => {
                    failed = Some("the server ended its stream (an invalidate: the watched collection or database was dropped or renamed)".into());
                    break;
                }
                // It broke past the driver's own resume: opened again from its last token (the
                // command events see it), unless the error is one that another try cannot mend,
                // or it broke again and again with no event between.
                Some(Err(e)) => {
                    broken += 1;
                    let until = drain.map(|d| d.0);
                    let token = stream.resume_token();
                    match mend(&client, &w, &stages, token, e, broken, (&run, until)).await {
                        Ok(s) => stream = s,
                        Err(why) => {
                            failed = why;
                            break;
                        }
                    }
                }
            }
        }
    }
    // Events still waiting for their writes' replies: counted now.
    for lag in book.retry(&run.acks, run.clock.now_us(), true) {
        let _ = run.samples.send(sample(lag, None)).await;
    }
    let due = drain.map_or(0, |d| d.1);
    if let Some(seen) = &seen {
        let stopped = run.stop.is_cancelled();
        resumes = resumed(seen, &g, n, &book, due, stopped, &mut failed);
    }
    Listened {
        book,
        resumes,
        failed,
        admits,
    }
}

/// How long a listener's first open is tried (every 200 ms, on errors another try may mend):
/// its client's server selection is short (`connect::listeners`), the first open need not be.
const FIRST_OPEN: Duration = Duration::from_secs(10);

/// The stream's first open, tried again on a transient error until FIRST_OPEN has passed or
/// the run is stopped.
async fn open_first(
    client: &mongodb::Client,
    w: &WatchPlan,
    stages: &[Document],
    stop: &CancellationToken,
) -> mongodb::error::Result<ChangeStream<RawDocumentBuf>> {
    let end = tokio::time::Instant::now() + FIRST_OPEN;
    loop {
        match open(client, w, stages, None).await {
            Err(e) if transient(&e) && tokio::time::Instant::now() < end => {
                tokio::select! {
                    _ = stop.cancelled() => return Err(e),
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
            done => return done,
        }
    }
}

/// A listener whose stream could not be opened: said to its opener, and its end.
fn not_opened(
    e: &mongodb::error::Error,
    opened: tokio::sync::oneshot::Sender<Result<(), String>>,
    book: Book,
    admits: Admits,
) -> Listened {
    let said = crate::driver_error::said(e);
    let _ = opened.send(Err(said.clone()));
    Listened {
        book,
        resumes: Vec::new(),
        failed: Some(said),
        admits,
    }
}

/// The pause after each event (`think`), cut short by Ctrl-C.
async fn think(pause: Duration, stop: &CancellationToken) {
    if pause.is_zero() {
        return;
    }
    tokio::select! {
        _ = tokio::time::sleep(pause) => {}
        _ = stop.cancelled() => {}
    }
}

/// A listener's sample: one event's lag from its write's reply (or a failure of the stream).
fn event_sample(g: &GroupPlan, n: u32, lag: Lag, error: Option<OpError>) -> Sample {
    Sample {
        group: crate::metrics::sample::GroupId::try_from(g.index)
            .unwrap_or_else(|_| crate::metrics::sample::GroupId::try_from(0usize).expect("0 fits")),
        op: g.op.kind(),
        mixed: false,
        thread: n + 1,
        start_us: lag.from_us,
        intended_us: lag.from_us,
        elapsed_us: lag.lag_us,
        late: false,
        warmup: false,
        sent: 0,
        received: 0,
        matched: false,
        modified: false,
        docs: Default::default(),
        extra: None,
        error: error.map(Box::new),
    }
}

/// The resumes the driver's command events saw of listener `n`, each with its replayed
/// events (the duplicates received between it and the next); a stream that broke and was not
/// open again by the end, while writes were still due (`due`), is its failure.
fn resumed(
    seen: &Resumes,
    g: &GroupPlan,
    n: u32,
    book: &Book,
    due: u64,
    stopped: bool,
    failed: &mut Option<String>,
) -> Vec<Resume> {
    let (mut resumes, broken) = seen.take(g.index, n);
    if failed.is_none() && !stopped {
        if let Some(why) = broken.filter(|_| book.counts.delivered < due) {
            *failed = Some(format!(
                "its stream broke and was not open again by the end: {why}"
            ));
        }
    }
    let dup = &book.duplicate_times;
    for i in 0..resumes.len() {
        let from = resumes[i].at_ms * 1000;
        let to = resumes.get(i + 1).map_or(u64::MAX, |r| r.at_ms * 1000);
        resumes[i].replayed = dup.iter().filter(|t| **t >= from && **t < to).count() as u64;
    }
    resumes
}

/// The stream after it broke (the `broken`th time with no event between) past the driver's
/// own resume: opened again from its last token (`token`), unless the error is one another
/// try cannot mend or it broke too often; Err with why it cannot go on (None: the run was
/// stopped).
async fn mend(
    client: &mongodb::Client,
    w: &WatchPlan,
    stages: &[Document],
    token: Option<ResumeToken>,
    e: mongodb::error::Error,
    broken: u32,
    (run, until): (&ListenRun, Option<tokio::time::Instant>),
) -> Result<ChangeStream<RawDocumentBuf>, Option<String>> {
    if !transient(&e) || broken > MAX_BROKEN {
        let times = if broken > MAX_BROKEN {
            format!(" {broken} times with no event between")
        } else {
            String::new()
        };
        return Err(Some(format!(
            "its stream broke{times}: {}",
            crate::driver_error::said(&e)
        )));
    }
    let gates = (&run.stop, &run.writers_done, until);
    reopen(client, w, stages, token, gates).await
}

fn lost(e: &mongodb::error::Error) -> String {
    format!(
        "ChangeStreamHistoryLost: its resume token is no longer in the oplog ({})",
        crate::driver_error::said(e)
    )
}

/// The stream opened again from `token`, tried every 200 ms until the run stops; Err with
/// why it cannot go on (None when the run was stopped).
async fn reopen(
    client: &mongodb::Client,
    w: &WatchPlan,
    stages: &[Document],
    token: Option<ResumeToken>,
    (stop, writers_done, until): (
        &CancellationToken,
        &CancellationToken,
        Option<tokio::time::Instant>,
    ),
) -> Result<ChangeStream<RawDocumentBuf>, Option<String>> {
    // Tried until the run is stopped or, for a stream that broke while the writers went, until
    // STOP_DRAIN after they ended (the server that broke it is not answering, and a run must end
    // at its end whatever the server does); one that broke in the drain, until the drain's end.
    let in_drain = writers_done.is_cancelled();
    let mut until = until;
    let broken_at_end = || tokio::time::Instant::now() + STOP_DRAIN;
    if in_drain && until.is_none() {
        until = Some(broken_at_end());
    }
    let why = if in_drain {
        "its stream broke in the drain and was not open again by its end"
    } else {
        NOT_OPEN_AGAIN
    };
    loop {
        // One try, bounded as the whole is: a server that is gone keeps the driver in its
        // server selection for as long as it is told (30 s by default), past the drain.
        let attempt = open(client, w, stages, token.clone());
        tokio::pin!(attempt);
        let tried = loop {
            let end = until.unwrap_or_else(far_off);
            tokio::select! {
                r = &mut attempt => break r,
                _ = stop.cancelled() => return Err(None),
                _ = writers_done.cancelled(), if until.is_none() => {
                    until = Some(broken_at_end());
                }
                _ = tokio::time::sleep_until(end), if until.is_some() => {
                    return Err(Some(why.into()));
                }
            }
        };
        match tried {
            Ok(s) => return Ok(s),
            Err(e) if code_of(&e) == Some(HISTORY_LOST) => return Err(Some(lost(&e))),
            Err(e) if !transient(&e) => {
                return Err(Some(format!(
                    "its stream could not be opened again: {}",
                    crate::driver_error::said(&e)
                )))
            }
            Err(_) => {}
        }
        if until.is_some_and(|u| tokio::time::Instant::now() >= u) {
            return Err(Some(why.into()));
        }
        tokio::select! {
            _ = stop.cancelled() => return Err(None),
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
}

/// Why a listener whose stream broke stopped: it was not open again by the writers' end.
const NOT_OPEN_AGAIN: &str =
    "its stream was broken when the writers ended and was not open again within 1 s";

/// A time no wait reaches: a year from now.
fn far_off() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400 * 365)
}

/// Times a stream may break in a row, with no event between, before the listener gives up.
const MAX_BROKEN: u32 = 5;

/// An error another try may mend: the network, the server's selection or its state (a
/// failover, a restart), a cursor the server no longer has; not a refusal of the stream itself.
fn transient(e: &mongodb::error::Error) -> bool {
    use mongodb::error::ErrorKind;
    match e.kind.as_ref() {
        ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::ServerSelection { .. } => true,
        _ => {
            e.contains_label("ResumableChangeStreamError")
                || code_of(e).is_some_and(|c| {
                    c == 43 // CursorNotFound
                        || crate::vocab::ServerCode(c).not_primary()
                        || matches!(c, 6 | 7 | 89 | 91 | 189 | 262 | 9001 | 10107 | 11600 | 11602 | 13435 | 13436)
                })
        }
    }
}

fn event_of(e: &RawDocumentBuf, received_us: u64) -> Event {
    use mongodb::bson::RawBsonRef;
    let kind = e
        .get_str("operationType")
        .map_or_else(|_| "?".to_string(), str::to_string);
    let token = match e.get("_id") {
        Ok(Some(RawBsonRef::Document(t))) => crate::listen::token_hash(t.as_bytes()),
        _ => 0,
    };
    let ns = e.get_document("ns").ok().and_then(|ns| {
        Some((
            ns.get_str("db").ok()?.to_string(),
            ns.get_str("coll").ok()?.to_string(),
        ))
    });
    let id = e
        .get_document("documentKey")
        .ok()
        .and_then(|k| k.get("_id").ok().flatten())
        .and_then(|id| Bson::try_from(id.to_raw_bson()).ok())
        .map(|id| DocId::of(&id));
    let wall_us = e
        .get_datetime("wallTime")
        .ok()
        .and_then(|t| u64::try_from(t.timestamp_millis()).ok())
        .map(|ms| ms * 1000);
    Event {
        token,
        op: Op::of_event(&kind),
        ns,
        id,
        wall_us,
        kind,
        received_us,
    }
}
