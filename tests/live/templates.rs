//! The profile's own operations (`[[collection]]` document templates, operation tables,
//! `[[group.ops]]`) against a real server, with the server as the witness: the documents it
//! holds afterwards (types, bounds and counts by aggregation through the `mongodb` driver), its
//! own explain, and the commands and replies on the wire (a logging proxy, `common/wire_log.rs`),
//! never the tool's own output alone.

use crate::common;
use crate::wire_log;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::proxy::port_of;
use common::*;
use mongodb::bson::{doc, Bson, DateTime, Document};

/// Writes `text` as `name.toml` in `dir`.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write profile");
    path
}

/// `mongo-stress ARGS...`, bounded to 2 minutes: exit code, stdout, stderr.
fn mongo_stress(args: &[&str]) -> (Option<i32>, String, String) {
    let out = bin()
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run mongo-stress");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `run PROFILE --uri URI --quiet --no-resources --out OUT`, which must exit 0; summary.json.
fn run_ok(uri: &str, profile: &Path, out: &Path) -> serde_json::Value {
    let (code, stdout, stderr) = mongo_stress(&[
        "run",
        profile.to_str().unwrap(),
        "--uri",
        uri,
        "--quiet",
        "--no-resources",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    read_json(&out.join("summary.json"))
}

fn n(r: &serde_json::Value, key: &str) -> u64 {
    r[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count in {r}"))
}

fn aggregate(server: &TestServer, db: &str, coll: &str, pipeline: Vec<Document>) -> Vec<Document> {
    server.aggregate(db, coll, pipeline)
}

fn all_documents(server: &TestServer, db: &str, coll: &str) -> Vec<Document> {
    aggregate(server, db, coll, vec![])
}

/// The finds of the load on `coll`: a filter on one numeric `_id` (the setup's own two finds
/// filter on the `_id`'s type).
fn key_finds(wire: &wire_log::WireLog, db: &str, coll: &str) -> Vec<wire_log::Exchange> {
    wire.commands(db, "find", coll)
        .into_iter()
        .filter(|f| {
            matches!(
                f.body
                    .get_document("filter")
                    .ok()
                    .and_then(|d| d.get("_id")),
                Some(Bson::Int32(_) | Bson::Int64(_))
            )
        })
        .collect()
}

/// True when the server is secantusd-rs (its buildInfo has `secantusVersion`), not mongod.
fn is_secantus(server: &TestServer) -> bool {
    let client = server.client();
    runtime()
        .block_on(async {
            client
                .database("admin")
                .run_command(doc! { "buildInfo": 1 })
                .await
        })
        .expect("buildInfo")
        .contains_key("secantusVersion")
}

fn collection_names(server: &TestServer, db: &str) -> Vec<String> {
    let client = server.client();
    runtime()
        .block_on(async { client.database(db).list_collection_names().await })
        .expect("listCollections")
}

fn date(s: &str) -> DateTime {
    DateTime::parse_rfc3339_str(s).unwrap()
}

fn as_i64(b: &Bson) -> i64 {
    match b {
        Bson::Int32(n) => i64::from(*n),
        Bson::Int64(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

fn as_f64(b: &Bson) -> f64 {
    match b {
        Bson::Int32(n) => f64::from(*n),
        Bson::Int64(n) => *n as f64,
        Bson::Double(x) => *x,
        other => panic!("not a number: {other:?}"),
    }
}

/// The set of strings in an array field of `d`, sorted.
fn strings(d: &Document, key: &str) -> Vec<String> {
    let mut v: Vec<String> = d
        .get_array(key)
        .unwrap_or_else(|_| panic!("{key} in {d}"))
        .iter()
        .map(|b| b.as_str().expect("a string").to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn generated_values_land_on_the_server_with_their_bson_types_and_within_their_bounds() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_types");
    let profile = write(
        dir.path(),
        "types",
        &format!(
            r#"name = "types"
[target]
database = "{db}"
[[collection]]
name = "things"
drop = true
[collection.document]
n = {{ "^RandomInt" = {{ min = 10, max = 20 }} }}
d = {{ "^RandomDouble" = {{ min = 1.5, max = 2.5 }} }}
s = {{ "^RandomString" = {{ length = {{ "^RandomInt" = {{ min = 3, max = 7 }} }}, alphabet = "xyz" }} }}
c = {{ "^Choose" = {{ from = ["red", "green", "blue"] }} }}
when = {{ "^RandomDate" = {{ min = "2020-01-01T00:00:00Z", max = "2020-12-31T00:00:00Z" }} }}
oid = {{ "^ObjectId" = {{}} }}
u = {{ "^UUID" = {{}} }}
arr = {{ "^Array" = {{ of = {{ "^RandomInt" = {{ min = 1, max = 9 }} }}, number = {{ "^RandomInt" = {{ min = 2, max = 4 }} }} }} }}
lit = 2021-06-01T12:00:00Z
dec = {{ "$numberDecimal" = "1.5" }}
[[group]]
name = "ins"
threads = 3
loops = 200
[group.insertOne]
"#
        ),
    );
    let summary = run_ok(&server.uri, &profile, &dir.path().join("run"));
    let ins = row(&summary, "ins");
    assert_eq!((n(ins, "samples"), n(ins, "errors")), (600, 0), "{ins}");
    assert_eq!(n(ins, "inserted"), 600, "{ins}");

    // The witness: the server's own view of the documents.
    let stats = aggregate(
        &server,
        &db,
        "things",
        vec![doc! { "$group": {
            "_id": Bson::Null,
            "count": { "$sum": 1 },
            "n_types": { "$addToSet": { "$type": "$n" } },
            "n_min": { "$min": "$n" }, "n_max": { "$max": "$n" },
            "d_types": { "$addToSet": { "$type": "$d" } },
            "d_min": { "$min": "$d" }, "d_max": { "$max": "$d" },
            "s_types": { "$addToSet": { "$type": "$s" } },
            "s_len_min": { "$min": { "$strLenCP": "$s" } },
            "s_len_max": { "$max": { "$strLenCP": "$s" } },
            "c_types": { "$addToSet": { "$type": "$c" } },
            "c_values": { "$addToSet": "$c" },
            "when_types": { "$addToSet": { "$type": "$when" } },
            "when_min": { "$min": "$when" }, "when_max": { "$max": "$when" },
            "oid_types": { "$addToSet": { "$type": "$oid" } },
            "oids": { "$addToSet": "$oid" },
            "u_types": { "$addToSet": { "$type": "$u" } },
            "arr_types": { "$addToSet": { "$type": "$arr" } },
            "arr_size_min": { "$min": { "$size": "$arr" } },
            "arr_size_max": { "$max": { "$size": "$arr" } },
            "lit_types": { "$addToSet": { "$type": "$lit" } },
            "lit_min": { "$min": "$lit" }, "lit_max": { "$max": "$lit" },
            "dec_types": { "$addToSet": { "$type": "$dec" } },
            "dec_values": { "$addToSet": { "$toString": "$dec" } },
        } }],
    );
    assert_eq!(stats.len(), 1, "{stats:?}");
    let s = &stats[0];
    assert_eq!(
        as_i64(s.get("count").unwrap()),
        600,
        "documents on the server"
    );
    assert_eq!(server.count(&db, "things", doc! {}), n(ins, "inserted"));
    for (field, ty) in [
        ("n", "long"),
        ("d", "double"),
        ("s", "string"),
        ("c", "string"),
        ("when", "date"),
        ("oid", "objectId"),
        ("u", "binData"),
        ("arr", "array"),
        ("lit", "date"),
        ("dec", "decimal"),
    ] {
        assert_eq!(
            strings(s, &format!("{field}_types")),
            vec![ty.to_string()],
            "the $type of {field} on the server: {s}"
        );
    }
    // ^RandomInt is inclusive of both ends; 600 draws of 11 values see both.
    assert_eq!(
        (
            as_i64(s.get("n_min").unwrap()),
            as_i64(s.get("n_max").unwrap())
        ),
        (10, 20),
        "{s}"
    );
    let (d_min, d_max) = (
        as_f64(s.get("d_min").unwrap()),
        as_f64(s.get("d_max").unwrap()),
    );
    assert!(
        (1.5..=2.5).contains(&d_min) && (1.5..=2.5).contains(&d_max) && d_max - d_min > 0.9,
        "^RandomDouble in [1.5, 2.5] and spread over it: {d_min}..{d_max}"
    );
    assert_eq!(
        (
            as_i64(s.get("s_len_min").unwrap()),
            as_i64(s.get("s_len_max").unwrap())
        ),
        (3, 7),
        "$strLenCP of s: {s}"
    );
    // Every string is of the alphabet only.
    assert_eq!(
        server.count(&db, "things", doc! { "s": { "$regex": "^[xyz]{3,7}$" } }),
        600
    );
    assert_eq!(
        strings(s, "c_values"),
        vec!["blue", "green", "red"],
        "^Choose draws only from `from`, and all of it"
    );
    let (w_min, w_max) = (
        s.get_datetime("when_min").unwrap(),
        s.get_datetime("when_max").unwrap(),
    );
    assert!(
        *w_min >= date("2020-01-01T00:00:00Z") && *w_max <= date("2020-12-31T00:00:00Z"),
        "^RandomDate within its bounds: {w_min}..{w_max}"
    );
    assert!(
        *w_min < date("2020-02-01T00:00:00Z") && *w_max > date("2020-12-01T00:00:00Z"),
        "^RandomDate spread over the year: {w_min}..{w_max}"
    );
    assert_eq!(
        s.get_array("oids").unwrap().len(),
        600,
        "each ^ObjectId is a new one"
    );
    assert_eq!(
        (
            as_i64(s.get("arr_size_min").unwrap()),
            as_i64(s.get("arr_size_max").unwrap())
        ),
        (2, 4),
        "$size of arr: {s}"
    );
    assert_eq!(
        (
            s.get_datetime("lit_min").unwrap(),
            s.get_datetime("lit_max").unwrap()
        ),
        (&date("2021-06-01T12:00:00Z"), &date("2021-06-01T12:00:00Z")),
        "a TOML datetime is that BSON date in every document"
    );
    assert_eq!(strings(s, "dec_values"), vec!["1.5"], "{s}");

    // The array's elements: all longs from 1 to 9.
    let elements = aggregate(
        &server,
        &db,
        "things",
        vec![
            doc! { "$unwind": "$arr" },
            doc! { "$group": { "_id": { "$type": "$arr" }, "min": { "$min": "$arr" }, "max": { "$max": "$arr" }, "count": { "$sum": 1 } } },
        ],
    );
    assert_eq!(elements.len(), 1, "one type of element: {elements:?}");
    let e = &elements[0];
    assert_eq!(e.get_str("_id").unwrap(), "long", "{e}");
    assert_eq!(
        (as_i64(e.get("min").unwrap()), as_i64(e.get("max").unwrap())),
        (1, 9),
        "{e}"
    );
    let count = as_i64(e.get("count").unwrap());
    assert!(
        (1200..=2400).contains(&count),
        "2 to 4 elements in each of 600: {count}"
    );

    // ^UUID: binary subtype 4 of 16 bytes, each a new one.
    let docs = all_documents(&server, &db, "things");
    let mut uuids = std::collections::HashSet::new();
    for d in &docs {
        match d.get("u") {
            Some(Bson::Binary(b)) => {
                assert_eq!(b.subtype, mongodb::bson::spec::BinarySubtype::Uuid, "{d}");
                assert_eq!(b.bytes.len(), 16, "{d}");
                // A random (version 4) UUID.
                assert_eq!(b.bytes[6] >> 4, 4, "{d}");
                uuids.insert(b.bytes.clone());
            }
            other => panic!("u is {other:?} in {d}"),
        }
        let dec = d.get("dec");
        assert_eq!(dec, Some(&Bson::Decimal128("1.5".parse().unwrap())), "{d}");
    }
    assert_eq!(uuids.len(), 600);
}

#[test]
fn named_ops_with_weights_70_20_10_share_10000_operations_within_2_points() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_weights");
    let mut text = format!(
        r#"name = "weights"
[target]
database = "{db}"
[[collection]]
name = "small"
drop = true
preload = 100
[collection.document]
v = {{ "^RandomInt" = {{ min = 1, max = 9 }} }}
[[group]]
name = "mix"
threads = 4
loops = 2500
"#
    );
    for (name, weight) in [("a", 70), ("b", 20), ("c", 10)] {
        text += &format!(
            "[[group.ops]]\nname = \"{name}\"\nweight = {weight}\nfindOne = {{ filter = {{ _id = {{ \"^Key\" = {{}} }} }} }}\n"
        );
    }
    let profile = write(dir.path(), "weights", &text);
    let wire = wire_log::start(port_of(&server.uri));
    let summary = run_ok(&wire.uri(), &profile, &dir.path().join("run"));
    assert_eq!(
        n(row(&summary, "mix"), "samples"),
        10_000,
        "4 users of 2500"
    );
    let mut sum = 0;
    for (name, weight) in [("a", 70.0), ("b", 20.0), ("c", 10.0)] {
        let r = row(&summary, &format!("mix:{name}"));
        let samples = n(r, "samples");
        sum += samples;
        assert_eq!(n(r, "errors"), 0, "{r}");
        assert_eq!(n(r, "matched"), samples, "every findOne found its key: {r}");
        let share = samples as f64 / 100.0;
        assert!(
            (share - weight).abs() <= 2.0,
            "mix:{name} is {share:.2} % of the operations, its weight {weight} %"
        );
    }
    assert_eq!(sum, 10_000, "the named rows add up to the group");
    // On the wire: one find per operation, each answered with its document.
    let finds = key_finds(&wire, &db, "small");
    assert_eq!(finds.len(), 10_000, "find commands the server received");
    assert!(finds
        .iter()
        .all(|f| f.first_batch().map(|b| b.len()) == Some(1)));
}

#[test]
fn insert_many_of_100_is_one_sample_per_batch_and_100_documents_each_on_the_server() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_many");
    let (threads, loops) = (3u64, 20u64);
    let profile = write(
        dir.path(),
        "many",
        &format!(
            r#"name = "many"
[target]
database = "{db}"
[[collection]]
name = "batch"
drop = true
[collection.document]
v = {{ "^RandomInt" = {{ min = 1, max = 9 }} }}
[[group]]
name = "load"
threads = {threads}
loops = {loops}
[group.insertMany]
batch = 100
"#
        ),
    );
    let wire = wire_log::start(port_of(&server.uri));
    let before = server.opcounters();
    let summary = run_ok(&wire.uri(), &profile, &dir.path().join("run"));
    let after = server.opcounters();
    let r = row(&summary, "load");
    let samples = n(r, "samples");
    assert_eq!(samples, threads * loops, "one sample per batch: {r}");
    assert_eq!(n(r, "errors"), 0, "{r}");
    assert_eq!(n(r, "inserted"), 100 * samples, "{r}");
    assert_eq!(
        server.count(&db, "batch", doc! {}),
        100 * samples,
        "documents on the server"
    );
    // On the wire: one insert command per sample, of 100 documents, each acknowledged in full.
    let inserts = wire.commands(&db, "insert", "batch");
    assert_eq!(inserts.len() as u64, samples, "insert commands sent");
    for i in &inserts {
        assert_eq!(i.documents("documents").len(), 100, "{:?}", i.body);
        assert!(i.ok(), "{:?}", i.reply);
        assert_eq!(i.reply_int("n"), 100, "{:?}", i.reply);
    }
    // serverStatus opcounters.insert: mongod counts each document of an insert (100 per
    // batch); secantusd-rs counts one per insert command, so one per batch.
    let delta = (counter(&after, "insert") - counter(&before, "insert")) as u64;
    let per_batch = if is_secantus(&server) { 1 } else { 100 };
    assert_eq!(
        delta,
        per_batch * samples,
        "opcounters.insert for {samples} batches of 100"
    );
}

#[test]
fn find_one_by_a_zipfian_key_on_a_preload_returns_a_document_every_time() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_zipf");
    let profile = write(
        dir.path(),
        "zipf",
        &format!(
            r#"name = "zipf"
[target]
database = "{db}"
[[collection]]
name = "items"
drop = true
preload = 1000
[collection.document]
v = {{ "^RandomInt" = {{ min = 1, max = 9 }} }}
[[group]]
name = "get"
keys = "zipfian"
threads = 4
loops = 500
[group.findOne]
filter = {{ _id = {{ "^Key" = {{}} }} }}
"#
        ),
    );
    let wire = wire_log::start(port_of(&server.uri));
    let summary = run_ok(&wire.uri(), &profile, &dir.path().join("run"));
    let r = row(&summary, "get");
    assert_eq!(n(r, "samples"), 2000, "{r}");
    assert_eq!(n(r, "errors"), 0, "{r}");
    assert_eq!(n(r, "matched"), 2000, "{r}");
    assert_eq!(n(r, "returned"), 2000, "{r}");
    assert_eq!(server.count(&db, "items", doc! {}), 1000);

    // On the wire: each find asked for one existing _id and got exactly that document.
    let finds = key_finds(&wire, &db, "items");
    assert_eq!(finds.len(), 2000, "find commands sent");
    let mut per_key = std::collections::HashMap::<i64, u64>::new();
    for f in &finds {
        let id = as_i64(
            f.body
                .get_document("filter")
                .unwrap()
                .get("_id")
                .expect("a filter on _id"),
        );
        assert!((0..1000).contains(&id), "a preloaded key: {id}");
        let batch = f.first_batch().expect("a cursor reply");
        assert_eq!(batch.len(), 1, "find of _id {id}: {:?}", f.reply);
        assert_eq!(as_i64(batch[0].get("_id").unwrap()), id);
        assert_eq!(f.cursor_id(), Some(0), "no cursor left open");
        *per_key.entry(id).or_default() += 1;
    }
    // Zipfian: the hottest key gets far more than the uniform 2 of 2000 over 1000 keys.
    let hottest = per_key.values().max().copied().unwrap_or(0);
    assert!(
        hottest >= 40,
        "the hottest key was read {hottest} times of 2000"
    );
}

/// 400 sign-ins over 200 emails: the first of each email upserts, the later ones match.
fn upsert_profile(dir: &Path, db: &str) -> PathBuf {
    write(
        dir,
        "upsert",
        &format!(
            r#"name = "upsert"
[target]
database = "{db}"
[[collection]]
name = "people"
drop = true
indexes = [ {{ keys = {{ email = 1 }}, unique = true }} ]
[[group]]
name = "signin"
threads = 4
loops = 100
[group.updateOne]
filter = {{ email = {{ "^FormatString" = {{ format = "u%d@example.com", withArgs = [{{ "^RandomInt" = {{ min = 1, max = 200 }} }}] }} }} }}
update = {{ "$inc" = {{ visits = 1 }} }}
upsert = true
"#
        ),
    )
}

#[test]
fn an_upsert_counts_what_it_upserted_as_the_server_holds_it() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_upsert");
    let profile = upsert_profile(dir.path(), &db);
    // A document of an earlier run (a numeric `_id`, as the tool writes), which the drop must
    // remove. (Not a real earlier run: see `a_second_run_drops_what_the_first_run_upserted`.)
    let client = server.client();
    runtime()
        .block_on(async {
            client
                .database(&db)
                .collection::<Document>("people")
                .insert_one(doc! { "_id": 0i64, "email": "stale@example.com", "visits": 1000 })
                .await
        })
        .unwrap();
    let wire = wire_log::start(port_of(&server.uri));
    let summary = run_ok(&wire.uri(), &profile, &dir.path().join("run"));
    let r = row(&summary, "signin");
    let (samples, matched, upserted) = (n(r, "samples"), n(r, "matched"), n(r, "upserted"));
    assert_eq!((samples, n(r, "errors")), (400, 0), "{r}");
    assert_eq!(matched + upserted, samples, "{r}");
    assert!(
        upserted > 100 && upserted <= 200 && matched > 0,
        "both kinds: {r}"
    );
    assert_eq!(
        server.count(&db, "people", doc! {}),
        upserted,
        "documents on the server = upserted"
    );
    assert_eq!(
        server.count(&db, "people", doc! { "email": "stale@example.com" }),
        0
    );
    // Each sign-in incremented one document's visits once.
    let visits = aggregate(
        &server,
        &db,
        "people",
        vec![doc! { "$group": { "_id": Bson::Null, "visits": { "$sum": "$visits" } } }],
    );
    assert_eq!(as_i64(visits[0].get("visits").unwrap()), 400, "{visits:?}");
    // On the wire: the update replies' own upserted and n.
    let updates = wire.commands(&db, "update", "people");
    assert_eq!(updates.len(), 400, "update commands sent");
    let wire_upserted: usize = updates.iter().map(|u| u.reply_len("upserted")).sum();
    let wire_n: i64 = updates.iter().map(|u| u.reply_int("n")).sum();
    assert_eq!(wire_upserted as u64, upserted, "upserted in the replies");
    assert_eq!(wire_n, 400, "n (matched or upserted) in the replies");
}

#[test]
fn a_second_run_drops_what_the_first_run_upserted() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_upsert_twice");
    let profile = upsert_profile(dir.path(), &db);
    run_ok(&server.uri, &profile, &dir.path().join("first"));
    assert!(server.count(&db, "people", doc! {}) > 0);
    let summary = run_ok(&server.uri, &profile, &dir.path().join("second"));
    assert_eq!(
        server.count(&db, "people", doc! {}),
        n(row(&summary, "signin"), "upserted"),
        "the second run's upserts alone"
    );
}

/// A profile of 2000 orders and a recent-open-orders query, with or without the index.
fn explain_profile(dir: &Path, db: &str, with_index: bool) -> PathBuf {
    let index = if with_index {
        "indexes = [ { keys = { status = 1, created = -1 }, name = \"status_created\" } ]"
    } else {
        ""
    };
    write(
        dir,
        db,
        &format!(
            r#"name = "explain"
[target]
database = "{db}"
[[collection]]
name = "orders"
drop = true
preload = 2000
{index}
[collection.document]
status = {{ "^Choose" = {{ from = ["open", "paid", "shipped"] }} }}
created = {{ "^RandomDate" = {{ min = "-2d", max = "now" }} }}
[[group]]
name = "recent"
threads = 2
loops = 20
[group.find]
filter = {{ status = "open", created = {{ "$gte" = {{ "^Now" = {{ minus = "1h" }} }} }} }}
sort = {{ created = -1 }}
limit = 20
"#
        ),
    )
}

/// The server's own winning plan's stages for the same query, by the driver's explain.
fn own_explain(server: &TestServer, db: &str) -> String {
    let client = server.client();
    let since = DateTime::from_millis(DateTime::now().timestamp_millis() - 3_600_000);
    let reply = runtime()
        .block_on(async {
            client.database(db).run_command(doc! {
                "explain": { "find": "orders", "filter": { "status": "open", "created": { "$gte": since } }, "sort": { "created": -1 }, "limit": 20 },
                "verbosity": "queryPlanner",
            }).await
        })
        .expect("explain");
    reply
        .get_document("queryPlanner")
        .and_then(|q| q.get_document("winningPlan"))
        .map(|w| w.to_string())
        .unwrap_or_else(|_| reply.to_string())
}

fn plan_of<'a>(summary: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    summary["plans"]
        .as_array()
        .unwrap_or_else(|| panic!("no plans in {summary}"))
        .iter()
        .find(|p| p["label"] == label)
        .unwrap_or_else(|| panic!("no plan of {label} in {}", summary["plans"]))
}

#[test]
fn explain_reports_the_compound_index_scan_and_without_the_index_a_collection_scan() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();

    let db = unique_db("tpl_ixscan");
    let summary = run_ok(
        &server.uri,
        &explain_profile(dir.path(), &db, true),
        &dir.path().join("with"),
    );
    let p = plan_of(&summary, "recent");
    assert_eq!(
        (&p["operation"], &p["collection"]),
        (&"find".into(), &"orders".into()),
        "{p}"
    );
    assert!(p["plan"].as_str().unwrap().contains("IXSCAN"), "{p}");
    assert!(
        p["indexes"]
            .as_array()
            .unwrap()
            .contains(&"status_created".into()),
        "{p}"
    );
    assert_eq!(p["collscan"], false, "{p}");
    // Exact bounds on {status, created}: no document fetched that is not returned.
    assert_eq!(p["docs_examined"], p["returned"], "{p}");
    assert!(n(p, "keys_examined") <= n(p, "returned") + 1, "{p}");
    assert!(n(p, "returned") <= 20, "{p}");
    let own = own_explain(&server, &db);
    assert!(
        own.contains("IXSCAN") && own.contains("status_created"),
        "the server's own explain: {own}"
    );
    let r = row(&summary, "recent");
    assert_eq!((n(r, "samples"), n(r, "errors")), (40, 0), "{r}");

    let db = unique_db("tpl_collscan");
    let summary = run_ok(
        &server.uri,
        &explain_profile(dir.path(), &db, false),
        &dir.path().join("without"),
    );
    let p = plan_of(&summary, "recent");
    assert_eq!(p["collscan"], true, "{p}");
    assert!(p["plan"].as_str().unwrap().contains("COLLSCAN"), "{p}");
    assert!(!p["plan"].as_str().unwrap().contains("IXSCAN"), "{p}");
    assert_eq!(
        n(p, "docs_examined"),
        2000,
        "a scan of the whole collection: {p}"
    );
    let own = own_explain(&server, &db);
    assert!(own.contains("COLLSCAN"), "the server's own explain: {own}");
}

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no {needle} in {text}"))
        + 1
}

