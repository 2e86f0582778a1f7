//! Sends one operation (the profile's own, and the built-in kinds read as them) through the
//! driver's own call for it (insertOne, find, aggregate, updateMany, bulkWrite, runCommand, ...),
//! one sender per family of verbs, reads every cursor to its end, and counts what it did:
//! documents returned, inserted, upserted, deleted, matched, modified.

use mongodb::bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::options::{Hint, ReturnDocument, WriteModel};
use mongodb::{ClientSession, Collection};

use super::Outcome;
use crate::workload::command::{
    Aggregate, Built, BuiltModel, Count, Distinct, Find, FindAndChange, FindAndModify, FindArgs,
    Insert, RemovedId, TemplateRequest, WriteArgs,
};

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
    /// What the run's operations share.
    pub(crate) shared: &'a Shared,
}

/// What every operation of a run shares: the limiter of megabytes scanned (`scan`'s
/// `megabytes`), and the samples `insertSample` takes.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) scan_rate: scan::ScanRate,
    pub(crate) samples: sample::Samples,
    /// The cluster times users kept (`clusterTime`), by name and user.
    pub(crate) cluster_times: scan::ClusterTimes,
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

// After `send!`, which they use.
mod assert;
mod reads;
mod sample;
mod scan;
mod writes;
use assert::assert;
use reads::*;
use sample::insert_sample;
use scan::{keep_cluster_time, scan};
use writes::*;

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
    // A write at w:0 goes as its command (a built-in remove, which reads first, is refused at
    // w:0 when the profile is read; one with nothing to act on sends nothing).
    let as_command = !matches!(req.built, Built::Skip | Built::Remove { .. });
    if on.unacknowledged && op.verb.writes() && op.verb.at_w0() && as_command {
        return match crate::workload::command::wire_command(op, req.built) {
            Some(command) => unacknowledged(&on, command, out, &mut session).await,
            None => Ok(()),
        };
    }
    let (s, r) = (&mut session, &mut result);
    match req.built {
        Built::Skip | Built::Nop => Ok(()),
        Built::Insert { of, docs } => insert(&on, &of, docs, out, r, s).await,
        Built::Find {
            of,
            filter,
            shape,
            limit,
        } => find(&on, &of, filter, shape.as_ref(), limit, out, r, s).await,
        Built::Aggregate { of, stages } => aggregate(&on, &of, stages, out, r, s).await,
        Built::Count { of, filter } => count(&on, &of, filter, out, s).await,
        Built::EstimatedCount => estimated_count(&on, out).await,
        Built::Distinct { of, filter } => distinct(&on, &of, filter, out, s).await,
        Built::Update { of, filter, update } => {
            let (args, many, read_first) = (&of.args, of.many, of.read_first);
            self::update(&on, args, many, read_first, filter, update, out, r, s).await
        }
        Built::Replace {
            of,
            filter,
            replacement,
        } => replace(&on, &of.args, filter, replacement, out, r, s).await,
        Built::Delete { of, filter } => {
            delete(&on, of.many, &of.hint, &of.collation, filter, out, r, s).await
        }
        Built::Remove { filter, from } => {
            remove(&on, filter, from, req.removed.as_ref(), out, s).await
        }
        Built::FindAndModify { of, filter, change } => {
            find_and_modify(&on, &of, filter, change, out, r, s).await
        }
        Built::Bulk { ordered, models } => bulk(&on, ordered, models, out, s).await,
        Built::Run(mut command) => {
            retarget(&mut command, &op.collection_name, on.coll.name());
            run_command(&on, command, out, r, s).await
        }
        Built::Assert {
            of,
            expected,
            actual,
        } => assert(&on, &of.ignore, expected, actual, out, s).await,
        Built::Scan { of, read } => scan(&on, &of, *read, req.user, out, s).await,
        Built::ClusterTime(of) => keep_cluster_time(&on, &of.keep, req.user, out).await,
        Built::InsertSample(of) => insert_sample(&on, &of, out, s).await,
    }
}

/// A command step whose operation went to another collection than the step's own (the group's
/// `collections`, drawn or in turn) names that one: a command naming the step's collection
/// first (`createIndexes = "Collection0"`) is sent naming the operation's.
fn retarget(command: &mut Document, declared: &str, actual: &str) {
    if declared == actual {
        return;
    }
    if let Some((_, first)) = command.iter_mut().next() {
        if first.as_str() == Some(declared) {
            *first = Bson::String(actual.to_string());
        }
    }
}

/// A write at `w: 0`: its database command with `writeConcern: { w: 0 }`.
async fn unacknowledged(
    on: &On<'_>,
    mut command: Document,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
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
    let failed = reply_failure(&reply);
    keep(result, reply);
    failed.map_or(Ok(()), Err)
}

/// What a command's reply says failed although it has `ok: 1`: its first write error
/// (`writeErrors`), else its `writeConcernError` (a write done, its write concern not met,
/// such as `w: 2` on a one-member set), as the driver's error for it; None when the reply
/// holds neither.
pub(crate) fn reply_failure(reply: &Document) -> Option<mongodb::error::Error> {
    use mongodb::error::{ErrorKind, WriteFailure};
    let failure = if let Some(first) = reply
        .get_array("writeErrors")
        .ok()
        .and_then(|errors| errors.first())
        .and_then(Bson::as_document)
    {
        WriteFailure::WriteError(mongodb::bson::from_document(first.clone()).ok()?)
    } else {
        let concern = reply.get_document("writeConcernError").ok()?;
        WriteFailure::WriteConcernError(mongodb::bson::from_document(concern.clone()).ok()?)
    };
    Some(mongodb::error::Error::from(ErrorKind::Write(failure)))
}
