//! The result model: what one run (or `--repeat` runs) measured, built once and ready for every
//! report format: rows per group, the resource summary (`resources`), the spread across runs
//! (`spread`), the warnings in words (`warnings`), and what `run.json` records (`run_info`).
//!
//! Owns: every number and judgement a report shows. Never: formats a cell, picks a column
//! order, or writes a file.

pub(crate) mod audit;
pub(crate) mod faults;
pub(crate) mod judge;
pub(crate) mod measured;
pub(crate) mod members;
pub(crate) mod plans;
pub(crate) mod resources;
pub mod run_info;
pub(crate) mod spread;
pub(crate) mod streams;
pub(crate) mod warnings;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::{GroupMetrics, Label, Row};
use crate::monitor::ResourceRow;
use crate::plan::part::Part;
use crate::plan::RunPlan;
use crate::vocab::label::AtValue;
use crate::vocab::Setting;
use crate::workload::op::OpName;
pub use measured::{Measured, Stopped};
use resources::{ResourceSummary, StageSpan};
pub(crate) use spread::{spread, Spread};
pub use warnings::{Warning, WarningCode};

mod rows;
pub(crate) use rows::*;

pub(crate) const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub(crate) schema_version: u32,
    pub(crate) tool: String,
    pub(crate) profile: String,
    pub(crate) origin: String,
    pub seed: u64,
    pub(crate) server: ServerInfo,
    pub(crate) groups: Vec<GroupInfo>,
    pub runs: Vec<RunResult>,
    /// Run-to-run spread of throughput per label; empty for a single run.
    pub(crate) spread: Vec<Spread>,
    /// Server and client resources per stage of each run (see `resources`).
    pub(crate) resources: Vec<ResourceSummary>,
    pub(crate) interrupted: bool,
    /// Everything a reader should be told, with a code; the console table renders these.
    pub warnings: Vec<Warning>,
    /// The part of a run in parts this is (`--part`, `--parts`); None for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) part: Option<Part>,
    /// A merged run: each part's share (`mongo-stress merge`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) parts: Vec<PartRow>,
    /// How each `--server-metrics` endpoint answered; empty without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) metrics_sources: Vec<crate::monitor::MetricsSource>,
    /// What the member sampler could not read (a member that did not answer, a command it
    /// refused), each said once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) member_warnings: Vec<String>,
    /// Each template's winning plan, from the server's explain after the setup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) plans: Vec<plans::QueryPlan>,
    /// A merged run with `--allow-missing`: the parts it lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) missing_parts: Vec<u32>,
    /// What failed outside any one run (the sample log, the sampler): each fails the run.
    #[serde(skip)]
    pub(crate) failures: Vec<String>,
}

