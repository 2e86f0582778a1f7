//! Scheduled faults (`[[fault]]`, `--fault`): each is done to the server at its time from the
//! first stage's start, and recorded as an event (when it began, when it was over, what
//! happened) for `summary.json`, the report's bands and `resources.tsv`'s `fault` column.
//! `kill`, `pause` and `restart` act on the embedded server's process (and start it again on
//! the same data and port); `stepdown` sends `replSetStepDown` with force on a client of its own.
//!
//! Owns: carrying out the plan's faults and what they did. Never: measures operations, judges
//! availability (that is `metrics::availability`), or prints.

use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::doc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::Clock;
use crate::monitor::EventMark;
use crate::plan::fault::{FaultKind, FaultPlan};
use crate::server::EmbeddedServer;
pub(crate) use crate::summary::faults::FaultEvent;

/// Does the plan's faults to the server.
pub struct Injector {
    pub(crate) faults: Vec<FaultPlan>,
    /// The embedded server (kill, pause, restart need it).
    pub(crate) server: Option<Arc<EmbeddedServer>>,
    /// A client of its own (step-down).
    pub(crate) client: Option<mongodb::Client>,
    /// Where the sampler sees the fault going on.
    pub(crate) mark: Arc<EventMark>,
}

impl Injector {
    /// Does each fault at its time from `start`, its events' times on the run's `clock` (the
    /// one of the samples and the unavailability windows). No fault begins once `over` is
    /// cancelled (the stages ended), and one going on is cut short by `stop` (Ctrl-C): the
    /// server is started again (or let go on) at once. Each one done is told to the recorder's
    /// outputs (`notify`) when it begins and when it is over.
    pub(crate) async fn run(
        self: Arc<Self>,
        start: Instant,
        clock: Clock,
        over: CancellationToken,
        stop: CancellationToken,
        notify: crate::metrics::Notify,
    ) -> Vec<FaultEvent> {
        let epoch_ms = || clock.now_us() / 1000;
        let start_ms = clock.epoch_us(start) / 1000;
        let mut order: Vec<&FaultPlan> = self.faults.iter().collect();
        order.sort_by_key(|f| f.at);
        let mut events = Vec::new();
        for f in order {
            let due = tokio::select! {
                biased;
                _ = over.cancelled() => false,
                _ = tokio::time::sleep_until(start + f.at) => true,
            };
            if !due {
                // The stages ended first (a group of loops, or Ctrl-C): said, not hidden.
                let now = epoch_ms();
                events.push(FaultEvent {
                    kind: f.kind,
                    fault: f.text(),
                    start_ms: now,
                    end_ms: now,
                    offset_secs: crate::num::real(now.saturating_sub(start_ms)) / 1000.0,
                    detail: String::new(),
                    error: Some("not done: the stages ended before its time".into()),
                    recovery: Vec::new(),
                });
                continue;
            }
            // Each time read once: the page's band and the summary's are the same.
            let (fault, began_us) = (f.text(), clock.now_us());
            let began = began_us / 1000;
            self.mark.begin(f.kind.name());
            let _ = notify.send(crate::metrics::Notice::FaultBegan {
                fault: fault.clone(),
                began_us,
            });
            let (detail, error) = self.inflict(f, &stop).await;
            self.mark.end();
            let end_us = clock.now_us();
            let _ = notify.send(crate::metrics::Notice::FaultEnded {
                fault: fault.clone(),
                end_us,
                detail: detail.clone(),
                error: error.clone(),
            });
            events.push(FaultEvent {
                kind: f.kind,
                fault,
                start_ms: began,
                end_ms: end_us / 1000,
                offset_secs: crate::num::real(began.saturating_sub(start_ms)) / 1000.0,
                detail,
                error,
                recovery: Vec::new(),
            });
        }
        events
    }

    /// Sleeps `d`, or less when stopped.
    async fn wait(d: Duration, stop: &CancellationToken) {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stop.cancelled() => {}
        }
    }

    async fn inflict(&self, f: &FaultPlan, stop: &CancellationToken) -> (String, Option<String>) {
        let secs = |d: Duration| format!("{:.2}s", d.as_secs_f64());
        match f.kind {
            FaultKind::Stepdown => {
                let Some(client) = &self.client else {
                    return (String::new(), Some("no client to step down with".into()));
                };
                let cmd = doc! { "replSetStepDown": i64::try_from(f.length.as_secs()).unwrap_or(i64::MAX), "force": true };
                let sent = Instant::now();
                let reply = client.database("admin").run_command(cmd).await;
                // The step-down lasts its length; the server gives no end to wait for.
                Self::wait(f.length.saturating_sub(sent.elapsed()), stop).await;
                match reply {
                    Ok(_) => (
                        format!("replSetStepDown {} s with force: ok", f.length.as_secs()),
                        None,
                    ),
                    // The connection may close as the primary steps down: it did happen.
                    Err(e) if is_closed(&e) => (
                        format!(
                            "replSetStepDown {} s with force: the connection closed (the server stepped down)",
                            f.length.as_secs()
                        ),
                        None,
                    ),
                    Err(e) => (
                        String::new(),
                        Some(format!(
                            "replSetStepDown was refused: {}",
                            crate::driver_error::said(&e)
                        )),
                    ),
                }
            }
            kind => {
                let Some(server) = &self.server else {
                    return (
                        String::new(),
                        Some(format!("a {} needs the embedded server", kind.name())),
                    );
                };
                let old = server.pid();
                match kind {
                    FaultKind::Pause => {
                        server.signal(libc::SIGSTOP);
                        Self::wait(f.length, stop).await;
                        server.signal(libc::SIGCONT);
                        (
                            format!("pid {old} stopped (SIGSTOP) for {}", secs(f.length)),
                            None,
                        )
                    }
                    _ => {
                        let s = Arc::clone(server);
                        let how = if kind == FaultKind::Kill {
                            tokio::task::spawn_blocking(move || {
                                s.kill();
                                "killed (SIGKILL)"
                            })
                            .await
                            .unwrap_or("killed (SIGKILL)")
                        } else {
                            tokio::task::spawn_blocking(move || {
                                if s.terminate() {
                                    "stopped (SIGTERM)"
                                } else {
                                    "stopped (SIGTERM, then SIGKILL after 10 s)"
                                }
                            })
                            .await
                            .unwrap_or("stopped")
                        };
                        let down = Instant::now();
                        Self::wait(f.length, stop).await;
                        let waited = down.elapsed();
                        let s = Arc::clone(server);
                        let begun = Instant::now();
                        let restarted = tokio::task::spawn_blocking(move || s.restart())
                            .await
                            .map_err(|e| e.to_string())
                            .and_then(|r| r.map_err(|e| e.to_string()));
                        match restarted {
                            Ok(()) => (
                                format!(
                                    "pid {old} {how}; started again after {}, pid {} listening after {}",
                                    secs(waited),
                                    server.pid(),
                                    secs(begun.elapsed())
                                ),
                                None,
                            ),
                            Err(e) => (
                                format!("pid {old} {how}"),
                                Some(format!("it did not start again: {e}")),
                            ),
                        }
                    }
                }
            }
        }
    }
}

fn is_closed(e: &mongodb::error::Error) -> bool {
    matches!(
        e.kind.as_ref(),
        mongodb::error::ErrorKind::Io(_) | mongodb::error::ErrorKind::ConnectionPoolCleared { .. }
    )
}
