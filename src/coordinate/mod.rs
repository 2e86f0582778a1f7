//! One run across many load generators: a coordinator (`run PROFILE --parts N --coordinator
//! ADDR`) that holds the plan and sends no load, and N parts (`part --join URL`) that fetch it,
//! start together and report every interval.
//!
//! Design: HTTP with JSON bodies, on the tokio runtime the tool already has (axum on the
//! coordinator, ureq on a part's own thread), HTTPS when the coordinator is given a certificate
//! (`tls`). Every message of a part is a `Report` (a beat, its
//! setup done, an interval's histograms in their compressed hlog encoding, a failure) and every
//! answer is the order it is under (`Go`): wait for the others, set up, start at a time on the
//! coordinator's clock, or stop. A part that says nothing for `LOST_AFTER` is lost; a part whose
//! coordinator has not answered for `COORDINATOR_LOST_AFTER` stops. Clocks are measured as NTP
//! does: the offset of the round trip that took least (`estimate`).
//!
//! Owns: the protocol (its messages, the token's check, the clock estimate), the coordinator's
//! hub (joins, barriers, losses, the live merge of intervals) and a part's link to it. Never:
//! runs load, writes a run directory or merges one (`app` does, through `run` and `merge`).

pub(crate) mod hub;
pub mod link;
pub(crate) mod tls;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::cli::RunArgs;
use crate::metrics::tally::Tally;
use crate::metrics::Label;
use crate::plan::series::StepSpec;
use crate::vocab::Setting;

/// What a coordinator and its parts must agree on: the tool's version.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A part silent this long is lost.
pub(crate) const LOST_AFTER: Duration = Duration::from_secs(3);

/// A part whose coordinator has not answered this long stops.
pub(crate) const COORDINATOR_LOST_AFTER: Duration = Duration::from_secs(5);

/// How often a part says it is there when it has nothing else to say.
pub(crate) const BEAT: Duration = Duration::from_millis(500);

/// Round trips a part makes to measure its clock at join.
pub(crate) const CLOCK_ROUNDS: usize = 8;

/// Now, microseconds since the Unix epoch, on this machine's clock.
pub(crate) fn now_us() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros(),
    )
    .unwrap_or(u64::MAX)
}

/// The run a coordinator serves its parts (`GET /v1/plan`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlanDoc {
    pub(crate) version: String,
    pub(crate) parts: u32,
    pub(crate) seed: u64,
    /// The coordinator's `run` options as given (tokens never included).
    pub(crate) args: RunArgs,
    pub(crate) profile: ProfileSource,
    /// A series of steps (`sweep`, `capacity`) rather than one run: each step is ordered
    /// (`Go::Step`) with its load, and the parts stay joined for every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) series: Option<SeriesKind>,
    /// The coordinator serves the run live (its page, Prometheus): each interval carries the
    /// part's tallies, so the coordinator's totals are the parts' own.
    #[serde(default)]
    pub(crate) live: bool,
}

/// The command whose steps a coordinated series runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SeriesKind {
    Sweep,
    Capacity,
}

impl SeriesKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            SeriesKind::Sweep => "sweep",
            SeriesKind::Capacity => "capacity",
        }
    }
}

/// The profile itself: its text when it is a file on the coordinator's machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ProfileSource {
    /// A profile bundled with the tool, by name.
    Bundled { name: String },
    /// A file: its name (its extension says TOML or a genny workload) and text.
    File { name: String, text: String },
}

/// A part's clock against the coordinator's: coordinator = part + `offset_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClockReading {
    pub(crate) offset_us: i64,
    pub(crate) round_trip_us: u64,
}

/// One round trip: sent at `t0` (part's clock), the coordinator's time `server`, answered at
/// `t1` (part's clock), all epoch microseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Round {
    pub(crate) t0: u64,
    pub(crate) server: u64,
    pub(crate) t1: u64,
}

/// NTP's rule: of several round trips, the one that took least says the offset best (its
/// error is at most half its round trip): the coordinator's time less the middle of the trip.
pub(crate) fn estimate(rounds: &[Round]) -> Option<ClockReading> {
    let best = rounds
        .iter()
        .filter(|r| r.t1 >= r.t0)
        .min_by_key(|r| r.t1 - r.t0)?;
    let middle = i128::from(best.t0) + i128::from(best.t1 - best.t0) / 2;
    Some(ClockReading {
        offset_us: i64::try_from(i128::from(best.server) - middle).unwrap_or(i64::MAX),
        round_trip_us: best.t1 - best.t0,
    })
}

/// A part asks to join (`POST /v1/join`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JoinRequest {
    pub(crate) version: String,
    pub(crate) host: String,
    /// The index it must have (`--index`, `JOB_COMPLETION_INDEX`); None: the first free one.
    pub(crate) index: Option<u32>,
    pub(crate) clock: ClockReading,
}

/// The coordinator admits it as part `index` of `parts`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JoinReply {
    pub(crate) index: u32,
    pub(crate) parts: u32,
}