/// A profile of one group `group` with the operation table `table` (its body after the
/// header line), on collection `c` of `db`, writing nothing in its setup.
fn refused_profile(db: &str, group: &str, op: &str, table: &str) -> String {
    format!(
        r#"name = "{group}"
[target]
database = "{db}"
[[collection]]
name = "c"
drop = false
[collection.document]
v = {{ "^RandomInt" = {{ min = 1, max = 9 }} }}
[[group]]
name = "{group}"
threads = 2
loops = 50
[group.{op}]
{table}
"#
    )
}

#[test]
fn the_server_refuses_a_misspelled_stage_an_unknown_update_operator_and_query_operator_before_any_load(
) {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (group, op, table, culprit, reason) in [
        (
            "totals",
            "aggregate",
            "pipeline = [\n  { \"$matchh\" = { v = 3 } },\n]",
            "$matchh",
            "$matchh",
        ),
        (
            "bump",
            "updateOne",
            "filter = { v = 3 }\nupdate = { \"$sett\" = { v = 4 } }\nupsert = true",
            "$sett",
            "$sett",
        ),
        (
            "look",
            "find",
            "filter = { v = { \"$eqq\" = 3 } }",
            "$eqq",
            "$eqq",
        ),
    ] {
        let db = unique_db(&format!("tpl_refuse_{group}"));
        let text = refused_profile(&db, group, op, table);
        let path = write(dir.path(), group, &text);
        let wire = wire_log::start(port_of(&server.uri));
        let (code, stdout, stderr) = mongo_stress(&[
            "run",
            path.to_str().unwrap(),
            "--uri",
            &wire.uri(),
            "--quiet",
            "--no-resources",
            "--out",
            dir.path().join(group).to_str().unwrap(),
        ]);
        assert_eq!(code, Some(2), "{op} of {group}: {stdout}\n{stderr}");
        assert!(stderr.contains(&format!("group `{group}`")), "{stderr}");
        assert!(stderr.contains(op), "names the operation: {stderr}");
        assert!(
            stderr.contains(reason),
            "gives the server's reason: {stderr}"
        );
        // The line of the operation's table, or of the offending value in it.
        let (table_line, culprit_line) = (
            line_of(&text, &format!("[group.{op}]")),
            line_of(&text, culprit),
        );
        let file = format!("{group}.toml");
        assert!(
            stderr.contains(&format!("{file}:{table_line}"))
                || stderr.contains(&format!("{file}:{culprit_line}")),
            "names line {table_line} or {culprit_line}: {stderr}"
        );
        // Nothing was written: no collection, and on the wire only explains reached it.
        assert!(
            !collection_names(&server, &db).contains(&"c".to_string()),
            "{group}: the collection was created"
        );
        assert_eq!(server.count(&db, "c", doc! {}), 0);
        let on_db = wire.on_db(&db);
        assert!(
            on_db.iter().any(|e| e.command == "explain"),
            "{group}: no explain was sent"
        );
        let others: Vec<&str> = on_db
            .iter()
            .filter(|e| e.command != "explain")
            .map(|e| e.command.as_str())
            .collect();
        assert!(
            others.is_empty(),
            "{group}: commands other than explain reached {db}: {others:?}"
        );
    }
}

