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
    /// `[[collection]]`: several collections, each with its document template and setup; a
    /// profile without it has the one `[target]` collection with `[setup]` and `[document]`.
    #[serde(default, rename = "collection")]
    pub collections: Vec<CollectionDef>,
    /// Check after the run what the server kept of each acknowledged write (`--audit`).
    #[serde(default)]
    pub audit: bool,
    /// `[server]`: how the embedded server is started.
    #[serde(default)]
    pub server: ServerDef,
    /// `[[fault]]`: faults done to the server during the run (`--fault`).
    #[serde(default, rename = "fault")]
    pub faults: Vec<FaultDef>,
    /// A gap with no successful operation longer than this is a window of unavailability
    /// (default 1 s, or 10x the group's median latency when that is longer).
    pub unavailable_after: Option<String>,
    /// `[metrics]`: live metrics for Prometheus (`--metrics-listen`, `--metrics-push`).
    #[serde(default)]
    pub metrics: MetricsDef,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsDef {
    /// Where to serve `/metrics`, e.g. "127.0.0.1:9464".
    pub listen: Option<String>,
    /// A Prometheus remote-write URL.
    pub push: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDef {
    /// Extra flags for the embedded server (`--server-arg`), e.g. `["--sync-on-commit"]`.
    #[serde(default)]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct FaultDef {
    /// kill, pause, restart or stepdown.
    pub kind: String,
    /// From the first stage's start, e.g. "4s".
    pub at: String,
    /// kill, restart: the wait before the server starts again.
    pub restart_after: Option<String>,
    /// pause, stepdown: how long it lasts.
    #[serde(rename = "for")]
    pub lasts: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionDef {
    pub name: String,
    /// Its database, when not `[target]`'s (genny's `Database` per actor).
    pub database: Option<String>,
    #[serde(default)]
    pub drop: bool,
    #[serde(default)]
    pub preload: u64,
    /// `{ keys = { a = 1 }, unique = true, ... }`, or the keys alone (`{ a = 1 }`).
    #[serde(default)]
    pub indexes: Vec<toml::Table>,
    #[serde(default)]
    pub document: toml::Table,
    /// Checked after the run: the sum of a field is what it was before, and no value is below
    /// `min` (the bank-transfer invariant): `invariant = { sum = "balance", min = 0 }`.
    pub invariant: Option<InvariantDef>,
}

#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct InvariantDef {
    pub sum: String,
    pub min: Option<f64>,
}

/// Declares a struct with the given fields and one optional table per operation of the
/// profile's own (`find = { ... }`, `insertMany = { ... }`), with `op_tables()` listing the ones
/// set, in the order of `Verb::ALL`.
macro_rules! with_op_tables {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }) => {
        crate::vocab::verbs!(op_tables_struct; $(#[$m])* pub struct $name { $($(#[$fm])* pub $f: $t,)* });
    };
}

/// `with_op_tables!` with the verbs of `vocab::verbs!`'s one list.
macro_rules! op_tables_struct {
    (
        [$(($v:ident, $field:ident, $verb:tt)),* $(,)?]
        $(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }
    ) => {
        $(#[$m])*
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
            $(
                #[doc = concat!("`", $verb, "`: this operation, with its arguments.")]
                #[serde(rename = $verb)]
                pub $field: Option<toml::Value>,
            )*
        }

        impl $name {
            /// The operation tables set, with their driver names.
            pub fn op_tables(&self) -> Vec<(&'static str, &toml::Value)> {
                [$(($verb, &self.$field),)*]
                    .into_iter()
                    .filter_map(|(n, v)| v.as_ref().map(|v| (n, v)))
                    .collect()
            }
        }
    };
}

with_op_tables! {
    /// One step of a group's operation (`[[group.steps]]`).
    #[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
    #[serde(deny_unknown_fields)]
    pub struct StepDef {
        /// Its row's name (`transfer:debit`); default `step0`, `step1`, ...
        pub name: Option<String>,
        /// The collection it works on; default the group's.
        pub collection: Option<String>,
        /// What a failure of this step does (genny's `ThrowOnFailure`/`RecordFailure`): `end`
        /// (default) ends the operation, `record` counts it on the step's row and goes on,
        /// `ignore` counts it nowhere and goes on (outside a transaction).
        pub on_error: Option<OnError>,
        /// `false`: the step runs but has no row (genny's `ReportMetrics: false`); a group
        /// whose every step has none has no row either.
        pub report: Option<bool>,
        /// The name of the metric genny gives this step (`Actor.Operation`), for
        /// `rollups.json`; steps sharing one are added together there.
        pub metric: Option<String>,
        /// Sent this many times in a row, each made afresh and timed on the step's row
        /// (genny's Loader: `DocumentCount / BatchSize` inserts of a collection); default 1.
        pub repeat: Option<u32>,
    }
}

use crate::workload::command::OnError;

/// One state of a group's state machine (`[[group.states]]`, genny's CrudActor `States`): its
/// steps, run in order each time a user enters it (one sample, a row named after the state),
/// and where the user goes next.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct StateDef {
    pub name: String,
    pub steps: Vec<StepDef>,
    #[serde(default)]
    pub transitions: Vec<TransitionDef>,
}

/// A way out of a state: to another (or the same), drawn by weight among the state's, after a
/// pause (`sleep`: milliseconds, or a generator of them such as `^TimeSpec`).
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TransitionDef {
    pub to: String,
    pub weight: f64,
    pub sleep: Option<toml::Value>,
}

