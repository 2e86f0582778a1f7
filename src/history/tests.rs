use std::collections::BTreeMap;

use super::*;

fn record(id: &str, epoch: f64, profile: &str, plan: &str, p50: f64) -> RunRecord {
    let mut m = BTreeMap::new();
    m.insert(HistoryMetric::P50, p50);
    m.insert(HistoryMetric::Throughput, 1000.0 / p50);
    let mut values = BTreeMap::new();
    values.insert("find".to_string(), m);
    RunRecord {
        id: id.into(),
        started_at: format!("t{epoch}"),
        epoch,
        tags: BTreeMap::from([("n".to_string(), format!("{}", 100.0 - epoch))]),
        profile: profile.into(),
        plan: plan.into(),
        report: None,
        values,
    }
}

fn settings(order: Order) -> Settings {
    Settings {
        metrics: vec![HistoryMetric::P50, HistoryMetric::Throughput],
        labels: vec![],
        search: edivisive::Settings {
            window: 50,
            pvalue: 0.05,
            min_magnitude: 0.05,
            merge: edivisive::Merge::SmallChangesFirst,
        },
        order,
    }
}

/// Index present for runs 1-11 and 17-20 (p50 about 1 ms), absent for 12-16 (about 10 ms).
fn steps() -> Vec<RunRecord> {
    (1..=20)
        .map(|i| {
            let noise = [0.01, -0.02, 0.03, 0.0, -0.01][i % 5];
            let base = if (12..17).contains(&i) { 10.0 } else { 1.0 };
            record(
                &format!("r{i}"),
                crate::num::real_len(i),
                "find",
                "find 4x",
                base * (1.0 + noise),
            )
        })
        .collect()
}

#[test]
fn change_points_at_the_runs_that_changed() {
    let h = analyze(steps(), &settings(Order::Time)).unwrap();
    assert_eq!(h.series.len(), 2);
    for s in &h.series {
        let at: Vec<usize> = s.change_points.iter().map(|f| f.run).collect();
        assert_eq!(at, [12, 17], "{}", s.key());
        let first = &s.change_points[0];
        assert!(
            !first.better,
            "{}: the first change is for the worse",
            s.key()
        );
        assert!(s.change_points[1].better);
    }
}

#[test]
fn fail_on_new_only_when_the_newest_run_starts_a_worse_change() {
    let mut h = analyze(steps()[..12].to_vec(), &settings(Order::Time)).unwrap();
    h.gate(1);
    assert_eq!(h.new_changes.len(), 2, "{:?}", h.new_changes);
    let mut h = analyze(steps(), &settings(Order::Time)).unwrap();
    h.gate(1);
    assert!(h.new_changes.is_empty());
    // Run 17 starts a change for the better: no gate.
    let mut h = analyze(steps()[..17].to_vec(), &settings(Order::Time)).unwrap();
    h.gate(1);
    assert!(h.new_changes.is_empty(), "{:?}", h.new_changes);
}

