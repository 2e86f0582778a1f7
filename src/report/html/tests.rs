use super::*;

#[test]
fn a_rate_is_over_the_part_of_its_interval_the_series_ran_in() {
    let close = |a: &[(f64, f64, f64)], b: &[(f64, f64, f64)]| {
        let near = |x: f64, y: f64| (x - y).abs() < 1e-9;
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| near(x.0, y.0) && near(x.1, y.1) && near(x.2, y.2))
    };
    // Ran 0.2 s of the last 0.3 s interval: 14 operations are 70/s, not 47/s.
    let r = running(&[(100, 0.2, 1.0), (14, 1.2, 0.3)], &[(0.2, 1.4)]);
    assert!(close(&r, &[(0.2, 1.2, 100.0), (1.2, 1.4, 70.0)]), "{r:?}");
    // Intervals no span meets, or a series without spans: whole.
    let r = running(&[(100, 1.0, 1.0), (3, 6.0, 1.0)], &[(1.0, 5.0)]);
    assert!(close(&r, &[(1.0, 2.0, 100.0), (6.0, 7.0, 3.0)]), "{r:?}");
    let r = running(&[(100, 1.0, 1.0)], &[]);
    assert!(close(&r, &[(1.0, 2.0, 100.0)]), "{r:?}");
    // The last 2 ms the series ran, after a full interval: both show the rate of the two,
    // not 4 operations over 2 ms, nor over the whole 0.5 s the run took to finish.
    let r = running(&[(1000, 4.0, 1.0), (4, 5.0, 0.5)], &[(4.0, 5.002)]);
    let both = 1004.0 / 1.002;
    assert!(close(&r, &[(4.0, 5.0, both), (5.0, 5.002, both)]), "{r:?}");
    // The first interval started after the series did: what it holds is from the start.
    let r = running(&[(200, 1.047, 0.357)], &[(0.961, 1.262)]);
    assert!(close(&r, &[(0.961, 1.262, 200.0 / 0.301)]), "{r:?}");
    // A span over before the interval begins does not reach it: whole.
    let r = running(&[(186, 0.191, 1.005)], &[(0.188, 0.189)]);
    assert!(close(&r, &[(0.191, 1.196, 186.0 / 1.005)]), "{r:?}");
    // A short first one joins the one after it; one after a gap stands alone.
    let r = running(
        &[(5, 0.95, 1.0), (100, 1.95, 1.0), (50, 4.0, 1.0)],
        &[(1.9, 5.0)],
    );
    let both = 105.0 / 1.05;
    assert!(
        close(
            &r,
            &[(1.9, 1.95, both), (1.95, 2.95, both), (4.0, 5.0, 50.0)]
        ),
        "{r:?}"
    );
    // What reached the recorder after the series ended: with the interval before it.
    let r = running(&[(1000, 1.0, 1.0), (3, 2.0, 1.0)], &[(1.0, 1.999)]);
    let both = 1003.0 / 0.999;
    assert!(
        close(&r, &[(1.0, 1.999, both), (1.999, 1.999, both)]),
        "{r:?}"
    );
    // Nothing, or no time: no rate.
    assert!(running(&[], &[]).is_empty());
    assert!(close(&running(&[(0, 5.0, 0.0)], &[]), &[(5.0, 5.0, 0.0)]));
}

#[test]
fn member_rows_become_one_series_per_member_from_the_logs_base() {
    let row =
        |t: u64, shard: Option<&str>, member: &str, state: &str, lag: Option<f64>| MemberRow {
            time_ms: t,
            shard: shard.map(String::from),
            member: member.into(),
            state: Some(state.into()),
            ops_s: [Some(10.0), Some(5.0), None, None, None, Some(1.0)],
            repl_ops_s: Some(2.0),
            lag_s: lag,
            ..Default::default()
        };
    let rows = vec![
        row(9_000, None, "h1:27017", "PRIMARY", Some(0.0)), // before the base
        row(10_000, None, "h1:27017", "PRIMARY", Some(0.0)),
        row(10_000, Some("s0"), "h2:27017", "SECONDARY", Some(1.5)),
        row(11_000, None, "h1:27017", "PRIMARY", Some(0.0)),
        row(11_000, Some("s0"), "h2:27017", "SECONDARY", None),
    ];
    let m = member_series(&rows, 10.0);
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].name, "h1:27017");
    assert_eq!(m[0].t, [0.0, 1.0]);
    assert_eq!(m[0].ops, [Some(16.0), Some(16.0)]);
    assert_eq!(m[0].repl, [Some(2.0), Some(2.0)]);
    assert!(!m[0].secondary, "a primary throughout has no lag line");
    assert_eq!(m[1].name, "s0/h2:27017");
    assert_eq!(m[1].t, [0.0, 1.0]);
    assert_eq!(m[1].lag, [Some(1.5), None]);
    assert!(m[1].secondary);
    assert!(member_series(&rows[..1], 10.0).is_empty());
}

#[test]
fn the_members_table_has_a_line_per_member_and_a_run_column_for_several_runs() {
    use crate::summary::resources::AvgPeak;
    let m = MemberSummary {
        shard: None,
        member: "h1:27017".into(),
        state: Some("SECONDARY".into()),
        seconds: 10,
        answered: 9,
        ops_s: AvgPeak {
            avg: Some(12.4),
            peak: Some(30.0),
        },
        oplog_window_min_s: None,
        repl_ops_s: AvgPeak::default(),
        lag_s: AvgPeak {
            avg: Some(0.3),
            peak: Some(1.5),
        },
    };
    assert_eq!(member_lines(&[], false), None);
    assert_eq!(
        member_lines(&[(1, &m)], false).unwrap(),
        "Member\tState\tSeconds\tOps/s\tRepl ops/s\tLag s\nh1:27017\tSECONDARY\t9/10\t12 / 30\t-\t0.3 / 1.5\n"
    );
    let two = member_lines(&[(1, &m), (2, &m)], true).unwrap();
    assert!(two.starts_with("Run\tMember\t"), "{two}");
    assert!(two.contains("\n2\th1:27017\t"), "{two}");
}

#[test]
fn every_charted_column_is_one_resources_tsv_has() {
    let header = crate::rundir::resources::header(&["h:9100".into()], &[]);
    let columns: Vec<&str> = header.split('\t').collect();
    for (col, _, _) in RESOURCE_SERIES {
        assert!(
            columns.contains(&col),
            "{col} is not a resources.tsv column"
        );
    }
    for (col, _, _) in HOST_SERIES {
        let at = format!("{col}@h:9100");
        assert!(
            columns.contains(&at.as_str()),
            "{at} is not a resources.tsv column"
        );
    }
}
