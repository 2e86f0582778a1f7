//! Steps and transactions against the real server: the bundled transfer profile commits its
//! transactions, retries on the hot keys' write conflicts, and keeps the money (the tool's
//! invariant and an independent client's sum agree); a read-then-write flow does on the server
//! exactly the updates it counts; a transaction whose second step is refused leaves no trace of
//! its first.

use crate::common;
use crate::wire_log;

use common::proxy::Cuttable;
use common::{bin, read_json, row, TestServer};
use mongodb::bson::{doc, Document};

/// The bundled transfer profile on this test's own database, with `keys` for the accounts.
fn transfer(db: &str, keys: &str) -> String {
    let text = mongo_stress::plan::profile::bundled::get("transfer")
        .unwrap()
        .replace("keys = \"zipfian\"", &format!("keys = \"{keys}\""));
    assert!(text.contains(&format!("keys = \"{keys}\"")));
    format!("{text}\n[target]\ndatabase = \"{db}\"\n")
}

fn run(server: &TestServer, text: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(&profile, text).unwrap();
    let out = dir.path().join("run");
    bin()
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
        ])
        .args(["--no-resources", "--out"])
        .arg(&out)
        .args(extra)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);
    let summary = read_json(&out.join("summary.json"));
    common::validate_schema(&summary);
    summary
}

/// Sum and lowest of the accounts' balances, as an independent client reads them.
fn balances(server: &TestServer, db: &str) -> (i64, i64, u64) {
    let client = server.client();
    let accounts = client.database(db).collection::<Document>("accounts");
    common::runtime().block_on(async {
        let mut cursor = accounts.find(doc! {}).await.unwrap();
        let (mut sum, mut lowest, mut n) = (0i64, i64::MAX, 0u64);
        while cursor.advance().await.unwrap() {
            let d = Document::try_from(cursor.current()).unwrap();
            let b = match d.get("balance").unwrap() {
                mongodb::bson::Bson::Int32(x) => i64::from(*x),
                mongodb::bson::Bson::Int64(x) => *x,
                other => panic!("balance is not an integer: {other:?}"),
            };
            sum += b;
            lowest = lowest.min(b);
            n += 1;
        }
        (sum, lowest, n)
    })
}

#[test]
fn transfers_commit_retry_on_hot_keys_and_keep_the_money() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let mut retries = Vec::new();
    for keys in ["uniform", "zipfian"] {
        let db = common::unique_db(&format!("transfer_{keys}"));
        let s = run(
            &server,
            &transfer(&db, keys),
            &["--duration", "3s", "--threads", "16"],
        );
        let r = row(&s, "transfer");
        let t = &r["transactions"];
        let committed = t["committed"].as_u64().unwrap();
        let aborted = t["aborted"].as_u64().unwrap();
        assert!(committed > 100, "{keys}: {t}");
        // Every sample is one transaction, ended one way or another.
        assert_eq!(
            committed + aborted + t["in_doubt"].as_u64().unwrap(),
            r["samples"].as_u64().unwrap(),
            "{keys}: {t}"
        );
        assert_eq!(t["in_doubt"], 0, "{keys}: no server went away");
        // Each committed transfer is two updates, each changing one document.
        assert_eq!(r["updated"].as_u64().unwrap(), 2 * committed, "{keys}: {r}");
        let hist: u64 = t["retried"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(
            hist,
            r["samples"].as_u64().unwrap(),
            "{keys}: the histogram counts every transaction"
        );
        // Each step's row times the step (of the attempt that counted), and the first attempt
        // of every transaction has a row of its own.
        let samples = r["samples"].as_u64().unwrap();
        assert_eq!(
            row(&s, "transfer:step0")["samples"].as_u64().unwrap(),
            samples
        );
        assert!(row(&s, "transfer:step1")["samples"].as_u64().unwrap() >= committed);
        let first = row(&s, "transfer:first-attempt");
        assert_eq!(first["samples"].as_u64().unwrap(), samples);
        assert!(first["average_ms"].as_f64().unwrap() <= r["average_ms"].as_f64().unwrap() + 1e-9);
        retries.push(t["retries"].as_u64().unwrap() as f64 / r["samples"].as_f64().unwrap());
        // The tool's invariant, and an independent client's sum.
        let inv = &s["runs"][0]["invariants"][0];
        assert_eq!(inv["holds"], true, "{keys}: {inv}");
        assert_eq!(inv["sum_before"], 100_000.0);
        assert_eq!(inv["sum_after"], 100_000.0);
        let (sum, lowest, n) = balances(&server, &db);
        assert_eq!((sum, n), (100_000, 1000), "{keys}: the server's sum");
        assert!(lowest >= 0, "{keys}: a negative balance {lowest}");
    }
    // Hot keys meet: most transfers on a few accounts conflict and are retried.
    let (uniform, zipfian) = (retries[0], retries[1]);
    assert!(
        zipfian > 0.01,
        "zipfian transfers retried {zipfian} times per transfer"
    );
    assert!(
        zipfian > 2.0 * uniform,
        "retries per transfer: uniform {uniform}, zipfian {zipfian}"
    );
}

