//! The merged summary: per run of `--repeat`, each row the merge of the parts' rows of that
//! label (histograms added, counts summed, span the union), the run's errors, stages, warm-ups
//! and thresholds; the groups with the whole run's threads and rates; the `parts` table.

use std::collections::BTreeMap;

use super::{Merged, PartDir};
use crate::error::Error;
use crate::metrics::GroupMetrics;
use crate::summary::judge::{self, Judging};
use crate::summary::resources::StageSpan;
use crate::summary::run_info::{PartInfo, RunInfo};
use crate::summary::{PartRow, RunResult, Summary, ThresholdResult, WarmupRow, WarningCode};

pub(super) fn merge(parts: &[PartDir]) -> Result<Merged, Error> {
    let first = &parts[0].summary;
    let mut summary = first.clone();
    summary.tool = format!("mongo-stress {}", env!("CARGO_PKG_VERSION"));
    summary.part = None;
    summary.failures.clear();
    summary.interrupted = parts.iter().any(|p| p.summary.interrupted);
    for (i, g) in summary.groups.iter_mut().enumerate() {
        g.threads = parts.iter().map(|p| p.summary.groups[i].threads).sum();
        // The parts' shares add up to the group's rate (rounding undone).
        g.rate = g.rate.map(|_| {
            let sum: f64 = parts.iter().filter_map(|p| p.summary.groups[i].rate).sum();
            (sum * 1e6).round() / 1e6
        });
    }
    summary.runs = (0..first.runs.len())
        .map(|r| merged_run(parts, r, &summary.groups))
        .collect::<Result<_, _>>()?;
    summary.parts = parts.iter().map(part_row).collect();
    let count = first.part.map_or(0, |p| p.count);
    summary.missing_parts = (0..count)
        .filter(|i| !parts.iter().any(|p| p.index() == *i))
        .collect();
    // What failed in a part fails the merged run: its numbers lack what the part lost.
    for p in parts {
        for w in p
            .summary
            .warnings
            .iter()
            .filter(|w| w.code == WarningCode::Failure)
        {
            summary
                .failures
                .push(format!("part {}: {}", p.index(), w.message));
        }
        if p.summary.interrupted {
            summary.failures.push(format!(
                "part {} was interrupted: the merged run holds what it completed",
                p.index()
            ));
        }
    }
    let resources = super::resources::merge(parts);
    // The load generators' machines, not this one's, say how much CPU a part had.
    let cores = parts
        .iter()
        .filter_map(|p| p.run_info.host.as_ref().map(|h| h.cpus))
        .min()
        .unwrap_or(1);
    match &resources {
        Some(r) => summary.refresh_on(&r.rows, true, cores, cores),
        None => {
            summary.resources.clear();
            summary.refresh_on(&[], false, cores, cores);
        }
    }
    let run_info = run_info(parts, &summary);
    Ok(Merged {
        summary,
        resources,
        run_info,
    })
}

/// Run `r` of every part as one run. (Its genny metric rows, `metrics`, are part 0's:
/// `merged_run` drops them, as `merge` writes no rollups.json.)
fn merged_run(
    parts: &[PartDir],
    r: usize,
    groups: &[crate::summary::GroupInfo],
) -> Result<RunResult, Error> {
    let mut out = merge_run(parts, r, groups)?;
    out.metrics = Vec::new();
    Ok(out)
}

