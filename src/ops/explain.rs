//! The server's own judgement of the profile's templates, before any load: each read, update,
//! delete and findAndModify template, generated once, is sent to `explain`, which parses and
//! plans it without changing data. A refusal (a misspelled stage, an unknown operator) stops
//! the run with exit 2, naming group, operation, its line and the server's message. After the
//! setup (indexes made, preload in), the same explain gives each read its winning plan: the
//! index it uses or COLLSCAN, and keys and documents examined per document returned.
//!
//! Owns: explain commands and reading their plans. Never: sends the workload's operations.

use std::sync::Arc;

use mongodb::bson::{doc, Bson, Document};
use rand::SeedableRng;

use crate::error::Error;
use crate::plan::RunPlan;
pub(crate) use crate::summary::plans::QueryPlan;
use crate::workload::command::{Built, Command, TemplateOp, Verb};
use crate::workload::lookup::GroupLookup;
use crate::workload::request::CollectionDocs;
use crate::workload::template::{Cx, UserState};
use crate::workload::{Chooser, KeySpace, OpSpec};

/// What the explain check found: whether the server lacks explain (a warning).
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub(crate) warnings: Vec<String>,
}

/// Each of the plan's templates once (rate steps share their group's), with its row's label.
fn templates(plan: &RunPlan) -> Vec<(String, Arc<TemplateOp>)> {
    templates_of(plan.groups())
}

/// The templates of `groups`, each once, with its row's label.
fn templates_of<'p>(
    groups: impl Iterator<Item = &'p crate::plan::GroupPlan>,
) -> Vec<(String, Arc<TemplateOp>)> {
    let mut seen: Vec<(String, Arc<TemplateOp>)> = Vec::new();
    for g in groups {
        // A rate step's templates are its group's.
        let base = g.profile_name().to_string();
        let specs: Vec<&OpSpec> = if g.mix.is_empty() {
            vec![&g.op]
        } else {
            g.mix.iter().map(|(s, _)| s).collect()
        };
        for s in specs {
            let (ops, named): (Vec<&Arc<TemplateOp>>, bool) = match s {
                // The built-in kinds' filters are the tool's own, checked by its tests.
                OpSpec::Template(t) if t.desugared.is_some() => (Vec::new(), false),
                OpSpec::Template(t) => (vec![t], !g.mix.is_empty()),
                OpSpec::Steps(st) => (st.steps.iter().collect(), false),
            };
            for t in ops {
                if seen.iter().any(|(_, x)| Arc::ptr_eq(x, t) || x.at == t.at) {
                    continue;
                }
                let label = if named {
                    format!("{base}:{}", t.name)
                } else if matches!(s, OpSpec::Steps(_)) {
                    format!("{base} {}", t.name)
                } else {
                    base.clone()
                };
                seen.push((label, Arc::clone(t)));
            }
        }
    }
    seen
}

/// The explain command for one generated request; None for operations explain does not take
/// (inserts, estimatedDocumentCount, bulkWrite, commands).
fn explain_of(op: &TemplateOp, body: Built, verbosity: &str) -> Option<Document> {
    if matches!(op.command, Command::Insert(_)) {
        return None;
    }
    let inner = crate::workload::command::wire_command(op, body)?;
    Some(doc! { "explain": inner, "verbosity": verbosity })
}

/// One request of `op` as a user would make it, with `_id`s drawn from an empty key space (a
/// `^Key` gives null: nothing is preloaded yet when the check runs).
fn sample(plan: &RunPlan, op: &Arc<TemplateOp>, keys: &KeySpace) -> Built {
    sample_seeded(plan, op, keys, 7)
}

