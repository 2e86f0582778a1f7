//! The whole pipeline, deterministically: a scripted backend behind `ops::Backend` (fixed
//! latencies, chosen failures, a panic on request) runs a profile through the executor, the
//! recorder, the summary and every renderer, on tokio's paused clock, and the outputs are
//! checked exactly (insta snapshots in tests/snapshots/, named `pipeline__*`). This adds determinism; the live tests
//! against a real server remain the witnesses of what the tool measures.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mongo_stress::app::session::{RunOptions, Session};
use mongo_stress::error::Error;
use mongo_stress::metrics::sample::{SampleExtra, TxSample, TxState};
use mongo_stress::metrics::{ErrorClass, OpError};
use mongo_stress::ops::{Backend, Outcome, Prepared};
use mongo_stress::plan::{profile, Overrides, RunPlan};
use mongo_stress::report;
use mongo_stress::summary::{ServerInfo, ServerKind, Summary, WarningCode};
use mongo_stress::workload::command::Verb;
use mongo_stress::workload::{KeySpace, Request};
use tokio_util::sync::CancellationToken;

/// What the scripted server does with each verb.
#[derive(Clone, Copy)]
struct Act {
    latency: Duration,
    sent: u32,
    received: u32,
    /// Every n-th operation of this verb (1-based) fails as a timeout.
    fail_every: Option<u64>,
    /// The n-th operation of this verb (1-based) panics.
    panic_at: Option<u64>,
}

/// A server scripted by verb: the built-in kinds arrive as the verbs they are read as
/// (`insert` an insertOne, `get` a findOne, `update` an updateOne, `remove` a deleteOne), the
/// profile's own operations as theirs, and steps and transactions step by step.
#[derive(Clone)]
struct Scripted {
    acts: Arc<HashMap<Verb, Act>>,
    seen: Arc<HashMap<Verb, AtomicU64>>,
    /// The seed each `prepare` was given, in order.
    prepared_with: Arc<std::sync::Mutex<Vec<u64>>>,
}

impl Scripted {
    fn new(acts: &[(Verb, Act)]) -> Self {
        Scripted {
            acts: Arc::new(acts.iter().copied().collect()),
            seen: Arc::new(Verb::ALL.iter().map(|v| (*v, AtomicU64::new(0))).collect()),
            prepared_with: Arc::default(),
        }
    }

    /// One operation of verb `verb` (its row named `name`): the scripted wait and what it did.
    async fn one(&self, verb: Verb, name: &str) -> Outcome {
        let act = self.acts[&verb];
        let n = self.seen[&verb].fetch_add(1, Ordering::Relaxed) + 1;
        if act.panic_at == Some(n) {
            panic!("scripted panic on {name} number {n}");
        }
        tokio::time::sleep(act.latency).await;
        let failed = act.fail_every.is_some_and(|every| n.is_multiple_of(every));
        let writes = |vs: &[Verb]| u64::from(!failed && vs.contains(&verb));
        Outcome {
            sent: act.sent,
            received: act.received,
            matched: !failed,
            modified: !failed
                && matches!(
                    verb,
                    Verb::UpdateOne | Verb::UpdateMany | Verb::DeleteOne | Verb::DeleteMany
                ),
            error: failed.then(|| {
                Box::new(OpError {
                    class: ErrorClass::Timeout,
                    code: None,
                    message: format!("scripted timeout on {name} number {n}").into(),
                })
            }),
            inserted: writes(&[Verb::InsertOne]),
            deleted: writes(&[Verb::DeleteOne]),
            ..Outcome::default()
        }
    }
}

