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
use crate::summary::judge::{self, Judging};
use crate::summary::resources::StageSpan;
use crate::summary::RunResult;
use crate::workload::KeySpace;

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
        // On a terminal the live lines are bars; the stage lines go through them too.
        let bars = self
            .opts
            .live
            .and_then(|_| report::live::Live::terminal_bars());
        // The run's own stop: Ctrl-C (the parent) stops it, and so does the error guard, which
        // must not stop later runs of --repeat.
        let run_stop = self.stop.child_token();
        let stopped_early: Arc<OnceLock<StopReason>> = Arc::new(OnceLock::new());
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
            clock: Clock::new(),
            op_timeout: plan.target.op_timeout,
        });
        let started_at = now_rfc3339();
        let t0 = Instant::now();
        let (spans, mut failures) = self.stages(&ctx, &run_stop, bars.as_ref()).await;
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
        let stopped = stopped_early.get();
        result.stopped_early = stopped.map(|r| r.message.clone());
        result.aborted_by = stopped.and_then(|r| r.threshold.clone());
        result.thresholds = plan
            .thresholds
            .iter()
            .filter(|t| t.relative.is_none())
            .map(|t| {
                let how = Judging {
                    deferred: plan.part.is_some() && t.metric.scales_with_load(),
                    aborted: result.aborted_by.as_ref() == Some(&t.text),
                };
                judge::judge(t, &judge::select(t, &metrics), how)
            })
            .collect();
        result.failures = failures;
        result
    }
    /// The recorder of one run: the error-rate stop watches it, the live lines hang on it.
    pub(super) fn recorder(
        &self,
        bars: Option<MultiProgress>,
        active: Arc<Vec<AtomicU32>>,
        run_stop: &CancellationToken,
        stopped_early: &Arc<OnceLock<StopReason>>,
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
