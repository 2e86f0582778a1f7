//! Which collections mongo-stress created itself, so that `drop = true` may drop them again
//! whatever `_id`s they came to hold (ObjectIds its templates generated, or the server gave its
//! upserts).
//!
//! After its drop, the setup creates the collection and records it in `mongo_stress_owned` (in
//! the target database, `_id` the collection's name) with the collection's UUID, the one
//! `listCollections` reports. The record vouches only for that very collection: dropped and
//! created again by anyone else, the collection has another UUID and the record no longer
//! applies. A server that reports no UUID gets no record (the check then stays as strict as
//! before).

use mongodb::bson::{doc, Binary, Bson, Document, RawDocumentBuf};
use mongodb::Collection;

/// The collection of ownership records, in the target database.
pub const COLLECTION: &str = "mongo_stress_owned";

/// MongoDB's error code for creating a collection that exists (`NamespaceExists`).
const NAMESPACE_EXISTS: i32 = 48;

/// The UUID `listCollections` reports for the collection, if it exists and the server says.
async fn uuid_of(coll: &Collection<RawDocumentBuf>) -> mongodb::error::Result<Option<Binary>> {
    let db = coll.client().database(coll.namespace().db.as_str());
    let mut specs = db
        .list_collections()
        .filter(doc! { "name": coll.name() })
        .await?;
    if specs.advance().await? {
        let spec = specs.deserialize_current()?;
        return Ok(spec.info.uuid);
    }
    Ok(None)
}

fn records(coll: &Collection<RawDocumentBuf>) -> Collection<Document> {
    coll.client()
        .database(coll.namespace().db.as_str())
        .collection(COLLECTION)
}

/// Whether the collection is the very one an earlier run created and recorded.
pub async fn created_by_us(coll: &Collection<RawDocumentBuf>) -> mongodb::error::Result<bool> {
    let Some(uuid) = uuid_of(coll).await? else {
        return Ok(false);
    };
    let record = records(coll).find_one(doc! { "_id": coll.name() }).await?;
    Ok(record.is_some_and(|r| r.get("uuid") == Some(&Bson::Binary(uuid))))
}

/// Creates the (just dropped) collection and records it as the tool's own, for `profile`.
pub async fn create_and_record(
    coll: &Collection<RawDocumentBuf>,
    profile: &str,
) -> mongodb::error::Result<()> {
    let db = coll.client().database(coll.namespace().db.as_str());
    if let Err(e) = db.create_collection(coll.name()).await {
        let exists =
            matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == NAMESPACE_EXISTS);
        if !exists {
            return Err(e);
        }
    }
    let Some(uuid) = uuid_of(coll).await? else {
        return Ok(());
    };
    records(coll)
        .replace_one(
            doc! { "_id": coll.name() },
            doc! {
                "_id": coll.name(),
                "uuid": uuid,
                "profile": profile,
                "created": mongodb::bson::DateTime::now(),
            },
        )
        .upsert(true)
        .await?;
    Ok(())
}