impl Summary {
    pub fn new(plan: &RunPlan, seed: u64, server: ServerInfo) -> Self {
        Summary {
            schema_version: SCHEMA_VERSION,
            tool: format!("mongo-stress {}", env!("CARGO_PKG_VERSION")),
            profile: plan.name.clone(),
            origin: plan.origin.clone(),
            seed,
            server,
            groups: group_info(plan),
            runs: Vec::new(),
            spread: Vec::new(),
            resources: Vec::new(),
            interrupted: false,
            warnings: Vec::new(),
            part: plan.part.as_ref().map(|p| p.part),
            parts: Vec::new(),
            missing_parts: Vec::new(),
            plans: Vec::new(),
            metrics_sources: Vec::new(),
            member_warnings: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Adds one run's result and recomputes what depends on all runs.
    pub fn add_run(&mut self, result: RunResult, rows: &[ResourceRow], sampled: bool) {
        self.interrupted |= result.interrupted;
        self.runs.push(result);
        self.refresh(rows, sampled);
    }

    /// Recomputes the spread, the resource summary of every run (from the sampler's rows, when
    /// it ran) and the warnings.
    pub(crate) fn refresh(&mut self, rows: &[ResourceRow], sampled: bool) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.refresh_on(rows, sampled, cores, crate::monitor::local::machine_cpus());
    }

    /// `refresh` for a load generator allowed `cores` CPUs on a machine of `machine_cpus` (a
    /// merged run's parts ran elsewhere).
    pub(crate) fn refresh_on(
        &mut self,
        rows: &[ResourceRow],
        sampled: bool,
        cores: usize,
        machine_cpus: usize,
    ) {
        self.spread = spread(&self.runs);
        if sampled {
            self.resources = self
                .runs
                .iter()
                .flat_map(|r| {
                    let throughput = |label: &Label| {
                        r.rows
                            .iter()
                            .find(|x| &x.label == label)
                            .map_or(0.0, |x| x.throughput)
                    };
                    resources::summarize(
                        r.run,
                        &r.stages,
                        throughput,
                        rows,
                        resources::Cores {
                            tool: cores,
                            machine: machine_cpus.max(cores),
                        },
                    )
                })
                .collect();
        }
        self.warnings = warnings::compute(self);
    }

    /// Something failed beyond operations: a panic, an output not written whole (read back
    /// from a run directory, what failed is in the warnings).
    pub(crate) fn failed(&self) -> bool {
        !self.failures.is_empty()
            || self.runs.iter().any(|r| !r.failures.is_empty())
            || self.warnings.iter().any(|w| w.code == WarningCode::Failure)
            || self
                .runs
                .iter()
                .any(|r| r.invariants.iter().any(|i| !i.holds))
            // An audit that could not read back (not for an interruption: that is 130).
            || self
                .runs
                .iter()
                .any(|r| r.audit.as_ref().is_some_and(|a| !a.finished) && !r.interrupted)
    }

    /// What the exit code is made of.
    pub(crate) fn outcome(&self) -> judge::Outcome {
        judge::Outcome {
            // A merged run with an interrupted part is not an interrupted merge: it failed.
            interrupted: self.interrupted && self.parts.is_empty(),
            threshold_failed: self
                .runs
                .iter()
                .any(|r| r.thresholds.iter().any(|t| !t.pass)),
            failed: self.failed()
                || self.interrupted
                || self.runs.iter().any(|r| r.total().errors > 0)
                || self
                    .runs
                    .iter()
                    .any(|r| r.streams.iter().any(streams::StreamResult::failed)),
            data_lost: self.runs.iter().any(RunResult::data_lost),
        }
    }

    /// The exit code this result earns (`run`, `merge` and `report.html` all ask here).
    pub fn exit_code(&self) -> i32 {
        self.outcome().exit_code()
    }
}

/// An invariant collection as read before and after the run.
#[derive(Debug, Clone, Default)]
pub struct InvariantSums {
    pub(crate) collection: String,
    pub(crate) field: String,
    pub(crate) sum_before: f64,
    pub(crate) sum_after: f64,
    pub(crate) min: Option<f64>,
    pub(crate) lowest: Option<f64>,
    pub(crate) below_min: u64,
    pub(crate) documents: u64,
}

/// A collection's invariant over one run: the sum of `field` before the load and after it,
/// the lowest value after, and how many fell below `min`. It holds when the sums are equal and
/// nothing is below `min`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct InvariantResult {
    pub(crate) collection: String,
    pub(crate) field: String,
    pub(crate) sum_before: f64,
    pub(crate) sum_after: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lowest: Option<f64>,
    pub(crate) below_min: u64,
    pub(crate) documents: u64,
    pub(crate) holds: bool,
}

