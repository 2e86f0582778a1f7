//! One run in N parts, for load from several machines (`--part I/N`, or `--parts N` with the
//! index from `JOB_COMPLETION_INDEX`, as a Kubernetes Indexed Job sets it).
//!
//! Design: a part is the whole plan with each group's threads and rate divided among the parts
//! (the first `threads % N` parts take one user more; a part's rate is its share of the threads,
//! so the parts' rates add up to the group's exactly). Loops stay per user and durations stay as
//! they are. Setup (drop, indexes, preload) runs in part 0 only; the other parts wait for the
//! marker document part 0 writes last (`ops::setup`). Inserted `_id`s interleave (part i takes
//! `base + i`, `base + i + N`, ...), so parts never collide. `merge` joins the parts' directories.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::RunPlan;
use crate::error::Error;

/// The environment variable a Kubernetes Indexed Job sets to the pod's index (0-based).
pub(crate) const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// Which part of how many this invocation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// 0-based, as `JOB_COMPLETION_INDEX`.
    pub index: u32,
    pub count: u32,
}

impl Part {
    /// `--part I/N`.
    pub(crate) fn parse(s: &str) -> Result<Part, String> {
        let bad = || {
            format!("`{s}` is not a part; expected I/N with 0 <= I < N, such as 0/3 (the first of three parts)")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        Part::new(index, count).map_err(|_| bad())
    }

    fn new(index: u32, count: u32) -> Result<Part, ()> {
        (count >= 1 && index < count)
            .then_some(Part { index, count })
            .ok_or(())
    }

    /// `--parts N`: the index from `JOB_COMPLETION_INDEX` (`value` is that variable's value).
    pub(crate) fn from_env(count: u32, value: Option<&str>) -> Result<Part, Error> {
        let Some(v) = value else {
            return Err(Error::Usage(format!(
                "--parts {count} reads this part's index from {INDEX_VAR}, which is not set\n  fix: set {INDEX_VAR}=0 .. {} (a Kubernetes Indexed Job sets it), or give the part as --part I/{count}",
                count.saturating_sub(1)
            )));
        };
        let index = v.trim().parse::<u32>().ok();
        index
            .and_then(|i| Part::new(i, count).ok())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{INDEX_VAR}={v} is not a part of --parts {count}\n  fix: {INDEX_VAR} must be 0 .. {}; set completions = parallelism = {count} in the Indexed Job",
                    count.saturating_sub(1)
                ))
            })
    }

    /// The share of `n` this part takes: `n / N`, plus one for the first `n % N` parts.
    pub(crate) fn share(&self, n: u32) -> u32 {
        n / self.count + u32::from(self.index < n % self.count)
    }

    /// The seed of this part's own random choices (documents, keys), derived from the run's
    /// shared seed so that no two parts draw the same sequence.
    pub(crate) fn seed(&self, seed: u64) -> u64 {
        seed.wrapping_add(u64::from(self.index).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What the part settings of a run are, once resolved.
#[derive(Debug, Clone)]
pub struct PartPlan {
    pub part: Part,
    /// How long parts 1.. wait for part 0's setup.
    pub setup_wait: Duration,
    /// `--start-at` as written: with the profile, seed and part count it names the run.
    pub start_at: Option<String>,
}

impl RunPlan {
    /// This plan divided for `part`: every group's threads and rate shared out. A group with
    /// fewer users than parts cannot be divided (a part would have none).
    pub fn divide(mut self, plan: PartPlan) -> Result<RunPlan, Error> {
        let part = plan.part;
        for stage in &mut self.stages {
            for g in &mut stage.groups {
                if g.threads < part.count {
                    return Err(Error::Usage(format!(
                        "group `{}` has {} virtual users, fewer than the {} parts: a part would have none\n  fix: give it at least {} threads (--threads), or run fewer parts",
                        g.name, g.threads, part.count, part.count
                    )));
                }
                let mine = part.share(g.threads);
                g.rate = g.rate.map(|r| r * f64::from(mine) / f64::from(g.threads));
                g.threads = mine;
            }
        }
        self.part = Some(plan);
        Ok(self)
    }
}

/// `--start-at`: an RFC 3339 time (`2026-11-30T12:00:00Z`, fractions allowed) or `+D` from now
/// (`+30s`).
pub(crate) fn parse_start_at(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    if let Some(after) = s.strip_prefix('+') {
        return super::limits::parse_duration(after)
            .map(|d| now + d)
            .map_err(|p| format!("{p}; expected +D from now, such as +30s"));
    }
    let bad = || {
        format!("`{s}` is not a time; expected RFC 3339 with its zone, such as 2026-11-30T12:00:00Z or 2026-11-30T13:00:00+01:00, or +D from now such as +30s")
    };
    // humantime reads UTC (`Z`) only: an offset is applied here.
    let split = s
        .len()
        .checked_sub(6)
        .filter(|i| s.is_char_boundary(*i))
        .map(|i| s.split_at(i));
    let (utc, offset_secs) = match split {
        _ if s.ends_with(['Z', 'z']) => (s.to_string(), 0i64),
        Some((time, zone))
            if zone.is_ascii() && zone.starts_with(['+', '-']) && zone.as_bytes()[3] == b':' =>
        {
            let (h, m) = (zone[1..3].parse::<i64>(), zone[4..6].parse::<i64>());
            let (Ok(h), Ok(m)) = (h, m) else {
                return Err(bad());
            };
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            (format!("{time}Z"), sign * (h * 3600 + m * 60))
        }
        _ => return Err(bad()),
    };
    let t = humantime::parse_rfc3339_weak(&utc).map_err(|_| bad())?;
    let t = if offset_secs >= 0 {
        t - Duration::from_secs(offset_secs.unsigned_abs())
    } else {
        t + Duration::from_secs(offset_secs.unsigned_abs())
    };
    if t > now + MAX_START_AHEAD {
        return Err(format!(
            "`{s}` is more than a day ahead; expected a time in the next 24 hours"
        ));
    }
    Ok(t)
}

/// The furthest ahead `--start-at` may be (a mistyped date would wait for ever).
pub(crate) const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// A seed all parts of one run agree on without being told one: from what their command lines
/// share (profile, part count, start time as written). FNV-1a, stable across builds.
pub(crate) fn shared_seed(profile: &str, count: u32, start_at: Option<&str>) -> u64 {
    let text = format!("{profile}\0{count}\0{}", start_at.unwrap_or(""));
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_remainders_go_to_the_first_parts() {
        for n in 1..40u32 {
            for count in 1..=n.min(7) {
                let shares: Vec<u32> = (0..count)
                    .map(|index| Part { index, count }.share(n))
                    .collect();
                assert_eq!(shares.iter().sum::<u32>(), n, "{n} in {count}");
                assert!(shares.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
        assert_eq!(Part { index: 0, count: 3 }.share(10), 4);
        assert_eq!(Part { index: 2, count: 3 }.share(10), 3);
    }

    #[test]
    fn part_texts_and_the_environment() {
        assert_eq!(Part::parse("1/3"), Ok(Part { index: 1, count: 3 }));
        for bad in ["3/3", "1", "a/3", "0/0", "-1/3"] {
            assert!(Part::parse(bad).unwrap_err().contains("I/N"), "{bad}");
        }
        assert_eq!(
            Part::from_env(3, Some("2")).unwrap(),
            Part { index: 2, count: 3 }
        );
        let e = Part::from_env(3, None).unwrap_err().to_string();
        assert!(
            e.contains("JOB_COMPLETION_INDEX") && e.contains("--part I/3"),
            "{e}"
        );
        let e = Part::from_env(3, Some("3")).unwrap_err().to_string();
        assert!(e.contains("0 .. 2"), "{e}");
    }

    #[test]
    fn start_times_absolute_or_from_now() {
        let now = humantime::parse_rfc3339("2026-11-30T11:00:00Z").unwrap();
        assert_eq!(
            parse_start_at("+30s", now),
            Ok(now + Duration::from_secs(30))
        );
        let t = parse_start_at("2026-11-30T12:00:00.250Z", now).unwrap();
        assert_eq!(
            humantime::format_rfc3339_millis(t).to_string(),
            "2026-11-30T12:00:00.250Z"
        );
        assert_eq!(parse_start_at("2026-11-30T13:00:00.250+01:00", now), Ok(t));
        assert_eq!(parse_start_at("2026-11-30T07:30:00.250-04:30", now), Ok(t));
        for (bad, says) in [
            ("noon", "RFC 3339"),
            ("2026-11-30T12:00:00", "with its zone"),
            ("2026-11-30T12:00:00+1:00", "with its zone"),
            ("+soon", "+30s"),
            ("2026-11-30T12:00:00ü+0:00", "with its zone"),
            ("2027-11-30T12:00:00Z", "more than a day ahead"),
        ] {
            let e = parse_start_at(bad, now).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn parts_draw_different_sequences_from_one_seed() {
        let seeds: std::collections::HashSet<u64> = (0..100)
            .map(|index| Part { index, count: 100 }.seed(7))
            .collect();
        assert_eq!(seeds.len(), 100);
        assert_eq!(Part { index: 0, count: 3 }.seed(7), 7);
        assert_eq!(
            shared_seed("p", 3, Some("+30s")),
            shared_seed("p", 3, Some("+30s"))
        );
        assert_ne!(shared_seed("p", 3, None), shared_seed("p", 4, None));
    }
}
