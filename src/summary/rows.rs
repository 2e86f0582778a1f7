//! The rows of a run from its groups' metrics: each group's (with a mix's or steps' kinds), each
//! stage's total and the run's; the groups' information; the failures by class and code.

use super::*;

pub(crate) fn group_info(plan: &RunPlan) -> Vec<GroupInfo> {
    plan.stages
        .iter()
        .flat_map(|s| {
            s.groups.iter().map(|g| GroupInfo {
                name: g.name.clone(),
                stage: s.name.clone(),
                op: g.op.kind(),
                threads: g.threads,
                loops: g.stop.loops(),
                duration_secs: g.stop.duration().map(|d| d.as_secs_f64()),
                rate: g.rate,
                pool_size: g.rate.map(|_| plan.target.pool_size),
                mix: g
                    .mix
                    .iter()
                    .map(|(spec, weight)| MixShare {
                        op: spec.kind(),
                        weight: *weight,
                    })
                    .collect(),
                operations: {
                    let specs: Vec<&crate::workload::OpSpec> = if g.mix.is_empty() {
                        vec![&g.op]
                    } else {
                        g.mix.iter().map(|(s, _)| s).collect()
                    };
                    specs
                        .into_iter()
                        .flat_map(|s| match s {
                            crate::workload::OpSpec::Template(t) if t.desugared.is_some() => {
                                Vec::new()
                            }
                            crate::workload::OpSpec::Template(t) => vec![t.verb.name().to_string()],
                            crate::workload::OpSpec::Steps(st) => {
                                st.steps.iter().map(|t| t.verb.name().to_string()).collect()
                            }
                        })
                        .collect()
                },
                steps: match &g.op {
                    crate::workload::OpSpec::Steps(_) => {
                        g.kinds().iter().map(|k| k.to_string()).collect()
                    }
                    _ => Vec::new(),
                },
                write_concern: g.concerns.write.as_ref().map(|w| match w {
                    crate::plan::WriteConcernPlan::Majority => "majority".to_string(),
                    crate::plan::WriteConcernPlan::Nodes(n) => n.to_string(),
                }),
                keys: (g.keys != crate::workload::KeyDist::Uniform)
                    .then(|| g.keys.name().to_string()),
            })
        })
        .collect()
}

/// One kind of failure of one group: its class, the server's code (with MongoDB's name for
/// it), the first such failure's message, how many and what share of the group's operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Failure {
    pub(crate) label: String,
    pub(crate) class: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code_name: Option<String>,
    pub(crate) message: String,
    pub(crate) count: u64,
    /// Percent of the group's operations.
    pub(crate) share_pct: f64,
}

impl Failure {
    /// A group's kinds of failure, most frequent first.
    pub(crate) fn of(label: &str, m: &GroupMetrics) -> Vec<Failure> {
        let mut out: Vec<Failure> = m
            .failures
            .iter()
            .map(|(kind, seen)| Failure {
                label: label.to_string(),
                class: kind.class.as_str().to_string(),
                code: kind.code.map(|c| c.0),
                code_name: kind.code.and_then(|c| c.name()).map(str::to_string),
                message: seen.message.clone(),
                count: seen.count,
                share_pct: if m.samples == 0 {
                    0.0
                } else {
                    crate::num::real(seen.count) * 100.0 / crate::num::real(m.samples)
                },
            })
            .collect();
        out.sort_by_key(|f| std::cmp::Reverse(f.count));
        out
    }
}

impl Failure {
    /// `error_messages` of schema_version 1 from the kinds: `label: message` to the count.
    pub(crate) fn messages(kinds: &[Failure]) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for f in kinds {
            *out.entry(format!("{}: {}", f.label, f.message))
                .or_default() += f.count;
        }
        out
    }
}

/// Failures by class per group, and each group's kinds of failure.
pub(crate) type Errors = (BTreeMap<String, BTreeMap<String, u64>>, Vec<Failure>);

