//! One invocation's runs, whatever the backend: set up, execute the stages while recording,
//! summarise, and write the run directory, `--repeat` times. `app::run` calls it with the
//! MongoDB backend; the pipeline test calls it with a scripted one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use indicatif::MultiProgress;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{exit, Error};
use crate::executor::guard::{metrics_for, ThresholdAbort};
use crate::executor::{self, Clock, Context, ErrorGuard};
use crate::metrics::{
    IntervalBatch, IntervalCheck, IntervalSink, Logged, Recorded, Recorder, Watch,
};
use crate::monitor::Sampler;
use crate::ops::{Backend, Prepared};
use crate::plan::RunPlan;
use crate::report;
use crate::samplelog::hlog::IntervalLog;
use crate::samplelog::SampleLog;
use crate::summary::resources::StageSpan;
use crate::summary::run_info::{HostInfo, RunInfo};
use crate::summary::{RunResult, ServerInfo, StartInfo, Summary, ThresholdResult};
use crate::workload::KeySpace;

/// Capacity of the sample channel between virtual users and the recorder.
const SAMPLE_CHANNEL: usize = 64 * 1024;

/// What the command line asked for, resolved once: everything a session needs besides the plan.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub seed: u64,
    pub repeat: u32,
    /// Live report interval; None: quiet.
    pub live: Option<Duration>,
    /// Say what happens (server, stages, preload) on stderr.
    pub chatty: bool,
    /// Let setup.drop drop a collection holding documents the tool did not write.
    pub force: bool,
    /// Write `samples.tsv`.
    pub samples: bool,
    /// Also write JMeter's CSV here.
    pub jtl: Option<PathBuf>,
    /// Length of the interval histograms in `latency.hlog`.
    pub hdr_interval: Duration,
    /// Write `latency.hlog`.
    pub interval_log: bool,
    /// The run that relative thresholds (`<= +10%`) compare against.
    pub baseline: Option<PathBuf>,
    /// When the first run's stages begin (`--start-at`); None: after setup.
    pub start_at: Option<SystemTime>,
}

/// One invocation: the plan, where requests go, and where results are written.
pub struct Session<'a, B> {
    pub plan: &'a RunPlan,
    pub backend: B,
    pub opts: &'a RunOptions,
    pub out_dir: &'a Path,
    pub stop: &'a CancellationToken,
    pub server: ServerInfo,
    /// The command line as run.json records it (passwords removed).
    pub command_line: Vec<String>,
    /// What the JTL's URL column says: the deployment, database and collection.
    pub url: String,
}

