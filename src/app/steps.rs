//! What the commands that run a profile as a series of steps (`capacity`, `sweep`) share: the
//! options a step would ignore refused with the one that does the job, the base plan, the
//! console and output directory of the whole series, and one step run into a directory of its
//! own against the server reached once.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::session::{RunOptions, Session};
use super::start::{self, Server};
use crate::cli::RunArgs;
use crate::error::Error;
use crate::ops::{connect, MongoBackend};
use crate::plan::{profile, RunPlan};
use crate::summary::Summary;

/// An option of `run` a step would ignore: given or not, its flag, and what to use instead.
pub(super) type Ignored<'a> = (bool, &'a str, &'a str);

/// The profile's plan for a series of steps, after refusing what the series cannot honour:
/// `--part`, `--parts` without `--coordinator`, `--repeat`, `--duration`, `--loops`, `--scale` and `--threshold` (every
/// step runs for `--step` at the series' own load and is judged by `--slo`), and each of the command's own `ignored` options given
/// (`why`: what the command sets itself). The command line's live metrics are put in the plan, so they are refused with the
/// profile's.
pub(super) fn base_plan(
    command: &str,
    run: &RunArgs,
    ignored: &[Ignored],
    why: &str,
) -> Result<RunPlan, Error> {
    let parts_alone = run.parts.is_some() && run.coordinator.is_none();
    if run.part.is_some() || parts_alone || run.repeat > 1 {
        return Err(Error::Usage(format!(
            "{command} runs its own steps, on this machine or across parts it coordinates\n  fix: leave out --part and --repeat; for parts, give --parts N with --coordinator ADDR (each machine then runs `mongo-stress part --join URL`)"
        )));
    }
    let o = &run.overrides;
    // A step's own summary goes into its run directory; the series writes its own table.
    let outputs: [(bool, &str, &str); 4] = [
        (
            run.tsv.is_some(),
            "--tsv",
            "its own .tsv and .json in --out",
        ),
        (
            run.json.is_some(),
            "--json",
            "its own .tsv and .json in --out",
        ),
        (
            run.append,
            "--append",
            "its own .tsv in --out (history reads a series' steps with --steps)",
        ),
        (
            run.jtl.is_some(),
            "--jtl",
            "each step's samples.tsv under steps/ in --out",
        ),
    ];
    if let Some((_, flag, instead)) = outputs.iter().find(|i| i.0) {
        return Err(Error::Usage(format!(
            "{command} writes its own table of the steps, and each step's files, into --out, so {flag} would be ignored\n  fix: leave out {flag}; read {instead}"
        )));
    }
    let common: [Ignored; 4] = [
        (o.duration.is_some(), "--duration", "--step"),
        (
            o.scale.is_some(),
            "--scale",
            "the series' own load (capacity: --start-rate and --max-rate; sweep: --threads)",
        ),
        (
            o.loops.is_some(),
            "--loops",
            "--step (each step runs for a time)",
        ),
        (!o.thresholds.is_empty(), "--threshold", "--slo"),
    ];
    if let Some((_, flag, instead)) = ignored.iter().chain(&common).find(|i| i.0) {
        return Err(Error::Usage(format!(
            "{command} {why}, so {flag} would be ignored\n  fix: leave out {flag}; use {instead}"
        )));
    }
    let mut base = RunPlan::build(
        &profile::load_with(&run.profile, &run.overrides.genny())?,
        &(&run.overrides).into(),
    )?;
    base.metrics_listen = run.metrics_listen.clone().or(base.metrics_listen);
    base.metrics_push = run.metrics_push.clone().or(base.metrics_push);
    Ok(base)
}

/// A series under way: each step's options (no live lines: the series speaks for itself), and
/// where it writes.
pub(super) struct Series {
    pub(crate) opts: RunOptions,
    pub(crate) chatty: bool,
    pub(crate) out_dir: PathBuf,
    /// The series' directory, removed again if the series fails before a step measured.
    fresh: crate::rundir::Fresh,
    /// `--live`: each step shown as it runs.
    page: Option<(crate::watch::Page, crate::watch::Endpoint)>,
    command: &'static str,
}