/// Everything a part says after it joined (`POST /v1/report`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Report {
    pub(crate) index: u32,
    /// Its clock measured again (every minute), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clock: Option<ClockReading>,
    pub(crate) what: What,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum What {
    /// Still here.
    Beat,
    /// Its setup of the run (step 0) or of a series' step is done (part 0's, or the wait for
    /// it): it can start.
    Ready { step: u32 },
    /// An interval ended.
    Interval(IntervalReport),
    /// It could not run: why.
    Failed { error: String },
    /// Its run (step 0) or a series' step ended, and these are the files of its directory
    /// (`merge` reads them).
    Done { step: u32, files: Vec<PartFile> },
    /// Its series is over: it leaves (the last message of a part of a series).
    Bye,
}

/// One file of a part's run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartFile {
    pub(crate) name: String,
    pub(crate) text: String,
}

/// One interval of a part, as its `latency.hlog` has it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IntervalReport {
    /// Its start on the part's clock, epoch microseconds.
    pub(crate) start_us: u64,
    pub(crate) duration_us: u64,
    /// Each series' tag and histogram (base64 of HdrHistogram's V2 deflate encoding, as an
    /// interval log's line holds it).
    pub(crate) hists: Vec<(String, String)>,
    /// Per group tag: users at the interval's end, and failed operations in it.
    pub(crate) activity: Vec<(String, u32, u64)>,
    /// With `PlanDoc::live`: each row's counters so far (its groups', their kinds', the rows of
    /// the changes made), in the part's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tallies: Vec<(Label, Tally)>,
}

/// A change of a group's rate or users asked on the coordinator's page, split over the parts
/// as `--parts` splits the profile's: each part makes its share at its next interval's end,
/// its rows named as the coordinator named them, so the parts' rows merge into the
/// coordinator's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Shared {
    /// From 1, in the order made.
    pub(crate) number: u32,
    /// `GroupPlan::index`.
    pub(crate) group: usize,
    pub(crate) name: String,
    pub(crate) setting: Setting,
    /// The whole run's value before and after.
    pub(crate) from: f64,
    pub(crate) to: f64,
    /// Each part's share of `to`, by its index.
    pub(crate) shares: Vec<f64>,
    pub(crate) who: String,
    pub(crate) before: Label,
    pub(crate) after: Label,
}

/// What the coordinator tells a part, answering any of its messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Answer {
    pub(crate) go: Go,
    /// The coordinator's clock when it answered, epoch microseconds.
    pub(crate) now_us: u64,
    /// Every change made in the run so far (a part makes those it has not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) changes: Vec<Shared>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Go {
    /// Not every part has joined yet.
    Wait { joined: u32, parts: u32 },
    /// Every part joined: set up (part 0) or wait for part 0's setup, then say `Ready`.
    Setup,
    /// A series' step: set it up (part 0) or wait for that, then say `Ready` for it.
    Step { spec: StepSpec },
    /// Every part is ready for the run (step 0) or a series' step: begin its stages at this
    /// time on the coordinator's clock.
    Start { step: u32, at_us: u64 },
    /// The series is over: leave.
    Finished,
    /// Stop (or do not begin): why.
    Stop { why: String },
    /// A series' step under way stops (its whole run broke a threshold); the series goes on.
    StopStep { step: u32, why: String },
}

/// Why a coordinator refused a request: said to the part, which says it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Refusal {
    pub(crate) error: String,
}

/// Whether `given` is the token (compared in time that does not depend on where they differ).
pub(crate) fn token_matches(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// A new join token: 128 random bits as hex.
pub(crate) fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_read_from_the_fastest_round_trip() {
        // The coordinator is 5 ms ahead; the slow trips' answers are skewed by their queues.
        let rounds = [
            Round {
                t0: 1_000_000,
                server: 1_009_000,
                t1: 1_006_000,
            },
            Round {
                t0: 2_000_000,
                server: 2_005_200,
                t1: 2_000_400,
            },
            Round {
                t0: 3_000_000,
                server: 3_002_000,
                t1: 3_010_000,
            },
        ];
        assert_eq!(
            estimate(&rounds),
            Some(ClockReading {
                offset_us: 5_000,
                round_trip_us: 400
            })
        );
        // A coordinator behind the part: a negative offset.
        let behind = [Round {
            t0: 10_000_000,
            server: 9_900_100,
            t1: 10_000_200,
        }];
        assert_eq!(estimate(&behind).unwrap().offset_us, -100_000);
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn tokens_match_only_whole() {
        let t = new_token();
        assert_eq!(t.len(), 32);
        assert!(token_matches(&t, &t));
        assert!(!token_matches(&t[..31], &t));
        assert!(!token_matches("", &t));
        assert_ne!(new_token(), t);
    }

    #[test]
    fn messages_read_back_as_written() {
        let r = Report {
            index: 2,
            clock: None,
            what: What::Interval(IntervalReport {
                start_us: 5,
                duration_us: 1_000_000,
                hists: vec![("insert".into(), "HISTFAAAA".into())],
                activity: vec![("insert".into(), 3, 0)],
                tallies: Vec::new(),
            }),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""kind":"interval""#), "{text}");
        let back: Report = serde_json::from_str(&text).unwrap();
        assert!(matches!(back.what, What::Interval(i) if i.hists.len() == 1));
        let go = Go::Start { step: 0, at_us: 7 };
        let text = serde_json::to_string(&go).unwrap();
        assert_eq!(text, r#"{"kind":"start","step":0,"at_us":7}"#);
    }
}
