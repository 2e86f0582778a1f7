//! Live runs against a server started by the test: counts checked against the server itself
//! (documents in the collection, serverStatus opcounters), not against the tool's own counters.

use crate::common;

use common::*;
use mongodb::bson::doc;

#[test]
fn an_insert_run_of_t_threads_by_l_loops_leaves_exactly_t_times_l_documents() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("insert");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 3\nloops = 1\n",
    );
    let before = server.opcounters();
    let (threads, loops) = (8u64, 125u64);
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(
        path.to_str().unwrap(),
        &out,
        &["--threads", "8", "--loops", "125"],
    );
    let after = server.opcounters();
    assert_eq!(row(&summary, "ins")["samples"], threads * loops);
    assert_eq!(row(&summary, "ins")["errors"], 0);
    assert_eq!(
        server.count(&db, "cities", doc! {}),
        threads * loops,
        "documents in the collection"
    );
    assert_eq!(
        counter(&after, "insert") - counter(&before, "insert"),
        (threads * loops) as i64,
        "serverStatus opcounters.insert grew by T*L"
    );
    // Every document is a generated one, with the paired field following its city.
    assert_eq!(
        server.count(
            &db,
            "cities",
            doc! { "city": "Shenzhen", "pop": { "$ne": 17791000 } }
        ),
        0
    );
    assert_eq!(
        server.count(&db, "cities", doc! { "state": "GD" }),
        threads * loops
    );
}

#[test]
fn updates_and_removes_report_what_they_touched_and_the_server_agrees() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("upd_rm");
    let groups = "[[group]]\nname = \"upd\"\nstage = \"a\"\nop = \"update\"\nthreads = 4\nloops = 25\nset = [\"loc\"]\n\
                  [[group]]\nname = \"rm\"\nstage = \"b\"\nop = \"remove\"\nthreads = 4\nloops = 25\nfilter = [\"city\"]\n\
                  [[group]]\nname = \"fnd\"\nstage = \"c\"\nop = \"find\"\nthreads = 2\nloops = 10\nfilter = [\"city\"]\nlimit = 7\n";
    let path = profile(
        dir.path(),
        &db,
        "drop = true\npreload = 500\nindexes = [{ city = 1 }]",
        groups,
    );
    let before = server.opcounters();
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    let after = server.opcounters();

    // Updates by _id run before any remove, so every one of them matches an existing document.
    let upd = row(&summary, "upd");
    assert_eq!(
        (upd["samples"].as_u64(), upd["matched"].as_u64()),
        (Some(100), Some(100))
    );
    assert_eq!(counter(&after, "update") - counter(&before, "update"), 100);

    // Removes: what the tool says it deleted is what left the collection.
    let rm = row(&summary, "rm");
    assert_eq!(rm["samples"], 100);
    let deleted = rm["modified"].as_u64().unwrap();
    // Two removers can find the same document; the second one deletes nothing and says so.
    assert!(deleted > 0 && deleted <= 100, "{rm}");
    assert_eq!(server.count(&db, "cities", doc! {}), 500 - deleted);
    // opcounters.delete counts delete commands: one per remove that found a document.
    assert_eq!(
        counter(&after, "delete") - counter(&before, "delete"),
        rm["matched"].as_i64().unwrap()
    );

    // Finds read whole cursors of at most `limit` documents: bytes received > 0, all matched.
    let f = row(&summary, "fnd");
    assert_eq!(
        (f["samples"].as_u64(), f["matched"].as_u64()),
        (Some(20), Some(20))
    );
    assert!(f["received_kb_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_jmeter_2016_profile_starts_its_full_1000_thread_groups() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let before = server.opcounters();
    let out = dir.path().join("run");
    let (summary, stdout, _) = server.run_ok("jmeter-2016", &out, &["--loops", "2"]);
    let after = server.opcounters();
    for (label, threads) in [
        ("insert", 1000),
        ("find", 1000),
        ("update", 1000),
        ("remove", 500),
        ("mixed-insert", 500),
        ("mixed-remove", 500),
    ] {
        let r = row(&summary, label);
        assert_eq!(r["samples"], threads * 2, "{label}");
        assert_eq!(r["errors"], 0, "{label}: {r}");
    }
    assert_eq!(counter(&after, "insert") - counter(&before, "insert"), 3000);
    assert!(stdout.contains("TOTAL mixed"), "{stdout}");
}

#[test]
fn repeat_prints_one_row_per_run_per_group_and_the_spread() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("repeat");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 2\nloops = 20\n[[group]]\nname = \"fnd\"\nop = \"find\"\nthreads = 2\nloops = 20\n";
    let path = profile(dir.path(), &db, "drop = true\npreload = 50", groups);
    let out = dir.path().join("run");
    let (summary, stdout, stderr) = server.run_ok(
        path.to_str().unwrap(),
        &out,
        &["--repeat", "3", "--tsv", "-"],
    );
    assert_eq!(summary["runs"].as_array().unwrap().len(), 3);
    assert_eq!(
        summary["spread"].as_array().unwrap().len(),
        3,
        "ins, fnd and TOTAL"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("Run\tLabel\t# Samples\tAverage"),
        "{stdout}"
    );
    assert_eq!(lines.len(), 1 + 3 * 3, "{stdout}");
    assert_eq!(
        std::fs::read_to_string(out.join("summary.tsv")).unwrap(),
        stdout
    );
    assert!(stderr.contains("Throughput over 3 runs"), "{stderr}");
    // drop = true each run: the collection holds the last run's preload and inserts only.
    assert_eq!(server.count(&db, "cities", doc! {}), 50 + 40);
}
