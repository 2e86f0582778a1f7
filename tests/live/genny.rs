//! genny's workloads run as they are: phases as barriers, `Repeat` per thread, `Blocking: None`,
//! `GlobalRate`, a Loader's documents and a CrudActor's operations, with the server's documents
//! and the sample log as the witnesses.

use crate::common;

use common::*;
use mongodb::bson::doc;

/// Writes `text` as `name` in `dir`; its path.
pub(crate) fn workload(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// (group, start_us, end_us) of every sample in the run's samples.tsv.
fn samples(out: &std::path::Path) -> Vec<(String, u64, u64)> {
    let text = std::fs::read_to_string(out.join("samples.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let start: u64 = f[0].parse().unwrap();
            let elapsed: u64 = f[1].parse().unwrap();
            (f[2].to_string(), start, start + elapsed)
        })
        .collect()
}

#[test]
fn phases_are_barriers_repeat_counts_per_thread_and_a_background_actor_stops_with_its_phase() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // genny's HelloWorld-MultiplePhases, shorter, with a pause so the timed actor's count is
    // bounded.
    let path = workload(
        dir.path(),
        "phases.yml",
        "SchemaVersion: 2018-07-01\nActors:\n\
         - Name: A\n  Type: HelloWorld\n  Threads: 3\n  Phases:\n\
         \x20 - {Duration: 1 second, SleepAfter: 1 millisecond}\n\
         \x20 - {Blocking: None, SleepAfter: 1 millisecond}\n\
         - Name: B\n  Type: HelloWorld\n  Threads: 2\n  Phases:\n\
         \x20 - {Repeat: 100}\n\
         \x20 - {Repeat: 1e2, SleepBefore: 2 milliseconds}\n",
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    // Repeat is per thread: 2 threads x 100.
    assert_eq!(row(&summary, "B.0")["samples"], 200);
    assert_eq!(row(&summary, "B.1")["samples"], 200, "1e2 read as 100");
    let a0 = row(&summary, "A.0")["samples"].as_u64().unwrap();
    assert!(
        (300..=3 * 1000 + 3).contains(&a0),
        "3 threads for 1 s with a 1 ms pause after each: {a0}"
    );
    let s = samples(&out);
    let end_of = |g: &str| s.iter().filter(|x| x.0 == g).map(|x| x.2).max().unwrap();
    let start_of = |g: &str| s.iter().filter(|x| x.0 == g).map(|x| x.1).min().unwrap();
    // Phase 1 starts only when every actor holding phase 0 is done (A's second, B's 200).
    let phase0_end = end_of("A.0").max(end_of("B.0"));
    assert!(start_of("A.1") >= phase0_end && start_of("B.1") >= phase0_end);
    assert!(
        end_of("A.0") >= start_of("A.0") + 900_000,
        "A held phase 0 for its second"
    );
    // The background actor stops when B, which holds phase 1, is done: its last operation
    // began before then (and ended within one pause and one operation).
    let b1_end = end_of("B.1");
    let a1_last_start = s
        .iter()
        .filter(|x| x.0 == "A.1")
        .map(|x| x.1)
        .max()
        .unwrap();
    // (The phase closes when B's last user has ended, just after its last operation: an
    // operation of A may begin in between, not later than 20 ms after.)
    assert!(
        a1_last_start <= b1_end + 20_000,
        "A.1 began an operation {} us after phase 1 closed",
        a1_last_start.saturating_sub(b1_end)
    );
    // B's 200 operations with a 2 ms pause before each take at least 200 ms per thread...
    assert!(b1_end - start_of("B.1") >= 190_000);
    // ... and A acted in the background for that long.
    assert!(row(&summary, "A.1")["samples"].as_u64().unwrap() >= 50);
}

#[test]
fn a_loaders_documents_and_a_crud_actors_writes_are_what_the_server_holds() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_crud");
    let path = workload(
        dir.path(),
        "crud.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Load\n  Type: Loader\n  Threads: 2\n  Phases:\n\
             \x20 - Repeat: 1\n    Database: {db}\n    Threads: 2\n    CollectionCount: 2\n    DocumentCount: 1000\n    BatchSize: 100\n\
             \x20   Document: {{x: {{^RandomInt: {{min: 0, max: 9}}}}, s: {{^RandomString: {{length: 8}}}}}}\n\
             \x20   Indexes: [{{keys: {{x: 1}}}}]\n\
             \x20 - {{Nop: true}}\n\
             - Name: Crud\n  Type: CrudActor\n  Threads: 2\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - Repeat: 50\n    Collection: Collection1\n    Operations:\n\
             \x20   - {{OperationName: insertOne, OperationCommand: {{Document: {{x: 100}}}}}}\n\
             \x20   - {{OperationName: find, OperationMetricsName: FindX, OperationCommand: {{Filter: {{x: 100}}, Options: {{Limit: 5}}}}}}\n\
             \x20   - {{OperationName: updateOne, OperationCommand: {{Filter: {{x: 100}}, Update: {{$inc: {{n: 1}}}}}}}}\n\
             - Name: Count\n  Type: RunCommand\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - Repeat: 3\n    Operation: {{OperationMetricsName: Ping, OperationCommand: {{ping: 1}}}}\n"
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    // The Loader's documents, by the server's count.
    assert_eq!(server.count(&db, "Collection0", doc! {}), 1000);
    // ... and the CrudActor's inserts on top: 2 threads x 50.
    assert_eq!(server.count(&db, "Collection1", doc! {}), 1000 + 100);
    assert_eq!(server.count(&db, "Collection1", doc! { "x": 100 }), 100);
    // Its updates: each incremented one document's `n`, 100 in all.
    let n: Vec<_> = server.aggregate(
        &db,
        "Collection1",
        vec![doc! { "$group": { "_id": null, "n": { "$sum": "$n" } } }],
    );
    assert_eq!(
        n[0].get_i32("n")
            .map(i64::from)
            .or_else(|_| n[0].get_i64("n"))
            .unwrap(),
        100
    );
    // Rows as genny names its metrics: each operation of the actor.
    for step in ["Crud:insertOne", "Crud:FindX", "Crud:updateOne"] {
        assert_eq!(row(&summary, step)["samples"], 100, "{step}");
        assert_eq!(row(&summary, step)["errors"], 0, "{step}");
    }
    assert_eq!(row(&summary, "Count:Ping")["samples"], 3);
    validate_schema(&summary);
    // rollups.json: the same rows under genny's names.
    let rollups = read_json(&out.join("rollups.json"));
    let find = &rollups["runs"][0]["rollups"]["Crud.FindX"];
    assert_eq!(find["OperationsTotal"], 100);
    assert_eq!(find["WorkersMax"], 2);
    assert_eq!(find["ErrorsTotal"], 0);
}

#[test]
fn a_global_rate_holds_its_rate_by_the_servers_count() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_rate");
    let path = workload(
        dir.path(),
        "rate.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Writer\n  Type: CrudActor\n  Threads: 4\n  Database: {db}\n  Phases:\n\
             \x20 - Duration: 2 seconds\n    GlobalRate: 1 per 2 milliseconds\n    Collection: c\n\
             \x20   Operations: [{{OperationName: insertOne, OperationCommand: {{Document: {{a: 1}}}}}}]\n"
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &["--no-samples"]);
    let inserted = server.count(&db, "c", doc! {}) as f64;
    assert!(
        (inserted - 1000.0).abs() <= 50.0,
        "500/s for 2 s is 1000 inserts within 5 %, the server holds {inserted}"
    );
    assert_eq!(
        row(&summary, "Writer")["samples"].as_f64().unwrap(),
        inserted
    );
}

