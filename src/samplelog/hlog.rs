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
use crate::metrics::IntervalBatch;

/// Interval batches in flight between the recorder and the writer.
const CHANNEL_BATCHES: usize = 64;

pub struct IntervalLog {
    tx: Option<mpsc::Sender<IntervalBatch>>,
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
        let (tx, mut rx) = mpsc::channel::<IntervalBatch>(CHANNEL_BATCHES);
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
                    for h in batch.hists {
                        log.write_histogram(&h.hist, start, batch.duration, Tag::new(&h.tag.to_string()))
                            .map_err(|e| fail(std::io::Error::other(format!("{e:?}"))))?;
                        lines += 1;
                        // Back to the recorder, to be emptied and used again.
                        batch.spares.give(h.hist);
                    }
                    if !batch.activity.is_empty() {
                        log.write_comment(&activity_comment(start, batch.duration, &batch.activity))
                            .map_err(fail)?;
                    }
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

    /// A sender for the recorder; sending waits when the writer is `CHANNEL_BATCHES` behind.
    pub fn sender(&self) -> Option<mpsc::Sender<IntervalBatch>> {
        self.tx.clone()
    }

    /// Waits for every interval to be written; returns the interval lines written.
    pub fn finish(mut self) -> Result<u64, Error> {
        self.tx.take();
        super::join_writer(self.writer.take(), "the interval log writer")
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