/// `sample` with the random stream of `seed`.
fn sample_seeded(plan: &RunPlan, op: &Arc<TemplateOp>, keys: &KeySpace, seed: u64) -> Built {
    let coll = &plan.collections[op.collection];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut pick = Chooser::new(Default::default(), Default::default());
    let mut lookup = GroupLookup {
        keys,
        pick: &mut pick,
        document: &coll.document,
    };
    let mut state = UserState::default();
    let mut cx = Cx {
        rng: &mut rng,
        lookup: &mut lookup,
        now_ms: crate::workload::lookup::now_ms(),
        user: 0,
        state: &mut state,
    };
    // A throwaway key space: the check must not take `_id`s from the run's.
    let scratch = KeySpace::default();
    op.build(
        &mut cx,
        &mut CollectionDocs {
            keys: &scratch,
            document: &coll.document,
        },
    )
    .built
}

/// Server errors that mean "this server has no explain for it", not "your query is wrong".
fn lacks_explain(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => {
            matches!(c.code, 59 | 115 | 352) || c.message.to_lowercase().contains("explain")
        }
        _ => false,
    }
}

/// Before anything is written: every template the server can explain, explained. A refusal is
/// a usage error (exit 2) naming group, operation, line and the server's message.
pub(crate) async fn check(plan: &RunPlan, client: &mongodb::Client) -> Result<Checked, Error> {
    let db = client.database(&plan.target.database);
    let mut out = Checked::default();
    let keys = KeySpace::default();
    for (label, op) in templates(plan) {
        let Some(cmd) = explain_of(&op, sample(plan, &op, &keys), "queryPlanner") else {
            continue;
        };
        match db.run_command(cmd).await {
            Ok(_) => {}
            Err(e) if lacks_explain(&e) => {
                out.warnings.push(format!(
                    "the server has no explain for {} ({}): its templates were not checked before the load ({})",
                    op.verb.name(),
                    label,
                    crate::driver_error::said(&e)
                ));
            }
            Err(e) => {
                let message = crate::driver_error::said(&e);
                if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(_)) {
                    // The operator the server names, where the template writes it; else the
                    // template's table.
                    let (line, place) = match operator_at(&plan.profile_text, op.line, &message) {
                        Some((line, column)) => (line, format!("{line}:{column}")),
                        None => (op.line, op.line.to_string()),
                    };
                    return Err(Error::Usage(format!(
                        "{origin}:{place}: the server refuses {verb} of group `{label}` ({at}): {message}\n  fix: correct the template at line {line}; nothing was run or written",
                        origin = plan.origin,
                        verb = op.verb.name(),
                        at = op.at,
                    )));
                }
                return Err(Error::Server(format!(
                    "cannot check the templates against the server: {message}"
                )));
            }
        }
    }
    super::listen::check(plan, client).await?;
    Ok(out)
}

/// The line and column where the template whose table begins at `table_line` writes an
/// operator the server's `message` names (`unknown operator: $eqq`, `Unrecognized pipeline
/// stage name: '$mtch'`): the first `$name` of the message found as a whole word from the
/// table's line until the next table.
fn operator_at(text: &str, table_line: usize, message: &str) -> Option<(usize, usize)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let operators = message.match_indices('$').filter_map(|(i, _)| {
        let rest = &message[i + 1..];
        let end = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
        (end > 0).then(|| &message[i..i + 1 + end])
    });
    let lines: Vec<&str> = text.lines().collect();
    let from = table_line.saturating_sub(1);
    let to = (from + 1..lines.len())
        .find(|&i| lines[i].trim_start().starts_with('['))
        .unwrap_or(lines.len());
    for op in operators {
        for (i, l) in lines.iter().enumerate().take(to).skip(from) {
            let hit = l
                .match_indices(op)
                .find(|(at, _)| !l[at + op.len()..].starts_with(word));
            if let Some((at, _)) = hit {
                return Some((i + 1, l[..at].chars().count() + 1));
            }
        }
    }
    None
}