#[test]
fn a_background_actor_at_a_global_rate_keeps_its_rate_and_stops_when_its_phase_closes() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_bg_rate");
    // genny's MixedMultiDeletes shape: a writer at a GlobalRate in the background (open loop)
    // while another actor holds the phase for about a second.
    let path = workload(
        dir.path(),
        "bg.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Writer\n  Type: CrudActor\n  Threads: 4\n  Database: {db}\n  Phases:\n\
             \x20 - Blocking: None\n    GlobalRate: 1 per 5 milliseconds\n    Collection: c\n\
             \x20   Operations: [{{OperationName: insertOne, OperationCommand: {{Document: {{a: 1}}}}}}]\n\
             - Name: Holder\n  Type: HelloWorld\n  Phases:\n\
             \x20 - {{Repeat: 100, SleepBefore: 10 milliseconds}}\n"
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    let s = samples(&out);
    let holder_end = s
        .iter()
        .filter(|x| x.0 == "Holder")
        .map(|x| x.2)
        .max()
        .unwrap();
    let writer: Vec<_> = s.iter().filter(|x| x.0 == "Writer").collect();
    let first = writer.iter().map(|x| x.1).min().unwrap();
    let last = writer.iter().map(|x| x.1).max().unwrap();
    // It stops with the phase: no insert began after the holder's last operation ended.
    // (Within 20 ms: the phase closes when the holder's user has ended, just after its last
    // operation.)
    assert!(
        last <= holder_end + 20_000,
        "Writer began an insert {} us after its phase closed",
        last.saturating_sub(holder_end)
    );
    // It kept its rate while the phase was open: 200/s over the span it ran.
    let span_s = (holder_end - first) as f64 / 1e6;
    let inserted = server.count(&db, "c", doc! {}) as f64;
    let expected = 200.0 * span_s;
    assert!(
        span_s >= 0.9 && (inserted - expected).abs() <= 0.1 * expected + 5.0,
        "200/s for {span_s:.2} s is {expected:.0} inserts; the server holds {inserted}"
    );
    assert_eq!(
        row(&summary, "Writer")["samples"].as_f64().unwrap(),
        inserted
    );
}

