#[test]
fn a_kind_row_belongs_to_its_group_only() {
    let k = |l: &str| kind_row_of(&Label::parse(l), "ab");
    assert_eq!(k("ab:get"), Some(crate::vocab::OpKind::Get.into()));
    assert_eq!(k("ab"), None);
    assert_eq!(k("abc:get"), None, "another group's row");
    assert_eq!(
        k("ab:lookup"),
        Some(OpName::from("lookup")),
        "a named operation's row"
    );
    assert_eq!(k("ab@100/s"), None, "a rate step's row");
}

use super::*;

/// 1000 samples of 1, 2, ..., 1000 ms, started 1 ms apart from t = 10 s.
fn ramp() -> GroupMetrics {
    let mut m = GroupMetrics::default();
    for i in 1..=1000u64 {
        m.record_latency(10_000_000 + i * 1000, i * 1000);
    }
    m
}

fn close(a: f64, b: f64) -> bool {
    // HdrHistogram with 3 significant digits: within 0.1 %.
    (a - b).abs() <= b * 0.001 + 1e-9
}

#[test]
fn percentile_lines_match_a_known_distribution() {
    let r = ramp().row("g");
    assert_eq!(r.samples, 1000);
    assert!(close(r.median_ms, 500.0), "{}", r.median_ms);
    assert!(close(r.p90_ms, 900.0), "{}", r.p90_ms);
    assert!(close(r.p95_ms, 950.0), "{}", r.p95_ms);
    assert!(close(r.p99_ms, 990.0), "{}", r.p99_ms);
    assert!(close(r.p999_ms, 999.0), "{}", r.p999_ms);
    assert_eq!((r.min_ms, r.max_ms), (1.0, 1000.0));
    assert!(close(r.average_ms, 500.5));
    // Population standard deviation of 1..=1000 is 288.67.
    assert!((r.stddev_ms - 288.67).abs() < 0.5, "{}", r.stddev_ms);
}

#[test]
fn throughput_is_samples_over_first_start_to_last_end() {
    // First start 10.001 s, last end 11.000 + 1.000 = 12.000 s: 1000 samples in 1.999 s.
    let r = ramp().row("g");
    assert!(
        (r.throughput - 1000.0 / 1.999).abs() < 1e-6,
        "{}",
        r.throughput
    );
}

#[test]
fn kilobytes_are_1024_bytes_per_second_of_span() {
    let mut m = GroupMetrics::default();
    for i in 0..4u64 {
        let s = Sample {
            sent: 1024,
            received: 2048,
            matched: true,
            ..Sample::at(i * 500_000, 500_000)
        };
        m.record(&s);
    }
    let r = m.row("g");
    assert_eq!(r.throughput, 2.0);
    assert_eq!(r.sent_kb_sec, 2.0);
    assert_eq!(r.received_kb_sec, 4.0);
    assert_eq!(r.matched, 4);
}

#[test]
fn open_loop_latency_counts_from_the_intended_start_and_service_from_the_actual_one() {
    let mut m = GroupMetrics::default();
    // Ten operations due every 100 ms, each taking 10 ms; the 5th started 1 s late (a stall).
    for i in 0..10u64 {
        let intended = i * 100_000;
        let behind = if i == 4 { 1_000_000 } else { 0 };
        m.record(&Sample {
            intended_us: intended,
            late: i == 4,
            matched: true,
            ..Sample::at(intended + behind, 10_000)
        });
    }
    let r = m.row("g");
    assert_eq!(r.max_ms, 1010.0);
    assert_eq!(r.service_max_ms, 10.0);
    assert!((r.average_ms - 110.0).abs() < 1e-9, "{}", r.average_ms);
    assert!((r.service_average_ms - 10.0).abs() < 1e-9);
    assert_eq!((r.late, r.max_behind_ms), (1, 1000.0));
}

#[test]
fn errors_are_counted_by_class_and_message() {
    let mut m = GroupMetrics::default();
    for i in 0..10u64 {
        let error = (i % 5 == 0).then(|| Box::new(OpErrorFixture::timeout()));
        m.record(&Sample {
            error,
            ..Sample::at(i, 10)
        });
    }
    let r = m.row("g");
    assert_eq!((r.errors, r.error_pct), (2, 20.0));
    assert_eq!(m.errors_by_class[&ErrorClass::Timeout], 2);
    let timeouts = FailureKind {
        class: ErrorClass::Timeout,
        code: None,
    };
    assert_eq!(
        m.failures[&timeouts],
        Seen {
            count: 2,
            message: "timed out".into()
        }
    );
}

struct OpErrorFixture;
impl OpErrorFixture {
    fn timeout() -> crate::metrics::OpError {
        crate::metrics::OpError {
            class: ErrorClass::Timeout,
            code: None,
            message: "timed out".into(),
        }
    }
}

#[test]
fn merging_equals_recording_into_one() {
    let mut a = GroupMetrics::default();
    let mut b = GroupMetrics::default();
    let mut all = GroupMetrics::default();
    for i in 1..=100u64 {
        let target = if i % 2 == 0 { &mut a } else { &mut b };
        target.record_latency(i * 10, i * 37);
        all.record_latency(i * 10, i * 37);
    }
    a.merge(&b);
    assert_eq!(a.row("x"), all.row("x"));
}

#[test]
fn rows_of_parts_merge_into_the_row_of_the_whole() {
    // Two parts, open loop (service time apart), bytes and a late start: their summary rows
    // alone must give the row of all samples recorded into one.
    let (mut a, mut b, mut all) = Default::default();
    for i in 1..=500u64 {
        let s = Sample {
            intended_us: 1_700_000_000_000_000 + i * 997,
            late: i % 50 == 0,
            sent: 100 + u32::try_from(i).unwrap(),
            received: 7 * u32::try_from(i).unwrap(),
            matched: i % 3 == 0,
            ..Sample::at(
                1_700_000_000_000_000 + i * 997 + u64::from(i % 50 == 0) * 5000,
                i * 13 % 4001 + 1,
            )
        };
        let (x, _): (&mut GroupMetrics, ()) = if i % 3 == 0 {
            (&mut a, ())
        } else {
            (&mut b, ())
        };
        x.record(&s);
        GroupMetrics::record(&mut all, &s);
    }
    let mut merged = GroupMetrics::from_row(&a.summary_row("g", true)).unwrap();
    merged.merge(&GroupMetrics::from_row(&b.summary_row("g", true)).unwrap());
    assert_eq!(merged.summary_row("g", true), all.summary_row("g", true));
    // A row without its histogram cannot be merged, and says so.
    let bare = a.row("g");
    assert!(GroupMetrics::from_row(&bare)
        .unwrap_err()
        .contains("latency_hdr"));
}
