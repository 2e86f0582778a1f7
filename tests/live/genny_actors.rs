//! genny's actors beyond CRUD, each against the genny example or the workload shape that uses
//! it: AssertiveActor, CollectionScanner (generated names, listed collections, bytes, holds,
//! pacing, point in time) and SamplingLoader, with the server's documents and the wire as the
//! witnesses.

use crate::common;
use crate::genny::workload;
use crate::wire_log;

use common::*;
use mongodb::bson::doc;

/// Runs the workload at `path` through a wire log in front of the server, into `out`; the log.
fn run_on_the_wire(
    server: &TestServer,
    path: &std::path::Path,
    out: &std::path::Path,
) -> wire_log::WireLog {
    let wire = wire_log::start(proxy::port_of(&server.uri));
    bin()
        .args(["run", path.to_str().unwrap(), "--uri", &wire.uri()])
        .args(["--quiet", "--no-resources", "--out"])
        .arg(out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);
    wire
}

/// genny's AssertiveActor: `Expected`, then `Actual`, their first batches compared by genny's
/// rules (ignoring `_id` and `num`, numbers within 0.001 whatever their types); results that
/// differ are an error of the actor's `Assert` row with where they differ, against the
/// documents the server holds.
#[test]
fn an_assertive_actor_compares_the_servers_two_answers_as_genny_does() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_assert");
    let sorted = |c: &str| {
        format!("{{aggregate: {c}, pipeline: [{{$sort: {{k: 1}}}}], cursor: {{batchSize: 101}}}}")
    };
    let path = workload(
        dir.path(),
        "assert.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Seed\n  Type: RunCommand\n  Database: {db}\n  Phases:\n\
             \x20 - Repeat: 1\n    Operations:\n\
             \x20   - {{OperationCommand: {{insert: res, documents: [{{_id: 1, k: a, n: 2, num: 1}}, {{_id: 2, k: b, n: 1, num: 2}}]}}}}\n\
             \x20   - {{OperationCommand: {{insert: same, documents: [{{_id: 7, k: a, n: 2.0004}}, {{_id: 8, k: b, n: 1}}]}}}}\n\
             \x20   - {{OperationCommand: {{insert: other, documents: [{{_id: 7, k: a, n: 3}}, {{_id: 8, k: b, n: 1}}]}}}}\n\
             \x20 - {{Nop: true}}\n\
             - Name: Good\n  Type: AssertiveActor\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - {{Repeat: 1, Message: same, Expected: {res}, Actual: {same}}}\n\
             - Name: Bad\n  Type: AssertiveActor\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n\
             \x20 - {{Repeat: 1, Message: other, Expected: {res}, Actual: {other}}}\n",
            res = sorted("res"),
            same = sorted("same"),
            other = sorted("other"),
        ),
    );
    let out = dir.path().join("run");
    bin()
        .args([
            "run",
            path.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(1); // Bad's assertion failed
    assert_eq!(
        server.count(&db, "other", doc! {}),
        2,
        "the server holds what was compared"
    );
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(row(&summary, "Good:Assert")["samples"], 1);
    assert_eq!(row(&summary, "Good:Assert")["errors"], 0);
    assert_eq!(row(&summary, "Bad:Assert")["errors"], 1);
    let kinds = summary["runs"][0]["error_kinds"].to_string();
    assert!(
        kinds.contains("assertion failed: results were unequal: at index 0: in field `n`: expected 2 but found 3"),
        "{kinds}"
    );
    let rollups = read_json(&out.join("rollups.json"));
    assert_eq!(
        rollups["runs"][0]["rollups"]["Good.Assert"]["OperationsTotal"],
        1
    );
}

/// genny's CollectionScanner with generated names: thread t scans its `CollectionCount /
/// Threads` collections from `t x that` (`distributeCollectionNames`), sorted and skipped as
/// genny does; a whole scan is one operation of its `Scan` metric, its documents every one
/// read, against the documents the server holds; `snapshot` in a transaction; `count` counts.
#[test]
fn a_collection_scanner_reads_each_threads_collections_whole_as_one_scan() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_scan");
    let scanner = |name: &str, threads: u32, phase: &str| {
        format!(
            "- Name: {name}\n  Type: CollectionScanner\n  Threads: {threads}\n  Database: {db}\n  GenerateCollectionNames: true\n  CollectionCount: 4\n  Phases:\n  - {{Nop: true}}\n  - {phase}\n"
        )
    };
    let path = workload(
        dir.path(),
        "scan.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Load\n  Type: Loader\n  Threads: 1\n  Phases:\n\
             \x20 - {{Repeat: 1, Database: {db}, Threads: 1, CollectionCount: 4, DocumentCount: 10, BatchSize: 10, Document: {{a: {{^RandomInt: {{min: 1, max: 9}}}}}}}}\n\
             \x20 - {{Nop: true}}\n{}{}{}",
            scanner("Scanner", 2, "{Repeat: 3, ScanType: Standard, FindOptions: {BatchSize: 3, Comment: c}}"),
            scanner("Snap", 1, "{Repeat: 2, ScanType: snapshot, Documents: 15, CollectionSortOrder: reverse, CollectionSkip: 1, AggregatePipeline: {array: [{$match: {a: {$gte: 1}}}]}, AggregateOptions: {BatchSize: 2, AllowDiskUse: true}}"),
            scanner("Counter", 1, "{Repeat: 1, ScanType: count, MetricsName: Counted}"),
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    let held: u64 = (0..4)
        .map(|k| server.count(&db, &format!("Collection{k}"), doc! {}))
        .sum();
    assert_eq!(held, 40);
    // Thread 0 reads Collection0 and 1, thread 1 Collection2 and 3: three scans each, one
    // operation of one `scan` step.
    for group in ["Scanner.Collection0", "Scanner.Collection2"] {
        assert_eq!(row(&summary, group)["samples"], 3);
        assert_eq!(row(&summary, &format!("{group}:Scan"))["samples"], 3);
    }
    let rollups = read_json(&out.join("rollups.json"));
    let r = &rollups["runs"][0]["rollups"];
    assert_eq!(r["Scanner.Scan.1"]["OperationsTotal"], 6);
    assert_eq!(r["Scanner.Scan.1"]["DocumentsTotal"], 3 * held);
    // Reverse order, the first skipped (Collection2, 1, 0; the order is the lib test's), in a
    // snapshot transaction, stopped at exactly `Documents` read, across collections.
    assert_eq!(r["Snap.Scan.1"]["OperationsTotal"], 2);
    assert_eq!(r["Snap.Scan.1"]["DocumentsTotal"], 2 * 15);
    assert_eq!(
        row(&summary, "Snap")["transactions"]["committed"],
        2,
        "{}",
        row(&summary, "Snap")
    );
    assert_eq!(r["Counter.Counted"]["OperationsTotal"], 1);
    assert_eq!(r["Counter.Counted"]["DocumentsTotal"], held);
}

/// genny's CollectionScanner as docs/CollectionScanner.yml uses it, without generated names:
/// every collection `listCollections` names, each scan; `ScanSizeBytes` stops the scan at the
/// document that reaches it; `ScanDuration` holds a snapshot transaction open (asleep, or
/// with `ScanContinuous` scanning again); `ScanRateMegabytes` paces a scan a megabyte at a
/// time. Each against the documents and bytes the server holds.
#[test]
fn a_collection_scanner_lists_its_collections_stops_at_its_bytes_holds_and_paces() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_scan_listed");
    let scanner = |name: &str, own: &str, phase: &str| {
        format!(
            "- Name: {name}\n  Type: CollectionScanner\n  Threads: 1\n  Database: {db}\n{own}  Phases:\n  - {{Nop: true}}\n  - {phase}\n"
        )
    };
    let path = workload(
        dir.path(),
        "scan_listed.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Load\n  Type: Loader\n  Threads: 1\n  Phases:\n\
             \x20 - {{Repeat: 1, Database: {db}, Threads: 1, CollectionCount: 2, DocumentCount: 1000, BatchSize: 1000, Document: {{x: {{^FastRandomString: {{length: 1000}}}}}}}}\n\
             \x20 - {{Nop: true}}\n{}{}{}{}",
            scanner("Sized", "", "{Repeat: 2, ScanType: standard, ScanSizeBytes: 10000}"),
            scanner("Held", "", "{Repeat: 1, ScanType: snapshot, ScanDuration: 1 second}"),
            scanner("Again", "", "{Repeat: 1, ScanType: snapshot, ScanDuration: 1 second, ScanContinuous: true}"),
            scanner("Paced", "  ScanRateMegabytes: 1 per 1 second\n", "{Repeat: 1, ScanType: standard}"),
        ),
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    let held: u64 = (0..2)
        .map(|k| server.count(&db, &format!("Collection{k}"), doc! {}))
        .sum();
    assert_eq!(held, 2000);
    // Every document is the same size: the scan stops at the one that reaches 10,000 bytes.
    let one = server.aggregate(&db, "Collection0", vec![doc! { "$limit": 1 }]);
    let size = mongodb::bson::to_vec(&one[0]).unwrap().len() as u64;
    let per_scan = 10_000u64.div_ceil(size);
    let rollups = read_json(&out.join("rollups.json"));
    let r = &rollups["runs"][0]["rollups"];
    assert_eq!(r["Sized.Scan.1"]["OperationsTotal"], 2);
    assert_eq!(
        r["Sized.Scan.1"]["DocumentsTotal"],
        2 * per_scan,
        "{size} bytes a document"
    );
    // Held open a second after one whole scan, then committed.
    assert_eq!(r["Held.Scan.1"]["DocumentsTotal"], held);
    let ms = |label: &str| row(&summary, label)["min_ms"].as_f64().unwrap();
    assert!(ms("Held") >= 1000.0, "{}", row(&summary, "Held"));
    assert_eq!(row(&summary, "Held")["transactions"]["committed"], 1);
    // Scanned again and again for a second, each scan whole.
    let again = r["Again.Scan.1"]["DocumentsTotal"].as_u64().unwrap();
    assert!(again >= 2 * held && again.is_multiple_of(held), "{again}");
    assert!(ms("Again") >= 1000.0, "{}", row(&summary, "Again"));
    // About 2 MB at a megabyte a second: the second megabyte's token a second after the first.
    assert_eq!(r["Paced.Scan.1"]["DocumentsTotal"], held);
    assert!(held * size > 2_000_000);
    assert!(ms("Paced") >= 950.0, "{}", row(&summary, "Paced"));
    assert!(ms("Sized") < 950.0, "{}", row(&summary, "Sized"));
}