impl Backend for Scripted {
    async fn execute(&self, _on: usize, req: Request) -> Outcome {
        match req {
            Request::Template(t) => self.one(t.op.verb, &t.op.name.to_string()).await,
            Request::Steps(s) => {
                // Each step in turn, timed; the first that fails or matches nothing ends it (a
                // transaction's then aborts), as the real backend does.
                let mut out = Outcome {
                    matched: true,
                    ..Outcome::default()
                };
                let mut extra = SampleExtra::default();
                let started = tokio::time::Instant::now();
                for step in &s.op.steps {
                    let at = tokio::time::Instant::now();
                    let one = self.one(step.verb, &step.name.to_string()).await;
                    let us = u32::try_from(at.elapsed().as_micros()).unwrap();
                    extra.steps.push(mongo_stress::metrics::StepSample {
                        name: step.name.clone(),
                        us,
                        docs: mongo_stress::metrics::sample::OpDocs::new(
                            0,
                            one.inserted,
                            0,
                            0,
                            one.deleted,
                        ),
                        matched: one.matched,
                        error: None,
                    });
                    out.sent += one.sent;
                    out.received += one.received;
                    out.inserted += one.inserted;
                    out.deleted += one.deleted;
                    out.modified |= one.modified;
                    if one.error.is_some() || !one.matched {
                        out.matched = false;
                        out.error = one.error;
                        break;
                    }
                }
                if s.op.transaction {
                    extra.tx = Some(TxSample {
                        state: if out.matched {
                            TxState::Committed
                        } else {
                            TxState::Aborted
                        },
                        ..TxSample::default()
                    });
                    extra.first_attempt_us =
                        Some(u32::try_from(started.elapsed().as_micros()).unwrap());
                }
                out.extra = Some(Box::new(extra));
                out
            }
        }
    }

    async fn prepare(
        &self,
        plan: &RunPlan,
        seed: u64,
        _stop: &CancellationToken,
        _foreign: mongo_stress::ops::setup::Foreign,
        begin: Option<std::time::SystemTime>,
        _preloading: mongo_stress::ops::setup::Preloading<'_>,
    ) -> Result<Prepared, Error> {
        self.prepared_with.lock().unwrap().push(seed);
        Ok(Prepared {
            keys: plan
                .collections
                .iter()
                .map(|c| KeySpace::starting_at(c.setup.preload as i64))
                .collect(),
            begin,
            // As if the preload took a quarter of a second.
            load: (plan.setup().preload > 0)
                .then(|| (plan.setup().preload, Duration::from_millis(250))),
        })
    }
}

const PROFILE: &str = r#"
name = "pipeline"
[setup]
preload = 100
[document]
city = { choice = ["a", "b", "c"] }
pop = { paired_with = "city", choice = [1, 2, 3] }
[[group]]
name = "insert"
stage = "load"
op = "insert"
threads = 2
loops = 10
warmup = "4ms"
[[group]]
name = "find"
stage = "mixed"
op = "find"
threads = 2
loops = 8
[[group]]
name = "update"
stage = "mixed"
op = "update"
set = ["pop"]
threads = 1
loops = 6
[[group]]
name = "remove"
stage = "mixed"
op = "remove"
threads = 1
loops = 4
[[group]]
name = "paced"
stage = "paced"
op = "insert"
threads = 2
loops = 4
rate = 2000
"#;

fn act(ms: u64, sent: u32, received: u32) -> Act {
    Act {
        latency: Duration::from_millis(ms),
        sent,
        received,
        fail_every: None,
        panic_at: None,
    }
}

/// Runs PROFILE through a session into `dir`; returns the summary.
async fn run(dir: &Path, backend: Scripted) -> Summary {
    let loaded = profile::parse("pipeline.toml", PROFILE, "pipeline").expect("profile parses");
    let plan = RunPlan::build(&loaded, &Overrides::default()).expect("profile plans");
    run_plan(dir, backend, &plan).await
}

