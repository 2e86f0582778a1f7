//! Everything a reader of a result must be told, computed once from the result itself: each with
//! a stable code (for scripts reading `summary.json`), the run and label it concerns, and the
//! message in words. Renderers only place and prefix them.

use serde::{Deserialize, Serialize};

use super::Summary;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// A group's operations ran but none found a document.
    NoMatch,
    /// The run stopped on `stop_on_error_pct`.
    StoppedEarly,
    /// An open-loop group fell short of its rate, or left operations unstarted.
    RateNotReached,
    /// Open-loop operations started behind their schedule (a note, not a fault).
    LateOperations,
    /// The load generator, not the server, may have set the pace.
    LoadGenerator,
    /// serverStatus did not answer in some sampled seconds of a stage.
    StatusMissed,
    /// A sampled series (the server process, serverStatus) has a stretch without samples in a
    /// stage: from when to when.
    SamplingGap,
    /// A `--server-metrics` endpoint did not answer (or not with an exporter's page) in some
    /// seconds: its columns show `-` there (a note; the run is unharmed).
    MetricsSource,
    /// A stage too short for the once-a-second sampler to say anything about.
    TooShortToSample,
    /// A group's warm-up: what it kept out of the summary (a note).
    WarmupExcluded,
    /// The stages began after the common start (`--start-at`, a run in parts) by more than
    /// `LATE_START_MS`.
    LateStart,
    /// A merged run lacks parts (`merge --allow-missing`): it had less load than the run.
    MissingParts,
    /// The member sampler could not read a member, or a `lag_max` threshold had no lag to
    /// judge (a note; the run is unharmed).
    Members,
    /// Something failed beyond operations (a panic, an output not written whole): exit 1.
    Failure,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub code: WarningCode,
    /// The run of a `--repeat` it concerns; None for the whole invocation.
    pub(crate) run: Option<u32>,
    /// The summary row or stage it concerns, if one.
    pub(crate) label: Option<String>,
    pub message: String,
}

/// A start this much behind the common one is reported: parts whose first operations are
/// further apart than this did not load the server together.
pub(crate) const LATE_START_MS: f64 = 50.0;

/// Every warning of `s`, in the order a reader is told them.
pub(crate) fn compute(s: &Summary) -> Vec<Warning> {
    let mut out = Warnings::default();
    no_match(s, &mut out);
    stopped_early(s, &mut out);
    rates(s, &mut out);
    late_starts(s, &mut out);
    missing_parts(s, &mut out);
    warmups(s, &mut out);
    metrics_sources(s, &mut out);
    members(s, &mut out);
    resources(s, &mut out);
    failures(s, &mut out);
    out.0
}

/// The warnings found so far, in the order they were found.
#[derive(Default)]
struct Warnings(Vec<Warning>);

impl Warnings {
    /// Adds a warning of `code` about `run` and `label`.
    fn add(&mut self, code: WarningCode, run: Option<u32>, label: Option<String>, message: String) {
        self.0.push(Warning {
            code,
            run,
            label,
            message,
        })
    }
}

/// The rows whose operations ran but found no document.
fn no_match(s: &Summary, out: &mut Warnings) {
    for run in &s.runs {
        for row in &run.rows {
            // A step's row times the step; what matched is counted on its group's row.
            let step_row = matches!(&row.label, crate::metrics::Label::Kind { group, kind }
                if s.groups.iter().any(|g| group.is(&g.name) && g.steps.iter().any(|x| x == kind.as_str())));
            // A row of a change (`--live-control`) holds some of its group's operations,
            // which the group's own row judges.
            let change_row = run.is_change_row(&row.label);
            // A group that only counts (`nop`: genny's HelloWorld) finds nothing by design.
            let counting = row.label.group_row().is_some_and(|g| {
                s.groups.iter().any(|x| {
                    g.is(&x.name)
                        && !x.operations.is_empty()
                        && x.operations.iter().all(|o| o == "nop")
                })
            }) || (row.label.group_row().is_none()
                && !s.groups.is_empty()
                && s.groups
                    .iter()
                    .all(|x| !x.operations.is_empty() && x.operations.iter().all(|o| o == "nop")));
            if row.samples > 0
                && !counting
                && row.matched == 0
                && row.errors < row.samples
                && !step_row
                && !change_row
            {
                let unacknowledged = row
                    .label
                    .group_row()
                    .is_some_and(|g| only_unacknowledged_writes(s, &g.to_string()));
                out.add(
                    WarningCode::NoMatch,
                    Some(run.run),
                    Some(row.label.to_string()),
                    if unacknowledged {
                        "no operation is known to have found a document: with write concern 0 the server does not say what a write matched".into()
                    } else {
                        "no operation found a document; check the filter fields and the preload"
                            .into()
                    },
                );
            }
        }
    }
}

