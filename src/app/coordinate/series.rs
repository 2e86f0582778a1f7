//! A series of steps (`sweep`, `capacity`) run here or across coordinated parts: `Runner` runs
//! each step where the command line says, and `part_steps` is a part's side, which stays joined
//! for every step. Each step is a barrier: the coordinator orders it (`Go::Step`, with its
//! load), every part sets it up (part 0) or waits for that, they start it together, each sends
//! the step's files, and the coordinator merges them into the step's directory, from which the
//! series reads the step as it reads a step run here. A part lost or failed ends the series:
//! a step without one part's share would measure another load.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::{join_timeout, merge_parts, part_args, read_files, said, Serving, STOP_WAIT, TICK};
use crate::app::start::Server;
use crate::app::steps::Series;
use crate::cli::{PartArgs, PartLoss, RunArgs};
use crate::coordinate::hub::News;
use crate::coordinate::link::{Link, Next};
use crate::coordinate::{PlanDoc, SeriesKind, What};
use crate::error::{exit, Error};
use crate::plan::part::{Part, PartPlan};
use crate::plan::series::StepSpec;
use crate::plan::{profile, RunPlan};
use crate::summary::Summary;

/// How long after a step's end its parts' files may take to come.
const SEND_GRACE_US: u64 = 60_000_000;

/// Where a series' steps run.
pub(crate) enum Runner {
    /// On this machine.
    Here(Server),
    /// Across the parts joined to this coordinator; `server` is reached for what the series
    /// reads of the deployment between steps.
    Parts {
        serving: Serving,
        server: Server,
        plan: Box<RunPlan>,
    },
}

/// The plan a coordinated series (`--parts N --coordinator ADDR`) serves its parts, checked
/// before anything is created; None for a series run here.
pub(crate) fn coordinated(kind: SeriesKind, run: &RunArgs) -> Result<Option<PlanDoc>, Error> {
    if run.coordinator.is_none() {
        return Ok(None);
    }
    if run.on_part_loss == PartLoss::Continue {
        return Err(Error::Usage(format!(
            "--on-part-loss continue would let a {} step measure the load of fewer parts than the others\n  fix: leave it out: a part lost ends the series, and the steps before are kept",
            kind.name()
        )));
    }
    super::plan_doc(run, Some(kind)).map(|(doc, _)| Some(doc))
}

impl Runner {
    /// Reaches the server; with a coordinated `doc`, serves it and waits for every part (None:
    /// interrupted before they all joined, nothing run).
    pub(crate) async fn start(
        doc: Option<PlanDoc>,
        run: &RunArgs,
        base: &RunPlan,
        series: &Series,
        stop: &CancellationToken,
    ) -> Result<Option<Runner>, Error> {
        let server = Server::reach(run, base, &|m| series.say(m)).await?;
        let Some(doc) = doc else {
            return Ok(Some(Runner::Here(server)));
        };
        let groups: Vec<String> = base.groups().map(|g| g.name.clone()).collect();
        let serving = Serving::start(run, doc, &groups, (&base.name, &series.out_dir)).await?;
        let hub = &serving.hub;
        let began = Instant::now();
        let waited = loop {
            tokio::select! {
                () = tokio::time::sleep(TICK) => {}
                () = stop.cancelled() => {}
            }
            for news in hub.tick() {
                errln!("{}", said(&news, base, hub.parts()));
            }
            if stop.is_cancelled() {
                hub.stop("the coordinator was interrupted".into());
                break Ok(false);
            }
            if hub.all_joined() {
                break Ok(true);
            }
            if let Err(e) = join_timeout(hub, run, began) {
                break Err(e);
            }
        };
        if !matches!(waited, Ok(true)) {
            serving.close().await;
            server.shut_down().await;
            // Ctrl-C before every part joined: nothing ran.
            return waited.map(|_| None);
        }
        Ok(Some(Runner::Parts {
            serving,
            server,
            plan: Box::new(base.clone()),
        }))
    }

    /// The parts, or 1 when the steps run here: a sweep's users start there.
    pub(crate) fn parts(&self) -> u32 {
        match self {
            Runner::Here(_) => 1,
            Runner::Parts { serving, .. } => serving.hub.parts(),
        }
    }

