//! Sends one of the profile's own operations through the driver's own call for it (insertOne,
//! find, aggregate, updateMany, bulkWrite, runCommand, ...), reads every cursor to its end, and
//! counts what it did: documents returned, inserted, upserted, deleted, matched, modified.

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::options::{Hint, ReturnDocument, WriteModel};
use mongodb::{ClientSession, Collection};

use super::Outcome;
use crate::workload::command::{Body, BuiltModel, Command, TemplateRequest};

/// Where a template's command goes: its collection handle, and the client for a `bulkWrite`.
pub struct On<'a> {
    pub coll: &'a Collection<RawDocumentBuf>,
    pub client: &'a mongodb::Client,
    pub write_concern: Option<&'a mongodb::options::WriteConcern>,
    /// `w: 0`: the driver has no unacknowledged writes, so a write goes as its database
    /// command with `writeConcern: { w: 0 }`, and the server replies without waiting for
    /// replication or the journal (it says nothing of what was matched or written).
    pub unacknowledged: bool,
    pub measure: bool,
}

fn hint(h: &Option<Bson>) -> Option<Hint> {
    match h {
        Some(Bson::String(s)) => Some(Hint::Name(s.clone())),
        Some(Bson::Document(d)) => Some(Hint::Keys(d.clone())),
        _ => None,
    }
}

fn collation(c: &Option<Document>) -> Option<mongodb::options::Collation> {
    c.as_ref()
        .and_then(|c| mongodb::bson::from_document(c.clone()).ok())
}

fn raw(d: &Document) -> RawDocumentBuf {
    RawDocumentBuf::from_document(d).unwrap_or_default()
}

fn bytes(d: &Document) -> u32 {
    crate::workload::size::document(d) as u32
}

fn update_of(b: Bson) -> mongodb::options::UpdateModifications {
    match b {
        Bson::Array(_) => {
            mongodb::options::UpdateModifications::Pipeline(crate::workload::command::stages(b))
        }
        Bson::Document(d) => mongodb::options::UpdateModifications::Document(d),
        _ => mongodb::options::UpdateModifications::Document(Document::new()),
    }
}

