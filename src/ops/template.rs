//! Sends one operation (the profile's own, and the built-in kinds read as them) through the
//! driver's own call for it (insertOne, find, aggregate, updateMany, bulkWrite, runCommand, ...),
//! one sender per family of verbs, reads every cursor to its end, and counts what it did:
//! documents returned, inserted, upserted, deleted, matched, modified.

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::options::{Hint, ReturnDocument, WriteModel};
use mongodb::{ClientSession, Collection};

use super::Outcome;
use crate::workload::command::{
    Body, BuiltModel, BulkModel, Command, FindAndModifyArgs, FindArgs, TemplateRequest, Verb,
    WriteArgs,
};
use crate::workload::request::RemovedId;

type Result = mongodb::error::Result<()>;
/// Where a later step's view of the result goes (`^Step`), when one reads it.
type Keep<'a> = Option<&'a mut Option<Document>>;
type Session<'a> = Option<&'a mut ClientSession>;

/// Where a template's command goes: its collection handle, and the client for a `bulkWrite`.
pub(crate) struct On<'a> {
    pub(crate) coll: &'a Collection<RawDocumentBuf>,
    pub(crate) client: &'a mongodb::Client,
    pub(crate) write_concern: Option<&'a mongodb::options::WriteConcern>,
    /// `w: 0`: the driver has no unacknowledged writes, so a write goes as its database
    /// command with `writeConcern: { w: 0 }`, and the server replies without waiting for
    /// replication or the journal (it says nothing of what was matched or written).
    pub(crate) unacknowledged: bool,
    pub(crate) measure: bool,
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
    // BSON's own limit is 16 MiB.
    u32::try_from(crate::workload::size::document(d)).unwrap_or(u32::MAX)
}

/// A number of documents (a `usize` fits a `u64` on every platform Rust targets).
fn n_docs(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn len(b: &[u8]) -> u32 {
    u32::try_from(b.len()).unwrap_or(u32::MAX)
}

impl On<'_> {
    /// A document's bytes when measuring.
    fn size(&self, d: &Document) -> u32 {
        if self.measure {
            bytes(d)
        } else {
            0
        }
    }
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

/// Keeps `d` as the result a later step reads, when one does.
fn keep(result: &mut Keep<'_>, d: Document) {
    if let Some(r) = result.as_deref_mut() {
        *r = Some(d);
    }
}

/// Reads a cursor to its end (in the session's, when there is one), counting documents and
/// (when measuring) bytes; the first document is kept for a later step.
async fn drain(
    cursor: Cursor,
    session: &mut Session<'_>,
    measure: bool,
    out: &mut Outcome,
    result: &mut Keep<'_>,
) -> Result {
    let mut received = 0usize;
    let mut first = |out: &mut Outcome, raw: &mongodb::bson::RawDocument| {
        if measure {
            received += raw.as_bytes().len();
        }
        if out.returned == 0 && result.is_some() {
            keep(result, Document::try_from(raw).unwrap_or_default());
        }
        out.returned += 1;
    };
    match (cursor, session.as_deref_mut()) {
        (Cursor::In(mut c), Some(s)) => {
            while c.advance(s).await? {
                first(out, c.current());
            }
        }
        (Cursor::In(_), None) => {}
        (Cursor::Out(mut c), _) => {
            while c.advance().await? {
                first(out, c.current());
            }
        }
    }
    out.received = u32::try_from(received).unwrap_or(u32::MAX);
    out.matched = out.returned > 0;
    Ok(())
}

/// A cursor of the session's or of none.
enum Cursor {
    In(mongodb::SessionCursor<RawDocumentBuf>),
    Out(mongodb::Cursor<RawDocumentBuf>),
}

/// An update's counts, as a later step reads them.
fn update_result(r: &mongodb::results::UpdateResult) -> Document {
    let mut d = doc! {
        "matchedCount": i64::try_from(r.matched_count).unwrap_or(i64::MAX),
        "modifiedCount": i64::try_from(r.modified_count).unwrap_or(i64::MAX),
    };
    if let Some(id) = &r.upserted_id {
        d.insert("upsertedId", id.clone());
    }
    d
}

/// Sends a driver action, in the operation's session when there is one.
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
pub(crate) async fn execute(
    on: On<'_>,
    req: TemplateRequest,
    out: &mut Outcome,
    mut result: Keep<'_>,
    mut session: Session<'_>,
) -> Result {
    let op = &req.op;
    if on.unacknowledged && op.verb.writes() && op.verb.at_w0() {
        return unacknowledged(&on, &req, out, &mut session).await;
    }
    let (s, r) = (&mut session, &mut result);
    match (&op.command, req.body) {
        (_, Body::Skip) => Ok(()),
        (Command::Insert { batch, ordered, .. }, Body::Docs(docs)) => {
            insert(&on, *batch, *ordered, docs, out, r, s).await
        }
        (
            Command::Find {
                args, count_first, ..
            },
            Body::Filter(filter),
        ) => find(&on, args, *count_first, filter, None, out, r, s).await,
        (
            Command::Find {
                args, count_first, ..
            },
            Body::Page(filter, limit),
        ) => find(&on, args, *count_first, filter, Some(limit), out, r, s).await,
        (
            Command::Find {
                args, count_first, ..
            },
            Body::Shaped(filter, shape),
        ) => {
            let args = args.shaped(&shape);
            find(&on, &args, *count_first, filter, None, out, r, s).await
        }
        (command @ Command::Aggregate { .. }, Body::Pipeline(stages)) => {
            aggregate(&on, command, stages, out, r, s).await
        }
        (
            command @ (Command::Count { .. } | Command::Distinct { .. } | Command::EstimatedCount),
            body,
        ) => count(&on, command, body, out, s).await,
        (
            Command::Update {
                args, read_first, ..
            },
            Body::FilterAnd(filter, change),
        ) => {
            let many = op.verb == Verb::UpdateMany;
            update(&on, args, many, *read_first, filter, change, out, r, s).await
        }
        (Command::Replace { args, .. }, Body::FilterAnd(filter, replacement)) => {
            replace(&on, args, filter, replacement, out, r, s).await
        }
        (
            Command::Delete {
                hint, collation, ..
            },
            Body::Filter(filter),
        ) => {
            let many = op.verb == Verb::DeleteMany;
            delete(&on, many, hint, collation, filter, out, r, s).await
        }
        (Command::Delete { .. }, Body::From(filter, from)) => {
            remove(&on, filter, from, req.removed.as_ref(), out, s).await
        }
        (Command::FindAndModify { change, args, .. }, body) => {
            let replace = op.verb == Verb::FindOneAndReplace;
            find_and_modify(&on, change.is_some(), replace, args, body, out, r, s).await
        }
        (Command::Bulk { ordered, models }, Body::Bulk(built)) => {
            bulk(&on, *ordered, models, built, out, s).await
        }
        (Command::RunCommand { .. }, Body::Command(command)) => {
            run_command(&on, command, out, r, s).await
        }
        (Command::Nop, _) => Ok(()),
        // `TemplateOp::build` makes each command's own body; another is a bug, said once.
        (command, body) => {
            out.error = Some(Box::new(crate::metrics::OpError {
                class: crate::metrics::ErrorClass::Other,
                code: None,
                message: format!(
                    "internal: a {} request with the body of another operation ({}); please report it",
                    command_name(command),
                    body_name(&body)
                )
                .into(),
            }));
            Ok(())
        }
    }
}

fn body_name(b: &Body) -> &'static str {
    match b {
        Body::Docs(_) => "documents",
        Body::Filter(_) => "filter",
        Body::FilterAnd(..) => "filter and update",
        Body::Pipeline(_) => "pipeline",
        Body::Nothing => "nothing",
        Body::Command(_) => "command",
        Body::Bulk(_) => "write models",
        Body::Page(..) => "filter and limit",
        Body::Shaped(..) => "filter, projection and let",
        Body::From(..) => "filter and start",
        Body::Skip => "skip",
    }
}

fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Insert { .. } => "insert",
        Command::Find { .. } => "find",
        Command::Aggregate { .. } => "aggregate",
        Command::Count { .. } => "count",
        Command::EstimatedCount => "estimatedDocumentCount",
        Command::Distinct { .. } => "distinct",
        Command::Update { .. } => "update",
        Command::Replace { .. } => "replace",
        Command::Delete { .. } => "delete",
        Command::FindAndModify { .. } => "findAndModify",
        Command::Bulk { .. } => "bulkWrite",
        Command::RunCommand { .. } => "command",
        Command::Nop => "nop",
    }
}

/// A write at `w: 0`: its database command with `writeConcern: { w: 0 }`.
async fn unacknowledged(
    on: &On<'_>,
    req: &TemplateRequest,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    let Some(mut command) = crate::workload::command::wire_command(&req.op, req.body.clone())
    else {
        return Ok(());
    };
    command.insert("writeConcern", doc! { "w": 0 });
    out.sent = if on.measure { bytes(&command) } else { 0 };
    send!(
        session,
        on.client
            .database(&on.coll.namespace().db)
            .run_command(command)
    )?;
    Ok(())
}

async fn insert(
    on: &On<'_>,
    batch: u32,
    ordered: bool,
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
    if batch == 1 && docs.len() == 1 {
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
async fn find(
    on: &On<'_>,
    args: &FindArgs,
    count_first: bool,
    filter: Document,
    page: Option<i64>,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    // The filter goes out twice when the find counts first.
    out.sent = on.size(&filter) * (1 + u32::from(count_first));
    if count_first {
        send!(session, on.coll.count_documents(filter.clone()))?;
    }
    let options = mongodb::options::FindOptions::builder()
        .projection(args.projection.clone())
        .let_vars(args.let_vars.clone())
        .sort(args.sort.clone())
        .skip(args.skip)
        .limit(page.or(args.limit))
        .batch_size(args.batch_size)
        .hint(hint(&args.hint))
        .collation(collation(&args.collation))
        .max_time(args.max_time_ms.map(std::time::Duration::from_millis))
        .build();
    let find = on.coll.find(filter).with_options(options);
    let cursor = match session.as_deref_mut() {
        Some(s) => Cursor::In(find.session(s).await?),
        None => Cursor::Out(find.await?),
    };
    drain(cursor, session, on.measure, out, result).await
}

async fn aggregate(
    on: &On<'_>,
    command: &Command,
    stages: Vec<Document>,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    let Command::Aggregate {
        allow_disk_use,
        batch_size,
        hint: h,
        max_time_ms,
        ..
    } = command
    else {
        return Ok(());
    };
    if on.measure {
        out.sent = stages.iter().map(bytes).sum();
    }
    let mut agg = on.coll.aggregate(stages).with_type::<RawDocumentBuf>();
    if let Some(a) = allow_disk_use {
        agg = agg.allow_disk_use(*a);
    }
    if let Some(b) = batch_size {
        agg = agg.batch_size(*b);
    }
    if let Some(h) = hint(h) {
        agg = agg.hint(h);
    }
    if let Some(ms) = max_time_ms {
        agg = agg.max_time(std::time::Duration::from_millis(*ms));
    }
    let cursor = match session.as_deref_mut() {
        Some(s) => Cursor::In(agg.session(s).await?),
        None => Cursor::Out(agg.await?),
    };
    drain(cursor, session, on.measure, out, result).await
}

/// countDocuments, estimatedDocumentCount and distinct: answers that are not documents.
async fn count(
    on: &On<'_>,
    command: &Command,
    body: Body,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    match (command, body) {
        (
            Command::Count {
                skip,
                limit,
                hint: h,
                ..
            },
            Body::Filter(filter),
        ) => {
            out.sent = on.size(&filter);
            let mut count = on.coll.count_documents(filter);
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
            out.matched = on.coll.estimated_document_count().await? > 0;
        }
        (Command::Distinct { key, .. }, Body::Filter(filter)) => {
            out.sent = on.size(&filter);
            let values = send!(session, on.coll.distinct(key, filter))?;
            out.returned = n_docs(values.len());
            out.matched = !values.is_empty();
        }
        _ => {}
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn update(
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
fn updated(r: &mongodb::results::UpdateResult, out: &mut Outcome, result: &mut Keep<'_>) {
    out.matched = r.matched_count > 0;
    out.modified = r.modified_count > 0;
    out.updated = r.modified_count;
    out.upserted = u64::from(r.upserted_id.is_some());
    if result.is_some() {
        keep(result, update_result(r));
    }
}

async fn replace(
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
async fn delete(
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
async fn remove(
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

#[allow(clippy::too_many_arguments)]
async fn find_and_modify(
    on: &On<'_>,
    changes: bool,
    replace: bool,
    args: &FindAndModifyArgs,
    body: Body,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    let coll = on.coll;
    let (filter, second) = match body {
        Body::Filter(f) => (f, None),
        Body::FilterAnd(f, s) => (f, Some(s)),
        _ => return Ok(()),
    };
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

async fn bulk(
    on: &On<'_>,
    ordered: bool,
    models: &[BulkModel],
    built: Vec<BuiltModel>,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    let ns = on.coll.namespace();
    let mut write = Vec::with_capacity(built.len());
    for (m, b) in models.iter().zip(built) {
        if on.measure {
            out.sent += match &b {
                BuiltModel::InsertOne(d) => len(d.as_bytes()),
                BuiltModel::Update { filter, update, .. } => bytes(filter) + bson_bytes(update),
                BuiltModel::ReplaceOne {
                    filter,
                    replacement,
                } => bytes(filter) + bytes(replacement),
                BuiltModel::Delete { filter, .. } => bytes(filter),
            };
        }
        write.push(write_model(&ns, m, b));
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
fn write_model(ns: &mongodb::Namespace, m: &BulkModel, b: BuiltModel) -> WriteModel {
    use mongodb::options::{
        DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
        UpdateOneModel,
    };
    let args = match m {
        BulkModel::Update { args, .. } | BulkModel::ReplaceOne { args, .. } => Some(args),
        _ => None,
    };
    let upsert = args.and_then(|a| a.upsert);
    let array_filters = args
        .and_then(|a| a.array_filters.clone())
        .map(|f| f.into_iter().map(Bson::Document).collect::<Vec<_>>());
    let h = args.and_then(|a| a.hint.clone());
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
    }
}

async fn run_command(
    on: &On<'_>,
    command: Document,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    out.sent = on.size(&command);
    let db = on.client.database(&on.coll.namespace().db);
    let reply = send!(session, db.run_command(command))?;
    if on.measure {
        out.received = bytes(&reply);
    }
    out.matched = true;
    keep(result, reply);
    Ok(())
}
