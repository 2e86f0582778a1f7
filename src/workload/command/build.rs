//! An operation of one template built from its verb and arguments, and what it says of itself
//! (whether it deletes, updates or inserts by key; its templates).

use rand::Rng;

use super::*;

impl TemplateOp {
    /// An estimatedDocumentCount named `name` on collection 0, for tests that need an operation
    /// and do not send it.
    #[cfg(test)]
    pub(crate) fn stub(name: &str) -> Arc<TemplateOp> {
        Arc::new(TemplateOp {
            name: name.into(),
            verb: Verb::EstimatedDocumentCount,
            at: "group[0].estimatedDocumentCount".into(),
            line: 1,
            collection: 0,
            collection_name: "c".into(),
            command: Command::EstimatedCount,
            desugared: None,
        })
    }

    /// Generates one request: the family's own values, drawn in the order the templates are
    /// written.
    pub(crate) fn build(
        self: &Arc<Self>,
        cx: &mut Cx<'_>,
        docs: &mut dyn Documents,
    ) -> TemplateRequest {
        let mut issued = Vec::new();
        // A built-in kind on an existing document sends nothing while there is none (its
        // values are still drawn, so the random stream is the same either way).
        let skip = self.desugared.as_ref().is_some_and(|d| d.needs_key) && !cx.lookup.has_key();
        let built = self.command.build(cx, docs, &mut issued);
        TemplateRequest {
            user: cx.user,
            group: 0,
            op: Arc::clone(self),
            built: if skip { Built::Skip } else { built },
            issued,
            removed: None,
        }
    }

    /// Does it delete documents (its verb, or one of its bulkWrite's models)?
    pub(crate) fn deletes(&self) -> bool {
        match self.verb.audit() {
            AuditAs::Deletes => true,
            AuditAs::ByModel => self.models().any(|m| matches!(m, BulkModel::Delete { .. })),
            AuditAs::Nothing | AuditAs::Inserts | AuditAs::Updates => false,
        }
    }

    /// Does it update or replace documents (its verb, or one of its bulkWrite's models)?
    pub(crate) fn updates(&self) -> bool {
        match self.verb.audit() {
            AuditAs::Updates => true,
            AuditAs::ByModel => self
                .models()
                .any(|m| matches!(m, BulkModel::Update { .. } | BulkModel::ReplaceOne { .. })),
            AuditAs::Nothing | AuditAs::Inserts | AuditAs::Deletes => false,
        }
    }

    /// A bulkWrite's models (none for any other command).
    pub(super) fn models(&self) -> impl Iterator<Item = &BulkModel> {
        match &self.command {
            Command::Bulk(b) => b.models.iter(),
            _ => [].iter(),
        }
    }

    /// Does it insert documents with `_id`s from the collection's key space (so `^Key` has
    /// something to draw)?
    pub(crate) fn inserts_keyed(&self) -> bool {
        match &self.command {
            Command::Insert(_) => true,
            Command::Bulk(b) => b
                .models
                .iter()
                .any(|m| matches!(m, BulkModel::InsertOne(_))),
            _ => false,
        }
    }

    /// Its templates, to check what they draw (`uses_key`, `field_paths`).
    pub(crate) fn templates(&self) -> Vec<&Template> {
        let mut out: Vec<&Template> = Vec::new();
        self.command.templates_into(&mut out);
        out
    }
}

