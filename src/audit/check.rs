//! The verdict: the ledger against what the server has after the run.

use std::collections::{HashMap, HashSet};

use roaring::RoaringTreemap;

use super::ledger::{GroupLedger, Ledger};
use super::{AuditPlan, Found, Wanted, WantedCollection};
pub(crate) use crate::summary::audit::{
    AuditGroup, AuditLine, AuditResult, LineKind, LISTED, TSV_HEADER,
};

/// What to read before the load: the counters of every collection some group increments.
pub(crate) fn wanted_before(plan: &AuditPlan) -> Wanted {
    Wanted {
        collections: plan
            .collections
            .iter()
            .map(|c| WantedCollection {
                name: c.name.clone(),
                ids: false,
                counters: c.counters.clone(),
                keyed: Vec::new(),
            })
            .collect(),
    }
}

/// What to read after the run: every collection some group wrote to the ledger.
pub(crate) fn wanted_after(plan: &AuditPlan, ledger: &Ledger) -> Wanted {
    let mut w = wanted_before(plan);
    for (g, l) in ledger.groups.iter().enumerate() {
        let Some(c) = plan.groups.get(g).map(|g| g.collection) else {
            continue;
        };
        let wc = &mut w.collections[c];
        wc.ids |= !l.inserted[0].is_empty()
            || !l.inserted[1].is_empty()
            || !l.deleted[0].is_empty()
            || !l.inc.is_empty();
        wc.keyed
            .extend(l.keyed[0].iter().chain(&l.keyed[1]).cloned());
    }
    w
}

/// The verdict per group, and every write found not kept as a line. `before` holds the
/// counters before the load, `after` what the server has now (for `wanted_after`).
pub(crate) fn check(
    plan: &AuditPlan,
    ledger: &Ledger,
    before: &Found,
    after: &Found,
) -> (Vec<AuditGroup>, AuditGroup, Vec<AuditLine>) {
    let empty = super::FoundCollection::default();
    let mut rows = rows_of(plan);
    let mut lines = Vec::new();
    let none = GroupLedger::default();
    let ledger_of = |g: usize| ledger.groups.get(g).unwrap_or(&none);
    for (c, coll) in plan.collections.iter().enumerate() {
        let found = after.collections.get(c).unwrap_or(&empty);
        let groups: Vec<(usize, &GroupLedger)> = (0..plan.groups.len())
            .filter(|g| plan.groups[*g].collection == c)
            .map(|g| (g, ledger_of(g)))
            .collect();
        let kept = Kept::new(coll, found, &groups);
        // Position of each group's keyed `_id`s in the collection's asked list.
        let mut keyed_at = 0;
        for &(g, l) in &groups {
            keyed_at += kept.group(&mut rows[g], l, keyed_at, &mut lines);
        }
        let base = |counter: u16, id: i64| counter_base(before, ledger, c, counter, id);
        kept.counters(counter_totals(&groups), base, &mut rows, &mut lines);
    }
    let mut total = AuditGroup {
        group: "TOTAL".into(),
        ..Default::default()
    };
    for r in &rows {
        total.add(r);
    }
    lines.sort_by(|a, b| (a.kind.name(), &a.group).cmp(&(b.kind.name(), &b.group)));
    (rows, total, lines)
}

/// Each group's row, its counts still zero.
fn rows_of(plan: &AuditPlan) -> Vec<AuditGroup> {
    plan.groups
        .iter()
        .map(|g| AuditGroup {
            group: g.name.clone(),
            collection: plan.collections[g.collection].name.clone(),
            write_concern: if g.acknowledged {
                g.write_concern.clone()
            } else {
                format!("{} (unacknowledged: not audited)", g.write_concern)
            },
            ..Default::default()
        })
        .collect()
}

/// A template's `_id` as the ledger and `audit.tsv` compare and show it.
fn key(b: &mongodb::bson::Bson) -> String {
    b.clone().into_relaxed_extjson().to_string()
}