    pub(crate) fn client(&self) -> &mongodb::Client {
        match self {
            Runner::Here(server) | Runner::Parts { server, .. } => &server.connected.client,
        }
    }

    /// Step `spec` of the series, into its directory under the series'.
    pub(crate) async fn step(
        &self,
        series: &Series,
        run: &RunArgs,
        base: &RunPlan,
        spec: &StepSpec,
        stop: &CancellationToken,
    ) -> Result<Summary, Error> {
        let dir = series.out_dir.join(&spec.dir);
        match self {
            Runner::Here(server) => {
                series
                    .run_step(run, server, &spec.plan(base), &dir, stop)
                    .await
            }
            Runner::Parts { serving, plan, .. } => {
                let page = series.step_page(&dir);
                remote_step(&serving.hub, (plan, page), spec, &dir, stop).await
            }
        }
    }

    /// The series is over: the parts are told to leave, the server let go.
    pub(crate) async fn shut_down(self) {
        match self {
            Runner::Here(server) => server.shut_down().await,
            Runner::Parts {
                serving, server, ..
            } => {
                serving.hub.finish_series();
                serving.close().await;
                server.shut_down().await;
            }
        }
    }
}

/// One step across the parts: ordered, waited for (a loss or failure ends it, Ctrl-C stops
/// every part), and the parts' files merged into `dir`.
async fn remote_step(
    hub: &Arc<crate::coordinate::hub::Hub>,
    (plan, page): (&RunPlan, Option<(crate::watch::Page, String)>),
    spec: &StepSpec,
    dir: &Path,
    stop: &CancellationToken,
) -> Result<Summary, Error> {
    hub.begin_step(spec.clone());
    // A lost part's share is said of the step's own load.
    let plan = &spec.plan(plan);
    let length_us = spec.length_ms.saturating_mul(1000);
    // The step's abort thresholds and error stop, judged on the whole step as a step run here
    // judges its own.
    let (mut whole, _) = super::abort::WholeAbort::new(plan);
    // `--live`: the step on the series' page, from the merged intervals.
    let mut live = page.map(|p| super::live::Live::step(plan, hub.parts(), p));
    if whole.judges() || live.is_some() {
        hub.keep_series();
    }
    let mut failure: Option<String> = None;
    let mut stopped_at: Option<Instant> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            () = stop.cancelled(), if stopped_at.is_none() => {}
        }
        // Every part done before this tick: the tick shows their last intervals.
        let over = hub.finished();
        for news in hub.tick() {
            match &news {
                News::Lost { .. } | News::Failed { .. } => {
                    let why = said(&news, plan, hub.parts());
                    errln!("{why}");
                    if failure.is_none() {
                        hub.stop(format!("{why} (a step needs every part)"));
                        stopped_at.get_or_insert_with(Instant::now);
                        failure = Some(why);
                    }
                }
                News::Started { .. } => {
                    if let Some(l) = live.as_mut() {
                        l.begin();
                    }
                }
                News::Interval {
                    start_us,
                    series: Some(s),
                    ..
                } => {
                    if let Some(l) = live.as_mut() {
                        l.interval(*start_us, hub.interval_us(), s);
                    }
                    if let Some(why) = whole.interval(*start_us, hub.interval_us(), s) {
                        errln!("stopping step {} on every part: {why}", spec.number);
                        hub.stop_step(why);
                    }
                }
                // The series says each step as a whole.
                News::Interval { .. } | News::Done { .. } => {}
                _ => errln!("{}", said(&news, plan, hub.parts())),
            }
        }
        if over {
            break;
        }
        if stop.is_cancelled() && stopped_at.is_none() {
            hub.stop("the coordinator was interrupted".into());
            stopped_at = Some(Instant::now());
        }
        // Every part ran the step's length: one whose files do not come within a minute of its
        // end (they were lost on the way) would hold the series up for ever.
        let overdue = hub
            .started_at()
            .is_some_and(|at| crate::coordinate::now_us() > at + length_us + SEND_GRACE_US);
        if overdue && stopped_at.is_none() {
            let why = format!(
                "parts {} sent no results within {} s of the step's end",
                hub.unfinished()
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                SEND_GRACE_US / 1_000_000
            );
            errln!("{why}");
            hub.stop(format!("{why} (a step needs every part)"));
            stopped_at = Some(Instant::now());
            failure = Some(why);
        }
        if stopped_at.is_some_and(|t| t.elapsed() >= STOP_WAIT) {
            hub.give_up();
        }
    }
    if let Some(l) = live {
        l.step_ended();
    }
    if let Some(why) = failure {
        return Err(Error::Other(anyhow::anyhow!(
            "step {} across the parts: {why}",
            spec.number
        )));
    }
    let (hub, dir, interrupted) = (Arc::clone(hub), dir.to_path_buf(), stop.is_cancelled());
    tokio::task::spawn_blocking(move || merge_parts(&hub, &dir, (None, interrupted)))
        .await
        .map_err(|e| Error::Other(e.into()))?
}

