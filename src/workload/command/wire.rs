//! The command documents as the server receives them (for explain and capture): each verb's
//! request built from an operation's generated body.

use super::*;

/// The database command a request is on the wire (what `explain` takes, and what an
/// unacknowledged write is sent as): find, aggregate, count, distinct, insert, update, delete,
/// findAndModify; None for estimatedDocumentCount, bulkWrite and commands.
#[expect(clippy::too_many_lines, reason = "120 lines: to split (issue 50)")]
pub(crate) fn wire_command(op: &TemplateOp, body: Body) -> Option<Document> {
    let coll = op.collection_name.as_str();
    let put = |d: &mut Document, k: &str, v: Option<Bson>| {
        if let Some(v) = v {
            d.insert(k, v);
        }
    };
    let inner = match (&op.command, body) {
        (Command::Find { args, .. }, Body::Shaped(filter, shape)) => {
            find_wire(coll, op.verb, &args.shaped(&shape), filter)
        }
        (Command::Find { args, .. }, Body::Filter(filter)) => {
            find_wire(coll, op.verb, args, filter)
        }
        (
            Command::Aggregate {
                allow_disk_use,
                hint,
                max_time_ms,
                ..
            },
            Body::Pipeline(stages),
        ) => {
            let mut d = doc! { "aggregate": coll, "pipeline": stages, "cursor": {} };
            put(&mut d, "allowDiskUse", allow_disk_use.map(Bson::Boolean));
            put(&mut d, "hint", hint.clone());
            put(
                &mut d,
                "maxTimeMS",
                max_time_ms.map(|n| Bson::Int64(n as i64)),
            );
            d
        }
        (
            Command::Count {
                skip, limit, hint, ..
            },
            Body::Filter(filter),
        ) => {
            let mut d = doc! { "count": coll, "query": filter };
            put(&mut d, "skip", skip.map(|n| Bson::Int64(n as i64)));
            put(&mut d, "limit", limit.map(|n| Bson::Int64(n as i64)));
            put(&mut d, "hint", hint.clone());
            d
        }
        (Command::Distinct { key, .. }, Body::Filter(filter)) => {
            doc! { "distinct": coll, "key": key.as_str(), "query": filter }
        }
        (Command::Update { args, .. }, Body::FilterAnd(filter, update))
        | (Command::Replace { args, .. }, Body::FilterAnd(filter, update)) => {
            let mut u = doc! {
                "q": filter,
                "u": update,
                "multi": op.verb == Verb::UpdateMany,
            };
            put(&mut u, "upsert", args.upsert.map(Bson::Boolean));
            put(
                &mut u,
                "arrayFilters",
                args.array_filters
                    .clone()
                    .map(|f| Bson::Array(f.into_iter().map(Bson::Document).collect())),
            );
            put(&mut u, "hint", args.hint.clone());
            put(
                &mut u,
                "collation",
                args.collation.clone().map(Bson::Document),
            );
            doc! { "update": coll, "updates": [u] }
        }
        (
            Command::Delete {
                hint, collation, ..
            },
            Body::Filter(filter),
        ) => {
            let mut d = doc! {
                "q": filter,
                "limit": if op.verb == Verb::DeleteMany { 0 } else { 1 },
            };
            put(&mut d, "hint", hint.clone());
            put(&mut d, "collation", collation.clone().map(Bson::Document));
            doc! { "delete": coll, "deletes": [d] }
        }
        (Command::FindAndModify { args, change, .. }, body) => {
            let (filter, second) = match body {
                Body::Filter(f) => (f, None),
                Body::FilterAnd(f, s) => (f, Some(s)),
                _ => return None,
            };
            let mut d = doc! { "findAndModify": coll, "query": filter };
            match (change, second) {
                (Some(_), Some(s)) => {
                    d.insert("update", s);
                    d.insert("new", args.return_after);
                }
                _ => {
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
        (Command::Insert { ordered, .. }, Body::Docs(docs)) => {
            let docs: Vec<Bson> = docs
                .into_iter()
                .filter_map(|d| Document::try_from(d.as_ref()).ok().map(Bson::Document))
                .collect();
            doc! { "insert": coll, "documents": docs, "ordered": *ordered }
        }
        _ => return None,
    };
    Some(inner)
}

/// A find's command on the wire: its filter and options.
pub(super) fn find_wire(coll: &str, verb: Verb, args: &FindArgs, filter: Document) -> Document {
    let put = |d: &mut Document, k: &str, v: Option<Bson>| {
        if let Some(v) = v {
            d.insert(k, v);
        }
    };
    let mut d = doc! { "find": coll, "filter": filter };
    put(
        &mut d,
        "projection",
        args.projection.clone().map(Bson::Document),
    );
    put(&mut d, "let", args.let_vars.clone().map(Bson::Document));
    put(&mut d, "sort", args.sort.clone().map(Bson::Document));
    put(&mut d, "skip", args.skip.map(|n| Bson::Int64(n as i64)));
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
