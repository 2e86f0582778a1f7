//! `audit`, `[server] args`, `[[fault]]` and `unavailable_after`, with the command line's
//! `--audit`, `--server-arg` and `--fault` (which replace the profile's lists).

use std::time::Duration;

use super::{Loaded, Overrides, ProfileError};
use crate::plan::fault::{self, FaultPlan, FAULT_FORMS};
use crate::plan::limits;
use crate::plan::RunPlan;

/// What the run does to the server and checks afterwards.
pub(super) struct Faults {
    pub(crate) audit: bool,
    pub(crate) faults: Vec<FaultPlan>,
    pub(crate) server_args: Vec<String>,
    pub(crate) unavailable_after: Option<Duration>,
}

pub(super) fn faults(loaded: &Loaded, ov: &Overrides) -> Result<Faults, ProfileError> {
    let p = &loaded.profile;
    let cli = |expr: &String, problem: String| ProfileError {
        file: "--fault".into(),
        line: 1,
        column: 1,
        key: String::new(),
        value: Some(expr.clone()),
        problem,
        expected: FAULT_FORMS.into(),
    };
    let faults: Vec<FaultPlan> = if ov.faults.is_empty() {
        p.faults
            .iter()
            .enumerate()
            .map(|(i, f)| {
                FaultPlan::new(
                    &f.kind,
                    &f.at,
                    f.restart_after.as_deref(),
                    f.lasts.as_deref(),
                )
                .map_err(|(key, problem)| {
                    loaded.error_at(&format!("fault[{i}].{key}"), problem, FAULT_FORMS)
                })
            })
            .collect::<Result<_, _>>()?
    } else {
        ov.faults
            .iter()
            .map(|e| FaultPlan::parse_cli(e).map_err(|p| cli(e, p)))
            .collect::<Result<_, _>>()?
    };
    if let Some((a, b)) = fault::overlapping(&faults) {
        let problem = format!(
            "{} starts before {} is over; one fault at a time",
            faults[b].text(),
            faults[a].text()
        );
        return Err(if ov.faults.is_empty() {
            loaded.error_at(&format!("fault[{b}].at"), problem, FAULT_FORMS)
        } else {
            cli(&ov.faults[b], problem)
        });
    }
    let server_args = if ov.server_args.is_empty() {
        p.server.args.clone()
    } else {
        ov.server_args.clone()
    };
    if let Some(bad) = server_args.iter().position(|a| a.trim().is_empty()) {
        return Err(loaded.error_at(
            &format!("server.args[{bad}]"),
            "an empty server flag",
            "the embedded server's own flags, e.g. args = [\"--sync-on-commit\"]",
        ));
    }
    let unavailable_after = p
        .unavailable_after
        .as_deref()
        .map(|s| {
            limits::parse_duration(s)
                .and_then(|d| {
                    if d.is_zero() {
                        Err("a window of 0 s would count every gap between two operations".into())
                    } else {
                        Ok(d)
                    }
                })
                .map_err(|p| loaded.error_at("unavailable_after", p, limits::duration_expected()))
        })
        .transpose()?;
    Ok(Faults {
        audit: p.audit || ov.audit,
        faults,
        server_args,
        unavailable_after,
    })
}

/// `lost` is the audit's, and both `lost` and `unavailable_max` are known only once the run is
/// over: a threshold on `lost` needs the audit, and neither can stop a run (`abort`).
pub(super) fn judged_after_the_run(
    loaded: &Loaded,
    thresholds: &[crate::plan::thresholds::ThresholdPlan],
    audit: bool,
) -> Result<(), ProfileError> {
    use crate::metrics::MetricKind;
    let refuse = |t: &crate::plan::thresholds::ThresholdPlan, problem: String, fix: &str| {
        let key = format!("thresholds.\"{}.{}\"", t.label, t.metric.name());
        let mut e = loaded.error_at(&key, problem, fix);
        if !loaded.text.contains(&t.metric.name()) {
            // Given with --threshold.
            e.file = "--threshold".into();
            e.line = 1;
            e.column = 1;
            e.key = String::new();
            e.value = Some(t.text.clone());
        }
        e
    };
    for t in thresholds {
        let after = matches!(
            t.metric.kind,
            MetricKind::Lost | MetricKind::UnavailableMax | MetricKind::LagMax
        );
        if t.metric.kind == MetricKind::Lost && !audit {
            return Err(refuse(
                t,
                format!(
                    "`{}` counts what the write audit found lost, but the audit is off",
                    t.text
                ),
                "audit = true in the profile, or --audit",
            ));
        }
        if after && t.abort {
            return Err(refuse(
                t,
                format!(
                    "`{}` is known only once the run is over, so it cannot stop the run",
                    t.text
                ),
                "leave out abort for it (it is judged after the run)",
            ));
        }
    }
    Ok(())
}

