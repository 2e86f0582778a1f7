//! The command documents as the server receives them (for explain and capture): each verb's
//! request built from an operation's generated body.

use super::*;

/// The database command a request is on the wire (what `explain` takes, and what an
/// unacknowledged write is sent as): find, aggregate, count, distinct, insert, update, delete,
/// findAndModify; None for estimatedDocumentCount, the built-in remove (a find, then a delete
/// by `_id`), bulkWrite and commands.
pub(crate) fn wire_command(op: &TemplateOp, built: Built) -> Option<Document> {
    let coll = op.collection_name.as_str();
    Some(match built {
        Built::Find {
            of,
            filter,
            shape,
            limit,
        } => find_wire(coll, op.verb, &of.args.made(shape.as_ref(), limit), filter),
        Built::Aggregate { of, stages } => {
            let mut d = doc! { "aggregate": coll, "pipeline": stages, "cursor": {} };
            put(&mut d, "allowDiskUse", of.allow_disk_use.map(Bson::Boolean));
            put(&mut d, "hint", of.hint.clone());
            put(&mut d, "maxTimeMS", of.max_time_ms.map(int64));
            d
        }
        Built::Count { of, filter } => {
            let mut d = doc! { "count": coll, "query": filter };
            put(&mut d, "skip", of.skip.map(int64));
            put(&mut d, "limit", of.limit.map(int64));
            put(&mut d, "hint", of.hint.clone());
            d
        }
        Built::Distinct { of, filter } => {
            doc! { "distinct": coll, "key": of.key.as_str(), "query": filter }
        }
        Built::Update { of, filter, update } => {
            update_wire(coll, filter, update, of.many, &of.args)
        }
        Built::Replace {
            of,
            filter,
            replacement,
        } => update_wire(coll, filter, replacement, false, &of.args),
        Built::Delete { of, filter } => {
            let mut d = doc! { "q": filter, "limit": if of.many { 0 } else { 1 } };
            put(&mut d, "hint", of.hint.clone());
            put(
                &mut d,
                "collation",
                of.collation.clone().map(Bson::Document),
            );
            doc! { "delete": coll, "deletes": [d] }
        }
        Built::FindAndModify { of, filter, change } => {
            let args = &of.args;
            let mut d = doc! { "findAndModify": coll, "query": filter };
            match change {
                Some(s) => {
                    d.insert("update", s);
                    d.insert("new", args.return_after);
                }
                None => {
                    d.insert("remove", true);
                }
            }
            put(&mut d, "sort", args.sort.clone().map(Bson::Document));
            put(
                &mut d,
                "fields",
                args.projection.clone().map(Bson::Document),
            );
            put(&mut d, "upsert", args.upsert.map(Bson::Boolean));
            put(&mut d, "hint", args.hint.clone());
            d
        }
        Built::Insert { of, docs } => {
            let docs: Vec<Bson> = docs
                .into_iter()
                .filter_map(|d| Document::try_from(d.as_ref()).ok().map(Bson::Document))
                .collect();
            doc! { "insert": coll, "documents": docs, "ordered": of.ordered }
        }
        Built::EstimatedCount
        | Built::Remove { .. }
        | Built::Bulk { .. }
        | Built::Run(_)
        | Built::Assert { .. }
        | Built::Scan { .. }
        | Built::InsertSample(_)
        | Built::ClusterTime(_)
        | Built::Nop
        | Built::Skip => return None,
    })
}

/// Sets `k` when there is a value.
fn put(d: &mut Document, k: &str, v: Option<Bson>) {
    if let Some(v) = v {
        d.insert(k, v);
    }
}

/// A count or time the server takes as a 64-bit integer (the profile's bounds keep it below
/// `i64::MAX`; a larger one is sent as `i64::MAX`).
fn int64(n: u64) -> Bson {
    Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX))
}

/// An update or replace's command on the wire: one statement with its options.
fn update_wire(coll: &str, filter: Document, u: Bson, multi: bool, args: &WriteArgs) -> Document {
    let mut s = doc! { "q": filter, "u": u, "multi": multi };
    put(&mut s, "upsert", args.upsert.map(Bson::Boolean));
    put(
        &mut s,
        "arrayFilters",
        args.array_filters
            .clone()
            .map(|f| Bson::Array(f.into_iter().map(Bson::Document).collect())),
    );
    put(&mut s, "hint", args.hint.clone());
    put(
        &mut s,
        "collation",
        args.collation.clone().map(Bson::Document),
    );
    doc! { "update": coll, "updates": [s] }
}

/// A find's command on the wire: its filter and options.
pub(super) fn find_wire(coll: &str, verb: Verb, args: &FindArgs, filter: Document) -> Document {
    let mut d = doc! { "find": coll, "filter": filter };
    put(
        &mut d,
        "projection",
        args.projection.clone().map(Bson::Document),
    );
    put(&mut d, "let", args.let_vars.clone().map(Bson::Document));
    put(&mut d, "sort", args.sort.clone().map(Bson::Document));
    put(&mut d, "skip", args.skip.map(int64));
    put(&mut d, "limit", args.limit.map(Bson::Int64));
    put(&mut d, "hint", args.hint.clone());
    put(
        &mut d,
        "collation",
        args.collation.clone().map(Bson::Document),
    );
    if verb == Verb::FindOne {
        d.insert("singleBatch", true);
    }
    d
}
