//! The validated run plan: a profile plus command-line overrides, checked once. Everything after
//! this point takes a `RunPlan`, never the raw profile or the command line.
//!
//! Owns: the profile model and its located errors (`profile`), every bound (`limits`), the
//! build of a `RunPlan` (`build/`, one file per part: target, setup, groups, rates, operations,
//! thresholds), a run divided into parts (`part`), a step of a series (`series`) and the thresholds' grammar (`thresholds`).
//! Never: talks to a server, touches the run directory, or formats a result.

mod build;
pub(crate) mod fault;
pub(crate) mod genny;
pub(crate) mod limits;
pub mod part;
pub mod profile;
pub(crate) mod series;
pub(crate) mod thresholds;

use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::Document;
use serde::{Deserialize, Serialize};

use crate::workload::{DocGen, KeyDist, OpSpec};

/// Command-line settings that override every group.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub(crate) threads: Option<u32>,
    pub(crate) loops: Option<u64>,
    pub(crate) duration: Option<Duration>,
    pub(crate) rate: Option<f64>,
    /// `--scale`: every group's rate times this.
    pub(crate) scale: Option<f64>,
    /// `--scale-threads off`: `--scale` leaves the groups' users as they are.
    pub(crate) scale_keeps_threads: bool,
    pub(crate) op_timeout: Option<Duration>,
    pub(crate) warmup: Option<Duration>,
    /// `--threshold` expressions, added to the profile's.
    pub(crate) thresholds: Vec<String>,
    /// `--recordcount`: the documents the setup loads first (`setup.preload`).
    pub(crate) recordcount: Option<u64>,
    /// `--audit`.
    pub(crate) audit: bool,
    /// `--fault`s: they replace the profile's `[[fault]]`s.
    pub(crate) faults: Vec<String>,
    /// `--server-arg`s: they replace the profile's `[server] args`.
    pub(crate) server_args: Vec<String>,
    /// `sweep --watchers`: the listeners of every watch group (`--threads` leaves them).
    pub(crate) watchers: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct RunPlan {
    pub(crate) name: String,
    pub(crate) origin: String,
    pub(crate) description: String,
    pub(crate) target: TargetPlan,
    /// The collections the run works on: `[[collection]]`s, or the one `[target]` collection
    /// with `[setup]` and `[document]`. The first is `target.collection`.
    pub collections: Vec<CollectionPlan>,
    /// Each distinct (collection, concerns) a group sends on; groups name theirs by index. The
    /// first is the first collection with `[target]`'s concerns.
    pub(crate) handles: Vec<HandlePlan>,
    pub(crate) stages: Vec<Stage>,
    /// The profile as written, for run.json.
    pub(crate) profile_text: String,
    pub(crate) stop_on_error_pct: Option<f64>,
    /// Pass/fail limits on the result (profile's, then the command line's).
    pub(crate) thresholds: Vec<thresholds::ThresholdPlan>,
    /// Set when this invocation runs one part of a run on several machines.
    pub(crate) part: Option<part::PartPlan>,
    /// Check after each run what the server kept of every acknowledged write.
    pub(crate) audit: bool,
    /// Faults done to the server, from the first stage's start.
    pub(crate) faults: Vec<fault::FaultPlan>,
    /// Extra flags for the embedded server.
    pub(crate) server_args: Vec<String>,
    /// A window of unavailability is a gap with no success longer than this; None: 1 s, or 10x
    /// the group's median latency when longer.
    pub(crate) unavailable_after: Option<Duration>,
    /// `[metrics] listen` and `push` as written (the command line and environment win).
    pub(crate) metrics_listen: Option<String>,
    pub(crate) metrics_push: Option<String>,
    /// `--scale`: the rates were multiplied (the groups' rates are the products).
    pub(crate) scale: Option<Scale>,
}

/// `run --scale X`: every open-loop group's rate (each step of its steps or ramp) times X.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Scale {
    pub(crate) factor: f64,
    /// The closed-loop groups, left as they are: they have no rate to multiply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unscaled: Vec<String>,
    /// Open-loop groups whose users were raised with their rate (a rate X times higher needs
    /// X times the users at the same latency, by Little's law): (group, users before, after).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) threads: Vec<(String, u32, u32)>,
}

