//! The run directory's files as the runs go: `run.json` (written when the session starts and
//! again with its end), the logs (`samples.tsv` and the JTL, `latency.hlog`), and the summaries
//! after every run.

use std::path::Path;

use super::{before_load, now_rfc3339, Session};
use crate::error::Error;
use crate::report;
use crate::rundir::File;
use crate::samplelog::hlog::IntervalLog;
use crate::samplelog::SampleLog;
use crate::summary::run_info::{HostInfo, RunInfo};
use crate::summary::Summary;

/// `run.json`: written when the session starts, and again with its end.
pub(super) struct RunJson {
    host: HostInfo,
    started_at: String,
}

impl RunJson {
    pub(super) async fn start<B>(
        session: &Session<'_, B>,
        summary: &Summary,
    ) -> Result<RunJson, Error> {
        let host = tokio::task::spawn_blocking(HostInfo::read)
            .await
            .map_err(|e| Error::Other(e.into()))?;
        let record = RunJson {
            host,
            started_at: now_rfc3339(),
        };
        record.write(session, summary, None)?;
        Ok(record)
    }

    pub(super) fn started_at(&self) -> &str {
        &self.started_at
    }

    pub(super) fn finish<B>(
        &self,
        session: &Session<'_, B>,
        summary: &Summary,
    ) -> Result<(), Error> {
        self.write(session, summary, Some(now_rfc3339()))
    }

    fn write<B>(
        &self,
        session: &Session<'_, B>,
        summary: &Summary,
        finished: Option<String>,
    ) -> Result<(), Error> {
        let opts = session.opts;
        let info = RunInfo::new(
            session.plan,
            summary,
            session.command_line.clone(),
            self.host.clone(),
            (self.started_at.clone(), finished),
            (opts.hdr_interval, opts.interval_log),
            opts.tags.clone(),
        );
        crate::rundir::write_run_info(session.out_dir, &info)
    }
}

/// The logs written as the runs go: `samples.tsv` (and the JTL), `latency.hlog`.
pub(super) struct Logs {
    pub(super) samples: SampleLog,
    /// A sample log is being written (samples.tsv or the JTL).
    logging: bool,
    intervals: Option<IntervalLog>,
}

impl Logs {
    /// Creates the files now, so a path that cannot be written fails before any load (exit 2).
    pub(super) fn open<B>(session: &Session<'_, B>, tool: &str) -> Result<Logs, Error> {
        let opts = session.opts;
        let samples_path = opts.samples.then(|| File::Samples.path(session.out_dir));
        let samples = SampleLog::create(
            samples_path.as_deref(),
            opts.jtl.as_deref(),
            session.plan.groups().map(|g| g.name.clone()).collect(),
            session.url.clone(),
        )
        .map_err(before_load)?;
        let intervals = opts
            .interval_log
            .then(|| {
                IntervalLog::create(
                    &File::LatencyHlog.path(session.out_dir),
                    std::time::SystemTime::now(),
                    tool,
                )
            })
            .transpose()
            .map_err(before_load)?;
        Ok(Logs {
            samples,
            logging: samples_path.is_some() || opts.jtl.is_some(),
            intervals,
        })
    }

    /// The recorder's output to `latency.hlog`, when it is written.
    pub(super) fn intervals(&self) -> Option<crate::samplelog::hlog::ToLog> {
        self.intervals.as_ref().and_then(IntervalLog::output)
    }

    /// Waits for both to be written whole. A log that failed (a full disk) was reported when it
    /// happened; the summary is whole all the same, and its failures say what is missing.
    pub(super) async fn close(self, summary: &mut Summary) {
        let Logs {
            samples,
            logging,
            intervals,
        } = self;
        match tokio::task::spawn_blocking(move || samples.finish()).await {
            Ok(Ok(logged)) => {
                // Every completed operation is logged, the warm-up's too.
                let measured: u64 = summary
                    .runs
                    .iter()
                    .map(|r| {
                        // A watch group's events stand beside the TOTAL, and are logged too.
                        let heard: u64 = r
                            .streams
                            .iter()
                            .filter_map(|s| {
                                let label = crate::metrics::Label::group(&s.group);
                                r.rows.iter().find(|row| row.label == label)
                            })
                            .map(|row| row.samples)
                            .sum();
                        r.total().samples + heard + r.warmup.iter().map(|w| w.samples).sum::<u64>()
                    })
                    .sum();
                if logging && logged != measured {
                    summary.failures.push(format!(
                        "the sample log has {logged} lines but {measured} samples were measured"
                    ));
                }
            }
            Ok(Err(e)) => summary.failures.push(e.to_string()),
            Err(e) => summary
                .failures
                .push(format!("the sample log writer failed: {e}")),
        }
        let finished =
            tokio::task::spawn_blocking(move || intervals.map_or(Ok(0), IntervalLog::finish));
        match finished.await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => summary.failures.push(e.to_string()),
            Err(e) => summary
                .failures
                .push(format!("the interval log writer failed: {e}")),
        }
    }
}

pub(in crate::app) fn write_summaries(dir: &Path, summary: &Summary) -> Result<(), Error> {
    report::write_to(&File::SummaryTsv.path(dir), summary, report::tsv::render)?;
    report::write_to(
        &File::ResourcesSummary.path(dir),
        summary,
        report::tsv::render_resources,
    )?;
    if summary.runs.iter().any(|r| !r.thresholds.is_empty()) {
        report::write_to(
            &File::Thresholds.path(dir),
            summary,
            report::tsv::render_thresholds,
        )?;
    }
    if summary.runs.iter().any(|r| r.audit.is_some()) {
        report::write_to(&File::Audit.path(dir), summary, report::tsv::render_audit)?;
    }
    if summary.runs.iter().any(|r| !r.streams.is_empty()) {
        report::write_to(
            &File::Changes.path(dir),
            summary,
            report::tsv::render_changes,
        )?;
    }
    if report::rollups::applies(summary) {
        report::write_to(&dir.join("rollups.json"), summary, report::rollups::render)?;
    }
    report::write_to(&File::SummaryJson.path(dir), summary, report::json::render)
}