/// A one-run wobble of a noisy series: over --min-change, within 3 times the noise of the runs
/// before it: said, not failed; the Noise column is the runs' before it. A change beyond both
/// fails.
#[test]
fn a_change_at_the_newest_run_within_its_noise_passes_the_gate() {
    // p50 around 1 ms, 10 % apart run to run.
    let wobbly = |last: f64| {
        let mut runs: Vec<RunRecord> = (1..=12)
            .map(|i| {
                let p50 = if i % 2 == 0 { 1.1 } else { 0.9 };
                record(&format!("r{i}"), crate::num::real_len(i), "f", "f 1x", p50)
            })
            .collect();
        runs.push(record("r13", 13.0, "f", "f 1x", last));
        runs
    };
    let mut s = settings(Order::Time);
    s.metrics = vec![HistoryMetric::P50];
    s.search.min_magnitude = 0.1;
    // The search is not asked here: the series is given its change point at run 13.
    let judged = |last: f64| {
        let mut h = analyze(wobbly(last), &s).unwrap();
        let series = &mut h.series[0];
        let values = series.values.clone();
        let before = values[..12].iter().sum::<f64>() / 12.0;
        series.change_points = vec![Found {
            at: 12,
            run: 13,
            mean_before: before,
            mean_after: last,
            change_pct: Some((last / before - 1.0) * 100.0),
            pvalue: 0.01,
            better: false,
        }];
        h.gate(1);
        h
    };
    // +25 %: over --min-change 10 %, within 3 x 0.104 ms.
    let h = judged(1.25);
    assert!(h.new_changes.is_empty(), "{:?}", h.new_changes);
    assert_eq!(h.within_noise.len(), 1);
    let noise = h.within_noise[0].noise_pct.unwrap();
    assert!((noise - 10.4).abs() < 0.1, "{noise}");
    // +60 %: beyond both.
    let h = judged(1.6);
    assert_eq!(h.new_changes.len(), 1, "{:?}", h.within_noise);
    assert!(h.within_noise.is_empty());
    // The Noise column, when the newest run starts the last change: the runs' before it.
    let found = vec![Found {
        at: 12,
        run: 13,
        mean_before: 1.0,
        mean_after: 1.6,
        change_pct: Some(60.0),
        pvalue: 0.01,
        better: false,
    }];
    let values: Vec<f64> = wobbly(1.6)
        .iter()
        .map(|r| r.values["find"][&HistoryMetric::P50])
        .collect();
    let tail = before(&found, 0, &values);
    assert_eq!(tail.len(), 12);
    assert!((noise_pct(tail).unwrap() - 10.4).abs() < 0.1);
}

#[test]
fn other_profiles_and_plans_are_other_series() {
    let mut runs = steps();
    for (i, r) in runs.iter_mut().enumerate() {
        if i % 2 == 1 {
            r.plan = "find 8x".into();
        }
        if i % 5 == 0 {
            r.profile = "insert".into();
        }
    }
    let h = analyze(runs.clone(), &settings(Order::Time)).unwrap();
    let keys: std::collections::BTreeSet<(String, String)> = h
        .series
        .iter()
        .map(|s| (s.profile.clone(), s.plan.clone()))
        .collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    for s in &h.series {
        for n in &s.runs {
            let r = &runs[n - 1];
            assert_eq!((&r.profile, &r.plan), (&s.profile, &s.plan), "{}", s.key());
        }
    }
    assert!(
        h.notes.iter().any(|n| n.contains("changed from")),
        "{:?}",
        h.notes
    );
}

#[test]
fn ordered_by_a_tag() {
    // Started in reverse, tagged n = 1..20: by n (as numbers: 9 before 10) the steps are
    // where they were.
    let mut runs = steps();
    for (i, r) in runs.iter_mut().enumerate() {
        r.epoch = 100.0 - crate::num::real_len(i);
        r.tags.insert("n".into(), (i + 1).to_string());
    }
    let by_time = analyze(runs.clone(), &settings(Order::Time)).unwrap();
    assert_eq!(by_time.runs[0].id, "r20");
    let h = analyze(runs, &settings(Order::Tag("n".into()))).unwrap();
    assert_eq!(h.runs[0].id, "r1");
    assert_eq!(h.runs[9].id, "r10");
    let at: Vec<usize> = h.series[0].change_points.iter().map(|f| f.run).collect();
    assert_eq!(at, [12, 17], "{:?}", h.series[0].values);
    let mut lacking = steps();
    lacking[3].tags.clear();
    let e = analyze(lacking, &settings(Order::Tag("n".into()))).unwrap_err();
    assert!(e.to_string().contains("r4"), "{e}");
}

#[test]
fn the_gate_reads_each_profiles_newest_runs() {
    // Profile find's regression at its run 12, then a run of another profile: find's newest run
    // is still its run 12 (number 12 of 13), and the gate fails.
    let mut runs = steps()[..12].to_vec();
    runs.push(record("other", 13.0, "insert", "ins 1x", 1.0));
    let mut h = analyze(runs, &settings(Order::Time)).unwrap();
    h.gate(1);
    assert_eq!(h.new_changes.len(), 2, "{:?}", h.new_changes);
    // A regression at run 12 read after run 13: not new with --new-runs 1, new with 2.
    let mut h = analyze(steps()[..13].to_vec(), &settings(Order::Time)).unwrap();
    h.gate(1);
    assert!(h.new_changes.is_empty());
    h.gate(2);
    assert_eq!(h.new_changes.len(), 2, "{:?}", h.new_changes);
}