/// Runs `plan` through a session into `dir`; returns the summary.
async fn run_plan(dir: &Path, backend: Scripted, plan: &RunPlan) -> Summary {
    let opts = RunOptions {
        seed: 42,
        repeat: 1,
        live: None,
        chatty: false,
        foreign: mongo_stress::ops::setup::Foreign::Refuse,
        samples: true,
        jtl: Some(dir.join("samples.jtl")),
        hdr_interval: Duration::from_millis(10),
        interval_log: true,
        baseline: None,
        start_at: None,
        tags: [("commit".to_string(), "abc123".to_string())].into(),
        link: None,
    };
    let stop = CancellationToken::new();
    let session = Session {
        plan,
        backend,
        opts: &opts,
        out_dir: dir,
        stop: &stop,
        server: ServerInfo {
            kind: ServerKind::External,
            version: "scripted".into(),
            uri: "scripted://".into(),
        },
        command_line: vec!["mongo-stress".into(), "run".into(), "pipeline".into()],
        url: "scripted://db.coll".into(),
        injector: None,
        live: None,
        page: None,
        later_plans: Default::default(),
    };
    session.run(None).await.expect("the session runs")
}

/// The interval log read back with the `hdrhistogram` crate: per group, the intervals' counts sum
/// to the row's samples, and their union gives the row's percentiles exactly; summary.json's
/// encoded whole-run histograms give them too.
fn assert_interval_log_matches(dir: &Path, summary: &Summary) {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let text = read(dir, "latency.hlog");
    assert!(text.starts_with("#[Logged with mongo-stress"), "{text}");
    assert!(text.contains("#[StartTime: ") && text.contains("#[BaseTime: "));
    assert!(text.contains(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    ));
    let mut union: HashMap<String, hdrhistogram::Histogram<u64>> = HashMap::new();
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        let LogEntry::Interval(h) = entry.expect("a well-formed interval log") else {
            continue;
        };
        intervals += 1;
        let bytes = base64_decode(h.encoded_histogram());
        let hist: hdrhistogram::Histogram<u64> =
            Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        let tag = h.tag().expect("every line is tagged").as_str().to_string();
        union
            .entry(tag)
            .or_insert_with(mongo_stress::metrics::new_histogram)
            .add(&hist)
            .unwrap();
    }
    assert!(intervals > 4, "several 10 ms intervals: {intervals}");
    let rows = &summary.runs[0].rows;
    for row in rows
        .iter()
        .filter(|r| r.samples > 0 && !r.label.is_stage_total())
    {
        let h = &union[&row.label.to_string()];
        assert_eq!(h.len(), row.samples, "{}", row.label);
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        assert_eq!(
            (ms(0.5), ms(0.9), ms(0.99), ms(0.999)),
            (row.median_ms, row.p90_ms, row.p99_ms, row.p999_ms),
            "{}",
            row.label
        );
        let whole = mongo_stress::metrics::decode(row.latency_hdr.as_deref().unwrap()).unwrap();
        assert_eq!(&whole, h, "summary.json's histogram of {}", row.label);
    }
    assert_eq!(union["warmup:insert"].len(), 4);
    assert_eq!(union["svc:paced"].len(), 8);
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The JSON with wall-clock times and this host replaced, so the snapshot is about content.
fn redacted(text: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if [
                        "started_at",
                        "invoked_at",
                        "finished_at",
                        "sum_us",
                        "began_ms",
                        "start_ms",
                        "end_ms",
                        "first_start_us",
                        "last_end_us",
                        "host",
                        "tool",
                    ]
                    .contains(&k.as_str())
                    {
                        *x = serde_json::Value::String("[redacted]".into());
                    } else {
                        walk(x);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    serde_json::to_string_pretty(&v).expect("JSON")
}

/// Checks `value` against `tests/snapshots/pipeline__NAME.snap`, the snapshots' place and name
/// from when this was a test binary of its own.
fn snapshot(name: &str, value: String) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(format!("pipeline__{name}"), value));
}

fn table(summary: &Summary) -> String {
    let mut out = Vec::new();
    report::table::render(summary, &mut out).expect("render");
    String::from_utf8(out).expect("UTF-8")
}

