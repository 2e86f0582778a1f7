//! The logs written as the run goes, each by a thread of its own so workers never format text
//! or touch a file: the per-operation sample log (`samples.tsv`) and its JMeter twin (`--jtl`,
//! JMeter's default CSV result format), whose lines `lines` formats; and the interval log of
//! HdrHistograms (`hlog`: `latency.hlog`). The recorder hands them batches over bounded
//! channels, so a slow disk slows the run (backpressure) rather than losing lines.
//!
//! Owns: these files and their formats. Never: computes a metric or decides the exit code (each
//! reports what it wrote, and `app` compares).

pub mod hlog;
mod lines;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::error::Error;
use crate::metrics::Logged;

use lines::{csv, format_jtl, format_tsv};
pub(crate) use lines::{JTL_HEADER, SAMPLES_HEADER};

/// Batches in flight between the recorder and the writer.
const CHANNEL_BATCHES: usize = 8;

pub(crate) struct SampleLog {
    tx: Option<mpsc::Sender<Vec<Logged>>>,
    writer: Option<JoinHandle<WriterResult>>,
}

struct Outputs {
    tsv: Option<BufWriter<File>>,
    jtl: Option<BufWriter<File>>,
}

impl SampleLog {
    /// Creates the files (with headers) now, so a bad path fails before the load starts.
    pub(crate) fn create(
        tsv: Option<&Path>,
        jtl: Option<&Path>,
        groups: Vec<String>,
        url: String,
    ) -> Result<Self, Error> {
        let open = |p: &Path, header: &str| -> Result<BufWriter<File>, Error> {
            let io = |source| Error::Output {
                path: p.to_path_buf(),
                source,
            };
            let mut w = BufWriter::with_capacity(1 << 20, File::create(p).map_err(io)?);
            writeln!(w, "{header}").map_err(io)?;
            w.flush().map_err(io)?;
            Ok(w)
        };
        let mut out = Outputs {
            tsv: tsv.map(|p| open(p, SAMPLES_HEADER)).transpose()?,
            jtl: jtl.map(|p| open(p, JTL_HEADER)).transpose()?,
        };
        let (tx, mut rx) = mpsc::channel::<Vec<Logged>>(CHANNEL_BATCHES);
        let (tsv_path, jtl_path) = (tsv.map(Path::to_path_buf), jtl.map(Path::to_path_buf));
        let writer = std::thread::Builder::new()
            .name("sample-log".into())
            .spawn(move || {
                let mut lines = 0u64;
                let mut line = String::with_capacity(256);
                let url = csv(&url);
                // On a write error (a full disk, say) say so at once, then stop writing; the
                // collector goes on counting, so the summary stays whole, and `finish` reports it.
                let fail = |path: &Option<PathBuf>, e: std::io::Error| {
                    let path = path.clone().unwrap_or_default();
                    errln!(
                        "error: writing {} failed: {e}; the sample log is incomplete from here on (the summary is not)",
                        path.display()
                    );
                    (path, e)
                };
                while let Some(batch) = rx.blocking_recv() {
                    for l in &batch {
                        if let Some(w) = out.tsv.as_mut() {
                            line.clear();
                            format_tsv(&mut line, &l.sample, &groups);
                            w.write_all(line.as_bytes()).map_err(|e| fail(&tsv_path, e))?;
                        }
                        if let Some(w) = out.jtl.as_mut() {
                            line.clear();
                            format_jtl(&mut line, l, &groups, &url);
                            w.write_all(line.as_bytes()).map_err(|e| fail(&jtl_path, e))?;
                        }
                        lines += 1;
                    }
                }
                for (w, path) in [(out.tsv.as_mut(), &tsv_path), (out.jtl.as_mut(), &jtl_path)] {
                    if let Some(w) = w {
                        w.flush().map_err(|e| fail(path, e))?;
                        // A device such as /dev/null cannot be synced, which loses nothing; a
                        // regular file that cannot be synced may lose lines.
                        let regular = w.get_ref().metadata().is_ok_and(|m| m.is_file());
                        if let Err(e) = w.get_ref().sync_data() {
                            if regular {
                                return Err(fail(path, e));
                            }
                        }
                    }
                }
                Ok(lines)
            })
            .map_err(|e| Error::Other(e.into()))?;
        Ok(SampleLog {
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    /// A sender for the recorder; sending waits when the writer is `CHANNEL_BATCHES` behind.
    pub(crate) fn sender(&self) -> Option<mpsc::Sender<Vec<Logged>>> {
        self.tx.clone()
    }

    /// Waits for every line to be written and the files synced; returns the lines written.
    pub(crate) fn finish(mut self) -> Result<u64, Error> {
        self.tx.take();
        join_writer(self.writer.take(), "the sample log writer")
    }
}

/// What a log's writer thread returns: the lines written, or the file and error that stopped it.
pub(crate) type WriterResult = Result<u64, (PathBuf, std::io::Error)>;

/// Waits for a log's writer thread (its sender already dropped): the lines it wrote, or what
/// stopped it, a write error or a panic, named as `what`.
pub(crate) fn join_writer(
    writer: Option<JoinHandle<WriterResult>>,
    what: &str,
) -> Result<u64, Error> {
    match writer.map(|w| w.join()) {
        Some(Ok(Ok(n))) => Ok(n),
        Some(Ok(Err((path, source)))) => Err(Error::Output { path, source }),
        Some(Err(p)) => Err(Error::Other(anyhow::anyhow!(
            "{what} panicked: {}",
            crate::metrics::panic_message(p.as_ref())
        ))),
        None => Ok(0),
    }
}