impl Command {
    /// Its templates, a scan's read's among them.
    fn templates_into<'a>(&'a self, out: &mut Vec<&'a Template>) {
        let filter = Filter::template;
        match self {
            Command::Insert(i) => out.extend(i.document.as_ref()),
            Command::Find(f) => {
                out.extend(filter(&f.filter));
                out.extend(f.shaped.as_ref());
            }
            Command::Count(c) => out.push(&c.filter),
            Command::Distinct(d) => out.push(&d.filter),
            Command::Delete(d) => out.extend(filter(&d.filter)),
            Command::Update(u) => {
                out.extend(filter(&u.filter));
                if let UpdateBy::Template(t) = &u.update {
                    out.push(t);
                }
            }
            Command::Replace(r) => out.extend([&r.filter, &r.replacement]),
            Command::FindAndModify(f) => {
                out.push(&f.filter);
                match &f.change {
                    FindAndChange::Update(t) | FindAndChange::Replace(t) => out.push(t),
                    FindAndChange::Delete => {}
                }
            }
            Command::Aggregate(a) => out.push(&a.pipeline),
            Command::EstimatedCount | Command::Nop => {}
            Command::Run(document) => out.push(document),
            Command::Assert(a) => out.extend([&a.expected, &a.actual]),
            Command::Scan(s) => s.read.templates_into(out),
            Command::InsertSample(_) | Command::ClusterTime(_) => {}
            Command::Bulk(b) => {
                for m in &b.models {
                    match m {
                        BulkModel::InsertOne(d) => out.extend(d.as_ref()),
                        BulkModel::Update { filter, update, .. } => out.extend([filter, update]),
                        BulkModel::ReplaceOne {
                            filter,
                            replacement,
                            ..
                        } => out.extend([filter, replacement]),
                        BulkModel::Delete { filter, .. } => out.push(filter),
                    }
                }
            }
        }
    }

    /// This operation's values: each template generated, each built-in kind's filter and
    /// change drawn from the collection's document; the `_id`s it takes from the key space go
    /// into `issued`.
    fn build(&self, cx: &mut Cx<'_>, docs: &mut dyn Documents, issued: &mut Vec<i64>) -> Built {
        let filter = |t: &Template, cx: &mut Cx<'_>| t.generate_doc(cx).unwrap_or_default();
        match self {
            Command::Insert(i) => Built::Insert {
                docs: (0..i.batch)
                    .map(|_| insert_doc(i.document.as_ref(), cx, docs, issued))
                    .collect(),
                of: Arc::clone(i),
            },
            Command::Find(f) => {
                let filter = f.filter.generate(cx, docs);
                let shape = f.shaped.as_ref().map(|s| filter_doc(s, cx));
                let limit = f
                    .page
                    .map(|max| i64::from(cx.rng.random_range(1..=max.max(1))));
                Built::Find {
                    of: Arc::clone(f),
                    filter,
                    shape,
                    limit,
                }
            }
            Command::Aggregate(a) => Built::Aggregate {
                of: Arc::clone(a),
                stages: stages(a.pipeline.generate(cx)),
            },
            Command::Count(c) => Built::Count {
                of: Arc::clone(c),
                filter: filter(&c.filter, cx),
            },
            Command::EstimatedCount => Built::EstimatedCount,
            Command::Distinct(d) => Built::Distinct {
                of: Arc::clone(d),
                filter: filter(&d.filter, cx),
            },
            Command::Update(u) => Built::Update {
                of: Arc::clone(u),
                filter: u.filter.generate(cx, docs),
                update: u.update.generate(cx, docs),
            },
            Command::Replace(r) => Built::Replace {
                of: Arc::clone(r),
                filter: filter(&r.filter, cx),
                replacement: r.replacement.generate(cx),
            },
            Command::Delete(d) if d.from_key => {
                let filter = d.filter.generate(cx, docs);
                let from = cx.lookup.key(cx.rng).and_then(|k| k.as_i64());
                Built::Remove { filter, from }
            }
            Command::Delete(d) => Built::Delete {
                of: Arc::clone(d),
                filter: d.filter.generate(cx, docs),
            },
            Command::FindAndModify(f) => Built::FindAndModify {
                of: Arc::clone(f),
                filter: filter(&f.filter, cx),
                change: match &f.change {
                    FindAndChange::Update(t) | FindAndChange::Replace(t) => Some(t.generate(cx)),
                    FindAndChange::Delete => None,
                },
            },
            Command::Bulk(b) => Built::Bulk {
                ordered: b.ordered,
                models: b.models.iter().map(|m| m.build(cx, docs, issued)).collect(),
            },
            Command::Run(document) => Built::Run(filter(document, cx)),
            Command::Assert(a) => Built::Assert {
                of: Arc::clone(a),
                expected: filter(&a.expected, cx),
                actual: filter(&a.actual, cx),
            },
            Command::Scan(s) => Built::Scan {
                of: Arc::clone(s),
                read: Box::new(s.read.build(cx, docs, issued)),
            },
            Command::InsertSample(i) => Built::InsertSample(Arc::clone(i)),
            Command::ClusterTime(c) => Built::ClusterTime(Arc::clone(c)),
            Command::Nop => Built::Nop,
        }
    }
}