#[test]
fn a_read_then_write_flow_does_on_the_server_the_updates_it_counts() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("readwrite");
    let text = format!(
        r#"[target]
database = "{db}"
[[collection]]
name = "items"
drop = true
preload = 200
[collection.document]
hits = 0
[[group]]
name = "touch"
keys = "zipfian"
threads = 4
loops = 250
[[group.steps]]
findOne = {{ filter = {{ _id = {{ "^Key" = {{}} }} }}, projection = {{ _id = 1 }} }}
[[group.steps]]
updateOne = {{ filter = {{ _id = {{ "^Step" = {{ index = 0, path = "_id" }} }} }}, update = {{ "$inc" = {{ hits = 1 }} }} }}
"#
    );
    let s = run(&server, &text, &[]);
    let r = row(&s, "touch");
    assert_eq!(r["samples"], 1000);
    assert_eq!(r["errors"], 0);
    // Every read found its document and every update changed it.
    assert_eq!(r["matched"], 1000, "{r}");
    assert_eq!(r["returned"], 1000, "{r}");
    assert_eq!(r["updated"], 1000, "{r}");
    let client = server.client();
    let hits: i64 = common::runtime().block_on(async {
        let items = client.database(&db).collection::<Document>("items");
        let mut c = items
            .aggregate(vec![
                doc! { "$group": { "_id": null, "n": { "$sum": "$hits" } } },
            ])
            .await
            .unwrap();
        assert!(c.advance().await.unwrap());
        let d = Document::try_from(c.current()).unwrap();
        match d.get("n").unwrap() {
            mongodb::bson::Bson::Int32(x) => i64::from(*x),
            mongodb::bson::Bson::Int64(x) => *x,
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(hits, 1000, "the documents' own counters");
}

#[test]
fn a_transaction_whose_second_step_is_refused_aborts_and_leaves_no_trace() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("abort");
    // The first step writes a log entry; the second inserts an account whose _id exists.
    let text = format!(
        r#"[target]
database = "{db}"
[[collection]]
name = "accounts"
drop = true
preload = 10
[collection.document]
balance = 100
[[collection]]
name = "log"
drop = true
[[group]]
name = "open"
threads = 2
loops = 20
transaction = true
[[group.steps]]
collection = "log"
insertOne = {{ document = {{ note = "opening" }} }}
[[group.steps]]
insertOne = {{ document = {{ _id = 3, balance = 0 }} }}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(&profile, text).unwrap();
    let out = dir.path().join("run");
    // Every operation fails (a duplicate key): exit 1, with everything summarised.
    bin()
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
        ])
        .args(["--no-resources", "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(1);
    let s = read_json(&out.join("summary.json"));
    common::validate_schema(&s);
    let r = row(&s, "open");
    let t = &r["transactions"];
    assert_eq!(r["samples"], 40);
    assert_eq!(t["aborted"], 40, "{t}");
    assert_eq!(t["committed"], 0, "{t}");
    assert_eq!(r["errors"], 40, "{r}");
    assert_eq!(
        r["inserted"], 0,
        "an aborted transaction's inserts are not counted: {r}"
    );
    let classes = &s["runs"][0]["errors_by_class"]["open"];
    assert!(
        classes.as_object().unwrap().contains_key("duplicate_key"),
        "{classes}"
    );
    // The server's witness: no log entry survived, the accounts are as preloaded.
    assert_eq!(server.count(&db, "log", doc! {}), 0);
    assert_eq!(server.count(&db, "accounts", doc! {}), 10);
}

/// The transfer profile with a log step (a witness on the server of every transfer that got
/// past its credit), run while the server goes away for a second and comes back.
fn transfers_across_an_outage(
    server: &TestServer,
    db: &str,
    transaction: bool,
) -> (
    serde_json::Value,
    i32,
    std::path::PathBuf,
    tempfile::TempDir,
) {
    let text = transfer(db, "uniform")
        .replace(
            "transaction = true ",
            &format!("transaction = {transaction} "),
        )
        .replace(
            "# ... and give it to the other.",
            "# ... and give it to the other.\n[[group.steps]]\ncollection = \"log\"\ninsertOne = { document = { amount = { \"^Bind\" = \"amount\" } } }",
        )
        + "op_timeout = \"3s\"\n[[collection]]\nname = \"log\"\ndrop = true\n";
    assert!(
        text.contains("collection = \"log\"")
            && text.contains(&format!("transaction = {transaction}"))
    );
    let proxy = Cuttable::start(common::proxy::port_of(&server.uri));
    // No retryable writes: a write cut off is not sent again, so the steps' atomicity is what
    // the test sees.
    let uri = format!(
        "mongodb://127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=1000&retryWrites=false",
        proxy.port
    );
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(&profile, &text).unwrap();
    let out = dir.path().join("run");
    let child = std::process::Command::new(common::bin_path())
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &uri,
            "--quiet",
            "--no-resources",
        ])
        .args(["--duration", "6s", "--threads", "16", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let the transfers run, then take the server away for a second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.count(db, "log", doc! {}) < 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "no transfer within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    proxy.cut();
    std::thread::sleep(std::time::Duration::from_secs(1));
    proxy.restore();
    let done = child.wait_with_output().unwrap();
    let code = done.status.code().unwrap_or(-1);
    let s = read_json(&out.join("summary.json"));
    common::validate_schema(&s);
    (s, code, out, dir)
}

#[test]
fn transactions_cut_off_by_a_server_gone_away_are_never_counted_as_committed() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("gone");
    let (s, code, out, _dir) = transfers_across_an_outage(&server, &db, true);
    // A transaction cut off is retried (TransientTransactionError) until the server is back, so
    // the run may well end with none failed.
    assert!(code == 0 || code == 1, "exit {code}");
    let r = row(&s, "transfer");
    let t = &r["transactions"];
    let (committed, in_doubt) = (
        t["committed"].as_u64().unwrap(),
        t["in_doubt"].as_u64().unwrap(),
    );
    let logged = server.count(&db, "log", doc! {});
    // What the tool calls committed is on the server; what the server holds beyond that is
    // among the ones it called in doubt.
    assert!(committed >= 200, "{t}");
    assert!(
        committed <= logged,
        "committed {committed}, logged {logged}: {t}"
    );
    assert!(
        logged <= committed + in_doubt,
        "committed {committed} + in doubt {in_doubt} < logged {logged}: {t}"
    );
    let retries = t["retries"].as_u64().unwrap() + t["commit_retries"].as_u64().unwrap();
    assert!(
        retries + in_doubt + r["errors"].as_u64().unwrap() > 0,
        "the outage must show as retries, doubt or failures: {r}"
    );
    assert_eq!(
        code == 1,
        r["errors"].as_u64().unwrap() > 0,
        "exit {code}: {r}"
    );
    // Every transaction was all or nothing: the money is all there, by the tool's check after
    // the server came back and by an independent client.
    let inv = &s["runs"][0]["invariants"][0];
    assert_eq!(inv["holds"], true, "{inv}");
    let (sum, lowest, _) = balances(&server, &db);
    assert_eq!(sum, 100_000);
    assert!(lowest >= 0);
    // The sample log is whole: a line per sample, each with all its fields.
    let text = std::fs::read_to_string(out.join("samples.tsv")).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    let fields = lines[0].split('\t').count();
    assert!(lines.iter().all(|l| l.split('\t').count() == fields));
    assert_eq!(lines.len() as u64, r["samples"].as_u64().unwrap());
}

#[test]
fn without_a_transaction_the_invariant_check_shows_the_money_an_outage_lost() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("nontx");
    let (s, code, _out, _dir) = transfers_across_an_outage(&server, &db, false);
    assert_eq!(code, 1);
    // 16 users, each about half its time between its debit and its credit: a cut catches some
    // between the two, and their amount is gone.
    let inv = &s["runs"][0]["invariants"][0];
    let (sum, _, _) = balances(&server, &db);
    assert!(
        sum < 100_000,
        "the outage caught no transfer between its steps"
    );
    assert_eq!(inv["holds"], false, "{inv}");
    assert_eq!(
        inv["sum_after"].as_f64().unwrap(),
        sum as f64,
        "the tool's check and the server agree"
    );
    assert!(
        row(&s, "transfer").get("transactions").is_none(),
        "no transactions without one"
    );
}