#[test]
fn validate_with_uri_refuses_the_misspelled_pipeline_and_accepts_a_good_profile() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_validate");
    let bad = write(
        dir.path(),
        "bad",
        &refused_profile(
            &db,
            "totals",
            "aggregate",
            "pipeline = [ { \"$matchh\" = { v = 3 } } ]",
        ),
    );
    let (code, stdout, stderr) =
        mongo_stress(&["validate", bad.to_str().unwrap(), "--uri", &server.uri]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("group `totals`") && stderr.contains("$matchh"),
        "{stderr}"
    );
    assert!(!stdout.contains("the server accepts them"), "{stdout}");
    let good = write(
        dir.path(),
        "good",
        &refused_profile(
            &db,
            "totals",
            "aggregate",
            "pipeline = [ { \"$match\" = { v = 3 } } ]",
        ),
    );
    let (code, stdout, stderr) =
        mongo_stress(&["validate", good.to_str().unwrap(), "--uri", &server.uri]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("the server accepts them"), "{stdout}");
    // validate runs no load: nothing in the database.
    assert!(collection_names(&server, &db).is_empty());
}

#[test]
fn an_unknown_generator_is_refused_with_the_name_it_resembles() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"name = "typo"
[[collection]]
name = "c"
[collection.document]
n = { "^RandomInteger" = { min = 1, max = 9 } }
[[group]]
name = "ins"
threads = 1
loops = 5
[group.insertOne]
"#;
    let path = write(dir.path(), "typo", text);
    let (code, stdout, stderr) = mongo_stress(&["validate", path.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("did you mean `^RandomInt`"), "{stderr}");
    assert!(stderr.contains("typo.toml:5"), "names the line: {stderr}");
}