#[test]
fn what_the_tool_does_not_run_is_refused_in_one_line_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let path = workload(
        dir.path(),
        "bad.yml",
        "Actors:\n- Name: Streams\n  Type: StreamStatsReporter\n  Phases: [{Repeat: 1}]\n",
    );
    // No server is named or started: the refusal comes first.
    let out = bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            "mongodb://127.0.0.1:1/",
        ])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().next().unwrap();
    assert!(
        first.contains(
            "bad.yml: actor `Streams`: actor type `StreamStatsReporter` is not one the tool runs (docs/genny.md lists the 19 it does)"
        ),
        "{err}"
    );
    // A workload option on a TOML profile is refused, not ignored.
    let out = bin()
        .args(["validate", "insert", "-p", "Repeat=2"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-p, -o and --smoke are for genny workloads")
    );
}

#[test]
fn multi_collection_actors_spread_their_operations_over_the_collections_as_genny_draws_them() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_multi");
    let path = workload(
        dir.path(),
        "multi.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Load\n  Type: Loader\n  Threads: 1\n  Phases:\n\
             \x20 - Repeat: 1\n    Database: {db}\n    Threads: 1\n    CollectionCount: 4\n    DocumentCount: 50\n    BatchSize: 50\n\
             \x20   Document: {{x: 1}}\n\
             \x20 - {{Nop: true}}\n\
             \x20 - {{Nop: true}}\n\
             - Name: Writer\n  Type: MultiCollectionUpdate\n  Threads: 2\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - {{Repeat: 40, Database: {db}, CollectionCount: 4, UpdateFilter: {{x: 1}}, Update: {{$inc: {{n: 1}}}}}}\n\
             \x20 - {{Nop: true}}\n\
             - Name: Reader\n  Type: MultiCollectionQuery\n  Threads: 1\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - {{Nop: true}}\n\
             \x20 - {{Repeat: 100, Database: {db}, CollectionCount: 4, Filter: {{x: 1}}, ReadConcern: {{Level: majority}}}}\n"
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    // Each update went to one collection and incremented its 50 documents: the server's sums,
    // collection by collection, add up to 2 threads x 40 operations x 50 documents, and every
    // collection had its share (80 draws of 4: each about 20).
    let mut total = 0;
    for k in 0..4 {
        let coll = format!("Collection{k}");
        assert_eq!(server.count(&db, &coll, doc! {}), 50, "{coll}");
        let n: Vec<_> = server.aggregate(
            &db,
            &coll,
            vec![doc! { "$group": { "_id": "$n", "docs": { "$sum": 1 } } }],
        );
        assert_eq!(n.len(), 1, "{coll}: every document updated alike: {n:?}");
        let each = n[0]
            .get_i32("_id")
            .map(i64::from)
            .or_else(|_| n[0].get_i64("_id"))
            .unwrap_or(0);
        assert!((5..=40).contains(&each), "{coll}: {each} updates of 80");
        total += each;
    }
    assert_eq!(total, 80, "every update went to exactly one collection");
    // The Loader's one thread loads its collections one after another, as genny's does: one
    // operation per collection, each after the one before.
    let mut load: Vec<(u64, u64)> = samples(&out)
        .into_iter()
        .filter(|x| x.0 == "Load")
        .map(|x| (x.1, x.2))
        .collect();
    load.sort_unstable();
    assert_eq!(load.len(), 4, "{load:?}");
    for w in load.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "a collection began before the one before ended: {load:?}"
        );
    }
    // Rows as genny names the metrics (`Update`, `Query`); each actor has one phase that runs.
    let update = row(&summary, "Writer:Update.1");
    assert_eq!(update["samples"], 80);
    assert_eq!(update["errors"], 0);
    assert_eq!(row(&summary, "Writer")["updated"], 4000);
    // genny's query draws Collection0 to Collection4 (one past the four): about a fifth of the
    // finds return nothing. 100 draws with none on Collection4: 0.8^100.
    assert_eq!(row(&summary, "Reader:Query")["samples"], 100);
    let query = row(&summary, "Reader");
    assert_eq!(query["errors"], 0);
    let matched = query["matched"].as_u64().unwrap();
    assert_eq!(query["returned"].as_u64().unwrap(), 50 * matched);
    assert!((50..100).contains(&matched), "matched {matched} of 100");
}

