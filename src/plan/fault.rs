//! A scheduled fault (`[[fault]]`, `--fault 'kill@4s+2s'`): what happens to the server, when
//! (from the first stage's start) and for how long. Parsed and checked here; `crate::fault`
//! carries it out.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::limits;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FaultKind {
    /// SIGKILL the embedded server, then start it again on the same data and port.
    Kill,
    /// SIGSTOP it for a while, then SIGCONT.
    Pause,
    /// SIGTERM it (a clean shutdown), then start it again.
    Restart,
    /// `replSetStepDown` with force: on a replica set a failover, on one node writes refused.
    Stepdown,
}

impl FaultKind {
    pub(crate) const ALL: [FaultKind; 4] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Restart,
        FaultKind::Stepdown,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Restart => "restart",
            FaultKind::Stepdown => "stepdown",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<FaultKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// It acts on the server's process, so only on the embedded server (the tool owns it).
    pub(crate) fn needs_process(self) -> bool {
        !matches!(self, FaultKind::Stepdown)
    }

    /// Its length is how long it lasts (`for`), not a delay before a restart (`restart_after`).
    pub(crate) fn lasts(self) -> bool {
        matches!(self, FaultKind::Pause | FaultKind::Stepdown)
    }
}

/// One fault of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FaultPlan {
    pub(crate) kind: FaultKind,
    /// From the first stage's start.
    #[serde(with = "secs")]
    pub(crate) at: Duration,
    /// kill, restart: the wait before the server is started again. pause, stepdown: how long
    /// it lasts.
    #[serde(with = "secs")]
    pub(crate) length: Duration,
}

mod secs {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Duration, D::Error> {
        let v: f64 = serde::Deserialize::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

/// The forms a fault takes, for error messages.
pub(crate) const FAULT_FORMS: &str = "KIND@AT or KIND@AT+LENGTH: kill@4s+2s (SIGKILL at 4 s, start again 2 s later), restart@10s+1s (SIGTERM, start again), pause@5s+2s (SIGSTOP for 2 s), stepdown@5s+3s (replSetStepDown for 3 s, force); in a profile [[fault]] kind = \"kill\", at = \"4s\", restart_after = \"2s\" (kill, restart) or for = \"3s\" (pause, stepdown)";

impl FaultPlan {
    /// Checks a fault as a profile or the command line gives it: `length` is `restart_after`
    /// (kill, restart; default 0) or `for` (pause, stepdown; required). The error names the
    /// key at fault.
    pub(crate) fn new(
        kind: &str,
        at: &str,
        restart_after: Option<&str>,
        lasts: Option<&str>,
    ) -> Result<FaultPlan, (&'static str, String)> {
        let kind = FaultKind::from_name(kind).ok_or_else(|| {
            (
                "kind",
                format!("`{kind}` is not a fault; faults are kill, pause, restart and stepdown"),
            )
        })?;
        let at = limits::parse_duration(at).map_err(|p| ("at", p))?;
        let length = match (kind.lasts(), restart_after, lasts) {
            (true, Some(_), _) => {
                return Err((
                    "restart_after",
                    format!(
                        "a {} does not restart the server; it lasts `for` a time",
                        kind.name()
                    ),
                ))
            }
            (false, _, Some(_)) => {
                return Err((
                    "for",
                    format!(
                        "a {} ends when the server is started again: give restart_after, not for",
                        kind.name()
                    ),
                ))
            }
            (true, None, None) => {
                return Err((
                    "for",
                    format!(
                        "a {k} needs its length ({k}@4s+2s; in a profile, for = \"2s\")",
                        k = kind.name()
                    ),
                ))
            }
            (true, None, Some(s)) => limits::parse_duration(s).map_err(|p| ("for", p))?,
            (false, Some(s), None) => {
                limits::parse_duration(s).map_err(|p| ("restart_after", p))?
            }
            (false, None, None) => Duration::ZERO,
        };
        if kind.lasts() && length.is_zero() {
            return Err(("for", format!("a {} of 0 s does nothing", kind.name())));
        }
        if kind == FaultKind::Stepdown && length.subsec_nanos() != 0 {
            return Err((
                "for",
                format!(
                    "replSetStepDown takes whole seconds, not {}",
                    humantime::format_duration(length)
                ),
            ));
        }
        Ok(FaultPlan { kind, at, length })
    }

