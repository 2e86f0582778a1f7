//! One invocation's runs, whatever the backend: set up, execute the stages while recording,
//! summarise, and write the run directory, `--repeat` times. `app::run` calls it with the
//! MongoDB backend; the pipeline test calls it with a scripted one.
//!
//! Here the repetition loop (`Session::run`, `repetition`); one repetition's wiring of users,
//! recorder and stages in `execute`; the run directory's files as the runs go in `files`.

mod execute;
mod files;
mod listeners;

pub(super) use files::write_summaries;
use files::{Logs, RunJson};

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::monitor::Sampler;
use crate::ops::{Backend, Prepared};
use crate::plan::RunPlan;
use crate::summary::judge::{self};
use crate::summary::{ServerInfo, StartInfo, Summary};

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
    /// What setup.drop does to a collection holding documents the tool did not write
    /// (`--force`: drop it).
    pub foreign: crate::ops::setup::Foreign,
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
    /// `--tag KEY=VALUE`, recorded in run.json.
    pub tags: std::collections::BTreeMap<String, String>,
    /// A part of a coordinated run (`mongo-stress part`): its link to the coordinator, which
    /// sets the start and takes each interval.
    pub link: Option<std::sync::Arc<crate::coordinate::link::Link>>,
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
    /// The plan's faults, done to the server during each run (`[[fault]]`, `--fault`).
    pub injector: Option<std::sync::Arc<crate::fault::Injector>>,
    /// Live metrics (`--metrics-listen`, `--metrics-push`).
    pub live: Option<crate::exporter::Live>,
    /// The live page (`--live`): each run's events, and its changes (`--live-control`).
    pub page: Option<crate::watch::PageRun>,
    /// The plans of the later stages' reads, explained as each stage begins (the first run
    /// only: Some while it goes).
    pub later_plans: std::sync::Mutex<Option<Vec<crate::ops::explain::QueryPlan>>>,
}

