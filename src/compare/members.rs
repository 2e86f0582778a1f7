//! The members of a replica set or cluster in two runs, side by side: for each member either run
//! had (matched by name, `shard/host` or the host), its average operations per second and its
//! largest lag behind the primary in each. Not judged: `members.tsv` has no noise to judge by.

use serde::Serialize;

use crate::summary::members::MemberSummary;
use crate::summary::Summary;

/// One member in the base and the new run; none where a run did not have it, or did not
/// measure it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MemberCell {
    /// `shard0/h1:27017`, or the host alone in a replica set.
    pub(crate) member: String,
    /// Operations per second, every kind, averaged over the run (the mean of its runs' with
    /// `--repeat`).
    pub(crate) base_ops_s: Option<f64>,
    pub(crate) new_ops_s: Option<f64>,
    /// The largest lag behind its primary in any of its runs, seconds.
    pub(crate) base_lag_max: Option<f64>,
    pub(crate) new_lag_max: Option<f64>,
}

/// (new - base) / base, percent; none when either is unknown or the base is 0.
pub(crate) fn change_pct(base: Option<f64>, new: Option<f64>) -> Option<f64> {
    match (base, new) {
        (Some(b), Some(n)) if b != 0.0 => Some((n - b) * 100.0 / b),
        _ => None,
    }
}

/// Every member of either run: the new run's in the order first seen, then those only the
/// base had.
pub(crate) fn compare(base: &Summary, new: &Summary) -> Vec<MemberCell> {
    let of = |s: &Summary| -> Vec<MemberSummary> {
        s.runs.iter().flat_map(|r| r.members.clone()).collect()
    };
    cells(&of(base), &of(new))
}

/// `compare` over each side's members of all its runs.
fn cells(base: &[MemberSummary], new: &[MemberSummary]) -> Vec<MemberCell> {
    let mut names: Vec<String> = Vec::new();
    for m in new.iter().chain(base) {
        let name = m.name();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let (b, n) = (side(base, &name), side(new, &name));
            MemberCell {
                member: name,
                base_ops_s: b.0,
                new_ops_s: n.0,
                base_lag_max: b.1,
                new_lag_max: n.1,
            }
        })
        .collect()
}

/// A member's average operations per second (the mean over the runs that measured it) and
/// largest lag on one side.
fn side(members: &[MemberSummary], name: &str) -> (Option<f64>, Option<f64>) {
    let mine: Vec<&MemberSummary> = members.iter().filter(|m| m.name() == name).collect();
    let ops: Vec<f64> = mine.iter().filter_map(|m| m.ops_s.avg).collect();
    let ops = (!ops.is_empty()).then(|| ops.iter().sum::<f64>() / crate::num::real_len(ops.len()));
    let lag = mine.iter().filter_map(|m| m.lag_s.peak).reduce(f64::max);
    (ops, lag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::resources::AvgPeak;

    fn member(
        shard: Option<&str>,
        host: &str,
        ops: Option<f64>,
        lag: Option<f64>,
    ) -> MemberSummary {
        MemberSummary {
            shard: shard.map(String::from),
            member: host.into(),
            state: Some("SECONDARY".into()),
            seconds: 10,
            answered: 10,
            ops_s: AvgPeak {
                avg: ops,
                peak: ops,
            },
            oplog_window_min_s: None,
            repl_ops_s: AvgPeak::default(),
            lag_s: AvgPeak {
                avg: lag,
                peak: lag,
            },
        }
    }

    #[test]
    fn each_member_of_either_run_is_matched_by_name() {
        let base = [
            member(None, "a:1", Some(100.0), Some(0.0)),
            member(None, "gone:1", Some(5.0), None),
            // A second run of the base (--repeat): averaged, its largest lag kept.
            member(None, "a:1", Some(200.0), Some(2.0)),
        ];
        let new = [
            member(Some("s0"), "a:1", Some(1.0), None),
            member(None, "a:1", Some(120.0), Some(0.5)),
        ];
        let c = cells(&base, &new);
        let names: Vec<&str> = c.iter().map(|m| m.member.as_str()).collect();
        assert_eq!(names, ["s0/a:1", "a:1", "gone:1"]);
        assert_eq!(c[0].base_ops_s, None);
        assert_eq!(c[0].new_ops_s, Some(1.0));
        assert_eq!(c[1].base_ops_s, Some(150.0));
        assert_eq!(c[1].new_ops_s, Some(120.0));
        assert_eq!(c[1].base_lag_max, Some(2.0));
        assert_eq!(c[1].new_lag_max, Some(0.5));
        assert_eq!(c[2].new_ops_s, None);
        assert_eq!(c[2].base_lag_max, None);
        assert_eq!(change_pct(c[1].base_ops_s, c[1].new_ops_s), Some(-20.0));
        assert_eq!(change_pct(Some(0.0), Some(1.0)), None);
        assert_eq!(change_pct(None, Some(1.0)), None);
        assert!(cells(&[], &[]).is_empty());
    }
}
