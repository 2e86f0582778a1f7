//! `--metrics-push URL`: the same series sent by Prometheus remote write (protobuf, snappy
//! block format, version 0.1.0) at the end of each interval, from a thread of its own: each
//! offer is stamped when its totals were taken and replaces one not yet sent (the newest wins),
//! so the load never waits. A failed push is tried 3 times (not a 4xx but 429: it would not get
//! better); after 3 batches in a row failed, the sender warns once and stops: the run goes on
//! without its pushed series. The run's last push gets one attempt and at most 3 s.

use std::time::Duration;

use super::text::{Family, Kind};

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub(crate) timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub(crate) labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub(crate) samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(string, tag = "2")]
    pub(crate) value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sample {
    #[prost(double, tag = "1")]
    pub(crate) value: f64,
    #[prost(int64, tag = "2")]
    pub(crate) timestamp: i64,
}

/// One attempt's time limit, the attempts per batch, and the failed batches in a row after
/// which pushing stops.
const TIMEOUT: Duration = Duration::from_secs(2);
const ATTEMPTS: u32 = 3;
const GIVE_UP_AFTER: u32 = 3;

/// The families as remote write's time series, at `ms` (epoch milliseconds), with `extra`
/// labels (the pushed series' `job` and `instance`).
pub fn request(families: &[Family], ms: i64, extra: &[(&str, &str)]) -> WriteRequest {
    let mut timeseries = Vec::new();
    for f in families {
        for s in &f.samples {
            let name = match f.kind {
                Kind::Counter | Kind::Histogram | Kind::Gauge => format!("{}{}", f.name, s.suffix),
            };
            let mut labels: Vec<Label> = std::iter::once(Label {
                name: "__name__".into(),
                value: name,
            })
            .chain(s.labels.iter().map(|(k, v)| Label {
                name: k.to_string(),
                value: v.clone(),
            }))
            .chain(extra.iter().map(|(k, v)| Label {
                name: k.to_string(),
                value: v.to_string(),
            }))
            .collect();
            // Remote write wants them sorted by name.
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            timeseries.push(TimeSeries {
                labels,
                samples: vec![Sample {
                    value: s.value,
                    timestamp: ms,
                }],
            });
        }
    }
    WriteRequest { timeseries }
}

/// What the pushing thread is to send next: the newest families and when they were taken
/// (an offer replaces one not yet sent), and whether the run is over.
#[derive(Default)]
struct Slot {
    next: Option<(i64, Vec<Family>)>,
    done: bool,
}

/// The pushing thread's end.
pub(crate) struct Pusher {
    slot: std::sync::Arc<(std::sync::Mutex<Slot>, std::sync::Condvar)>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The one warning was given.
    warned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    shown: String,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Worth trying again: no answer, or the receiver's 5xx or 429 (remote write's rule: other 4xx
/// will not get better).
fn retryable(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::StatusCode(code) => *code >= 500 || *code == 429,
        _ => true,
    }
}

/// How long the end of a run waits for its last push.
const FINAL_WAIT: Duration = Duration::from_secs(3);