#[test]
fn the_bundled_orders_profile_runs_3_seconds_and_the_server_holds_its_inserts() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // Its database is the default, mongo_stress.
    let (summary, _, _) = server.run_ok("orders", &out, &["--duration", "3s", "--no-resources"]);
    validate_schema(&summary);
    validate_against(&read_json(&out.join("run.json")), "docs/run.schema.json");
    for label in [
        "recent",
        "totals",
        "app:lookup",
        "app:load",
        "app:pay",
        "signin",
    ] {
        let r = row(&summary, label);
        assert!(n(r, "samples") > 0, "{label}: {r}");
        assert_eq!(n(r, "errors"), 0, "{label}: {r}");
    }
    let load = row(&summary, "app:load");
    let inserted = n(load, "inserted");
    assert_eq!(inserted, 100 * n(load, "samples"), "{load}");
    assert_eq!(
        server.count("mongo_stress", "orders", doc! {}),
        20_000 + inserted,
        "the preload and the batches"
    );
    let signin = row(&summary, "signin");
    assert_eq!(
        server.count("mongo_stress", "customers", doc! {}),
        n(signin, "upserted"),
        "{signin}"
    );
    assert_eq!(
        n(row(&summary, "app:lookup"), "matched"),
        n(row(&summary, "app:lookup"), "samples")
    );
}

