//! An operation of one template built from its verb and arguments, and what it says of itself
//! (whether it deletes, updates or inserts by key; its templates).

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

    /// Generates one request.
    #[expect(clippy::too_many_lines, reason = "124 lines: to split (issue 50)")]
    pub(crate) fn build(
        self: &Arc<Self>,
        cx: &mut Cx<'_>,
        docs: &mut dyn Documents,
    ) -> TemplateRequest {
        let mut issued = Vec::new();
        // A built-in kind on an existing document sends nothing while there is none (its
        // values are still drawn, so the random stream is the same either way).
        let skip = self.desugared.as_ref().is_some_and(|d| d.needs_key) && !cx.lookup.has_key();
        let mut doc = |t: &Option<Template>, cx: &mut Cx<'_>, issued: &mut Vec<i64>| {
            let d = match t {
                Some(t) => {
                    let own = t.generate_doc(cx).unwrap_or_default();
                    if own.contains_key("_id") {
                        own
                    } else {
                        let id = docs.issue();
                        issued.push(id);
                        let mut d = Document::new();
                        d.insert("_id", id);
                        d.extend(own);
                        d
                    }
                }
                None => {
                    // The collection's document, built in its bytes.
                    let id = docs.issue();
                    issued.push(id);
                    return docs.fill(id, cx);
                }
            };
            // Field names were checked when the profile was read; a generated value cannot
            // make a document the encoder refuses.
            RawDocumentBuf::from_document(&d).unwrap_or_default()
        };
        let filter = |t: &Template, cx: &mut Cx<'_>| t.generate_doc(cx).unwrap_or_default();
        let body = match &self.command {
            Command::Insert {
                batch, document, ..
            } => Body::Docs(
                (0..*batch)
                    .map(|_| doc(document, cx, &mut issued))
                    .collect(),
            ),
            Command::Find {
                filter: f,
                page: Some(page),
                ..
            } => {
                let f = filter(f, cx);
                Body::Page(f, page.generate(cx).as_i64().unwrap_or(1))
            }
            Command::Find {
                filter: f,
                shaped: Some(shaped),
                ..
            } => {
                let f = filter(f, cx);
                Body::Shaped(f, shaped.generate_doc(cx).unwrap_or_default())
            }
            Command::Delete {
                filter: f,
                from: Some(from),
                ..
            } => {
                let f = filter(f, cx);
                Body::From(f, from.generate(cx).as_i64())
            }
            Command::Find { filter: f, .. }
            | Command::Count { filter: f, .. }
            | Command::Distinct { filter: f, .. }
            | Command::Delete { filter: f, .. }
            | Command::FindAndModify {
                filter: f,
                change: None,
                ..
            } => Body::Filter(filter(f, cx)),
            Command::Update {
                filter: f, update, ..
            }
            | Command::FindAndModify {
                filter: f,
                change: Some(update),
                ..
            } => Body::FilterAnd(filter(f, cx), update.generate(cx)),
            Command::Replace {
                filter: f,
                replacement,
                ..
            } => Body::FilterAnd(filter(f, cx), replacement.generate(cx)),
            Command::Aggregate { pipeline, .. } => Body::Pipeline(stages(pipeline.generate(cx))),
            Command::EstimatedCount | Command::Nop => Body::Nothing,
            Command::RunCommand { document } => {
                Body::Command(document.generate_doc(cx).unwrap_or_default())
            }
            Command::Bulk { models, .. } => Body::Bulk(
                models
                    .iter()
                    .map(|m| match m {
                        BulkModel::InsertOne(d) => BuiltModel::InsertOne(doc(d, cx, &mut issued)),
                        BulkModel::Update {
                            many,
                            filter: f,
                            update,
                            ..
                        } => BuiltModel::Update {
                            many: *many,
                            filter: filter(f, cx),
                            update: update.generate(cx),
                        },
                        BulkModel::ReplaceOne {
                            filter: f,
                            replacement,
                            ..
                        } => BuiltModel::ReplaceOne {
                            filter: filter(f, cx),
                            replacement: replacement.generate_doc(cx).unwrap_or_default(),
                        },
                        BulkModel::Delete { many, filter: f } => BuiltModel::Delete {
                            many: *many,
                            filter: filter(f, cx),
                        },
                    })
                    .collect(),
            ),
        };
        TemplateRequest {
            user: cx.user,
            group: 0,
            op: Arc::clone(self),
            body: if skip { Body::Skip } else { body },
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
            Command::Bulk { models, .. } => models.iter(),
            _ => [].iter(),
        }
    }

    /// Does it insert documents with `_id`s from the collection's key space (so `^Key` has
    /// something to draw)?
    pub(crate) fn inserts_keyed(&self) -> bool {
        match &self.command {
            Command::Insert { .. } => true,
            Command::Bulk { models, .. } => {
                models.iter().any(|m| matches!(m, BulkModel::InsertOne(_)))
            }
            _ => false,
        }
    }

    /// Its templates, to check what they draw (`uses_key`, `field_paths`).
    pub(crate) fn templates(&self) -> Vec<&Template> {
        let mut out: Vec<&Template> = Vec::new();
        match &self.command {
            Command::Insert { document, .. } => out.extend(document.as_ref()),
            Command::Find { filter, shaped, .. } => {
                out.push(filter);
                out.extend(shaped.as_deref());
            }
            Command::Count { filter, .. }
            | Command::Distinct { filter, .. }
            | Command::Delete { filter, .. } => out.push(filter),
            Command::Update { filter, update, .. } => out.extend([filter, update]),
            Command::Replace {
                filter,
                replacement,
                ..
            } => out.extend([filter, replacement]),
            Command::FindAndModify { filter, change, .. } => {
                out.push(filter);
                out.extend(change.as_ref());
            }
            Command::Aggregate { pipeline, .. } => out.push(pipeline),
            Command::EstimatedCount | Command::Nop => {}
            Command::RunCommand { document } => out.push(document),
            Command::Bulk { models, .. } => {
                for m in models {
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
        out
    }
}
