//! The 2016 experiment as it was (`../shared/reference/jmeter-2016.md`):
//! - the bundled `jmeter-2016-groovy` sends, per sampler, what the 2016 Groovy scripts sent:
//!   seen by a logging loopback proxy in front of the real server, which decodes every OP_MSG
//!   command the tool sends (`tests/common/wire_log.rs`), with the server's documents as the
//!   witness of what the writes did;
//! - every bundled profile that inserts the 2016 document draws its eight cities, each about an
//!   eighth of the documents, with `pop` the paired string, counted on the server.

use crate::common;
use crate::wire_log;

use std::collections::{BTreeMap, BTreeSet};

use common::{bin, TestServer};
use mongodb::bson::{doc, Bson};
use wire_log::Exchange;

/// The insert script's two lists: city and the `pop` string at the same position.
const CITIES: [(&str, &str); 8] = [
    ("Zhongshan", "528400"),
    ("Zhuhai", "528401"),
    ("Shenzhen", "528402"),
    ("Guangzhou", "528403"),
    ("Meizhou", "528404"),
    ("Qingyuan", "528405"),
    ("Shaoguang", "528406"),
    ("Zhaoqing", "528407"),
];

/// The update script's fixed 21 hex digits of an ObjectId.
const PREFIX: &str = "5798822de4b0915e330a7";

fn pop_of(city: &str) -> Option<&'static str> {
    CITIES.iter().find(|(c, _)| *c == city).map(|(_, p)| *p)
}