impl<B: Backend + Clone> Session<'_, B> {
    /// Runs every repetition; files are rewritten after each, so an interruption keeps what
    /// completed. Errors are only those that stop before any result (setup, outputs).
    pub async fn run(&self, sampler: Option<Sampler>) -> Result<Summary, Error> {
        let mut summary = Summary::new(self.plan, self.opts.seed, self.server.clone());
        let record = Record::start(self, &summary).await?;
        let logs = Logs::open(self, &summary.tool)?;
        for run in 1..=self.opts.repeat {
            if !self.repetition(run, &logs, &sampler, &mut summary).await? {
                break;
            }
            if run < self.opts.repeat {
                // The report so far; the last one comes after the logs are closed.
                if let Err(e) = self.write_report().await {
                    eprintln!("error: {e}");
                }
            }
        }
        if summary.runs.is_empty() {
            summary.interrupted = true;
        }
        if let Some(sampler) = sampler {
            let sampled = sampler.stop().await;
            summary.failures.extend(sampled.failures);
            summary.metrics_sources = sampled.sources;
            summary.refresh(&sampled.rows, true);
        }
        logs.close(&mut summary).await;
        summary.refresh(&[], false);
        write_summaries(self.out_dir, &summary)?;
        record.finish(self, &summary)?;
        if let Some(baseline) = &self.opts.baseline {
            self.against_baseline(baseline, &mut summary)?;
            write_summaries(self.out_dir, &summary)?;
        }
        if let Err(e) = self.write_report().await {
            summary
                .failures
                .push(format!("report.html could not be written: {e}"));
            summary.refresh(&[], false);
            write_summaries(self.out_dir, &summary)?;
        }
        Ok(summary)
    }

    /// Run `run` of `--repeat`: set up, execute, summarise, write the summaries. False when
    /// there is nothing more to do (interrupted, or a later run's setup failed).
    async fn repetition(
        &self,
        run: u32,
        logs: &Logs,
        sampler: &Option<Sampler>,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        if self.stop.is_cancelled() {
            return Ok(false);
        }
        if self.opts.repeat > 1 {
            self.say(format!("run {run} of {}", self.opts.repeat));
        }
        let begin = if run == 1 { self.opts.start_at } else { None };
        let prepared = match self
            .prepare(self.opts.seed.wrapping_add(u64::from(run)), begin)
            .await
        {
            Ok(prepared) => prepared,
            // Nothing measured yet: the error is the whole answer (exit 2 or 3).
            Err(e) if summary.runs.is_empty() => return Err(e),
            // Later runs of --repeat: keep what the earlier ones measured.
            Err(e) => {
                summary
                    .failures
                    .push(format!("run {run} could not start: {e}"));
                return Ok(false);
            }
        };
        let start = match prepared.begin {
            Some(at) => Some(self.wait_until(at).await),
            None => None,
        };
        if self.stop.is_cancelled() {
            return Ok(false);
        }
        let seed = self.opts.seed.wrapping_add(u64::from(run) - 1);
        // Each part draws its own documents and keys from the run's shared seed.
        let seed = self.plan.part.as_ref().map_or(seed, |p| p.part.seed(seed));
        let mut result = self
            .execute(
                prepared.keys,
                seed,
                run,
                logs.samples.sender(),
                logs.intervals(),
            )
            .await;
        result.start = start;
        result.load = prepared.load.map(|(documents, took)| {
            let secs = took.as_secs_f64();
            crate::summary::LoadResult {
                documents,
                secs,
                throughput: if secs > 0.0 {
                    documents as f64 / secs
                } else {
                    0.0
                },
                batch: crate::ops::setup::PRELOAD_BATCH,
            }
        });
        let rows = sampler.as_ref().map(Sampler::rows).unwrap_or_default();
        summary.add_run(result, &rows, sampler.is_some());
        write_summaries(self.out_dir, summary)?;
        Ok(true)
    }

    /// Relative thresholds (`find.p99 <= +10%`) judged as `compare` judges a gate: this run
    /// against the baseline's, failing only beyond noise; they join the last run's thresholds.
    fn against_baseline(&self, baseline: &Path, summary: &mut Summary) -> Result<(), Error> {
        let relative: Vec<_> = self
            .plan
            .thresholds
            .iter()
            .filter_map(|t| t.relative.as_ref().map(|m| (t, m)))
            .collect();
        if relative.is_empty() || summary.runs.is_empty() {
            return Ok(());
        }
        let gates: Vec<crate::compare::Gate> = relative
            .iter()
            .map(|(t, metric)| crate::compare::Gate {
                text: t.text.clone(),
                label: t.label.clone(),
                metric: metric.to_string(),
                above: matches!(
                    t.cmp,
                    crate::plan::thresholds::Cmp::Lt | crate::plan::thresholds::Cmp::Le
                ),
                limit_pct: t.limit,
            })
            .collect();
        let (base, new) = (
            crate::rundir::RunDir::open(baseline)?,
            crate::rundir::RunDir::open(self.out_dir)?,
        );
        let judged = crate::compare::compare(&base, &new, &gates, self.opts.seed)?;
        let last = summary.runs.last_mut().expect("a run");
        for ((t, _), g) in relative.iter().zip(judged.gates) {
            last.thresholds.push(ThresholdResult {
                threshold: t.text.clone(),
                value: g.change_pct.unwrap_or(0.0),
                limit: t.limit,
                unit: "% change".into(),
                pass: g.pass,
                aborted: false,
                deferred: false,
            });
        }
        Ok(())
    }

    /// `report.html` from the files just written (off the async runtime's workers).
    async fn write_report(&self) -> Result<(), Error> {
        let dir = self.out_dir.to_path_buf();
        tokio::task::spawn_blocking(move || super::report::write(&dir, None).map(|_| ()))
            .await
            .map_err(|e| Error::Other(e.into()))?
    }

    fn say(&self, msg: String) {
        if self.opts.chatty {
            eprintln!("{msg}");
        }
    }

    /// Waits for the common begin of the stages (`--start-at`, or part 0's marker); a part
    /// that arrives after it starts at once, and its result says how late it was.
    async fn wait_until(&self, at: SystemTime) -> StartInfo {
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            self.say(format!(
                "stages begin at {} (in {})",
                humantime::format_rfc3339_millis(at),
                humantime::format_duration(Duration::from_millis(wait.as_millis() as u64))
            ));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.stop.cancelled() => {}
            }
        }
        let late = SystemTime::now().duration_since(at).unwrap_or_default();
        StartInfo {
            at: humantime::format_rfc3339_millis(at).to_string(),
            late_ms: late.as_secs_f64() * 1000.0,
        }
    }

    async fn prepare(&self, seed: u64, begin: Option<SystemTime>) -> Result<Prepared, Error> {
        let plan = self.plan;
        match &plan.part {
            Some(p) if p.part.index > 0 => self.say(format!(
                "part {}: waiting for part 0 to set up {}.{}",
                p.part, plan.target.database, plan.target.collection
            )),
            _ => {}
        }
        if plan.setup.preload > 0 && plan.part.as_ref().is_none_or(|p| p.part.index == 0) {
            self.say(format!(
                "preloading {} documents into {}.{}",
                plan.setup.preload, plan.target.database, plan.target.collection
            ));
        }
        self.backend
            .prepare(plan, seed, self.stop, self.opts.force, begin)
            .await
    }

    /// One repetition: every stage in order, recorded, as one `RunResult`.
    async fn execute(
        &self,
        keys: KeySpace,
        seed: u64,
        run: u32,
        log: Option<mpsc::Sender<Vec<Logged>>>,
        hlog: Option<mpsc::Sender<IntervalBatch>>,
    ) -> RunResult {
        let plan = self.plan;
        let groups = plan.groups().count();
        let active: Arc<Vec<AtomicU32>> =
            Arc::new((0..groups).map(|_| AtomicU32::new(0)).collect());
        let (tx, rx) = mpsc::channel(SAMPLE_CHANNEL);
        // On a terminal the live lines are bars; the stage lines go through them too.
        let bars = self
            .opts
            .live
            .and_then(|_| report::live::Live::terminal_bars());
        // The run's own stop: Ctrl-C (the parent) stops it, and so does the error guard, which
        // must not stop later runs of --repeat.
        let run_stop = self.stop.child_token();
        let stopped_early = Arc::new(OnceLock::new());
        let recorder = tokio::spawn(
            self.recorder(
                bars.clone(),
                Arc::clone(&active),
                &run_stop,
                &stopped_early,
                log,
                hlog,
            )
            .run(rx),
        );
        let ctx = Arc::new(Context {
            backend: self.backend.clone(),
            gen: Arc::clone(&plan.document),
            keys: Arc::new(keys),
            samples: tx,
            stop: run_stop.clone(),
            active,
            missed: (0..groups).map(|_| AtomicU64::new(0)).collect(),
            key_state: (0..groups).map(|_| Default::default()).collect(),
            seed,
            clock: Clock::new(),
            op_timeout: plan.target.op_timeout,
        });
        let started_at = now_rfc3339();
        let t0 = Instant::now();
        let (spans, mut failures) = self.stages(&ctx, &run_stop, bars.as_ref()).await;
        let missed: Vec<u64> = ctx
            .missed
            .iter()
            .map(|m| m.load(Ordering::Relaxed))
            .collect();
        drop(ctx);
        let Recorded {
            groups: mut metrics,
            warmup,
            failures: recorder_failures,
        } = recorder.await.unwrap_or_else(|e| Recorded {
            groups: vec![Default::default(); groups],
            warmup: vec![Default::default(); groups],
            failures: vec![format!(
                "the recorder failed and its measurements are lost: {e}"
            )],
        });
        failures.extend(recorder_failures);
        for (m, missed) in metrics.iter_mut().zip(missed) {
            m.missed = missed;
        }
        let mut result = RunResult::new(
            run,
            started_at,
            t0.elapsed().as_secs_f64(),
            self.stop.is_cancelled(),
            plan,
            &metrics,
            &warmup,
        );
        result.stages = spans;
        result.stopped_early = stopped_early.get().cloned();
        result.thresholds = plan
            .thresholds
            .iter()
            .filter(|t| t.relative.is_none())
            .map(|t| {
                let value = t.metric.value(&metrics_for(t, &metrics));
                // A threshold that stopped the run failed, whatever the whole run says.
                let aborted = result
                    .stopped_early
                    .as_deref()
                    .is_some_and(|r| r.contains(&format!("`{}`", t.text)));
                let deferred = plan.part.is_some() && t.metric.scales_with_load();
                ThresholdResult {
                    threshold: t.text.clone(),
                    value,
                    limit: t.limit,
                    unit: t.metric.unit().to_string(),
                    pass: deferred || (t.cmp.holds(value, t.limit) && !aborted),
                    aborted,
                    deferred,
                }
            })
            .collect();
        result.failures = failures;
        result
    }
}

