//! The senders of reads: find (a cursor drained), aggregate, and the counts.

use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) async fn find(
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

pub(super) async fn aggregate(
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
pub(super) async fn count(
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