#[test]
fn each_virtual_user_keeps_one_session_for_its_transactions() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("sessions");
    let wire = wire_log::start(common::proxy::port_of(&server.uri));
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(&profile, transfer(&db, "uniform")).unwrap();
    bin()
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &wire.uri(),
            "--quiet",
            "--no-resources",
        ])
        .args(["--threads", "4", "--loops", "25", "--out"])
        .arg(dir.path().join("run"))
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);
    // Every command of a transaction carries its session's id and transaction number.
    let mut numbers: std::collections::BTreeMap<Vec<u8>, std::collections::BTreeSet<i64>> =
        Default::default();
    for e in wire
        .all()
        .iter()
        .filter(|e| e.command == "commitTransaction")
    {
        let lsid = match e.body.get_document("lsid").unwrap().get("id") {
            Some(mongodb::bson::Bson::Binary(b)) => b.bytes.clone(),
            other => panic!("an lsid's id is a UUID: {other:?}"),
        };
        numbers
            .entry(lsid)
            .or_default()
            .insert(e.body.get_i64("txnNumber").unwrap());
    }
    let commits: usize = numbers.values().map(|n| n.len()).sum();
    assert!(
        commits >= 100,
        "4 users x 25 transfers commit, some after retries: {commits}"
    );
    // 4 users: 4 sessions, each with its user's transactions numbered one after another.
    assert_eq!(numbers.len(), 4, "sessions: {}", numbers.len());
    for n in numbers.values() {
        assert!(
            n.len() >= 25,
            "a user's session committed {} transactions",
            n.len()
        );
    }
}
