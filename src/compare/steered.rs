//! A run steered live (`--live-control`) in a comparison. A changed group's own row, its kinds'
//! rows, the stage totals and TOTAL hold operations from before and after a change: two loads
//! in one number, which no verdict can judge, so they are shown and not judged. Each change's
//! row (`insert@400/s`, and `insert@200/s` before the first change) held one load, and is judged
//! apart: against the row of the same name in the other run, or the other run's own row of the
//! group when that run was not steered there and ran the group at the same value.
//!
//! Owns: which rows span a change, each change row's counterpart, its time span, and the note
//! that says so. Never: computes a value or a verdict (`compare` does).

use crate::metrics::Label;
use crate::summary::{Change, GroupInfo, Summary};
use crate::vocab::Setting;

/// The changes of both runs.
pub(crate) struct Steered<'a> {
    base: Side<'a>,
    new: Side<'a>,
}

/// One run's changes (of every run of `--repeat`) and its groups as planned.
struct Side<'a> {
    changes: Vec<&'a Change>,
    groups: &'a [GroupInfo],
}

impl<'a> Side<'a> {
    fn of(s: &'a Summary) -> Side<'a> {
        Side {
            changes: s.runs.iter().flat_map(|r| &r.changes).collect(),
            groups: &s.groups,
        }
    }

    fn steered(&self, group: &str) -> bool {
        self.changes.iter().any(|c| c.group == group)
    }

    /// A change row of this run: its group, setting and the value it ran at.
    fn change_row(&self, label: &Label) -> Option<(&'a str, Setting, f64)> {
        self.changes.iter().copied().find_map(|c: &'a Change| {
            if c.row == *label {
                Some((c.group.as_str(), c.setting, c.to))
            } else if Label::at(&c.group, c.setting, c.from) == *label {
                Some((c.group.as_str(), c.setting, c.from))
            } else {
                None
            }
        })
    }

    /// The group's own row, when this run did not steer it and ran it at `value` of `setting`.
    fn unsteered_at(&self, group: &str, setting: Setting, value: f64) -> Option<Label> {
        let g = self.groups.iter().find(|g| g.name == group)?;
        let planned = match setting {
            Setting::Rate => g.rate?,
            Setting::Users => f64::from(g.threads),
        };
        (!self.steered(group) && Change::same_value(setting, planned, value))
            .then(|| Label::group(group))
    }
}

/// Which side a label is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Base,
    New,
}

impl<'a> Steered<'a> {
    pub(crate) fn of(base: &'a Summary, new: &'a Summary) -> Steered<'a> {
        Steered {
            base: Side::of(base),
            new: Side::of(new),
        }
    }

    fn side(&self, which: Which) -> &Side<'a> {
        match which {
            Which::Base => &self.base,
            Which::New => &self.new,
        }
    }

    /// Either run was steered.
    pub(crate) fn any(&self) -> bool {
        !self.base.changes.is_empty() || !self.new.changes.is_empty()
    }

    /// A row of run `which` that holds operations from before and after a change: not judged.
    /// TOTAL and the stage totals in either run (a steered run's against an unsteered one's is
    /// still two loads against one); a group's own row and its kinds' where that run changed it.
    pub(crate) fn spans_a_change(&self, label: &Label, which: Which) -> bool {
        let side = self.side(which);
        match label {
            Label::Total | Label::Stage(_) => self.any(),
            // A change's row holds the operations of one value.
            Label::Group(g) | Label::Kind { group: g, .. } => {
                g.at.is_none() && side.steered(&g.name)
            }
        }
    }

    /// The row of the run `other` that a change row of the other run is judged against, when
    /// it has no row of that name: its own row of the group, run unsteered at the same value.
    pub(crate) fn counterpart(&self, label: &Label, other: Which) -> Option<Label> {
        let this = match other {
            Which::Base => &self.new,
            Which::New => &self.base,
        };
        let (group, setting, value) = this.change_row(label)?;
        self.side(other).unsteered_at(group, setting, value)
    }

    /// From when to when (epoch ms; None: to the end) the change row `label` of run `which`
    /// ran: its interval series is the group's within that span.
    pub(crate) fn span_ms(
        &self,
        which: Which,
        label: &Label,
    ) -> Option<(String, u64, Option<u64>)> {
        let side = self.side(which);
        let (group, _, _) = side.change_row(label)?;
        let mut times: Vec<&Change> = side
            .changes
            .iter()
            .copied()
            .filter(|c| c.group == group)
            .collect();
        times.sort_by_key(|c| c.time_ms);
        // The row of each change until the next one; the first change's `before` row from the
        // start until it.
        if let Some(i) = times.iter().position(|c| c.row == *label) {
            return Some((
                group.to_string(),
                times[i].time_ms,
                times.get(i + 1).map(|c| c.time_ms),
            ));
        }
        times
            .first()
            .map(|first| (group.to_string(), 0, Some(first.time_ms)))
    }

    /// The note above the table: each steered run's changes, and how its rows are judged.
    pub(crate) fn note(&self) -> Vec<String> {
        if !self.any() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (which, side) in [("base", &self.base), ("new", &self.new)] {
            if side.changes.is_empty() {
                continue;
            }
            let changes: Vec<String> = side.changes.iter().map(|c| c.text()).collect();
            out.push(format!(
                "note: the {which} run was steered live: {}",
                changes.join("; ")
            ));
        }
        out.push("note: its rows are judged apart: each change's row (one load) against the row of that name in the other run, or that run's own row of the group when it ran at the same value unsteered; the rows that hold operations from before and after a change (the changed group's own row, TOTAL) are shown, not judged".into());
        out
    }
}
