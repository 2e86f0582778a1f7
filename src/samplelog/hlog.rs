//! `latency.hlog`: HdrHistogram's interval log, one line per group (and TOTAL) per interval,
//! appended by a thread of its own as the recorder closes each interval, so an interruption keeps
//! every interval that ended. Header as the Java tools write it (format version, StartTime with
//! its date, BaseTime, the legend); payloads in the compressed V2 encoding (the `hdrhistogram`
//! crate's interval log writer). Values are microseconds; the `Interval_Max` column is in
//! milliseconds (MaxValueDivisor 1000).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::metrics::{Flow, IntervalBatch, Output, RunEvent};
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// Interval batches in flight between the recorder and the writer.
const CHANNEL_BATCHES: usize = 64;

pub struct IntervalLog {
    tx: Option<mpsc::Sender<Arc<IntervalBatch>>>,
    writer: Option<JoinHandle<super::WriterResult>>,
}

impl IntervalLog {
    /// Creates the file with its header now (so a bad path fails before any load); `base` is
    /// the instant interval timestamps count from.
    pub fn create(path: &Path, base: SystemTime, tool: &str) -> Result<Self, Error> {
        let io = |source| Error::Output {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        let base_secs = base
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        write!(
            out,
            "#[Logged with {tool}]\n#[Histogram log format version 1.3]\n#[StartTime: {base_secs:.3} (seconds since epoch), {}]\n#[BaseTime: {base_secs:.3} (seconds since epoch)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            humantime::format_rfc3339_millis(base)
        )
        .and_then(|_| out.flush())
        .map_err(io)?;
        let base_us = u64::try_from(
            base.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_micros(),
        )
        .unwrap_or(u64::MAX);
        let (tx, mut rx) = mpsc::channel::<Arc<IntervalBatch>>(CHANNEL_BATCHES);
        let file = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("interval-log".into())
            .spawn(move || {
                let fail = |e: std::io::Error| {
                    errln!(
                        "error: writing {} failed: {e}; the interval log is incomplete from here on (the summary is not)",
                        file.display()
                    );
                    (file.clone(), e)
                };
                // Each line goes to the file whole, as soon as it is complete (a few a second).
                let mut file = Lines {
                    file: out.into_inner().map_err(|e| fail(e.into_error()))?,
                    pending: Vec::new(),
                };
                let mut serializer = V2DeflateSerializer::new();
                let mut log = IntervalLogWriterBuilder::new()
                    .with_max_value_divisor(1000.0)
                    .begin_log_with(&mut file, &mut serializer)
                    .map_err(fail)?;
                let mut lines = 0u64;
                while let Some(batch) = rx.blocking_recv() {
                    let start =
                        Duration::from_micros(batch.start_epoch_us.saturating_sub(base_us));
                    for h in &batch.hists {
                        log.write_histogram(&h.hist, start, batch.duration, Tag::new(&h.tag.to_string()))
                            .map_err(|e| fail(std::io::Error::other(format!("{e:?}"))))?;
                        lines += 1;
                    }
                    if !batch.activity.is_empty() {
                        log.write_comment(&activity_comment(start, batch.duration, &batch.activity))
                            .map_err(fail)?;
                    }
                    // Back to the recorder, to be used again, unless it still holds them
                    // (then it gives them back).
                    IntervalBatch::give_back(batch);
                }
                drop(log);
                file.file.sync_data().map_err(fail)?;
                Ok(lines)
            })
            .map_err(|e| Error::Other(e.into()))?;
        Ok(IntervalLog {
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    /// A sender of intervals; sending waits when the writer is `CHANNEL_BATCHES` behind.
    pub fn sender(&self) -> Option<mpsc::Sender<Arc<IntervalBatch>>> {
        self.tx.clone()
    }

    /// The recorder's output to this log.
    pub(crate) fn output(&self) -> Option<ToLog> {
        self.tx.clone().map(ToLog::new)
    }

    /// Waits for every interval to be written; returns the interval lines written.
    pub fn finish(mut self) -> Result<u64, Error> {
        self.tx.take();
        super::join_writer(self.writer.take(), "the interval log writer")
    }
}

/// The interval log as an output of the recorder: each interval that had operations or users,
/// the last too, sent to the writer; when it is `CHANNEL_BATCHES` behind, the recorder waits.
pub(crate) struct ToLog {
    tx: mpsc::Sender<Arc<IntervalBatch>>,
    /// An interval the writer had no room for yet.
    held: Option<Arc<IntervalBatch>>,
}

impl ToLog {
    pub(crate) fn new(tx: mpsc::Sender<Arc<IntervalBatch>>) -> ToLog {
        ToLog { tx, held: None }
    }
}

impl Output for ToLog {
    fn name(&self) -> &'static str {
        "the interval log"
    }

    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        let (RunEvent::Interval(closed) | RunEvent::End(closed)) = event else {
            return Flow::More;
        };
        let batch = closed.batch;
        if batch.is_empty() {
            return Flow::More;
        }
        // The writer only goes away after an I/O error, which its `finish` reports.
        if let Err(mpsc::error::TrySendError::Full(batch)) = self.tx.try_send(Arc::clone(batch)) {
            self.held = Some(batch);
        }
        Flow::More
    }

    fn wait(&mut self) -> Option<BoxFuture<'static, ()>> {
        let batch = self.held.take()?;
        let tx = self.tx.clone();
        Some(Box::pin(async move {
            let _ = tx.send(batch).await;
        }))
    }
}

/// A writer that hands each complete line to the file in one write, so a line on disk is never
/// half written.
struct Lines {
    file: File,
    pending: Vec<u8>,
}

impl Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        if let Some(end) = self.pending.iter().rposition(|b| *b == b'\n') {
            self.file.write_all(&self.pending[..=end])?;
            self.pending.drain(..=end);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all(&self.pending)?;
        self.pending.clear();
        self.file.flush()
    }
}