/// Run `r` of every part as one run.
fn merge_run(
    parts: &[PartDir],
    r: usize,
    groups: &[crate::summary::GroupInfo],
) -> Result<RunResult, Error> {
    let runs: Vec<&RunResult> = parts.iter().map(|p| &p.summary.runs[r]).collect();
    let mut out = runs[0].clone();
    let broken = |p: &PartDir, e: String| {
        super::bad(&p.path, format!("summary.json run {}: {e}", runs[0].run))
    };
    let mut metrics: Vec<GroupMetrics> = Vec::with_capacity(out.rows.len());
    for (i, row) in runs[0].rows.iter().enumerate() {
        let mut m = GroupMetrics::default();
        for (p, run) in parts.iter().zip(&runs) {
            let theirs = run
                .rows
                .get(i)
                .filter(|x| x.label == row.label)
                .ok_or_else(|| broken(p, format!("no row `{}` where part 0 has one", row.label)))?;
            m.merge(&GroupMetrics::from_row(theirs).map_err(|e| broken(p, e))?);
        }
        out.rows[i] = m.summary_row(row.label.clone(), row.service_hdr.is_some());
        metrics.push(m);
    }
    out.errors_by_class = BTreeMap::new();
    out.error_kinds = Vec::new();
    for run in &runs {
        for (label, classes) in &run.errors_by_class {
            let mine = out.errors_by_class.entry(label.clone()).or_default();
            for (c, n) in classes {
                *mine.entry(c.clone()).or_default() += n;
            }
        }
        for f in &run.error_kinds {
            match out
                .error_kinds
                .iter_mut()
                .find(|o| (&o.label, &o.class, o.code) == (&f.label, &f.class, f.code))
            {
                Some(o) => o.count += f.count,
                None => out.error_kinds.push(f.clone()),
            }
        }
    }
    // Each kind's share of its group's operations in the whole of the parts.
    for f in &mut out.error_kinds {
        let samples = out
            .rows
            .iter()
            .find(|r| r.label.to_string() == f.label)
            .map_or(0, |r| r.samples);
        f.share_pct = if samples == 0 {
            0.0
        } else {
            crate::num::real(f.count) * 100.0 / crate::num::real(samples)
        };
    }
    out.error_messages = crate::summary::Failure::messages(&out.error_kinds);
    out.started_at = runs
        .iter()
        .map(|x| x.started_at.clone())
        .min()
        .unwrap_or_default();
    out.interrupted = runs.iter().any(|x| x.interrupted);
    out.stages = merge_stages(&runs);
    out.wall_secs = match (out.stages.first(), out.stages.last()) {
        (Some(a), Some(b)) => crate::num::real(b.end_ms.saturating_sub(a.began_ms)) / 1000.0,
        _ => runs.iter().map(|x| x.wall_secs).fold(0.0, f64::max),
    };
    out.stopped_early = runs.iter().zip(parts).find_map(|(x, p)| {
        x.stopped_early
            .as_ref()
            .map(|s| format!("part {}: {s}", p.index()))
    });
    out.aborted_by = runs.iter().find_map(|x| x.aborted_by.clone());
    out.warmup = runs[0]
        .warmup
        .iter()
        .map(|w| WarmupRow {
            samples: runs
                .iter()
                .flat_map(|x| x.warmup.iter().filter(|v| v.label == w.label))
                .map(|v| v.samples)
                .sum(),
            errors: runs
                .iter()
                .flat_map(|x| x.warmup.iter().filter(|v| v.label == w.label))
                .map(|v| v.errors)
                .sum(),
            ..w.clone()
        })
        .collect();
    out.start = None;
    out.thresholds = judge(&runs, groups, &out, &metrics);
    // A threshold a part recorded only as text (an older mongo-stress) cannot be judged again:
    // the merged run says so rather than dropping its verdict unseen.
    out.failures = runs[0]
        .thresholds
        .iter()
        .filter(|t| !t.relative && t.unit != "% change" && t.label.is_none())
        .map(|t| {
            format!(
                "threshold `{}` not judged: the parts recorded it without its row and metric (written by an older mongo-stress); run the parts again",
                t.threshold
            )
        })
        .collect();
    Ok(out)
}

/// Each stage from the first part's begin to the last part's end.
fn merge_stages(runs: &[&RunResult]) -> Vec<StageSpan> {
    runs[0]
        .stages
        .iter()
        .map(|s| {
            let same = || {
                runs.iter()
                    .flat_map(|x| x.stages.iter().filter(|t| t.label == s.label))
            };
            StageSpan {
                label: s.label.clone(),
                began_ms: same().map(|t| t.began_ms).min().unwrap_or(s.began_ms),
                start_ms: same().map(|t| t.start_ms).min().unwrap_or(s.start_ms),
                end_ms: same().map(|t| t.end_ms).max().unwrap_or(s.end_ms),
            }
        })
        .collect()
}