impl Scale {
    /// What `--scale` did to the users, for the plan's lines; None when it left them.
    pub(crate) fn threads_line(&self) -> Option<String> {
        (!self.threads.is_empty()).then(|| {
            format!(
                "--scale {} raises the users with the rate (the same latency needs {} times the operations in flight; --scale-threads off keeps them): {}",
                self.factor,
                self.factor,
                self.threads
                    .iter()
                    .map(|(g, a, b)| format!("{g} {a} -> {b}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// What `--scale` did not do, for the console; None when every group was scaled.
    pub(crate) fn warning(&self) -> Option<String> {
        (!self.unscaled.is_empty()).then(|| {
            format!(
                "--scale {} multiplies rates, and {} closed loop with no rate: left as {} (--threads changes users)",
                self.factor,
                match self.unscaled.as_slice() {
                    [one] => format!("group {one} runs"),
                    many => format!("groups {} run", many.join(", ")),
                },
                if self.unscaled.len() == 1 { "it is" } else { "they are" }
            )
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TargetPlan {
    pub(crate) database: String,
    pub(crate) collection: String,
    /// `None` leaves the deployment's default.
    pub(crate) write_concern: Option<WriteConcernPlan>,
    pub(crate) journal: Option<bool>,
    pub(crate) read_preference: ReadPref,
    pub(crate) pool_size: u32,
    /// Longest wait for one operation; past it the operation fails as `timeout`.
    pub(crate) op_timeout: Duration,
    /// Exporter endpoints on the server hosts (`target.server_metrics`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) server_metrics: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum WriteConcernPlan {
    Nodes(u32),
    Majority,
}

/// A read preference mode, as named in profiles (the one table of their names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub(crate) enum ReadPref {
    #[default]
    Primary,
    PrimaryPreferred,
    Secondary,
    SecondaryPreferred,
    Nearest,
}

impl ReadPref {
    pub(crate) const ALL: [ReadPref; 5] = [
        ReadPref::Primary,
        ReadPref::PrimaryPreferred,
        ReadPref::Secondary,
        ReadPref::SecondaryPreferred,
        ReadPref::Nearest,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            ReadPref::Primary => "primary",
            ReadPref::PrimaryPreferred => "primaryPreferred",
            ReadPref::Secondary => "secondary",
            ReadPref::SecondaryPreferred => "secondaryPreferred",
            ReadPref::Nearest => "nearest",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<ReadPref> {
        Self::ALL.into_iter().find(|r| r.name() == s)
    }

    /// `"primary", "primaryPreferred", ... or "nearest"`, for error texts.
    pub(crate) fn listed() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|r| format!("\"{}\"", r.name()))
            .collect();
        let (last, rest) = names.split_last().expect("five names");
        format!("{} or {last}", rest.join(", "))
    }
}

impl From<ReadPref> for &'static str {
    fn from(r: ReadPref) -> Self {
        r.name()
    }
}

impl TryFrom<String> for ReadPref {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        ReadPref::from_name(&s).ok_or_else(|| format!("`{s}` is not {}", ReadPref::listed()))
    }
}

impl std::fmt::Display for ReadPref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone)]
pub struct SetupPlan {
    pub(crate) drop: bool,
    pub preload: u64,
    pub(crate) indexes: Vec<IndexPlan>,
}

/// One index: its keys and its options as the server names them (`unique`,
/// `partialFilterExpression`, `expireAfterSeconds`, `sparse`, `collation`, `name`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexPlan {
    pub(crate) keys: Document,
    pub(crate) options: Document,
}

impl std::fmt::Display for IndexPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.options.is_empty() {
            write!(f, "{}", self.keys)
        } else {
            write!(f, "{} {}", self.keys, self.options)
        }
    }
}

/// One collection of the run: its name, setup and document template.
#[derive(Debug, Clone)]
pub struct CollectionPlan {
    pub(crate) name: String,
    /// Its database when not `[target]`'s (`[[collection]] database`).
    pub(crate) database: Option<String>,
    pub setup: SetupPlan,
    pub(crate) document: Arc<DocGen>,
    /// Checked after each run (`invariant = { sum, min }`).
    pub(crate) invariant: Option<InvariantPlan>,
}

impl CollectionPlan {
    /// Does a group or step name it: by its name, or as `database.name` when it has a
    /// database of its own (two collections of one name in two databases).
    pub(crate) fn is_named(&self, name: &str) -> bool {
        self.name == name
            || self.database.as_ref().is_some_and(|d| {
                name.strip_prefix(d.as_str())
                    .and_then(|r| r.strip_prefix('.'))
                    == Some(self.name.as_str())
            })
    }
}

/// The sum of `field` over the collection stays what it was before the load, and no value of
/// it falls below `min`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InvariantPlan {
    pub(crate) field: String,
    pub(crate) min: Option<f64>,
}

