//! What `run.json` records about an invocation: the command line (passwords removed), the
//! resolved profile and plan, the seed, the server, this host, and when it ran. One type for a
//! whole run, a part and a merged run (which has `parts` instead of `host` and `part`), written
//! and read back by `rundir`; its schema is `docs/run.schema.json`.

use serde::{Deserialize, Serialize};

use std::time::Duration;

use super::{GroupInfo, ServerInfo, Summary, SCHEMA_VERSION};
use crate::plan::{RunPlan, TargetPlan};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub(crate) schema_version: u32,
    pub(crate) tool: String,
    pub(crate) command_line: Vec<String>,
    pub(crate) profile: ProfileInfo,
    pub(crate) plan: PlanInfo,
    pub(crate) seed: u64,
    pub(crate) server: ServerInfo,
    /// The load generator's machine; None for a merged run (its parts' are in `parts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// When the load began: the first run's stages (as summary.json's and a `--tsv --append`
    /// row's `started_at`); until then, when the command began.
    pub(crate) started_at: String,
    /// When the command began, before the server was reached and the setup ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) invoked_at: Option<String>,
    pub(crate) finished_at: Option<String>,
    pub(crate) interrupted: bool,
    /// Which part of a run in parts this invocation ran, and how its start went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<PartRecord>,
    /// A merged run: each part it was merged from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartInfo>,
    /// The length of latency.hlog's intervals (`--hdr-interval`), in seconds; None in a
    /// run.json written before it was recorded (a merge refuses such a part).
    #[serde(default)]
    pub(crate) hdr_interval_secs: Option<f64>,
    /// latency.hlog was written (not `--no-interval-log`); None in an older run.json.
    #[serde(default)]
    pub interval_log: Option<bool>,
    /// `--tag KEY=VALUE`: what the run was of (a commit, a branch, a build), for `history`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) tags: std::collections::BTreeMap<String, String>,
}

/// One part of a merged run: where it was, on which machine, run how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartInfo {
    pub(crate) index: u32,
    /// Its run directory, as `merge` was given it.
    pub(crate) dir: String,
    pub(crate) host: Option<HostInfo>,
    pub(crate) command_line: Vec<String>,
    pub(crate) part: Option<PartRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    /// 0-based.
    pub(crate) index: u32,
    pub(crate) count: u32,
    /// The common begin of the first run's stages, and how late this part began.
    pub(crate) start_at: Option<String>,
    pub(crate) late_start_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProfileInfo {
    pub(crate) name: String,
    pub(crate) origin: String,
    pub(crate) description: String,
    /// The profile as written.
    pub(crate) text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlanInfo {
    pub(crate) target: TargetPlan,
    pub(crate) setup: SetupInfo,
    pub(crate) groups: Vec<GroupInfo>,
    /// `--scale`: the factor the profile's rates were multiplied by (the groups' rates are
    /// the products) and the closed-loop groups left as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scale: Option<crate::plan::Scale>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SetupInfo {
    pub(crate) drop: bool,
    pub(crate) preload: u64,
    /// Index keys as the server's shell shows them.
    pub(crate) indexes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub(crate) hostname: Option<String>,
    pub(crate) os: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) cpus: usize,
    pub(crate) memory_bytes: u64,
}

impl HostInfo {
    /// This machine, from sysinfo (reads /proc: call it off the async runtime's workers).
    pub fn read() -> Self {
        HostInfo {
            hostname: sysinfo::System::host_name(),
            os: sysinfo::System::long_os_version(),
            kernel: sysinfo::System::kernel_version(),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: sysinfo::System::new_with_specifics(
                sysinfo::RefreshKind::nothing()
                    .with_memory(sysinfo::MemoryRefreshKind::everything()),
            )
            .total_memory(),
        }
    }
}

impl RunInfo {
    /// The record as it stands: `finished_at` is None while the run goes on.
    pub fn new(
        plan: &RunPlan,
        summary: &Summary,
        command_line: Vec<String>,
        host: HostInfo,
        times: (String, Option<String>),
        log: (Duration, bool),
        tags: std::collections::BTreeMap<String, String>,
    ) -> Self {
        let (invoked_at, finished_at) = times;
        // One start per run in every file: the load's, once it began.
        let started_at = summary
            .runs
            .first()
            .map_or_else(|| invoked_at.clone(), |r| r.started_at.clone());
        RunInfo {
            schema_version: SCHEMA_VERSION,
            tool: summary.tool.clone(),
            command_line,
            profile: ProfileInfo {
                name: plan.name.clone(),
                origin: plan.origin.clone(),
                description: plan.description.clone(),
                // A password in the profile (a --server-metrics URL's) is never stored.
                text: crate::redact::redact(&plan.profile_text),
            },
            plan: PlanInfo {
                target: crate::plan::TargetPlan {
                    server_metrics: plan
                        .target
                        .server_metrics
                        .iter()
                        .map(|u| crate::redact::redact(u))
                        .collect(),
                    ..plan.target.clone()
                },
                setup: SetupInfo {
                    drop: plan.setup().drop,
                    preload: plan.setup().preload,
                    indexes: plan.setup().indexes.iter().map(|d| d.to_string()).collect(),
                },
                groups: summary.groups.clone(),
                scale: plan.scale.clone(),
            },
            seed: summary.seed,
            server: summary.server.clone(),
            host: Some(host),
            started_at,
            invoked_at: Some(invoked_at),
            finished_at,
            interrupted: summary.interrupted,
            parts: Vec::new(),
            hdr_interval_secs: Some(log.0.as_secs_f64()),
            interval_log: Some(log.1),
            tags,
            part: summary.part.map(|p| {
                let start = summary.runs.first().and_then(|r| r.start.as_ref());
                PartRecord {
                    index: p.index,
                    count: p.count,
                    start_at: start.map(|s| s.at.clone()),
                    late_start_ms: start.map(|s| s.late_ms),
                }
            }),
        }
    }
}

impl RunInfo {
    /// The interval log's length, when recorded.
    pub fn hdr_interval(&self) -> Option<Duration> {
        self.hdr_interval_secs
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
    }
}
