//! The senders of writes: inserts, updates, replacements, deletes and removes, findAndModify,
//! and bulk writes with their models.

use super::*;

pub(super) async fn insert(
    on: &On<'_>,
    of: &Insert,
    docs: Vec<RawDocumentBuf>,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    if on.measure {
        out.sent = docs.iter().map(|d| len(d.as_bytes())).sum();
    }
    if result.is_some() {
        let ids: Vec<Bson> = docs
            .iter()
            .filter_map(|d| {
                d.get("_id")
                    .ok()
                    .flatten()
                    .and_then(|v| Bson::try_from(v.to_raw_bson()).ok())
            })
            .collect();
        keep(
            result,
            match ids.as_slice() {
                [one] => doc! { "_id": one.clone() },
                _ => doc! { "insertedIds": ids },
            },
        );
    }
    let ordered = of.ordered;
    if of.batch == 1 && docs.len() == 1 {
        let doc = docs.into_iter().next().unwrap_or_default();
        send!(session, on.coll.insert_one(doc))?;
        out.inserted = 1;
    } else {
        let n = n_docs(docs.len());
        match send!(session, on.coll.insert_many(docs).ordered(ordered)) {
            Ok(r) => out.inserted = n_docs(r.inserted_ids.len()),
            Err(e) => {
                // Some documents of the batch may be in: ordered stops at the first failure,
                // unordered skips each failed one.
                if let mongodb::error::ErrorKind::InsertMany(m) = e.kind.as_ref() {
                    let errs = m.write_errors.as_deref().unwrap_or_default();
                    out.inserted = if ordered {
                        errs.iter().map(|w| n_docs(w.index)).min().unwrap_or(n)
                    } else {
                        n.saturating_sub(n_docs(errs.len()))
                    };
                }
                return Err(e);
            }
        }
    }
    out.matched = out.inserted > 0;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn update(
    on: &On<'_>,
    args: &WriteArgs,
    many: bool,
    read_first: bool,
    filter: Document,
    update: Bson,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    if read_first {
        // Read-modify-write: the update goes out only when the read found the document.
        out.sent = on.size(&filter);
        let Some(found) = send!(session, on.coll.find_one(filter.clone()))? else {
            return Ok(());
        };
        if on.measure {
            out.received = len(found.as_bytes());
        }
        out.returned = 1;
    }
    out.sent += on.size(&filter) + if on.measure { bson_bytes(&update) } else { 0 };
    let update = update_of(update);
    // The two actions are of two types with the same options.
    macro_rules! with_args {
        ($u:expr) => {{
            let mut u = $u;
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
            u
        }};
    }
    let r = if many {
        send!(session, with_args!(on.coll.update_many(filter, update)))?
    } else {
        send!(session, with_args!(on.coll.update_one(filter, update)))?
    };
    updated(&r, out, result);
    Ok(())
}

/// What an update or replace did.
pub(super) fn updated(
    r: &mongodb::results::UpdateResult,
    out: &mut Outcome,
    result: &mut Keep<'_>,
) {
    out.matched = r.matched_count > 0;
    out.modified = r.modified_count > 0;
    out.updated = r.modified_count;
    out.upserted = u64::from(r.upserted_id.is_some());
    if result.is_some() {
        keep(result, update_result(r));
    }
}

pub(super) async fn replace(
    on: &On<'_>,
    args: &WriteArgs,
    filter: Document,
    replacement: Bson,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    out.sent = on.size(&filter)
        + if on.measure {
            bson_bytes(&replacement)
        } else {
            0
        };
    let replacement = match replacement {
        Bson::Document(d) => raw(&d),
        _ => RawDocumentBuf::new(),
    };
    let mut r = on.coll.replace_one(filter, replacement);
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
    updated(&r, out, result);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn delete(
    on: &On<'_>,
    many: bool,
    h: &Option<Bson>,
    c: &Option<Document>,
    filter: Document,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    out.sent = on.size(&filter);
    // The two actions are of two types with the same options.
    macro_rules! with_args {
        ($d:expr) => {{
            let mut d = $d;
            if let Some(h) = hint(h) {
                d = d.hint(h);
            }
            if let Some(c) = collation(c) {
                d = d.collation(c);
            }
            d
        }};
    }
    let n = if many {
        send!(session, with_args!(on.coll.delete_many(filter)))?.deleted_count
    } else {
        send!(session, with_args!(on.coll.delete_one(filter)))?.deleted_count
    };
    out.deleted = n;
    out.matched = n > 0;
    out.modified = n > 0;
    if result.is_some() {
        keep(
            result,
            doc! { "deletedCount": i64::try_from(n).unwrap_or(i64::MAX) },
        );
    }
    Ok(())
}

/// The built-in remove: one match at or after `_id` `from` (so concurrent removers spread over
/// the collection instead of all finding its first match), from the start when none is, then
/// deleted by its `_id`, which `slot` holds before the delete goes out (the write audit's).
pub(super) async fn remove(
    on: &On<'_>,
    filter: Document,
    from: Option<i64>,
    slot: Option<&RemovedId>,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    let coll = on.coll;
    let mut found = None;
    if let Some(from) = from {
        let after = crate::workload::from_id(&filter, from);
        out.sent += on.size(&after);
        found = send!(
            session,
            coll.find_one(after)
                .sort(doc! { "_id": 1 })
                .projection(doc! { "_id": 1 })
        )?;
    }
    if found.is_none() {
        // Nothing matches past `from`: wrap around to the start.
        out.sent += on.size(&filter);
        found = send!(session, coll.find_one(filter).projection(doc! { "_id": 1 }))?;
    }
    let Some(found) = found else { return Ok(()) };
    if on.measure {
        out.received = len(found.as_bytes());
    }
    out.matched = true;
    let Some(id) = found.get("_id").ok().flatten().map(|v| v.to_raw_bson()) else {
        return Ok(());
    };
    let id = Bson::try_from(id).unwrap_or_default();
    if let Some(slot) = slot {
        let _ = slot.set(id.clone());
    }
    let filter = doc! { "_id": id };
    out.sent += on.size(&filter);
    out.deleted = send!(session, coll.delete_one(filter))?.deleted_count;
    out.modified = out.deleted > 0;
    Ok(())
}

pub(super) async fn find_and_modify(
    on: &On<'_>,
    of: &FindAndModify,
    filter: Document,
    second: Option<Bson>,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    let coll = on.coll;
    let args = &of.args;
    let changes = second.is_some();
    let replace = matches!(of.change, FindAndChange::Replace(_));
    out.sent = on.size(&filter) + second.as_ref().filter(|_| on.measure).map_or(0, bson_bytes);
    let after = if args.return_after {
        ReturnDocument::After
    } else {
        ReturnDocument::Before
    };
    let found = match second {
        Some(s) if changes && replace => {
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
        Some(s) if changes => {
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
        _ => {
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
    };
    // The driver gives the document only, not the server's lastErrorObject: a found document
    // was changed (or deleted); with upsert and the document before, none found means one was
    // inserted.
    if changes && found.is_none() && args.upsert == Some(true) && !args.return_after {
        out.upserted = 1;
        out.modified = true;
    }
    if let Some(d) = found {
        if on.measure {
            out.received = len(d.as_bytes());
        }
        if changes {
            out.modified = true;
            out.updated = 1;
        }
        if result.is_some() {
            keep(result, Document::try_from(d.as_ref()).unwrap_or_default());
        }
        out.returned = 1;
        out.matched = true;
    }
    Ok(())
}

pub(super) async fn bulk(
    on: &On<'_>,
    ordered: bool,
    built: Vec<BuiltModel>,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    let ns = on.coll.namespace();
    let mut write = Vec::with_capacity(built.len());
    for b in built {
        if on.measure {
            out.sent += match &b {
                BuiltModel::InsertOne(d) => len(d.as_bytes()),
                BuiltModel::Update { filter, update, .. } => bytes(filter) + bson_bytes(update),
                BuiltModel::ReplaceOne {
                    filter,
                    replacement,
                    ..
                } => bytes(filter) + bytes(replacement),
                BuiltModel::Delete { filter, .. } => bytes(filter),
            };
        }
        write.push(write_model(&ns, b));
    }
    let mut bulk = on.client.bulk_write(write).ordered(ordered);
    if let Some(wc) = on.write_concern {
        bulk = bulk.write_concern(wc.clone());
    }
    let r = send!(session, bulk)?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    out.inserted = count(r.inserted_count);
    out.upserted = count(r.upserted_count);
    out.deleted = count(r.deleted_count);
    out.matched = r.matched_count > 0 || r.inserted_count > 0 || r.deleted_count > 0;
    out.modified = r.modified_count > 0 || r.deleted_count > 0 || r.upserted_count > 0;
    out.updated = count(r.modified_count);
    Ok(())
}

/// One generated write model of a `bulkWrite`, with its model's options.
pub(super) fn write_model(ns: &mongodb::Namespace, b: BuiltModel) -> WriteModel {
    use mongodb::options::{
        DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
        UpdateOneModel,
    };
    let array_filters = |a: &WriteArgs| {
        a.array_filters
            .clone()
            .map(|f| f.into_iter().map(Bson::Document).collect::<Vec<_>>())
    };
    match b {
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
            args,
        } => WriteModel::UpdateOne(
            UpdateOneModel::builder()
                .namespace(ns.clone())
                .filter(filter)
                .update(update_of(update))
                .upsert(args.upsert)
                .array_filters(array_filters(&args))
                .hint(args.hint)
                .build(),
        ),
        BuiltModel::Update {
            many: true,
            filter,
            update,
            args,
        } => WriteModel::UpdateMany(
            UpdateManyModel::builder()
                .namespace(ns.clone())
                .filter(filter)
                .update(update_of(update))
                .upsert(args.upsert)
                .array_filters(array_filters(&args))
                .hint(args.hint)
                .build(),
        ),
        BuiltModel::ReplaceOne {
            filter,
            replacement,
            args,
        } => WriteModel::ReplaceOne(
            ReplaceOneModel::builder()
                .namespace(ns.clone())
                .filter(filter)
                .replacement(replacement)
                .upsert(args.upsert)
                .hint(args.hint)
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
    }
}