impl Pusher {
    /// Pushes to `url` (shown as `shown`: password hidden), labelled `instance`.
    pub(crate) fn start(url: String, shown: String, instance: String) -> Pusher {
        let slot = std::sync::Arc::new((
            std::sync::Mutex::new(Slot::default()),
            std::sync::Condvar::new(),
        ));
        let theirs = std::sync::Arc::clone(&slot);
        let warned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let warned_there = std::sync::Arc::clone(&warned);
        let shown_here = shown.clone();
        let thread = std::thread::Builder::new()
            .name("metrics-push".into())
            .spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(TIMEOUT))
                    .http_status_as_error(true)
                    .build()
                    .into();
                let (lock, ready) = &*theirs;
                let mut failed = 0u32;
                let mut failure: Option<String> = None;
                loop {
                    let (next, last_one) = {
                        let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
                        while s.next.is_none() && !s.done {
                            s = ready.wait(s).unwrap_or_else(|p| p.into_inner());
                        }
                        (s.next.take(), s.done)
                    };
                    let Some((ms, families)) = next else { break };
                    if failed >= GIVE_UP_AFTER {
                        if last_one {
                            break;
                        }
                        continue;
                    }
                    let req = request(&families, ms, &[("job", "mongo-stress"), ("instance", &instance)]);
                    let body = snap::raw::Encoder::new()
                        .compress_vec(&prost::Message::encode_to_vec(&req))
                        .unwrap_or_default();
                    let mut last = String::new();
                    let mut ok = false;
                    // The run's last push gets one attempt: the end of the run waits for it.
                    let attempts = if last_one { 1 } else { ATTEMPTS };
                    for attempt in 0..attempts {
                        if attempt > 0 {
                            std::thread::sleep(Duration::from_millis(250 << attempt));
                        }
                        match agent
                            .post(&url)
                            .header("Content-Encoding", "snappy")
                            .header("Content-Type", "application/x-protobuf")
                            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                            .send(&body[..])
                        {
                            Ok(_) => {
                                ok = true;
                                break;
                            }
                            Err(e) => {
                                last = crate::redact::redact(&e.to_string());
                                if !retryable(&e) {
                                    break;
                                }
                            }
                        }
                    }
                    if ok {
                        failed = 0;
                    } else {
                        failed += 1;
                        if failed == GIVE_UP_AFTER
                            && !warned_there.swap(true, std::sync::atomic::Ordering::SeqCst)
                        {
                            errln!(
                                "warning: --metrics-push {shown}: {GIVE_UP_AFTER} pushes in a row failed ({last}); no more are sent this run (the run itself goes on, and its files are whole)"
                            );
                        }
                    }
                    failure = (!ok).then_some(last);
                    if last_one {
                        break;
                    }
                }
                // The run ended on a failed push not yet warned of: one warning, still.
                if let (Some(last), 1..GIVE_UP_AFTER) = (failure, failed) {
                    if warned_there.swap(true, std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    errln!(
                        "warning: --metrics-push {shown}: the last push failed ({last}); the series there may stop short of the run's end (the run's own files are whole)"
                    );
                }
            })
            .ok();
        Pusher {
            slot,
            thread: std::sync::Mutex::new(thread),
            warned,
            shown: shown_here,
        }
    }

    /// Offers the newest families, stamped now; they replace any not yet sent.
    pub(crate) fn offer(&self, families: Vec<Family>) {
        let (lock, ready) = &*self.slot;
        let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
        if !s.done {
            s.next = Some((now_ms(), families));
            ready.notify_one();
        }
    }

    /// Sends `families` (the final numbers) as the last push, and waits for it at most
    /// `FINAL_WAIT` (a hanging receiver is left to its own time limit).
    pub(crate) fn finish(&self, families: Vec<Family>) {
        {
            let (lock, ready) = &*self.slot;
            let mut s = lock.lock().unwrap_or_else(|p| p.into_inner());
            s.next = Some((now_ms(), families));
            s.done = true;
            ready.notify_one();
        }
        let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        let deadline = std::time::Instant::now() + FINAL_WAIT;
        while !t.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if t.is_finished() {
            let _ = t.join();
        } else if !self.warned.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // Still waiting on a receiver that does not answer: said once, and left to it.
            errln!(
                "warning: --metrics-push {}: no answer within {} s at the end of the run; the last numbers may not have reached it (the run's own files are whole)",
                self.shown,
                FINAL_WAIT.as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::Sample as S;
    use super::*;

    #[test]
    fn a_family_becomes_sorted_labelled_series() {
        let f = Family {
            name: "mongo_stress_operations",
            help: "",
            kind: Kind::Counter,
            unit: "",
            samples: vec![S {
                suffix: "_total",
                labels: vec![("run", "r".into()), ("group", "g".into())],
                value: 7.0,
            }],
        };
        let r = request(&[f], 5, &[("job", "mongo-stress")]);
        let names: Vec<&str> = r.timeseries[0]
            .labels
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(names, ["__name__", "group", "job", "run"]);
        assert_eq!(
            r.timeseries[0].labels[0].value,
            "mongo_stress_operations_total"
        );
        assert_eq!(
            r.timeseries[0].samples[0],
            Sample {
                value: 7.0,
                timestamp: 5
            }
        );
    }
}
