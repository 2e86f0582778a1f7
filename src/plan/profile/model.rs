//! The profile file as written: serde structs with `deny_unknown_fields`, no validation beyond
//! types. `crate::plan::build` turns this into a checked `RunPlan`.

use serde::Deserialize;

pub use crate::workload::OpKind;

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub target: Target,
    #[serde(default)]
    pub setup: Setup,
    /// Field name to generator; see `crate::workload::document` for the forms.
    #[serde(default)]
    pub document: toml::Table,
    /// Stop the run when this percentage of the recent operations failed (see `ErrorGuard`).
    pub stop_on_error_pct: Option<f64>,
    /// Warm-up of every group that sets none of its own.
    pub warmup: Option<String>,
    /// `"GROUP.METRIC" = "< LIMIT"` or `{ limit, abort, after }`; see `plan::thresholds`.
    #[serde(default)]
    pub thresholds: toml::Table,
    #[serde(default, rename = "group")]
    pub groups: Vec<Group>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub database: Option<String>,
    pub collection: Option<String>,
    /// `1`, `0`, `2`, ... or `"majority"`.
    pub write_concern: Option<toml::Value>,
    pub journal: Option<bool>,
    /// `primary`, `primaryPreferred`, `secondary`, `secondaryPreferred` or `nearest`.
    pub read_preference: Option<String>,
    pub pool_size: Option<u32>,
    /// Longest wait for one operation before it counts as a `timeout` failure.
    pub op_timeout: Option<String>,
    /// Prometheus exporter endpoints on the server hosts, like `--server-metrics`.
    pub server_metrics: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    #[serde(default)]
    pub drop: bool,
    #[serde(default)]
    pub preload: u64,
    #[serde(default)]
    pub indexes: Vec<toml::Table>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateTarget {
    /// One existing document chosen by its `_id` (from preload and inserts).
    Random,
    /// The documents matching a generated filter.
    Filter,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub name: String,
    /// One operation kind; or `mix` instead.
    pub op: Option<OpKind>,
    /// Operation kinds with their weights: each operation draws its kind (`{ get = 95, update = 5 }`).
    pub mix: Option<toml::Table>,
    /// How operations that pick an existing document pick it: uniform (default), zipfian,
    /// hotspot, latest, sequential or exponential (YCSB's request distributions).
    pub keys: Option<String>,
    pub threads: u32,
    pub ramp_up: Option<String>,
    pub loops: Option<u64>,
    pub duration: Option<String>,
    pub start_delay: Option<String>,
    /// Time from the group's start whose operations are logged but not summarised.
    pub warmup: Option<String>,
    /// Groups of one stage run at once; stages run one after another, in order of first use.
    pub stage: Option<String>,
    /// Operations per second for the whole group, spread evenly over its users (open loop): a
    /// number, a list of increasing steps (`[500, 1000, 2000]`, each `step` long), or a ramp
    /// (`{ from = 100, to = 5000, over = "5m" }`, run as steps).
    pub rate: Option<toml::Value>,
    /// The length of each rate step (with a list of rates; with a ramp, default over / 10).
    pub step: Option<String>,
    // Op settings.
    /// find: most documents returned (default 50); scan: most documents one scan reads
    /// (default 100, each scan's length uniform up to it).
    pub limit: Option<u32>,
    /// find: run `countDocuments` with the filter first.
    pub count: Option<bool>,
    /// find, remove, update with target = "filter": document fields to filter on by equality.
    pub filter: Option<Vec<String>>,
    /// update, rmw: document fields to `$set` to new generated values.
    pub set: Option<Vec<String>>,
    /// update, rmw: fields to `$inc` by 1 (counters of updates per document).
    pub inc: Option<Vec<String>>,
    /// update: `random` (default) or `filter`.
    pub target: Option<UpdateTarget>,
    /// update with target = "filter": `updateMany` instead of `updateOne`.
    pub many: Option<bool>,
}
