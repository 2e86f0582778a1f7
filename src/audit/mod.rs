//! The write audit (`--audit`): did the deployment keep what it acknowledged? Each write the
//! workload can recompute is recorded as it ends, off the timed path, on a thread of its own
//! (`Auditor`, `Ledger`): the `_id`s inserted, the `_id`s deleted, each document's `$inc`
//! counters, and the `_id`s a template's inserts carry, as *acknowledged* or, when its
//! outcome is unknown (a timeout, a lost connection, a commit cut off), *in doubt*. After the
//! run the backend reads the collections back (`Wanted`, `Found`) and `check` gives the
//! verdict per group: acknowledged and lost, in doubt and present or absent, deleted and back,
//! counters below their acknowledged increments (lost updates) or above them and the in-doubt
//! ones together (phantom), and every lost write as a line of `audit.tsv`.
//!
//! Owns: what a write's end makes of it (`Fate`), the ledger, the verdict and `audit.tsv`'s
//! lines. Never: calls the driver, times an operation or prints.

mod check;
mod ledger;

pub(crate) use check::{
    check, wanted_after, wanted_before, AuditGroup, AuditLine, AuditResult, TSV_HEADER,
};
pub(crate) use ledger::{Auditor, Keeper};

use mongodb::bson::Bson;

use crate::metrics::sample::TxState;
use crate::metrics::ErrorClass;
use crate::plan::{Concerns, RunPlan, WriteConcernPlan};
use crate::workload::command::{AuditAs, Built, BuiltModel, TemplateRequest};
use crate::workload::{OpKind, Request};

/// What an acknowledged write's end says about its effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Acked,
    /// It may or may not have been applied: never counted as lost.
    InDoubt,
}

impl Fate {
    /// An operation's end: no error (or a committed transaction) is acknowledged; an error
    /// that leaves the effect unknown is in doubt; a refusal by the server (a duplicate key, a
    /// write conflict, not primary, an aborted transaction) did nothing, and is None.
    pub(crate) fn of(error: Option<ErrorClass>, tx: Option<TxState>) -> Option<Fate> {
        match (tx, error) {
            (Some(TxState::Committed), _) => Some(Fate::Acked),
            (Some(TxState::InDoubt), _) => Some(Fate::InDoubt),
            (Some(TxState::Aborted), _) => None,
            (None, None) => Some(Fate::Acked),
            (None, Some(c)) => match c {
                ErrorClass::Timeout
                | ErrorClass::Network
                | ErrorClass::ServerSelection
                | ErrorClass::WriteConcern
                | ErrorClass::Other => Some(Fate::InDoubt),
                ErrorClass::DuplicateKey
                | ErrorClass::WriteConflict
                | ErrorClass::NotPrimary
                | ErrorClass::Rejected
                | ErrorClass::ServerError => None,
            },
        }
    }
}

/// What the audit checks in one collection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Collection {
    pub(crate) name: String,
    /// The counter fields some group increments (`inc = [...]`), dotted paths allowed.
    pub(crate) counters: Vec<String>,
}

/// What the audit knows of the plan: each collection's counters, each group's collection and
/// write concern.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditPlan {
    pub(crate) collections: Vec<Collection>,
    /// By group plan index.
    pub(crate) groups: Vec<GroupAudit>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct GroupAudit {
    pub(crate) name: String,
    pub(crate) collection: usize,
    /// `w:1`, `w:majority j:true`, `default` (the deployment's).
    pub(crate) write_concern: String,
    /// Unacknowledged writes (w:0) have nothing to audit.
    pub(crate) acknowledged: bool,
}

impl AuditPlan {
    pub(crate) fn of(plan: &RunPlan) -> AuditPlan {
        let collections: Vec<Collection> = plan
            .collections
            .iter()
            .zip(plan.counters())
            .map(|(c, counters)| Collection {
                name: c.name.clone(),
                counters,
            })
            .collect();
        let groups = plan
            .groups()
            .map(|g| GroupAudit {
                name: g.name.clone(),
                collection: g.collection,
                write_concern: concern_label(&g.concerns),
                acknowledged: !matches!(g.concerns.write, Some(WriteConcernPlan::Nodes(0))),
            })
            .collect();
        AuditPlan {
            collections,
            groups,
        }
    }
}

/// A group's write concern as the audit's table names it.
pub(crate) fn concern_label(c: &Concerns) -> String {
    let w = match &c.write {
        None => "default".to_string(),
        Some(WriteConcernPlan::Nodes(n)) => format!("w:{n}"),
        Some(WriteConcernPlan::Majority) => "w:majority".to_string(),
    };
    match c.journal {
        Some(j) => format!("{w} j:{j}"),
        None => w,
    }
}