#[tokio::test(start_paused = true)]
async fn a_scripted_profile_gives_exact_outputs_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new(&[
        (Verb::InsertOne, act(2, 100, 0)),
        (
            Verb::Find,
            Act {
                fail_every: Some(4),
                ..act(5, 30, 2000)
            },
        ),
        (Verb::UpdateOne, act(3, 60, 0)),
        (Verb::DeleteOne, act(4, 50, 20)),
    ]);
    let prepared_with = backend.prepared_with.clone();
    let summary = run(dir.path(), backend).await;
    // The setup draws from the seed the stages draw from (run 1: the seed as given).
    assert_eq!(*prepared_with.lock().unwrap(), [summary.seed]);

    // Independent witnesses: the sample log's lines (the warm-up's 4 marked), and the scripted
    // failures (every 4th of 16 finds).
    let samples = read(dir.path(), "samples.tsv");
    assert_eq!(samples.lines().count(), 1 + 20 + 16 + 6 + 4 + 8);
    assert_eq!(
        samples.lines().filter(|l| l.contains("\twarmup\t")).count(),
        4
    );
    assert_eq!(read(dir.path(), "samples.jtl").lines().count(), 1 + 54);
    assert_eq!(summary.runs[0].total().samples, 50);
    assert_eq!(summary.runs[0].total().errors, 4);
    assert_interval_log_matches(dir.path(), &summary);
    assert_eq!(summary.exit_code(), 1, "operations failed: exit 1");

    snapshot("table", table(&summary));
    snapshot("summary_tsv", read(dir.path(), "summary.tsv"));
    let json: serde_json::Value = serde_json::from_str(&read(dir.path(), "summary.json")).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "summary.json breaks docs/summary.schema.json: {errors:#?}"
    );
    snapshot("summary_json", redacted(&read(dir.path(), "summary.json")));
    snapshot("run_json", redacted(&read(dir.path(), "run.json")));
    snapshot(
        "resources_summary_tsv",
        read(dir.path(), "resources-summary.tsv"),
    );
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_one_virtual_user_fails_the_run_and_names_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new(&[
        (Verb::InsertOne, act(2, 100, 0)),
        (Verb::Find, act(5, 30, 2000)),
        (
            Verb::UpdateOne,
            Act {
                panic_at: Some(3),
                ..act(3, 60, 0)
            },
        ),
        (Verb::DeleteOne, act(4, 50, 20)),
    ]);
    let summary = run(dir.path(), backend).await;

    assert_eq!(summary.exit_code(), 1, "a panic is never a clean run");
    let failures: Vec<_> = summary
        .warnings
        .iter()
        .filter(|w| w.code == WarningCode::Failure)
        .collect();
    assert_eq!(failures.len(), 1, "{:?}", summary.warnings);
    assert!(
        failures[0].message.contains(
            "virtual user 1 of group `update` (update) panicked: scripted panic on update number 3"
        ),
        "{}",
        failures[0].message
    );
    // What completed is still summarised: the update group's one user did 2 operations before
    // its panic, and every other group ran in full.
    let rows = &summary.runs[0].rows;
    let samples = |label: &str| rows.iter().find(|r| r.label.is(label)).unwrap().samples;
    assert_eq!(
        (
            samples("insert"),
            samples("find"),
            samples("update"),
            samples("remove")
        ),
        (16, 16, 2, 4),
        "insert's first 4 operations are its warm-up"
    );
    assert_eq!(
        read(dir.path(), "samples.tsv").lines().count(),
        1 + 20 + 16 + 2 + 4 + 8
    );
    let json = read(dir.path(), "summary.json");
    assert!(json.contains("\"code\": \"failure\""), "{json}");
    snapshot("table_after_a_panic", table(&summary));
}

