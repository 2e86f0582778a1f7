//! The page's events as types: each is one `PageEvent`, framed once as a server-sent event
//! (`event: NAME`, its data one line of JSON) and written to every viewer as it was framed. What
//! the page keeps of them (the last totals, the run's start) is kept typed, never read back out
//! of the JSON.

use std::sync::Arc;

use serde::Serialize;

use crate::metrics::Label;

/// One event of the stream.
pub(super) enum PageEvent<'a> {
    /// A run begins: its groups, stages and header.
    Run(&'a RunFrame),
    Interval(&'a IntervalFrame),
    State(&'a StateFrame),
    Change(&'a ChangeFrame),
    Resources(&'a ResourcesFrame),
    /// The command ended.
    End(&'a EndFrame),
}

impl PageEvent<'_> {
    /// `event: NAME` with its data on one line, as server-sent events are framed.
    pub(super) fn frame(&self) -> Arc<str> {
        let (name, data) = match self {
            PageEvent::Run(d) => ("run", serde_json::to_string(d)),
            PageEvent::Interval(d) => ("interval", serde_json::to_string(d)),
            PageEvent::State(d) => ("state", serde_json::to_string(d)),
            PageEvent::Change(d) => ("change", serde_json::to_string(d)),
            PageEvent::Resources(d) => ("resources", serde_json::to_string(d)),
            PageEvent::End(d) => ("end", serde_json::to_string(d)),
        };
        // Plain structs of strings, numbers and maps with string keys: they always serialize.
        let data =
            data.unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
        format!("event: {name}\ndata: {data}\n\n").into()
    }
}

/// Pairs written as a JSON object in their order (the page draws series in the order given).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ordered<T>(pub(crate) Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<T> FromIterator<(String, T)> for Ordered<T> {
    fn from_iter<I: IntoIterator<Item = (String, T)>>(iter: I) -> Self {
        Ordered(iter.into_iter().collect())
    }
}

/// The report's header, as far as it is known while the run goes (report.html's `header`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PageHeader {
    pub(crate) profile: String,
    pub(crate) description: String,
    pub(crate) seed: u64,
    pub(crate) server: String,
    pub(crate) host: String,
    pub(crate) command_line: String,
    pub(crate) started_at: String,
    pub(crate) finished_at: Option<String>,
    pub(crate) duration: Option<String>,
    pub(crate) exit: String,
    pub(crate) exit_code: Option<i32>,
    pub(crate) tool: String,
    /// The report's warnings; while the run goes, each `state` carries its own.
    pub(crate) warnings: Vec<WarningNow>,
}

#[derive(Debug, Serialize)]
pub(super) struct RunFrame {
    pub(super) title: Option<String>,
    /// None where the command sets none (a series' steps).
    pub(super) header: Option<PageHeader>,
    pub(super) groups: Vec<GroupFrame>,
    pub(super) stages: Vec<StageLabel>,
    pub(super) control: bool,
}

/// A group of the run, or one kind of a group (`kind_of` the group), as report.html's `groups`.
#[derive(Debug, Serialize)]
pub(super) struct GroupFrame {
    pub(super) tag: String,
    pub(super) name: String,
    pub(super) open_loop: bool,
    pub(super) stage: String,
    pub(super) kind_of: Option<String>,
    /// What may be set of it (`rate`, `users`); none for a kind or a rate step.
    pub(super) setting: Option<&'static str>,
    pub(super) value: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(super) struct StageLabel {
    pub(super) label: Label,
}

/// One closed interval: each series' count and percentiles, each group's users and errors.
#[derive(Debug, Serialize)]
pub(super) struct IntervalFrame {
    /// Seconds from the run's base.
    pub(super) start: f64,
    pub(super) length: f64,
    pub(super) series: Ordered<SeriesNow>,
    pub(super) activity: Ordered<ActivityNow>,
}

#[derive(Debug, Serialize)]
pub(super) struct SeriesNow {
    pub(super) count: u64,
    pub(super) p50: f64,
    pub(super) p90: f64,
    pub(super) p99: f64,
    pub(super) max: f64,
}

#[derive(Debug, Serialize)]
pub(super) struct ActivityNow {
    pub(super) users: u32,
    pub(super) errors: u64,
}

/// The run now: its rows, warnings, thresholds, stages, faults and latency spectra.
#[derive(Debug, Serialize)]
pub(super) struct StateFrame {
    pub(super) elapsed: f64,
    /// The stage going on, when it has a name.
    pub(super) stage: Option<String>,
    pub(super) time_left: Option<f64>,
    pub(super) summary_tsv: String,
    pub(super) totals: Ordered<RowTotals>,
    pub(super) warnings: Vec<WarningNow>,
    pub(super) thresholds: Vec<ThresholdNow>,
    pub(super) stages: Vec<StageFrame>,
    pub(super) faults: Vec<FaultFrame>,
    pub(super) spectrum: Vec<SpectrumFrame>,
}

/// A row's samples and errors so far (`GET /api/run`'s totals).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RowTotals {
    pub(crate) samples: u64,
    pub(crate) errors: u64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct WarningNow {
    pub(crate) code: &'static str,
    pub(crate) label: String,
    pub(crate) message: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ThresholdNow {
    pub(super) threshold: String,
    pub(super) value: f64,
    pub(super) unit: String,
    pub(super) verdict: &'static str,
}

#[derive(Debug, Serialize)]
pub(super) struct StageFrame {
    pub(super) label: String,
    pub(super) began: f64,
    pub(super) start: f64,
    pub(super) end: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(super) struct FaultFrame {
    pub(super) label: String,
    pub(super) from: f64,
    pub(super) to: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(super) struct SpectrumFrame {
    pub(super) run: u32,
    pub(super) label: String,
    pub(super) x: Vec<f64>,
    pub(super) y: Vec<f64>,
}

/// A change made at an interval's end (`--live-control`).
#[derive(Debug, Serialize)]
pub(super) struct ChangeFrame {
    /// Seconds from the run's base.
    pub(super) at: f64,
    pub(super) group: String,
    pub(super) setting: crate::vocab::Setting,
    pub(super) from: f64,
    pub(super) to: f64,
    pub(super) who: String,
    pub(super) row: Label,
}

/// A row of the sampler: each numeric column of `resources.tsv`, by name.
#[derive(Debug, Serialize)]
pub(super) struct ResourcesFrame {
    pub(super) t: f64,
    pub(super) values: Ordered<f64>,
}

#[derive(Debug, Serialize)]
pub(super) struct EndFrame {
    pub(super) finished_at: String,
    pub(super) duration: Option<String>,
    pub(super) exit: String,
    pub(super) exit_code: i32,
    pub(super) dir: String,
    pub(super) report: String,
}