/// The built-in kinds are operations like the profile's own: on a second collection (with its
/// own `[document]`), each user in its own causally consistent session (kept across all its
/// operations, seen on the wire), and an insert and an update at `w: 0`.
#[test]
fn built_in_kinds_work_on_a_second_collection_in_causal_sessions_and_at_w0() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("builtin_any");
    let profile = write(
        dir.path(),
        "anywhere",
        &format!(
            r#"name = "anywhere"
[target]
database = "{db}"
[[collection]]
name = "first"
drop = true
preload = 10
[collection.document]
v = 1
[[collection]]
name = "second"
drop = true
preload = 100
[collection.document]
city = {{ choice = ["a", "b", "c"] }}
pop = {{ "^RandomInt" = {{ min = 1, max = 9 }} }}
[[group]]
name = "ins"
collection = "second"
op = "insert"
threads = 2
loops = 30
causal_consistency = true
[[group]]
name = "upd"
collection = "second"
op = "update"
set = ["pop"]
threads = 2
loops = 30
causal_consistency = true
[[group]]
name = "get"
collection = "second"
op = "get"
threads = 2
loops = 30
causal_consistency = true
[[group]]
name = "fast"
op = "insert"
write_concern = 0
threads = 1
loops = 20
[[group]]
name = "fastup"
op = "update"
set = ["v"]
write_concern = 0
threads = 1
loops = 20
"#
        ),
    );
    let wire = wire_log::start(port_of(&server.uri));
    let summary = run_ok(&wire.uri(), &profile, &dir.path().join("run"));
    for g in ["ins", "upd", "get"] {
        let r = row(&summary, g);
        assert_eq!(n(r, "samples"), 60, "{g}: {r}");
        assert_eq!(n(r, "errors"), 0, "{g}: {r}");
    }
    assert_eq!(
        n(row(&summary, "get"), "matched"),
        60,
        "every get found its document"
    );
    assert_eq!(
        n(row(&summary, "upd"), "matched"),
        60,
        "every update found its document"
    );
    assert_eq!(
        server.count(&db, "second", doc! {}),
        160,
        "100 preloaded + 60 inserted"
    );
    assert_eq!(n(row(&summary, "fast"), "errors"), 0);
    assert_eq!(n(row(&summary, "fastup"), "errors"), 0);

    // On the wire: the second collection's inserts, updates and finds come from 6 users, each
    // in one session of its own for all its 30 operations.
    let mut per_session: std::collections::HashMap<Vec<u8>, Vec<String>> = Default::default();
    // (The setup's preload is batches, and its checks are no finds by `_id`.)
    let by_users = |e: &wire_log::Exchange| match e.command.as_str() {
        "insert" => e.documents("documents").len() == 1,
        "find" => e
            .body
            .get_document("filter")
            .is_ok_and(|f| matches!(f.get("_id"), Some(Bson::Int64(_) | Bson::Int32(_)))),
        _ => true,
    };
    for command in ["insert", "update", "find"] {
        for e in wire
            .commands(&db, command, "second")
            .into_iter()
            .filter(by_users)
        {
            let lsid = match e.body.get_document("lsid").map(|l| l.get("id")) {
                Ok(Some(Bson::Binary(b))) => b.bytes.clone(),
                other => panic!("a {command} without a session id: {other:?}"),
            };
            per_session
                .entry(lsid)
                .or_default()
                .push(command.to_string());
        }
    }
    assert_eq!(
        per_session.len(),
        6,
        "one session per user of the three groups"
    );
    for commands in per_session.values() {
        assert_eq!(commands.len(), 30, "a user's 30 operations in its session");
        assert!(
            commands.iter().all(|c| c == &commands[0]),
            "a session is one user's, of one group: {commands:?}"
        );
    }
    // At w:0, the insert and the update go as commands with writeConcern { w: 0 }.
    let unacked = |command: &str| {
        wire.commands(&db, command, "first")
            .iter()
            .filter(|e| {
                e.body
                    .get_document("writeConcern")
                    .is_ok_and(|w| w.get("w").is_some_and(|w| as_i64(w) == 0))
            })
            .count()
    };
    assert_eq!(unacked("insert"), 20, "the w:0 inserts on the wire");
    assert_eq!(unacked("update"), 20, "the w:0 updates on the wire");
    // Sent without waiting for the write: the documents arrive within moments.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.count(&db, "first", doc! {}) < 30 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        server.count(&db, "first", doc! {}),
        30,
        "10 preloaded + 20 at w:0"
    );
}