/// A write the audit can recompute, known before it is sent.
#[derive(Debug, Clone)]
pub(crate) enum Intent {
    /// Documents with these `_id`s into `collection`; `initial`: the counters' values in the
    /// one document of a built-in insert (counter index, value).
    Insert {
        collection: usize,
        ids: Vec<i64>,
        keyed: Vec<Bson>,
        initial: Vec<(u16, i64)>,
    },
    /// `$inc` by 1 of these counters (indexes into the collection's) of `_id` `id`.
    Inc { id: i64, counters: Vec<u16> },
    /// The built-in remove: which `_id` it deletes is known once it found one (the backend
    /// puts it here before the delete is sent).
    Remove(crate::workload::request::RemovedId),
}

impl Intent {
    /// What `req` of group `group` will write, if the audit can check it (a remove is given
    /// the slot its `_id` goes into).
    pub(crate) fn of(plan: &AuditPlan, group: usize, req: &mut Request) -> Option<Intent> {
        let g = plan.groups.get(group)?;
        if !g.acknowledged {
            return None;
        }
        let counters = &plan.collections[g.collection].counters;
        match &mut *req {
            Request::Template(t) => match t.op.desugared.as_ref().map(|d| d.kind) {
                Some(OpKind::Insert) => match (inserted(t), &t.built) {
                    (Some(Intent::Insert { ids, keyed, .. }), Built::Insert { docs, .. }) => {
                        let doc = docs.first()?;
                        Some(Intent::Insert {
                            collection: g.collection,
                            ids,
                            keyed,
                            initial: counters
                                .iter()
                                .enumerate()
                                .map(|(i, f)| (counter_index(i), number_at(doc, f).unwrap_or(0)))
                                .collect(),
                        })
                    }
                    (other, _) => other,
                },
                Some(OpKind::Update | OpKind::Rmw) => {
                    let Built::Update {
                        filter,
                        update: Bson::Document(update),
                        ..
                    } = &t.built
                    else {
                        return None;
                    };
                    let id = filter.get_i64("_id").ok()?;
                    let inc = update.get_document("$inc").ok()?;
                    let counters: Vec<u16> = inc
                        .keys()
                        .filter_map(|k| counters.iter().position(|c| c == k))
                        .map(counter_index)
                        .collect();
                    (!counters.is_empty()).then_some(Intent::Inc { id, counters })
                }
                Some(OpKind::Remove) => {
                    let slot = crate::workload::request::RemovedId::default();
                    t.removed = Some(std::sync::Arc::clone(&slot));
                    Some(Intent::Remove(slot))
                }
                Some(OpKind::Find | OpKind::Get | OpKind::Scan) => None,
                None => inserted(t),
            },
            Request::Steps(s) => {
                let mut all: Option<Intent> = None;
                // Steps into several collections: the audit follows the group's.
                for t in s.built.iter().flatten() {
                    if let Some(Intent::Insert {
                        collection,
                        ids,
                        keyed,
                        ..
                    }) = inserted(t)
                    {
                        if collection != g.collection {
                            continue;
                        }
                        match &mut all {
                            Some(Intent::Insert {
                                ids: a, keyed: k, ..
                            }) => {
                                a.extend(ids);
                                k.extend(keyed);
                            }
                            _ => {
                                all = Some(Intent::Insert {
                                    collection,
                                    ids,
                                    keyed,
                                    initial: Vec::new(),
                                })
                            }
                        }
                    }
                }
                all
            }
        }
    }
}

/// The documents a template inserts: `_id`s from the key space, and the `_id`s it sets itself.
fn inserted(t: &TemplateRequest) -> Option<Intent> {
    if !matches!(t.op.verb.audit(), AuditAs::Inserts | AuditAs::ByModel) {
        return None;
    }
    let docs: Vec<&mongodb::bson::RawDocumentBuf> = match &t.built {
        Built::Insert { docs, .. } => docs.iter().collect(),
        Built::Bulk { models, .. } => models
            .iter()
            .filter_map(|m| match m {
                BuiltModel::InsertOne(d) => Some(d),
                _ => None,
            })
            .collect(),
        _ => return None,
    };
    let mut ids = Vec::new();
    let mut keyed = Vec::new();
    for d in docs {
        match d.get("_id").ok().flatten() {
            // Numbers are one key to the server: 5 and 5L are the same `_id`.
            Some(mongodb::bson::RawBsonRef::Int64(i)) if i >= 0 => ids.push(i),
            Some(mongodb::bson::RawBsonRef::Int32(i)) if i >= 0 => ids.push(i64::from(i)),
            Some(v) => {
                if let Ok(b) = Bson::try_from(v.to_raw_bson()) {
                    keyed.push(b);
                }
            }
            None => {}
        }
    }
    (!ids.is_empty() || !keyed.is_empty()).then_some(Intent::Insert {
        collection: t.op.collection,
        ids,
        keyed,
        initial: Vec::new(),
    })
}

