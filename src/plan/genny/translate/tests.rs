#[test]
fn a_command_keeps_its_order_when_its_first_value_is_a_document() {
    let yaml: Yaml =
        serde_yaml::from_str("{explain: {find: c, sort: {a: 1}}, verbosity: executionStats}")
            .unwrap();
    let Toml::String(json) = in_order(to_toml(&yaml)) else {
        panic!("written as a table, which TOML would reorder");
    };
    assert!(
        json.starts_with(r#"{"explain":{"find":"c","sort":{"a":1}}"#),
        "{json}"
    );
    // A command whose order TOML keeps stays a table.
    let yaml: Yaml =
        serde_yaml::from_str("{aggregate: c, pipeline: [{$match: {a: 1}}], cursor: {}}").unwrap();
    assert!(in_order(to_toml(&yaml)).is_table());
}

use super::*;

fn read(text: &str, smoke: bool) -> Result<Translated, Refusal> {
    let y: Yaml = serde_yaml::from_str(text).unwrap();
    translate(Path::new("w.yml"), &y, smoke)
}

#[test]
fn genny_durations_and_rates_read_as_genny_writes_them() {
    let d = |s: &str| duration(&Yaml::String(s.into()));
    assert_eq!(d("10 milliseconds"), Some(Duration::from_millis(10)));
    assert_eq!(d("1 minute"), Some(Duration::from_secs(60)));
    assert_eq!(d("2 seconds"), Some(Duration::from_secs(2)));
    assert_eq!(d("soon"), None);
    assert_eq!(global_rate("1 per 2 milliseconds"), Some(500.0));
    assert_eq!(global_rate("500 per 1 second"), Some(500.0));
    assert_eq!(global_rate("80%"), None);
}

#[test]
fn phases_become_stages_and_genny_rules_become_group_options() {
    let t = read(
        "Actors:\n- Name: A\n  Type: HelloWorld\n  Threads: 10\n  Phases:\n  - {Duration: 2 seconds}\n  - {Blocking: None}\n- Name: B\n  Type: HelloWorld\n  Threads: 2\n  Phases:\n  - {Repeat: 10}\n  - {Repeat: 1e3}\n",
        false,
    )
    .unwrap();
    let groups = t.profile["group"].as_array().unwrap();
    assert_eq!(groups.len(), 4);
    let g = |i: usize| groups[i].as_table().unwrap();
    assert_eq!(g(0)["name"].as_str(), Some("A.0"));
    assert_eq!(g(0)["stage"].as_str(), Some("phase0"));
    assert_eq!(g(0)["duration"].as_str(), Some("2s"));
    assert_eq!(g(1)["loops"].as_integer(), Some(10));
    assert_eq!(g(2)["background"].as_bool(), Some(true));
    assert_eq!(g(3)["loops"].as_integer(), Some(1000));
    let stages: std::collections::BTreeSet<_> =
        (0..4).map(|i| g(i)["stage"].as_str().unwrap()).collect();
    assert_eq!(stages.len(), 2, "a stage per phase: {stages:?}");
    // The smoke check: each once.
    let s = read("Actors:\n- Name: A\n  Type: HelloWorld\n  Phases:\n  - {Duration: 2 seconds, GlobalRate: 5 per 1 second}\n", true).unwrap();
    let g = s.profile["group"].as_array().unwrap()[0]
        .as_table()
        .unwrap()
        .clone();
    assert_eq!(g["loops"].as_integer(), Some(1));
    assert!(!g.contains_key("rate") && !g.contains_key("duration"));
}

#[test]
fn an_unsupported_actor_is_refused_in_one_line_naming_file_and_actor() {
    let e = read(
        "Actors:\n- Name: X\n  Type: StreamStatsReporter\n  Phases: [{Repeat: 1}]\n",
        false,
    )
    .unwrap_err();
    let line = e.to_string();
    assert!(
        line.starts_with(
            "w.yml: actor `X`: actor type `StreamStatsReporter` is not one the tool runs"
        ),
        "{line}"
    );
    assert!(!line.contains('\n'));
    let e = read("Actors:\n- Name: C\n  Type: CrudActor\n  Database: test\n  Phases:\n  - Repeat: 1\n    Collection: c\n    Operations:\n    - {OperationName: mapReduce, OperationCommand: {}}\n", false).unwrap_err();
    assert_eq!(e.phase, Some(0));
    assert!(e.thing.contains("`mapReduce` is not supported"), "{e}");
}

#[test]
fn a_loader_inserts_its_documents_in_its_phase_the_last_batch_the_remainder() {
    let t = read("Actors:\n- Name: L\n  Type: Loader\n  Threads: 1\n  Phases:\n  - Repeat: 1\n    Database: db\n    CollectionCount: 2\n    DocumentCount: 105\n    BatchSize: 10\n    Document: {a: {^RandomInt: {min: 1, max: 9}}}\n    Indexes: [{keys: {a: 1}}]\n- Name: R\n  Type: RunCommand\n  Database: db\n  Phases:\n  - {Nop: true}\n  - Repeat: 2\n    Operation: {OperationCommand: {ping: 1}}\n", false).unwrap();
    let colls = t.profile["collection"].as_array().unwrap();
    assert_eq!(colls.len(), 2);
    assert_eq!(t.profile["target"]["database"].as_str(), Some("db"));
    let g = t.profile["group"].as_array().unwrap();
    let names: Vec<&str> = g.iter().map(|g| g["name"].as_str().unwrap()).collect();
    // One thread: a group that loads its collections in turn, one per operation.
    assert_eq!(names, ["L", "R"]);
    assert_eq!(g[0]["loops"].as_integer(), Some(2));
    assert_eq!(g[0]["collections_in_turn"].as_bool(), Some(true));
    assert_eq!(g[0]["collections"].as_array().unwrap().len(), 2);
    let steps = g[0]["steps"].as_array().unwrap();
    // Ten batches of 10, the remainder of 5, then the indexes.
    assert_eq!(steps[0]["insertMany"]["batch"].as_integer(), Some(10));
    assert_eq!(steps[0]["repeat"].as_integer(), Some(10));
    assert_eq!(steps[1]["insertMany"]["batch"].as_integer(), Some(5));
    assert_eq!(steps[1]["name"].as_str(), Some("IndividualBulkInsert.2"));
    assert_eq!(steps[1]["metric"].as_str(), Some("L.IndividualBulkInsert"));
    assert_eq!(
        steps[2]["command"]["indexes"][0]["name"].as_str(),
        Some("a_1")
    );
    assert_eq!(
        steps[2]["command"]["createIndexes"].as_str(),
        Some("Collection0")
    );
    assert_eq!(g[0]["stage"].as_str(), Some("phase0"));
    assert_eq!(g[1]["stage"].as_str(), Some("phase1"));
    // Two threads: a group each, thread t its own collections.
    let t = read("Actors:\n- Name: L\n  Type: Loader\n  Threads: 2\n  Phases:\n  - {Repeat: 1, Database: db, Threads: 2, CollectionCount: 5, DocumentCount: 3, BatchSize: 10, Document: {a: 1}}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    let colls: Vec<Vec<&str>> = g
        .iter()
        .map(|g| match g.get("collections") {
            Some(c) => c
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect(),
            None => vec![g["collection"].as_str().unwrap()],
        })
        .collect();
    // genny's: 5 / 2 = 2 each from 2t, the last thread the remainder too.
    assert_eq!(
        colls,
        [
            vec!["Collection0", "Collection1"],
            vec!["Collection2", "Collection3", "Collection4"]
        ]
    );
}

#[test]
fn multi_collection_actors_draw_their_collections_as_genny_does_and_big_batches_split() {
    let t = read("Actors:\n- Name: U\n  Type: MultiCollectionUpdate\n  Phases:\n  - {Repeat: 2, Database: db, CollectionCount: 3, UpdateFilter: {a: 1}, Update: {$inc: {n: 1}}}\n- Name: Q\n  Type: MultiCollectionQuery\n  Phases:\n  - {Repeat: 2, Database: db, CollectionCount: 3, Filter: {a: 1}, Limit: 5, ReadConcern: {Level: majority}}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    let names = |g: &Toml| -> Vec<String> {
        g["collections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect()
    };
    // The update draws 0..=2; the query 0..=3, one past, as genny's `uniform_int_distribution{0, n}`.
    assert_eq!(names(&g[0]), ["Collection0", "Collection1", "Collection2"]);
    assert_eq!(names(&g[1]).len(), 4);
    assert!(g[0].get("collection").is_none());
    // MultiCollectionUpdate's metric is its phase's (`Update.0` without a `MetricsName`).
    assert_eq!(g[0]["steps"][0]["name"].as_str(), Some("Update.0"));
    assert_eq!(g[0]["steps"][0]["metric"].as_str(), Some("U.Update.0"));
    assert_eq!(g[1]["steps"][0]["metric"].as_str(), Some("Q.Query"));
    assert_eq!(g[1]["steps"][0]["find"]["limit"].as_integer(), Some(5));
    assert_eq!(g[1]["read_concern"].as_str(), Some("majority"));
    let e = read("Actors:\n- Name: U\n  Type: MultiCollectionUpdate\n  Phases:\n  - {Repeat: 2, Database: db, UpdateFilter: {a: 1}, Update: {$inc: {n: 1}}}\n", false).unwrap_err();
    assert!(e.to_string().contains("needs `CollectionCount`"), "{e}");
    // A Loader's batch above the server's maxWriteBatchSize: inserts of 100,000, as the
    // driver sends it.
    let t = read("Actors:\n- Name: L\n  Type: Loader\n  Threads: 1\n  Phases:\n  - Repeat: 1\n    Database: db\n    CollectionCount: 1\n    DocumentCount: 1e6\n    BatchSize: 1e6\n    Document: {a: 1}\n", false).unwrap();
    let g = &t.profile["group"].as_array().unwrap()[0];
    assert_eq!(g["steps"][0]["repeat"].as_integer(), Some(10));
    assert_eq!(
        g["steps"][0]["insertMany"]["batch"].as_integer(),
        Some(100_000)
    );
    assert!(t.notes.iter().any(|n| n.contains("maxWriteBatchSize")));
}

#[test]
fn metrics_are_named_and_failures_kept_as_genny_names_and_keeps_them() {
    let t = read("Actors:\n- Name: A\n  Type: NopMetrics\n  Phases:\n  - {Repeat: 1, MetricsName: LoopOnly}\n  - {Repeat: 1}\n- Name: C\n  Type: CrudActor\n  Phases:\n  - Repeat: 1\n    Collection: c\n    MetricsName: Ph\n    Operations:\n    - {OperationName: insertOne, OperationCommand: {Document: {a: 1}}}\n    - {OperationName: find, OperationMetricsName: F, OperationCommand: {Filter: {}}, RecordFailure: true}\n  - Repeat: 1\n    Collection: c\n    Operations:\n    - {OperationName: insertOne, OperationCommand: {Document: {a: 1}}, ThrowOnFailure: false}\n- Name: R\n  Type: RunCommand\n  Phases:\n  - Repeat: 1\n    Operations:\n    - {OperationMetricsName: Seed, ReportMetrics: false, OperationCommand: {ping: 1}}\n    - {OperationCommand: {ping: 1}}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    let step = |gi: usize, si: usize, key: &str| {
        g[gi]["steps"][si]
            .get(key)
            .map(|v| v.to_string().trim_matches('"').to_string())
    };
    let names: Vec<&str> = g.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["A.0", "C.0", "R", "A.1", "C.1"]);
    // A phase's metric: its `MetricsName`, else `Default.phase` (PhaseContext::operation).
    assert_eq!(step(0, 0, "metric").as_deref(), Some("A.LoopOnly"));
    assert_eq!(step(0, 0, "name").as_deref(), Some("LoopOnly"));
    assert_eq!(step(3, 0, "metric").as_deref(), Some("A.Iterate.1"));
    // CrudActor: the phase's name for its operations, joined by an `OperationMetricsName`
    // that differs from the operation's; without a `MetricsName`, the operation's own.
    assert_eq!(step(1, 0, "metric").as_deref(), Some("C.Ph"));
    assert_eq!(step(1, 1, "metric").as_deref(), Some("C.Ph.F"));
    assert_eq!(step(1, 1, "name").as_deref(), Some("Ph.F"));
    assert_eq!(step(4, 0, "metric").as_deref(), Some("C.insertOne"));
    // Failures: `RecordFailure` counts and goes on; `ThrowOnFailure: false` goes on.
    assert_eq!(step(1, 1, "on_error").as_deref(), Some("record"));
    assert_eq!(step(1, 0, "on_error"), None);
    assert_eq!(step(4, 0, "on_error").as_deref(), Some("ignore"));
    // RunCommand: `OperationMetricsName` is the actor's; `ReportMetrics: false` has no row.
    assert_eq!(step(2, 0, "metric").as_deref(), Some("R.Seed"));
    assert_eq!(step(2, 0, "report").as_deref(), Some("false"));
    assert_eq!(
        step(2, 1, "metric").as_deref(),
        Some("R.DatabaseOperation.0")
    );
    // Every operation of an iteration runs, whatever the one before found.
    assert!(g.iter().all(|g| g["every_step"].as_bool() == Some(true)));
}

#[test]
fn a_random_sampler_reads_its_threads_collections_by_id_as_genny_distributes_them() {
    // 2 threads, 4 collections: thread t reads Collection{2t} and Collection{2t+1}.
    let t = read("Actors:\n- Name: S\n  Type: RandomSampler\n  Threads: 2\n  CollectionCount: 4\n  DocumentCount: 100\n  Database: hot\n  Phases:\n  - {Repeat: 5}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    assert_eq!(g.len(), 2);
    let colls: Vec<Vec<&str>> = g
        .iter()
        .map(|g| {
            g["collections"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        colls,
        [
            ["Collection0", "Collection1"],
            ["Collection2", "Collection3"]
        ]
    );
    let step = &g[0]["steps"][0];
    assert_eq!(step["metric"].as_str(), Some("S.Read.0"));
    assert_eq!(
        step["findOne"]["filter"]["_id"]["^RandomInt"]["max"].as_integer(),
        Some(99)
    );
    // More threads than collections: one each, the threads that share one in its group.
    let t = read("Actors:\n- Name: S\n  Type: RandomSampler\n  Threads: 4\n  CollectionCount: 2\n  DocumentCount: 10\n  Database: hot\n  Phases:\n  - {Repeat: 5}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    assert_eq!(g.len(), 2);
    assert!(g.iter().all(|g| g["threads"].as_integer() == Some(2)));
    // genny's rule: threads and collections divide evenly.
    let e = read("Actors:\n- Name: S\n  Type: RandomSampler\n  Threads: 3\n  CollectionCount: 4\n  DocumentCount: 10\n  Database: hot\n  Phases:\n  - {Repeat: 5}\n", false).unwrap_err();
    assert!(e.to_string().contains("evenly"), "{e}");
}

#[test]
fn a_sampler_and_a_scanner_share_their_actors_global_rate_among_their_groups() {
    // RandomSampler: 4 threads over 2 collections, 2 groups of 2: each half the rate.
    let t = read("Actors:\n- Name: S\n  Type: RandomSampler\n  Threads: 4\n  CollectionCount: 2\n  DocumentCount: 10\n  Database: hot\n  Phases:\n  - {Duration: 1 second, GlobalRate: 100 per 1 second}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    assert!(
        g.iter().all(|g| g["rate"].as_float() == Some(50.0)),
        "{g:?}"
    );
    // CollectionScanner: a group per thread, its collections `distributeCollectionNames`'.
    let t = read("Actors:\n- Name: C\n  Type: CollectionScanner\n  Threads: 4\n  Database: cold\n  GenerateCollectionNames: true\n  CollectionCount: 8\n  Phases:\n  - {Duration: 1 second, ScanType: standard, GlobalRate: 4 per 1 second}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    assert_eq!(g.len(), 4);
    assert!(g.iter().all(|g| g["rate"].as_float() == Some(1.0)));
    assert_eq!(g[3]["metric"].as_str(), Some("C.Scan.0"));
    let scan = &g[3]["steps"][0]["scan"];
    assert_eq!(g[3]["steps"].as_array().unwrap().len(), 1);
    assert_eq!(
        scan["collections"],
        toml::Value::Array(vec!["Collection6".into(), "Collection7".into()])
    );
    // Without generated names every thread scans every listed collection: one group of the
    // actor's threads at the whole rate; a snapshot scan held `ScanDuration` (not under
    // `--smoke`), `ScanRateMegabytes` as the scan's `megabytes`.
    let listed = "Actors:\n- Name: C\n  Type: CollectionScanner\n  Threads: 4\n  Database: cold\n  ScanRateMegabytes: 10 per 1 second\n  Phases:\n  - {Duration: 1 second, ScanType: snapshot, ScanDuration: 2 minutes, ScanContinuous: true, ScanSizeBytes: 1000, GlobalRate: 4 per 1 second}\n";
    let t = read(listed, false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(g[0]["threads"].as_integer(), Some(4));
    assert_eq!(g[0]["rate"].as_float(), Some(4.0));
    assert_eq!(g[0]["transaction"].as_bool(), Some(true));
    let scan = &g[0]["steps"][0]["scan"];
    assert!(scan.get("collections").is_none());
    assert_eq!(scan["hold"].as_str(), Some("2m"));
    assert_eq!(scan["continuous"].as_bool(), Some(true));
    assert_eq!(scan["bytes"].as_integer(), Some(1000));
    assert_eq!(scan["megabytes"].as_str(), Some("10 per 1s"));
    // A point-in-time scan reads at the time its thread kept in an earlier phase: each
    // thread's own name (a group per thread with generated names).
    let t = read("Actors:\n- Name: P\n  Type: CollectionScanner\n  Threads: 2\n  Database: d\n  GenerateCollectionNames: true\n  CollectionCount: 2\n  Phases:\n  - {Repeat: 1, SelectClusterTimeOnly: true}\n  - {Repeat: 1, ScanType: point-in-time, Filter: {a: 1}, FindOptions: {BatchSize: 5}}\n", false).unwrap();
    let g = t.profile["group"].as_array().unwrap();
    assert_eq!(g.len(), 4);
    assert_eq!(
        g[1]["steps"][0]["clusterTime"]["keep"].as_str(),
        Some("P.1")
    );
    assert_eq!(g[1]["sleep_before"].as_str(), Some("1s"));
    assert!(g[1].get("metric").is_none());
    assert_eq!(g[3]["steps"][0]["scan"]["at"].as_str(), Some("P.1"));
    assert!(g[3]["steps"][0]["scan"]["read"]["find"]
        .get("batchSize")
        .is_none());
    let smoke = read(listed, true).unwrap();
    assert!(smoke.profile["group"][0]["steps"][0]["scan"]
        .get("hold")
        .is_none());
    // genny's own refusals, and what is not read yet, each by name.
    for (actor, phase, says) in [
        (
            "Threads: 3\n  Database: d\n  GenerateCollectionNames: true\n  CollectionCount: 4",
            "ScanType: standard",
            "evenly",
        ),
        (
            "Threads: 1\n  Database: d",
            "ScanType: standard, ScanDuration: 1 minute",
            "only for `ScanType: snapshot`",
        ),
        (
            "Threads: 1\n  Database: d",
            "ScanType: snapshot, ScanContinuous: true",
            "needs `ScanDuration`",
        ),
        (
            "Threads: 1\n  Database: d",
            "ScanType: point-in-time, AggregatePipeline: {array: []}",
            "sends `find`",
        ),
    ] {
        let e = read(&format!("Actors:\n- Name: C\n  Type: CollectionScanner\n  {actor}\n  Phases:\n  - {{Repeat: 1, {phase}}}\n"), false).unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
}
