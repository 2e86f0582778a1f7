//! One repetition's wiring: the recorder (the error-rate stop; its outputs: the interval log,
//! aborting thresholds, live metrics, live lines, the live page, told of each stage, fault and
//! change of the deployment too), the virtual users' context, every stage in order, the faults
//! and the audit, all on one clock; what it measured goes back whole (`summary::Measured`), to
//! be judged by `summary`.

use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, OnceLock};

use indicatif::MultiProgress;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{now_rfc3339, Session};
use crate::executor::guard::{StopReason, ThresholdAbort};
use crate::executor::{self, Clock, Context, ErrorGuard};
use crate::metrics::{Logged, Notice, Notify, Output, Recorded, Recorder, Watch};
use crate::ops::Backend;
use crate::plan::limits::RECORDED_GAP;
use crate::report;
use crate::samplelog::hlog::ToLog;
use crate::summary::resources::StageSpan;
use crate::summary::{Change, Measured};
use crate::workload::KeySpace;

/// What the virtual users share with the session: where their samples go, how many are
/// active per group, and the run's stop.
struct Users<'a> {
    samples: mpsc::Sender<crate::metrics::Sample>,
    active: Arc<Vec<AtomicU32>>,
    stop: &'a CancellationToken,
    /// With watch groups: the writes they tell the listeners of.
    listening: Option<crate::executor::Listening>,
}

/// The audit of one run as it goes.
struct AuditRun {
    plan: crate::audit::AuditPlan,
    before: Result<crate::audit::Found, String>,
    auditor: crate::audit::Auditor,
    keeper: crate::audit::Keeper,
}

/// Where the run's notices are told: its recorder. The stages' beginnings and ends, the faults'
/// and the topology's events the member sampler sees while the stages go reach the outputs
/// through it, in order with the intervals.
fn told(recorder: &mut Recorder, sampler: Option<&crate::monitor::Sampler>) -> Notify {
    let (notify, notices) = mpsc::unbounded_channel();
    recorder.notices = Some(notices);
    if let Some(s) = sampler {
        s.tell(Some(notify.clone()));
    }
    notify
}