/// genny's own docs/SamplingLoader.yml (its database made the test's own): 40 seeded
/// documents; each SamplingLoader actor samples them once and inserts `Threads x Batches x
/// InsertBatchSize` copies without `_id`s, the pipeline's change on the last actor's; by the
/// server's documents.
#[test]
fn genny_sampling_loader_example_copies_its_sample_by_the_servers_count() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_sampling");
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/reference/genny/src/workloads/docs/SamplingLoader.yml"
    ))
    .unwrap();
    assert!(example.contains("db: &db test"));
    let path = workload(
        dir.path(),
        "sampling.yml",
        &example.replace("db: &db test", &format!("db: &db {db}")),
    );
    let out = dir.path().join("run");
    let wire = run_on_the_wire(&server, &path, &out);
    let coll = "sampling_loader_demo";
    // One sample an actor, whatever its threads and iterations: three `$sample`s in all.
    let samples = wire
        .commands(&db, "aggregate", coll)
        .iter()
        .filter(|e| {
            e.body
                .get_array("pipeline")
                .ok()
                .and_then(|p| p.first()?.as_document()?.get_document("$sample").ok())
                .is_some()
        })
        .count();
    assert_eq!(samples, 3);
    // 40 seeded; 1 x 2 x 5 copies; 4 x 5 x 20; 4 x 5 x 20 with `y` set.
    assert_eq!(server.count(&db, coll, doc! {}), 40 + 10 + 400 + 400);
    assert_eq!(
        server.count(&db, coll, doc! { "y": "SamplingLoader wuz here" }),
        400
    );
    // Every copy is of a seeded document (its `x`), under an `_id` of its own.
    assert_eq!(
        server.count(&db, coll, doc! { "x": { "$exists": true } }),
        850
    );
    let rollups = read_json(&out.join("rollups.json"));
    let r = &rollups["runs"][0]["rollups"];
    assert_eq!(r["BasicSamplingDemo.TotalBulkInsert"]["OperationsTotal"], 1);
    assert_eq!(r["BasicSamplingDemo.TotalBulkInsert"]["DocumentsTotal"], 10);
    assert_eq!(
        r["MultiThreadedExample.TotalBulkInsert"]["OperationsTotal"],
        4
    );
    assert_eq!(
        r["PipelineOptionExample.TotalBulkInsert"]["DocumentsTotal"],
        400
    );
}