    /// `kill@4s+2s`, `pause@5s+2s`, `restart@10s`.
    pub(crate) fn parse_cli(s: &str) -> Result<FaultPlan, String> {
        let (kind, rest) = s
            .trim()
            .split_once('@')
            .ok_or_else(|| format!("`{s}` has no `@AT`"))?;
        let (at, length) = match rest.split_once('+') {
            Some((a, l)) => (a, Some(l)),
            None => (rest, None),
        };
        let kind_ok = FaultKind::from_name(kind.trim());
        let (restart_after, lasts) = match kind_ok {
            Some(k) if k.lasts() => (None, length),
            _ => (length, None),
        };
        FaultPlan::new(kind.trim(), at, restart_after, lasts).map_err(|(_, p)| p)
    }

    /// When it is over, nominally: the end of a pause or step-down, or the restart's start.
    pub(crate) fn until(&self) -> Duration {
        self.at + self.length
    }

    /// As `--fault` writes it.
    pub(crate) fn text(&self) -> String {
        let secs = |d: Duration| humantime::format_duration(d).to_string();
        if self.length.is_zero() {
            format!("{}@{}", self.kind.name(), secs(self.at))
        } else {
            format!(
                "{}@{}+{}",
                self.kind.name(),
                secs(self.at),
                secs(self.length)
            )
        }
    }
}

/// Two faults whose nominal spans overlap (the second starts before the first is over), if any.
pub(crate) fn overlapping(faults: &[FaultPlan]) -> Option<(usize, usize)> {
    let mut order: Vec<usize> = (0..faults.len()).collect();
    order.sort_by_key(|&i| faults[i].at);
    order
        .windows(2)
        .find(|w| faults[w[1]].at <= faults[w[0]].until())
        .map(|w| (w[0], w[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_form_reads_each_kind() {
        let f = FaultPlan::parse_cli("kill@4s+2s").unwrap();
        assert_eq!(
            (f.kind, f.at, f.length),
            (
                FaultKind::Kill,
                Duration::from_secs(4),
                Duration::from_secs(2)
            )
        );
        assert_eq!(f.text(), "kill@4s+2s");
        assert_eq!(
            FaultPlan::parse_cli("restart@10s").unwrap().length,
            Duration::ZERO
        );
        let p = FaultPlan::parse_cli("pause@1s+500ms").unwrap();
        assert_eq!(p.length, Duration::from_millis(500));
        assert_eq!(
            FaultPlan::parse_cli("stepdown@5s+3s").unwrap().kind,
            FaultKind::Stepdown
        );
    }

    #[test]
    fn bad_faults_name_what_is_wrong() {
        for (text, says) in [
            ("kil@4s", "not a fault"),
            ("kill", "no `@AT`"),
            ("kill@soon", "not a duration"),
            ("pause@4s", "needs its length"),
            ("stepdown@4s+1500ms", "whole seconds"),
            ("pause@1s+0s", "does nothing"),
        ] {
            let e = FaultPlan::parse_cli(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        let e = FaultPlan::new("kill", "4s", None, Some("2s")).unwrap_err();
        assert_eq!(e.0, "for");
    }

    #[test]
    fn overlapping_faults_are_found() {
        let f = |s| FaultPlan::parse_cli(s).unwrap();
        assert_eq!(overlapping(&[f("kill@4s+2s"), f("pause@10s+1s")]), None);
        assert_eq!(
            overlapping(&[f("pause@10s+1s"), f("kill@4s+7s")]),
            Some((1, 0))
        );
    }
}
