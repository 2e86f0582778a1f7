//! Results that keep time, against a real server: `latency.hlog` read back by two independent
//! readers (the `hdrhistogram` crate and the Python `hdrhistogram` package) agrees with the
//! summary; summary.json validates against docs/summary.schema.json and its encoded histograms
//! give the table's percentiles; a warm-up is logged but not counted.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

fn histogram(encoded: &str) -> Histogram<u64> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    Deserializer::new().deserialize(&mut &bytes[..]).unwrap()
}

/// Every interval of the log, added up per tag.
fn union_by_tag(hlog: &Path) -> BTreeMap<String, Histogram<u64>> {
    let text = std::fs::read(hlog).unwrap();
    let mut by_tag: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for entry in IntervalLogIterator::new(&text) {
        if let LogEntry::Interval(h) = entry.expect("a well-formed interval log") {
            let tag = h.tag().expect("tagged").as_str().to_string();
            let hist = histogram(h.encoded_histogram());
            by_tag
                .entry(tag)
                .or_insert_with(|| Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap())
                .add(&hist)
                .unwrap();
        }
    }
    by_tag
}

#[test]
fn the_interval_log_adds_up_to_the_summary_for_both_readers() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("hlog");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"3s\"\n\
                  [[group]]\nname = \"paced find\"\nop = \"find\"\nthreads = 4\nduration = \"3s\"\nrate = 100\n";
    let path = profile(dir.path(), &db, "drop = true\npreload = 200", groups);
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    validate_schema(&summary);

    let by_tag = union_by_tag(&out.join("latency.hlog"));
    for (label, tag) in [
        ("ins", "ins"),
        ("paced find", "paced_find"),
        ("TOTAL", "TOTAL"),
    ] {
        let r = row(&summary, label);
        let h = &by_tag[tag];
        assert_eq!(h.len(), r["samples"].as_u64().unwrap(), "{label}");
        for (q, key) in [
            (0.5, "median_ms"),
            (0.9, "p90_ms"),
            (0.99, "p99_ms"),
            (0.999, "p999_ms"),
        ] {
            assert_eq!(
                h.value_at_quantile(q) as f64 / 1000.0,
                r[key].as_f64().unwrap(),
                "{label} {key}: the union of the intervals gives the summary's percentile"
            );
        }
        // summary.json's whole-run histogram gives the table's percentiles too.
        let whole = histogram(r["latency_hdr"].as_str().unwrap());
        assert_eq!(&whole, h, "{label}");
    }
    assert_eq!(
        by_tag["svc:paced_find"].len(),
        row(&summary, "paced find")["samples"].as_u64().unwrap()
    );
    assert!(
        !by_tag.contains_key("svc:ins"),
        "closed loop has no service series"
    );

    // The Python package, a reader that shares no code with us, counts the same.
    let script = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
counts = {}
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    counts[h.get_tag()] = counts.get(h.get_tag(), 0) + h.get_total_count()
print(counts.get("TOTAL", 0), counts.get("ins", 0))
"#;
    let py = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(out.join("latency.hlog"))
        .output()
        .expect("python3 runs");
    assert!(
        py.status.success(),
        "the Python hdrhistogram package (scripts/test.sh installs it) could not read the log: {}",
        String::from_utf8_lossy(&py.stderr)
    );
    let printed = String::from_utf8_lossy(&py.stdout);
    assert_eq!(
        printed.trim(),
        format!(
            "{} {}",
            row(&summary, "TOTAL")["samples"],
            row(&summary, "ins")["samples"]
        )
    );

    // HdrHistogram's own Java log processor (Debian's libhdrhistogram-java, installed by
    // scripts/test.sh) reads it too: the same count and mean for TOTAL.
    let jar = std::env::var("MONGO_STRESS_HDRHISTOGRAM_JAR")
        .unwrap_or_else(|_| "/usr/share/java/hdrhistogram.jar".into());
    let processed = dir.path().join("processed");
    let java = std::process::Command::new("java")
        .args(["-cp", &jar, "org.HdrHistogram.HistogramLogProcessor", "-i"])
        .arg(out.join("latency.hlog"))
        .args(["-tag", "TOTAL", "-outputValueUnitRatio", "1000", "-o"])
        .arg(&processed)
        .output()
        .expect("java runs (scripts/test.sh installs libhdrhistogram-java)");
    assert!(
        java.status.success(),
        "HistogramLogProcessor ({jar}) could not read the log: {}",
        String::from_utf8_lossy(&java.stderr)
    );
    let hgrm = std::fs::read_to_string(processed.with_extension("hgrm")).unwrap();
    let field = |name: &str| -> f64 {
        hgrm.split(name)
            .nth(1)
            .and_then(|s| s.trim_start_matches([' ', '=']).split([',', ']']).next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {hgrm}"))
    };
    let total = row(&summary, "TOTAL");
    assert_eq!(
        field("Total count") as u64,
        total["samples"].as_u64().unwrap(),
        "{hgrm}"
    );
    assert!(
        (field("Mean") - total["average_ms"].as_f64().unwrap()).abs() < 0.01,
        "{hgrm}"
    );
}

#[test]
fn a_warm_up_is_logged_and_marked_but_not_summarised() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("warmup");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"6s\"\nwarmup = \"2s\"\n";
    let path = profile(dir.path(), &db, "drop = true", groups);
    let out = dir.path().join("run");
    let (summary, stdout, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);
    validate_schema(&summary);

    let log = std::fs::read_to_string(out.join("samples.tsv")).unwrap();
    let phase = |p: &str| {
        log.lines()
            .skip(1)
            .filter(|l| l.contains(&format!("\t{p}\t")))
            .count() as u64
    };
    let (warm, measured) = (phase("warmup"), phase("measure"));
    assert_eq!(measured, row(&summary, "ins")["samples"].as_u64().unwrap());
    assert_eq!(
        warm,
        summary["runs"][0]["warmup"][0]["samples"].as_u64().unwrap()
    );
    assert!(
        warm > 0 && measured > warm,
        "{warm} warm-up, {measured} measured"
    );
    // Every line is one document on the server: the warm-up inserted too.
    assert_eq!(
        server.count(&db, "cities", mongodb::bson::doc! {}),
        warm + measured
    );
    // Warm-up lines all start before the measured ones (4 users, one operation each in flight).
    let starts = |p: &str| -> Vec<u64> {
        log.lines()
            .skip(1)
            .filter(|l| l.contains(&format!("\t{p}\t")))
            .map(|l| l.split('\t').next().unwrap().parse().unwrap())
            .collect()
    };
    assert!(starts("warmup").iter().max() < starts("measure").iter().min());
    assert!(
        stdout.contains("warm-up: ins: its 2s warm-up ("),
        "{stdout}"
    );
    assert_eq!(
        union_by_tag(&out.join("latency.hlog"))["warmup:ins"].len(),
        warm
    );
}
