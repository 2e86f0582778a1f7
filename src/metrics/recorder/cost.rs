use super::*;

/// `cargo test --release --lib cost -- --ignored --nocapture`: what closing one interval of
/// 4 open-loop groups costs, and serializing its histograms as the interval log does.
#[test]
#[ignore]
fn closing_an_interval() {
    let r = Recorder {
        names: (0..4).map(|i| format!("g{i}")).collect(),
        open_loop: vec![true; 4],
        beside: vec![false; 4],
        active: Arc::new((0..4).map(|_| AtomicU32::new(0)).collect()),
        tick: Duration::from_secs(1),
        outputs: Vec::new(),
        watch: None,
        log: None,
        availability: Default::default(),
        clock: Default::default(),
        spares: crate::metrics::interval::Spares::keeping(),
        steering: None,
        notices: None,
    };
    let mut st = State {
        interval: fresh(4),
        interval_warm: fresh(4),
        interval_start_us: 0,
        interval_started: Instant::now(),
        window: fresh(4),
        window_every: None,
        total: fresh(4),
        total_warm: fresh(4),
        segments: Vec::new(),
        split: vec![false; 4],
        changes: Vec::new(),
    };
    let n = 200;
    let (mut close, mut ser) = (Duration::ZERO, Duration::ZERO);
    let mut serializer = hdrhistogram::serialization::V2DeflateSerializer::new();
    let mut buf = Vec::new();
    for round in 0..n {
        for g in 0..4 {
            for i in 0..1000u64 {
                st.interval[g].record(&Sample::at(i, 300 + (i * 7 + round) % 5000));
            }
        }
        let t = std::time::Instant::now();
        let out = r.close_interval(&mut st);
        close += t.elapsed();
        let t = std::time::Instant::now();
        for h in &out.hists {
            buf.clear();
            hdrhistogram::serialization::Serializer::serialize(&mut serializer, &h.hist, &mut buf)
                .unwrap();
        }
        ser += t.elapsed();
        drop(out);
    }
    errln!(
        "per interval: close {:?}, serialize {:?}",
        close / u32::try_from(n).unwrap(),
        ser / u32::try_from(n).unwrap()
    );
}
