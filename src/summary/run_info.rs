//! What `run.json` records about an invocation: the command line (passwords removed), the
//! resolved profile and plan, the seed, the server, this host, and when it ran.

use serde::Serialize;

use super::{GroupInfo, ServerInfo, Summary, SCHEMA_VERSION};
use crate::plan::{RunPlan, TargetPlan};

#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub schema_version: u32,
    pub tool: String,
    pub command_line: Vec<String>,
    pub profile: ProfileInfo,
    pub plan: PlanInfo,
    pub seed: u64,
    pub server: ServerInfo,
    pub host: HostInfo,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub interrupted: bool,
    /// Which part of a run in parts this invocation ran, and how its start went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<PartRecord>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartRecord {
    /// 0-based.
    pub index: u32,
    pub count: u32,
    /// The common begin of the first run's stages, and how late this part began.
    pub start_at: Option<String>,
    pub late_start_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileInfo {
    pub name: String,
    pub origin: String,
    pub description: String,
    /// The profile as written.
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanInfo {
    pub target: TargetPlan,
    pub setup: SetupInfo,
    pub groups: Vec<GroupInfo>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetupInfo {
    pub drop: bool,
    pub preload: u64,
    /// Index keys as the server's shell shows them.
    pub indexes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpus: usize,
    pub memory_bytes: u64,
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
        started_at: String,
        finished_at: Option<String>,
    ) -> Self {
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
                    drop: plan.setup.drop,
                    preload: plan.setup.preload,
                    indexes: plan.setup.indexes.iter().map(|d| d.to_string()).collect(),
                },
                groups: summary.groups.clone(),
            },
            seed: summary.seed,
            server: summary.server.clone(),
            host,
            started_at,
            finished_at,
            interrupted: summary.interrupted,
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
