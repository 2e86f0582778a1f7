//! Operations of steps (a transaction or a sequence): their requests, built with each step's
//! values bound and earlier steps' results looked up.

use super::*;

/// Several operations run in order as one (`[[group.steps]]`): one sample from the first step's
/// start to the last one's end. A step that matches nothing ends the operation there, unless
/// `every_step`.
#[derive(Debug)]
pub struct StepsOp {
    pub(crate) name: OpName,
    /// `group[2].steps`, for messages.
    pub at: String,
    pub steps: Vec<Arc<TemplateOp>>,
    /// Per step: does it read an earlier step's result (`^Step`)? Such a step is generated at
    /// its turn, inside the operation's time; the others before the clock starts.
    pub(crate) late: Vec<bool>,
    /// `[group.bind]`: generated once per operation before the clock, read with `^Bind`.
    pub(crate) bind: Vec<(String, Template)>,
    /// The steps in one transaction (`transaction = true`).
    pub transaction: bool,
    /// Every step is sent whatever the one before matched (`every_step = true`).
    pub every_step: bool,
    /// Per step: what its failure does, whether it has a row, and genny's name for its metric.
    pub(crate) policy: Vec<StepPolicy>,
    /// The genny metric the whole operation is (`metric` on the group): its row, one sample
    /// per operation.
    pub(crate) metric: Option<String>,
    /// How long its scans hold their transaction open on purpose (their `hold`s, summed): on
    /// top of the operation's timeout, and a transaction that holds is not sent again.
    pub(crate) held: std::time::Duration,
}

/// What a failed step does to the rest of its operation (`[[group.steps]] on_error`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// The failure is the operation's: counted on the step's row and the group's; the later
    /// steps are not sent (a transaction is aborted).
    #[default]
    End,
    /// Counted on the step's row (not the group's), and the later steps go on (genny's
    /// `RecordFailure: true`).
    Record,
    /// Counted nowhere, the step's time kept, and the later steps go on (genny's
    /// `ThrowOnFailure: false`).
    Ignore,
}

/// What one step's `on_error`, `report` and `metric` say.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepPolicy {
    pub(crate) on_error: OnError,
    pub(crate) report: bool,
    pub(crate) metric: Option<String>,
}

/// The documents of each collection of the run, for a late step that inserts (by
/// `RunPlan::collections` index).
pub(crate) type CollectionsDocs = Arc<[(Arc<super::super::KeySpace>, Arc<super::super::DocGen>)]>;

/// A request of several steps: the bound values, the steps made before the clock, and what the
/// late ones need to be made at their turn.
#[derive(Debug, Clone)]
pub struct StepsRequest {
    pub op: Arc<StepsOp>,
    pub(crate) bound: Vec<(String, Bson)>,
    /// Per step: its request when it could be made before the clock.
    pub(crate) built: Vec<Option<TemplateRequest>>,
    /// The late steps' own random stream.
    pub(crate) seed: u64,
    /// The virtual user and its group plan's index, as in `TemplateRequest`.
    pub(crate) user: u32,
    pub(crate) group: usize,
    pub(crate) collections: CollectionsDocs,
    /// The `_id`s early steps on other collections than the group's issued, acknowledged when
    /// the last copy of the request is dropped.
    pub acks: Arc<Vec<super::super::keys::Acks>>,
    /// The group's collection and the one this operation drew (`collections = [...]`; the
    /// same without): a step on the first goes to the second.
    pub(crate) on: (usize, usize),
}

impl StepsRequest {
    /// The collection step `collection` works on in this operation.
    pub(crate) fn collection_of(&self, collection: usize) -> usize {
        if collection == self.on.0 {
            self.on.1
        } else {
            collection
        }
    }
}

/// What a late step reads: the bound values and the earlier steps' results.
pub(crate) struct StepLookup<'a> {
    pub(crate) bound: &'a [(String, Bson)],
    pub(crate) results: &'a [Option<Document>],
}