/// Every group's increments of a document together: (counter, `_id`) -> (acknowledged, in
/// doubt) and the first group that made them.
fn counter_totals(groups: &[(usize, &GroupLedger)]) -> HashMap<(u16, i64), ([u64; 2], usize)> {
    let mut totals: HashMap<(u16, i64), ([u64; 2], usize)> = HashMap::new();
    for &(g, l) in groups {
        for (key, n) in &l.inc {
            let t = totals.entry(*key).or_insert(([0, 0], g));
            t.0[0] += u64::from(n[0]);
            t.0[1] += u64::from(n[1]);
        }
    }
    totals
}

/// A counter's value before the load in collection `c`: as read before it, or as inserted
/// during the run; None for a document a template inserted.
fn counter_base(before: &Found, ledger: &Ledger, c: usize, counter: u16, id: i64) -> Option<i64> {
    before
        .collections
        .get(c)
        .and_then(|b| b.counters.get(&id))
        .and_then(|v| v.get(counter as usize).copied())
        .or_else(|| {
            ledger
                .initial
                .get(c)
                .and_then(|m| m.get(&(counter, id)).copied())
        })
}

/// One collection after the run: what the server has and what its groups deleted.
struct Kept<'a> {
    coll: &'a super::Collection,
    found: &'a super::FoundCollection,
    /// The whole-number `_id`s some group deleted, acknowledged or in doubt.
    deleted: RoaringTreemap,
    /// The other `_id`s some group deleted, as `key` shows them.
    deleted_keyed: HashSet<String>,
}