impl Series {
    /// Checks the URI and makes the output directory: the last refusals before the server.
    pub(super) async fn start(
        command: &'static str,
        run: &RunArgs,
        base: &RunPlan,
        stop: &CancellationToken,
    ) -> Result<Series, Error> {
        let mut opts = start::options(run, base)?;
        let page = start::live_page(run, stop, command)?;
        let chatty = opts.chatty;
        opts.live = None;
        opts.chatty = false;
        if let Some(uri) = &run.uri {
            connect::parse(uri).await?;
        }
        let fresh = start::prepare_out_dir(run.out.as_deref(), base)?;
        super::writing_into(&fresh.dir);
        Ok(Series {
            opts,
            chatty,
            out_dir: fresh.dir.clone(),
            fresh,
            page,
            command,
        })
    }

    /// The series is over: the live page says so (and where the series' page is), and closes.
    pub(super) fn end_page(&mut self, code: i32) {
        if let Some((page, endpoint)) = self.page.take() {
            let words = match code {
                0 => "done".to_string(),
                130 => "interrupted".to_string(),
                c => format!("ended with exit code {c}"),
            };
            page.end(
                &format!("{}: {words}", self.command),
                code,
                &self.out_dir,
                &format!("{}.html", self.command),
            );
            endpoint.close();
        }
    }

    /// The series failed with `e` before any step measured: its directory goes, `e` is the
    /// answer.
    pub(super) fn failed(&self, e: Error) -> Error {
        self.fresh.discard_unmeasured();
        e
    }

    /// Interrupted before any step ran: its directory goes, the exit code of an interrupted
    /// command is the answer.
    pub(super) fn interrupted(&self) -> i32 {
        self.fresh.discard_unmeasured();
        crate::error::exit::INTERRUPTED
    }

    /// The live page, and the title a step in `dir` is shown under.
    pub(crate) fn step_page(&self, dir: &Path) -> Option<(crate::watch::Page, String)> {
        let title = format!(
            "{} step {}",
            self.command,
            dir.file_name().unwrap_or_default().to_string_lossy()
        );
        self.page.as_ref().map(|(p, _)| (p.clone(), title))
    }

    /// A line on stderr, unless `--quiet`.
    pub(super) fn say(&self, msg: String) {
        if self.chatty {
            errln!("{msg}");
        }
    }

    /// One step: `plan` run whole into `dir`, with its own sampler unless `--no-resources`.
    pub(super) async fn run_step(
        &self,
        run: &RunArgs,
        server: &Server,
        plan: &RunPlan,
        dir: &Path,
        stop: &CancellationToken,
    ) -> Result<Summary, Error> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Output {
            path: dir.to_path_buf(),
            source,
        })?;
        let sampler = if run.no_resources {
            None
        } else {
            Some(
                start::start_sampler(
                    run,
                    plan,
                    server,
                    dir,
                    &|_| {},
                    &Default::default(),
                    (None, self.page.as_ref().map(|(p, _)| p)),
                )
                .await?,
            )
        };
        let session = Session {
            plan,
            backend: MongoBackend::new(&server.connected.client, plan)
                .with_listeners(&server.uri, plan)
                .await?,
            opts: &self.opts,
            out_dir: dir,
            stop,
            server: server.info(),
            command_line: crate::redact::command_line(std::env::args()),
            url: start::jtl_url(&server.uri, plan),
            injector: None,
            live: None,
            page: self
                .step_page(dir)
                .map(|(page, title)| crate::watch::PageRun {
                    page,
                    title: Some(title),
                    steerable: false,
                }),
            later_plans: Default::default(),
        };
        session.run(sampler).await
    }
}
impl Drop for Series {
    /// A series that ended on an error: its page says so too.
    fn drop(&mut self) {
        if let Some((page, endpoint)) = self.page.take() {
            page.end(
                &format!("{}: failed (see its console)", self.command),
                crate::error::exit::ERRORS,
                &self.out_dir,
                &format!("{}.html", self.command),
            );
            endpoint.close();
        }
    }
}
