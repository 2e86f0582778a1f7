use super::*;
use mongodb::bson::doc;

/// The capture of `obs`, the source given in one piece.
fn build(
    obs: &[Observed],
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    name: &str,
    source: &str,
) -> Captured {
    super::build(Collector::of(obs, opts.group_by), infos, opts, name, source)
}

/// The captured profile loads and plans as `run` would take it.
fn validates(profile: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, profile).unwrap();
    let loaded = crate::plan::profile::load(path.to_str().unwrap()).unwrap();
    crate::plan::RunPlan::build(&loaded, &Default::default()).unwrap();
}

fn op(ts: i64, command: Document, app: &str) -> Observed {
    Observed {
        ts_ms: ts,
        db: "shop".into(),
        coll: "orders".into(),
        op_type: "command".into(),
        command,
        millis: 2.0,
        app: Some(app.into()),
        conn: Some(format!("conn{}", ts % 3)),
        plan: Some("IXSCAN { status: 1, created: -1 }".into()),
        ..Default::default()
    }
}

#[test]
fn shapes_are_counted_weighted_and_rendered_as_a_profile_that_validates() {
    let mut obs = Vec::new();
    for i in 0..90 {
        let status = ["open", "paid", "shipped"][i % 3];
        obs.push(op(1_000_000 + i64::try_from(i).unwrap() * 100, doc! { "find": "orders", "filter": { "status": status }, "sort": { "created": -1 }, "limit": 20 }, "web"));
    }
    for i in 0..10 {
        obs.push(op(
            1_000_000 + i * 1000,
            doc! { "find": "orders", "filter": { "_id": i }, "limit": 1, "singleBatch": true },
            "web",
        ));
    }
    obs.push(op(1_009_999, doc! { "hello": 1 }, "web"));
    let c = build(
        &obs,
        &HashMap::new(),
        &Options {
            scale: 3.0,
            ..Default::default()
        },
        "cap",
        "a test",
    );
    assert_eq!(c.operations, 100);
    assert_eq!(c.left_out.driver_total(), 1);
    assert_eq!(c.shapes.len(), 2);
    assert_eq!(c.shapes[0].count, 90);
    assert!(
        c.profile
            .contains("name = \"find-orders-by-status\"\nweight = 90"),
        "{}",
        c.profile
    );
    assert!(
        c.profile
            .contains("findOne = { filter = { _id = { \"^Key\" = {} } } }"),
        "{}",
        c.profile
    );
    // 100 operations from the first to the last, 9 s (the hello is no operation), times 3.
    assert!(
        c.profile
            .contains("rate = 33.33  # observed 11.11/s x --scale 3"),
        "{}",
        c.profile
    );
    assert!(
        c.profile
            .contains("{ keys = { status = 1, created = -1 } }"),
        "{}",
        c.profile
    );
    validates(&c.profile);
}

#[test]
fn coverage_emits_the_fewest_shapes_and_counts_the_rest() {
    let mut obs = Vec::new();
    for i in 0..995 {
        obs.push(op(i, doc! { "find": "orders", "filter": { "a": 1 } }, "x"));
    }
    for i in 0..5 {
        obs.push(op(i, doc! { "find": "orders", "filter": { "b": 1 } }, "x"));
    }
    let c = build(&obs, &HashMap::new(), &Options::default(), "cap", "t");
    assert_eq!(c.emitted_shapes, 1);
    assert!((c.coverage - 0.995).abs() < 1e-9);
    assert_eq!(
        (
            c.left_out.shapes_not_emitted,
            c.left_out.operations_not_emitted
        ),
        (1, 5)
    );
    assert!(
        c.shapes[1]
            .emitted
            .contains("beyond --coverage (0.5 % of the operations, 0.5 % of the server's time)"),
        "{}",
        c.shapes[1].emitted
    );
}

