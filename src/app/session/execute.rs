//! One repetition's wiring: the recorder (live lines, the error-rate stop, aborting
//! thresholds, the interval log), the virtual users' context, every stage in order, and the
//! `RunResult` with its thresholds judged.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use indicatif::MultiProgress;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{epoch_ms, now_rfc3339, Session};
use crate::executor::guard::{StopReason, ThresholdAbort};
use crate::executor::{self, Clock, Context, ErrorGuard};
use crate::metrics::{
    IntervalBatch, IntervalCheck, IntervalSink, Logged, Recorded, Recorder, Watch,
};
use crate::ops::Backend;
use crate::report;
use crate::summary::judge;
use crate::summary::resources::StageSpan;
use crate::summary::RunResult;
use crate::workload::KeySpace;

/// The shortest gap between successes the recorder keeps.
const RECORDED_GAP: std::time::Duration = std::time::Duration::from_millis(100);

/// A gap without success counts as unavailability from this long (or 10x the median).
const DEFAULT_UNAVAILABLE: std::time::Duration = std::time::Duration::from_secs(1);

/// The audit of one run as it goes.
struct AuditRun {
    plan: crate::audit::AuditPlan,
    before: Result<crate::audit::Found, String>,
    auditor: crate::audit::Auditor,
    keeper: crate::audit::Keeper,
}

/// How each group and the whole run came back after fault `e`.
fn recoveries(
    plan: &crate::plan::RunPlan,
    a: &crate::metrics::availability::Availability,
    e: &crate::fault::FaultEvent,
) -> Vec<crate::fault::Recovery> {
    let (at, over) = (e.start_ms * 1000, e.end_ms * 1000);
    let one = |label: crate::metrics::Label, track: &crate::metrics::availability::Track| {
        let (first, back, rate) = crate::metrics::availability::recovery(track, a.t0_us, at, over);
        crate::fault::Recovery {
            label,
            rate_before: rate,
            first_success_secs: first,
            throughput_back_secs: back,
        }
    };
    plan.groups()
        .filter_map(|g| {
            a.groups
                .get(g.index)
                .map(|t| one(crate::metrics::Label::group(&g.name), t))
        })
        .chain(std::iter::once(one(crate::metrics::Label::Total, &a.all)))
        .collect()
}