const MIXED: &str = r#"
name = "typed"
[document]
city = { choice = ["a", "b"] }
[[group]]
name = "ins"
op = "insert"
threads = 2
loops = 6
[[group]]
name = "mix"
mix = { get = 50, update = 50 }
set = ["city"]
threads = 2
loops = 8
[thresholds]
"TOTAL.p99" = "< 1us"
"mix:get.samples" = "> 0"
"TOTAL.throughput" = "> 1"
"#;

fn mixed_backend() -> Scripted {
    Scripted::new(&[
        (Verb::InsertOne, act(2, 100, 0)),
        (Verb::FindOne, act(3, 30, 200)),
        (Verb::UpdateOne, act(4, 60, 0)),
    ])
}

/// run.json's groups and summary.json's are one type (`summary::GroupInfo`): their schemas
/// define it alike, so one cannot drift from the other (run.json's lacked four fields once).
#[test]
fn run_and_summary_schemas_define_a_group_alike() {
    let run: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/run.schema.json")).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/summary.schema.json")).unwrap();
    assert_eq!(run["$defs"]["group"], summary["$defs"]["group"]);
}

/// Validates a run.json against docs/run.schema.json.
fn assert_run_json_valid(dir: &Path) {
    let json: serde_json::Value = serde_json::from_str(&read(dir, "run.json")).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/run.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{}/run.json breaks docs/run.schema.json: {errors:#?}",
        dir.display()
    );
}

