//! `capture --from-profiler` round trip against the real server: a pymongo client (not
//! mongo-stress) sends a workload of a known mix on two collections while the profiler is read;
//! the captured profile validates and runs on a fresh database; each shape's share is within 2
//! points of the known mix, its operators and fields are the workload's, and its plan is the
//! workload's. The profiler's settings are as they were afterwards, also after a Ctrl-C.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, bin_path, TestServer};
use mongodb::bson::{doc, Document};

/// The workload, in Python: 1,000 operations in a shuffled but fixed order, appName "shopapp".
const WORKLOAD: &str = r#"
import sys, random, datetime
from pymongo import MongoClient, ASCENDING, DESCENDING
uri, db_name = sys.argv[1], sys.argv[2]
c = MongoClient(uri, appname="shopapp")
db = c[db_name]
now = datetime.datetime.now(datetime.timezone.utc)
mix = ["recent"] * 300 + ["customer"] * 200 + ["pay"] * 150 + ["order"] * 150 + ["totals"] * 100 + ["tiers"] * 100
random.Random(7).shuffle(mix)
for i, kind in enumerate(mix):
    r = random.Random(i)
    if kind == "recent":
        list(db.orders.find({"status": r.choice(["open", "paid", "shipped"]), "created": {"$gte": now - datetime.timedelta(hours=1)}}).sort("created", DESCENDING).limit(20))
    elif kind == "customer":
        db.customers.find_one({"_id": r.randint(0, 199)})
    elif kind == "pay":
        db.orders.update_one({"_id": r.randint(0, 499)}, {"$inc": {"total": 1}})
    elif kind == "order":
        db.orders.insert_one({"status": "open", "created": now, "customer": r.randint(0, 199), "total": 10})
    elif kind == "totals":
        list(db.orders.aggregate([{"$match": {"customer": {"$in": [r.randint(0, 199) for _ in range(3)]}}}, {"$group": {"_id": "$customer", "total": {"$sum": "$total"}}}]))
    else:
        db.command("count", "customers", query={"tier": {"$in": ["gold", "silver"]}})
"#;

/// The known mix: (operation, namespace's collection, share).
const MIX: [(&str, &str, f64); 6] = [
    ("find", "orders", 0.30),
    ("findOne", "customers", 0.20),
    ("updateOne", "orders", 0.15),
    ("insertOne", "orders", 0.15),
    ("aggregate", "orders", 0.10),
    ("countDocuments", "customers", 0.10),
];