/// Why the audit could not judge this plan, if it could not: a template that deletes documents
/// in a collection the run inserts into (a document it deleted would look lost), or one that
/// updates documents of a collection whose `$inc` counters are audited (its changes would look
/// like lost updates or phantom ones), or a by-filter update of such a counter.
pub(super) fn refusal(plan: &RunPlan) -> Option<String> {
    use crate::workload::command::TemplateOp;
    use crate::workload::OpSpec;
    let counters = plan.counters();
    for g in plan.groups() {
        if g.spread.len() > 1 {
            return Some(format!(
                "group `{}` spreads its operations over {} collections (`collections`), and the audit follows each group on one",
                g.name,
                g.spread.len()
            ));
        }
        let specs = std::iter::once(&g.op).chain(g.mix.iter().map(|(s, _)| s));
        for spec in specs {
            let ops: Vec<&std::sync::Arc<TemplateOp>> = match spec {
                // The built-in kinds the audit follows (inserts, increments by `_id`, removes
                // by the `_id` found), but not an increment by filter.
                OpSpec::Template(t) => match &t.desugared {
                    Some(d) => {
                        let counters = &counters[t.collection];
                        let by_filter = !d.needs_key;
                        if let Some(f) = d.inc.iter().find(|f| by_filter && counters.contains(f)) {
                            return Some(format!(
                                "group `{}` increments `{f}` of the documents a filter matches, which the audit cannot count per document, beside groups whose increments of `{f}` it checks",
                                g.name
                            ));
                        }
                        // Its increments are not known: the server does not acknowledge them.
                        let unacknowledged =
                            g.concerns.write == Some(crate::plan::WriteConcernPlan::Nodes(0));
                        if let Some(f) = d
                            .inc
                            .iter()
                            .find(|f| unacknowledged && counters.contains(f))
                        {
                            return Some(format!(
                                "group `{}` increments `{f}` at write concern 0, which the server does not acknowledge, beside groups whose increments of `{f}` the audit checks",
                                g.name
                            ));
                        }
                        Vec::new()
                    }
                    None => vec![t],
                },
                OpSpec::Steps(s) => s.steps.iter().collect(),
            };
            for t in ops {
                let (name, c) = (
                    &plan.collections[t.collection].name,
                    &counters[t.collection],
                );
                if t.deletes() {
                    return Some(format!(
                        "group `{}`'s {} deletes documents of `{}`, and the audit could not tell a document it deleted from one the server lost",
                        g.name,
                        t.verb.name(),
                        name
                    ));
                }
                if t.updates() && !c.is_empty() {
                    return Some(format!(
                        "group `{}`'s {} may change the counters ({}) of `{}` whose increments the audit checks",
                        g.name,
                        t.verb.name(),
                        c.join(", "),
                        name
                    ));
                }
            }
        }
    }
    None
}

/// A fault must come while the stages run: when every group runs for a duration, a fault at
/// or after their end is refused (it would never be done).
pub(super) fn within_the_stages(
    loaded: &Loaded,
    ov: &Overrides,
    faults: &[FaultPlan],
    stages: &[crate::plan::Stage],
) -> Result<(), ProfileError> {
    let mut total = Duration::ZERO;
    for s in stages {
        let mut longest = Duration::ZERO;
        for g in &s.groups {
            match g.stop {
                crate::plan::StopAt::Duration(d) => longest = longest.max(g.start_delay + d),
                // Loops: its length is not known before the run.
                _ => return Ok(()),
            }
        }
        total += longest;
    }
    let Some((i, f)) = faults.iter().enumerate().find(|(_, f)| f.at >= total) else {
        return Ok(());
    };
    let problem = format!(
        "{} comes at or after the stages end ({} from the first stage's start): it would never be done",
        f.text(),
        humantime::format_duration(total)
    );
    Err(if ov.faults.is_empty() {
        loaded.error_at(&format!("fault[{i}].at"), problem, FAULT_FORMS)
    } else {
        ProfileError {
            file: "--fault".into(),
            line: 1,
            column: 1,
            key: String::new(),
            value: Some(ov.faults[i].clone()),
            problem,
            expected: FAULT_FORMS.into(),
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::plan::build::test_profile::build;

    /// An update at w:0 of a counter the audit checks would look like phantom increments.
    #[test]
    fn the_audit_refuses_an_unacknowledged_increment_of_a_counter_it_checks() {
        let group = |name: &str, w: &str| {
            format!("[[group]]\nname = \"{name}\"\nop = \"update\"\ninc = [\"n\"]\nthreads = 1\nloops = 1\n{w}")
        };
        let doc = "audit = true\n[setup]\npreload = 10\n[document]\nn = { int = [0, 0] }\n";
        let both = format!(
            "{doc}{}{}",
            group("a", ""),
            group("b", "write_concern = 0\n")
        );
        let e = build(&both).unwrap_err();
        assert!(
            e.problem.contains("increments `n` at write concern 0"),
            "{}",
            e.problem
        );
        // Alone, the w:0 group's counters are not audited, so there is nothing to refuse.
        let alone = format!("{doc}{}", group("b", "write_concern = 0\n"));
        assert!(build(&alone).is_ok_and(|p| p.counters()[0].is_empty()));
    }
}