with_op_tables! {
    /// One of a group's named operations (`[[group.ops]]`), with its weight.
    #[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
    #[serde(deny_unknown_fields)]
    pub struct NamedOp {
        pub name: String,
        pub weight: Option<u32>,
    }
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

with_op_tables! {
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub name: String,
    /// The collection it works on (`[[collection]]`'s name); default the first.
    pub collection: Option<String>,
    /// Several collections instead: each operation goes to one of them, drawn uniformly (its
    /// keys and documents that collection's; genny's `MultiCollectionUpdate`/`Query`).
    pub collections: Option<Vec<String>>,
    /// With `collections`: each user's operations go to them in turn, user n's first to the
    /// n-th, rather than drawn (genny's Loader: a thread's collections one after another).
    pub collections_in_turn: Option<bool>,
    /// With steps: an operation may take the operation timeout once per step it sends, not
    /// once in all (genny's Loader: a whole collection's batches in one operation).
    pub op_timeout_per_step: Option<bool>,
    /// SPEC's isolation histories (`history = { model = "list-append", ... }`): read so that
    /// a profile written to the SPEC is refused by name, not as an unknown key; not built yet.
    pub history: Option<toml::Value>,
    /// Per group, overriding `[target]`: `1`, `"majority"` or `{ w, j, wtimeout }`.
    pub write_concern: Option<toml::Value>,
    /// `local`, `majority`, `available`, `linearizable` or `snapshot`.
    pub read_concern: Option<String>,
    /// A mode, or `{ mode, tags, maxStalenessSeconds }`.
    pub read_preference: Option<toml::Value>,
    /// Several named operations with weights, each a row of its own (`group:name`).
    pub ops: Option<Vec<NamedOp>>,
    /// Several operations run in order as one (`[[group.steps]]`), timed as one sample.
    pub steps: Option<Vec<StepDef>>,
    /// A state machine (`[[group.states]]`): each user moves from state to state, running the
    /// steps of each state it enters; `initial` draws its first state by weight.
    pub states: Option<Vec<StateDef>>,
    pub initial: Option<toml::Table>,
    /// A state machine of an earlier stage's group: each user starts in the state its
    /// counterpart (the same user number) there was last in (genny's CrudActor `Continue`);
    /// `initial` then draws only for users without one.
    pub resume_from: Option<String>,
    /// With `resume_from`: that first state's steps are not sent again; its way out is taken
    /// (genny's `SkipFirstOperations`).
    pub skip_first: Option<bool>,
    /// Values generated once per operation, read by its steps with `{ "^Bind" = "name" }`.
    pub bind: Option<toml::Table>,
    /// Run the steps in one transaction, retried as the drivers' convenient API does.
    pub transaction: Option<bool>,
    /// Every step runs whatever the one before matched (genny's CrudActor); default false: a
    /// step that matches nothing ends the operation there.
    pub every_step: Option<bool>,
    /// With steps: the genny metric the group's own row is (one operation per iteration, as
    /// genny's CollectionScanner's `Scan`), added into `summary.json`'s metrics and rollups.
    pub metric: Option<String>,
    /// Each virtual user's operations in one causally consistent session of its own (reads see
    /// the user's own earlier writes, also on secondaries).
    pub causal_consistency: Option<bool>,
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
    /// With both `loops` and `duration`: the group runs at least both (whichever ends later),
    /// as genny's `Repeat` with `Duration`.
    pub at_least: Option<bool>,
    /// Runs until the stage's other groups are done, with neither loops nor duration (genny's
    /// `Blocking: None`).
    pub background: Option<bool>,
    /// Pauses of each user before and after each of its operations (genny's `SleepBefore`,
    /// `SleepAfter`), inside the group's time.
    pub sleep_before: Option<String>,
    pub sleep_after: Option<String>,
    pub start_delay: Option<String>,
    /// Starts when the group of this name (earlier in the profile, of the same stage) has
    /// ended, rather than with its stage (genny's Loader: one thread's collections in turn).
    pub after: Option<String>,
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
    /// A group of change-stream listeners instead of operations: `threads` streams, open from
    /// before the first stage to the run's end.
    pub watch: Option<WatchDef>,
}
}

/// `watch = { ... }`: what each listener of a watch group opens.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct WatchDef {
    /// A collection's stream (a `[[collection]]` of the profile, or any name in `[target]`'s
    /// database); the default scope, with the group's collection.
    pub collection: Option<String>,
    /// A database's stream instead.
    pub database: Option<String>,
    /// The whole deployment's stream instead.
    pub cluster: Option<bool>,
    /// The stream's aggregation stages (`[{ "$match" = { operationType = "insert" } }]`), with
    /// generators made once per listener.
    pub pipeline: Option<Vec<toml::Value>>,
    /// `default`, `updateLookup`, `whenAvailable` or `required`.
    pub full_document: Option<String>,
    /// `off`, `whenAvailable` or `required`.
    pub full_document_before_change: Option<String>,
    pub batch_size: Option<u32>,
    pub max_await_time: Option<String>,
    /// How long the run's end waits for events not delivered yet (default 5s).
    pub drain: Option<String>,
    /// A listener's own work per event (a slow consumer): it reads its next event this long
    /// after the last.
    pub think: Option<String>,
}