#[test]
fn a_finds_generated_let_and_projection_are_made_per_operation_and_the_server_applies_them() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("tpl_let");
    // `_id`s 0..99; `most` drawn per operation from 1..=100: each find returns `most` documents
    // (those with `_id` below it), so the returned total is the sum of the draws, between
    // 50 x 1 and 50 x 100 and near 50 x 50.5; the projection's exclusion drops `pad`.
    let profile = write(
        dir.path(),
        "let",
        &format!(
            r#"name = "let"
[target]
database = "{db}"
[[collection]]
name = "c"
drop = true
preload = 100
[collection.document]
pad = {{ "^RandomString" = {{ length = 200 }} }}
[[group]]
name = "drawn"
threads = 1
loops = 50
[group.find]
filter = {{ "$expr" = {{ "$lt" = ["$_id", "$$most"] }} }}
let = {{ most = {{ "^RandomInt" = {{ min = 1, max = 100 }} }} }}
projection = {{ pad = {{ "^RandomInt" = {{ min = 0, max = 0 }} }} }}
[[group]]
name = "all"
stage = "second"
threads = 1
loops = 50
[group.find]
filter = {{ "$expr" = {{ "$lt" = ["$_id", "$$most"] }} }}
let = {{ most = 100 }}
"#
        ),
    );
    let summary = run_ok(&server.uri, &profile, &dir.path().join("run"));
    let all = row(&summary, "all");
    assert_eq!((n(all, "returned"), n(all, "errors")), (5000, 0), "{all}");
    let drawn = row(&summary, "drawn");
    assert_eq!(n(drawn, "errors"), 0, "{drawn}");
    let returned = n(drawn, "returned");
    assert!(
        (1500..=3600).contains(&returned),
        "a different `most` per operation: {returned} of 50 x 1..=100"
    );
    // Without `pad` (200 bytes each), a document is a few dozen bytes.
    let per_doc = n(drawn, "received_bytes") / returned;
    let full = n(all, "received_bytes") / 5000;
    assert!(
        per_doc < 50 && full > 200,
        "projected {per_doc} B, whole {full} B"
    );
}