#[test]
fn coverage_counts_the_servers_time_and_keeps_a_costly_rare_read() {
    // 96 % cheap reads, 4 % that take a third of the server's time: at --coverage 60 % the
    // costly one is emitted first, and a shape above 1 % is kept whatever --coverage says.
    let mut obs = Vec::new();
    for i in 0..960 {
        let mut o = op(i, doc! { "find": "orders", "filter": { "a": 1 } }, "x");
        o.millis = 1.0;
        obs.push(o);
    }
    for i in 0..40 {
        let mut o = op(
            i,
            doc! { "aggregate": "orders", "pipeline": [{ "$group": { "_id": "$room", "n": { "$sum": 1 } } }] },
            "x",
        );
        o.millis = 12.0;
        obs.push(o);
    }
    for i in 0..3 {
        let mut o = op(i, doc! { "find": "orders", "filter": { "c": 1 } }, "x");
        o.millis = 1.0;
        obs.push(o);
    }
    let opts = Options {
        coverage: 0.6,
        ..Options::default()
    };
    let c = build(&obs, &HashMap::new(), &opts, "cap", "t");
    let agg = c
        .shapes
        .iter()
        .find(|s| s.operation == "aggregate")
        .unwrap();
    assert!(!agg.emitted.starts_with("not emitted"), "{}", agg.emitted);
    let cheap = c.shapes.iter().find(|s| s.shape.contains("\"a\"")).unwrap();
    assert!(
        !cheap.emitted.starts_with("not emitted"),
        "{}",
        cheap.emitted
    );
    let rare = c.shapes.iter().find(|s| s.shape.contains("\"c\"")).unwrap();
    assert!(
        rare.emitted
            .contains("beyond --coverage (0.3 % of the operations, 0.2 % of the server's time)"),
        "{}",
        rare.emitted
    );
}

#[test]
fn writes_are_kept_beyond_the_coverage_and_getmores_count_for_their_find() {
    let mut obs = Vec::new();
    for i in 0..97 {
        let mut o = op(i, doc! { "find": "orders", "filter": { "a": 1 } }, "x");
        o.nreturned = Some(101);
        o.cursor_id = Some(1000 + i);
        obs.push(o);
        let mut more = op(i, doc! { "getMore": 1000 + i, "collection": "orders" }, "x");
        more.op_type = "getmore".into();
        more.nreturned = Some(99);
        more.cursor_id = Some(1000 + i);
        obs.push(more);
    }
    for i in 0..3 {
        obs.push(op(
            i,
            doc! { "update": "orders", "updates": [{ "q": { "_id": 1 }, "u": { "$push": { "tags": "x" } } }] },
            "x",
        ));
    }
    let c = build(&obs, &HashMap::new(), &Options::default(), "cap", "t");
    // 3 % of the operations, beyond the 95 % coverage, but a write: kept.
    assert_eq!(c.emitted_shapes, 2, "{:#?}", c.shapes);
    assert!(c.shapes[1].writes && !c.shapes[1].emitted.starts_with("not"));
    // Each find's documents: its first batch and its getMore's.
    assert_eq!(c.shapes[0].returned_per_call, Some(200.0));
    assert_eq!(c.left_out.getmore_folded, 97);
}

#[test]
fn a_field_seen_as_a_value_and_as_a_document_stays_a_document() {
    let mut t = toml::Table::new();
    insert_path(&mut t, "address", fit::bare("^Null"));
    insert_path(&mut t, "address.city", Value::String("x".into()));
    insert_path(&mut t, "address", Value::Integer(1));
    assert_eq!(
        Value::Table(t).to_string(),
        "{ address = { city = \"x\" } }"
    );
}

#[test]
fn a_slow_rate_keeps_its_digits_and_never_falls_below_the_least() {
    assert_eq!(rate_text(0.0041667), "0.004167");
    assert_eq!(rate_text(1e-9), "0.001");
    assert_eq!(rate_text(2.4242), "2.42");
    assert_eq!(rate_text(138.03), "138");
    assert_eq!(rate_text(30.0), "30");
    assert_eq!(replay_database("shop"), "shop_replay");
    assert_eq!(replay_database(&"d".repeat(70)).len(), 63);
}

#[test]
fn plan_summaries_name_their_indexes() {
    assert_eq!(
        plan_indexes("IXSCAN { status: 1, created: -1 }, IXSCAN { _id: 1 }"),
        vec![vec![("status".to_string(), 1), ("created".to_string(), -1)]]
    );
    assert!(plan_indexes("COLLSCAN").is_empty());
    // A key this cannot read leaves the whole index out, never half of it.
    assert!(plan_indexes("IXSCAN { a: 1, loc: \"2dsphere\" }").is_empty());
}