#[test]
fn a_crud_actors_state_machine_walks_its_transitions_with_their_pauses() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_fsm");
    // A and B alternate (each one way out); every user starts in A. Repeat 10 per thread: A, B,
    // A, B, ... five of each; each insert says its state and its user. The pause out of B is
    // 40 ms: four of them per user in the phase.
    let path = workload(
        dir.path(),
        "fsm.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Walk\n  Type: CrudActor\n  Threads: 2\n  Database: {db}\n  Phases:\n\
             \x20 - Repeat: 10\n    Collection: log\n    States: &states\n\
             \x20   - Name: A\n      Operations:\n\
             \x20       - {{OperationName: insertOne, OperationCommand: {{Document: {{s: A, u: {{^ActorId: {{}}}}}}}}}}\n\
             \x20     Transitions:\n\
             \x20       - {{To: B, Weight: 1, SleepBefore: {{^TimeSpec: {{value: 0, unit: seconds}}}}}}\n\
             \x20   - Name: B\n      Operations:\n\
             \x20       - {{OperationName: insertOne, OperationCommand: {{Document: {{s: B, u: {{^ActorId: {{}}}}}}}}}}\n\
             \x20       - {{OperationName: find, OperationMetricsName: Look, OperationCommand: {{Filter: {{s: A}}}}}}\n\
             \x20     Transitions:\n\
             \x20       - {{To: A, Weight: 1, SleepBefore: {{^TimeSpec: {{value: 40, unit: milliseconds}}}}}}\n\
             \x20       - {{To: B, Weight: 0, SleepBefore: {{^TimeSpec: {{value: 0, unit: seconds}}}}}}\n\
             \x20   InitialStates:\n\
             \x20     - {{State: A, Weight: 1}}\n\
             \x20 - {{Repeat: 3, Collection: log, Continue: true, SkipFirstOperations: true, States: *states}}\n"
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    // The server's witness: five of each state per user in the first phase, and the users'
    // own. The second phase continues where each user was (B, its tenth visit) without B's
    // operations (`SkipFirstOperations`): its three visits send A, then B. (Drawn anew, they
    // would be A, B, A; continued without the skip, B, A, B.)
    assert_eq!(server.count(&db, "log", doc! { "s": "A" }), 10 + 2);
    assert_eq!(server.count(&db, "log", doc! { "s": "B" }), 10 + 2);
    let users: Vec<_> = server.aggregate(
        &db,
        "log",
        vec![doc! { "$group": { "_id": { "u": "$u", "s": "$s" }, "n": { "$sum": 1 } } }],
    );
    assert_eq!(users.len(), 4, "2 users x 2 states: {users:?}");
    assert!(
        users
            .iter()
            .all(|d| d.get_i32("n").map(i64::from).or_else(|_| d.get_i64("n")) == Ok(6)),
        "{users:?}"
    );
    // Rows: each state's visits, and each operation by its name across the states.
    assert_eq!(row(&summary, "Walk.0:A")["samples"], 10);
    assert_eq!(row(&summary, "Walk.0:B")["samples"], 10);
    assert_eq!(row(&summary, "Walk.0:insertOne")["samples"], 20);
    assert_eq!(row(&summary, "Walk.0:Look")["samples"], 10);
    assert_eq!(row(&summary, "Walk.0")["errors"], 0);
    assert_eq!(row(&summary, "Walk.1:insertOne")["samples"], 4);
    // genny's metric `Walk.insertOne` is both phases' inserts, added.
    let rollups = read_json(&out.join("rollups.json"));
    assert_eq!(
        rollups["runs"][0]["rollups"]["Walk.insertOne"]["OperationsTotal"],
        24
    );
    // The pauses out of B: a user's ten visits span at least four of 40 ms.
    let s = samples(&out);
    let walk: Vec<_> = s.iter().filter(|x| x.0 == "Walk.0").collect();
    let first = walk.iter().map(|x| x.1).min().unwrap();
    let last = walk.iter().map(|x| x.2).max().unwrap();
    assert!(last - first >= 4 * 40_000, "{} us", last - first);
}