/// A collection with the concerns a group sends on it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HandlePlan {
    pub(crate) collection: usize,
    pub(crate) concerns: Concerns,
}

/// Write concern, read concern and read preference of a group (or `[target]`'s).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Concerns {
    pub(crate) write: Option<WriteConcernPlan>,
    pub(crate) journal: Option<bool>,
    pub(crate) wtimeout: Option<Duration>,
    pub(crate) read_concern: Option<ReadConcernPlan>,
    pub(crate) read_preference: ReadPrefPlan,
    /// The profile's own operations of each user in one causally consistent session.
    pub(crate) causal_consistency: bool,
}

/// A read concern level, as named in profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ReadConcernPlan {
    Local,
    Majority,
    Available,
    Linearizable,
    Snapshot,
}

impl ReadConcernPlan {
    pub(crate) const ALL: [ReadConcernPlan; 5] = [
        ReadConcernPlan::Local,
        ReadConcernPlan::Majority,
        ReadConcernPlan::Available,
        ReadConcernPlan::Linearizable,
        ReadConcernPlan::Snapshot,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            ReadConcernPlan::Local => "local",
            ReadConcernPlan::Majority => "majority",
            ReadConcernPlan::Available => "available",
            ReadConcernPlan::Linearizable => "linearizable",
            ReadConcernPlan::Snapshot => "snapshot",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == s)
    }
}

/// A read preference with its tag sets and staleness bound.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ReadPrefPlan {
    pub(crate) mode: ReadPref,
    /// Tag sets, in order of preference.
    pub(crate) tags: Vec<Vec<(String, String)>>,
    pub(crate) max_staleness: Option<Duration>,
}

pub(crate) const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const DEFAULT_FIND_LIMIT: u32 = 50;
/// YCSB's `maxscanlength`.
pub(crate) const DEFAULT_SCAN_LIMIT: u32 = 100;
pub(crate) const DEFAULT_POOL_SIZE: u32 = 100;

#[derive(Debug, Clone)]
pub(crate) struct Stage {
    pub(crate) name: String,
    pub(crate) groups: Vec<GroupPlan>,
}

#[derive(Debug, Clone)]
pub struct GroupPlan {
    /// Position among all groups of the plan; samples carry it.
    pub(crate) index: usize,
    pub name: String,
    /// A rate step (`rate = [...]`): its profile group's name, while `name` is the step's row
    /// (`run@500/s`); None for a group that is its own row.
    pub(crate) step_of: Option<String>,
    pub(crate) op: OpSpec,
    pub threads: u32,
    pub(crate) ramp_up: Duration,
    pub(crate) start_delay: Duration,
    /// From the group's start: operations due before it are logged but not summarised.
    pub(crate) warmup: Duration,
    pub(crate) stop: StopAt,
    /// Target operations per second for the group (open loop); None: closed loop.
    pub(crate) rate: Option<f64>,
    /// A group that mixes operations: each kind with its weight (`op` is the first); empty for
    /// one operation.
    pub(crate) mix: Vec<(OpSpec, u32)>,
    /// How operations that pick an existing document pick it.
    pub(crate) keys: KeyDist,
    /// The collection it works on (index into `RunPlan::collections`).
    pub(crate) collection: usize,
    /// Where its operations go (index into `RunPlan::handles`).
    pub(crate) handle: usize,
    /// Starts when this group of its stage has ended (`after`, by `GroupPlan::index`), its start
    /// delay from then; None: with its stage.
    pub(crate) after: Option<usize>,
    /// `[[group.states]]`: each user walks this state machine over `mix` (a state per entry);
    /// None: operations drawn from `mix` independently.
    pub(crate) chain: Option<std::sync::Arc<Chain>>,
    /// `resume_from`: the plan whose users' last states this group's users start in.
    pub(crate) resume: Option<Resume>,
    /// `collections = [...]`: each operation goes to one of these, drawn uniformly (collection
    /// and handle; the first is `collection`); empty: always `collection`.
    pub(crate) spread: Vec<(usize, usize)>,
    /// `collections_in_turn`: a user's operation n goes to `spread[n % len]`, not a drawn one.
    pub(crate) in_turn: bool,
    /// `op_timeout_per_step`: an operation of steps may take the operation timeout once per
    /// step it sends (genny's Loader: a whole collection's batches in one operation).
    pub(crate) timeout_per_step: bool,
    /// Its write concern, read concern and read preference.
    pub(crate) concerns: Concerns,
    /// Pauses before and after each operation of a user (genny's `SleepBefore`, `SleepAfter`),
    /// inside the group's time.
    pub(crate) sleep_before: Duration,
    pub(crate) sleep_after: Duration,
    /// A group of change-stream listeners (`watch = { ... }`): its `threads` streams are open
    /// from before the first stage to the run's end; its operations are the events received.
    pub(crate) watch: Option<Arc<WatchPlan>>,
}