/// Every reader of a run directory (rundir, compare, merge, the report's data) reads what the
/// real writer wrote: a renamed field fails here instead of turning a number into 0 or "?".
#[tokio::test(start_paused = true)]
async fn the_run_directory_reads_back_typed_in_every_reader() {
    use mongo_stress::plan::part::{Part, PartPlan};
    use mongo_stress::rundir::RunDir;
    let loaded = profile::parse("typed.toml", MIXED, "typed").expect("profile parses");
    let plan = RunPlan::build(&loaded, &Overrides::default()).expect("profile plans");
    let whole = tempfile::tempdir().unwrap();
    let summary = run_plan(whole.path(), mixed_backend(), &plan).await;
    assert_eq!(summary.exit_code(), 4, "TOTAL.p99 < 1us fails");
    assert_run_json_valid(whole.path());

    // rundir: the same summary and run facts back.
    let dir = RunDir::open(whole.path()).unwrap();
    let (mine, theirs) = (&summary.runs[0], &dir.summary.runs[0]);
    assert_eq!(theirs.rows, mine.rows);
    assert_eq!(theirs.thresholds, mine.thresholds);
    let labels: Vec<String> = theirs.rows.iter().map(|r| r.label.to_string()).collect();
    assert_eq!(labels, ["ins", "mix:get", "mix:update", "mix", "TOTAL"]);
    assert_eq!(dir.run_info.hdr_interval(), Some(Duration::from_millis(10)));
    assert!(dir.run_info.interval_log == Some(true) && dir.run_info.host.is_some());
    assert!(!dir.intervals.is_empty());
    assert_eq!(dir.summary.exit_code(), 4);

    // history: the run directory as a point, and the `--append` file grown twice, read back
    // with the same values, tags and plan; a file of another header refused.
    {
        use mongo_stress::history::{input, ledger, HistoryMetric};
        let point = input::from_dir(whole.path()).unwrap();
        assert_eq!(point.tags["commit"], "abc123");
        assert_eq!(point.profile, "typed");
        assert!(point.plan.starts_with("ins "), "{}", point.plan);
        for row in &mine.rows {
            let v = &point.values[&row.label.to_string()];
            assert_eq!(
                v[&HistoryMetric::Throughput],
                row.throughput,
                "{}",
                row.label
            );
            assert_eq!(v[&HistoryMetric::P99], row.p99_ms, "{}", row.label);
        }
        let file = whole.path().join("nightly.tsv");
        for _ in 0..2 {
            report::tsv::append(&file, &summary, &point.tags, whole.path()).unwrap();
        }
        let text = read(whole.path(), "nightly.tsv");
        assert_eq!(text.lines().count(), 1 + 2 * mine.rows.len(), "{text}");
        let back = ledger::read(&file).unwrap();
        // Both appends are of one run (same directory and time): one point, its rows twice.
        assert_eq!(back.len(), 1, "{text}");
        assert_eq!(back[0].tags, point.tags);
        assert_eq!(back[0].plan, point.plan);
        for row in &mine.rows {
            let v = &back[0].values[&row.label.to_string()];
            let close = |a: f64, b: f64| (a - b).abs() <= 0.01 * b.abs().max(0.01);
            assert!(
                close(v[&HistoryMetric::P50], row.median_ms),
                "{}",
                row.label
            );
        }
        // Four runs appending at once, ten times each: every row kept (the lock beside it).
        let shared = whole.path().join("shared.tsv");
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..10 {
                        report::tsv::append(&shared, &summary, &point.tags, whole.path()).unwrap();
                    }
                });
            }
        });
        let rows = read(whole.path(), "shared.tsv").lines().count();
        assert_eq!(rows, 1 + 40 * mine.rows.len());
        std::fs::write(&file, "Label\tThroughput\n").unwrap();
        let refused = report::tsv::append(&file, &summary, &point.tags, whole.path()).unwrap_err();
        assert!(refused.to_string().contains("header"), "{refused}");
    }

    // The report's data: the exit code the run exited with, and its thresholds.
    let page = report::html::data(&dir);
    assert_eq!(page["header"]["exit_code"], 4);
    assert_eq!(page["header"]["exit"], "4 (a threshold failed)");
    let verdicts: Vec<(String, String)> = page["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["threshold"].as_str().unwrap().to_string(),
                t["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("TOTAL.p99 < 1us".to_string(), "FAIL".to_string()),
            ("mix:get.samples > 0".to_string(), "pass".to_string()),
            ("TOTAL.throughput > 1".to_string(), "pass".to_string()),
        ]
    );

    // compare: every value is the summary's own (a run against itself).
    let judged = mongo_stress::compare::compare(&dir, &dir, &[], 7).unwrap();
    let total = mine.total();
    let cell = |label: &str, metric: &str| {
        judged
            .cells
            .iter()
            .find(|c| c.label.is(label) && c.metric == metric)
            .unwrap_or_else(|| panic!("{label}.{metric}"))
            .base
    };
    assert_eq!(cell("TOTAL", "avg"), total.average_ms);
    assert_eq!(cell("TOTAL", "samples"), total.samples as f64);
    assert_eq!(cell("TOTAL", "throughput"), total.throughput);
    assert_eq!(cell("mix:get", "p99"), mine.rows[1].p99_ms);
    assert!(total.average_ms > 0.0 && total.throughput > 0.0);
    // Every compared metric of every row has its series (a metric spelled one way where the
    // values are kept and another where they are judged would leave it unjudged).
    for c in &judged.cells {
        let expected = match c.metric.name() {
            "samples" | "error_pct" => mongo_stress::compare::Verdict::NotJudged,
            // Judged over runs only (the interval log has no documents or retries).
            _ if mongo_stress::compare::EXTRA.contains(&c.metric) => {
                mongo_stress::compare::Verdict::NotJudged
            }
            _ => mongo_stress::compare::Verdict::SameWithinNoise,
        };
        assert_eq!(c.verdict, expected, "{}.{}", c.label, c.metric);
    }
    assert_eq!(
        judged
            .cells
            .iter()
            .filter(|c| mongo_stress::compare::METRICS.contains(&c.metric))
            .count(),
        5 * mongo_stress::compare::METRICS.len(),
        "every metric of every row"
    );
    // The scripted inserts moved documents: their rows compare documents per second too.
    assert!(judged
        .cells
        .iter()
        .any(|c| c.metric == "docs_per_sec" && c.base > 0.0));
    let gate = mongo_stress::compare::Gate::parse("TOTAL.median > +10%").unwrap();
    let judged = mongo_stress::compare::compare(&dir, &dir, &[gate], 7).unwrap();
    assert_eq!(judged.gates[0].gate, "TOTAL.median > +10%");
    assert!(judged.gates[0].pass);

    // merge: two parts, each run.json valid, the merged one too, thresholds judged again from
    // what the parts recorded (no text parsed), the throughput limit the parts deferred.
    let parts = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for index in 0..2 {
        let part = plan
            .clone()
            .divide(PartPlan {
                part: Part { index, count: 2 },
                setup_wait: Duration::from_secs(1),
                start_at: None,
            })
            .expect("divides");
        let d = parts.path().join(format!("part-{index}"));
        std::fs::create_dir_all(&d).unwrap();
        let s = run_plan(&d, mixed_backend(), &part).await;
        let deferred = &s.runs[0].thresholds[2];
        assert!(deferred.deferred && deferred.pass, "{deferred:?}");
        assert_run_json_valid(&d);
        dirs.push(d);
    }
    let merged = parts.path().join("merged");
    let (out, dirs2) = (merged.clone(), dirs.clone());
    let code =
        tokio::task::spawn_blocking(move || mongo_stress::app::merge::merge(&dirs, &out, false))
            .await
            .unwrap()
            .unwrap();
    assert_eq!(code, 4);
    assert_run_json_valid(&merged);
    let m = RunDir::open(&merged).unwrap();
    assert_eq!(m.run_info.parts.len(), 2);
    assert!(m.run_info.host.is_none() && m.run_info.part.is_none());
    assert_eq!(m.run_info.hdr_interval(), Some(Duration::from_millis(10)));
    let t = &m.summary.runs[0].thresholds;
    assert_eq!(t.len(), 3);
    assert!(!t[0].pass && t[1].pass && !t[2].deferred && t[2].pass);
    assert!(t[2].value > 1.0, "the merged throughput: {}", t[2].value);
    assert_eq!(
        m.summary.runs[0].total().samples,
        total.samples,
        "the parts' samples add up to the whole run's"
    );
    assert_eq!(report::html::data(&m)["header"]["exit_code"], 4);

    // A part whose run.json does not say its interval length is refused, not guessed at 1 s.
    let mut info: serde_json::Value = serde_json::from_str(&read(&dirs2[1], "run.json")).unwrap();
    info.as_object_mut().unwrap().remove("hdr_interval_secs");
    std::fs::write(dirs2[1].join("run.json"), info.to_string()).unwrap();
    let out = parts.path().join("merged-again");
    let refused = tokio::task::spawn_blocking(move || {
        mongo_stress::app::merge::merge(&dirs2, &out, false)
            .expect_err("refused")
            .to_string()
    })
    .await
    .unwrap();
    assert!(refused.contains("hdr_interval_secs"), "{refused}");

    // An optional file that cannot be read is an error naming it, not "not sampled".
    std::fs::create_dir(whole.path().join("resources.tsv")).unwrap();
    let e = RunDir::open(whole.path())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("resources.tsv cannot be read"), "{e}");
}