impl super::super::template::Lookup for StepLookup<'_> {
    fn key(&mut self, _rng: &mut dyn rand::RngCore) -> Option<Bson> {
        None
    }
    fn field(&mut self, _path: &str, _rng: &mut dyn rand::RngCore) -> Option<Bson> {
        None
    }
    fn bind(&mut self, name: &str) -> Option<Bson> {
        self.bound
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
    fn step(&mut self, index: usize, path: &str) -> Option<Bson> {
        let doc = self.results.get(index)?.as_ref()?;
        if path.is_empty() {
            return Some(Bson::Document(doc.clone()));
        }
        let mut at = doc;
        let mut parts = path.split('.').peekable();
        while let Some(p) = parts.next() {
            let v = at.get(p)?;
            if parts.peek().is_none() {
                return Some(v.clone());
            }
            match v {
                Bson::Document(d) => at = d,
                _ => return None,
            }
        }
        None
    }
}

impl StepsOp {
    /// Binds its values and makes every step that does not read an earlier one's result; a
    /// step on another collection than the group's draws that collection's `_id`s and
    /// documents. `on`: the group's collection and the one this operation drew (`docs` are
    /// the drawn one's), as in `StepsRequest::on`.
    pub(crate) fn build(
        self: &Arc<Self>,
        cx: &mut Cx<'_>,
        docs: &mut dyn Documents,
        on: (usize, usize),
        collections: &CollectionsDocs,
        issued: &mut Vec<i64>,
    ) -> StepsRequest {
        let mut acks = Vec::new();
        let bound: Vec<(String, Bson)> = self
            .bind
            .iter()
            .map(|(n, t)| (n.clone(), t.generate(cx)))
            .collect();
        let mut built = Vec::with_capacity(self.steps.len());
        for (step, late) in self.steps.iter().zip(&self.late) {
            if *late {
                built.push(None);
                continue;
            }
            let mut lookup = BoundLookup {
                bound: &bound,
                inner: &mut *cx.lookup,
            };
            let c = if step.collection == on.0 {
                on.1
            } else {
                step.collection
            };
            let other = (c != on.1).then(|| collections.get(c)).flatten();
            let mut on_other;
            let lookup: &mut dyn super::super::template::Lookup = match other {
                Some((keys, gen)) => {
                    on_other = super::super::lookup::OtherCollection {
                        keys,
                        document: gen,
                        inner: &mut lookup,
                    };
                    &mut on_other
                }
                None => &mut lookup,
            };
            let mut step_cx = Cx {
                rng: &mut *cx.rng,
                lookup,
                now_ms: cx.now_ms,
                user: cx.user,
                state: &mut *cx.state,
            };
            let req = match other {
                Some((keys, gen)) => {
                    let req = step.build(
                        &mut step_cx,
                        &mut CollectionDocs {
                            keys,
                            document: gen,
                        },
                    );
                    acks.push(super::super::keys::Acks(
                        Arc::clone(keys),
                        req.issued.clone(),
                    ));
                    req
                }
                None => {
                    let req = step.build(&mut step_cx, docs);
                    issued.extend(&req.issued);
                    req
                }
            };
            built.push(Some(req));
        }
        StepsRequest {
            op: Arc::clone(self),
            bound,
            built,
            seed: cx.rng.next_u64(),
            user: cx.user,
            group: 0,
            collections: Arc::clone(collections),
            acks: Arc::new(acks),
            on,
        }
    }
}

/// The user's lookups with the operation's bound values.
pub(super) struct BoundLookup<'a, 'b> {
    pub(super) bound: &'a [(String, Bson)],
    pub(super) inner: &'b mut dyn super::super::template::Lookup,
}

impl super::super::template::Lookup for BoundLookup<'_, '_> {
    fn key(&mut self, rng: &mut dyn rand::RngCore) -> Option<Bson> {
        self.inner.key(rng)
    }
    fn field(&mut self, path: &str, rng: &mut dyn rand::RngCore) -> Option<Bson> {
        self.inner.field(path, rng)
    }
    fn bind(&mut self, name: &str) -> Option<Bson> {
        self.bound
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }
    fn chooser(&mut self) -> Option<&mut super::super::distribution::Chooser> {
        self.inner.chooser()
    }
}