/// What each listener of a watch group opens, and how long the run's end waits for it.
#[derive(Debug)]
pub(crate) struct WatchPlan {
    pub(crate) scope: WatchScope,
    /// The stream's stages, an array made once per listener (generators allowed).
    pub(crate) pipeline: Option<crate::workload::Template>,
    /// The pipeline as written (JSON), for `validate`.
    pub(crate) pipeline_shown: String,
    /// `fullDocument` and `fullDocumentBeforeChange` as the server spells them.
    pub(crate) full_document: Option<String>,
    pub(crate) full_document_before_change: Option<String>,
    pub(crate) batch_size: Option<u32>,
    pub(crate) max_await_time: Option<Duration>,
    /// The longest the run's end waits for events not delivered yet.
    pub(crate) drain: Duration,
    /// A listener's own work per event: the pause before it reads the next one.
    pub(crate) think: Duration,
}

/// Which changes a watch group's streams see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchScope {
    Collection { database: String, name: String },
    Database(String),
    Cluster,
}

impl WatchScope {
    /// Does a change to `database.collection` fall in it?
    pub(crate) fn admits(&self, database: &str, collection: &str) -> bool {
        match self {
            WatchScope::Collection { database: d, name } => d == database && name == collection,
            WatchScope::Database(d) => d == database,
            WatchScope::Cluster => true,
        }
    }
}

impl std::fmt::Display for WatchScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchScope::Collection { database, name } => write!(f, "collection {database}.{name}"),
            WatchScope::Database(d) => write!(f, "database {d}"),
            WatchScope::Cluster => f.write_str("the whole deployment"),
        }
    }
}

/// A group's state machine (genny's CrudActor `States`): the states are the group's `mix`, in
/// order; a user's first state is drawn by `initial`'s weights, each next one by the weights of
/// the transitions out of the state it was in, after the transition's pause.
#[derive(Debug)]
pub(crate) struct Chain {
    pub(crate) initial: Vec<f64>,
    /// Per state, the transitions out of it.
    pub(crate) transitions: Vec<Vec<Transition>>,
}

/// Where a state machine's users start (`resume_from`, genny's `Continue`): in the state their
/// counterparts of group plan `from` were last in, their steps sent again unless `skip_first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resume {
    pub(crate) from: usize,
    pub(crate) skip_first: bool,
}

#[derive(Debug)]
pub(crate) struct Transition {
    pub(crate) to: usize,
    pub(crate) weight: f64,
    /// Milliseconds to pause before the next state (None: none).
    pub(crate) sleep: Option<crate::workload::Template>,
}

impl Transition {
    /// The pause it asks for now (its `sleep` made: milliseconds; none if it makes no number).
    pub(crate) fn pause(&self, cx: &mut crate::workload::template::Cx<'_>) -> Duration {
        use mongodb::bson::Bson;
        let Some(t) = &self.sleep else {
            return Duration::ZERO;
        };
        let ms = match t.generate(cx) {
            Bson::Double(d) => d,
            Bson::Int32(i) => f64::from(i),
            // A pause of more than 2^52 ms (142,000 years) loses precision.
            #[allow(clippy::cast_precision_loss)]
            Bson::Int64(i) => i as f64,
            _ => 0.0,
        };
        Duration::try_from_secs_f64(ms / 1000.0).unwrap_or_default()
    }
}

impl Chain {
    /// The index drawn by `weights` (all finite, at least one above 0: the plan checks).
    fn pick(weights: impl Iterator<Item = f64> + Clone, rng: &mut impl rand::Rng) -> usize {
        let total: f64 = weights.clone().sum();
        let mut at = rng.random::<f64>() * total;
        let mut last = 0;
        for (i, w) in weights.enumerate() {
            if w > 0.0 {
                if at < w {
                    return i;
                }
                at -= w;
                last = i;
            }
        }
        last
    }