/// After the setup: each read template's winning plan (executionStats), each write's
/// (queryPlanner: explain of a write never writes, but planning is all it needs).
pub(crate) async fn plans(
    plan: &RunPlan,
    client: &mongodb::Client,
    keys: &[&KeySpace],
    stage: usize,
) -> Vec<QueryPlan> {
    let db = client.database(&plan.target.database);
    let mut out = Vec::new();
    let Some(stage) = plan.stages.get(stage) else {
        return out;
    };
    for (label, op) in templates_of(stage.groups.iter()) {
        let reads = matches!(
            op.verb,
            Verb::Find | Verb::FindOne | Verb::Aggregate | Verb::CountDocuments | Verb::Distinct
        );
        let verbosity = if reads {
            "executionStats"
        } else {
            "queryPlanner"
        };
        let fallback = KeySpace::default();
        let k = keys.get(op.collection).copied().unwrap_or(&fallback);
        let Some(cmd) = explain_of(&op, sample(plan, &op, k), verbosity) else {
            continue;
        };
        let Ok(reply) = db.run_command(cmd).await else {
            continue;
        };
        let mut p = read_plan(&label, &op, &reply);
        if op.verb == Verb::Aggregate {
            p.pipeline_returned = pipeline_returned(&db, &op, sample(plan, &op, k)).await;
        }
        // One call's values may select more or fewer than most: the mean over several draws.
        if let Some((mean, calls)) = mean_returned(plan, &db, &op, k, PLAN_DRAWS).await {
            p.returned_per_call = Some(mean);
            p.draws = Some(calls);
        }
        out.push(p);
    }
    out
}

/// Each read template (find, findOne, aggregate, countDocuments) with its row's label and
/// `draws` requests drawn as the run's users draw them (another random stream each), as the
/// commands sent: what capture's check measures on its scratch server.
pub(crate) fn drawn_reads(
    plan: &RunPlan,
    keys: &[KeySpace],
    draws: u32,
) -> Vec<(String, Vec<Document>)> {
    let mut out = Vec::new();
    for (label, op) in templates(plan) {
        if !matches!(
            op.verb,
            Verb::Find | Verb::FindOne | Verb::Aggregate | Verb::CountDocuments
        ) {
            continue;
        }
        let fallback = KeySpace::default();
        let k = keys.get(op.collection).unwrap_or(&fallback);
        let cmds = (0..draws)
            .filter_map(|d| {
                crate::workload::command::wire_command(
                    &op,
                    sample_seeded(plan, &op, k, 1000 + u64::from(d)),
                )
            })
            .collect();
        out.push((label, cmds));
    }
    out
}

/// Keys examined, documents examined and documents returned of an explain's reply (its first
/// `executionStats`, wherever the server put it).
pub(crate) fn examined(reply: &Document) -> (Option<u64>, Option<u64>, Option<u64>) {
    let mut stats = Vec::new();
    find_key(reply, "executionStats", &mut stats);
    let num = |d: &Document, k: &str| -> Option<u64> {
        match d.get(k) {
            Some(Bson::Int32(n)) => u64::try_from(*n).ok(),
            Some(Bson::Int64(n)) => u64::try_from(*n).ok(),
            // A count the server sent as a double: whole and not negative, or not a count.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(Bson::Double(n)) if n.fract() == 0.0 && (0.0..1.8e19).contains(n) => {
                Some(*n as u64)
            }
            _ => None,
        }
    };
    let first = stats.first();
    (
        first.and_then(|d| num(d, "totalKeysExamined")),
        first.and_then(|d| num(d, "totalDocsExamined")),
        first.and_then(|d| num(d, "nReturned")),
    )
}

/// Requests drawn per read for the plan line's documents returned per call.
pub(crate) const PLAN_DRAWS: u32 = 30;

