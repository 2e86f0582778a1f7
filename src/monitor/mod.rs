//! The resource sampler: once a second, the server process's CPU, memory and disk I/O and the
//! IOPS of its data device (`local`, when the server runs on this machine), the tool's own CPU
//! and memory, and `serverStatus` over the wire (`status`). Each row goes to a `RowSink` (the
//! `resources.tsv` writer) as it is taken, and is kept for the resource summary.
//!
//! Owns: taking rows. Never: formats them (the sink does) or blocks the async runtime (local
//! reads and the sink's writes run on the blocking pool).

pub mod local;
pub mod row;
pub mod status;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::panic_message;
use local::Local;
pub use row::{ResourceRow, OPCOUNTERS};

pub const PERIOD: Duration = Duration::from_secs(1);

/// Where each row goes as it is taken.
pub trait RowSink: Send {
    /// Writes one row; an error stops the writing (the rows are still kept).
    fn write(&mut self, row: &ResourceRow) -> std::io::Result<()>;
    /// What the sink writes to, for error messages.
    fn name(&self) -> String;
}

/// What to watch.
pub struct Target {
    pub client: mongodb::Client,
    /// The local server process, when known.
    pub server_pid: Option<u32>,
    /// Its data directory, when known, for the device's IOPS.
    pub data_dir: Option<PathBuf>,
}

/// Every row taken, and what went wrong while taking or writing them.
#[derive(Debug, Default)]
pub struct Sampled {
    pub rows: Vec<ResourceRow>,
    pub failures: Vec<String>,
}

/// The running sampler; rows can be read while it runs.
pub struct Sampler {
    shared: Arc<Mutex<Sampled>>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

fn lock(m: &Mutex<Sampled>) -> std::sync::MutexGuard<'_, Sampled> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sampler {
    pub fn start(target: Target, sink: Box<dyn RowSink>) -> Sampler {
        let shared = Arc::new(Mutex::new(Sampled::default()));
        let stop = CancellationToken::new();
        let task = tokio::spawn(sample(target, sink, Arc::clone(&shared), stop.clone()));
        Sampler { shared, stop, task }
    }

    /// Every row taken so far.
    pub fn rows(&self) -> Vec<ResourceRow> {
        lock(&self.shared).rows.clone()
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
) {
    let (pid, dir) = (target.server_pid, target.data_dir.clone());
    let mut local = match tokio::task::spawn_blocking(move || Local::new(pid, dir.as_deref())).await
    {
        Ok(l) => Some(l),
        Err(e) => {
            lock(&shared).failures.push(format!(
                "the resource sampler's local readings could not start: {}",
                join_error(e)
            ));
            None
        }
    };
    let mut sink = Some(sink);
    let mut status = status::Status::default();
    // The first reading only primes the counters (rates need two).
    let mut last_at = Instant::now();
    let mut primer = read_local(&mut local, ResourceRow::default(), 1.0, &shared).await;
    status.read(&target.client, &mut primer, 1.0).await;
    let mut tick = tokio::time::interval_at(Instant::now() + PERIOD, PERIOD);
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
        let row = ResourceRow {
            time_ms: row_time(),
            interval_ms: elapsed.as_millis() as u64,
            ..Default::default()
        };
        let mut row = read_local(&mut local, row, secs, &shared).await;
        status.read(&target.client, &mut row, secs).await;
        write_row(&mut sink, &row, &shared).await;
        lock(&shared).rows.push(row);
        if last {
            break;
        }
    }
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
/// are still kept for the summary) and the failure is reported at once and at the end.
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
            eprintln!("error: {message}");
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
        .map_or(0, |d| d.as_millis() as u64)
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
            data_dir: None,
        };
        let sampler = Sampler::start(target, Box::new(Broken));
        tokio::time::sleep(PERIOD + Duration::from_millis(300)).await;
        let sampled = sampler.stop().await;
        assert!(!sampled.rows.is_empty());
        assert!(sampled.rows.iter().all(|r| r.client_cpu_pct.is_some()));
        assert_eq!(sampled.failures.len(), 1, "{:?}", sampled.failures);
        assert!(sampled.failures[0].contains("writing resources.tsv failed: disk full"));
    }
}