    /// A user's first state.
    pub(crate) fn first(&self, rng: &mut impl rand::Rng) -> usize {
        Self::pick(self.initial.iter().copied(), rng)
    }

    /// The transition taken out of state `from`.
    pub(crate) fn next(&self, from: usize, rng: &mut impl rand::Rng) -> &Transition {
        let out = &self.transitions[from];
        &out[Self::pick(out.iter().map(|t| t.weight), rng)]
    }
}

impl GroupPlan {
    /// Its group's name in the profile (a rate step's group's, not the step's row).
    pub(crate) fn profile_name(&self) -> &str {
        self.step_of.as_deref().unwrap_or(&self.name)
    }

    /// The collection and handle of a user's operation `turn` (from 0): the group's own, or
    /// one of its `collections`, drawn uniformly or (`collections_in_turn`) the next in turn.
    pub(crate) fn target(&self, rng: &mut impl rand::Rng, turn: u64) -> (usize, usize) {
        match self.spread.len() {
            0 => (self.collection, self.handle),
            1 => self.spread[0],
            n if self.in_turn => {
                let n = u64::try_from(n).unwrap_or(u64::MAX);
                self.spread[usize::try_from(turn % n).unwrap_or(0)]
            }
            n => self.spread[rng.random_range(0..n)],
        }
    }

    /// The operation to send next: the group's one, or a kind of its mix drawn by weight.
    pub(crate) fn draw(&self, rng: &mut impl rand::Rng) -> &OpSpec {
        if self.mix.is_empty() {
            return &self.op;
        }
        let total: u64 = self.mix.iter().map(|(_, w)| u64::from(*w)).sum();
        let mut at = rng.random_range(0..total.max(1));
        for (spec, w) in &self.mix {
            if at < u64::from(*w) {
                return spec;
            }
            at -= u64::from(*w);
        }
        &self.op
    }

    /// The kinds of the group's operations, in the profile's order.
    /// Every step of the group with its policy: its steps', or each state's.
    pub(crate) fn step_policies(
        &self,
    ) -> impl Iterator<
        Item = (
            &crate::workload::op::OpName,
            &crate::workload::command::StepPolicy,
        ),
    > {
        std::iter::once(&self.op)
            .chain(self.mix.iter().map(|(s, _)| s))
            .filter_map(|s| match s {
                OpSpec::Steps(st) => Some(st),
                _ => None,
            })
            .flat_map(|st| st.steps.iter().map(|t| &t.name).zip(&st.policy))
    }

    /// The longest an operation `spec` of the group may take: the operation timeout, or (with
    /// `op_timeout_per_step`) that once per step it sends; and each of its scans' `hold` (a
    /// transaction kept open that long on purpose).
    pub(crate) fn op_limit(&self, spec: &OpSpec, op_timeout: Duration) -> Duration {
        match spec {
            OpSpec::Steps(st) => {
                let each = if self.timeout_per_step {
                    op_timeout.saturating_mul(u32::try_from(st.steps.len()).unwrap_or(u32::MAX))
                } else {
                    op_timeout
                };
                each.saturating_add(st.held)
            }
            _ => op_timeout,
        }
    }

    /// The genny metric a steps group's whole operation is (`metric` on the group).
    pub(crate) fn steps_metric(&self) -> Option<&String> {
        match &self.op {
            OpSpec::Steps(st) => st.metric.as_ref(),
            _ => None,
        }
    }

    /// Does the row of kind `kind` exist (a step with `report = false` has none)?
    pub(crate) fn reports_kind(&self, kind: &crate::workload::op::OpName) -> bool {
        self.step_policies()
            .filter(|(n, _)| *n == kind)
            .all(|(_, p)| p.report)
    }

    /// Does the group have a row: not when it is steps every one of which has `report = false`.
    pub(crate) fn reports(&self) -> bool {
        let mut steps = self.step_policies().peekable();
        steps.peek().is_none() || steps.any(|(_, p)| p.report)
    }

