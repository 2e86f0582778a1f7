//! capture's check of the replay's work: each read of the profile measured per call twice, the
//! same way: on the source, its own commands as the application sent them (up to `DRAWS` per
//! shape, sent again: reads only, nothing written), and on a scratch embedded server holding
//! the profile's preload, as many requests drawn as the run's users draw them. Per call:
//! documents returned, documents and keys examined (explain's `executionStats`), and counted
//! (a count's value, or the documents that entered an aggregate's first `$group`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mongodb::bson::{doc, Bson, Document};
use tokio_util::sync::CancellationToken;

use crate::capture::{emit, Call, Work};

/// Calls measured per read on each side.
pub(crate) const DRAWS: u32 = 100;

/// Longest time one read's calls take on one side before they stop (at three or more): the
/// line says over how many.
const BUDGET: Duration = Duration::from_secs(5);

/// Longest a measured command may run on a server (its `maxTimeMS`): the check must never load
/// the source with a read it takes minutes on.
const MAX_TIME_MS: i64 = 5_000;

/// Why the replay's side was not checked.
pub(super) enum Unchecked {
    /// No server program to start (or it would not start).
    NoServer(String),
    /// The profile's setup or plan failed on the scratch server: what the profile needs fixed.
    Refused(String),
}

/// Measures every emitted read on the source (`source`, when the capture has a client of it)
/// and on a scratch server holding the profile's preload; fills each shape's `source_work`,
/// `replay_work` and `replay_returned_per_call`.
pub(super) async fn check(
    profile_path: &Path,
    captured: &mut emit::Captured,
    source: Option<&mongodb::Client>,
    server_bin: Option<PathBuf>,
    stop: &CancellationToken,
) -> Result<(), Unchecked> {
    let loaded = crate::plan::profile::load(&profile_path.to_string_lossy())
        .map_err(|e| Unchecked::Refused(e.to_string()))?;
    let plan = crate::plan::RunPlan::build(&loaded, &Default::default())
        .map_err(|e| Unchecked::Refused(e.to_string()))?;
    errln!("capture: checking the work per call of each read, on the source (its own commands, read only) and on a scratch server with the profile's preload");
    // The two sides at once: they are different servers.
    let reads: Vec<(usize, String, Vec<Document>)> = captured
        .shapes
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.emitted.starts_with("not emitted") && !s.examples.is_empty())
        .map(|(i, s)| {
            let db = s.namespace.split_once('.').map_or("", |(d, _)| d);
            (i, db.to_string(), s.examples.clone())
        })
        .collect();
    let source_side = async {
        let mut out = Vec::new();
        if let Some(client) = source {
            for (i, db, examples) in &reads {
                let calls = measure_all(&client.database(db), examples, stop).await;
                out.push((*i, Work::of(&calls)));
            }
        }
        out
    };
    let (measured_source, measured) =
        tokio::join!(source_side, replay_side(&plan, server_bin, stop));
    for (i, work) in measured_source {
        captured.shapes[i].source_work = work;
    }
    for (label, work) in measured? {
        if let Some(s) = captured.shapes.iter_mut().find(|s| s.emitted == label) {
            s.replay_returned_per_call = work.map(|w| w.returned.mean);
            s.replay_work = work;
        }
    }
    Ok(())
}

/// Each read of `plan` measured on a scratch server holding its setup: its row's label and
/// its work per call.
async fn replay_side(
    plan: &crate::plan::RunPlan,
    server_bin: Option<PathBuf>,
    stop: &CancellationToken,
) -> Result<Vec<(String, Option<Work>)>, Unchecked> {
    let server = std::sync::Arc::new(
        crate::server::EmbeddedServer::launch(server_bin, Vec::new(), None)
            .await
            .map_err(|e| Unchecked::NoServer(e.to_string()))?,
    );
    let measured = async {
        let connected = crate::ops::connect::connect(&server.uri(), 4, false)
            .await
            .map_err(|e| Unchecked::NoServer(e.to_string()))?;
        let backend = crate::ops::mongo::MongoBackend::new(&connected.client, plan);
        // capture's own scratch server: whatever is there, it made.
        let prepared = crate::ops::setup::prepare(
            plan,
            &backend.setup,
            1,
            stop,
            (crate::ops::setup::Foreign::Drop, &|_, _| {}),
            None,
        )
        .await
        .map_err(|e| Unchecked::Refused(setup_refused(&e.to_string())))?;
        let db = connected.client.database(&plan.target.database);
        let mut out = Vec::new();
        for (label, cmds) in crate::ops::explain::drawn_reads(plan, &prepared.keys, DRAWS) {
            let calls = measure_all(&db, &cmds, stop).await;
            out.push((label, Work::of(&calls)));
        }
        Ok::<_, Unchecked>(out)
    }
    .await;
    server.shut_down().await;
    measured
}