/// Whether group `g` writes with write concern 0 and does nothing but its own writes.
fn only_unacknowledged_writes(s: &Summary, g: &str) -> bool {
    use crate::vocab::{OpKind, OpName};
    use crate::workload::command::Verb;
    s.groups.iter().any(|x| {
        x.name == g
            && x.write_concern.as_deref() == Some("0")
            && if x.operations.is_empty() {
                // Built-in kinds: an insert and an update are a write alone (a remove's find
                // and a get are acknowledged reads).
                let kinds: Vec<&OpName> = if x.mix.is_empty() {
                    vec![&x.op]
                } else {
                    x.mix.iter().map(|m| &m.op).collect()
                };
                kinds
                    .iter()
                    .all(|k| matches!(k, OpName::Kind(OpKind::Insert | OpKind::Update)))
            } else {
                x.operations
                    .iter()
                    .all(|o| Verb::from_name(o).is_some_and(|v| v.writes() && v.at_w0()))
            }
    })
}

/// The runs stopped on `stop_on_error_pct`.
fn stopped_early(s: &Summary, out: &mut Warnings) {
    for run in &s.runs {
        if let Some(reason) = &run.stopped_early {
            out.add(
                WarningCode::StoppedEarly,
                Some(run.run),
                None,
                reason.clone(),
            );
        }
    }
}

/// The open-loop groups that fell short of their rate, or started operations late. A group
/// whose rate was changed while it ran (`--live-control`) is judged by the row of each rate,
/// against that rate; in a coordinated part, against its share of it (its rows are named for
/// the whole run's rates: its own rate over the whole run's before the first change).
fn rates(s: &Summary, out: &mut Warnings) {
    use crate::metrics::Label;
    for run in &s.runs {
        for g in s.groups.iter().filter(|g| g.rate.is_some()) {
            let changes: Vec<&super::Change> = run
                .changes
                .iter()
                .filter(|c| c.group == g.name && c.setting == crate::vocab::Setting::Rate)
                .collect();
            let judged: Vec<(Label, f64)> = match changes.first() {
                None => g
                    .rate
                    .map(|r| (Label::group(&g.name), r))
                    .into_iter()
                    .collect(),
                Some(first) => {
                    let share = g.rate.map_or(1.0, |r| r / first.from);
                    std::iter::once((
                        Label::at(&g.name, crate::vocab::Setting::Rate, first.from),
                        first.from * share,
                    ))
                    .chain(changes.iter().map(|c| (c.row.clone(), c.to * share)))
                    .collect()
                }
            };
            for (label, rate) in judged {
                let Some(row) = run.rows.iter().find(|r| r.label == label) else {
                    continue;
                };
                rate_of(run.run, g, row, rate, out);
            }
            // Operations owed when time ran out are the group's, whatever its rate then.
            let whole = run.rows.iter().find(|r| r.label == Label::group(&g.name));
            if let (false, Some(row)) = (changes.is_empty(), whole) {
                if row.missed > 0 {
                    out.add(
                        WarningCode::RateNotReached,
                        Some(run.run),
                        Some(g.name.clone()),
                        format!("{} operations never started", row.missed),
                    );
                }
            }
        }
    }
}

/// One row of an open-loop group against `rate`.
fn rate_of(
    run: u32,
    g: &super::GroupInfo,
    row: &crate::metrics::Row,
    rate: f64,
    out: &mut Warnings,
) {
    if row.throughput < rate * 0.95 || row.missed > 0 {
        out.add(
            WarningCode::RateNotReached,
            Some(run),
            Some(row.label.to_string()),
            format!(
                "reached {:.1}/s of the target {rate}/s ({:.0} %); {} operations never started",
                row.throughput,
                row.throughput * 100.0 / rate,
                row.missed
            ),
        );
    }
    if row.late > 0 {
        out.add(
            WarningCode::LateOperations,
            Some(run),
            Some(row.label.to_string()),
            late_operations(g, row, rate),
        );
    }
}

