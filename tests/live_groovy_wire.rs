//! The bundled `jmeter-2016-groovy` profile sends on the wire what the 2016 experiment's Groovy
//! samplers sent: seen by a logging loopback proxy in front of the real server, which decodes
//! every OP_MSG command the tool sends (`tests/common/wire_log.rs`).

mod common;
#[path = "common/wire_log.rs"]
mod wire_log;

use common::{bin, TestServer};
use mongodb::bson::{doc, Document};
use wire_log::Exchange;

const CITIES: [&str; 8] = [
    "Guangzhou",
    "Shenzhen",
    "Dongguan",
    "Foshan",
    "Shantou",
    "Zhanjiang",
    "Huizhou",
    "Jiangmen",
];

#[test]
fn the_groovy_profile_sends_what_the_2016_samplers_sent() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let db = common::unique_db("groovy");
    // The bundled profile as written, on a database of this test's own and without the drop,
    // so that documents of the city the remove sampler looks for can be there first (the 2016
    // collection held none: its remove never deleted anything).
    let text = mongo_stress::plan::profile::bundled::get("jmeter-2016-groovy")
        .unwrap()
        .replace(
            "database = \"mongo_stress\"",
            &format!("database = \"{db}\""),
        )
        .replace("drop = true", "drop = false");
    assert!(text.contains(&db) && text.contains("drop = false"));
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("groovy.toml");
    std::fs::write(&profile, &text).unwrap();
    let client = server.client();
    let cities = client.database(&db).collection::<Document>("cities");
    common::runtime()
        .block_on(async {
            cities
                .insert_many((0..3).map(
                    |i| doc! { "_id": 1_000_000i64 + i, "city": "Zhongshan", "loc": { "x": 1, "y": 2 } },
                ))
                .await
        })
        .unwrap();

    let wire = wire_log::start(common::proxy::port_of(&server.uri));
    let uri = wire.uri();
    let out = dir.path().join("run");
    bin()
        .args(["run", profile.to_str().unwrap(), "--uri", &uri, "--quiet"])
        .args(["--threads", "1", "--loops", "10", "--no-resources", "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);

    let sent: Vec<Exchange> = wire.on_db(&db);
    let named =
        |verb: &str| -> Vec<&Exchange> { sent.iter().filter(|e| e.command == verb).collect() };

    // insert.groovy: 1 user x 10 loops (one user: two removers could find the same document), each an acknowledged insert of one document.
    let inserts = named("insert");
    assert_eq!(inserts.len(), 10, "{inserts:?}");
    for e in &inserts {
        assert_eq!(
            e.body.get_document("writeConcern").unwrap(),
            &doc! { "w": 1 }
        );
        let docs = e.documents("documents");
        assert_eq!(docs.len(), 1);
        let d = &docs[0];
        assert!(CITIES.contains(&d.get_str("city").unwrap()), "{d}");
        assert_eq!(
            d.get_document("loc").unwrap(),
            &doc! { "x": 203i64, "y": 102i64 }
        );
        assert_eq!(d.get_str("state").unwrap(), "GD");
        assert!(d.contains_key("pop"));
    }

    // find.groovy: only the count reaches the server (its cursor was never read).
    let counts = named("count");
    assert_eq!(counts.len(), 10, "{counts:?}");
    for e in &counts {
        assert_eq!(e.body.get_str("count").unwrap(), "cities");
        let q = e.body.get_document("query").unwrap();
        assert!(CITIES.contains(&q.get_str("city").unwrap()), "{q}");
    }

    // update.groovy: $set of loc on an ObjectId of the fixed prefix, unacknowledged.
    let updates = named("update");
    assert_eq!(updates.len(), 10, "{updates:?}");
    for e in &updates {
        assert_eq!(
            e.body.get_document("writeConcern").unwrap(),
            &doc! { "w": 0 }
        );
        let u = &e.documents("updates")[0];
        let id = u.get_document("q").unwrap().get_object_id("_id").unwrap();
        assert!(id.to_hex().starts_with("5798822de4b0915e330a7"), "{id}");
        let set = u.get_document("u").unwrap().get_document("$set").unwrap();
        let loc = set.get_document("loc").unwrap();
        for k in ["x", "y"] {
            assert!((0..=999).contains(&loc.get_i64(k).unwrap()), "{loc}");
        }
        assert!(!u.get_bool("multi").unwrap());
    }

    // remove.groovy: a find of one Zhongshan with only its _id, then a delete by that _id (w:0).
    // 10 finds; the 3 that find one delete it, the others end there, not matched.
    // (The setup's own find of the last numeric _id is not the sampler's.)
    let finds: Vec<&Exchange> = named("find")
        .into_iter()
        .filter(|e| {
            e.body
                .get_document("filter")
                .is_ok_and(|f| f.contains_key("city"))
        })
        .collect();
    assert_eq!(finds.len(), 10, "{finds:?}");
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
    }
    let deletes = named("delete");
    assert_eq!(deletes.len(), 3, "{deletes:?}");
    let mut deleted: Vec<i64> = deletes
        .iter()
        .map(|e| {
            assert_eq!(
                e.body.get_document("writeConcern").unwrap(),
                &doc! { "w": 0 }
            );
            let d = &e.documents("deletes")[0];
            assert_eq!(d.get_i32("limit").unwrap(), 1);
            d.get_document("q").unwrap().get_i64("_id").unwrap()
        })
        .collect();
    deleted.sort();
    assert_eq!(deleted, vec![1_000_000, 1_000_001, 1_000_002]);
    // The server's witness: the Zhongshan documents are gone, the ten inserts are there.
    assert_eq!(server.count(&db, "cities", doc! { "city": "Zhongshan" }), 0);
    assert_eq!(server.count(&db, "cities", doc! { "state": "GD" }), 10);
    // Nothing else wrote: no other write command reached the collection.
    for e in &sent {
        assert!(
            !["findAndModify", "bulkWrite", "aggregate"].contains(&e.command.as_str()),
            "unexpected {:?}",
            e.body
        );
    }
}