fn bson_bytes(b: &Bson) -> u32 {
    match b {
        Bson::Document(d) => bytes(d),
        Bson::Array(a) => a
            .iter()
            .map(|s| match s {
                Bson::Document(d) => bytes(d),
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// `drain` for a cursor of a transaction's session.
async fn drain_in(
    cursor: &mut mongodb::SessionCursor<RawDocumentBuf>,
    session: &mut ClientSession,
    measure: bool,
    out: &mut Outcome,
    mut first: Option<&mut (dyn FnMut(Document) + Send)>,
) -> mongodb::error::Result<()> {
    let mut received = 0usize;
    while cursor.advance(session).await? {
        if measure {
            received += cursor.current().as_bytes().len();
        }
        if out.returned == 0 {
            if let Some(keep) = first.as_deref_mut() {
                keep(Document::try_from(cursor.current()).unwrap_or_default());
            }
        }
        out.returned += 1;
    }
    out.received = received.min(u32::MAX as usize) as u32;
    out.matched = out.returned > 0;
    Ok(())
}

/// An update's counts, as a later step reads them.
fn update_result(r: mongodb::results::UpdateResult) -> Document {
    let mut d = doc! {
        "matchedCount": r.matched_count as i64,
        "modifiedCount": r.modified_count as i64,
    };
    if let Some(id) = r.upserted_id {
        d.insert("upsertedId", id);
    }
    d
}

/// Reads a cursor to its end, counting documents and (when measuring) bytes; `first` keeps
/// the first document.
async fn drain(
    cursor: &mut mongodb::Cursor<RawDocumentBuf>,
    measure: bool,
    out: &mut Outcome,
    mut first: Option<&mut (dyn FnMut(Document) + Send)>,
) -> mongodb::error::Result<()> {
    let mut received = 0usize;
    while cursor.advance().await? {
        if measure {
            received += cursor.current().as_bytes().len();
        }
        if out.returned == 0 {
            if let Some(keep) = first.as_deref_mut() {
                keep(Document::try_from(cursor.current()).unwrap_or_default());
            }
        }
        out.returned += 1;
    }
    out.received = received.min(u32::MAX as usize) as u32;
    out.matched = out.returned > 0;
    Ok(())
}

/// Sends a driver action, in the transaction's session when there is one.
macro_rules! send {
    ($session:ident, $action:expr) => {
        match $session.as_deref_mut() {
            Some(s) => $action.session(s).await,
            None => $action.await,
        }
    };
}

/// Sends one request; with `result`, keeps what a later step may read of it (`^Step`): the
/// first document a read returned, the document a findOneAnd* returned, an insert's `_id`s
/// (`{ _id }`, or `{ insertedIds }` for a batch), an update's `{ matchedCount, modifiedCount,
/// upsertedId }`, a delete's `{ deletedCount }`, a command's reply.
pub async fn execute(
    on: On<'_>,
    req: TemplateRequest,
    out: &mut Outcome,
    mut result: Option<&mut Option<Document>>,
    mut session: Option<&mut ClientSession>,
) -> mongodb::error::Result<()> {
    let want = result.is_some();

    let mut keep = |d: Document| {
        if let Some(r) = result.as_deref_mut() {
            *r = Some(d);
        }
    };
    let coll = on.coll;
    let op = &req.op;
    let measure = on.measure;
    let size = |d: &Document| if measure { bytes(d) } else { 0 };
    let writes = matches!(
        op.command,
        Command::Insert { .. }
            | Command::Update { .. }
            | Command::Replace { .. }
            | Command::Delete { .. }
    );
    if on.unacknowledged && writes {
        let Some(mut command) = crate::workload::command::wire_command(op, req.body.clone()) else {
            return Ok(());
        };
        command.insert("writeConcern", doc! { "w": 0 });
        out.sent = if measure { bytes(&command) } else { 0 };
        send!(
            session,
            on.client
                .database(&coll.namespace().db)
                .run_command(command)
        )?;
        return Ok(());
    }
    match (&op.command, req.body) {
        (Command::Insert { batch, ordered, .. }, Body::Docs(docs)) => {
            if measure {
                out.sent = docs.iter().map(|d| d.as_bytes().len() as u32).sum();
            }
            if want {
                let ids: Vec<Bson> = docs
                    .iter()
                    .filter_map(|d| {
                        d.get("_id")
                            .ok()
                            .flatten()
                            .and_then(|v| Bson::try_from(v.to_raw_bson()).ok())
                    })
                    .collect();
                keep(match ids.as_slice() {
                    [one] => doc! { "_id": one.clone() },
                    _ => doc! { "insertedIds": ids },
                });
            }
            if *batch == 1 && docs.len() == 1 {
                let doc = docs.into_iter().next().unwrap_or_default();
                send!(session, coll.insert_one(doc))?;
                out.inserted = 1;
            } else {
                let n = docs.len() as u64;
                match send!(session, coll.insert_many(docs).ordered(*ordered)) {
                    Ok(r) => out.inserted = r.inserted_ids.len() as u64,
                    Err(e) => {
                        // Some documents of the batch may be in: ordered stops at the first
                        // failure, unordered skips each failed one.
                        if let mongodb::error::ErrorKind::InsertMany(m) = e.kind.as_ref() {
                            let errs = m.write_errors.as_deref().unwrap_or_default();
                            out.inserted = if *ordered {
                                errs.iter().map(|w| w.index as u64).min().unwrap_or(n)
                            } else {
                                n.saturating_sub(errs.len() as u64)
                            };
                        }
                        return Err(e);
                    }
                }
            }
            out.matched = out.inserted > 0;
        }
        (Command::Find { args, .. }, Body::Filter(filter)) => {
            out.sent = size(&filter);
            let options = mongodb::options::FindOptions::builder()
                .projection(args.projection.clone())
                .sort(args.sort.clone())
                .skip(args.skip)
                .limit(args.limit)
                .batch_size(args.batch_size)
                .hint(hint(&args.hint))
                .collation(collation(&args.collation))
                .max_time(args.max_time_ms.map(std::time::Duration::from_millis))
                .build();
            let find = coll.find(filter).with_options(options);
            match session.as_deref_mut() {
                Some(s) => {
                    let mut cursor = find.session(&mut *s).await?;
                    drain_in(&mut cursor, s, measure, out, want.then_some(&mut keep)).await?;
                }
                None => {
                    let mut cursor = find.await?;
                    drain(&mut cursor, measure, out, want.then_some(&mut keep)).await?;
                }
            }
        }
        (
            Command::Aggregate {
                allow_disk_use,
                batch_size,
                hint: h,
                ..
            },
            Body::Pipeline(stages),
        ) => {
            if measure {
                out.sent = stages.iter().map(bytes).sum();
            }
            let mut agg = coll.aggregate(stages).with_type::<RawDocumentBuf>();
            if let Some(a) = allow_disk_use {
                agg = agg.allow_disk_use(*a);
            }
            if let Some(b) = batch_size {
                agg = agg.batch_size(*b);
            }
            if let Some(h) = hint(h) {
                agg = agg.hint(h);
            }
            match session.as_deref_mut() {
                Some(s) => {
                    let mut cursor = agg.session(&mut *s).await?;
                    drain_in(&mut cursor, s, measure, out, want.then_some(&mut keep)).await?;
                }
                None => {
                    let mut cursor = agg.await?;
                    drain(&mut cursor, measure, out, want.then_some(&mut keep)).await?;
                }
            }
        }
        (
            Command::Count {
                skip,
                limit,
                hint: h,
                ..
            },
            Body::Filter(filter),
        ) => {
            out.sent = size(&filter);
            let mut count = coll.count_documents(filter);
            if let Some(s) = skip {
                count = count.skip(*s);
            }
            if let Some(l) = limit {
                count = count.limit(*l);
            }
            if let Some(h) = hint(h) {
                count = count.hint(h);
            }
            out.matched = send!(session, count)? > 0;
        }
        (Command::EstimatedCount, _) => {
            // Metadata, not a read of documents: it takes no session (nor a transaction).
            out.matched = coll.estimated_document_count().await? > 0;
        }
        (Command::Distinct { key, .. }, Body::Filter(filter)) => {
            out.sent = size(&filter);
            let values = send!(session, coll.distinct(key, filter))?;
            out.returned = values.len() as u64;
            out.matched = !values.is_empty();
        }
        (Command::Update { args, .. }, Body::FilterAnd(filter, update)) => {
            out.sent = size(&filter) + if measure { bson_bytes(&update) } else { 0 };
            let many = op.verb == crate::workload::command::Verb::UpdateMany;
            let update = update_of(update);
            let r = if many {
                let mut u = coll.update_many(filter, update);
                if let Some(x) = args.upsert {
                    u = u.upsert(x);
                }
                if let Some(f) = &args.array_filters {
                    u = u.array_filters(f.clone());
                }
                if let Some(h) = hint(&args.hint) {
                    u = u.hint(h);
                }
                if let Some(c) = collation(&args.collation) {
                    u = u.collation(c);
                }
                send!(session, u)?
            } else {
                let mut u = coll.update_one(filter, update);
                if let Some(x) = args.upsert {
                    u = u.upsert(x);
                }
                if let Some(f) = &args.array_filters {
                    u = u.array_filters(f.clone());
                }
                if let Some(h) = hint(&args.hint) {
                    u = u.hint(h);
                }
                if let Some(c) = collation(&args.collation) {
                    u = u.collation(c);
                }
                send!(session, u)?
            };
            out.matched = r.matched_count > 0;
            out.modified = r.modified_count > 0;
            out.updated = r.modified_count;
            out.upserted = u64::from(r.upserted_id.is_some());
            if want {
                keep(update_result(r));
            }
        }
        (Command::Replace { args, .. }, Body::FilterAnd(filter, replacement)) => {
            out.sent = size(&filter) + if measure { bson_bytes(&replacement) } else { 0 };
            let replacement = match replacement {
                Bson::Document(d) => raw(&d),
                _ => RawDocumentBuf::new(),
            };
            let mut r = coll.replace_one(filter, replacement);
            if let Some(x) = args.upsert {
                r = r.upsert(x);
            }
            if let Some(h) = hint(&args.hint) {
                r = r.hint(h);
            }
            if let Some(c) = collation(&args.collation) {
                r = r.collation(c);
            }
            let r = send!(session, r)?;
            out.matched = r.matched_count > 0;
            out.modified = r.modified_count > 0;
            out.updated = r.modified_count;
            out.upserted = u64::from(r.upserted_id.is_some());
            if want {
                keep(update_result(r));
            }
        }
        (
            Command::Delete {
                hint: h,
                collation: c,
                ..
            },
            Body::Filter(filter),
        ) => {
            out.sent = size(&filter);
            let many = op.verb == crate::workload::command::Verb::DeleteMany;
            let n = if many {
                let mut d = coll.delete_many(filter);
                if let Some(h) = hint(h) {
                    d = d.hint(h);
                }
                if let Some(c) = collation(c) {
                    d = d.collation(c);
                }
                send!(session, d)?.deleted_count
            } else {
                let mut d = coll.delete_one(filter);
                if let Some(h) = hint(h) {
                    d = d.hint(h);
                }
                if let Some(c) = collation(c) {
                    d = d.collation(c);
                }
                send!(session, d)?.deleted_count
            };
            out.deleted = n;
            out.matched = n > 0;
            out.modified = n > 0;
            if want {
                keep(doc! { "deletedCount": n as i64 });
            }
        }
        (Command::FindAndModify { change, args, .. }, body) => {
            let (filter, second) = match body {
                Body::Filter(f) => (f, None),
                Body::FilterAnd(f, s) => (f, Some(s)),
                _ => return Ok(()),
            };
            out.sent = size(&filter) + second.as_ref().filter(|_| measure).map_or(0, bson_bytes);
            let after = if args.return_after {
                ReturnDocument::After
            } else {
                ReturnDocument::Before
            };
            let found = match (change, second) {
                (None, _) | (_, None) => {
                    let options = mongodb::options::FindOneAndDeleteOptions::builder()
                        .sort(args.sort.clone())
                        .projection(args.projection.clone())
                        .hint(hint(&args.hint))
                        .build();
                    let found = send!(
                        session,
                        coll.find_one_and_delete(filter).with_options(options)
                    )?;
                    if found.is_some() {
                        out.deleted = 1;
                        out.modified = true;
                    }
                    found
                }
                (Some(_), Some(s))
                    if op.verb == crate::workload::command::Verb::FindOneAndReplace =>
                {
                    let replacement = match s {
                        Bson::Document(d) => raw(&d),
                        _ => RawDocumentBuf::new(),
                    };
                    let options = mongodb::options::FindOneAndReplaceOptions::builder()
                        .sort(args.sort.clone())
                        .projection(args.projection.clone())
                        .return_document(after)
                        .upsert(args.upsert)
                        .hint(hint(&args.hint))
                        .build();
                    send!(
                        session,
                        coll.find_one_and_replace(filter, replacement)
                            .with_options(options)
                    )?
                }
                (Some(_), Some(s)) => {
                    let options = mongodb::options::FindOneAndUpdateOptions::builder()
                        .sort(args.sort.clone())
                        .projection(args.projection.clone())
                        .return_document(after)
                        .upsert(args.upsert)
                        .array_filters(args.array_filters.clone())
                        .hint(hint(&args.hint))
                        .build();
                    send!(
                        session,
                        coll.find_one_and_update(filter, update_of(s))
                            .with_options(options)
                    )?
                }
            };
            // The driver gives the document only, not the server's lastErrorObject: a found
            // document was changed (or deleted); with upsert and the document before, none
            // found means one was inserted.
            let changes = change.is_some();
            if changes && found.is_none() && args.upsert == Some(true) && !args.return_after {
                out.upserted = 1;
                out.modified = true;
            }
            if let Some(d) = found {
                if measure {
                    out.received = d.as_bytes().len() as u32;
                }
                if changes {
                    out.modified = true;
                    out.updated = 1;
                }
                if want {
                    keep(Document::try_from(d.as_ref()).unwrap_or_default());
                }
                out.returned = 1;
                out.matched = true;
            }
        }
        (Command::Bulk { ordered, models }, Body::Bulk(built)) => {
            let ns = coll.namespace();
            let mut write = Vec::with_capacity(built.len());
            for (m, b) in models.iter().zip(built) {
                use crate::workload::command::BulkModel;
                use mongodb::options::{
                    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel,
                    UpdateManyModel, UpdateOneModel,
                };
                if measure {
                    out.sent += match &b {
                        BuiltModel::InsertOne(d) => d.as_bytes().len() as u32,
                        BuiltModel::Update { filter, update, .. } => {
                            bytes(filter) + bson_bytes(update)
                        }
                        BuiltModel::ReplaceOne {
                            filter,
                            replacement,
                        } => bytes(filter) + bytes(replacement),
                        BuiltModel::Delete { filter, .. } => bytes(filter),
                    };
                }
                let args = match m {
                    BulkModel::Update { args, .. } | BulkModel::ReplaceOne { args, .. } => {
                        Some(args)
                    }
                    _ => None,
                };
                let upsert = args.and_then(|a| a.upsert);
                let array_filters = args
                    .and_then(|a| a.array_filters.clone())
                    .map(|f| f.into_iter().map(Bson::Document).collect::<Vec<_>>());
                let h = args.and_then(|a| a.hint.clone());
                write.push(match b {
                    BuiltModel::InsertOne(d) => WriteModel::InsertOne(
                        InsertOneModel::builder()
                            .namespace(ns.clone())
                            .document(Document::try_from(d).unwrap_or_default())
                            .build(),
                    ),
                    BuiltModel::Update {
                        many: false,
                        filter,
                        update,
                    } => WriteModel::UpdateOne(
                        UpdateOneModel::builder()
                            .namespace(ns.clone())
                            .filter(filter)
                            .update(update_of(update))
                            .upsert(upsert)
                            .array_filters(array_filters)
                            .hint(h)
                            .build(),
                    ),
                    BuiltModel::Update {
                        many: true,
                        filter,
                        update,
                    } => WriteModel::UpdateMany(
                        UpdateManyModel::builder()
                            .namespace(ns.clone())
                            .filter(filter)
                            .update(update_of(update))
                            .upsert(upsert)
                            .array_filters(array_filters)
                            .hint(h)
                            .build(),
                    ),
                    BuiltModel::ReplaceOne {
                        filter,
                        replacement,
                    } => WriteModel::ReplaceOne(
                        ReplaceOneModel::builder()
                            .namespace(ns.clone())
                            .filter(filter)
                            .replacement(replacement)
                            .upsert(upsert)
                            .hint(h)
                            .build(),
                    ),
                    BuiltModel::Delete {
                        many: false,
                        filter,
                    } => WriteModel::DeleteOne(
                        DeleteOneModel::builder()
                            .namespace(ns.clone())
                            .filter(filter)
                            .build(),
                    ),
                    BuiltModel::Delete { many: true, filter } => WriteModel::DeleteMany(
                        DeleteManyModel::builder()
                            .namespace(ns.clone())
                            .filter(filter)
                            .build(),
                    ),
                });
            }
            let mut bulk = on.client.bulk_write(write).ordered(*ordered);
            if let Some(wc) = on.write_concern {
                bulk = bulk.write_concern(wc.clone());
            }
            let r = send!(session, bulk)?;
            out.inserted = r.inserted_count as u64;
            out.upserted = r.upserted_count as u64;
            out.deleted = r.deleted_count as u64;
            out.matched = r.matched_count > 0 || r.inserted_count > 0 || r.deleted_count > 0;
            out.modified = r.modified_count > 0 || r.deleted_count > 0 || r.upserted_count > 0;
            out.updated = r.modified_count as u64;
        }
        (Command::RunCommand { .. }, Body::Command(command)) => {
            out.sent = size(&command);
            let db = on.client.database(&coll.namespace().db);
            let reply = send!(session, db.run_command(command))?;
            if measure {
                out.received = bytes(&reply);
            }
            out.matched = true;
            keep(reply);
        }
        // A body of another shape is never built for a command (`TemplateOp::build`).
        _ => {}
    }
    Ok(())
}