fn n(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn the_groovy_profile_sends_what_the_2016_samplers_sent() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("groovy");
    // The bundled profile as written, on a database of this test's own.
    let text = mongo_stress::plan::profile::bundled::get("jmeter-2016-groovy")
        .unwrap()
        .replace("database = \"dbjmeter\"", &format!("database = \"{db}\""));
    assert!(text.contains(&db));
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("groovy.toml");
    std::fs::write(&profile, &text).unwrap();

    let wire = wire_log::start(common::proxy::port_of(&server.uri));
    let uri = wire.uri();
    let out = dir.path().join("run");
    // One user per group (two removers could find the same document), 80 loops: 160 inserts in
    // all, of which Zhongshan is about 20 (none at all has odds of (7/8)^160, about 5e-10).
    bin()
        .args(["run", profile.to_str().unwrap(), "--uri", &uri, "--quiet"])
        .args(["--threads", "1", "--loops", "80", "--no-resources", "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(180))
        .assert()
        .code(0);
    let summary = common::read_json(&out.join("summary.json"));
    let on = |verb: &str| -> Vec<Exchange> { wire.commands(&db, verb, "zips") };

    // insert.groovy: an acknowledged insert of one document, {_id: ObjectId, city, loc, pop,
    // state}, with pop the string paired with the city.
    let inserts = on("insert");
    assert_eq!(inserts.len(), 160, "insert + mixed-insert");
    let mut zhongshan_inserted = 0;
    for e in &inserts {
        assert_eq!(
            e.body.get_document("writeConcern").unwrap(),
            &doc! { "w": 1 }
        );
        let docs = e.documents("documents");
        assert_eq!(docs.len(), 1);
        let d = &docs[0];
        assert!(d.get_object_id("_id").is_ok(), "an ObjectId _id: {d}");
        let city = d.get_str("city").unwrap();
        assert_eq!(Some(d.get_str("pop").unwrap()), pop_of(city), "{d}");
        assert_eq!(
            d.get_document("loc").unwrap(),
            &doc! { "x": 203i64, "y": 102i64 }
        );
        assert_eq!(d.get_str("state").unwrap(), "GD");
        assert_eq!(d.len(), 5, "{d}");
        zhongshan_inserted += u64::from(city == "Zhongshan");
    }
    assert!(zhongshan_inserted > 0);

    // find.groovy: coll.count() of the whole collection, no query; nothing else reads zips but
    // the remove's find.
    let counts = on("count");
    assert_eq!(counts.len(), 160);
    for e in &counts {
        assert!(
            !e.body.contains_key("query") && !e.body.contains_key("limit"),
            "{:?}",
            e.body
        );
    }
    assert!(on("aggregate").is_empty());

    // update.groovy: $set of loc on an ObjectId of the fixed prefix and 3 hex digits, w:0.
    let updates = on("update");
    assert_eq!(updates.len(), 160);
    for e in &updates {
        assert_eq!(
            e.body.get_document("writeConcern").unwrap(),
            &doc! { "w": 0 }
        );
        let u = &e.documents("updates")[0];
        let id = u.get_document("q").unwrap().get_object_id("_id").unwrap();
        let hex = id.to_hex();
        assert!(hex.starts_with(PREFIX) && hex.len() == 24, "{id}");
        let set = u.get_document("u").unwrap().get_document("$set").unwrap();
        assert_eq!(set.keys().collect::<Vec<_>>(), ["loc"]);
        let loc = set.get_document("loc").unwrap();
        for k in ["x", "y"] {
            assert!((0..=999).contains(&loc.get_i64(k).unwrap()), "{loc}");
        }
        assert!(!u.get_bool("multi").unwrap_or(false));
        assert!(!u.get_bool("upsert").unwrap_or(false));
    }
    // The prefix's timestamp is 2016-07-27 09:43:09: no document inserted now has it, so no
    // update matched, and every loc is still the insert's.
    assert_eq!(
        server.count(&db, "zips", doc! { "loc": { "x": 203i64, "y": 102i64 } }),
        server.count(&db, "zips", doc! {})
    );

    // remove.groovy: findOne({city: "Zhongshan"}, {_id: 1}), then a w:0 delete of that _id (the
    // Java driver's remove: every match, limit 0). A find that found one is followed by its
    // delete; one that found none ends there.
    // (The setup's own finds, of a non-numeric and the last numeric _id, are not the sampler's.)
    let finds: Vec<Exchange> = on("find")
        .into_iter()
        .filter(|e| {
            e.body
                .get_document("filter")
                .is_ok_and(|f| f.contains_key("city"))
        })
        .collect();
    assert_eq!(finds.len(), 160, "remove + mixed-remove");
    let mut found = BTreeSet::new();
    for e in &finds {
        assert_eq!(
            e.body.get_document("filter").unwrap(),
            &doc! { "city": "Zhongshan" }
        );
        assert_eq!(
            e.body.get_document("projection").unwrap(),
            &doc! { "_id": 1 }
        );
        assert_eq!(e.body.get_i64("limit").unwrap(), 1);
        let batch = e.first_batch().expect("a find's reply");
        assert!(batch.len() <= 1);
        if let Some(d) = batch.first() {
            assert_eq!(d.keys().collect::<Vec<_>>(), ["_id"], "only the _id: {d}");
            assert!(found.insert(d.get_object_id("_id").unwrap()), "found twice");
        }
    }
    let deletes = on("delete");
    let deleted: BTreeSet<_> = deletes
        .iter()
        .map(|e| {
            assert_eq!(
                e.body.get_document("writeConcern").unwrap(),
                &doc! { "w": 0 }
            );
            let ds = e.documents("deletes");
            assert_eq!(ds.len(), 1);
            assert_eq!(ds[0].get_i32("limit").unwrap(), 0);
            let q = ds[0].get_document("q").unwrap();
            assert_eq!(q.len(), 1, "{q}");
            q.get_object_id("_id").unwrap()
        })
        .collect();
    assert_eq!(deletes.len(), deleted.len());
    assert_eq!(
        deleted, found,
        "each find's document, and only those, deleted"
    );
    assert!(
        !deleted.is_empty(),
        "Zhongshan documents were there to delete"
    );
    // The summary's account of the removes: every found document is a returned one, and the
    // delete step (`remove:step1`) was sent once for each.
    let returned = n(common::row(&summary, "remove"), "returned")
        + n(common::row(&summary, "mixed-remove"), "returned");
    assert_eq!(returned, deletes.len() as u64);
    let delete_steps = n(common::row(&summary, "remove:step1"), "samples")
        + n(common::row(&summary, "mixed-remove:step1"), "samples");
    assert_eq!(delete_steps, deletes.len() as u64, "the delete steps sent");
    // The server's witness: the Zhongshan documents fell by exactly those deletes.
    assert_eq!(
        server.count(&db, "zips", doc! { "city": "Zhongshan" }),
        zhongshan_inserted - deletes.len() as u64
    );
    assert_eq!(
        server.count(&db, "zips", doc! {}),
        160 - deletes.len() as u64
    );
    // Nothing else touched the collection.
    for e in wire.all() {
        if e.db == db && e.target.as_str() == Some("zips") {
            assert!(
                ["insert", "count", "update", "find", "delete", "drop", "create"]
                    .contains(&e.command.as_str()),
                "unexpected {:?}",
                e.body
            );
        }
    }

    // A second run drops what the first wrote (ObjectId _ids included) without --force: the
    // collection is the one the tool created.
    let again = dir.path().join("again");
    bin()
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            &server.uri,
            "--quiet",
        ])
        .args(["--threads", "1", "--loops", "5", "--no-resources", "--out"])
        .arg(&again)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);
    let zips = common::read_json(&again.join("summary.json"));
    let removed = n(common::row(&zips, "remove"), "returned")
        + n(common::row(&zips, "mixed-remove"), "returned");
    assert_eq!(server.count(&db, "zips", doc! {}), 10 - removed);
}