#[test]
fn a_unique_index_gets_values_that_never_repeat_in_the_documents_and_the_writes() {
    // A compound unique index { tenant, email }: the reads select by tenant, so email is made
    // unique (from each document's _id), also where no document was sampled; a write that sets
    // email gets a value no document holds.
    let mut obs = Vec::new();
    for i in 0..40 {
        let t = ["a", "b"][i % 2];
        obs.push(op(
            i64::try_from(i).unwrap(),
            doc! { "find": "orders", "filter": { "tenant": t } },
            "x",
        ));
    }
    for i in 0..10 {
        obs.push(op(100 + i, doc! { "update": "orders", "updates": [{ "q": { "_id": i }, "u": { "$set": { "email": format!("e{i}") } } }] }, "x"));
    }
    let mut infos = HashMap::new();
    infos.insert(
        ("shop".to_string(), "orders".to_string()),
        CollectionInfo {
            count: Some(500),
            indexes: vec![doc! { "key": { "tenant": 1, "email": 1 }, "name": "tenant_1_email_1", "unique": true }],
            ..Default::default()
        },
    );
    let c = build(&obs, &infos, &Options::default(), "cap", "t");
    assert!(
        c.profile.contains(
            r#"email = { "^FormatString" = { format = "email-%d", withArgs = [{ "^Id" = {} }] } }"#
        ),
        "{}",
        c.profile
    );
    assert!(
        c.profile.contains(r#"email = { "^Join" = { array = ["email-new-", { "^RandomString" = { length = 24 } }] } }"#),
        "{}",
        c.profile
    );
    validates(&c.profile);
}

#[test]
fn shapes_weigh_by_their_operations_not_by_the_values_they_kept() {
    // 30,000 finds of author "a" (a reservoir of 10,000 kept) and 1,000 of another shape
    // asking for "b": the field's pool and counts are 30 to 1, as the operations were.
    let mut obs = Vec::new();
    for i in 0..30_000 {
        obs.push(op(
            i,
            doc! { "find": "orders", "filter": { "author": "a" } },
            "web",
        ));
    }
    for i in 0..1_000 {
        obs.push(op(
            i * 30,
            doc! { "find": "orders", "filter": { "author": "b" }, "limit": 5 },
            "web",
        ));
    }
    let mut c = Collector::of(&obs, GroupBy::App);
    c.finish();
    let seen = &c.tally.seen;
    assert_eq!(seen.len(), 2);
    let g = gathered(seen, &[0, 1]);
    let key = ("orders".to_string(), "author".to_string());
    let asked: HashMap<String, u64> = g.asked[&key]
        .iter()
        .map(|(v, n)| (v.to_string(), *n))
        .collect();
    assert_eq!(asked["\"a\""], 30_000);
    assert_eq!(asked["\"b\""], 1_000);
    let pool = &g.pools[&key];
    let a = pool.iter().filter(|v| v.as_str() == Some("a")).count();
    let b = pool.len() - a;
    assert_eq!(
        (a, b),
        (10_000, 333),
        "the pool keeps the operations' proportions"
    );
}

#[test]
fn a_date_read_beside_a_ranked_field_is_drawn_by_its_rank_where_the_source_dates_differ() {
    // The five busiest authors' messages are of the last hour, the others' of two days: the
    // template draws `created` by the author's rank, and the profile runs.
    let now = 1_700_000_000_000_i64;
    let hour = 3_600_000_i64;
    let mut obs = Vec::new();
    for i in 0..200_i64 {
        let since = mongodb::bson::DateTime::from_millis(now - 12 * hour);
        obs.push(op(
            now - 200 + i,
            doc! { "find": "orders", "filter": { "author": format!("u{}", i % 50), "created": { "$gte": since } } },
            "web",
        ));
    }
    let mut counts = Vec::new();
    let mut pairs = Vec::new();
    for a in 0..50_u64 {
        let n = if a < 5 { 400 - 60 * a } else { 19 };
        counts.push((Bson::String(format!("u{a}")), n));
        for k in 0..n {
            let span = if a < 5 { hour } else { 48 * hour };
            let ms = now - i64::try_from(k * 7919 % 1_000_003).unwrap() * span / 1_000_003;
            pairs.push((Bson::String(format!("u{a}")), ms));
        }
    }
    let read: u64 = counts.iter().map(|c| c.1).sum();
    let mut values = BTreeMap::new();
    values.insert(
        "author".to_string(),
        crate::capture::FieldData {
            read,
            counts,
            whole: true,
            distinct: None,
            dated: [("created".to_string(), pairs)].into_iter().collect(),
        },
    );
    let mut infos = HashMap::new();
    infos.insert(
        ("shop".to_string(), "orders".to_string()),
        CollectionInfo {
            count: Some(read),
            values,
            ..Default::default()
        },
    );
    let c = build(&obs, &infos, &Options::default(), "cap", "t");
    assert!(
        c.profile
            .contains(r#"created = { by_rank_of = "author", ranks = ["#),
        "{}",
        c.profile
    );
    assert!(
        c.profile.contains("# created: drawn by the rank of author"),
        "{}",
        c.profile
    );
    validates(&c.profile);
}