/// The thresholds judged again on the merged run, as the run would have judged them had one
/// machine made all the load (a threshold that stopped a part failed). Relative thresholds
/// (`<= +10%`) need `compare` against their baseline: the merge leaves them out.
fn judge(
    runs: &[&RunResult],
    groups: &[crate::summary::GroupInfo],
    merged: &RunResult,
    rows: &[GroupMetrics],
) -> Vec<ThresholdResult> {
    let names: Vec<String> = groups.iter().map(|g| g.name.clone()).collect();
    // The deployment's largest lag, as part 0's member sampler saw it (its members and events
    // stand for the merged run's, as its members.tsv does).
    let lag = crate::summary::members::lag_max(&runs[0].members);
    // Group metrics by group index, from the rows of the same labels.
    let by_group: Vec<GroupMetrics> = names
        .iter()
        .map(|n| {
            let mut m = merged
                .rows
                .iter()
                .position(|r| r.label == crate::metrics::Label::group(n))
                .map_or_else(GroupMetrics::default, |i| rows[i].clone());
            // Its kinds, from the `group:kind` rows (thresholds may name one).
            for (r, km) in merged.rows.iter().zip(rows) {
                if let Some(kind) = crate::metrics::group::kind_row_of(&r.label, n) {
                    m.kinds.insert(kind, km.clone());
                }
            }
            m.outage.lag_max_s = lag;
            m
        })
        .collect();
    runs[0]
        .thresholds
        .iter()
        .filter_map(|t| {
            let rule = t.rule(&names)?;
            let aborted = runs.iter().any(|x| {
                x.thresholds
                    .iter()
                    .any(|y| y.threshold == t.threshold && y.aborted)
            });
            let mut verdict = judge::judge(
                &rule,
                &judge::select(&rule, &by_group),
                Judging {
                    aborted,
                    deferred: false,
                },
            );
            judge::unmeasured_lag(&mut verdict, lag);
            Some(verdict)
        })
        .collect()
}

fn part_row(p: &PartDir) -> PartRow {
    let s = &p.summary;
    let totals = s.runs.iter().map(RunResult::total);
    let samples: u64 = totals.clone().map(|t| t.samples).sum();
    let throughput =
        totals.map(|t| t.throughput).sum::<f64>() / crate::num::real_len(s.runs.len().max(1));
    let cpu: Vec<f64> = p
        .resources
        .iter()
        .flatten()
        .filter_map(|r| r.client_cpu_pct)
        .collect();
    PartRow {
        part: p.index(),
        dir: p.path.display().to_string(),
        host: p.run_info.host.as_ref().and_then(|h| h.hostname.clone()),
        samples,
        throughput,
        client_cpu_avg: (!cpu.is_empty())
            .then(|| cpu.iter().sum::<f64>() / crate::num::real_len(cpu.len())),
        client_cpu_peak: cpu.iter().copied().reduce(f64::max),
        late_start_ms: s
            .runs
            .iter()
            .filter_map(|r| r.start.as_ref().map(|st| st.late_ms))
            .reduce(f64::max),
        clock_offset_ms: None,
        round_trip_ms: None,
        lost: None,
    }
}

/// `run.json` of the merged run: the first part's, with the merge's command line, the whole
/// run's groups and times, and each part's host and directory.
fn run_info(parts: &[PartDir], summary: &Summary) -> RunInfo {
    let first = &parts[0].run_info;
    let times = |f: fn(&RunInfo) -> Option<&String>| {
        parts.iter().filter_map(move |p| f(&p.run_info).cloned())
    };
    let mut plan = first.plan.clone();
    plan.groups = summary.groups.clone();
    RunInfo {
        tool: summary.tool.clone(),
        command_line: crate::redact::command_line(std::env::args()),
        plan,
        started_at: times(|r| Some(&r.started_at)).min().unwrap_or_default(),
        finished_at: times(|r| r.finished_at.as_ref()).max(),
        interrupted: summary.interrupted,
        host: None,
        part: None,
        parts: parts
            .iter()
            .map(|p| PartInfo {
                index: p.index(),
                dir: p.path.display().to_string(),
                host: p.run_info.host.clone(),
                command_line: p.run_info.command_line.clone(),
                part: p.run_info.part.clone(),
            })
            .collect(),
        // Written only when every part has one (app::merge says so otherwise).
        interval_log: Some(parts.iter().all(|p| p.hlog.is_some())),
        ..first.clone()
    }
}