/// The integer at a dotted path of a raw document.
pub(crate) fn number_at(doc: &mongodb::bson::RawDocument, path: &str) -> Option<i64> {
    let mut cur = doc;
    let mut parts = path.split('.').peekable();
    while let Some(p) = parts.next() {
        let v = cur.get(p).ok().flatten()?;
        if parts.peek().is_none() {
            return match v {
                mongodb::bson::RawBsonRef::Int32(i) => Some(i64::from(i)),
                mongodb::bson::RawBsonRef::Int64(i) => Some(i),
                mongodb::bson::RawBsonRef::Double(d) if d.fract() == 0.0 => {
                    Some(crate::num::whole_signed(d))
                }
                _ => None,
            };
        }
        cur = v.as_document()?;
    }
    None
}

/// How a write ended, as far as the audit needs it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Done {
    pub(crate) error: Option<ErrorClass>,
    pub(crate) tx: Option<TxState>,
    /// It found (and so updated) its document.
    pub(crate) matched: bool,
    pub(crate) deleted: u64,
}

impl Done {
    /// An operation that never ended: abandoned at a stop, its outcome unknown.
    pub(crate) fn abandoned() -> Done {
        Done {
            error: Some(ErrorClass::Other),
            ..Done::default()
        }
    }
}

/// A write on its way: settled with how it ended, or, dropped unsettled (the operation was
/// abandoned at a stop), filed as in doubt.
pub(crate) struct Pending<'a> {
    auditor: &'a Auditor,
    group: usize,
    intent: Option<Intent>,
}

impl<'a> Pending<'a> {
    /// A write's pending record, for an intent read already.
    pub(crate) fn with(auditor: &'a Auditor, group: usize, intent: Intent) -> Pending<'a> {
        Pending {
            auditor,
            group,
            intent: Some(intent),
        }
    }

    pub(crate) fn settle(mut self, done: Done) {
        if let Some(i) = self.intent.take() {
            self.auditor.settle(self.group, i, done);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.intent.take() {
            self.auditor.settle(self.group, i, Done::abandoned());
        }
    }
}

/// What the backend is to read back: per collection, its documents' integer `_id`s and
/// counters, and whether the given other `_id`s are there.
#[derive(Debug, Clone, Default)]
pub struct Wanted {
    pub(crate) collections: Vec<WantedCollection>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct WantedCollection {
    pub(crate) name: String,
    /// Every integer `_id` there.
    pub(crate) ids: bool,
    /// These fields of every document (as integers; a missing one is 0).
    pub(crate) counters: Vec<String>,
    /// Are these `_id`s there?
    pub(crate) keyed: Vec<Bson>,
}

/// What the backend read.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub(crate) collections: Vec<FoundCollection>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct FoundCollection {
    pub(crate) ids: roaring::RoaringTreemap,
    /// By `_id`: each counter's value, in `WantedCollection::counters` order.
    pub(crate) counters: std::collections::HashMap<i64, Vec<i64>>,
    /// `keyed[i]`: the i-th asked `_id` is there.
    pub(crate) keyed: Vec<bool>,
}

/// A counter's index among its collection's (a handful, from the profile's `inc`).
fn counter_index(i: usize) -> u16 {
    u16::try_from(i).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unknown_outcome_is_in_doubt() {
        assert_eq!(Fate::of(None, None), Some(Fate::Acked));
        assert_eq!(
            Fate::of(Some(ErrorClass::Timeout), None),
            Some(Fate::InDoubt)
        );
        assert_eq!(
            Fate::of(Some(ErrorClass::Network), None),
            Some(Fate::InDoubt)
        );
        assert_eq!(Fate::of(Some(ErrorClass::DuplicateKey), None), None);
        assert_eq!(Fate::of(Some(ErrorClass::NotPrimary), None), None);
        assert_eq!(
            Fate::of(Some(ErrorClass::Network), Some(TxState::Committed)),
            Some(Fate::Acked)
        );
        assert_eq!(Fate::of(None, Some(TxState::Aborted)), None);
        assert_eq!(Fate::of(None, Some(TxState::InDoubt)), Some(Fate::InDoubt));
    }

    #[test]
    fn counters_are_read_at_dotted_paths() {
        let d = mongodb::bson::rawdoc! { "a": 3_i32, "s": { "n": 7_i64 }, "x": "no" };
        assert_eq!(number_at(&d, "a"), Some(3));
        assert_eq!(number_at(&d, "s.n"), Some(7));
        assert_eq!(number_at(&d, "x"), None);
        assert_eq!(number_at(&d, "missing"), None);
    }
}
