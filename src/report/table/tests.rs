use super::*;
use crate::metrics::{GroupMetrics, Row};

/// A row with wide numbers: millions of samples, seconds-long stalls, a busy throughput.
fn row(label: &str) -> Row {
    let mut r = GroupMetrics::default().row(label);
    r.samples = 12_345_678;
    (r.average_ms, r.median_ms, r.p90_ms, r.p95_ms) = (123.45, 12.34, 234.56, 456.78);
    (r.p99_ms, r.min_ms, r.max_ms, r.p999_ms) = (1234.56, 0.12, 60_000.0, 5678.9);
    (r.error_pct, r.throughput) = (12.5, 123_456.78);
    (r.received_kb_sec, r.sent_kb_sec, r.stddev_ms) = (98_765.43, 8_765.43, 345.67);
    (r.errors, r.matched, r.modified) = (1_543_209, 10_802_469, 1_234_567);
    (r.service_average_ms, r.service_median_ms, r.service_p90_ms) = (12.3, 4.5, 67.8);
    (r.service_p99_ms, r.service_max_ms) = (890.12, 3456.78);
    (r.late, r.max_behind_ms, r.missed) = (123_456, 59_000.0, 1234);
    r
}

/// A summary of `runs` runs of one group (open loop at `rate`), five rows each, with
/// failures, a failed threshold and a stage's resources; from JSON, as `summary.json` is
/// read, so that fields added with a default leave it valid.
fn summary(runs: u32, rate: Option<f64>) -> Summary {
    let labels = [
        "insert",
        "find-by-city",
        "update",
        "TOTAL mixed-stage",
        "TOTAL",
    ];
    let rows: Vec<serde_json::Value> = labels
        .iter()
        .map(|l| serde_json::to_value(row(l)).expect("a row"))
        .collect();
    let run = |run: u32| {
        serde_json::json!({
            "run": run, "started_at": "", "wall_secs": 3600.0, "interrupted": false,
            "rows": rows,
            "errors_by_class": {"find-by-city": {"timeout": 1_543_209}},
            "error_kinds": [{"label": "find-by-city", "class": "timeout", "count": 1_543_209,
                "message": "Server selection timeout: No available servers. Topology: { Type: Unknown, Servers: [ { Address: 127.0.0.1:27017, Type: Unknown } ] }",
                "share_pct": 100.0}],
            "stages": [], "stopped_early": null, "warmup": [],
            "thresholds": [{
                "threshold": "find-by-city.p99 < 50ms", "value": 1234.56, "limit": 50.0,
                "unit": "ms", "pass": false, "aborted": false
            }]
        })
    };
    serde_json::from_value(serde_json::json!({
        "schema_version": 1, "tool": "", "profile": "p", "origin": "", "seed": 0,
        "server": {"kind": "external", "version": "", "uri": ""},
        "groups": [{
            "name": "insert", "stage": "", "op": "insert", "threads": 1000, "loops": null,
            "duration_secs": 3600.0, "rate": rate
        }],
        "runs": (1..=runs).map(run).collect::<Vec<_>>(),
        "spread": [],
        "resources": [{
            "run": 1, "label": "TOTAL mixed-stage", "seconds": 3600, "client_ops_s": 123456.7,
            "server_ops_s": {"avg": 123456.0, "peak": 234567.0},
            "server_cpu_pct": {"avg": 180.0, "peak": 199.0},
            "iops": {"avg": 12345.0, "peak": 23456.0},
            "disk_write_kbs": {"avg": 123456.0, "peak": 234567.0},
            "client_cpu_pct": {"avg": 150.0, "peak": 198.0},
            "client_rss_mb": {"avg": 100.0, "peak": 120.0},
            "cpu_source": "local /proc", "disk_source": "local /proc", "warning": null
        }],
        "interrupted": false,
        "warnings": []
    }))
    .expect("a summary")
}

fn shown(s: &Summary, width: Option<usize>) -> String {
    let mut out = Vec::new();
    render_within(s, width, &mut out).expect("render");
    String::from_utf8(out).expect("UTF-8")
}