/// The setup's refusal on the scratch server, said as what it is: a unique index the
/// documents' values repeat on names its index and field.
fn setup_refused(message: &str) -> String {
    if message.contains("E11000") || message.contains("duplicate key") {
        format!(
            "the profile's preload repeats a value under a unique index: {message}\n  fix: give that index's field in [collection.document] values that never repeat, e.g. {{ \"^FormatString\" = {{ format = \"name-%d\", withArgs = [{{ \"^Id\" = {{}} }}] }} }} (this is a bug of capture: please report it)"
        )
    } else {
        format!("the profile's setup failed on the scratch server: {message}")
    }
}

/// `cmds` measured one by one, until `BUDGET` has passed (at three calls or more) or `stop`.
async fn measure_all(
    db: &mongodb::Database,
    cmds: &[Document],
    stop: &CancellationToken,
) -> Vec<Call> {
    let started = Instant::now();
    let mut calls = Vec::new();
    for cmd in cmds {
        if stop.is_cancelled() || (calls.len() >= 3 && started.elapsed() > BUDGET) {
            break;
        }
        if let Some(c) = measure(db, cmd).await {
            calls.push(c);
        }
    }
    calls
}

/// A read command as the source received it, without what was the session's or the driver's
/// (`lsid`, `txnNumber`, `$clusterTime`, `$db`, read concern, ...): the same read, alone.
fn alone(cmd: &Document) -> Document {
    let mut out = Document::new();
    for (k, v) in cmd {
        let session = matches!(
            k.as_str(),
            "lsid"
                | "txnNumber"
                | "autocommit"
                | "startTransaction"
                | "readConcern"
                | "writeConcern"
                | "apiVersion"
                | "apiStrict"
                | "apiDeprecationErrors"
        );
        if !session && !k.starts_with('$') {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The number of documents `pipeline` gives on collection `coll`, counted by the server (a
/// `$count` appended, so none is sent back).
async fn count_of(db: &mongodb::Database, coll: &Bson, pipeline: &[Bson]) -> Option<u64> {
    let mut stages = pipeline.to_vec();
    stages.push(Bson::Document(doc! { "$count": "n" }));
    let reply = db
        .run_command(doc! { "aggregate": coll.clone(), "pipeline": stages, "cursor": {}, "maxTimeMS": MAX_TIME_MS })
        .await
        .ok()?;
    let batch = reply
        .get_document("cursor")
        .ok()?
        .get_array("firstBatch")
        .ok()?;
    match batch.first().and_then(Bson::as_document) {
        None => Some(0),
        Some(d) => crate::capture::as_i64(d.get("n")?).and_then(|n| u64::try_from(n).ok()),
    }
}

/// One call of a read, measured: a find's or count's explain (`executionStats`); an aggregate's
/// explain, its results counted and, where it groups, the documents entering its first
/// `$group`; a count's value. None for anything else, a pipeline that writes, or a refusal.
pub(super) async fn measure(db: &mongodb::Database, cmd: &Document) -> Option<Call> {
    let mut cmd = alone(cmd);
    // A read the source takes long on is cut by the server, not left to run.
    cmd.insert("maxTimeMS", MAX_TIME_MS);
    let verb = cmd.keys().next()?.clone();
    let explain = |c: Document| doc! { "explain": c, "verbosity": "executionStats" };
    match verb.as_str() {
        "find" => {
            let reply = db.run_command(explain(cmd)).await.ok()?;
            let (keys, docs, returned) = crate::ops::explain::examined(&reply);
            Some(Call {
                returned: returned?,
                docs_examined: docs,
                keys_examined: keys,
                counted: None,
            })
        }
        "aggregate" => {
            let coll = cmd.get("aggregate")?.clone();
            let pipeline = cmd.get_array("pipeline").ok()?.clone();
            let writes = pipeline.iter().any(|s| {
                s.as_document()
                    .is_some_and(|s| s.contains_key("$out") || s.contains_key("$merge"))
            });
            if writes {
                return None;
            }
            let (keys, docs, _) = match db.run_command(explain(cmd)).await {
                Ok(reply) => crate::ops::explain::examined(&reply),
                Err(_) => (None, None, None),
            };
            let returned = count_of(db, &coll, &pipeline).await?;
            let group = pipeline
                .iter()
                .position(|s| s.as_document().is_some_and(|s| s.contains_key("$group")));
            let counted = match group {
                Some(i) => Some(count_of(db, &coll, &pipeline[..i]).await?),
                None => None,
            };
            Some(Call {
                returned,
                docs_examined: docs,
                keys_examined: keys,
                counted,
            })
        }
        "count" => {
            let (keys, docs, _) = match db.run_command(explain(cmd.clone())).await {
                Ok(reply) => crate::ops::explain::examined(&reply),
                Err(_) => (None, None, None),
            };
            let reply = db.run_command(cmd).await.ok()?;
            let n = crate::capture::as_i64(reply.get("n")?).and_then(|n| u64::try_from(n).ok())?;
            Some(Call {
                returned: 1,
                docs_examined: docs,
                keys_examined: keys,
                counted: Some(n),
            })
        }
        _ => None,
    }
}