/// The profile's own operations, a mix of named ones, steps on two collections and a
/// transaction, through the whole pipeline without a server.
const OWN: &str = r#"
name = "own"
[[collection]]
name = "orders"
preload = 100
[collection.document]
status = { "^Choose" = { from = ["open", "paid"] } }
[[collection]]
name = "accounts"
preload = 10
[collection.document]
balance = 100
[[group]]
name = "recent"
collection = "orders"
threads = 2
loops = 5
[group.find]
filter = { status = "open" }
limit = 20
[[group]]
name = "app"
collection = "orders"
threads = 2
loops = 10
[[group.ops]]
name = "lookup"
weight = 1
findOne = { filter = { _id = { "^Key" = {} } } }
[[group.ops]]
name = "load"
weight = 1
insertMany = { batch = 10 }
[[group]]
name = "order"
collection = "orders"
threads = 1
loops = 4
[[group.steps]]
name = "pick"
findOne = { filter = { _id = { "^Key" = {} } } }
[[group.steps]]
name = "log"
collection = "accounts"
insertOne = { document = { balance = 0 } }
[[group]]
name = "transfer"
collection = "accounts"
threads = 2
loops = 5
transaction = true
[[group.steps]]
name = "debit"
updateOne = { filter = { _id = { "^Key" = {} } }, update = { "$inc" = { balance = -1 } } }
[[group.steps]]
name = "credit"
updateOne = { filter = { _id = { "^Key" = {} } }, update = { "$inc" = { balance = 1 } } }
"#;