fn header(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

#[test]
fn at_80_and_120_columns_no_line_is_wider_and_the_note_says_where_the_rest_is() {
    for (runs, rate) in [(1, None), (1, Some(2000.0)), (3, None)] {
        let s = summary(runs, rate);
        for width in [80, 120] {
            let text = shown(&s, Some(width));
            for l in text.lines() {
                assert!(l.chars().count() <= width, "{width}: {l:?} in\n{text}");
            }
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains("summary.tsv has every column"), "{text}");
            assert!(flat.contains("--wide"), "{text}");
            for must in [
                "Label",
                "# Samples",
                "Average",
                "Median",
                "99% Line",
                "Error %",
                "Throughput",
            ] {
                assert!(header(&text).contains(must), "{width}: {must}: {text}");
            }
            assert!(text.contains("TOTAL mixed-stage"), "{text}");
            assert!(text.contains("THRESHOLDS FAILED: "), "{text}");
        }
    }
}

#[test]
fn jmeter_columns_come_before_ours_and_ours_fill_what_is_left() {
    let s = summary(1, None);
    let at = |w| shown(&s, Some(w));
    // Wide enough for JMeter's and some of ours: ours from the left, as far as they fit.
    let jmeter = header(&shown(&s, None))
        .find("  99.9% Line")
        .expect("the full header");
    let text = at(jmeter + 12 + 11);
    assert!(
        header(&text).ends_with("Sent KB/sec  99.9% Line  Std. Dev."),
        "{text}"
    );
    assert!(text.contains("left out to fit"), "{text}");
    assert!(text.contains("Errors, Matched, Modified"), "{text}");
    // Narrower: the byte rates go first, Max stays longest.
    let text = at(100);
    assert!(!header(&text).contains("Sent KB/sec"), "{text}");
    assert!(header(&text).contains("Max"), "{text}");
    let text = at(80);
    assert!(!header(&text).contains("Min"), "{text}");
}

#[test]
fn a_legend_explains_only_the_columns_shown() {
    let text = shown(&summary(1, None), Some(80));
    assert!(!text.contains("Matched ="), "{text}");
    assert!(
        text.contains("(times in ms; Throughput in samples/s)"),
        "{text}"
    );
}

#[test]
fn narrower_than_the_kept_columns_they_stay_and_lines_are_wrapped() {
    let text = shown(&summary(1, Some(500.0)), Some(40));
    for l in text.lines() {
        assert!(l.chars().count() <= 40, "{l:?} in\n{text}");
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("99% Line"), "{text}");
    assert!(flat.contains("Throughput"), "{text}");
}

#[test]
fn without_a_width_every_column_and_line_is_whole() {
    let s = summary(1, Some(2000.0));
    let text = shown(&s, None);
    assert!(
        header(&text).ends_with("Late  Max Behind  Missed"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.chars().count() > 250));
    assert!(!text.contains("left out"), "{text}");
    let mut plain = Vec::new();
    render(&s, &mut plain).unwrap();
    assert_eq!(String::from_utf8(plain).unwrap(), text);
    // Wide enough for everything: the same text as without a width.
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
    assert_eq!(shown(&s, Some(widest)), text);
}

#[test]
fn the_resource_table_fits_too_and_names_its_file() {
    let text = shown(&summary(1, None), Some(80));
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("resources-summary.tsv has every column"),
        "{text}"
    );
    assert!(text.contains("Server ops/s"), "{text}");
}

#[test]
fn a_merged_runs_parts_table_fits_leaving_out_directory_and_host_first() {
    let mut s = summary(1, None);
    s.parts = (0..3)
        .map(|part| crate::summary::PartRow {
            part,
            dir: format!("/var/tmp/results/crud-mixed-20261130-120000-part{part}"),
            host: Some(format!("loadgen-{part}.example.internal")),
            samples: 4_115_226,
            throughput: 41_152.26,
            client_cpu_avg: Some(150.5),
            client_cpu_peak: Some(199.9),
            late_start_ms: Some(12.3),
            clock_offset_ms: None,
            round_trip_ms: None,
            lost: None,
        })
        .collect();
    let full = shown(&s, None);
    assert!(full.contains("part2"), "{full}");
    let text = shown(&s, Some(80));
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l:?} in\n{text}");
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("left out to fit 80 columns: Host, Directory"),
        "{text}"
    );
    assert!(flat.contains("parts.tsv has every column"), "{text}");
    assert!(text.contains("Part  # Samples  Throughput"), "{text}");
    assert!(!text.contains("part2"), "{text}");
}