/// What started late in group `g`'s `row` at `rate`, and how many users (or connections)
/// would keep up.
fn late_operations(g: &super::GroupInfo, row: &crate::metrics::Row, rate: f64) -> String {
    // Little's law: users in service = arrival rate x time in service.
    let needed = (rate * row.service_p99_ms / 1000.0).ceil().max(1.0);
    format!(
        "{} of {} operations started late ({}), up to {:.2} ms behind the schedule; at {rate}/s and a service p99 of {:.2} ms, about {needed:.0} {} are needed (rate x service time){}",
        row.late,
        row.samples,
        match g.pool_size {
            // More users than connections: the pool is what ran out.
            Some(p) if p < g.threads => format!("all {p} connections of the pool busy, with {} users", g.threads),
            _ => format!("all {} users busy", g.threads),
        },
        row.max_behind_ms,
        row.service_p99_ms,
        match g.pool_size {
            Some(p) if p < g.threads => "connections (pool_size)",
            _ => "users",
        },
        match g.pool_size {
            Some(p) if p < g.threads => ", or a server that answers faster",
            _ => "",
        },
    )
}

/// The runs whose stages began well after the common start.
fn late_starts(s: &Summary, out: &mut Warnings) {
    for run in &s.runs {
        if let Some(start) = run.start.as_ref().filter(|st| st.late_ms > LATE_START_MS) {
            out.add(
                WarningCode::LateStart,
                Some(run.run),
                None,
                format!(
                    "the stages began {:.0} ms after the common start at {} (the setup or this host came late); other parts had that much load to themselves",
                    start.late_ms, start.at
                ),
            );
        }
    }
}

/// A merged run's missing parts, then its parts that began well after the common start.
fn missing_parts(s: &Summary, out: &mut Warnings) {
    if !s.missing_parts.is_empty() {
        let list: Vec<String> = s.missing_parts.iter().map(u32::to_string).collect();
        out.add(
            WarningCode::MissingParts,
            None,
            None,
            format!(
                "merged without part{} {} (--allow-missing): the numbers are those of {} parts, less load than the run had",
                if list.len() > 1 { "s" } else { "" },
                list.join(", "),
                s.parts.len()
            ),
        );
    }
    for p in &s.parts {
        if let Some(late) = p.late_start_ms.filter(|l| *l > LATE_START_MS) {
            out.add(
                WarningCode::LateStart,
                None,
                Some(format!("part {}", p.part)),
                format!("part {} began {late:.0} ms after the common start; the merged rates cover the union of the parts' spans", p.part),
            );
        }
    }
}

/// Each group's warm-up, kept out of the summary.
fn warmups(s: &Summary, out: &mut Warnings) {
    for run in &s.runs {
        for w in &run.warmup {
            let measured = run
                .rows
                .iter()
                .find(|r| r.label == w.label)
                .map_or(0, |r| r.samples);
            let also = if measured == 0 && w.samples > 0 {
                "; every operation of the group fell within it, so its row is empty"
            } else {
                ""
            };
            out.add(
                WarningCode::WarmupExcluded,
                Some(run.run),
                Some(w.label.to_string()),
                format!(
                    "its {} warm-up ({} operations, {} failed) is in samples.tsv and latency.hlog, not in the summary{also}",
                    humantime::format_duration(std::time::Duration::from_secs_f64(w.secs)),
                    w.samples,
                    w.errors
                ),
            );
        }
    }
}

/// What the member sampler could not read, and a `lag_max` threshold with no lag measured.
fn members(s: &Summary, out: &mut Warnings) {
    for w in &s.member_warnings {
        out.add(WarningCode::Members, None, None, w.clone());
    }
    for run in &s.runs {
        let unmeasured = run.members.iter().all(|m| m.lag_s.peak.is_none());
        for t in &run.thresholds {
            if unmeasured
                && t.metric
                    .is_some_and(|m| m.kind == crate::vocab::MetricKind::LagMax)
            {
                out.add(
                    WarningCode::Members,
                    Some(run.run),
                    None,
                    format!("`{}` had no lag to judge: no member's lag was measured (a standalone server, --no-members or --no-resources, or replSetGetStatus refused), so it fails", t.threshold),
                );
            }
        }
    }
}

/// The `--server-metrics` endpoints that missed some seconds.
fn metrics_sources(s: &Summary, out: &mut Warnings) {
    for m in &s.metrics_sources {
        if m.answered < m.seconds {
            out.add(
                WarningCode::MetricsSource,
                None,
                Some(m.host.to_string()),
                format!(
                    "server metrics from {} answered in {} of {} seconds{}: its columns are empty (-) in the seconds it missed",
                    m.url,
                    m.answered,
                    m.seconds,
                    m.problem
                        .as_ref()
                        .map_or(String::new(), |p| format!(" (first problem: {p})"))
                ),
            );
        }
    }
}

