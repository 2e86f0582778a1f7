use super::*;

struct PanicsOnThird(u32);
impl Watch for PanicsOnThird {
    fn observe(&mut self, _: &Sample) {
        self.0 += 1;
        if self.0 == 3 {
            panic!("watcher broke");
        }
    }
    fn check(&mut self, _: u64) -> bool {
        false
    }
}

fn recorder(watch: Option<Box<dyn Watch>>, hlog: Option<mpsc::Sender<IntervalBatch>>) -> Recorder {
    Recorder {
        names: vec!["g".into()],
        open_loop: vec![true],
        beside: vec![false],
        active: Arc::new(vec![AtomicU32::new(0)]),
        tick: Duration::from_secs(1),
        live_every: 5,
        live: None,
        watch,
        check: None,
        log: None,
        hlog,
        availability: Default::default(),
        feed: None,
        clock: Default::default(),
        spares: crate::metrics::interval::Spares::keeping(),
        steering: None,
        view: None,
    }
}

#[tokio::test]
async fn a_panic_while_recording_is_reported_and_what_came_before_and_after_is_kept() {
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(recorder(Some(Box::new(PanicsOnThird(0))), None).run(rx));
    for i in 0..5u64 {
        tx.send(Sample::at(i, 10)).await.unwrap();
        // One sample per batch, so the panic hits exactly the third.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(tx);
    let recorded = task.await.unwrap();
    assert_eq!(recorded.failures.len(), 1, "{:?}", recorded.failures);
    assert!(recorded.failures[0].contains("watcher broke"));
    // The third sample was recorded before the watcher saw it; none is lost.
    assert_eq!(recorded.groups[0].samples, 5);
}

#[tokio::test(start_paused = true)]
async fn histograms_used_again_hold_only_their_own_intervals_samples() {
    let (tx, rx) = mpsc::channel(16);
    let (htx, mut hrx) = mpsc::channel::<IntervalBatch>(16);
    let r = recorder(None, Some(htx));
    let spares = r.spares.clone();
    let task = tokio::spawn(r.run(rx));
    // The interval log's part: each histogram read, then given back at once.
    let log = tokio::spawn(async move {
        let mut lens = Vec::new();
        while let Some(batch) = hrx.recv().await {
            for h in batch.hists {
                if h.tag.to_string() == "g" {
                    lens.push(h.hist.len());
                }
                batch.spares.give(h.hist);
            }
        }
        lens
    });
    for i in 0..50u64 {
        tx.send(Sample::at(i * 100_000, 1000 + i)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(tx);
    let recorded = task.await.unwrap();
    let lens = log.await.unwrap();
    // One sample every 100 ms: 10 in each whole interval, none counted twice.
    assert_eq!(lens.iter().sum::<u64>(), 50, "{lens:?}");
    assert!(lens.iter().all(|n| *n <= 11), "{lens:?}");
    assert_eq!(recorded.groups[0].samples, 50);
    assert!(!spares.is_empty(), "histograms came back to be used again");
}

#[tokio::test(start_paused = true)]
async fn intervals_carry_every_sample_once_and_warm_up_apart() {
    let (tx, rx) = mpsc::channel(16);
    let (htx, mut hrx) = mpsc::channel(16);
    let task = tokio::spawn(recorder(None, Some(htx)).run(rx));
    // 3.5 s of samples, one every 100 ms; the first second is warm-up.
    for i in 0..35u64 {
        let mut s = Sample::at(i * 100_000, 1000 + i);
        s.warmup = i < 10;
        tx.send(s).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(tx);
    let recorded = task.await.unwrap();
    let mut by_tag: std::collections::BTreeMap<String, u64> = Default::default();
    while let Ok(batch) = hrx.try_recv() {
        for h in batch.hists {
            *by_tag.entry(h.tag.to_string()).or_default() += h.hist.len();
        }
    }
    assert_eq!(by_tag["g"], 25);
    assert_eq!(by_tag["svc:g"], 25);
    assert_eq!(by_tag["TOTAL"], 25);
    assert_eq!(by_tag["warmup:g"], 10);
    assert_eq!(recorded.groups[0].samples, 25);
    assert_eq!(recorded.warmup[0].samples, 10);
}
