//! `insertSample`: genny's SamplingLoader (`src/cast_core/src/SamplingLoader.cpp`): a sample of
//! the collection taken once, at the first operation that needs it (so it sees what earlier
//! stages loaded), `[{$sample: {size}}, {$project: {_id: 0}}, ...pipeline]`, retried up to three
//! times on the server's 28799 ($sample found a duplicate), refused when it holds fewer
//! documents than asked; then each operation inserts `batches` unordered insertMany of `batch`
//! copies, taken in turn from the sample's first (the server gives each its `_id`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::*;
use crate::driver_error::ReplyRefused;
use crate::workload::command::InsertSample;

type Sample = Arc<Vec<RawDocumentBuf>>;

/// The run's samples by name, each taken once.
#[derive(Default)]
pub(crate) struct Samples(Mutex<HashMap<String, Arc<tokio::sync::OnceCell<Sample>>>>);

impl Samples {
    fn cell(&self, name: &str) -> Arc<tokio::sync::OnceCell<Sample>> {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(map.entry(name.to_string()).or_default())
    }
}

/// genny's retries of a `$sample` that met a duplicate (SERVER-29446).
const SAMPLE_TRIES: usize = 3;

async fn take(on: &On<'_>, of: &InsertSample) -> mongodb::error::Result<Sample> {
    let mut pipeline = vec![
        doc! { "$sample": { "size": i64::from(of.size) } },
        doc! { "$project": { "_id": 0 } },
    ];
    pipeline.extend(of.pipeline.iter().cloned());
    let mut tries = 0;
    let docs = loop {
        tries += 1;
        let read = async {
            let mut cursor = on
                .coll
                .aggregate(pipeline.clone())
                .with_type::<RawDocumentBuf>()
                .await?;
            let mut docs = Vec::new();
            while cursor.advance().await? {
                docs.push(cursor.current().to_raw_document_buf());
            }
            Ok::<_, mongodb::error::Error>(docs)
        };
        match read.await {
            Ok(docs) => break docs,
            Err(e)
                if tries < SAMPLE_TRIES
                    && crate::driver_error::server_error(&e).is_some_and(|s| s.code == 28799) => {}
            Err(e) => return Err(e),
        }
    };
    if docs.len() < usize::try_from(of.size).unwrap_or(usize::MAX) {
        return Err(mongodb::error::Error::custom(ReplyRefused(format!(
            "the sample of `{}` found {} of the {} documents asked for: the collection holds fewer, or the pipeline leaves fewer (genny refuses it too)",
            on.coll.name(),
            docs.len(),
            of.size
        ))));
    }
    Ok(Arc::new(docs))
}

pub(super) async fn insert_sample(
    on: &On<'_>,
    of: &InsertSample,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    let sample = on
        .shared
        .samples
        .cell(&of.sample)
        .get_or_try_init(|| take(on, of))
        .await?
        .clone();
    let batch = usize::try_from(of.batch).unwrap_or(usize::MAX);
    for k in 0..usize::try_from(of.batches).unwrap_or(usize::MAX) {
        let docs: Vec<RawDocumentBuf> = (0..batch)
            .map(|i| sample[(k * batch + i) % sample.len()].clone())
            .collect();
        if on.measure {
            out.sent = out
                .sent
                .saturating_add(docs.iter().map(|d| len(d.as_bytes())).sum::<u32>());
        }
        let n = docs.len();
        send!(session, on.coll.insert_many(docs).ordered(false))?;
        out.inserted += n_docs(n);
    }
    out.matched = true;
    Ok(())
}