impl<B: Backend + Clone> Session<'_, B> {
    /// One repetition: every stage in order, recorded; what it measured, nothing judged.
    pub(super) async fn execute(
        &self,
        keys: Vec<KeySpace>,
        seed: u64,
        run: u32,
        log: Option<mpsc::Sender<Vec<Logged>>>,
        hlog: Option<ToLog>,
        sampler: Option<&crate::monitor::Sampler>,
    ) -> Measured {
        let plan = self.plan;
        let groups = plan.groups().count();
        let active: Arc<Vec<AtomicU32>> =
            Arc::new((0..groups).map(|_| AtomicU32::new(0)).collect());
        let (tx, rx) = mpsc::channel(super::SAMPLE_CHANNEL);
        // The audit's ledger, and the counters before the load it measures increments from.
        let audit = self.audit_start().await;
        let bars = self.bars();
        // The run's own stop: Ctrl-C (the parent) stops it, and so does the error guard, which
        // must not stop later runs of --repeat.
        let run_stop = self.stop.child_token();
        let stopped_early: Arc<OnceLock<StopReason>> = Arc::new(OnceLock::new());
        // One clock for the samples, the recorder's intervals and windows, the stages' spans
        // and the faults' events.
        let clock = Clock::new();
        // Each group's rate or users, changed while it runs (`--live-control`).
        let steer = Arc::new(crate::executor::steer::Steer::new(groups));
        let mut recorder = self.recorder(
            clock,
            bars,
            Arc::clone(&active),
            (&run_stop, &stopped_early),
            log,
            hlog,
        );
        self.attach_page(&mut recorder, &steer, clock);
        let notify = told(&mut recorder, sampler);
        let recorder = tokio::spawn(recorder.run(rx));
        // Watch groups: the writers tell the listeners of each acknowledged write.
        let listening = super::listeners::listening(plan);
        let mut failures = Vec::new();
        let listeners = self
            .listeners(
                listening.as_ref(),
                &tx,
                (clock, seed),
                (&active, &run_stop),
                &mut failures,
            )
            .await;
        let ctx = Arc::new(self.context(
            keys,
            seed,
            clock,
            Users {
                samples: tx,
                active,
                stop: &run_stop,
                listening,
            },
            audit.as_ref(),
            steer,
        ));
        let started_at = now_rfc3339();
        let t0 = Instant::now();
        let stages_us = clock.epoch_us(t0);
        let (stages, faults) = self
            .stages_and_faults(&ctx, (&run_stop, &notify), (clock, t0), &mut failures)
            .await;
        if let Some(s) = sampler {
            s.tell(None);
        }
        drop(notify);
        // The listeners drain, then each watch group's delivery is counted.
        let (streams, change_lines) = match listeners {
            Some(l) => l.close((t0, &run_stop), &ctx.active, &mut failures).await,
            None => (Vec::new(), Vec::new()),
        };
        ctx.backend.finish();
        let missed = ctx.missed_counts();
        let tool_gap = Some(ctx.gaps.measured());
        drop(ctx);
        let recorded = recorder
            .await
            .unwrap_or_else(|e| Recorded::lost(groups, e.to_string()));
        failures.extend(recorded.failures);
        if let Some(p) = &self.page {
            p.page.run_ended();
        }
        let wall_secs = t0.elapsed().as_secs_f64();
        let audit = match audit {
            Some(a) => Some(self.audit_finish(a).await),
            None => None,
        };
        Measured {
            run,
            started_at,
            wall_secs,
            // Ctrl-C during the audit's read-back too: what completed is shown, the audit
            // unfinished.
            interrupted: self.stop.is_cancelled(),
            groups: recorded.groups,
            warmup: recorded.warmup,
            missed,
            stages,
            availability: recorded.availability,
            stages_us,
            faults,
            audit,
            stopped: stopped_early.get().cloned(),
            segments: recorded.segments,
            changes: recorded.changes.iter().map(Change::from).collect(),
            streams,
            change_lines,
            failures,
            tool_gap,
            ..Measured::default()
        }
    }

    /// The watch groups' listeners, when there are (`listening`): open before the writers
    /// start.
    async fn listeners(
        &self,
        listening: Option<&crate::executor::Listening>,
        samples: &mpsc::Sender<crate::metrics::Sample>,
        clocked: (Clock, u64),
        (active, run_stop): (&Arc<Vec<AtomicU32>>, &CancellationToken),
        failures: &mut Vec<String>,
    ) -> Option<super::listeners::Listeners> {
        let l = listening?;
        Some(
            super::listeners::Listeners::open(
                self.plan,
                &self.backend,
                l,
                samples,
                clocked,
                (active, run_stop),
                failures,
            )
            .await,
        )
    }

    /// The virtual users' context: the backend, the collections' documents and key spaces,
    /// where samples go, and the pool's connections.
    fn context(
        &self,
        keys: Vec<KeySpace>,
        seed: u64,
        clock: Clock,
        users: Users<'_>,
        audit: Option<&AuditRun>,
        steer: Arc<crate::executor::steer::Steer>,
    ) -> Context<B> {
        let plan = self.plan;
        let groups = plan.groups().count();
        let keys: Vec<Arc<KeySpace>> = {
            let mut keys = keys;
            // A part's wait ended by Ctrl-C prepares nothing: every collection still gets one.
            keys.resize_with(plan.collections.len(), KeySpace::default);
            keys.into_iter().map(Arc::new).collect()
        };
        let collections: crate::workload::command::CollectionsDocs = keys
            .iter()
            .zip(&plan.collections)
            .map(|(k, c)| (Arc::clone(k), Arc::clone(&c.document)))
            .collect();
        Context {
            backend: self.backend.clone(),
            gens: plan
                .collections
                .iter()
                .map(|c| Arc::clone(&c.document))
                .collect(),
            keys,
            collections,
            samples: users.samples,
            stop: users.stop.clone(),
            active: users.active,
            missed: (0..groups).map(|_| AtomicU64::new(0)).collect(),
            key_state: (0..groups).map(|_| Default::default()).collect(),
            seed,
            clock,
            op_timeout: plan.target.op_timeout,
            audit: audit.map(|a| a.auditor.clone()),
            pool: Arc::new(tokio::sync::Semaphore::new(plan.target.pool_size as usize)),
            pool_size: plan.target.pool_size,
            steer,
            listening: users.listening,
            gaps: crate::executor::Gaps::default(),
            last_states: Default::default(),
        }
    }

    /// On a terminal with `--live`, the live lines are bars; the stage lines go through them
    /// too.
    fn bars(&self) -> Option<MultiProgress> {
        self.opts
            .live
            .and_then(|_| report::live::Live::terminal_bars())
    }

    /// The live page, when there is one: this run's events from its first interval, its
    /// changes made at an interval's end.
    fn attach_page(
        &self,
        recorder: &mut Recorder,
        steer: &Arc<crate::executor::steer::Steer>,
        clock: Clock,
    ) {
        // A coordinated part makes the changes its coordinator's page made.
        if let Some(link) = self.opts.link.as_ref().filter(|l| !l.series) {
            recorder.steering = Some(Box::new(crate::coordinate::link::Steering {
                link: Arc::clone(link),
                steer: Arc::clone(steer),
                waiting: Vec::new(),
            }));
        }
        let Some(p) = &self.page else { return };
        let base = p.page.begin_run(
            self.plan,
            p.title.clone(),
            (Arc::clone(steer) as _, clock, p.steerable),
        );
        // The page first: it shows each interval as the recorder closed it.
        recorder.outputs.insert(
            0,
            Box::new(crate::watch::View::new(
                &p.page,
                Arc::new(self.plan.clone()),
                base,
            )),
        );
        if p.steerable && p.page.control() {
            recorder.steering = Some(Box::new(crate::watch::Control(p.page.clone())));
        }
    }

    /// The recorder of one run: the error-rate stop (with the run's stop token and where it
    /// says why) watches it; its outputs, in order: the interval log, the threshold abort, the
    /// live metrics, the live lines.
    pub(super) fn recorder(
        &self,
        clock: Clock,
        bars: Option<MultiProgress>,
        active: Arc<Vec<AtomicU32>>,
        (run_stop, stopped_early): (&CancellationToken, &Arc<OnceLock<StopReason>>),
        log: Option<mpsc::Sender<Vec<Logged>>>,
        hlog: Option<ToLog>,
    ) -> Recorder {
        let plan = self.plan;
        // A coordinated part leaves its error rate and abort thresholds to the coordinator,
        // which judges the whole run (or the whole of a series' step).
        let own = self.opts.link.is_none();
        let watch = plan.stop_on_error_pct.filter(|_| own).map(|pct| {
            Box::new(ErrorGuard::new(
                pct,
                run_stop.clone(),
                Arc::clone(stopped_early),
            )) as Box<dyn Watch>
        });
        let tick = self.opts.hdr_interval;
        let mut outputs: Vec<Box<dyn Output>> = Vec::new();
        if let Some(hlog) = hlog {
            outputs.push(Box::new(hlog));
        }
        // A part cannot stop on a limit meant for the whole run's throughput or counts; a
        // coordinated part stops on none of its own (its coordinator judges the whole run's).
        let aborting: Vec<_> = plan
            .thresholds
            .iter()
            .filter(|t| t.abort && !(plan.part.is_some() && t.metric.scales_with_load()))
            .filter(|_| own)
            .cloned()
            .collect();
        if !aborting.is_empty() {
            outputs.push(Box::new(ThresholdAbort {
                rules: aborting,
                stop: run_stop.clone(),
                reason: Arc::clone(stopped_early),
            }));
        }
        if let Some(link) = &self.opts.link {
            link.attach(run_stop.clone(), Arc::clone(stopped_early));
            // By `GroupPlan::index`, as the totals are.
            let names = plan.groups().map(|g| g.name.clone()).collect();
            outputs.push(Box::new(crate::coordinate::link::Uplink {
                link: Arc::clone(link),
                stopped: false,
                names,
            }));
        }
        if let Some(l) = &self.live {
            outputs.push(Box::new(crate::exporter::Feed::new(l, Arc::clone(&active))));
        }
        // Live lines cover whole intervals, so they come from the same histograms as the log;
        // a quiet run's console still says the changes made and the warnings.
        let every = self.opts.live.map(|l| {
            u32::try_from(crate::num::whole(l.as_secs_f64() / tick.as_secs_f64()).max(1))
                .unwrap_or(u32::MAX)
        });
        outputs.push(Box::new(report::live::Live::new(plan, bars, every)));
        // Gaps are kept from 100 ms (the time to a first success after a fault is read from
        // them); windows are the ones past each series' bound.
        let min_gap = plan
            .unavailable_after
            .map_or(RECORDED_GAP, |d| d.min(RECORDED_GAP));
        Recorder {
            steering: None,
            notices: None,
            clock,
            spares: crate::metrics::interval::Spares::keeping(),
            availability: crate::metrics::availability::Availability::new(
                plan.groups().count(),
                clock.now_us(),
                u64::try_from(min_gap.as_micros()).unwrap_or(u64::MAX),
            ),
            names: plan.groups().map(|g| g.name.clone()).collect(),
            beside: plan.groups().map(|g| g.watch.is_some()).collect(),
            open_loop: plan.groups().map(|g| g.rate.is_some()).collect(),
            active,
            tick,
            outputs,
            watch,
            log,
        }
    }

    /// The audit's start (`--audit`): its plan, the counters before the load, and the
    /// ledger's thread.
    async fn audit_start(&self) -> Option<AuditRun> {
        if !self.plan.audit {
            return None;
        }
        let plan = crate::audit::AuditPlan::of(self.plan);
        let wanted = crate::audit::wanted_before(&plan);
        let before = if wanted.collections.iter().any(|c| !c.counters.is_empty()) {
            self.backend.audit_read(self.plan, &wanted, self.stop).await
        } else {
            Ok(Default::default())
        };
        let (auditor, keeper) = crate::audit::Auditor::start(plan.clone());
        Some(AuditRun {
            plan,
            before,
            auditor,
            keeper,
        })
    }

    /// The audit's verdict, once the users are gone: the collections read back.
    async fn audit_finish(
        &self,
        a: AuditRun,
    ) -> (crate::audit::AuditResult, Vec<crate::audit::AuditLine>) {
        let AuditRun {
            plan,
            before,
            auditor,
            keeper,
        } = a;
        drop(auditor);
        let ledger = match tokio::task::spawn_blocking(move || keeper.finish()).await {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => return (crate::audit::AuditResult::unfinished(e), Vec::new()),
            Err(e) => {
                return (
                    crate::audit::AuditResult::unfinished(format!(
                        "the audit's ledger failed: {e}"
                    )),
                    Vec::new(),
                )
            }
        };
        if self.stop.is_cancelled() {
            return (
                crate::audit::AuditResult::unfinished(
                    "the run was interrupted before the collections were read back".into(),
                ),
                Vec::new(),
            );
        }
        let before = match before {
            Ok(b) => b,
            Err(e) => {
                return (
                    crate::audit::AuditResult::unfinished(format!(
                        "the counters could not be read before the load: {e}"
                    )),
                    Vec::new(),
                )
            }
        };
        let wanted = crate::audit::wanted_after(&plan, &ledger);
        self.say(format!(
            "audit: reading back {}",
            wanted
                .collections
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let began = std::time::Instant::now();
        match self.backend.audit_read(self.plan, &wanted, self.stop).await {
            Ok(after) => {
                let (groups, total, lines) = crate::audit::check(&plan, &ledger, &before, &after);
                (
                    crate::audit::AuditResult {
                        finished: true,
                        problem: None,
                        groups,
                        total,
                        secs: began.elapsed().as_secs_f64(),
                    },
                    lines,
                )
            }
            Err(e) => (crate::audit::AuditResult::unfinished(e), Vec::new()),
        }
    }

    /// The stages, with the faults from the first stage's start: none begins after the
    /// stages end, and one going on is seen through (a killed server is started again) before
    /// the audit.
    async fn stages_and_faults(
        &self,
        ctx: &Arc<Context<B>>,
        (run_stop, notify): (&CancellationToken, &Notify),
        (clock, t0): (Clock, Instant),
        failures: &mut Vec<String>,
    ) -> (Vec<StageSpan>, Vec<crate::summary::faults::FaultEvent>) {
        let stages_over = CancellationToken::new();
        let faults = self.injector.as_ref().map(|i| {
            tokio::spawn(Arc::clone(i).run(
                t0,
                clock,
                stages_over.clone(),
                self.stop.clone(),
                notify.clone(),
            ))
        });
        let (stages, stage_failures) = self.stages(ctx, run_stop, notify, clock).await;
        failures.extend(stage_failures);
        stages_over.cancel();
        let faults = match faults {
            Some(f) => f.await.unwrap_or_else(|e| {
                failures.push(format!("the faults' task failed: {e}"));
                Vec::new()
            }),
            None => Vec::new(),
        };
        (stages, faults)
    }

    /// Stage `i`'s reads explained now that the stages before it have run (the first run's
    /// only), each plan said as the first stage's are.
    async fn explain_stage(&self, ctx: &Arc<Context<B>>, i: usize) {
        if self
            .later_plans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            return;
        }
        let keys: Vec<_> = ctx.keys.iter().map(|k| &**k).collect();
        let plans = self.backend.plans(self.plan, &keys, i).await;
        for p in &plans {
            self.say(format!("query plan: {}", p.line()));
        }
        if let Some(later) = self
            .later_plans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            later.extend(plans);
        }
    }

    /// Every stage in order until the run's stop: when each ran, and what failed inside; each
    /// stage's beginning and end told to the outputs (`notify`).
    pub(super) async fn stages(
        &self,
        ctx: &Arc<Context<B>>,
        run_stop: &CancellationToken,
        notify: &Notify,
        clock: Clock,
    ) -> (Vec<StageSpan>, Vec<String>) {
        let now_ms = || clock.now_us() / 1000;
        let mut spans = Vec::new();
        let mut failures = Vec::new();
        for (i, stage) in self.plan.stages.iter().enumerate() {
            if run_stop.is_cancelled() {
                break;
            }
            if i > 0 {
                self.explain_stage(ctx, i).await;
            }
            // The resource summary covers what the summary counts: after the warm-ups.
            let skip = stage
                .groups
                .iter()
                .filter(|g| !g.warmup.is_zero())
                .map(|g| g.start_delay + g.warmup)
                .max()
                .unwrap_or_default();
            let began_ms = now_ms();
            let label = self.plan.stage_label(stage);
            let began_us = began_ms * 1000;
            let _ = notify.send(Notice::StageBegan {
                label: label.clone(),
                name: stage.name.clone(),
                groups: stage
                    .groups
                    .iter()
                    .map(|g| (g.name.clone(), g.threads))
                    .collect(),
                began_us,
                start_us: began_us + u64::try_from(skip.as_micros()).unwrap_or(u64::MAX),
            });
            failures.extend(executor::run_stage(stage, ctx).await);
            let _ = notify.send(Notice::StageEnded {
                end_us: clock.now_us(),
            });
            spans.push(StageSpan {
                label,
                began_ms,
                start_ms: began_ms + u64::try_from(skip.as_millis()).unwrap_or(u64::MAX),
                end_ms: now_ms(),
            });
        }
        (spans, failures)
    }
}