impl<B: Backend + Clone> Session<'_, B> {
    /// The recorder of one run: the error-rate stop watches it, the live lines hang on it.
    fn recorder(
        &self,
        bars: Option<MultiProgress>,
        active: Arc<Vec<AtomicU32>>,
        run_stop: &CancellationToken,
        stopped_early: &Arc<OnceLock<String>>,
        log: Option<mpsc::Sender<Vec<Logged>>>,
        hlog: Option<mpsc::Sender<IntervalBatch>>,
    ) -> Recorder {
        let plan = self.plan;
        let watch = plan.stop_on_error_pct.map(|pct| {
            Box::new(ErrorGuard::new(
                pct,
                run_stop.clone(),
                Arc::clone(stopped_early),
            )) as Box<dyn Watch>
        });
        let live = self
            .opts
            .live
            .map(|_| Box::new(report::live::Live::new(plan, bars)) as Box<dyn IntervalSink>);
        let tick = self.opts.hdr_interval;
        // Live lines cover whole intervals, so they come from the same histograms as the log.
        let live_every = self.opts.live.map_or(1, |l| {
            (l.as_secs_f64() / tick.as_secs_f64()).round().max(1.0) as u32
        });
        // A part cannot stop on a limit meant for the whole run's throughput or counts.
        let aborting: Vec<_> = plan
            .thresholds
            .iter()
            .filter(|t| t.abort && !(plan.part.is_some() && t.metric.scales_with_load()))
            .cloned()
            .collect();
        let check = (!aborting.is_empty()).then(|| {
            Box::new(ThresholdAbort {
                rules: aborting,
                stop: run_stop.clone(),
                reason: Arc::clone(stopped_early),
            }) as Box<dyn IntervalCheck>
        });
        Recorder {
            check,
            names: plan.groups().map(|g| g.name.clone()).collect(),
            open_loop: plan.groups().map(|g| g.rate.is_some()).collect(),
            active,
            tick,
            live_every,
            live,
            watch,
            log,
            hlog,
        }
    }

    /// Every stage in order until the run's stop: when each ran, and what failed inside.
    async fn stages(
        &self,
        ctx: &Arc<Context<B>>,
        run_stop: &CancellationToken,
        bars: Option<&MultiProgress>,
    ) -> (Vec<StageSpan>, Vec<String>) {
        let mut spans = Vec::new();
        let mut failures = Vec::new();
        for stage in &self.plan.stages {
            if run_stop.is_cancelled() {
                break;
            }
            if !stage.name.is_empty() && self.opts.live.is_some() {
                let groups: Vec<String> = stage
                    .groups
                    .iter()
                    .map(|g| format!("{} x{}", g.name, g.threads))
                    .collect();
                let line = format!("stage {}: {}", stage.name, groups.join(", "));
                match bars {
                    Some(b) => {
                        let _ = b.println(line);
                    }
                    None => eprintln!("{line}"),
                }
            }
            // The resource summary covers what the summary counts: after the warm-ups.
            let skip = stage
                .groups
                .iter()
                .filter(|g| !g.warmup.is_zero())
                .map(|g| g.start_delay + g.warmup)
                .max()
                .unwrap_or_default();
            let began_ms = epoch_ms();
            failures.extend(executor::run_stage(stage, ctx).await);
            spans.push(StageSpan {
                label: self.plan.stage_label(stage),
                began_ms,
                start_ms: began_ms + skip.as_millis() as u64,
                end_ms: epoch_ms(),
            });
        }
        (spans, failures)
    }
}