impl InvariantResult {
    /// `accounts.balance: sum 100000 before, 100000 after; lowest 3, none below 0: holds`.
    pub(crate) fn line(&self) -> String {
        let lowest = self
            .lowest
            .map_or(String::new(), |l| format!("; lowest {l}"));
        let below = match self.min {
            Some(m) if self.below_min == 0 => format!(", none below {m}"),
            Some(m) => format!(", {} below {m}", self.below_min),
            None => String::new(),
        };
        format!(
            "invariant {}.{}: sum {} before the load, {} after{lowest}{below}: {}",
            self.collection,
            self.field,
            self.sum_before,
            self.sum_after,
            if self.holds { "holds" } else { "DOES NOT HOLD" }
        )
    }
}

/// One part of a merged run, as the `parts` table shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PartRow {
    pub(crate) part: u32,
    /// The part's run directory, as `merge` was given it.
    pub(crate) dir: String,
    pub(crate) host: Option<String>,
    pub(crate) samples: u64,
    pub(crate) throughput: f64,
    /// Average and peak client CPU % over the part's runs (None without resources).
    pub(crate) client_cpu_avg: Option<f64>,
    pub(crate) client_cpu_peak: Option<f64>,
    /// How late the part's stages began behind the common start (largest over its runs).
    pub(crate) late_start_ms: Option<f64>,
    /// A coordinated run's (`--coordinator`): the part's clock against the coordinator's
    /// (coordinator = part + offset) and the round trip it was read from, as last measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clock_offset_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) round_trip_ms: Option<f64>,
    /// A coordinated run's part that fell silent, or could not run: what became of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost: Option<String>,
}

/// A threshold judged on a run (by `judge`, the one judge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// As written: `find.p99 < 50ms`.
    pub(crate) threshold: String,
    /// The row it was judged on, its metric and comparison: the threshold as data, so a merge
    /// judges it again without parsing `threshold`. Absent in summaries written before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) label: Option<Label>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metric: Option<crate::metrics::Metric>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cmp: Option<crate::plan::thresholds::Cmp>,
    /// A change against the `--baseline` run (`limit` is then a percentage).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) relative: bool,
    /// The run's value, in `unit`.
    pub value: f64,
    /// The limit, in `unit` (ms for latencies).
    pub(crate) limit: f64,
    pub(crate) unit: String,
    pub pass: bool,
    /// It stopped the run (`abort = true`), so it failed.
    pub(crate) aborted: bool,
    /// In one part of a run in parts, a limit on a throughput or count is the whole run's:
    /// `merge` judges it; here it passes, marked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
}

/// The load phase: documents the setup inserted in batches (`setup.preload`, `--recordcount`)
/// before the stages, and how fast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    pub(crate) documents: u64,
    pub(crate) secs: f64,
    /// Documents per second.
    pub(crate) throughput: f64,
    /// Documents per `insertMany`.
    pub(crate) batch: u64,
}

/// When a run's stages were to begin, and how late they began (0 when on time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartInfo {
    /// RFC 3339 with milliseconds.
    pub(crate) at: String,
    pub(crate) late_ms: f64,
}

/// What a group's warm-up kept out of the summary (it is in samples.tsv and latency.hlog).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WarmupRow {
    pub(crate) label: crate::metrics::Label,
    pub(crate) secs: f64,
    pub(crate) samples: u64,
    pub(crate) errors: u64,
}

