use super::*;

#[test]
fn buckets_are_5_percent_apart_and_an_address_defaults_to_loopback() {
    let b = bounds();
    assert!(b[0] <= 25e-6 + 1e-12 && *b.last().unwrap() >= 120.0);
    for w in b.windows(2) {
        assert!(w[1] / w[0] <= 1.051, "{w:?}");
    }
    assert_eq!(
        listen_address("9464").unwrap().to_string(),
        "127.0.0.1:9464"
    );
    assert_eq!(
        listen_address(":9464").unwrap().to_string(),
        "127.0.0.1:9464"
    );
    assert_eq!(
        listen_address("0.0.0.0:1").unwrap().to_string(),
        "0.0.0.0:1"
    );
    assert!(listen_address("nowhere").is_err());
}

#[test]
fn a_latency_lands_in_the_first_bucket_at_or_above_it_and_inf_is_the_count() {
    let mut t = crate::metrics::Timing::default();
    // 25 µs: exactly the first bound; 26 µs: the second; an hour: only +Inf.
    for us in [25u64, 26, 3_600_000_000] {
        t.hist.saturating_record(us);
    }
    let mut out = Vec::new();
    histogram(&mut out, &[], &t, 3);
    let at = |i: usize| out[i].value;
    assert_eq!(out[0].labels[0].1, "0.000025");
    assert_eq!((at(0), at(1)), (1.0, 2.0));
    let inf = out
        .iter()
        .position(|s| s.labels.iter().any(|l| l.1 == "+Inf"))
        .unwrap();
    assert_eq!(at(inf - 1), 2.0, "past the last bound: only +Inf");
    assert_eq!(at(inf), 3.0);
    assert!(out[..inf].windows(2).all(|w| w[0].value <= w[1].value));
    assert_eq!(out.last().unwrap().suffix, "_count");
}

#[test]
fn the_endpoint_answers_in_the_format_asked_for() {
    let text = "[document]\ncity = \"a\"\n[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 1\nloops = 3\n";
    let loaded = crate::plan::profile::parse("p.toml", text, "p").unwrap();
    let plan = RunPlan::build(&loaded, &Default::default()).unwrap();
    let e = Exporter::new(&plan, "r1", Arc::new(vec![AtomicU32::new(0)]));
    let end = e.serve("127.0.0.1:0".parse().unwrap()).unwrap();
    let url = format!("http://{}/metrics", end.addr);
    let mut plain = ureq::get(&url).call().unwrap();
    let ctype = plain
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let body = plain.body_mut().read_to_string().unwrap();
    assert!(
        body.contains("# TYPE mongo_stress_operations_total counter"),
        "{body}"
    );
    let mut om = ureq::get(&url)
        .header("Accept", "application/openmetrics-text; version=1.0.0")
        .call()
        .unwrap();
    let body = om.body_mut().read_to_string().unwrap();
    assert!(body.ends_with("# EOF\n"), "{body}");
    // Taken: a usage error naming the port.
    let again = e.serve(end.addr).err().expect("the port is taken");
    assert!(
        again
            .to_string()
            .contains(&format!("port {}", end.addr.port())),
        "{again}"
    );
    end.close();
}

#[test]
fn the_families_count_what_the_group_metrics_hold() {
    let text = "[document]\ncity = \"a\"\n[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 1\nloops = 3\n";
    let loaded = crate::plan::profile::parse("p.toml", text, "p").unwrap();
    let plan = RunPlan::build(&loaded, &Default::default()).unwrap();
    let e = Exporter::new(&plan, "r1", Arc::new(vec![AtomicU32::new(1)]));
    let mut m = GroupMetrics::default();
    for i in 1..=3u64 {
        m.record(&crate::metrics::Sample::at(i * 1000, i * 1000));
    }
    e.update(&[m]);
    let p = text::prometheus(&e.families());
    assert!(p.contains("mongo_stress_operations_total{run=\"r1\",group=\"g\",kind=\"insert\",outcome=\"ok\"} 3\n"), "{p}");
    assert!(
        p.contains("mongo_stress_latency_seconds_count{run=\"r1\",group=\"g\"} 3\n"),
        "{p}"
    );
    assert!(
        p.contains("mongo_stress_latency_seconds_sum{run=\"r1\",group=\"g\"} 0.006\n"),
        "{p}"
    );
    assert!(
        p.contains("mongo_stress_users{run=\"r1\",group=\"g\"} 1\n"),
        "{p}"
    );
}
