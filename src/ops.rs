//! The only code that sends workload traffic through the driver: one `Request` in, one
//! `Outcome` out, with BSON payload sizes and matched / modified counts.

use mongodb::bson::{doc, Document, RawDocumentBuf};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::Collection;

use crate::sample::{ErrorClass, OpError};
use crate::workload::Request;

#[derive(Debug, Default)]
pub struct Outcome {
    pub sent: u32,
    pub received: u32,
    pub matched: bool,
    pub modified: bool,
    pub error: Option<Box<OpError>>,
}

impl Outcome {
    /// An operation abandoned after `limit` without a reply.
    pub fn timed_out(limit: std::time::Duration) -> Outcome {
        Outcome {
            error: Some(Box::new(OpError {
                class: ErrorClass::Timeout,
                message: format!(
                    "no reply within the operation timeout of {} (op_timeout, --op-timeout)",
                    humantime::format_duration(limit)
                ),
            })),
            ..Outcome::default()
        }
    }
}

fn bson_len(d: &Document) -> u32 {
    // A filter or update of a few fields; the driver serializes it again, which costs about as
    // much as this. Sizes above 4 GiB cannot occur (BSON's own limit is 16 MiB).
    RawDocumentBuf::from_document(d).map_or(0, |r| r.as_bytes().len() as u32)
}

pub async fn execute(coll: &Collection<RawDocumentBuf>, req: Request) -> Outcome {
    let mut out = Outcome::default();
    let result: mongodb::error::Result<()> = async {
        match req {
            Request::Insert(doc) => {
                out.sent = doc.as_bytes().len() as u32;
                coll.insert_one(doc).await?;
                out.matched = true;
            }
            Request::Find {
                filter,
                limit,
                count,
            } => {
                // The filter goes out twice when the find counts first.
                out.sent = bson_len(&filter) * (1 + u32::from(count));
                if count {
                    coll.count_documents(filter.clone()).await?;
                }
                let mut cursor = coll.find(filter).limit(i64::from(limit)).await?;
                let mut received = 0usize;
                while cursor.advance().await? {
                    received += cursor.current().as_bytes().len();
                    out.matched = true;
                }
                out.received = received.min(u32::MAX as usize) as u32;
            }
            Request::UpdateById { id, update } => {
                // No `_id` issued yet: nothing to update, nothing sent.
                let Some(id) = id else { return Ok(()) };
                let filter = doc! { "_id": id };
                out.sent = bson_len(&filter) + bson_len(&update);
                let r = coll.update_one(filter, update).await?;
                out.matched = r.matched_count > 0;
                out.modified = r.modified_count > 0;
            }
            Request::UpdateByFilter {
                filter,
                update,
                many,
            } => {
                out.sent = bson_len(&filter) + bson_len(&update);
                let r = if many {
                    coll.update_many(filter, update).await?
                } else {
                    coll.update_one(filter, update).await?
                };
                out.matched = r.matched_count > 0;
                out.modified = r.modified_count > 0;
            }
            Request::Remove { filter, from } => {
                let mut found = None;
                if let Some(from) = from {
                    let after = crate::workload::from_id(&filter, from);
                    out.sent += bson_len(&after);
                    found = coll
                        .find_one(after)
                        .sort(doc! { "_id": 1 })
                        .projection(doc! { "_id": 1 })
                        .await?;
                }
                if found.is_none() {
                    // Nothing matches past `from`: wrap around to the start.
                    out.sent += bson_len(&filter);
                    found = coll.find_one(filter).projection(doc! { "_id": 1 }).await?;
                }
                if let Some(found) = found {
                    out.received = found.as_bytes().len() as u32;
                    out.matched = true;
                    let id = found.get("_id").ok().flatten().map(|v| v.to_raw_bson());
                    if let Some(id) = id {
                        let filter =
                            doc! { "_id": mongodb::bson::Bson::try_from(id).unwrap_or_default() };
                        out.sent += bson_len(&filter);
                        out.modified = coll.delete_one(filter).await?.deleted_count > 0;
                    }
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        out.error = Some(Box::new(classify(&e)));
    }
    out
}

/// Maps a driver error to a class and a one-line message.
pub fn classify(e: &mongodb::error::Error) -> OpError {
    let class = {
        match e.kind.as_ref() {
            ErrorKind::Io(io)
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                ) =>
            {
                ErrorClass::Timeout
            }
            ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } => ErrorClass::Network,
            ErrorKind::ServerSelection { .. } => ErrorClass::ServerSelection,
            ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == 11000 => {
                ErrorClass::DuplicateKey
            }
            ErrorKind::Command(c) if c.code == 112 => ErrorClass::WriteConflict,
            ErrorKind::Command(c) if c.code == 50 => ErrorClass::Timeout,
            ErrorKind::Write(_)
            | ErrorKind::Command(_)
            | ErrorKind::InsertMany(_)
            | ErrorKind::BulkWrite(_) => ErrorClass::ServerError,
            _ => ErrorClass::Other,
        }
    };
    let mut message = crate::connect::redact(&e.to_string()).replace(['\n', '\t'], " ");
    if message.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|i| message.is_char_boundary(*i))
            .unwrap_or(0);
        message.truncate(cut);
        message.push_str("...");
    }
    OpError { class, message }
}