/// Longest time a read's draws take before they stop (at three or more): the mean is a sample,
/// not a benchmark, and every run and sweep step begins with it.
const DRAWS_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// A find's or aggregate's documents returned per call over `draws` requests (each of another
/// random stream), and the calls that answered; None for other operations or none answered.
async fn mean_returned(
    plan: &RunPlan,
    db: &mongodb::Database,
    op: &Arc<TemplateOp>,
    keys: &KeySpace,
    draws: u32,
) -> Option<(f64, u32)> {
    if !matches!(op.verb, Verb::Find | Verb::FindOne | Verb::Aggregate) {
        return None;
    }
    let (mut total, mut calls) = (0u64, 0u32);
    let started = std::time::Instant::now();
    for d in 0..draws {
        // A slow read (a scan, a heavy aggregate) is drawn fewer times, never under three:
        // the line says over how many.
        if calls >= 3 && started.elapsed() > DRAWS_BUDGET {
            break;
        }
        let body = sample_seeded(plan, op, keys, 1000 + u64::from(d));
        let n = if op.verb == Verb::Aggregate {
            pipeline_returned(db, op, body).await
        } else {
            let cmd = explain_of(op, body, "executionStats")?;
            match db.run_command(cmd).await {
                Ok(reply) => read_plan("", op, &reply).returned,
                Err(_) => None,
            }
        };
        if let Some(n) = n {
            total += n;
            calls += 1;
        }
    }
    // Documents returned by a few dozen calls: far below 2^52, exact as a float.
    #[allow(clippy::cast_precision_loss)]
    let total = total as f64;
    (calls > 0).then(|| (total / f64::from(calls), calls))
}

/// What one call of an aggregate returns, counted by running it once (the explain does not
/// say): None for a pipeline that writes (`$out`, `$merge`), one whose results do not fit a
/// first batch, or a refusal.
async fn pipeline_returned(db: &mongodb::Database, op: &TemplateOp, body: Built) -> Option<u64> {
    let mut cmd = crate::workload::command::wire_command(op, body)?;
    let writes = cmd.get_array("pipeline").ok()?.iter().any(|s| {
        s.as_document()
            .is_some_and(|s| s.contains_key("$out") || s.contains_key("$merge"))
    });
    if writes {
        return None;
    }
    cmd.insert("cursor", doc! { "batchSize": 100_000 });
    let reply = db.run_command(cmd).await.ok()?;
    let cursor = reply.get_document("cursor").ok()?;
    let more = cursor.get_i64("id").unwrap_or(0) != 0;
    if more {
        if let (Ok(id), Ok(ns)) = (cursor.get_i64("id"), cursor.get_str("ns")) {
            let coll = ns.split_once('.').map_or(ns, |(_, c)| c);
            let _ = db
                .run_command(doc! { "killCursors": coll, "cursors": [id] })
                .await;
        }
        return None;
    }
    u64::try_from(cursor.get_array("firstBatch").ok()?.len()).ok()
}

/// The winning plan's access stages and the execution counts, wherever the server put them
/// (classic `queryPlanner.winningPlan`, SBE's `winningPlan.queryPlan`, an aggregation's
/// `stages[0].$cursor`).
fn read_plan(label: &str, op: &TemplateOp, reply: &Document) -> QueryPlan {
    let mut stages = Vec::new();
    let mut indexes = Vec::new();
    let mut winning = Vec::new();
    find_key(reply, "winningPlan", &mut winning);
    for w in &winning {
        walk(w, &mut stages, &mut indexes);
    }
    let access: Vec<String> = stages
        .iter()
        .filter(|s| {
            matches!(
                s.as_str(),
                "COLLSCAN"
                    | "IXSCAN"
                    | "EXPRESS_IXSCAN"
                    | "IDHACK"
                    | "EXPRESS_IDHACK"
                    | "EOF"
                    | "COUNT_SCAN"
                    | "DISTINCT_SCAN"
                    | "TEXT_MATCH"
                    | "GEO_NEAR_2DSPHERE"
            )
        })
        .cloned()
        .collect();
    let mut plan = if access.is_empty() {
        stages.first().cloned().unwrap_or_else(|| "unknown".into())
    } else {
        let mut a = access.clone();
        a.dedup();
        a.join(" + ")
    };
    if !indexes.is_empty() {
        plan = format!("{plan} {}", indexes.join(", "));
    }
    let (keys_examined, docs_examined, returned) = examined(reply);
    QueryPlan {
        label: crate::metrics::Label::parse(label),
        operation: op.verb.name().to_string(),
        collection: op.collection_name.clone(),
        collscan: stages.iter().any(|s| s == "COLLSCAN"),
        plan,
        indexes,
        keys_examined,
        docs_examined,
        returned,
        pipeline_returned: None,
        returned_per_call: None,
        draws: None,
    }
}