impl<B: Backend + Clone> Session<'_, B> {
    /// The first run's first stage's reads explained now; each later stage's just before it
    /// begins, once the stages before have loaded what it reads (`stages`).
    async fn explain_first(
        &self,
        run: u32,
        keys: &[crate::workload::KeySpace],
        summary: &mut Summary,
    ) {
        let explaining = run == 1 && summary.plans.is_empty();
        if explaining {
            let keys: Vec<_> = keys.iter().collect();
            summary.plans = self.backend.plans(self.plan, &keys, 0).await;
            for p in &summary.plans {
                self.say(format!("query plan: {}", p.line()));
            }
        }
        *self.later_plans.lock().unwrap_or_else(|e| e.into_inner()) = explaining.then(Vec::new);
    }

    /// The later stages' plans, once per label (a group's rate steps share theirs).
    fn add_later_plans(&self, summary: &mut Summary) {
        let later = self
            .later_plans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        for p in later.into_iter().flatten() {
            if !summary.plans.iter().any(|q| q.label == p.label) {
                summary.plans.push(p);
            }
        }
    }

    /// The sampler's rows so far: those in `resources.tsv`, read back (a long run holds none in
    /// memory), then those it could not write there.
    fn resource_rows(
        &self,
        unwritten: Vec<crate::monitor::ResourceRow>,
    ) -> Vec<crate::monitor::ResourceRow> {
        let path = crate::rundir::File::Resources.path(self.out_dir);
        let mut rows = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| crate::rundir::parse_resources(&text).ok())
            .map(|r| r.rows())
            .unwrap_or_default();
        rows.extend(unwritten);
        rows
    }

    /// The members' rows so far: `members.tsv` read back, then the rows it could not take.
    fn member_rows(
        &self,
        unwritten: Vec<crate::monitor::members::MemberRow>,
    ) -> Vec<crate::monitor::members::MemberRow> {
        let path = crate::rundir::File::Members.path(self.out_dir);
        let mut rows = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| crate::rundir::members::parse_members(&text).ok())
            .unwrap_or_default();
        rows.extend(unwritten);
        rows
    }

    /// Runs every repetition; files are rewritten after each, so an interruption keeps what
    /// completed. Errors are only those that stop before any result (setup, outputs); the
    /// sampler is stopped on them too, so it never polls a server that is being shut down.
    pub async fn run(&self, mut sampler: Option<Sampler>) -> Result<Summary, Error> {
        let result = self.run_sampled(&mut sampler).await;
        if let Some(s) = sampler.take() {
            s.stop().await;
        }
        result
    }

    async fn run_sampled(&self, sampler: &mut Option<Sampler>) -> Result<Summary, Error> {
        let mut summary = Summary::new(self.plan, self.opts.seed, self.server.clone());
        let run_json = RunJson::start(self, &summary).await?;
        if let Some(p) = &self.page {
            p.page
                .set_header(self.page_header(&summary, run_json.started_at()));
        }
        let logs = Logs::open(self, &summary.tool)?;
        for run in 1..=self.opts.repeat {
            if !self.repetition(run, &logs, sampler, &mut summary).await? {
                break;
            }
            if run < self.opts.repeat {
                // The report so far; the last one comes after the logs are closed.
                if let Err(e) = self.write_report().await {
                    errln!("error: {e}");
                }
            }
        }
        if summary.runs.is_empty() {
            summary.interrupted = true;
        }
        if let Some(sampler) = sampler.take() {
            let sampled = sampler.stop().await;
            summary.failures.extend(sampled.failures);
            summary.metrics_sources = sampled.sources;
            summary.member_warnings = sampled.member_warnings;
            summary.refresh(&self.resource_rows(sampled.unwritten), true);
        }
        logs.close(&mut summary).await;
        summary.refresh(&[], false);
        write_summaries(self.out_dir, &summary)?;
        run_json.finish(self, &summary)?;
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
        // One seed per run, for its setup and its stages alike (run 1: the seed as given).
        let run_seed = self.opts.seed.wrapping_add(u64::from(run) - 1);
        let prepared = match self.prepare(run_seed, begin).await {
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
        self.explain_first(run, &prepared.keys, summary).await;
        // A coordinated part begins when the coordinator says, once every part is set up: at
        // that instant on this machine's clock, recorded as the coordinator's (every part's
        // alike, as `merge` requires of one run's parts).
        let start = match (&self.opts.link, prepared.begin) {
            (Some(link), _) => {
                let (local, common) = link.ready(self.stop).await?;
                let mut start = self.wait_until(local).await;
                start.at = humantime::format_rfc3339_millis(common).to_string();
                Some(start)
            }
            (None, Some(at)) => Some(self.wait_until(at).await),
            (None, None) => None,
        };
        if self.stop.is_cancelled() {
            return Ok(false);
        }
        // The invariants before the load (one part alone cannot judge a shared collection).
        let checks =
            self.plan.collections.iter().any(|c| c.invariant.is_some()) && self.plan.part.is_none();
        let before = if checks {
            self.backend.invariants(self.plan).await
        } else {
            Default::default()
        };
        // Each part draws its own documents and keys from the run's shared seed.
        let seed = self
            .plan
            .part
            .as_ref()
            .map_or(run_seed, |p| p.part.seed(run_seed));
        let mut measured = self
            .execute(
                prepared.keys,
                seed,
                run,
                logs.samples.sender(),
                logs.intervals(),
                sampler.as_ref(),
            )
            .await;
        measured.start = start;
        self.add_later_plans(summary);
        if let Some(s) = sampler {
            // Judged once, on every member row and event it counts: those of the sampler's
            // first round after its end too.
            let end_ms = measured.stages.iter().map(|s| s.end_ms).max().unwrap_or(0);
            if !s.through(end_ms).await {
                let w = format!(
                    "the sampler read nothing after run {run}'s end within {} s: its members are judged on what was read by then",
                    crate::monitor::ROUND_AFTER_END.as_secs()
                );
                errln!("warning: members: {w}");
                s.warn(w);
            }
            let (unwritten, events) = s.members_so_far();
            (measured.members, measured.topology) = crate::summary::members::of_run(
                &self.member_rows(unwritten),
                &events,
                &measured.stages,
            );
        }
        if checks {
            let (after, errors) = self.backend.invariants(self.plan).await;
            measured.failures.extend(before.1.into_iter().chain(errors));
            measured.invariants = invariant_sums(&before.0, after);
        }
        measured.load = prepared
            .load
            .map(|(documents, took)| load_result(documents, took));
        let result = crate::summary::RunResult::judged(self.plan, measured);
        for inv in &result.invariants {
            self.say(inv.line());
        }
        let rows = match sampler {
            Some(s) => self.resource_rows(s.unwritten()),
            None => Vec::new(),
        };
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
            .filter_map(|t| t.relative.map(|m| (t, m)))
            .collect();
        if relative.is_empty() || summary.runs.is_empty() {
            return Ok(());
        }
        let gates: Vec<crate::compare::Gate> = relative
            .iter()
            .map(|(t, metric)| crate::compare::Gate {
                text: t.text.clone(),
                label: t.label.clone(),
                metric: *metric,
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
            last.thresholds
                .push(judge::judge_relative(t, g.change_pct, g.pass));
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

    /// The live page's header: the report's, as far as it is known while the run goes.
    fn page_header(&self, s: &Summary, started_at: &str) -> crate::watch::PageHeader {
        let kind = match s.server.kind {
            crate::summary::ServerKind::Embedded => "embedded",
            crate::summary::ServerKind::External => "external",
        };
        crate::watch::PageHeader {
            profile: format!("{} ({})", s.profile, s.origin),
            description: self.plan.description.clone(),
            seed: s.seed,
            server: format!("{kind} {} at {}", s.server.version, s.server.uri),
            host: crate::summary::run_info::HostInfo::read()
                .hostname
                .unwrap_or_else(|| "?".into()),
            command_line: self.command_line.join(" "),
            started_at: started_at.to_string(),
            finished_at: None,
            duration: None,
            exit: "running".into(),
            exit_code: None,
            tool: s.tool.clone(),
            warnings: Vec::new(),
        }
    }

    fn say(&self, msg: String) {
        if self.opts.chatty {
            errln!("{msg}");
        }
    }

    /// Waits for the common begin of the stages (`--start-at`, or part 0's marker); a part
    /// that arrives after it starts at once, and its result says how late it was.
    async fn wait_until(&self, at: SystemTime) -> StartInfo {
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            self.say(format!(
                "stages begin at {} (in {})",
                humantime::format_rfc3339_millis(at),
                humantime::format_duration(Duration::from_millis(
                    u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)
                ))
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
        // Said as each preload begins, once the setup's checks passed (a refused setup says
        // only its refusal).
        let preloading = |n: u64, namespace: &str| {
            self.say(format!("preloading {n} documents into {namespace}"));
        };
        self.backend
            .prepare(plan, seed, self.stop, self.opts.foreign, begin, &preloading)
            .await
    }
}

/// An output that cannot be written before any load is a usage problem (exit 2), not a failure.
pub(crate) fn before_load(e: Error) -> Error {
    match e {
        Error::Output { .. } => Error::Usage(e.to_string()),
        e => e,
    }
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Now as `YYYYmmdd-HHMMSS` (UTC): the default output directories' names.
pub(crate) fn now_stamp() -> String {
    let digits: String = now_rfc3339()
        .chars()
        .filter(|c| c.is_ascii_digit())
        .take(14)
        .collect();
    format!("{}-{}", &digits[..8], &digits[8..])
}

/// Each collection's invariant sums: read before the load (`before`) and after it.
fn invariant_sums(
    before: &[crate::ops::invariant::Reading],
    after: Vec<crate::ops::invariant::Reading>,
) -> Vec<crate::summary::InvariantSums> {
    after
        .into_iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.collection == a.collection)?;
            Some(crate::summary::InvariantSums {
                collection: a.collection,
                field: a.field,
                sum_before: b.sum,
                sum_after: a.sum,
                min: a.min,
                lowest: a.lowest,
                below_min: a.below,
                documents: a.documents,
            })
        })
        .collect()
}

/// The load phase's documents, inserted in `took`.
fn load_result(documents: u64, took: std::time::Duration) -> crate::summary::LoadResult {
    let secs = took.as_secs_f64();
    crate::summary::LoadResult {
        documents,
        secs,
        throughput: if secs > 0.0 {
            crate::num::real(documents) / secs
        } else {
            0.0
        },
        batch: crate::ops::setup::PRELOAD_BATCH,
    }
}