/// genny's point-in-time scan, as In/OutOfCacheSnapshotReads use it: a `SelectClusterTimeOnly`
/// phase where each thread keeps a ping's cluster time, then scans whose every `find` is sent
/// at read concern snapshot `atClusterTime` of that thread's own time, then `getMore`s; read
/// off the wire (the embedded server accepts `atClusterTime` but reads the present, so the
/// documents cannot tell the times apart).
#[test]
fn a_point_in_time_scan_reads_every_collection_at_the_cluster_time_its_thread_kept() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("genny_scan_pit");
    let path = workload(
        dir.path(),
        "scan_pit.yml",
        &format!(
            "SchemaVersion: 2018-07-01\nActors:\n\
             - Name: Load\n  Type: Loader\n  Threads: 1\n  Phases:\n\
             \x20 - {{Repeat: 1, Database: {db}, Threads: 1, CollectionCount: 2, DocumentCount: 150, BatchSize: 150, Document: {{a: 1}}}}\n\
             \x20 - {{Nop: true}}\n\x20 - {{Nop: true}}\n\
             - Name: PointInTime\n  Type: CollectionScanner\n  Threads: 2\n  Database: {db}\n  Phases:\n\
             \x20 - {{Nop: true}}\n\x20 - {{Repeat: 1, SelectClusterTimeOnly: true}}\n\
             \x20 - {{Repeat: 1, ScanType: point-in-time, MetricsName: Scan-Current}}\n"
        ),
    );
    let out = dir.path().join("run");
    let wire = run_on_the_wire(&server, &path, &out);
    let all = wire.all();
    // The times the two threads kept: each the operationTime of a ping's reply to admin.
    let pinged: Vec<mongodb::bson::Timestamp> = all
        .iter()
        .filter(|e| e.command == "ping" && e.db == "admin")
        .filter_map(|e| e.reply.as_ref()?.get_timestamp("operationTime").ok())
        .collect();
    let finds: Vec<&wire_log::Exchange> = all
        .iter()
        .filter(|e| e.command == "find" && e.db == db && e.body.get_document("readConcern").is_ok())
        .collect();
    // Two threads, each a find of each of the two collections (listed at the scan).
    assert_eq!(finds.len(), 4, "{finds:?}");
    let mut times = std::collections::BTreeSet::new();
    for f in &finds {
        let rc = f.body.get_document("readConcern").unwrap();
        assert_eq!(rc.get_str("level").unwrap(), "snapshot");
        let at = rc.get_timestamp("atClusterTime").unwrap();
        assert!(pinged.contains(&at), "{at:?} not among {pinged:?}");
        times.insert((at.time, at.increment));
    }
    // Each thread's own time (the pings a second apart at most, two answers).
    assert!(!times.is_empty() && times.len() <= 2, "{times:?}");
    // Taken in the phase before the scans, and read there: between the load and the first
    // scan, the two threads' pings and no other (a scan without a kept time pings itself).
    let position = |f: &dyn Fn(&wire_log::Exchange) -> bool| all.iter().position(f).unwrap();
    let loaded = all.len()
        - 1
        - all
            .iter()
            .rev()
            .position(|e| e.command == "insert" && e.db == db)
            .unwrap();
    let scanned = position(&|e| {
        e.command == "find" && e.db == db && e.body.get_document("readConcern").is_ok()
    });
    let kept = all[loaded..scanned]
        .iter()
        .filter(|e| e.command == "ping" && e.db == "admin")
        .count();
    assert_eq!(kept, 2);
    let later = all[scanned..]
        .iter()
        .filter(|e| e.command == "ping" && e.db == "admin")
        .count();
    assert_eq!(later, 0, "a scan pinged for a time of its own");
    // 150 documents a collection: the first batch of 101, then a getMore for the rest.
    let more = all
        .iter()
        .filter(|e| e.command == "getMore" && e.db == db)
        .count();
    assert_eq!(more, 4);
    let rollups = read_json(&out.join("rollups.json"));
    let r = &rollups["runs"][0]["rollups"];
    assert_eq!(r["PointInTime.Scan-Current"]["OperationsTotal"], 2);
    assert_eq!(r["PointInTime.Scan-Current"]["DocumentsTotal"], 2 * 300);
    assert!(
        r.get("PointInTime.Scan.1").is_none(),
        "the time taken is in no metric"
    );
}
