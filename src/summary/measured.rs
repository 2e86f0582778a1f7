//! What one repetition measured, as the session hands it over, and the run's result made from
//! it at once: rows, windows, recoveries, the audit's losses and every verdict (by `judge`).
//!
//! Owns: the one way a `RunResult` is made from a measurement. Never: measures, or decides a
//! verdict itself (`judge` does).

use super::audit::{AuditLine, AuditResult};
use super::faults::{FaultEvent, Recovery};
use super::resources::StageSpan;
use super::{judge, Failure, LoadResult, RunResult, StartInfo};
use crate::metrics::availability::{recovery, Availability};
use crate::metrics::{GroupMetrics, Label};
use crate::plan::RunPlan;

/// Why the run ended before its plan: the words, and the aborting threshold when one did it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stopped {
    pub(crate) message: String,
    /// The aborting threshold that stopped it, as written.
    pub(crate) threshold: Option<String>,
}

/// Everything one repetition measured, nothing judged.
#[derive(Debug, Default)]
pub struct Measured {
    pub run: u32,
    pub started_at: String,
    pub wall_secs: f64,
    /// Ctrl-C came before the run (its audit included) was over.
    pub interrupted: bool,
    /// Per group by plan index: what counted, and what the warm-up excluded.
    pub groups: Vec<GroupMetrics>,
    pub warmup: Vec<GroupMetrics>,
    /// Per group: open-loop slots that were due and never sent.
    pub missed: Vec<u64>,
    pub stages: Vec<StageSpan>,
    /// The gaps between successes, on the run's clock.
    pub availability: Availability,
    /// The first stage's start on the run's clock (epoch microseconds).
    pub stages_us: u64,
    pub faults: Vec<FaultEvent>,
    pub audit: Option<(AuditResult, Vec<AuditLine>)>,
    pub stopped: Option<Stopped>,
    pub start: Option<StartInfo>,
    /// Each invariant collection's sums, before and after.
    pub invariants: Vec<super::InvariantSums>,
    pub load: Option<LoadResult>,
    /// The rows of changes made while the run went, and the changes (`--live-control`).
    pub segments: Vec<crate::metrics::Segment>,
    pub changes: Vec<super::Change>,
    /// The members over the run and the topology's events (`members`).
    pub members: Vec<super::members::MemberSummary>,
    pub topology: Vec<crate::monitor::members::TopologyEvent>,
    /// Each watch group's delivery, and `changes.tsv`'s lines.
    pub streams: Vec<super::streams::StreamResult>,
    pub change_lines: Vec<super::streams::ChangeLine>,
    pub failures: Vec<String>,
    /// What the load generator added before the operations' sends (`executor::Gaps`).
    pub tool_gap: Option<super::ToolGap>,
}

impl RunResult {
    /// The run's result, made whole from what it measured.
    pub fn judged(plan: &RunPlan, m: Measured) -> RunResult {
        let Measured {
            run,
            started_at,
            wall_secs,
            interrupted,
            groups: mut metrics,
            warmup,
            missed,
            stages,
            availability,
            stages_us,
            mut faults,
            audit,
            stopped,
            start,
            invariants,
            load,
            segments,
            changes,
            members,
            mut topology,
            streams,
            change_lines,
            failures,
            tool_gap,
        } = m;
        for (g, missed) in metrics.iter_mut().zip(missed) {
            g.missed = missed;
        }
        let unavailable =
            judge::unavailability(plan, &availability, &mut metrics, stages_us, &faults);
        for e in faults.iter_mut().filter(|e| e.error.is_none()) {
            e.recovery = recoveries(plan, &availability, e);
        }
        super::members::judge_events(&mut topology, stages_us, &unavailable, &faults);
        let lag = super::members::lag_max(&members);
        for g in metrics.iter_mut() {
            g.outage.lag_max_s = lag;
        }
        let (audit, audit_lines) = match audit {
            Some((verdict, lines)) => {
                for (g, kept) in metrics.iter_mut().zip(&verdict.groups) {
                    g.outage.lost = kept.not_kept();
                }
                (Some(verdict), lines)
            }
            None => (None, Vec::new()),
        };
        let aborted_by = stopped.as_ref().and_then(|s| s.threshold.clone());
        let audit_unfinished = audit.as_ref().is_some_and(|a| !a.finished);
        let mut thresholds =
            judge::run_thresholds(plan, &metrics, aborted_by.as_deref(), audit_unfinished);
        for t in &mut thresholds {
            judge::unmeasured_lag(t, lag);
        }
        let (rows, (errors_by_class, error_kinds)) = super::rows(plan, &metrics, &segments);
        RunResult {
            run,
            started_at,
            wall_secs,
            interrupted,
            rows,
            metrics: super::metric_rows(plan, &metrics),
            errors_by_class,
            error_messages: Failure::messages(&error_kinds),
            error_kinds,
            stages,
            stopped_early: stopped.map(|s| s.message),
            aborted_by,
            warmup: super::warmup_rows(plan, &warmup),
            load,
            start,
            thresholds,
            invariants: invariants.into_iter().map(judge::invariant).collect(),
            audit,
            faults,
            unavailable,
            changes,
            members,
            topology,
            audit_lines,
            streams,
            change_lines,
            failures,
            tool_gap: tool_gap.filter(|g| g.ops > 0),
        }
    }
}

/// How each group and the whole run came back after fault `e`.
fn recoveries(plan: &RunPlan, a: &Availability, e: &FaultEvent) -> Vec<Recovery> {
    let (at, over) = (e.start_ms * 1000, e.end_ms * 1000);
    let one = |label: Label, track: &crate::metrics::availability::Track| {
        let (first, back, rate) = recovery(track, a.t0_us, at, over);
        Recovery {
            label,
            rate_before: rate,
            first_success_secs: first,
            throughput_back_secs: back,
        }
    };
    plan.groups()
        .filter_map(|g| a.groups.get(g.index).map(|t| one(Label::group(&g.name), t)))
        .chain(std::iter::once(one(Label::Total, &a.all)))
        .collect()
}