    pub(crate) fn kinds(&self) -> Vec<crate::workload::op::OpName> {
        // A state machine: a row per state (its visits), then one per step name (a name two
        // states share is one row, as genny adds up its operations' metrics by name).
        if self.chain.is_some() {
            let mut names: Vec<_> = self.mix.iter().map(|(s, _)| s.kind()).collect();
            for (s, _) in &self.mix {
                if let OpSpec::Steps(st) = s {
                    for t in &st.steps {
                        if !names.contains(&t.name) {
                            names.push(t.name.clone());
                        }
                    }
                }
            }
            return names;
        }
        if let OpSpec::Steps(s) = &self.op {
            // A group of steps has a row per step name (a repeated step's sends are one
            // row), and a transaction's first attempt.
            let mut names: Vec<crate::workload::op::OpName> = Vec::new();
            for t in &s.steps {
                if !names.contains(&t.name) {
                    names.push(t.name.clone());
                }
            }
            if s.transaction {
                names.push(crate::metrics::group::FIRST_ATTEMPT.into());
            }
            return names;
        }
        if self.mix.is_empty() {
            vec![self.op.kind()]
        } else {
            self.mix.iter().map(|(s, _)| s.kind()).collect()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum StopAt {
    /// Operations per virtual user.
    Loops(u64),
    /// Time from the group's start (after its start delay), ramp-up included, as in JMeter.
    Duration(Duration),
    /// Both: at least this many operations per user and at least this long, whichever ends
    /// later (`at_least = true`; genny's `Repeat` with `Duration`).
    AtLeast(u64, Duration),
    /// Until the stage's other groups are done (`background = true`; genny's `Blocking: None`).
    Background,
}

impl StopAt {
    /// The operations per user it waits for, if any.
    pub(crate) fn loops(self) -> Option<u64> {
        match self {
            StopAt::Loops(l) | StopAt::AtLeast(l, _) => Some(l),
            StopAt::Duration(_) | StopAt::Background => None,
        }
    }

    /// The time it waits for, if any.
    pub(crate) fn duration(self) -> Option<Duration> {
        match self {
            StopAt::Duration(d) | StopAt::AtLeast(_, d) => Some(d),
            StopAt::Loops(_) | StopAt::Background => None,
        }
    }

    /// Ends only when its loops are done (no time bound of its own): a count the plan knows.
    pub(crate) fn counted(self) -> Option<u64> {
        match self {
            StopAt::Loops(l) => Some(l),
            _ => None,
        }
    }
}

impl RunPlan {
    /// By collection: the counter fields built-in groups increment by `_id` (`inc = [...]` of
    /// `update` and `rmw`), each once, in the order first met; what the write audit checks. A
    /// group at write concern 0 is not one of them: the server does not say what it wrote.
    pub(crate) fn counters(&self) -> Vec<Vec<String>> {
        let mut out = vec![Vec::new(); self.collections.len()];
        for g in self.groups() {
            if g.concerns.write == Some(WriteConcernPlan::Nodes(0)) {
                continue;
            }
            for spec in std::iter::once(&g.op).chain(g.mix.iter().map(|(s, _)| s)) {
                let OpSpec::Template(t) = spec else { continue };
                // An update or rmw by `_id` (one that needs an existing document).
                if let Some(d) = t.desugared.as_ref().filter(|d| d.needs_key) {
                    let c: &mut Vec<String> = &mut out[t.collection];
                    for f in &d.inc {
                        if !c.contains(f) {
                            c.push(f.clone());
                        }
                    }
                }
            }
        }
        out
    }

    /// The database collection `c` is in.
    pub(crate) fn database_of(&self, c: usize) -> &str {
        self.collections[c]
            .database
            .as_deref()
            .unwrap_or(&self.target.database)
    }

    /// The first collection's document template (the `[document]` of a one-collection profile).
    pub fn document(&self) -> &Arc<DocGen> {
        &self.collections[0].document
    }

    /// The first collection's setup.
    pub fn setup(&self) -> &SetupPlan {
        &self.collections[0].setup
    }

    pub fn groups(&self) -> impl Iterator<Item = &GroupPlan> {
        self.stages.iter().flat_map(|s| s.groups.iter())
    }

    /// Total planned operations, when every group stops by loops.
    pub(crate) fn planned_operations(&self) -> Option<u64> {
        self.groups()
            .map(|g| {
                g.stop
                    .counted()
                    .map(|l| l.saturating_mul(u64::from(g.threads)))
            })
            .sum()
    }

    /// The summary label of a stage: its group's name, or the TOTAL row that sums its groups.
    pub(crate) fn stage_label(&self, stage: &Stage) -> crate::metrics::Label {
        use crate::metrics::Label;
        match stage.groups.as_slice() {
            [one] => Label::group(&one.name),
            _ if self.stages.len() == 1 => Label::Total,
            _ => Label::Stage(stage.name.clone()),
        }
    }
}