/// `[Activity 3.000 1.000: insert=50/0 find=50/2]`: per group (by tag), the users running at the
/// interval's end and the operations that failed in it. A comment to HdrHistogram's readers;
/// the report reads it.
pub(crate) fn activity_comment(
    start: Duration,
    duration: Duration,
    activity: &[crate::metrics::Activity],
) -> String {
    let groups: Vec<String> = activity
        .iter()
        .map(|a| format!("{}={}/{}", a.tag, a.users, a.errors))
        .collect();
    format!(
        "[Activity {:.3} {:.3}: {}]",
        start.as_secs_f64(),
        duration.as_secs_f64(),
        groups.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::interval::Tag;
    use crate::metrics::{Activity, Closed, Label};

    fn interval(start_epoch_us: u64) -> Arc<IntervalBatch> {
        Arc::new(IntervalBatch {
            start_epoch_us,
            duration: Duration::from_secs(1),
            hists: Vec::new(),
            activity: vec![Activity {
                tag: Tag::latency(Label::group("g")),
                users: 1,
                errors: 0,
            }],
            spares: Default::default(),
        })
    }

    #[tokio::test]
    async fn an_interval_the_writer_has_no_room_for_is_held_and_waited_for_in_order() {
        let (tx, mut rx) = mpsc::channel(1);
        let mut out = ToLog::new(tx);
        let show = |out: &mut ToLog, batch: &Arc<IntervalBatch>| {
            out.event(&RunEvent::Interval(Closed {
                batch,
                totals: &[],
                segments: &[],
                elapsed: Duration::ZERO,
            }))
        };
        let (first, second) = (interval(1), interval(2));
        show(&mut out, &first);
        assert!(out.wait().is_none(), "the first had room");
        show(&mut out, &second);
        let wait = out
            .wait()
            .expect("the second is held: the recorder waits for it");
        // The writer takes the first; the second then goes, after it.
        let got = rx.recv().await.expect("the first");
        wait.await;
        let then = rx.recv().await.expect("the second");
        assert_eq!((got.start_epoch_us, then.start_epoch_us), (1, 2));
        // An interval where nothing ran and no user was running is not sent.
        let empty = Arc::new(IntervalBatch {
            activity: Vec::new(),
            ..(*interval(3)).clone()
        });
        show(&mut out, &empty);
        assert!(out.wait().is_none());
        assert!(rx.try_recv().is_err());
    }
}