/// Who ran the server the tool talked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// Started by the tool for this run.
    Embedded,
    /// Named by `--uri`.
    External,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    pub kind: ServerKind,
    /// Server program and version as reported (`buildInfo`).
    pub version: String,
    /// Connection string with any password replaced.
    pub uri: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct GroupInfo {
    pub(crate) name: String,
    pub(crate) stage: String,
    pub(crate) op: OpName,
    pub(crate) threads: u32,
    pub(crate) loops: Option<u64>,
    pub(crate) duration_secs: Option<f64>,
    /// Target operations per second (open loop); None: closed loop.
    pub(crate) rate: Option<f64>,
    /// A group that mixes operations (`op` is then its first kind): each kind and its weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) mix: Vec<MixShare>,
    /// The profile's own operations of the group (driver names: `find`, `insertMany`); empty
    /// for the built-in ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) operations: Vec<String>,
    /// A group of steps: its rows besides its own (`group:STEP`, and `group:first-attempt`
    /// for a transaction).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) steps: Vec<String>,
    /// The group's write concern (`1`, `0`, `majority`), when it sets one or `[target]` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) write_concern: Option<String>,
    /// The key distribution, when not uniform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) keys: Option<String>,
    /// Open loop: the connections its operations can have at once (the driver's pool,
    /// `pool_size`); a slot that finds them all busy waits, and starts late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pool_size: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MixShare {
    pub(crate) op: OpName,
    pub(crate) weight: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub(crate) run: u32,
    pub(crate) started_at: String,
    pub(crate) wall_secs: f64,
    pub(crate) interrupted: bool,
    /// Group rows in profile order, a `TOTAL <stage>` row per multi-group stage when the profile
    /// has several stages, then `TOTAL`.
    pub rows: Vec<Row>,
    /// The rows under genny's metric names (`rollups.json`); empty for a TOML profile's run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) metrics: Vec<MetricRow>,
    /// Failures by class, per label.
    pub(crate) errors_by_class: BTreeMap<String, BTreeMap<String, u64>>,
    /// Each group's kinds of failure (class and server code), with the first one's message,
    /// the count and the share of the group's operations.
    #[serde(default)]
    pub(crate) error_kinds: Vec<Failure>,
    /// schema_version 1's failure messages with counts, kept for its readers: each kind's first
    /// message (with its label) and the kind's count (`Failure::messages`).
    #[serde(default)]
    pub(crate) error_messages: BTreeMap<String, u64>,
    /// When each stage ran.
    pub(crate) stages: Vec<StageSpan>,
    /// Why the run ended before its plan (stop_on_error_pct, an aborting threshold), if it did.
    pub(crate) stopped_early: Option<String>,
    /// The threshold (`abort = true`) that stopped the run, as written; None otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) aborted_by: Option<String>,
    /// Per group with a warm-up: what it excluded from the rows.
    pub(crate) warmup: Vec<WarmupRow>,
    /// The setup's preload (YCSB's load phase), when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) load: Option<LoadResult>,
    /// When the stages were to begin (`--start-at`, or a run in parts) and how late they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<StartInfo>,
    /// Each threshold of the plan, judged on this run (warm-up excluded).
    pub thresholds: Vec<ThresholdResult>,
    /// Each collection's invariant (`invariant = { sum, min }`), before and after this run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) invariants: Vec<InvariantResult>,
    /// The write audit (`--audit`): what the server kept of the acknowledged writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) audit: Option<audit::AuditResult>,
    /// The faults done to the server (`[[fault]]`), with how each group came back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) faults: Vec<faults::FaultEvent>,
    /// Windows with no successful operation, per group and for the run (TOTAL: no group had
    /// one), longer than each one's bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unavailable: Vec<crate::metrics::availability::Window>,
    /// Changes made while the run went (`--live-control`): a group's rate or users.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) changes: Vec<Change>,
    /// Each member of a replica set or cluster over the run (`members.tsv`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) members: Vec<members::MemberSummary>,
    /// The topology's events in the run: primary and state changes, members added or
    /// removed, chunk migrations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) topology: Vec<crate::monitor::members::TopologyEvent>,
    /// Each watch group's delivery: expected, delivered, missing, duplicated, resumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) streams: Vec<streams::StreamResult>,
    /// `changes.tsv`'s lines: every event and every missing one (not in summary.json).
    #[serde(skip)]
    pub(crate) change_lines: Vec<streams::ChangeLine>,
    /// The audit's lines for `audit.tsv` (not in summary.json: there may be millions).
    #[serde(skip)]
    pub(crate) audit_lines: Vec<audit::AuditLine>,
    /// What failed inside the run (a virtual user's or the recorder's panic); shown as warnings.
    #[serde(skip)]
    pub(crate) failures: Vec<String>,
    /// What the load generator added before its measured operations' sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_gap: Option<ToolGap>,
}

