//! The labels of summary rows, one language in one place: a group's name (`find`; a part of its
//! run with a row of its own, typed as an `At`: a rate step `run@500/s`, a change's `insert@50
//! users`, `insert@200/s #2`), one kind or named operation of a mixed group (`run:get`, `app:lookup`), a stage's total (`TOTAL load`;
//! `TOTAL (no stage)` for the unnamed one) and `TOTAL`. Written as text in `summary.tsv`,
//! `summary.json`, the JTL and thresholds; parsed back here and nowhere else. Group names cannot
//! hold `:` or `@`, be `TOTAL` or start with `TOTAL ` (the plan refuses them: a name must parse
//! back as a group's label), so the text is never ambiguous.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{OpName, Setting};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Label {
    /// All groups of the run.
    Total,
    /// All groups of one stage (a profile with several stages); the name may be empty.
    Stage(String),
    /// One group plan's operations: a `[[group]]`, or a part of its run (`run@500/s`).
    Group(GroupRow),
    /// One operation kind of a mixed group.
    Kind { group: GroupRow, kind: OpName },
}

/// A group's row: the group's name, and the part of its run the row holds when it is one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupRow {
    /// As the profile names the group (never holding `:` or `@`).
    pub name: String,
    pub at: Option<At>,
}

/// A part of a group's run with a row of its own, and what it ran at: a rate step of the
/// profile (`run@500/s`), or the operations between two changes made while the run went
/// (`insert@400/s`, `insert@50 users`; `insert@200/s #2` when the group comes back to a value
/// it ran at before).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct At {
    pub value: AtValue,
    /// The time the group runs at it in the run: 1, then 2 (`#2`) ...
    pub nth: u32,
}

/// A value of a group's `Setting` as a row names it: a rate to two decimals (three below 1/s),
/// users whole; two values of one name are the same value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AtValue {
    /// Thousandths of an operation per second.
    Rate(u64),
    Users(u32),
}

impl AtValue {
    /// `value` of `setting` as a row names it.
    pub(crate) fn of(setting: Setting, value: f64) -> AtValue {
        match setting {
            // As many decimals as the rate needs, up to 2 (3 below 1/s): never a bare `400.`.
            Setting::Rate => {
                let text = if value.fract() == 0.0 {
                    format!("{value:.0}")
                } else if value < 1.0 {
                    format!("{value:.3}")
                } else {
                    format!("{value:.2}")
                };
                AtValue::parse_rate(&text).unwrap_or(AtValue::Rate(0))
            }
            // Whole (a change's users are checked whole when asked).
            Setting::Users => AtValue::Users(format!("{value:.0}").parse().unwrap_or(u32::MAX)),
        }
    }

    /// `400`, `2.5`, `0.125` (operations per second).
    fn parse_rate(text: &str) -> Option<AtValue> {
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let whole: u64 = whole.parse().ok()?;
        let frac: u64 = format!("{frac:0<3}").parse().ok()?;
        Some(AtValue::Rate(whole.checked_mul(1000)?.checked_add(frac)?))
    }

    /// `400/s`, `50 users`.
    fn parse(text: &str) -> Option<AtValue> {
        if let Some(rate) = text.strip_suffix("/s") {
            return AtValue::parse_rate(rate);
        }
        let users = text.strip_suffix(" users")?;
        users.parse().ok().map(AtValue::Users)
    }
}

impl fmt::Display for AtValue {
    /// `400/s`, `2.5/s`, `50 users`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtValue::Rate(milli) => {
                let (whole, frac) = (milli / 1000, milli % 1000);
                if frac == 0 {
                    write!(f, "{whole}/s")
                } else {
                    let frac = format!("{frac:03}");
                    write!(f, "{whole}.{}/s", frac.trim_end_matches('0'))
                }
            }
            AtValue::Users(n) => write!(f, "{n} users"),
        }
    }
}

impl At {
    /// The first time at `value`.
    pub(crate) fn first(value: AtValue) -> At {
        At { value, nth: 1 }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.nth {
            1 => write!(f, "{}", self.value),
            n => write!(f, "{} #{n}", self.value),
        }
    }
}

