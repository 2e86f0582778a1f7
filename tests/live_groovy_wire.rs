//! The bundled `jmeter-2016-groovy` profile sends on the wire what the 2016 experiment's Groovy
//! samplers sent: seen by a logging loopback proxy in front of the real server, which decodes
//! every OP_MSG command the tool sends.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{bin, TestServer};
use mongodb::bson::{doc, Bson, Document};

/// One wire message: its 4-byte little-endian length, then the rest.
fn read_message(from: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len).ok()?;
    let n = u32::from_le_bytes(len) as usize;
    let mut msg = len.to_vec();
    msg.resize(n.max(4), 0);
    from.read_exact(&mut msg[4..]).ok()?;
    Some(msg)
}

/// An OP_MSG's command: its body (section kind 0) with each document sequence (kind 1) put in
/// as an array under its identifier, as the server reads it.
fn command_of(msg: &[u8]) -> Option<Document> {
    if msg.len() < 21 || i32::from_le_bytes(msg[12..16].try_into().ok()?) != 2013 {
        return None;
    }
    let flags = u32::from_le_bytes(msg[16..20].try_into().ok()?);
    let end = if flags & 1 == 1 {
        msg.len() - 4
    } else {
        msg.len()
    };
    let mut at = 20;
    let mut body: Option<Document> = None;
    let mut sequences = Vec::new();
    while at < end {
        let kind = msg[at];
        at += 1;
        let size = i32::from_le_bytes(msg[at..at + 4].try_into().ok()?) as usize;
        match kind {
            0 => {
                body = Some(Document::from_reader(&msg[at..at + size]).ok()?);
                at += size;
            }
            1 => {
                let section = &msg[at + 4..at + size];
                let nul = section.iter().position(|b| *b == 0)?;
                let id = String::from_utf8_lossy(&section[..nul]).into_owned();
                let mut docs = Vec::new();
                let mut p = nul + 1;
                while p < section.len() {
                    let n = i32::from_le_bytes(section[p..p + 4].try_into().ok()?) as usize;
                    docs.push(Bson::Document(
                        Document::from_reader(&section[p..p + n]).ok()?,
                    ));
                    p += n;
                }
                sequences.push((id, docs));
                at += size;
            }
            _ => return None,
        }
    }
    let mut body = body?;
    for (id, docs) in sequences {
        body.insert(id, docs);
    }
    Some(body)
}

/// Forwards every connection to the server and keeps each command sent.
fn logging_proxy(upstream: u16) -> (u16, Arc<Mutex<Vec<Document>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&log);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let (mut client_w, mut server_r) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let keep = Arc::clone(&keep);
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut client) {
                    if let Some(c) = command_of(&msg) {
                        keep.lock().unwrap().push(c);
                    }
                    if server.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut server_r) {
                    if client_w.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = client_w.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (port, log)
}

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

    let upstream = common::proxy::port_of(&server.uri);
    let (port, log) = logging_proxy(upstream);
    let uri = format!("mongodb://127.0.0.1:{port}/?directConnection=true");
    let out = dir.path().join("run");
    bin()
        .args(["run", profile.to_str().unwrap(), "--uri", &uri, "--quiet"])
        .args(["--threads", "1", "--loops", "10", "--no-resources", "--out"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);

    let sent: Vec<Document> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.get_str("$db").ok() == Some(db.as_str()))
        .cloned()
        .collect();
    let named = |verb: &str| -> Vec<&Document> {
        sent.iter()
            .filter(|c| c.keys().next().map(String::as_str) == Some(verb))
            .collect()
    };

    // insert.groovy: 1 user x 10 loops (one user: two removers could find the same document), each an acknowledged insert of one document.
    let inserts = named("insert");
    assert_eq!(inserts.len(), 10, "{inserts:?}");
    for c in &inserts {
        assert_eq!(c.get_document("writeConcern").unwrap(), &doc! { "w": 1 });
        let docs = c.get_array("documents").unwrap();
        assert_eq!(docs.len(), 1);
        let d = docs[0].as_document().unwrap();
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
    for c in &counts {
        assert_eq!(c.get_str("count").unwrap(), "cities");
        let q = c.get_document("query").unwrap();
        assert!(CITIES.contains(&q.get_str("city").unwrap()), "{q}");
    }

    // update.groovy: $set of loc on an ObjectId of the fixed prefix, unacknowledged.
    let updates = named("update");
    assert_eq!(updates.len(), 10, "{updates:?}");
    for c in &updates {
        assert_eq!(c.get_document("writeConcern").unwrap(), &doc! { "w": 0 });
        let u = c.get_array("updates").unwrap()[0].as_document().unwrap();
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
    let finds: Vec<&Document> = named("find")
        .into_iter()
        .filter(|c| {
            c.get_document("filter")
                .is_ok_and(|f| f.contains_key("city"))
        })
        .collect();
    assert_eq!(finds.len(), 10, "{finds:?}");
    for c in &finds {
        assert_eq!(
            c.get_document("filter").unwrap(),
            &doc! { "city": "Zhongshan" }
        );
        assert_eq!(c.get_document("projection").unwrap(), &doc! { "_id": 1 });
        assert_eq!(c.get_i64("limit").unwrap(), 1);
    }
    let deletes = named("delete");
    assert_eq!(deletes.len(), 3, "{deletes:?}");
    let mut deleted: Vec<i64> = deletes
        .iter()
        .map(|c| {
            assert_eq!(c.get_document("writeConcern").unwrap(), &doc! { "w": 0 });
            let d = c.get_array("deletes").unwrap()[0].as_document().unwrap();
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
    for c in &sent {
        let verb = c.keys().next().unwrap().as_str();
        assert!(
            !["findAndModify", "bulkWrite", "aggregate"].contains(&verb),
            "unexpected {c}"
        );
    }
}