impl BulkModel {
    fn build(
        &self,
        cx: &mut Cx<'_>,
        docs: &mut dyn Documents,
        issued: &mut Vec<i64>,
    ) -> BuiltModel {
        match self {
            BulkModel::InsertOne(d) => {
                BuiltModel::InsertOne(insert_doc(d.as_ref(), cx, docs, issued))
            }
            BulkModel::Update {
                many,
                filter,
                update,
                args,
            } => BuiltModel::Update {
                many: *many,
                filter: filter_doc(filter, cx),
                update: update.generate(cx),
                args: args.clone(),
            },
            BulkModel::ReplaceOne {
                filter,
                replacement,
                args,
            } => BuiltModel::ReplaceOne {
                filter: filter_doc(filter, cx),
                replacement: filter_doc(replacement, cx),
                args: args.clone(),
            },
            BulkModel::Delete { many, filter } => BuiltModel::Delete {
                many: *many,
                filter: filter_doc(filter, cx),
            },
        }
    }
}

impl Filter {
    /// The profile's template (None for a built-in kind's).
    fn template(&self) -> Option<&Template> {
        match self {
            Filter::Template(t) => Some(t),
            Filter::Fields(_) => None,
        }
    }

    fn generate(&self, cx: &mut Cx<'_>, docs: &mut dyn Documents) -> Document {
        match self {
            Filter::Template(t) => filter_doc(t, cx),
            Filter::Fields(only) => docs.filter(only, cx),
        }
    }
}

impl UpdateBy {
    fn generate(&self, cx: &mut Cx<'_>, docs: &mut dyn Documents) -> Bson {
        match self {
            UpdateBy::Template(t) => t.generate(cx),
            UpdateBy::Builtin(change) => {
                let mut u = Document::new();
                if !change.set.is_empty() {
                    u.insert("$set", docs.fresh(&change.set, cx));
                }
                if !change.inc.is_empty() {
                    let inc: Document = change
                        .inc
                        .iter()
                        .map(|f| (f.clone(), Bson::Int32(1)))
                        .collect();
                    u.insert("$inc", inc);
                }
                Bson::Document(u)
            }
        }
    }
}

/// A template that makes a document (checked when the profile was read), generated.
fn filter_doc(t: &Template, cx: &mut Cx<'_>) -> Document {
    t.generate_doc(cx).unwrap_or_default()
}

/// One document to insert: the operation's own template's (with an `_id` from the key space
/// when it sets none), or the collection's, built in its bytes.
fn insert_doc(
    t: Option<&Template>,
    cx: &mut Cx<'_>,
    docs: &mut dyn Documents,
    issued: &mut Vec<i64>,
) -> RawDocumentBuf {
    let Some(t) = t else {
        let id = docs.issue();
        issued.push(id);
        return docs.fill(id, cx);
    };
    let own = filter_doc(t, cx);
    let d = if own.contains_key("_id") {
        own
    } else {
        let id = docs.issue();
        issued.push(id);
        let mut d = Document::new();
        d.insert("_id", id);
        d.extend(own);
        d
    };
    // Field names were checked when the profile was read; a generated value cannot make a
    // document the encoder refuses.
    RawDocumentBuf::from_document(&d).unwrap_or_default()
}