/// A sampled second's end, as RFC 3339 in whole seconds.
fn at(ms: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
        .to_string()
}

/// Per stage: the load generator's own warnings, serverStatus's missed seconds, a series'
/// stretch without samples, and a stage too short to sample.
fn resources(s: &Summary, out: &mut Warnings) {
    for r in &s.resources {
        if let Some(w) = &r.starved {
            out.add(
                WarningCode::LoadGenerator,
                Some(r.run),
                Some(r.label.to_string()),
                w.clone(),
            );
        }
        if let Some(w) = &r.warning {
            out.add(
                WarningCode::LoadGenerator,
                Some(r.run),
                Some(r.label.to_string()),
                w.clone(),
            );
        }
        if r.status_seconds < r.seconds && r.status_seconds > 0 {
            let spans: Vec<String> = r
                .gaps
                .iter()
                .filter(|g| g.series == "serverStatus")
                .map(|g| format!("{} to {}", at(g.from_ms), at(g.to_ms)))
                .collect();
            out.add(
                WarningCode::StatusMissed,
                Some(r.run),
                Some(r.label.to_string()),
                format!(
                    "serverStatus answered in {} of the {} sampled seconds (each waits at most 900 ms on the sampler's own connections): the others have no server columns{}",
                    r.status_seconds,
                    r.seconds,
                    if spans.is_empty() {
                        String::new()
                    } else {
                        format!(" (none from {})", spans.join(", from "))
                    }
                ),
            );
        }
        // serverStatus's stretches are said in its own warning, above.
        for g in r.gaps.iter().filter(|g| g.series != "serverStatus") {
            out.add(
                WarningCode::SamplingGap,
                Some(r.run),
                Some(r.label.to_string()),
                format!(
                    "{} not sampled from {} to {} ({} s{}): the stage's figures of it cover the other seconds",
                    g.series,
                    at(g.from_ms),
                    at(g.to_ms),
                    g.to_ms.saturating_sub(g.from_ms).div_ceil(1000),
                    if g.series == "server process" {
                        ": the process was gone, or not found again"
                    } else {
                        ": it did not answer"
                    }
                ),
            );
        }
        if !r.measurable {
            out.add(
                WarningCode::TooShortToSample,
                Some(r.run),
                Some(r.label.to_string()),
                "the stage was shorter than half a sampled second: its resources show as -".into(),
            );
        }
    }
}

/// What failed beyond operations: each run's, then the invocation's.
fn failures(s: &Summary, out: &mut Warnings) {
    for run in &s.runs {
        for f in &run.failures {
            out.add(WarningCode::Failure, Some(run.run), None, f.clone());
        }
    }
    for f in &s.failures {
        out.add(WarningCode::Failure, None, None, f.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::WarningCode::{self, *};

    /// Every code, kept complete by the match below: a new code does not compile until listed.
    const ALL: [WarningCode; 14] = [
        NoMatch,
        StoppedEarly,
        RateNotReached,
        LateOperations,
        LoadGenerator,
        StatusMissed,
        SamplingGap,
        MetricsSource,
        TooShortToSample,
        WarmupExcluded,
        LateStart,
        MissingParts,
        Members,
        Failure,
    ];

    #[test]
    fn every_warning_code_is_one_the_summary_schema_allows() {
        for code in ALL {
            match code {
                NoMatch | StoppedEarly | RateNotReached | LateOperations | LoadGenerator
                | StatusMissed | SamplingGap | MetricsSource | TooShortToSample
                | WarmupExcluded | LateStart | MissingParts | Members | Failure => {}
            }
        }
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../docs/summary.schema.json")).unwrap();
        let allowed: Vec<&str> = schema["$defs"]["warning"]["properties"]["code"]["enum"]
            .as_array()
            .expect("the schema lists the warning codes")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        for code in ALL {
            let name = serde_json::to_value(code).unwrap();
            let name = name.as_str().unwrap();
            assert!(
                allowed.contains(&name),
                "{name} is missing from docs/summary.schema.json"
            );
        }
        assert_eq!(
            allowed.len(),
            ALL.len(),
            "the schema lists a code the tool never writes"
        );
    }
}