/// Every document under key `key`, anywhere in `d`.
fn find_key(d: &Document, key: &str, out: &mut Vec<Document>) {
    for (k, v) in d {
        match v {
            Bson::Document(inner) if k == key => out.push(inner.clone()),
            Bson::Document(inner) => find_key(inner, key, out),
            Bson::Array(a) => {
                for x in a {
                    if let Bson::Document(inner) = x {
                        find_key(inner, key, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The stage names (`stage`) and index names (`indexName`) of a plan tree, top first.
fn walk(d: &Document, stages: &mut Vec<String>, indexes: &mut Vec<String>) {
    if let Ok(s) = d.get_str("stage") {
        stages.push(s.to_string());
    }
    if let Ok(i) = d.get_str("indexName") {
        if !indexes.iter().any(|x| x == i) {
            indexes.push(i.to_string());
        }
    }
    for (_, v) in d {
        match v {
            Bson::Document(inner) => walk(inner, stages, indexes),
            Bson::Array(a) => {
                for x in a {
                    if let Bson::Document(inner) = x {
                        walk(inner, stages, indexes);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_line_and_column_of_the_operator_it_names() {
        let text = "name = \"p\"\n[[group]]\nname = \"g\"\n[group.find]\nlimit = 10\nfilter = { city = { \"$eqq\" = \"Rome\" } }\n[[group]]\nfilter = { \"$eqq\" = 1 }\n";
        assert_eq!(
            operator_at(text, 4, "unknown operator: $eqq"),
            Some((6, 22))
        );
        // Only within its own table, and only the whole word.
        assert_eq!(operator_at(text, 4, "unknown operator: $eq"), None);
        assert_eq!(operator_at(text, 4, "no operator named"), None);
    }

    #[test]
    fn a_classic_and_an_sbe_plan_read_the_same() {
        let classic = doc! {
            "queryPlanner": { "winningPlan": { "stage": "LIMIT", "inputStage": { "stage": "FETCH", "inputStage": { "stage": "IXSCAN", "indexName": "status_1_created_-1" } } } },
            "executionStats": { "nReturned": 20, "totalKeysExamined": 20, "totalDocsExamined": 20 }
        };
        let sbe = doc! {
            "queryPlanner": { "winningPlan": { "queryPlan": { "stage": "FETCH", "inputStage": { "stage": "IXSCAN", "indexName": "status_1_created_-1" } }, "slotBasedPlan": {} } },
            "executionStats": { "nReturned": 20, "totalKeysExamined": 20, "totalDocsExamined": 20 }
        };
        let op = TemplateOp {
            name: "recent".into(),
            verb: Verb::Find,
            at: "group[0].find".into(),
            line: 1,
            collection: 0,
            collection_name: "orders".into(),
            command: Command::EstimatedCount,
            desugared: None,
        };
        for reply in [classic, sbe] {
            let p = read_plan("recent", &op, &reply);
            assert_eq!(p.plan, "IXSCAN status_1_created_-1");
            assert!(!p.collscan);
            assert_eq!(
                (p.keys_examined, p.docs_examined, p.returned),
                (Some(20), Some(20), Some(20))
            );
        }
        let scan = doc! { "queryPlanner": { "winningPlan": { "stage": "COLLSCAN" } } };
        let p = read_plan("recent", &op, &scan);
        assert_eq!(p.plan, "COLLSCAN");
        assert!(p.collscan);
        assert!(
            p.line().contains("reads the whole collection"),
            "{}",
            p.line()
        );
    }
}