/// What the load generator added before the operations it measured (warm-up left out): the
/// time from when each was owed (its due time in open loop, the previous operation's end in
/// closed loop) to its send, summed, and the operations (`executor::Gaps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolGap {
    pub(crate) ops: u64,
    pub(crate) sum_us: u64,
}

impl ToolGap {
    /// The mean gap per operation, ms.
    pub(crate) fn mean_ms(&self) -> Option<f64> {
        (self.ops > 0).then(|| crate::num::real(self.sum_us) / crate::num::real(self.ops) / 1000.0)
    }
}

/// A group's rate or users changed while the run went (the live page's control): from when
/// (the end of the interval it was asked in), from what to what, who asked, and the row that
/// counts the group's operations from then on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// When it took effect, RFC 3339 with milliseconds.
    pub(crate) time: String,
    /// The same, milliseconds since the Unix epoch.
    pub(crate) time_ms: u64,
    pub(crate) group: String,
    /// Its rate (operations per second, open loop) or its users (closed loop).
    pub(crate) setting: Setting,
    pub(crate) from: f64,
    pub(crate) to: f64,
    /// Where it came from: `page` (the live page's controls) or `api` (a POST of its own),
    /// with the client's address.
    pub(crate) who: String,
    /// The row of the group's operations from then on (`insert@400/s`, `insert@50 users`).
    pub(crate) row: Label,
}

impl From<&crate::metrics::Split> for Change {
    /// A change as the recorder made it.
    fn from(s: &crate::metrics::Split) -> Change {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_micros(s.at_us);
        Change {
            time: humantime::format_rfc3339_millis(time).to_string(),
            time_ms: s.at_us / 1000,
            group: s.name.clone(),
            setting: s.setting,
            from: s.from,
            to: s.to,
            who: s.who.clone(),
            row: s.after.clone(),
        }
    }
}

impl Change {
    /// A value of `setting` as a person reads it: `400/s`, `50 users`.
    pub(crate) fn value_text(setting: Setting, value: f64) -> String {
        AtValue::of(setting, value).to_string()
    }

    /// Are two values of `setting` the same for a change? As their rows name them (a rate to
    /// two decimals, users whole): a change between them would split the group's row into two
    /// of one name (`insert@200/s` and `insert@200/s #2`).
    pub(crate) fn same_value(setting: Setting, a: f64, b: f64) -> bool {
        AtValue::of(setting, a) == AtValue::of(setting, b)
    }

    /// The change as its marker says it: `insert 200/s -> 400/s (page 127.0.0.1)`.
    pub(crate) fn text(&self) -> String {
        format!(
            "{} {} -> {} ({})",
            self.group,
            Change::value_text(self.setting, self.from),
            Change::value_text(self.setting, self.to),
            self.who
        )
    }
}

impl RunResult {
    /// A row of a group changed while the run went (`insert@400/s`, and the part before the
    /// first change): some of its group's operations, which the group's own row holds.
    pub(crate) fn is_change_row(&self, label: &Label) -> bool {
        label
            .group_row()
            .is_some_and(|g| g.at.is_some() && self.changes.iter().any(|c| c.group == g.name))
    }

    pub fn total(&self) -> &Row {
        self.rows.last().expect("a run always has a TOTAL row")
    }

    /// The audit found acknowledged writes the server did not keep (with the audit on, a
    /// collection's broken invariant too: money acknowledged as moved that is not there).
    pub(crate) fn data_lost(&self) -> bool {
        self.audit.as_ref().is_some_and(|a| {
            a.total.not_kept() > 0
                || self.invariants.iter().any(|i| !i.holds)
                // With the audit on, an event a listener never got is lost too.
                || self.streams.iter().any(|s| s.missing > 0)
        })
    }
}