impl<'a> Kept<'a> {
    /// Collection `coll` as `found`, with what its `groups` deleted.
    fn new(
        coll: &'a super::Collection,
        found: &'a super::FoundCollection,
        groups: &[(usize, &GroupLedger)],
    ) -> Kept<'a> {
        let mut deleted = RoaringTreemap::new();
        let mut deleted_keyed = HashSet::new();
        for &(_, l) in groups {
            deleted |= &l.deleted[0];
            deleted |= &l.deleted[1];
            deleted_keyed.extend(l.deleted_keyed.iter().flatten().map(key));
        }
        Kept {
            coll,
            found,
            deleted,
            deleted_keyed,
        }
    }

    /// Fills `row` from its group's ledger `l` and adds a line per write not kept; its keyed
    /// `_id`s start at `keyed_at` in the asked list. Returns how many keyed `_id`s it asked.
    fn group(
        &self,
        row: &mut AuditGroup,
        l: &GroupLedger,
        keyed_at: usize,
        lines: &mut Vec<AuditLine>,
    ) -> usize {
        let present = &self.found.ids;
        let deleted = &self.deleted;
        let wc = row.write_concern.clone();
        let line = |kind, id: String, detail: String| AuditLine {
            group: row.group.clone(),
            write_concern: wc.clone(),
            kind,
            collection: self.coll.name.clone(),
            id,
            detail,
        };
        row.inserts = l.inserted[0].len() + l.keyed[0].len() as u64;
        row.in_doubt = l.inserted[1].len() + l.keyed[1].len() as u64;
        row.deletes = l.deleted[0].len() + l.deleted_keyed[0].len() as u64;
        let lost = &(&l.inserted[0] - present) - deleted;
        row.lost = lost.len();
        let doubt_present = (&l.inserted[1] & present).len();
        row.in_doubt_present = doubt_present;
        row.in_doubt_absent = (&(&l.inserted[1] - present) - deleted).len();
        for id in lost.iter() {
            let id = id.cast_signed().to_string();
            if row.lost_ids.len() < LISTED {
                row.lost_ids.push(id.clone());
            }
            lines.push(line(LineKind::Lost, id, String::new()));
        }
        let back = &l.deleted[0] & present;
        row.back = back.len();
        for id in back.iter() {
            lines.push(line(
                LineKind::Back,
                id.cast_signed().to_string(),
                "deleted, acknowledged, and there again".into(),
            ));
        }
        let asked = self.keyed(row, l, keyed_at, lines);
        row.increments = l.inc.values().map(|n| u64::from(n[0])).sum();
        row.increments_in_doubt = l.inc.values().map(|n| u64::from(n[1])).sum();
        row.acknowledged = row.inserts + row.deletes + row.increments;
        asked
    }

    /// A template's own `_id`s, asked in order from `at`, acknowledged then in doubt: counts
    /// them into `row` and adds a line per lost one. Returns how many were asked.
    fn keyed(
        &self,
        row: &mut AuditGroup,
        l: &GroupLedger,
        at: usize,
        lines: &mut Vec<AuditLine>,
    ) -> usize {
        let asked = &self.found.keyed;
        let is_there = |i: usize| asked.get(at + i).copied().unwrap_or(false);
        for (i, v) in l.keyed[0].iter().enumerate() {
            if !is_there(i) && !self.deleted_keyed.contains(&key(v)) {
                row.lost += 1;
                let id = v.clone().into_relaxed_extjson().to_string();
                if row.lost_ids.len() < LISTED {
                    row.lost_ids.push(id.clone());
                }
                lines.push(AuditLine {
                    group: row.group.clone(),
                    write_concern: row.write_concern.clone(),
                    kind: LineKind::Lost,
                    collection: self.coll.name.clone(),
                    id,
                    detail: String::new(),
                });
            }
        }
        let n0 = l.keyed[0].len();
        for i in 0..l.keyed[1].len() {
            if is_there(n0 + i) {
                row.in_doubt_present += 1;
            } else {
                row.in_doubt_absent += 1;
            }
        }
        n0 + l.keyed[1].len()
    }

    /// Each counter of a document still there against the increments made to it (`totals`)
    /// from its value before the load (`base_of`): a line and a count on the first group that
    /// made them for each lost update or phantom.
    fn counters(
        &self,
        totals: HashMap<(u16, i64), ([u64; 2], usize)>,
        base_of: impl Fn(u16, i64) -> Option<i64>,
        rows: &mut [AuditGroup],
        lines: &mut Vec<AuditLine>,
    ) {
        let present = &self.found.ids;
        for ((counter, id), ([acked, doubt], g)) in totals {
            if !present.contains(id.cast_unsigned()) || self.deleted.contains(id.cast_unsigned()) {
                continue;
            }
            let Some(now) = self
                .found
                .counters
                .get(&id)
                .and_then(|v| v.get(counter as usize))
            else {
                continue;
            };
            // A document a template inserted: its counter's start is not known.
            let Some(base) = base_of(counter, id) else {
                continue;
            };
            let grew = now - base;
            let name = &self.coll.counters[counter as usize];
            let row = &mut rows[g];
            let line = |kind, detail: String| AuditLine {
                group: row.group.clone(),
                write_concern: row.write_concern.clone(),
                kind,
                collection: self.coll.name.clone(),
                id: id.to_string(),
                detail,
            };
            let (acked_i, all_i) = (
                i64::try_from(acked).unwrap_or(i64::MAX),
                i64::try_from(acked + doubt).unwrap_or(i64::MAX),
            );
            if grew < acked_i {
                let missing = acked_i - grew;
                lines.push(line(
                    LineKind::LostUpdate,
                    format!("{name}: {now}, acknowledged {acked} increments from {base}, {missing} lost"),
                ));
                rows[g].lost_updates += missing.unsigned_abs();
            } else if grew > all_i {
                let extra = grew - all_i;
                lines.push(line(
                    LineKind::Phantom,
                    format!("{name}: {now}, from {base} with {acked} acknowledged and {doubt} in doubt: {extra} more"),
                ));
                rows[g].phantom += extra.unsigned_abs();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Auditor, Collection, Done, FoundCollection, GroupAudit, Intent};
    use super::*;
    use crate::metrics::ErrorClass;

    fn plan() -> AuditPlan {
        AuditPlan {
            collections: vec![Collection {
                name: "c".into(),
                counters: vec!["n".into()],
            }],
            groups: ["ins", "upd", "del"]
                .iter()
                .map(|n| GroupAudit {
                    name: n.to_string(),
                    collection: 0,
                    write_concern: "w:1".into(),
                    acknowledged: true,
                })
                .collect(),
        }
    }

    #[test]
    fn each_kind_of_loss_is_counted_and_listed() {
        let (a, keeper) = Auditor::start(plan());
        let insert = |id| Intent::Insert {
            collection: 0,
            ids: vec![id],
            keyed: vec![],
            initial: vec![(0, 0)],
        };
        // 10..20 acknowledged; 20, 21 in doubt.
        for id in 10..20 {
            a.settle(0, insert(id), Done::default());
        }
        for id in 20..22 {
            let done = Done {
                error: Some(ErrorClass::Timeout),
                ..Done::default()
            };
            a.settle(0, insert(id), done);
        }
        // Preloaded 0 and 1: three increments each acknowledged, one in doubt on 1.
        let inc = |id| Intent::Inc {
            id,
            counters: vec![0],
        };
        for _ in 0..3 {
            for id in [0, 1] {
                let done = Done {
                    matched: true,
                    ..Done::default()
                };
                a.settle(1, inc(id), done);
            }
        }
        a.settle(
            1,
            inc(1),
            Done {
                error: Some(ErrorClass::Network),
                ..Done::default()
            },
        );
        // 2 deleted (acknowledged) and 11 deleted too.
        for id in [2, 11] {
            let done = Done {
                deleted: 1,
                ..Done::default()
            };
            let slot = crate::workload::request::RemovedId::default();
            slot.set(mongodb::bson::Bson::Int64(id)).unwrap();
            a.settle(2, Intent::Remove(slot), done);
        }
        drop(a);
        let ledger = keeper.finish().unwrap();
        let before = Found {
            collections: vec![FoundCollection {
                counters: [(0, vec![100]), (1, vec![50])].into(),
                ..Default::default()
            }],
        };
        // On the server: 0..=2 (2 is back), 10, 12..17 (13 and 18, 19 lost; 11 was deleted),
        // 20 (in doubt, present); counter of 0 grew by 1 (2 lost), of 1 by 5 (1 phantom).
        let mut ids = RoaringTreemap::new();
        for id in [0, 1, 2, 10, 12, 14, 15, 16, 17, 20] {
            ids.insert(id);
        }
        let after = Found {
            collections: vec![FoundCollection {
                ids,
                counters: [(0, vec![101]), (1, vec![55])].into(),
                keyed: vec![],
            }],
        };
        let (rows, total, lines) = check(&plan(), &ledger, &before, &after);
        let ins = &rows[0];
        assert_eq!((ins.inserts, ins.lost), (10, 3));
        assert_eq!(
            (ins.in_doubt, ins.in_doubt_present, ins.in_doubt_absent),
            (2, 1, 1)
        );
        assert_eq!(ins.lost_ids, vec!["13", "18", "19"]);
        assert_eq!(
            (rows[1].increments, rows[1].lost_updates, rows[1].phantom),
            (6, 2, 1)
        );
        assert_eq!((rows[2].deletes, rows[2].back), (2, 1));
        assert_eq!(total.not_kept(), 3 + 1 + 2);
        let kinds: Vec<&str> = lines.iter().map(|l| l.kind.name()).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "lost").count(), 3);
        assert!(
            kinds.contains(&"back") && kinds.contains(&"phantom") && kinds.contains(&"lost_update")
        );
        assert!(lines[0].tsv(1).starts_with("1\t"), "{:?}", lines[0]);
    }
}
