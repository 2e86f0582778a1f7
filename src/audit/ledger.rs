//! The ledger of acknowledged and in-doubt writes, kept on a thread of its own: the virtual
//! users send each write's effect down a channel after its sample is taken.

use std::collections::HashMap;
use std::sync::mpsc;

use mongodb::bson::Bson;
use roaring::RoaringTreemap;

use super::{AuditPlan, Done, Fate, Intent};

/// One write's effect, as the ledger files it.
#[derive(Debug)]
enum Entry {
    Insert {
        group: u32,
        fate: Fate,
        ids: Vec<i64>,
        keyed: Vec<Bson>,
        initial: Vec<(u16, i64)>,
    },
    Delete {
        group: u32,
        fate: Fate,
        id: Bson,
    },
    Inc {
        group: u32,
        fate: Fate,
        id: i64,
        counters: Vec<u16>,
    },
}

/// An `_id` as the integer sets hold it: a whole number from 0.
pub(super) fn as_key(id: &Bson) -> Option<u64> {
    match id {
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Int32(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

/// Acknowledged (`[0]`) and in-doubt (`[1]`) sets.
pub(super) type Pair<T> = [T; 2];

fn slot(f: Fate) -> usize {
    match f {
        Fate::Acked => 0,
        Fate::InDoubt => 1,
    }
}

/// What one group's writes did.
#[derive(Debug, Default, Clone)]
pub(crate) struct GroupLedger {
    pub(crate) inserted: Pair<RoaringTreemap>,
    pub(crate) keyed: Pair<Vec<Bson>>,
    pub(crate) deleted: Pair<RoaringTreemap>,
    /// Deleted `_id`s that are not whole numbers (a template's own).
    pub(crate) deleted_keyed: Pair<Vec<Bson>>,
    /// (counter, `_id`) -> increments acknowledged, in doubt.
    pub(crate) inc: HashMap<(u16, i64), Pair<u32>>,
}

/// Every group's writes, and the counters' values in documents inserted during the run.
#[derive(Debug, Default, Clone)]
pub(crate) struct Ledger {
    pub(crate) groups: Vec<GroupLedger>,
    /// By collection: (counter, `_id`) -> its value in the inserted document.
    pub(crate) initial: Vec<HashMap<(u16, i64), i64>>,
}

impl Ledger {
    fn file(&mut self, e: Entry) {
        fn group(l: &mut Ledger, g: u32) -> &mut GroupLedger {
            let g = g as usize;
            if l.groups.len() <= g {
                l.groups.resize_with(g + 1, Default::default);
            }
            &mut l.groups[g]
        }
        match e {
            Entry::Insert {
                group: g,
                fate,
                ids,
                keyed,
                ..
            } => {
                let l = group(self, g);
                for id in &ids {
                    // The key space's `_id`s, kept as their bits (read back as i64).
                    l.inserted[slot(fate)].insert(id.cast_unsigned());
                }
                l.keyed[slot(fate)].extend(keyed);
            }
            Entry::Delete { group: g, fate, id } => {
                let l = group(self, g);
                match as_key(&id) {
                    Some(k) => {
                        l.deleted[slot(fate)].insert(k);
                    }
                    None => l.deleted_keyed[slot(fate)].push(id),
                }
            }
            Entry::Inc {
                group: g,
                fate,
                id,
                counters,
            } => {
                let l = group(self, g);
                for c in counters {
                    l.inc.entry((c, id)).or_default()[slot(fate)] += 1;
                }
            }
        }
    }
}

/// The virtual users' end of the ledger. Sending never waits (the channel is unbounded; each
/// entry is a few dozen bytes).
#[derive(Debug, Clone)]
pub(crate) struct Auditor {
    plan: std::sync::Arc<AuditPlan>,
    tx: mpsc::Sender<(Option<usize>, Entry)>,
}

/// The ledger's thread: it ends, handing the ledger over, once every `Auditor` is dropped.
pub(crate) struct Keeper {
    thread: std::thread::JoinHandle<Ledger>,
}

impl Auditor {
    pub(crate) fn start(plan: AuditPlan) -> (Auditor, Keeper) {
        let (tx, rx) = mpsc::channel::<(Option<usize>, Entry)>();
        let collections = plan.collections.len();
        let thread = std::thread::Builder::new()
            .name("audit-ledger".into())
            .spawn(move || {
                let mut ledger = Ledger {
                    groups: Vec::new(),
                    initial: vec![HashMap::new(); collections],
                };
                for (collection, e) in rx {
                    // A built-in insert's document: its counters' starting values.
                    if let (Some(c), Entry::Insert { ids, initial, .. }) = (collection, &e) {
                        if let (Some(id), Some(map)) = (ids.first(), ledger.initial.get_mut(c)) {
                            for (counter, v) in initial {
                                map.insert((*counter, *id), *v);
                            }
                        }
                    }
                    ledger.file(e);
                }
                ledger
            })
            .expect("a thread for the audit's ledger");
        (
            Auditor {
                plan: std::sync::Arc::new(plan),
                tx,
            },
            Keeper { thread },
        )
    }

    /// What the audit knows of the plan.
    pub(crate) fn plan(&self) -> &AuditPlan {
        &self.plan
    }

    /// What `req` of `group` will write, if anything the audit can check.
    #[cfg(test)]
    pub(crate) fn intent(
        &self,
        group: usize,
        req: &mut crate::workload::Request,
    ) -> Option<Intent> {
        Intent::of(&self.plan, group, req)
    }

    /// Files the write as its end decides.
    pub(crate) fn settle(&self, group: usize, intent: Intent, done: Done) {
        let fate = match (&intent, done.error) {
            // An insert of `_id`s from the run's own sequence refused as a duplicate: its own
            // earlier attempt (sent again by the driver after a lost connection) may be the one
            // that wrote it (a batch's documents before the refused one are in, too).
            (Intent::Insert { ids, .. }, Some(crate::metrics::ErrorClass::DuplicateKey))
                if !ids.is_empty() =>
            {
                Some(Fate::InDoubt)
            }
            // A remove that failed after it chose its document may have deleted it.
            (Intent::Remove(_), Some(_)) => Some(Fate::InDoubt),
            _ => Fate::of(done.error, done.tx),
        };
        let Some(fate) = fate else {
            return;
        };
        let g = u32::try_from(group).unwrap_or(u32::MAX);
        let (collection, entry) = match intent {
            Intent::Insert {
                collection,
                ids,
                keyed,
                initial,
            } => (
                Some(collection),
                Entry::Insert {
                    group: g,
                    fate,
                    ids,
                    keyed,
                    initial,
                },
            ),
            // Acknowledged but matched nothing: the document was gone already.
            Intent::Inc { .. } if fate == Fate::Acked && !done.matched => return,
            Intent::Inc { id, counters } => (
                None,
                Entry::Inc {
                    group: g,
                    fate,
                    id,
                    counters,
                },
            ),
            // Nothing found: nothing was sent to delete.
            Intent::Remove(slot) => match slot.get() {
                Some(id) if fate == Fate::InDoubt || done.deleted > 0 => (
                    None,
                    Entry::Delete {
                        group: g,
                        fate,
                        id: id.clone(),
                    },
                ),
                _ => return,
            },
        };
        let _ = self.tx.send((collection, entry));
    }
}

impl Keeper {
    /// The ledger, once every `Auditor` is gone; Err when its thread failed (what it held
    /// is lost, and the audit cannot be judged).
    pub(crate) fn finish(self) -> Result<Ledger, String> {
        self.thread.join().map_err(|p| {
            format!(
                "the audit's ledger failed: {}",
                crate::metrics::panic_message(p.as_ref())
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ErrorClass;

    fn plan() -> AuditPlan {
        AuditPlan {
            collections: vec![super::super::Collection {
                name: "c".into(),
                counters: vec!["n".into()],
            }],
            groups: vec![super::super::GroupAudit {
                name: "g".into(),
                collection: 0,
                write_concern: "w:1".into(),
                acknowledged: true,
            }],
        }
    }

    /// A built-in insert's request of one document with `_id` `id`.
    fn insert_request(id: i64) -> crate::workload::Request {
        use crate::workload::command::{
            Built, Command, Desugared, Insert, TemplateOp, TemplateRequest, Verb,
        };
        let of = std::sync::Arc::new(Insert {
            batch: 1,
            ordered: true,
            document: None,
        });
        let insert = std::sync::Arc::new(TemplateOp {
            name: crate::workload::OpKind::Insert.into(),
            verb: Verb::InsertOne,
            at: "group[0].op".into(),
            line: 1,
            collection: 0,
            collection_name: "c".into(),
            command: Command::Insert(std::sync::Arc::clone(&of)),
            desugared: Some(Desugared {
                kind: crate::workload::OpKind::Insert,
                needs_key: false,
                inc: Vec::new(),
            }),
        });
        crate::workload::Request::Template(TemplateRequest {
            op: insert,
            built: Built::Insert {
                of,
                docs: vec![mongodb::bson::RawDocumentBuf::from_document(
                    &mongodb::bson::doc! { "_id": id },
                )
                .unwrap()],
            },
            issued: vec![id],
            user: 0,
            group: 0,
            removed: None,
        })
    }

    #[test]
    fn the_ledger_files_each_end_by_its_fate() {
        let (a, keeper) = Auditor::start(plan());
        let insert = |id| Intent::Insert {
            collection: 0,
            ids: vec![id],
            keyed: vec![],
            initial: vec![(0, 5)],
        };
        a.settle(0, insert(1), Done::default());
        a.settle(
            0,
            insert(2),
            Done {
                error: Some(ErrorClass::Network),
                ..Done::default()
            },
        );
        a.settle(
            0,
            insert(3),
            Done {
                error: Some(ErrorClass::DuplicateKey),
                ..Done::default()
            },
        );
        let inc = || Intent::Inc {
            id: 1,
            counters: vec![0],
        };
        a.settle(
            0,
            inc(),
            Done {
                matched: true,
                ..Done::default()
            },
        );
        // Acknowledged, but its document was gone: nothing to check.
        a.settle(0, inc(), Done::default());
        let removed = |id: i64| {
            let slot = crate::workload::request::RemovedId::default();
            slot.set(Bson::Int64(id)).unwrap();
            Intent::Remove(slot)
        };
        a.settle(
            0,
            removed(7),
            Done {
                deleted: 1,
                ..Done::default()
            },
        );
        // Refused after it chose its document: it may have deleted it.
        let refused = Done {
            error: Some(ErrorClass::ServerError),
            ..Done::default()
        };
        a.settle(0, removed(8), refused);
        // Nothing found: nothing deleted.
        a.settle(0, Intent::Remove(Default::default()), Done::default());
        // Abandoned at a stop: in doubt.
        let mut req = insert_request(9);
        drop(
            a.intent(0, &mut req)
                .map(|i| super::super::Pending::with(&a, 0, i)),
        );
        drop(a);
        let l = keeper.finish().unwrap();
        let g = &l.groups[0];
        assert_eq!(g.inserted[0].iter().collect::<Vec<_>>(), vec![1]);
        // A duplicate of its own `_id`: its earlier attempt may have written it.
        assert_eq!(g.inserted[1].iter().collect::<Vec<_>>(), vec![2, 3, 9]);
        assert_eq!(g.inc[&(0, 1)], [1, 0]);
        assert_eq!(g.deleted[0].iter().collect::<Vec<_>>(), vec![7]);
        assert_eq!(g.deleted[1].iter().collect::<Vec<_>>(), vec![8]);
        assert_eq!(l.initial[0][&(0, 1)], 5);
        assert_eq!(l.initial[0][&(0, 2)], 5);
    }
}
