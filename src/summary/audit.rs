//! What the write audit found: per group and in total, acknowledged writes against what the
//! server kept, and the lines of `audit.tsv` (`audit` does the checking; the summary keeps it).

use serde::{Deserialize, Serialize};

/// Lost `_id`s a group's row lists (all of them are in `audit.tsv`).
pub(crate) const LISTED: usize = 10;

/// One group's audit (or TOTAL's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AuditGroup {
    pub(crate) group: String,
    pub(crate) collection: String,
    /// `w:1`, `w:majority j:true`, `default`.
    pub(crate) write_concern: String,
    /// Writes acknowledged: inserted documents, deletes and `$inc`s.
    pub(crate) acknowledged: u64,
    /// Documents whose insert was acknowledged, and of them those not there (nor deleted).
    pub(crate) inserts: u64,
    pub(crate) lost: u64,
    /// Inserts whose outcome is unknown, and where they ended.
    pub(crate) in_doubt: u64,
    pub(crate) in_doubt_present: u64,
    pub(crate) in_doubt_absent: u64,
    /// Acknowledged deletes, and of them documents there again.
    pub(crate) deletes: u64,
    pub(crate) back: u64,
    /// Acknowledged increments, those missing from the counters (lost updates), and
    /// increments beyond acknowledged plus in doubt (phantom).
    pub(crate) increments: u64,
    #[serde(default)]
    pub(crate) increments_in_doubt: u64,
    pub(crate) lost_updates: u64,
    pub(crate) phantom: u64,
    /// A few lost `_id`s (every one is in `audit.tsv`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) lost_ids: Vec<String>,
}

impl AuditGroup {
    /// Acknowledged writes the server did not keep: lost inserts, deletes back, lost updates.
    pub(crate) fn not_kept(&self) -> u64 {
        self.lost + self.back + self.lost_updates
    }

    pub(crate) fn add(&mut self, o: &AuditGroup) {
        self.acknowledged += o.acknowledged;
        self.inserts += o.inserts;
        self.lost += o.lost;
        self.in_doubt += o.in_doubt;
        self.in_doubt_present += o.in_doubt_present;
        self.in_doubt_absent += o.in_doubt_absent;
        self.deletes += o.deletes;
        self.back += o.back;
        self.increments += o.increments;
        self.increments_in_doubt += o.increments_in_doubt;
        self.lost_updates += o.lost_updates;
        self.phantom += o.phantom;
        for id in &o.lost_ids {
            if self.lost_ids.len() < LISTED {
                self.lost_ids.push(id.clone());
            }
        }
    }
}

/// The audit of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditResult {
    /// The collections were read back whole; false: interrupted, or the server did not answer.
    pub(crate) finished: bool,
    /// Why it did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) problem: Option<String>,
    pub(crate) groups: Vec<AuditGroup>,
    pub(crate) total: AuditGroup,
    /// How long reading back took.
    pub(crate) secs: f64,
}

impl AuditResult {
    /// An audit that could not read the collections back.
    pub(crate) fn unfinished(problem: String) -> AuditResult {
        AuditResult {
            finished: false,
            problem: Some(problem),
            ..Default::default()
        }
    }

    /// The console's line about it.
    pub(crate) fn line(&self) -> String {
        let t = &self.total;
        if !self.finished {
            return format!(
                "audit: did not finish ({})",
                self.problem.as_deref().unwrap_or("unknown")
            );
        }
        format!(
            "audit: {} acknowledged writes, {} lost, {} in doubt ({} present, {} absent), {} deleted and back, {} lost updates, {} phantom",
            t.acknowledged, t.lost, t.in_doubt, t.in_doubt_present, t.in_doubt_absent, t.back, t.lost_updates, t.phantom
        )
    }
}

/// What `audit.tsv` says of one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LineKind {
    /// Inserted and acknowledged, not there.
    Lost,
    /// Deleted and acknowledged, there again.
    Back,
    /// Increments acknowledged but missing from the counter.
    LostUpdate,
    /// More increments than were acknowledged or in doubt.
    Phantom,
}

impl LineKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            LineKind::Lost => "lost",
            LineKind::Back => "back",
            LineKind::LostUpdate => "lost_update",
            LineKind::Phantom => "phantom",
        }
    }
}

/// One line of `audit.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditLine {
    pub(crate) group: String,
    pub(crate) write_concern: String,
    pub(crate) kind: LineKind,
    pub(crate) collection: String,
    /// The `_id`, as Extended JSON (a number is itself).
    pub(crate) id: String,
    /// A counter's name, the value expected and found.
    pub(crate) detail: String,
}

/// `audit.tsv`'s header.
pub(crate) const TSV_HEADER: &str = "run\tgroup\twrite_concern\tkind\tcollection\t_id\tdetail";

impl AuditLine {
    pub(crate) fn tsv(&self, run: u32) -> String {
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        format!(
            "{run}\t{}\t{}\t{}\t{}\t{}\t{}",
            clean(&self.group),
            self.write_concern,
            self.kind.name(),
            clean(&self.collection),
            clean(&self.id),
            clean(&self.detail)
        )
    }
}
