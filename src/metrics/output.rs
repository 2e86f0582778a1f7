//! What the recorder tells the run's outputs as it goes: one typed stream of `RunEvent`s (the
//! intervals it closes, and the `Notice`s of what else happened, in order), each shown to every
//! `Output` in turn (in a run: the live page, `latency.hlog`, the threshold
//! abort, the live metrics, the live lines), as k6 hands its samples to its outputs. An output
//! says what it can do beyond taking events by overriding a default: a live window every so many
//! intervals (`window_every`), a moment to wait for it before the next event (`wait`, the
//! interval log's backpressure). One that is done (`Flow::Done`) or panics is taken off the
//! stream; the panic is the run's failure, never its end.
//!
//! Owns: the events and the contract of an output. Never: formats, writes or serves anything
//! (each output does), or records samples (the recorder does).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::group::GroupMetrics;
use super::interval::IntervalBatch;
use super::Label;

/// One thing that happened in the run, in the order it happened.
pub enum RunEvent<'a> {
    /// An interval ended (`--hdr-interval`): its histograms and the run so far. The last one,
    /// at the run's end, is `End`.
    Interval(Closed<'a>),
    /// The live window (every `window_every` intervals): what ran in it, warm-up included.
    Window(Window<'a>),
    /// Something besides the operations happened (a stage or a fault began or ended, a group
    /// was changed live, the deployment changed), told to the
    /// recorder as it happened and shown in order with the intervals.
    Notice(&'a Notice),
    /// The run ended: its last interval, and the run's totals.
    End(Closed<'a>),
}

/// Where a run's notices are told: its recorder, until the run ends (a send after that finds
/// nothing listening and is dropped, with nothing left to tell).
pub type Notify = tokio::sync::mpsc::UnboundedSender<Notice>;

/// What happened in the run besides its operations (`RunEvent::Notice`).
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A stage began at `began_us` (epoch microseconds); its counted operations from
    /// `start_us`, after its warm-ups.
    StageBegan {
        /// As the summary names it.
        label: Label,
        /// The profile's name of it; empty in a profile without stages.
        name: String,
        /// Each group's name and users.
        groups: Vec<(String, u32)>,
        began_us: u64,
        start_us: u64,
    },
    /// The stage going on ended.
    StageEnded { end_us: u64 },
    /// A fault (`[[fault]]`, `--fault`) was done from `began_us`.
    FaultBegan {
        /// As `--fault` writes it.
        fault: String,
        began_us: u64,
    },
    /// A group's rate or users was changed (`--live-control`), from the interval that begins
    /// at its `at_us`.
    Changed(Split),
    /// A warning found while the stages go (the member sampler's: a member that does not
    /// answer, a command it refuses), said at once; whoever found it keeps it for the summary.
    Warning(String),
    /// The deployment changed at `time_us`: a new primary, a member's state, a member added or
    /// removed, a chunk migrated. Told when the member sampler sees it (up to a second later),
    /// while the run's stages go.
    Member { time_us: u64, detail: String },
    /// The fault was over at `end_us` (the server listening again, a pause or step-down's
    /// length over): what happened, in words, and what could not be done.
    FaultEnded {
        fault: String,
        end_us: u64,
        detail: String,
        error: Option<String>,
    },
}

/// A closed interval, and the run's totals (warm-up excluded) with its rows of changes.
pub struct Closed<'a> {
    /// Its histograms, as `latency.hlog` has them; an output may keep it (the interval log
    /// sends it to its writer).
    pub batch: &'a Arc<IntervalBatch>,
    pub totals: &'a [GroupMetrics],
    pub segments: &'a [Segment],
    /// Since the recorder started.
    pub elapsed: Duration,
}

/// The live window: each group's metrics over the last `period`, and its running users.
pub struct Window<'a> {
    pub metrics: &'a [GroupMetrics],
    pub active: &'a [u32],
    pub elapsed: Duration,
    pub period: Duration,
}

/// A row of a group's operations between two changes (`insert@400/s`, `insert@50 users`).
#[derive(Debug, Clone)]
pub struct Segment {
    /// `GroupPlan::index`.
    pub(crate) group: usize,
    pub(crate) label: Label,
    /// The operations intended to start from `since_us` until `until_us` (epoch microseconds).
    pub(crate) since_us: u64,
    pub(crate) until_us: u64,
    pub(crate) metrics: GroupMetrics,
}

/// A change of a group made while it runs (`--live-control`), as the recorder applies it and
/// tells its outputs (`Notice::Changed`): from `at_us` on (by the operations' intended starts),
/// the group's operations also count in a row of their own, `after`; the first change of a
/// group gives what came before a row too, `before`. The group's own row keeps every operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// `GroupPlan::index`.
    pub(crate) group: usize,
    /// The group's name.
    pub(crate) name: String,
    pub(crate) setting: crate::vocab::Setting,
    pub(crate) from: f64,
    pub(crate) to: f64,
    /// Who asked: `page` (the live page's controls) or `api` (a POST of its own), with the
    /// client's address.
    pub(crate) who: String,
    pub(crate) before: Label,
    pub(crate) after: Label,
    pub(crate) at_us: u64,
}

/// Whether an output wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    More,
    /// It has acted and needs nothing more (the threshold abort stopped the run).
    Done,
}

/// Where the recorder's events go.
pub trait Output: Send {
    /// What it is, for a failure's message (`the live report`).
    fn name(&self) -> &'static str;

    fn event(&mut self, event: &RunEvent<'_>) -> Flow;

    /// The live window every this many intervals (at least 1); none: it is shown no window,
    /// and without an output that takes them, the recorder keeps none. With several, each is
    /// shown the window of the most frequent.
    fn window_every(&self) -> Option<u32> {
        None
    }

    /// What the recorder waits for before the next event (the interval log when its writer
    /// is behind); none: nothing.
    fn wait(&mut self) -> Option<BoxFuture<'static, ()>> {
        None
    }
}
