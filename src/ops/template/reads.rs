//! The senders of reads: find (a cursor drained), aggregate, and the counts.

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) async fn find(
    on: &On<'_>,
    of: &Find,
    filter: Document,
    shape: Option<&Document>,
    limit: Option<i64>,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    let count_first = of.count_first;
    let made;
    let args = match shape {
        Some(shape) => {
            made = of.args.made(Some(shape), None);
            &made
        }
        None => &of.args,
    };
    // The filter goes out twice when the find counts first.
    out.sent = on.size(&filter) * (1 + u32::from(count_first));
    if count_first {
        send!(session, on.coll.count_documents(filter.clone()))?;
    }
    let cursor = open_find(on.coll, filter, args, limit, session).await?;
    drain(cursor, session, on.measure, out, result).await
}

/// A find's cursor on `coll` with `args` (and a drawn `limit` over theirs).
pub(super) async fn open_find(
    coll: &Collection<RawDocumentBuf>,
    filter: Document,
    args: &FindArgs,
    limit: Option<i64>,
    session: &mut Session<'_>,
) -> mongodb::error::Result<Cursor> {
    let options = mongodb::options::FindOptions::builder()
        .projection(args.projection.clone())
        .let_vars(args.let_vars.clone())
        .sort(args.sort.clone())
        .skip(args.skip)
        .limit(limit.or(args.limit))
        .batch_size(args.batch_size)
        .hint(hint(&args.hint))
        .collation(collation(&args.collation))
        .max_time(args.max_time_ms.map(std::time::Duration::from_millis))
        .build();
    let find = coll.find(filter).with_options(options);
    Ok(match session.as_deref_mut() {
        Some(s) => Cursor::In(find.session(s).await?),
        None => Cursor::Out(find.await?),
    })
}

/// An aggregate's cursor on `coll` with `of`'s options.
pub(super) async fn open_aggregate(
    coll: &Collection<RawDocumentBuf>,
    of: &Aggregate,
    stages: Vec<Document>,
    session: &mut Session<'_>,
) -> mongodb::error::Result<Cursor> {
    let mut agg = coll.aggregate(stages).with_type::<RawDocumentBuf>();
    if let Some(a) = of.allow_disk_use {
        agg = agg.allow_disk_use(a);
    }
    if let Some(b) = of.batch_size {
        agg = agg.batch_size(b);
    }
    if let Some(h) = hint(&of.hint) {
        agg = agg.hint(h);
    }
    if let Some(ms) = of.max_time_ms {
        agg = agg.max_time(std::time::Duration::from_millis(ms));
    }
    Ok(match session.as_deref_mut() {
        Some(s) => Cursor::In(agg.session(s).await?),
        None => Cursor::Out(agg.await?),
    })
}

pub(super) async fn aggregate(
    on: &On<'_>,
    of: &Aggregate,
    stages: Vec<Document>,
    out: &mut Outcome,
    result: &mut Keep<'_>,
    session: &mut Session<'_>,
) -> Result {
    if on.measure {
        out.sent = stages.iter().map(bytes).sum();
    }
    let cursor = open_aggregate(on.coll, of, stages, session).await?;
    drain(cursor, session, on.measure, out, result).await
}

/// countDocuments: a number, not documents.
pub(super) async fn count(
    on: &On<'_>,
    of: &Count,
    filter: Document,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    out.sent = on.size(&filter);
    let mut count = on.coll.count_documents(filter);
    if let Some(s) = of.skip {
        count = count.skip(s);
    }
    if let Some(l) = of.limit {
        count = count.limit(l);
    }
    if let Some(h) = hint(&of.hint) {
        count = count.hint(h);
    }
    out.counted = send!(session, count)?;
    out.matched = out.counted > 0;
    Ok(())
}

/// estimatedDocumentCount: metadata, not a read of documents, so it takes no session (nor a
/// transaction).
pub(super) async fn estimated_count(on: &On<'_>, out: &mut Outcome) -> Result {
    out.counted = on.coll.estimated_document_count().await?;
    out.matched = out.counted > 0;
    Ok(())
}

/// distinct: the values of one field.
pub(super) async fn distinct(
    on: &On<'_>,
    of: &Distinct,
    filter: Document,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    out.sent = on.size(&filter);
    let values = send!(session, on.coll.distinct(&of.key, filter))?;
    out.returned = n_docs(values.len());
    out.matched = !values.is_empty();
    Ok(())
}
