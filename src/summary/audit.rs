//! What the write audit found: per group and in total, acknowledged writes against what the
//! server kept, and the lines of `audit.tsv` (`audit` does the checking; the summary keeps it).

use serde::{Deserialize, Serialize};

/// Lost `_id`s a group's row lists (all of them are in `audit.tsv`).
pub(crate) const LISTED: usize = 10;

/// One group's audit (or TOTAL's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditGroup {
    pub group: String,
    pub collection: String,
    /// `w:1`, `w:majority j:true`, `default`.
    pub write_concern: String,
    /// Writes acknowledged: inserted documents, deletes and `$inc`s.
    pub acknowledged: u64,
    /// Documents whose insert was acknowledged, and of them those not there (nor deleted).
    pub inserts: u64,
    pub lost: u64,
    /// Inserts whose outcome is unknown, and where they ended.
    pub in_doubt: u64,
    pub in_doubt_present: u64,
    pub in_doubt_absent: u64,
    /// Acknowledged deletes, and of them documents there again.
    pub deletes: u64,
    pub back: u64,
    /// Acknowledged increments, those missing from the counters (lost updates), and
    /// increments beyond acknowledged plus in doubt (phantom).
    pub increments: u64,
    #[serde(default)]
    pub increments_in_doubt: u64,
    pub lost_updates: u64,
    pub phantom: u64,
    /// A few lost `_id`s (every one is in `audit.tsv`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_ids: Vec<String>,
}

impl AuditGroup {
    /// Acknowledged writes the server did not keep: lost inserts, deletes back, lost updates.
    pub fn not_kept(&self) -> u64 {
        self.lost + self.back + self.lost_updates
    }

    pub fn add(&mut self, o: &AuditGroup) {
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
    pub finished: bool,
    /// Why it did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub groups: Vec<AuditGroup>,
    pub total: AuditGroup,
    /// How long reading back took.
    pub secs: f64,
}

impl AuditResult {
    /// An audit that could not read the collections back.
    pub fn unfinished(problem: String) -> AuditResult {
        AuditResult {
            finished: false,
            problem: Some(problem),
            ..Default::default()
        }
    }

    /// The console's line about it.
    pub fn line(&self) -> String {
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
pub enum LineKind {
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
    pub fn name(self) -> &'static str {
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
    pub group: String,
    pub write_concern: String,
    pub kind: LineKind,
    pub collection: String,
    /// The `_id`, as Extended JSON (a number is itself).
    pub id: String,
    /// A counter's name, the value expected and found.
    pub detail: String,
}

/// `audit.tsv`'s header.
pub(crate) const TSV_HEADER: &str = "run\tgroup\twrite_concern\tkind\tcollection\t_id\tdetail";

impl AuditLine {
    pub fn tsv(&self, run: u32) -> String {
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