/// The bundled profile cut to its document: everything before its first group or fault, no
/// preload, and one group that inserts 4 x 400 documents.
fn document_only(text: &str, db: &str) -> String {
    let end = ["\n[[group]]", "\n[[fault]]"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    let head: String = text[..end]
        .lines()
        .map(|l| {
            if l.starts_with("database = ") {
                format!("database = \"{db}\"")
            } else if l.starts_with("preload = ") {
                "preload = 0".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let insert = if head.contains("[[collection]]") {
        "[group.insertOne]"
    } else {
        "op = \"insert\""
    };
    let with_db = if head.contains("database = ") {
        head
    } else {
        format!("[target]\ndatabase = \"{db}\"\n{head}")
    };
    format!("{with_db}\n\n[[group]]\nname = \"ins\"\nthreads = 4\nloops = 400\n{insert}\n")
}

#[test]
fn every_bundled_profile_with_the_2016_document_draws_its_eight_cities() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let dir = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    for b in mongo_stress::plan::profile::bundled::ALL {
        // The 2016 document: a `city` field in a document table.
        if !b.text.lines().any(|l| l.starts_with("city = ")) {
            continue;
        }
        let db = common::unique_db("doc2016");
        let text = document_only(b.text, &db);
        let path = dir.path().join(format!("{}.toml", b.name));
        std::fs::write(&path, &text).unwrap();
        let out = dir.path().join(b.name);
        bin()
            .args([
                "run",
                path.to_str().unwrap(),
                "--uri",
                &server.uri,
                "--quiet",
            ])
            .args(["--no-resources", "--no-samples", "--out"])
            .arg(&out)
            .timeout(std::time::Duration::from_secs(120))
            .assert()
            .code(0);
        let coll_name = match text.find("[[collection]]") {
            Some(at) => text[at..]
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .map(|s| s.trim_end_matches('"').to_string())
                .unwrap(),
            None => text
                .lines()
                .find_map(|l| l.strip_prefix("collection = \""))
                .map_or("cities".to_string(), |s| {
                    s.trim_end_matches('"').to_string()
                }),
        };
        let groups = server.aggregate(
            &db,
            &coll_name,
            vec![doc! { "$group": {
                "_id": { "city": "$city", "pop": "$pop", "loc": "$loc", "state": "$state" },
                "n": { "$sum": 1 },
            } }],
        );
        let mut by_city = BTreeMap::new();
        for g in &groups {
            let id = g.get_document("_id").unwrap();
            let city = id
                .get_str("city")
                .unwrap_or_else(|_| panic!("{}: {g}", b.name));
            assert_eq!(
                id.get("pop"),
                pop_of(city).map(|p| Bson::String(p.into())).as_ref(),
                "{}: {g}",
                b.name
            );
            assert_eq!(
                id.get_document("loc").unwrap(),
                &doc! { "x": 203i64, "y": 102i64 },
                "{}",
                b.name
            );
            assert_eq!(id.get_str("state").unwrap(), "GD", "{}", b.name);
            let count = match g.get("n") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                other => panic!("{other:?}"),
            };
            by_city.insert(city.to_string(), count);
        }
        assert_eq!(by_city.len(), 8, "{}: {by_city:?}", b.name);
        assert_eq!(by_city.values().sum::<i64>(), 1600, "{}", b.name);
        // Each an eighth of 1600 (200), within six standard deviations (sqrt(1600 * 7/64) =
        // 13.2): a fair draw fails this about once in 10^8 profiles.
        for (city, count) in &by_city {
            assert!(
                (121..=279).contains(count),
                "{}: {city} drawn {count} times of 1600: {by_city:?}",
                b.name
            );
        }
        checked.push(b.name);
    }
    for name in [
        "insert",
        "find",
        "update",
        "remove",
        "crud-mixed",
        "smoke",
        "jmeter-2016",
        "jmeter-2016-groovy",
        "kill-under-load",
        "ycsb-a",
        "ycsb-f",
    ] {
        assert!(checked.contains(&name), "{name} not checked: {checked:?}");
    }
}
