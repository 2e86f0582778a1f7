//! Which collections mongo-stress created itself, so that `drop = true` may drop them again
//! whatever `_id`s they came to hold (ObjectIds its templates generated, or the server gave its
//! upserts).
//!
//! After its drop, the setup creates the collection and marks it with an empty collection of the
//! same database named `mongo_stress_owned.<the collection's UUID>` (the UUID `listCollections`
//! reports). The mark vouches only for that very collection: dropped and created again by anyone
//! else, the collection has another UUID. The mark is made and removed by commands (`create`,
//! `drop`), never by writing a document, so the server's insert, update and delete counters see
//! only the workload. A server that reports no UUID gets no mark (the check then stays as strict
//! as before).

use mongodb::bson::{doc, Binary, Document, RawDocumentBuf};
use mongodb::Collection;

/// The prefix of the marks' names, in the target database.
pub(crate) const PREFIX: &str = "mongo_stress_owned.";

/// MongoDB's error codes for creating a collection that exists and dropping one that does not.
const NAMESPACE_EXISTS: i32 = 48;
const NAMESPACE_NOT_FOUND: i32 = 26;

fn code_is(e: &mongodb::error::Error, code: i32) -> bool {
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == code)
}

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

fn mark(uuid: &Binary) -> String {
    let hex: String = uuid.bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{hex}")
}

/// The collection's UUID and whether it is the very one an earlier run created and marked.
pub(crate) async fn created_by_us(
    coll: &Collection<RawDocumentBuf>,
) -> mongodb::error::Result<(Option<Binary>, bool)> {
    let Some(uuid) = uuid_of(coll).await? else {
        return Ok((None, false));
    };
    let db = coll.client().database(coll.namespace().db.as_str());
    let names = db
        .list_collection_names()
        .filter(doc! { "name": mark(&uuid) })
        .await?;
    let ours = !names.is_empty();
    Ok((Some(uuid), ours))
}

/// Creates the (just dropped) collection and marks it as the tool's own; removes the mark of the
/// collection it replaces (`old`).
pub(crate) async fn create_and_mark(
    coll: &Collection<RawDocumentBuf>,
    old: Option<&Binary>,
) -> mongodb::error::Result<()> {
    let db = coll.client().database(coll.namespace().db.as_str());
    if let Some(old) = old {
        if let Err(e) = db.collection::<Document>(&mark(old)).drop().await {
            if !code_is(&e, NAMESPACE_NOT_FOUND) {
                return Err(e);
            }
        }
    }
    if let Err(e) = db.create_collection(coll.name()).await {
        if !code_is(&e, NAMESPACE_EXISTS) {
            return Err(e);
        }
    }
    let Some(uuid) = uuid_of(coll).await? else {
        return Ok(());
    };
    if let Err(e) = db.create_collection(mark(&uuid)).await {
        if !code_is(&e, NAMESPACE_EXISTS) {
            return Err(e);
        }
    }
    Ok(())
}