impl<B: Backend + Clone> Session<'_, B> {
    /// One repetition: every stage in order, recorded, as one `RunResult`.
    pub(super) async fn execute(
        &self,
        keys: Vec<KeySpace>,
        seed: u64,
        run: u32,
        log: Option<mpsc::Sender<Vec<Logged>>>,
        hlog: Option<mpsc::Sender<IntervalBatch>>,
    ) -> RunResult {
        let plan = self.plan;
        let groups = plan.groups().count();
        let active: Arc<Vec<AtomicU32>> =
            Arc::new((0..groups).map(|_| AtomicU32::new(0)).collect());
        let (tx, rx) = mpsc::channel(super::SAMPLE_CHANNEL);
        // The audit's ledger, and the counters before the load it measures increments from.
        let audit = if plan.audit {
            Some(self.audit_start().await)
        } else {
            None
        };
        // On a terminal the live lines are bars; the stage lines go through them too.
        let bars = self
            .opts
            .live
            .and_then(|_| report::live::Live::terminal_bars());
        // The run's own stop: Ctrl-C (the parent) stops it, and so does the error guard, which
        // must not stop later runs of --repeat.
        let run_stop = self.stop.child_token();
        let stopped_early: Arc<OnceLock<StopReason>> = Arc::new(OnceLock::new());
        // One clock for the samples and the recorder's intervals and windows.
        let clock = Clock::new();
        let recorder = tokio::spawn(
            self.recorder(
                clock,
                bars.clone(),
                Arc::clone(&active),
                (&run_stop, &stopped_early),
                log,
                hlog,
            )
            .run(rx),
        );
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
        let ctx = Arc::new(Context {
            backend: self.backend.clone(),
            gens: plan
                .collections
                .iter()
                .map(|c| Arc::clone(&c.document))
                .collect(),
            keys,
            collections,
            samples: tx,
            stop: run_stop.clone(),
            active,
            missed: (0..groups).map(|_| AtomicU64::new(0)).collect(),
            key_state: (0..groups).map(|_| Default::default()).collect(),
            seed,
            clock,
            op_timeout: plan.target.op_timeout,
            audit: audit.as_ref().map(|a| a.auditor.clone()),
            pool: Arc::new(tokio::sync::Semaphore::new(plan.target.pool_size as usize)),
            pool_size: plan.target.pool_size,
        });
        let started_at = now_rfc3339();
        let t0 = Instant::now();
        let stages_ms = epoch_ms();
        // The faults from the first stage's start; none begins after the stages end, and one
        // going on is seen through (a killed server is started again) before the audit.
        let stages_over = CancellationToken::new();
        let faults = self.injector.as_ref().map(|i| {
            tokio::spawn(Arc::clone(i).run(t0, stages_ms, stages_over.clone(), self.stop.clone()))
        });
        let (spans, mut failures) = self.stages(&ctx, &run_stop, bars.as_ref()).await;
        stages_over.cancel();
        let mut events = match faults {
            Some(f) => f.await.unwrap_or_else(|e| {
                failures.push(format!("the faults' task failed: {e}"));
                Vec::new()
            }),
            None => Vec::new(),
        };
        ctx.backend.finish();
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
            availability,
        } = recorder.await.unwrap_or_else(|e| Recorded {
            groups: vec![Default::default(); groups],
            warmup: vec![Default::default(); groups],
            failures: vec![format!(
                "the recorder failed and its measurements are lost: {e}"
            )],
            availability: Default::default(),
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
        result.unavailable = self.unavailability(&availability, &mut metrics, stages_ms);
        // The run's own windows (no group had a success) count where something went wrong:
        // errors in them, or a fault; idle time between stages or before a delayed group is not
        // unavailability.
        result.unavailable.retain(|w| {
            w.label != crate::metrics::Label::Total
                || !w.classes.is_empty()
                || events
                    .iter()
                    .any(|e| e.start_ms <= w.end_ms && w.start_ms <= e.end_ms)
        });
        for e in events.iter_mut().filter(|e| e.error.is_none()) {
            e.recovery = recoveries(plan, &availability, e);
        }
        result.faults = events;
        if let Some(a) = audit {
            let (verdict, lines) = self.audit_finish(a).await;
            for (m, g) in metrics.iter_mut().zip(&verdict.groups) {
                m.outage.lost = g.not_kept();
            }
            result.audit = Some(verdict);
            result.audit_lines = lines;
            // Ctrl-C during the read-back: what completed is shown, the audit unfinished.
            result.interrupted |= self.stop.is_cancelled();
        }
        let stopped = stopped_early.get();
        result.stopped_early = stopped.map(|r| r.message.clone());
        result.aborted_by = stopped.and_then(|r| r.threshold.clone());
        let audit_unfinished = result.audit.as_ref().is_some_and(|a| !a.finished);
        result.thresholds = judge::run_thresholds(
            plan,
            &metrics,
            result.aborted_by.as_deref(),
            audit_unfinished,
        );
        result.failures = failures;
        result
    }

    /// The recorder of one run: the error-rate stop (with the run's stop token and where it
    /// says why) watches it, the live lines hang on it.
    pub(super) fn recorder(
        &self,
        clock: Clock,
        bars: Option<MultiProgress>,
        active: Arc<Vec<AtomicU32>>,
        (run_stop, stopped_early): (&CancellationToken, &Arc<OnceLock<StopReason>>),
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
        // Gaps are kept from 100 ms (the time to a first success after a fault is read from
        // them); windows are the ones past each series' bound.
        let min_gap = plan
            .unavailable_after
            .map_or(RECORDED_GAP, |d| d.min(RECORDED_GAP));
        let feed = self.live.as_ref().map(|l| {
            Box::new(crate::exporter::Feed::new(l, Arc::clone(&active))) as Box<dyn IntervalCheck>
        });
        Recorder {
            clock,
            spares: crate::metrics::interval::Spares::keeping(),
            feed,
            availability: crate::metrics::availability::Availability::new(
                plan.groups().count(),
                epoch_ms() * 1000,
                min_gap.as_micros() as u64,
            ),
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

    /// The audit's start: its plan, the counters before the load, and the ledger's thread.
    async fn audit_start(&self) -> AuditRun {
        let plan = crate::audit::AuditPlan::of(self.plan);
        let wanted = crate::audit::wanted_before(&plan);
        let before = if wanted.collections.iter().any(|c| !c.counters.is_empty()) {
            self.backend.audit_read(self.plan, &wanted, self.stop).await
        } else {
            Ok(Default::default())
        };
        let (auditor, keeper) = crate::audit::Auditor::start(plan.clone());
        AuditRun {
            plan,
            before,
            auditor,
            keeper,
        }
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

    /// The windows without a success longer than each series' bound (`unavailable_after`,
    /// else 1 s or 10x its median latency, or 3 of an open-loop group's intervals, if
    /// longer); each group's longest goes into its metrics for `unavailable_max`.
    fn unavailability(
        &self,
        a: &crate::metrics::availability::Availability,
        metrics: &mut [crate::metrics::GroupMetrics],
        stages_ms: u64,
    ) -> Vec<crate::metrics::availability::Window> {
        use crate::metrics::availability::windows;
        let bound = |median_ms: f64, rate: Option<f64>| -> u64 {
            match self.plan.unavailable_after {
                Some(d) => d.as_micros() as u64,
                None => {
                    let by_rate = rate.filter(|r| *r > 0.0).map_or(0.0, |r| 3e6 / r);
                    (DEFAULT_UNAVAILABLE.as_micros() as f64)
                        .max(median_ms * 10_000.0)
                        .max(by_rate) as u64
                }
            }
        };
        let t0 = stages_ms * 1000;
        let mut out = Vec::new();
        let mut all = crate::metrics::GroupMetrics::default();
        for g in self.plan.groups() {
            let Some(track) = a.groups.get(g.index) else {
                continue;
            };
            let m = &mut metrics[g.index];
            let w = windows(
                track,
                crate::metrics::Label::group(&g.name),
                bound(m.latency.quantile_ms(0.5), g.rate),
                t0,
            );
            m.outage.unavailable_max_us =
                w.iter().map(|w| (w.secs * 1e6) as u64).max().unwrap_or(0);
            all.merge(m);
            out.extend(w);
        }
        let rate: f64 = self.plan.groups().filter_map(|g| g.rate).sum();
        out.extend(windows(
            &a.all,
            crate::metrics::Label::Total,
            bound(all.latency.quantile_ms(0.5), (rate > 0.0).then_some(rate)),
            t0,
        ));
        out
    }

    /// Every stage in order until the run's stop: when each ran, and what failed inside.
    pub(super) async fn stages(
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
