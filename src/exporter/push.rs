//! `--metrics-push URL`: the same series sent by Prometheus remote write (protobuf, snappy
//! block framing, version 0.1.0) at the end of each interval, from a thread of its own: an offer
//! that finds the sender busy is dropped (the next carries the newer totals), so the load never
//! waits. A failed push is tried 3 times; after 3 batches in a row failed, the sender warns once
//! and stops: the run goes on without its pushed series.

use std::sync::mpsc;
use std::time::Duration;

use super::text::{Family, Kind};

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
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

/// The pushing thread's end.
pub struct Pusher {
    tx: Option<mpsc::SyncSender<Vec<Family>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pusher {
    /// Pushes to `url` (shown as `shown`: password hidden), labelled `instance`.
    pub fn start(url: String, shown: String, instance: String) -> Pusher {
        let (tx, rx) = mpsc::sync_channel::<Vec<Family>>(1);
        let thread = std::thread::Builder::new()
            .name("metrics-push".into())
            .spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(TIMEOUT))
                    .http_status_as_error(true)
                    .build()
                    .into();
                let mut failed = 0u32;
                let mut failure: Option<String> = None;
                for families in rx {
                    if failed >= GIVE_UP_AFTER {
                        continue;
                    }
                    let ms = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as i64);
                    let req = request(
                        &families,
                        ms,
                        &[("job", "mongo-stress"), ("instance", &instance)],
                    );
                    let body = snap::raw::Encoder::new()
                        .compress_vec(&prost::Message::encode_to_vec(&req))
                        .unwrap_or_default();
                    let mut last = String::new();
                    let mut ok = false;
                    for attempt in 0..ATTEMPTS {
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
                            Err(e) => last = crate::redact::redact(&e.to_string()),
                        }
                    }
                    if ok {
                        failed = 0;
                    } else {
                        failed += 1;
                        if failed == GIVE_UP_AFTER {
                            eprintln!(
                                "warning: --metrics-push {shown}: {GIVE_UP_AFTER} pushes in a row failed ({last}); no more are sent this run (the run itself goes on, and its files are whole)"
                            );
                        }
                    }
                    failure = (!ok).then_some(last);
                }
                // The run ended on a failed push not yet warned of: one warning, still.
                if let (Some(last), 1..GIVE_UP_AFTER) = (failure, failed) {
                    eprintln!(
                        "warning: --metrics-push {shown}: the last push failed ({last}); the series there may stop short of the run's end (the run's own files are whole)"
                    );
                }
            })
            .ok();
        Pusher {
            tx: Some(tx),
            thread,
        }
    }

    /// Offers the newest families; dropped when the thread is still busy with the last ones.
    pub fn offer(&self, families: Vec<Family>) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(families);
        }
    }

    /// Sends `families` (the final numbers) and waits for the thread to be done with them.
    pub fn finish(mut self, families: Vec<Family>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(families);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
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