impl GroupRow {
    /// A group's row text (`run`, `run@500/s`, `insert@200/s #2`), read back.
    fn parse(text: &str) -> GroupRow {
        let whole = || GroupRow {
            name: text.to_string(),
            at: None,
        };
        let Some((name, at)) = text.split_once('@') else {
            return whole();
        };
        let (value, nth) = match at.rsplit_once(" #") {
            Some((value, n)) => match n.parse::<u32>() {
                Ok(n) if n > 1 => (value, n),
                _ => return whole(),
            },
            None => (at, 1),
        };
        // Only the text a row is written as (`5/s`, never `5.0/s` or `05/s`): one text, one row.
        match AtValue::parse(value).map(|value| At { value, nth }) {
            Some(part) if part.to_string() == at => GroupRow {
                name: name.to_string(),
                at: Some(part),
            },
            _ => whole(),
        }
    }
}

impl GroupRow {
    /// Is this the row of the group plan named `name` (a rate step's plan is named for its
    /// row, `run@500/s`)?
    pub(crate) fn is(&self, name: &str) -> bool {
        *self == GroupRow::parse(name)
    }
}

impl fmt::Display for GroupRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            None => f.write_str(&self.name),
            Some(at) => write!(f, "{}@{at}", self.name),
        }
    }
}

/// The stage total of a stage without a name.
const NO_STAGE: &str = "(no stage)";

impl Label {
    /// The row of a group plan named `name` (a rate step's plan is named for its row,
    /// `run@500/s`).
    pub fn group(name: &str) -> Label {
        Label::Group(GroupRow::parse(name))
    }

    pub(crate) fn kind(group: &str, kind: impl Into<OpName>) -> Label {
        Label::Kind {
            group: GroupRow::parse(group),
            kind: kind.into(),
        }
    }

    /// The row of group `group`'s operations while it runs at `value` of `setting` (a rate
    /// step, or a change made while the run goes), the first time.
    pub(crate) fn at(group: &str, setting: Setting, value: f64) -> Label {
        Label::Group(GroupRow {
            name: group.to_string(),
            at: Some(At::first(AtValue::of(setting, value))),
        })
    }

    /// The name of a rate step's group plan: `run@500/s`, `run@2.5/s`.
    pub(crate) fn step_name(group: &str, rate: f64) -> String {
        Label::at(group, Setting::Rate, rate).to_string()
    }

    /// The group row this row belongs to (its own or its kind's); None for totals.
    pub(crate) fn group_row(&self) -> Option<&GroupRow> {
        match self {
            Label::Group(g) | Label::Kind { group: g, .. } => Some(g),
            Label::Total | Label::Stage(_) => None,
        }
    }

    /// The part of its group's run this row holds (a rate step, a change's), if any.
    pub(crate) fn part(&self) -> Option<&At> {
        self.group_row().and_then(|g| g.at.as_ref())
    }

    /// A rate step's row, or a change's (`run@500/s`, or one of its kinds).
    pub(crate) fn is_step(&self) -> bool {
        self.part().is_some()
    }

    /// A stage's total (not the run's).
    pub fn is_stage_total(&self) -> bool {
        matches!(self, Label::Stage(_))
    }

    /// The text for a label, as every file writes it.
    pub(crate) fn parse(text: &str) -> Label {
        if text == "TOTAL" {
            return Label::Total;
        }
        if let Some(stage) = text.strip_prefix("TOTAL ") {
            return Label::Stage(if stage == NO_STAGE { "" } else { stage }.to_string());
        }
        if let Some((group, kind)) = text.rsplit_once(':') {
            if !kind.is_empty() && !group.is_empty() {
                return Label::kind(group, kind);
            }
        }
        Label::group(text)
    }

    /// Does `text` name this row?
    pub fn is(&self, text: &str) -> bool {
        *self == Label::parse(text)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Total => f.write_str("TOTAL"),
            Label::Stage(s) if s.is_empty() => write!(f, "TOTAL {NO_STAGE}"),
            Label::Stage(s) => write!(f, "TOTAL {s}"),
            Label::Group(g) => write!(f, "{g}"),
            Label::Kind { group, kind } => write!(f, "{group}:{kind}"),
        }
    }
}