/// `run.json`: written when the session starts, and again with its end.
struct Record {
    host: HostInfo,
    started_at: String,
}

impl Record {
    async fn start<B>(session: &Session<'_, B>, summary: &Summary) -> Result<Record, Error> {
        let host = tokio::task::spawn_blocking(HostInfo::read)
            .await
            .map_err(|e| Error::Other(e.into()))?;
        let record = Record {
            host,
            started_at: now_rfc3339(),
        };
        record.write(session, summary, None)?;
        Ok(record)
    }

    fn finish<B>(&self, session: &Session<'_, B>, summary: &Summary) -> Result<(), Error> {
        self.write(session, summary, Some(now_rfc3339()))
    }

    fn write<B>(
        &self,
        session: &Session<'_, B>,
        summary: &Summary,
        finished: Option<String>,
    ) -> Result<(), Error> {
        let info = RunInfo::new(
            session.plan,
            summary,
            session.command_line.clone(),
            self.host.clone(),
            self.started_at.clone(),
            finished,
        );
        report::run_json::write(&session.out_dir.join("run.json"), &info)
    }
}

/// The logs written as the runs go: `samples.tsv` (and the JTL), `latency.hlog`.
struct Logs {
    samples: SampleLog,
    /// A sample log is being written (samples.tsv or the JTL).
    logging: bool,
    intervals: Option<IntervalLog>,
}