fn python_with_pymongo() -> String {
    std::env::var("MONGO_STRESS_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Runs a pymongo script with the server's URI and `db` as its arguments, to its end.
fn run_python(script: &str, server: &TestServer, db: &str, dir: &std::path::Path) {
    let path = dir.join("workload.py");
    std::fs::write(&path, script).unwrap();
    let py = Command::new(python_with_pymongo())
        .arg(&path)
        .args([&server.uri, db])
        .output()
        .expect("python3 with pymongo (scripts/test.sh installs it)");
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
}

/// Runs a command on `db` with the test's own client.
fn command(server: &TestServer, db: &str, cmd: Document) -> Document {
    let client = server.client();
    common::runtime()
        .block_on(async { client.database(db).run_command(cmd).await })
        .unwrap()
}

fn settings(server: &TestServer, db: &str) -> (i64, i64) {
    let r = command(server, db, doc! { "profile": -1 });
    let n = |k: &str| match r.get(k) {
        Some(mongodb::bson::Bson::Int32(n)) => i64::from(*n),
        Some(mongodb::bson::Bson::Int64(n)) => *n,
        Some(mongodb::bson::Bson::Double(n)) => *n as i64,
        other => panic!("{k}: {other:?}"),
    };
    (n("was"), n("slowms"))
}

/// Loads the data the workload reads: 500 orders, 200 customers, the index the finds use.
fn load(server: &TestServer, db: &str) {
    let client = server.client();
    common::runtime().block_on(async {
        let d = client.database(db);
        let now = mongodb::bson::DateTime::now();
        let orders: Vec<Document> = (0..500)
            .map(|i| doc! { "_id": i, "status": (["open", "paid", "shipped"][i as usize % 3]), "created": now, "customer": i % 200, "total": 10 })
            .collect();
        d.collection::<Document>("orders").insert_many(orders).await.unwrap();
        let customers: Vec<Document> = (0..200)
            .map(|i| doc! { "_id": i, "name": format!("c{i}"), "tier": (["gold", "silver", "bronze"][i as usize % 3]) })
            .collect();
        d.collection::<Document>("customers").insert_many(customers).await.unwrap();
        d.collection::<Document>("orders")
            .create_index(
                mongodb::IndexModel::builder()
                    .keys(doc! { "status": 1, "created": -1 })
                    .build(),
            )
            .await
            .unwrap();
    });
}

/// Starts `capture --from-profiler` on `db` for `window` into `out`, and waits until it has set
/// the profiler.
fn start_capture(
    server: &TestServer,
    db: &str,
    window: &str,
    out: &std::path::Path,
) -> std::process::Child {
    let capture = Command::new(bin_path())
        .args([
            "capture",
            "--from-profiler",
            &server.uri,
            "--db",
            db,
            "--for",
            window,
            "--out",
        ])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_level_2(server, db);
    capture
}

/// Waits until the capture has set the profiler (level 2) on `db`.
fn wait_for_level_2(server: &TestServer, db: &str) {
    let t = Instant::now();
    while settings(server, db).0 != 2 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the capture never set the profiler"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs a captured `profile` of source database `db` for 3 s on a fresh database of `server`
/// (its `_replay` database renamed), into `out`.
fn run_on_a_fresh_database(
    profile: &str,
    db: &str,
    server: &TestServer,
    dir: &std::path::Path,
    out: &std::path::Path,
) -> std::process::Output {
    let fresh = common::unique_db("captured");
    let copy = dir.join("fresh.toml");
    std::fs::write(
        &copy,
        profile.replace(
            &format!("database = \"{db}_replay\""),
            &format!("database = \"{fresh}\""),
        ),
    )
    .unwrap();
    bin()
        .args(["run", copy.to_str().unwrap(), "--uri", &server.uri])
        .args(["--duration", "3s", "--no-resources", "--out"])
        .arg(out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn a_profiler_capture_of_a_known_mix_runs_as_that_mix() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("capture");
    load(&server, &db);
    let before = settings(&server, &db);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shop");
    let capture = start_capture(&server, &db, "20s", &out);
    run_python(WORKLOAD, &server, &db, dir.path());
    let done = capture.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        settings(&server, &db),
        before,
        "the profiler's settings as they were"
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capture.json")).unwrap()).unwrap();
    let shapes = json["shapes"].as_array().unwrap();
    let total: u64 = shapes.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert_eq!(
        total, 1000,
        "every operation of the workload, once: {shapes:#?}"
    );
    for (op, coll, share) in MIX {
        let s = shapes
            .iter()
            .find(|s| s["operation"] == op && s["namespace"] == format!("{db}.{coll}"))
            .unwrap_or_else(|| panic!("no {op} on {coll}: {shapes:#?}"));
        let got = s["share"].as_f64().unwrap();
        assert!(
            (got - share).abs() <= 0.02,
            "{op} on {coll}: {got} against {share}"
        );
        assert!(s["emitted"].as_str().unwrap().starts_with("shopapp"), "{s}");
    }
    let shape_of = |op: &str| {
        shapes.iter().find(|s| s["operation"] == op).unwrap()["shape"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        shape_of("find"),
        r#"find {"filter":{"status":"?string","created":{"$gte":"?date"}},"sort":{"created":-1},"limit":"?number"}"#
    );
    assert_eq!(
        shape_of("updateOne"),
        r#"updateOne {"filter":{"_id":"?number"},"update":{"$inc":{"total":"?number"}}}"#
    );
    assert!(shape_of("aggregate").contains(r#"{"$match":{"customer":{"$in":"?[number]"}}},{"$group":{"_id":"$customer","total":{"$sum":"$total"}}}"#));
    assert_eq!(
        shape_of("countDocuments"),
        r#"countDocuments {"filter":{"tier":{"$in":"?[string]"}}}"#
    );

    // The profile runs on a fresh database, and the server plans its find as it planned the
    // workload's: on the same index.
    let profile = std::fs::read_to_string(out.join("profile.toml")).unwrap();
    assert!(profile.contains("status_1_created_-1"), "{profile}");
    // Never the source's database: a run against the source must not drop its collections.
    assert!(
        profile.contains(&format!("database = \"{db}_replay\"")),
        "{profile}"
    );
    let run_out = dir.path().join("run");
    let ran = run_on_a_fresh_database(&profile, &db, &server, dir.path(), &run_out);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{stderr}{}",
        String::from_utf8_lossy(&ran.stdout)
    );
    let plan_line = stderr
        .lines()
        .find(|l| l.starts_with("query plan:") && l.contains("find-orders-by-status-created"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        plan_line.contains("IXSCAN status_1_created_-1"),
        "{plan_line}"
    );
    // The workload's own find, explained: the same index.
    let own = command(
        &server,
        &db,
        doc! {
            "explain": { "find": "orders", "filter": { "status": "open", "created": { "$gte": mongodb::bson::DateTime::now() } }, "sort": { "created": -1 }, "limit": 20 },
            "verbosity": "queryPlanner",
        },
    );
    assert!(own.to_string().contains("status_1_created_-1"), "{own}");
    let summary = common::read_json(&run_out.join("summary.json"));
    assert!(common::row(&summary, "TOTAL")["samples"].as_u64().unwrap() > 0);
}

#[test]
fn an_interrupted_capture_puts_the_profiler_back() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("capture_int");
    load(&server, &db);
    // Settings of the user's own: level 1 at 50 ms.
    command(&server, &db, doc! { "profile": 1, "slowms": 50 });
    let before = settings(&server, &db);
    assert_eq!(before, (1, 50));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    let capture = start_capture(&server, &db, "5m", &out);
    let client = server.client();
    common::runtime().block_on(async {
        client
            .database(&db)
            .collection::<Document>("orders")
            .find_one(doc! { "_id": 1 })
            .await
            .unwrap();
    });
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(capture.id() as i32, libc::SIGINT) };
    let done = capture.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("settings are as they were"), "{stderr}");
    assert_eq!(
        settings(&server, &db),
        before,
        "as they were after a Ctrl-C"
    );
    // What was captured before the interrupt is written, whole.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capture.json")).unwrap()).unwrap();
    assert_eq!(json["operations"], 1);
}

/// Transactions through pymongo's `with session.start_transaction()`: those whose every
/// statement the profiler tied to the session (a findOne, then an insert) become one
/// transaction of steps; those with an update, whose statement entry carries no session on this
/// server, are counted partial and captured statement by statement. The profile runs.
#[test]
fn transactions_seen_whole_become_a_transaction_of_steps() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("capture_txn");
    load(&server, &db);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("txn");
    let capture = start_capture(&server, &db, "10s", &out);
    run_python(
        r#"
import sys, time
from pymongo import MongoClient
c = MongoClient(sys.argv[1], appname="shopapp")
db = c[sys.argv[2]]
for i in range(40):
    with c.start_session() as s, s.start_transaction():
        db.customers.find_one({"_id": i}, session=s)
        db.orders.insert_one({"status": "open", "customer": i, "total": 10}, session=s)
time.sleep(0.05)
for i in range(20):
    with c.start_session() as s, s.start_transaction():
        db.customers.find_one({"_id": i}, session=s)
        db.orders.update_one({"_id": i}, {"$inc": {"total": 1}}, session=s)
"#,
        &server,
        &db,
        dir.path(),
    );
    let done = capture.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(done.status.code(), Some(0), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("capture.json")).unwrap()).unwrap();
    assert_eq!(json["left_out"]["transactions"], 40, "{stdout}");
    assert_eq!(json["left_out"]["partial_transactions"], 20, "{stdout}");
    // 40 transactions, and the partial ones' 20 finds and 20 updates one by one.
    assert_eq!(json["operations"], 80, "{stdout}");
    let shapes = json["shapes"].as_array().unwrap();
    let steps: Vec<(&str, &str, u64)> = shapes
        .iter()
        .filter(|s| s["shape"].as_str().unwrap().starts_with("transaction step"))
        .map(|s| {
            (
                s["operation"].as_str().unwrap(),
                s["namespace"].as_str().unwrap(),
                s["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let (customers, orders) = (format!("{db}.customers"), format!("{db}.orders"));
    assert_eq!(
        steps,
        vec![
            ("findOne", customers.as_str(), 40),
            ("insertOne", orders.as_str(), 40)
        ],
        "{shapes:#?}"
    );
    let profile = std::fs::read_to_string(out.join("profile.toml")).unwrap();
    let txn = &profile[profile
        .find("name = \"shopapp-transaction\"")
        .expect(&profile)..];
    assert!(txn.contains("transaction = true"), "{txn}");
    assert!(
        txn.contains("[[group.steps]]\ncollection = \"orders\""),
        "{txn}"
    );

    let run_out = dir.path().join("run");
    let ran = bin()
        .arg("run")
        .arg(out.join("profile.toml"))
        .args([
            "--uri",
            &server.uri,
            "--duration",
            "3s",
            "--no-resources",
            "--out",
        ])
        .arg(&run_out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&ran.stderr),
        String::from_utf8_lossy(&ran.stdout)
    );
    let summary = common::read_json(&run_out.join("summary.json"));
    let row = common::row(&summary, "shopapp-transaction");
    assert!(row["samples"].as_u64().unwrap() > 0, "{row}");
    assert_eq!(row["errors"].as_u64().unwrap(), 0, "{row}");
}

/// Runs `tests/capture/SCRIPT` with the server's URI and `args`, to its end.
fn run_script(script: &str, server: &TestServer, args: &[&str]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/capture")
        .join(script);
    let py = Command::new(python_with_pymongo())
        .arg(&path)
        .arg(&server.uri)
        .args(args)
        .output()
        .expect("python3 with pymongo (scripts/test.sh installs it)");
    assert!(
        py.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&py.stderr)
    );
}

/// A skewed chat of the test's own (tests/capture/chat_load.py, chat_app.py): 2,000 authors of
/// Zipf-skewed activity (one message each at least; the 20 busiest authors' messages all of the
/// last 6 hours, so the date goes with the rank), 200 rooms referenced by ObjectId, a unique
/// index on users' names, reads of a room, of an author's last 12 hours, a `$in` of 5 rooms, an
/// unread count and a costly trending aggregate (4 % of the operations), the
/// busiest authors and rooms asked for most. Captured from the profiler and replayed on a fresh
/// database with the profiler on, every read's documents returned, examined and counted per
/// call are measured by pymongo alone on both sides (chat_measure.py): each within 25 % of the
/// application's (35 % for a time range, whose density moves with the clock).
#[test]
fn a_skewed_chat_replays_the_applications_work_per_call() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("chat");
    let dir = tempfile::tempdir().unwrap();
    run_script("chat_load.py", &server, &[&db]);
    let out = dir.path().join("chat");
    let capture = start_capture(&server, &db, "20s", &out);
    let app = dir.path().join("app.json");
    run_script("chat_app.py", &server, &[&db, app.to_str().unwrap()]);
    let done = capture.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains("warning:"), "{stdout}{stderr}");

    let json = common::read_json(&out.join("capture.json"));
    let shapes = json["shapes"].as_array().unwrap();
    // The costly read is kept by default: few operations, much of the server's time.
    let trending = shapes
        .iter()
        .find(|s| s["shape"].as_str().unwrap().contains("$room_id"))
        .unwrap_or_else(|| panic!("no trending aggregate: {shapes:#?}"));
    assert!(
        !trending["emitted"]
            .as_str()
            .unwrap()
            .starts_with("not emitted"),
        "{trending}"
    );
    assert!(trending["share"].as_f64().unwrap() < 0.05, "{trending}");
    assert!(
        trending["server_time_share"].as_f64().unwrap() > 0.15,
        "{trending}"
    );
    // Every emitted read was measured on both sides by the check, and printed.
    for s in shapes.iter().filter(|s| {
        !s["emitted"].as_str().unwrap().starts_with("not emitted") && s["writes"] == false
    }) {
        assert!(s["source_work"]["calls"].as_u64().unwrap() >= 3, "{s}");
        assert!(s["replay_work"]["calls"].as_u64().unwrap() >= 3, "{s}");
        let name = s["emitted"].as_str().unwrap();
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(name) && l.contains(" / ")),
            "no work line for {name}: {stdout}"
        );
    }
    let profile = std::fs::read_to_string(out.join("profile.toml")).unwrap();
    // The authors' number: 2,000 in the source, within 20 %.
    let distinct: f64 = profile
        .split("author: operations select by it; documents: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{profile}"));
    assert!((distinct - 2000.0).abs() <= 400.0, "{distinct}: {profile}");
    // No observed value leaves the source: the users' names (u and five digits) are nowhere.
    let observed_name = profile.as_bytes().windows(8).any(|w| {
        w[0] == b'"' && w[1] == b'u' && w[2..7].iter().all(u8::is_ascii_digit) && w[7] == b'"'
    });
    assert!(!observed_name, "{profile}");
    // The unique names are made from each document's _id, and rooms are referenced by key.
    assert!(
        profile.contains(
            r#"name = { "^FormatString" = { format = "name-%d", withArgs = [{ "^Id" = {} }] } }"#
        ),
        "{profile}"
    );
    assert!(
        profile.contains("room_id: the _ids of rooms, which the replay preloads as 0 .. 199"),
        "{profile}"
    );
    // The 20 busiest authors' messages are all recent: the date goes with the author's rank.
    assert!(
        profile.contains(r#"created = { by_rank_of = "author", ranks = ["#),
        "{profile}"
    );

    // The replay, unedited but for its database, on a fresh one with the profiler on.
    let fresh = common::unique_db("chatreplay");
    command(&server, &fresh, doc! { "profile": 2 });
    let copy = dir.path().join("replay.toml");
    std::fs::write(
        &copy,
        profile.replace(
            &format!("database = \"{db}_replay\""),
            &format!("database = \"{fresh}\""),
        ),
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let ran = bin()
        .args(["run", copy.to_str().unwrap(), "--uri", &server.uri])
        // Twice the captured rate, for hundreds of calls of each read in 10 s.
        .args([
            "--scale",
            "2",
            "--duration",
            "10s",
            "--no-resources",
            "--out",
        ])
        .arg(&run_dir)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let run_err = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{run_err}");
    // Every read finds what it looks for, and the users were raised with the rate.
    assert!(!run_err.contains("found a document"), "{run_err}");
    assert!(
        run_err.contains("--scale 2 raises the users with the rate"),
        "{run_err}"
    );
    let summary = common::read_json(&run_dir.join("summary.json"));
    // No row failed: the users' preload and inserts never repeated a unique name.
    for row in summary["runs"][0]["rows"].as_array().unwrap() {
        assert_eq!(row["errors"], 0, "the replay ran with errors: {row}");
        assert!(row["samples"].as_u64().unwrap() > 0, "{row}");
    }

    let measured = dir.path().join("measured.json");
    run_script(
        "chat_measure.py",
        &server,
        &[
            &db,
            &fresh,
            app.to_str().unwrap(),
            measured.to_str().unwrap(),
        ],
    );
    let m = common::read_json(&measured);
    let kinds = [
        ("room", 0.25),
        ("author", 0.35),
        ("rooms_in", 0.25),
        ("unread", 0.25),
        ("user", 0.25),
        ("room_title", 0.25),
        ("trending", 0.35),
    ];
    for (kind, tolerance) in kinds {
        let (source, replay) = (&m[kind]["source"], &m[kind]["replay"]);
        assert!(
            replay["calls"].as_u64().unwrap_or(0) >= 20,
            "{kind}: too few replay calls: {m:#}"
        );
        for figure in ["returned", "docs_examined", "keys_examined", "counted"] {
            let (Some(a), Some(b)) = (source[figure].as_f64(), replay[figure].as_f64()) else {
                assert!(
                    source[figure].is_null() && replay[figure].is_null(),
                    "{kind} {figure}: {m:#}"
                );
                continue;
            };
            assert!(
                (b - a).abs() <= tolerance * a.max(1.0),
                "{kind}: {figure} per call {a:.1} in the application, {b:.1} in the replay: {m:#}"
            );
        }
    }
}

/// A `--db` the server does not have is refused before the window, with the database it is
/// most like, and none is created on the source.
#[test]
fn a_database_the_server_lacks_is_refused_with_a_did_you_mean() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("shopdb");
    load(&server, &db);
    let typo = format!("{db}x");
    let t = Instant::now();
    let done = bin()
        .args([
            "capture",
            "--from-profiler",
            &server.uri,
            "--db",
            &typo,
            "--for",
            "5m",
            "--out",
        ])
        .arg(tempfile::tempdir().unwrap().path().join("cap"))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{stderr}");
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "refused before the window"
    );
    assert!(
        stderr.contains(&format!("the server has no database `{typo}`")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("did you mean --db {db}?")),
        "{stderr}"
    );
    let client = server.client();
    let names = common::runtime()
        .block_on(async { client.list_database_names().await })
        .unwrap();
    assert!(!names.contains(&typo), "{names:?}");
}
