//! The labels of summary rows, one language in one place: a group's name (`find`; a rate step's
//! group is `run@500/s`), one kind or named operation of a mixed group (`run:get`, `app:lookup`), a stage's total (`TOTAL load`;
//! `TOTAL (no stage)` for the unnamed one) and `TOTAL`. Written as text in `summary.tsv`,
//! `summary.json`, the JTL and thresholds; parsed back here and nowhere else. Group names cannot
//! hold `:` or `@`, be `TOTAL` or start with `TOTAL ` (the plan refuses them: a name must parse
//! back as a group's label), so the text is never ambiguous.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::OpName;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Label {
    /// All groups of the run.
    Total,
    /// All groups of one stage (a profile with several stages); the name may be empty.
    Stage(String),
    /// One group plan: a `[[group]]`, or one rate step of it (`run@500/s`).
    Group(String),
    /// One operation kind of a mixed group.
    Kind { group: String, kind: OpName },
}

/// The stage total of a stage without a name.
const NO_STAGE: &str = "(no stage)";

impl Label {
    pub fn group(name: &str) -> Label {
        Label::Group(name.to_string())
    }

    pub(crate) fn kind(group: &str, kind: impl Into<OpName>) -> Label {
        Label::Kind {
            group: group.to_string(),
            kind: kind.into(),
        }
    }

    /// The name of a rate step's group plan: `run@500/s`, `run@2.5/s`.
    pub(crate) fn step_name(group: &str, rate: f64) -> String {
        // As many decimals as the rate needs, up to 2 (3 below 1/s): never a bare `400.`.
        let r = if rate.fract() == 0.0 {
            format!("{rate:.0}")
        } else if rate < 1.0 {
            format!("{rate:.3}")
        } else {
            format!("{rate:.2}")
        };
        let r = match r.contains('.') {
            true => r.trim_end_matches('0').trim_end_matches('.').to_string(),
            false => r,
        };
        format!("{group}@{r}/s")
    }

    /// The group plan this row belongs to (its own or its kind's); None for totals.
    pub(crate) fn group_name(&self) -> Option<&str> {
        match self {
            Label::Group(g) | Label::Kind { group: g, .. } => Some(g),
            Label::Total | Label::Stage(_) => None,
        }
    }

    /// A rate step's row (`run@500/s`, or one of its kinds).
    pub(crate) fn is_step(&self) -> bool {
        self.group_name().is_some_and(|g| g.contains('@'))
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
        Label::Group(text.to_string())
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
            Label::Group(g) => f.write_str(g),
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
        assert_eq!(Label::parse("ab:get").group_name(), Some("ab"));
        assert!(Label::parse("TOTAL load").is_stage_total());
        let json = serde_json::to_string(&Label::kind("ab", OpKind::Get)).unwrap();
        assert_eq!(json, "\"ab:get\"");
    }
}