impl Logs {
    /// Creates the files now, so a path that cannot be written fails before any load (exit 2).
    fn open<B>(session: &Session<'_, B>, tool: &str) -> Result<Logs, Error> {
        let opts = session.opts;
        let samples_path = opts.samples.then(|| session.out_dir.join("samples.tsv"));
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
                    &session.out_dir.join("latency.hlog"),
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

    fn intervals(&self) -> Option<mpsc::Sender<IntervalBatch>> {
        self.intervals.as_ref().and_then(IntervalLog::sender)
    }

    /// Waits for both to be written whole. A log that failed (a full disk) was reported when it
    /// happened; the summary is whole all the same, and its failures say what is missing.
    async fn close(self, summary: &mut Summary) {
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
                    .map(|r| r.total().samples + r.warmup.iter().map(|w| w.samples).sum::<u64>())
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

/// The exit code a finished summary earns (SPEC: 130 interrupted, 4 a threshold failed, 1
/// failed, 0 done).
pub fn exit_code(summary: &Summary) -> i32 {
    let threshold_failed = summary
        .runs
        .iter()
        .any(|r| r.thresholds.iter().any(|t| !t.pass));
    if summary.interrupted {
        exit::INTERRUPTED
    } else if threshold_failed {
        exit::THRESHOLD
    } else if summary.failed() || summary.runs.iter().any(|r| r.total().errors > 0) {
        exit::ERRORS
    } else {
        exit::OK
    }
}

/// An output that cannot be written before any load is a usage problem (exit 2), not a failure.
pub fn before_load(e: Error) -> Error {
    match e {
        Error::Output { .. } => Error::Usage(e.to_string()),
        e => e,
    }
}

pub(super) fn write_summaries(dir: &Path, summary: &Summary) -> Result<(), Error> {
    report::write_to(&dir.join("summary.tsv"), summary, report::tsv::render)?;
    report::write_to(
        &dir.join("resources-summary.tsv"),
        summary,
        report::tsv::render_resources,
    )?;
    if summary.runs.iter().any(|r| !r.thresholds.is_empty()) {
        report::write_to(
            &dir.join("thresholds.tsv"),
            summary,
            report::tsv::render_thresholds,
        )?;
    }
    report::write_to(&dir.join("summary.json"), summary, report::json::render)
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