#[test]
fn every_operation_of_an_iteration_runs_named_as_genny_names_it_and_an_unmet_write_concern_is_an_error(
) {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_iter");
    // A find that matches nothing first: genny's CrudActor runs the count, the insert and the
    // update after it all the same, in each of 500 iterations. Two actors with a phase
    // `MetricsName` each; a setup insert with `ReportMetrics: false`; an update at `w: 2`,
    // which a one-member set cannot satisfy, then a phase after it.
    let path = workload(
        dir.path(),
        "iteration.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Setup\n  Type: RunCommand\n  Database: {db}\n  Phases:\n\
             \x20 - Repeat: 1\n    Operation: {{OperationMetricsName: Seed, ReportMetrics: false, OperationCommand: {{insert: c, documents: [{{_id: -1, n: 0}}]}}}}\n\
             \x20 - {{Nop: true}}\n  - {{Nop: true}}\n  - {{Nop: true}}\n\
             - Name: GennyOverhead100T\n  Type: NopMetrics\n  Threads: 2\n  Phases:\n\
             \x20 - {{Repeat: 10, MetricsName: LoopOnly}}\n  - {{Nop: true}}\n  - {{Nop: true}}\n  - {{Nop: true}}\n\
             - Name: GennyOverhead1T\n  Type: NopMetrics\n  Phases:\n\
             \x20 - {{Repeat: 10, MetricsName: LoopOnly}}\n  - {{Nop: true}}\n  - {{Nop: true}}\n  - {{Nop: true}}\n\
             - Name: Chat\n  Type: CrudActor\n  Threads: 2\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - Repeat: 250\n    Collection: c\n    Operations:\n\
             \x20   - {{OperationName: find, OperationCommand: {{Filter: {{nothing: 1}}}}}}\n\
             \x20   - {{OperationName: countDocuments, OperationCommand: {{Filter: {{_id: -1}}}}}}\n\
             \x20   - {{OperationName: insertOne, OperationCommand: {{Document: {{n: 1}}}}}}\n\
             \x20   - {{OperationName: updateOne, OperationCommand: {{Filter: {{_id: -1}}, Update: {{$inc: {{n: 1}}}}}}}}\n\
             \x20 - {{Nop: true}}\n  - {{Nop: true}}\n\
             - Name: W2\n  Type: RunCommand\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n  - {{Nop: true}}\n\
             \x20 - Repeat: 50\n    Operation: {{OperationMetricsName: UpdateW2, OperationCommand: {{update: c, updates: [{{q: {{_id: -1}}, u: {{$inc: {{w: 1}}}}}}], writeConcern: {{w: 2}}}}}}\n\
             \x20 - {{Nop: true}}\n\
             - Name: After\n  Type: CrudActor\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n  - {{Nop: true}}\n  - {{Nop: true}}\n\
             \x20 - {{Repeat: 1, Collection: c, Operation: {{OperationName: insertOne, OperationCommand: {{Document: {{after: 1}}}}}}}}\n"
        ),
    );
    let out = dir.path().join("run");
    let output = bin()
        .args(["run", path.to_str().unwrap(), "--uri", &server.uri, "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(300))
        .assert()
        .code(1) // some operations failed
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = read_json(&out.join("summary.json"));
    // Each operation 500 times, the find's finding nothing notwithstanding; the server holds
    // the 500 inserts and the update's 500 increments.
    for op in ["find", "countDocuments", "insertOne", "updateOne"] {
        assert_eq!(row(&summary, &format!("Chat:{op}"))["samples"], 500, "{op}");
    }
    assert_eq!(server.count(&db, "c", doc! { "n": 1 }), 500);
    let seeded = server.aggregate(&db, "c", vec![doc! { "$match": { "_id": -1 } }]);
    assert_eq!(
        seeded[0]
            .get_i32("n")
            .map(i64::from)
            .or_else(|_| seeded[0].get_i64("n"))
            .unwrap(),
        500
    );
    // genny's names: `Actor.MetricsName`, distinct for the two actors; the setup's insert
    // (`ReportMetrics: false`) has no row, in the summary or rollups.json.
    assert_eq!(row(&summary, "GennyOverhead100T:LoopOnly")["samples"], 20);
    assert_eq!(row(&summary, "GennyOverhead1T:LoopOnly")["samples"], 10);
    let labels: Vec<&str> = summary["runs"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert!(!labels.iter().any(|l| l.starts_with("Setup")), "{labels:?}");
    let rollups = read_json(&out.join("rollups.json"));
    let r = &rollups["runs"][0]["rollups"];
    assert_eq!(r["GennyOverhead100T.LoopOnly"]["OperationsTotal"], 20);
    assert_eq!(r["GennyOverhead1T.LoopOnly"]["OperationsTotal"], 10);
    assert!(r.get("Setup.Seed").is_none(), "{r}");
    // Documents per operation as genny counts them, against the server's: the inserts it
    // holds, the documents the update changed, what the count answered, none found.
    assert_eq!(r["Chat.insertOne"]["DocumentsTotal"], 500);
    assert_eq!(r["Chat.updateOne"]["DocumentsTotal"], 500);
    assert_eq!(r["Chat.countDocuments"]["DocumentsTotal"], 500);
    assert_eq!(r["Chat.find"]["DocumentsTotal"], 0);
    // w: 2 on a one-member set: 50 errors of the write-concern class, code 100, said on the
    // console, and the phase after it ran.
    assert_eq!(row(&summary, "W2:UpdateW2")["errors"], 50);
    assert_eq!(
        summary["runs"][0]["errors_by_class"]["W2"]["write_concern"],
        50
    );
    let kinds = summary["runs"][0]["error_kinds"].as_array().unwrap();
    assert!(
        kinds.iter().any(|k| k["code"] == 100 && k["count"] == 50),
        "{kinds:?}"
    );
    assert!(
        stdout.contains("50 x (100.0 % of W2's operations) write_concern, the first: code 100 (UnsatisfiableWriteConcern)"),
        "{stdout}"
    );
    assert_eq!(row(&summary, "After:insertOne")["samples"], 1);
    assert_eq!(server.count(&db, "c", doc! { "after": 1 }), 1);
}

/// A loader thread's collections, one after another as genny's thread loads them: one group
/// that takes its collections in turn, each collection's batches (`repeat`) then the
/// remainder, then its indexes, built on that collection (the server's `listIndexes`).
#[test]
fn a_loader_thread_loads_its_collections_in_turn_each_with_its_indexes() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_turns");
    let path = workload(
        dir.path(),
        "turns.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Load\n  Type: Loader\n  Threads: 1\n  Phases:\n\
             \x20 - {{Repeat: 1, Database: {db}, Threads: 1, CollectionCount: 3, DocumentCount: 25, BatchSize: 10, Document: {{x: {{^RandomInt: {{min: 0, max: 9}}}}}}, Indexes: [{{keys: {{x: 1}}}}]}}\n"
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    let client = server.client();
    for k in 0..3 {
        let coll = format!("Collection{k}");
        assert_eq!(server.count(&db, &coll, doc! {}), 25, "{coll}");
        let names: Vec<String> = runtime()
            .block_on(async {
                client
                    .database(&db)
                    .collection::<mongodb::bson::Document>(&coll)
                    .list_index_names()
                    .await
            })
            .unwrap();
        assert!(names.contains(&"x_1".to_string()), "{coll}: {names:?}");
    }
    assert_eq!(row(&summary, "Load")["samples"], 3);
    assert_eq!(row(&summary, "Load:IndividualBulkInsert")["samples"], 6);
    assert_eq!(row(&summary, "Load:IndividualBulkInsert.2")["samples"], 3);
    assert_eq!(row(&summary, "Load:IndexBuild")["samples"], 3);
    let rollups = read_json(&out.join("rollups.json"));
    let r = &rollups["runs"][0]["rollups"]["Load.IndividualBulkInsert"];
    assert_eq!(r["OperationsTotal"], 9);
    assert_eq!(r["DocumentsTotal"], 75);
}