impl From<Label> for String {
    fn from(l: Label) -> String {
        l.to_string()
    }
}

impl From<String> for Label {
    fn from(s: String) -> Label {
        Label::parse(&s)
    }
}

impl From<&str> for Label {
    fn from(s: &str) -> Label {
        Label::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::OpKind;

    #[test]
    fn every_label_reads_back_as_it_was_written() {
        for l in [
            Label::Total,
            Label::Stage("load".into()),
            Label::Stage(String::new()),
            Label::group("find"),
            Label::group(&Label::step_name("run", 500.0)),
            Label::kind("run", OpKind::Get),
            Label::kind(&Label::step_name("run", 2.5), OpKind::Update),
            Label::group("v1.2 reads"),
            Label::kind("app", "lookup"),
        ] {
            assert_eq!(Label::parse(&l.to_string()), l, "{l}");
        }
        assert_eq!(Label::step_name("run", 2.5), "run@2.5/s");
        assert_eq!(Label::Stage(String::new()).to_string(), "TOTAL (no stage)");
        assert!(Label::parse("run@500/s:get").is_step());
        assert!(!Label::parse("run:get").is_step());
        assert_eq!(Label::parse("ab:lookup"), Label::kind("ab", "lookup"));
        assert_eq!(Label::parse("ab:get"), Label::kind("ab", OpKind::Get));
        assert_eq!(
            Label::parse("ab:get").group_row().map(|g| g.name.as_str()),
            Some("ab")
        );
        assert!(Label::parse("TOTAL load").is_stage_total());
        let json = serde_json::to_string(&Label::kind("ab", OpKind::Get)).unwrap();
        assert_eq!(json, "\"ab:get\"");
    }

    #[test]
    fn a_part_of_a_groups_run_is_typed_and_written_as_before() {
        let part = |text: &str| Label::parse(text).part().copied();
        let at = |value, nth| Some(At { value, nth });
        assert_eq!(part("run@500/s"), at(AtValue::Rate(500_000), 1));
        assert_eq!(part("run@2.5/s:get"), at(AtValue::Rate(2_500), 1));
        assert_eq!(part("run@0.125/s"), at(AtValue::Rate(125), 1));
        assert_eq!(part("insert@50 users"), at(AtValue::Users(50), 1));
        assert_eq!(part("insert@200/s #2"), at(AtValue::Rate(200_000), 2));
        assert_eq!(part("insert"), None);
        for (setting, value, text) in [
            (Setting::Rate, 400.0, "g@400/s"),
            (Setting::Rate, 2.5, "g@2.5/s"),
            (Setting::Rate, 1.0 / 3.0, "g@0.333/s"),
            (Setting::Rate, 12.345_6, "g@12.35/s"),
            (Setting::Users, 50.0, "g@50 users"),
        ] {
            let l = Label::at("g", setting, value);
            assert_eq!(l.to_string(), text);
            assert_eq!(Label::parse(text), l);
            let typed = match l.part().map(|a| a.value) {
                Some(AtValue::Rate(_)) => Some(Setting::Rate),
                Some(AtValue::Users(_)) => Some(Setting::Users),
                None => None,
            };
            assert_eq!(typed, Some(setting));
        }
        // Two rates that round to one name are one value.
        assert_eq!(
            AtValue::of(Setting::Rate, 200.001),
            AtValue::of(Setting::Rate, 200.0)
        );
        // Text no group's name holds (a file of another tool) reads back as a whole name.
        for odd in [
            "a@b",
            "a@5/s #1",
            "a@5/s #x",
            "a@5/s #02",
            "a@1.2345/s",
            "a@5.0/s",
            "a@05/s",
            "a@+5/s",
            "a@050 users",
        ] {
            assert_eq!(Label::parse(odd), Label::Group(GroupRow::parse(odd)));
            assert!(!Label::parse(odd).is_step(), "{odd}");
            assert_eq!(Label::parse(odd).to_string(), odd);
        }
    }
}