/// Equal within the histograms' three significant digits.
fn assert_near(ms: f64, expected: f64, what: &str) {
    assert!(
        (ms - expected).abs() <= expected * 1e-3,
        "{what}: {ms} ms, expected {expected}"
    );
}

#[tokio::test(start_paused = true)]
async fn templates_steps_and_a_transaction_run_through_the_pipeline_by_verb() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Scripted::new(&[
        (Verb::Find, act(5, 30, 2000)),
        (Verb::FindOne, act(2, 20, 200)),
        (
            Verb::InsertMany,
            Act {
                fail_every: Some(3),
                ..act(8, 1000, 0)
            },
        ),
        (Verb::InsertOne, act(1, 40, 0)),
        (Verb::UpdateOne, act(3, 60, 0)),
    ]);
    let loaded = profile::parse("own.toml", OWN, "own").expect("profile parses");
    let plan = RunPlan::build(&loaded, &Overrides::default()).expect("profile plans");
    let summary = run_plan(dir.path(), backend.clone(), &plan).await;
    let rows = &summary.runs[0].rows;
    let row = |label: &str| {
        rows.iter()
            .find(|r| r.label.is(label))
            .unwrap_or_else(|| panic!("no row {label}"))
    };
    // Each verb's count on the scripted server is what the rows say was sent.
    let seen = |v: Verb| backend.seen[&v].load(Ordering::Relaxed);
    assert_eq!(row("recent").samples, 10);
    assert_eq!(seen(Verb::Find), 10);
    assert_near(row("recent").median_ms, 5.0, "the scripted find");
    assert_eq!(row("app").samples, 20);
    assert_eq!(row("app:lookup").samples + row("app:load").samples, 20);
    assert_eq!(seen(Verb::InsertMany), row("app:load").samples);
    assert_eq!(row("app:load").errors, seen(Verb::InsertMany) / 3);
    // Steps: one sample each, a row per step with its own time, the whole their sum.
    assert_eq!(row("order").samples, 4);
    assert_eq!(seen(Verb::InsertOne), 4, "one log per order");
    assert_near(row("order:pick").median_ms, 2.0, "order:pick");
    assert_near(row("order:log").median_ms, 1.0, "order:log");
    assert_near(row("order").median_ms, 3.0, "order");
    // The transaction: 10 committed, each two updates of 3 ms.
    let t = row("transfer");
    assert_eq!(t.samples, 10);
    assert_eq!(seen(Verb::UpdateOne), 20);
    assert_near(t.median_ms, 6.0, "transfer");
    let tx = t.transactions.as_ref().expect("a transaction's counts");
    assert_eq!((tx.committed, tx.aborted, tx.in_doubt), (10, 0, 0));
    assert_eq!(row("transfer:first-attempt").samples, 10);
    assert_eq!(
        read(dir.path(), "samples.tsv").lines().count() as u64,
        1 + seen(Verb::Find) + 20 + 4 + 10
    );
    assert_run_json_valid(dir.path());
}