/// The rows from the metrics of each group (indexed as in the plan): a group's (a mixed group's
/// or a group of steps' kinds first), a `TOTAL <stage>` per multi-group stage when there are
/// several stages, then `TOTAL`; with the errors by class and message.
/// The rows of a run: each group's (with a mix's or steps' kinds before it, and the rows of
/// its changes after it, `segments`), each stage's total and the run's.
pub(crate) fn rows(
    plan: &RunPlan,
    metrics: &[GroupMetrics],
    segments: &[crate::metrics::Segment],
) -> (Vec<Row>, Errors) {
    let mut rows = Vec::new();
    let open = |groups: &[crate::plan::GroupPlan]| groups.iter().any(|g| g.rate.is_some());
    let mut total = GroupMetrics::default();
    let mut errors_by_class = BTreeMap::new();
    let mut error_kinds = Vec::new();
    let several_stages = plan.stages.len() > 1;
    for stage in &plan.stages {
        let mut stage_total = GroupMetrics::default();
        for g in &stage.groups {
            let m = &metrics[g.index];
            // Steps that all have `report = false`: no row (genny's `ReportMetrics: false`),
            // unless they failed: a failure is never hidden. Their operations are in the
            // totals, as every operation sent is.
            let failed = m.errors > 0 || m.kinds.values().any(|k| k.errors > 0);
            let shown = g.reports() || failed;
            // A group that mixes operations: a row per kind (`group:get`), then its total;
            // a group of steps: a row per step's time (`group:debit`), then the whole.
            let kinds = !g.mix.is_empty() || matches!(g.op, crate::workload::OpSpec::Steps(_));
            if shown && kinds {
                let kind_failed =
                    |k: &crate::workload::op::OpName| m.kinds.get(k).is_some_and(|x| x.errors > 0);
                for kind in g
                    .kinds()
                    .into_iter()
                    .filter(|k| g.reports_kind(k) || kind_failed(k))
                {
                    let k = m.kinds.get(&kind).cloned().unwrap_or_default();
                    rows.push(k.summary_row(Label::kind(&g.name, kind), g.rate.is_some()));
                }
            }
            if shown {
                rows.push(m.summary_row(Label::group(&g.name), g.rate.is_some()));
            }
            // Changed while it ran: a row per setting, in the order they were made.
            for seg in segments.iter().filter(|x| x.group == g.index) {
                rows.push(seg.metrics.summary_row(seg.label.clone(), g.rate.is_some()));
            }
            // A watch group's events are not operations: its row stands beside the totals.
            if g.watch.is_none() {
                stage_total.merge(m);
            }
            if m.errors > 0 {
                errors_by_class.insert(
                    g.name.clone(),
                    m.errors_by_class
                        .iter()
                        .map(|(c, n)| (c.as_str().to_string(), *n))
                        .collect(),
                );
            }
            error_kinds.extend(Failure::of(&g.name, m));
        }
        if several_stages && stage.groups.len() > 1 {
            rows.push(stage_total.summary_row(plan.stage_label(stage), open(&stage.groups)));
        }
        total.merge(&stage_total);
    }
    rows.push(total.summary_row(Label::Total, plan.groups().any(|g| g.rate.is_some())));
    (rows, (errors_by_class, error_kinds))
}

/// Per group with a warm-up: what it excluded from the rows.
pub(super) fn warmup_rows(plan: &RunPlan, warmup: &[GroupMetrics]) -> Vec<WarmupRow> {
    plan.groups()
        .filter(|g| !g.warmup.is_zero())
        .map(|g| WarmupRow {
            label: Label::group(&g.name),
            secs: g.warmup.as_secs_f64(),
            samples: warmup[g.index].samples,
            errors: warmup[g.index].errors,
        })
        .collect()
}

/// One row under the name genny gives its metric (`Actor.Operation`): the steps that name it
/// (`[[group.steps]] metric`), added together as genny adds an actor's operations of one name,
/// across its phases; and the most threads of the groups it was measured in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct MetricRow {
    pub(crate) metric: String,
    pub(crate) workers: u32,
    /// Documents as genny counts them: those moved, and what counts answered.
    pub(crate) documents: u64,
    pub(crate) row: Row,
}

/// The rows under genny's metric names, in the order the plan first names them; empty for a
/// profile whose steps name none.
pub(crate) fn metric_rows(plan: &RunPlan, metrics: &[GroupMetrics]) -> Vec<MetricRow> {
    // Per metric: its rows added, its threads per stage (groups of one stage run at once, a
    // split actor's among them), and whether any was open loop.
    type Named = (String, GroupMetrics, BTreeMap<String, u32>, bool);
    let mut named: Vec<Named> = Vec::new();
    let stage_of = |i: usize| {
        plan.stages
            .iter()
            .find(|s| s.groups.iter().any(|g| g.index == i))
            .map_or(String::new(), |s| s.name.clone())
    };
    for g in plan.groups().filter(|g| g.reports()) {
        let m = &metrics[g.index];
        let mut seen = std::collections::HashSet::new();
        // The group's own row, when the whole operation is a metric (`metric` on the group);
        // then each step's that names one.
        let whole = g.steps_metric().map(|metric| (None, metric));
        let steps = g.step_policies().filter_map(|(kind, policy)| {
            let metric = policy.metric.as_ref().filter(|_| policy.report)?;
            Some((Some(kind), metric))
        });
        for (kind, metric) in whole.into_iter().chain(steps) {
            // A step name two states share is one row of the group: added once.
            if let Some(kind) = kind {
                if !seen.insert((kind.clone(), metric.clone())) {
                    continue;
                }
            }
            let k = match kind {
                Some(kind) => m.kinds.get(kind).cloned().unwrap_or_default(),
                None => m.without_kinds(),
            };
            let i = match named.iter().position(|(n, ..)| n == metric) {
                Some(i) => i,
                None => {
                    named.push((
                        metric.clone(),
                        GroupMetrics::default(),
                        BTreeMap::new(),
                        false,
                    ));
                    named.len() - 1
                }
            };
            let (_, sum, workers, open) = &mut named[i];
            sum.merge(&k);
            *workers.entry(stage_of(g.index)).or_default() += g.threads;
            *open |= g.rate.is_some();
        }
    }
    named
        .into_iter()
        .map(|(metric, m, workers, open)| MetricRow {
            workers: workers.values().copied().max().unwrap_or(0),
            documents: m.docs.moved() + m.docs.counted,
            row: m.summary_row(Label::group(&metric), open),
            metric,
        })
        .collect()
}
