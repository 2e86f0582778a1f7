//! Each member of a replica set or cluster over one run (`members.tsv` read back): average and
//! peak operations per second, replicated operations and lag; the run's largest lag (the
//! `lag_max` metric); and the topology's events made whole once the run is judged (when from
//! the first stage, the client's window without a success beside each, and the election time
//! after a step-down).

use serde::{Deserialize, Serialize};

use super::faults::FaultEvent;
use super::resources::{AvgPeak, StageSpan};
use crate::metrics::availability::Window;
use crate::monitor::members::{EventWindow, MemberRow, TopologyEvent, TopologyKind};
use crate::plan::fault::FaultKind;

/// One member over one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<String>,
    pub(crate) member: String,
    /// Its state at the run's end (the last one known).
    pub(crate) state: Option<String>,
    /// Seconds sampled in the run, and of them those its serverStatus answered.
    pub(crate) seconds: usize,
    pub(crate) answered: usize,
    /// All kinds of operation together, per second.
    pub(crate) ops_s: AvgPeak,
    pub(crate) repl_ops_s: AvgPeak,
    /// Seconds behind its primary.
    pub(crate) lag_s: AvgPeak,
    /// The shortest oplog window seen in the run, seconds (how close its oldest entries came
    /// to falling off); none where it could not be read.
    #[serde(default)]
    pub(crate) oplog_window_min_s: Option<f64>,
}

impl MemberSummary {
    /// `shard0/h1:27017`, or the host alone in a replica set.
    pub(crate) fn name(&self) -> String {
        crate::monitor::members::member_name(self.shard.as_deref(), &self.member)
    }
}

/// The rows of one run (between `from_ms` and `to_ms`), per member in the order first seen.
pub(crate) fn summarize(rows: &[MemberRow], from_ms: u64, to_ms: u64) -> Vec<MemberSummary> {
    let inside: Vec<&MemberRow> = rows
        .iter()
        .filter(|r| r.time_ms > from_ms && r.time_ms <= to_ms + 500)
        .collect();
    let mut keys: Vec<(Option<String>, String)> = Vec::new();
    for r in &inside {
        let k = (r.shard.clone(), r.member.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(shard, member)| {
            let mine: Vec<&&MemberRow> = inside
                .iter()
                .filter(|r| r.shard == shard && r.member == member)
                .collect();
            let stat = |f: &dyn Fn(&MemberRow) -> Option<f64>| {
                let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
                AvgPeak {
                    avg: (!v.is_empty())
                        .then(|| v.iter().sum::<f64>() / crate::num::real_len(v.len())),
                    peak: v.iter().copied().reduce(f64::max),
                }
            };
            MemberSummary {
                state: mine.iter().rev().find_map(|r| r.state.clone()),
                seconds: mine.len(),
                // Its serverStatus answered: connections need no earlier reading.
                answered: mine.iter().filter(|r| r.connections.is_some()).count(),
                ops_s: stat(&MemberRow::ops_total),
                repl_ops_s: stat(&|r| r.repl_ops_s),
                lag_s: stat(&|r| r.lag_s),
                oplog_window_min_s: mine
                    .iter()
                    .filter_map(|r| r.oplog_window_s)
                    .reduce(f64::min),
                shard,
                member,
            }
        })
        .collect()
}

/// The members over the run that spans `stages`, and the topology's events within a second of
/// it (as the sampler saw them, not yet judged).
pub(crate) fn of_run(
    rows: &[MemberRow],
    events: &[TopologyEvent],
    stages: &[StageSpan],
) -> (Vec<MemberSummary>, Vec<TopologyEvent>) {
    let (Some(from), Some(to)) = (
        stages.iter().map(|s| s.began_ms).min(),
        stages.iter().map(|s| s.end_ms).max(),
    ) else {
        return Default::default();
    };
    let events = events
        .iter()
        .filter(|e| e.time_ms + 1000 >= from && e.time_ms <= to + 1000)
        .cloned()
        .collect();
    (summarize(rows, from, to), events)
}

/// The largest lag of any member in the run, in seconds; none when no lag was measured.
pub(crate) fn lag_max(members: &[MemberSummary]) -> Option<f64> {
    members.iter().filter_map(|m| m.lag_s.peak).reduce(f64::max)
}

/// Each event's offset from the first stage's start (`stages_us`), the longest window without a
/// success that holds it (within a second either side), and for a new primary after a
/// `stepdown` fault the seconds from the step-down to it.
pub(crate) fn judge_events(
    events: &mut [TopologyEvent],
    stages_us: u64,
    unavailable: &[Window],
    faults: &[FaultEvent],
) {
    let t0_ms = stages_us / 1000;
    let mut answered: Vec<u64> = Vec::new();
    for e in events.iter_mut() {
        e.offset_secs = (crate::num::real(e.time_ms) - crate::num::real(t0_ms)) / 1000.0;
        let (from, to) = (e.time_ms.saturating_sub(1000), e.time_ms + 1000);
        e.unavailable = unavailable
            .iter()
            .filter(|w| w.start_ms <= to && w.end_ms >= from)
            .max_by(|a, b| a.secs.total_cmp(&b.secs))
            .map(|w| EventWindow {
                label: w.label.clone(),
                start_secs: w.offset_secs,
                secs: w.secs,
            });
        if e.kind != TopologyKind::PrimaryChange || e.to.is_none() {
            continue;
        }
        // The first new primary after a step-down answers it.
        let stepdown = faults
            .iter()
            .filter(|f| f.kind == FaultKind::Stepdown && f.error.is_none())
            .filter(|f| f.start_ms <= e.time_ms && !answered.contains(&f.start_ms))
            .max_by_key(|f| f.start_ms);
        if let Some(f) = stepdown {
            answered.push(f.start_ms);
            e.election_secs = Some(crate::num::real(e.time_ms - f.start_ms) / 1000.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, member: &str, ops: f64, lag: Option<f64>) -> MemberRow {
        MemberRow {
            time_ms: t,
            member: member.into(),
            state: Some("SECONDARY".into()),
            ops_s: [Some(ops), Some(0.0), None, None, None, Some(1.0)],
            lag_s: lag,
            ..Default::default()
        }
    }

    #[test]
    fn a_member_is_summarised_over_its_seconds_in_the_run_only() {
        let rows = vec![
            row(1000, "a", 100.0, Some(9.0)), // before the run
            row(2000, "a", 10.0, Some(0.5)),
            row(2000, "b", 20.0, None),
            row(3000, "a", 30.0, Some(2.5)),
            row(3000, "b", 40.0, None),
            row(9000, "a", 100.0, Some(9.0)), // after it
        ];
        let s = summarize(&rows, 1500, 3000);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].member, "a");
        assert_eq!(s[0].seconds, 2);
        assert_eq!(s[0].ops_s.avg, Some(21.0));
        assert_eq!(s[0].ops_s.peak, Some(31.0));
        assert_eq!(s[0].lag_s.peak, Some(2.5));
        assert_eq!(s[1].lag_s, AvgPeak::default());
        assert_eq!(lag_max(&s), Some(2.5));
        assert_eq!(lag_max(&s[1..]), None);
    }
}