/// A part of a coordinated series: the profile's plan, then each step the coordinator orders,
/// as this part's share, into the step's directory under this part's, its files sent; until
/// the coordinator says the series is over (exit 0) or stops it.
pub(super) async fn part_steps(
    args: &PartArgs,
    doc: &PlanDoc,
    link: &Arc<Link>,
    stop: &CancellationToken,
) -> Result<i32, Error> {
    let kind = doc.series.unwrap_or(SeriesKind::Sweep);
    let scratch = tempfile::tempdir().map_err(|e| Error::Other(e.into()))?;
    let run = part_args(args, doc, link, scratch.path())?;
    let loaded = profile::load_with(&run.profile, &run.overrides.genny())?;
    let base = RunPlan::build(&loaded, &(&run.overrides).into())?;
    let mut series = Series::start(kind.name(), &run, &base, stop).await?;
    series.opts.link = Some(Arc::clone(link));
    let part = Part {
        index: link.index,
        count: link.parts,
    };
    let mut server: Option<Server> = None;
    let mut after = 0;
    let mut ran = 0;
    let ended = loop {
        let spec = match link.next_step(after, stop).await {
            Ok(Next::Step(spec)) => spec,
            Ok(Next::Over) => break Ok(exit::OK),
            // Not this part's failure: it says why and leaves, its steps kept.
            Ok(Next::Stopped(why)) => {
                errln!(
                    "part {}: the coordinator stopped the {}: {why}",
                    link.index,
                    kind.name()
                );
                break Ok(exit::ERRORS);
            }
            Err(_) if stop.is_cancelled() => break Ok(exit::INTERRUPTED),
            Err(e) => break Err(e),
        };
        after = spec.number;
        if !spec.dir_is_plain() {
            break Err(Error::Usage(format!(
                "the coordinator's step {} would write to {}, outside this part's directory\n  fix: run the same version of mongo-stress on every machine of the run",
                spec.number, spec.dir
            )));
        }
        let plan = match spec.plan(&base).divide(PartPlan {
            part,
            setup_wait: run.setup_wait,
            // The parts' marker of this step, not of one before.
            start_at: Some(format!("step {}", spec.number)),
        }) {
            Ok(p) => p,
            Err(e) => break Err(e),
        };
        if server.is_none() {
            match Server::reach(&run, &plan, &|m| series.say(m)).await {
                Ok(s) => server = Some(s),
                Err(e) => break Err(e),
            }
        }
        let Some(reached) = server.as_ref() else {
            continue;
        };
        let dir = series.out_dir.join(&spec.dir);
        if let Err(e) = series.run_step(&run, reached, &plan, &dir, stop).await {
            break Err(e);
        }
        ran += 1;
        series.say(format!(
            "step {} done: its files go to the coordinator, and stay in {}",
            spec.dir,
            dir.display()
        ));
        link.step_done(What::Done {
            step: spec.number,
            files: read_files(&dir),
        });
        if stop.is_cancelled() {
            break Ok(exit::INTERRUPTED);
        }
    };
    if let Some(s) = server {
        s.shut_down().await;
    }
    match ended {
        Err(e) if ran == 0 => Err(series.failed(e)),
        ended => {
            series.say(format!(
                "{} step{} of the {} run by this part, in {}",
                ran,
                if ran == 1 { "" } else { "s" },
                kind.name(),
                series.out_dir.display()
            ));
            ended
        }
    }
}
