use super::*;
use crate::metrics::Output;

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

fn recorder(
    watch: Option<Box<dyn Watch>>,
    hlog: Option<mpsc::Sender<Arc<IntervalBatch>>>,
) -> Recorder {
    Recorder {
        names: vec!["g".into()],
        open_loop: vec![true],
        beside: vec![false],
        active: Arc::new(vec![AtomicU32::new(0)]),
        tick: Duration::from_secs(1),
        outputs: hlog
            .map(|tx| Box::new(ToChannel(tx)) as Box<dyn Output>)
            .into_iter()
            .collect(),
        watch,
        log: None,
        availability: Default::default(),
        clock: Default::default(),
        spares: crate::metrics::interval::Spares::keeping(),
        steering: None,
        notices: None,
    }
}

/// The interval log's part of an output (`samplelog::hlog::ToLog` sends as this does, and
/// waits when its writer is behind): each interval with operations or users, to a channel.
struct ToChannel(mpsc::Sender<Arc<IntervalBatch>>);

impl Output for ToChannel {
    fn name(&self) -> &'static str {
        "the channel"
    }

    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        if let RunEvent::Interval(c) | RunEvent::End(c) = event {
            if !c.batch.is_empty() {
                self.0
                    .try_send(Arc::clone(c.batch))
                    .expect("room in the channel");
            }
        }
        Flow::More
    }
}

/// What an output was shown, by kind: intervals, windows (with their period) and ends.
#[derive(Default, Debug, PartialEq)]
struct Shown {
    intervals: u32,
    windows: Vec<Duration>,
    ends: u32,
    notices: u32,
    /// The samples in the totals of the last interval or end shown.
    totals: u64,
}

/// An output that counts what it is shown; it panics on the `panic_at`th interval, is done after
/// the `done_at`th, and takes a window every `every` intervals.
struct Counting {
    shown: Arc<std::sync::Mutex<Shown>>,
    every: Option<u32>,
    panic_at: Option<u32>,
    done_at: Option<u32>,
}

impl Counting {
    fn new(every: Option<u32>) -> (Counting, Arc<std::sync::Mutex<Shown>>) {
        let shown = Arc::new(std::sync::Mutex::new(Shown::default()));
        (
            Counting {
                shown: Arc::clone(&shown),
                every,
                panic_at: None,
                done_at: None,
            },
            shown,
        )
    }
}

impl Output for Counting {
    fn name(&self) -> &'static str {
        "the counting output"
    }

    fn window_every(&self) -> Option<u32> {
        self.every
    }

    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        let mut shown = self.shown.lock().unwrap();
        match event {
            RunEvent::Interval(c) => {
                shown.intervals += 1;
                shown.totals = c.totals[0].samples;
            }
            RunEvent::Window(w) => shown.windows.push(w.period),
            RunEvent::Notice(_) => shown.notices += 1,
            RunEvent::End(c) => {
                shown.ends += 1;
                shown.totals = c.totals[0].samples;
            }
        }
        let n = shown.intervals;
        drop(shown);
        if self.panic_at == Some(n) {
            panic!("output broke");
        }
        if self.done_at == Some(n) {
            return Flow::Done;
        }
        Flow::More
    }
}

#[tokio::test(start_paused = true)]
async fn every_output_is_shown_each_interval_and_the_end_in_order_and_windows_only_when_it_takes_them(
) {
    let (tx, rx) = mpsc::channel(16);
    let mut r = recorder(None, None);
    let (windows, with_windows) = Counting::new(Some(2));
    let (plain, without) = Counting::new(None);
    let (mut broken, broken_shown) = Counting::new(None);
    broken.panic_at = Some(2);
    let (mut done, done_shown) = Counting::new(None);
    done.done_at = Some(1);
    r.outputs = vec![
        Box::new(windows),
        Box::new(broken),
        Box::new(done),
        Box::new(plain),
    ];
    let task = tokio::spawn(r.run(rx));
    // 4.5 s of samples, one every 100 ms.
    for i in 0..45u64 {
        tx.send(Sample::at(i * 100_000, 1000 + i)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(tx);
    let recorded = task.await.unwrap();
    let with_windows = with_windows.lock().unwrap();
    assert_eq!(with_windows.intervals, 4, "{with_windows:?}");
    assert_eq!(with_windows.ends, 1);
    // A window every 2 intervals of 1 s.
    assert_eq!(with_windows.windows, [Duration::from_secs(2); 2]);
    assert_eq!(with_windows.totals, 45, "the end shows the run's totals");
    let without = without.lock().unwrap();
    assert_eq!((without.intervals, without.ends), (4, 1));
    assert!(without.windows.is_empty(), "it takes no window");
    // The one that panicked was shown nothing more, and its panic is the run's failure.
    assert_eq!(broken_shown.lock().unwrap().intervals, 2);
    assert_eq!(broken_shown.lock().unwrap().ends, 0);
    assert_eq!(recorded.failures.len(), 1, "{:?}", recorded.failures);
    assert!(
        recorded.failures[0]
            .starts_with("the counting output panicked and was switched off: output broke"),
        "{:?}",
        recorded.failures
    );
    // The one that was done was shown nothing more either.
    assert_eq!(done_shown.lock().unwrap().intervals, 1);
    assert_eq!(done_shown.lock().unwrap().ends, 0);
    assert_eq!(recorded.groups[0].samples, 45);
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
    let (htx, mut hrx) = mpsc::channel::<Arc<IntervalBatch>>(16);
    let r = recorder(None, Some(htx));
    let spares = r.spares.clone();
    let task = tokio::spawn(r.run(rx));
    // The interval log's part: each histogram read, then given back at once.
    let log = tokio::spawn(async move {
        let mut lens = Vec::new();
        while let Some(batch) = hrx.recv().await {
            for h in &batch.hists {
                if h.tag.to_string() == "g" {
                    lens.push(h.hist.len());
                }
            }
            IntervalBatch::give_back(batch);
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
        for h in &batch.hists {
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

#[tokio::test(start_paused = true)]
async fn notices_reach_the_outputs_in_order_with_the_intervals_the_last_before_the_end_too() {
    let (tx, rx) = mpsc::channel(16);
    let (notify, notices) = mpsc::unbounded_channel();
    let mut r = recorder(None, None);
    r.notices = Some(notices);
    /// What it was shown, in order: `i` an interval, `b`/`e` a stage's beginning and end, `E`
    /// the end.
    struct Order(Arc<std::sync::Mutex<String>>);
    impl Output for Order {
        fn name(&self) -> &'static str {
            "the order"
        }
        fn event(&mut self, event: &RunEvent<'_>) -> Flow {
            let c = match event {
                RunEvent::Interval(_) => 'i',
                RunEvent::Notice(crate::metrics::Notice::StageBegan { .. }) => 'b',
                RunEvent::Notice(crate::metrics::Notice::StageEnded { .. }) => 'e',
                RunEvent::Notice(_) => 'n',
                RunEvent::Window(_) => 'w',
                RunEvent::End(_) => 'E',
            };
            self.0.lock().unwrap().push(c);
            Flow::More
        }
    }
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    r.outputs = vec![Box::new(Order(Arc::clone(&seen)))];
    let task = tokio::spawn(r.run(rx));
    let began = crate::metrics::Notice::StageBegan {
        label: Label::group("s"),
        name: "s".into(),
        groups: vec![("g".into(), 1)],
        began_us: 0,
        start_us: 0,
    };
    notify.send(began).unwrap();
    for i in 0..25u64 {
        tx.send(Sample::at(i * 100_000, 1000)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The stage ends as its last sample is sent: it is shown before the end all the same.
    notify
        .send(crate::metrics::Notice::StageEnded { end_us: 1 })
        .unwrap();
    drop(tx);
    task.await.unwrap();
    drop(notify);
    assert_eq!(*seen.lock().unwrap(), "biieE");
}

#[tokio::test(start_paused = true)]
async fn a_change_made_at_an_intervals_end_is_told_before_that_interval_and_kept_for_the_summary() {
    use crate::vocab::Setting;
    let (tx, rx) = mpsc::channel(16);
    let mut r = recorder(None, None);
    let split = Split {
        group: 0,
        name: "g".into(),
        setting: Setting::Rate,
        from: 100.0,
        to: 200.0,
        who: "api 127.0.0.1".into(),
        before: Label::at("g", Setting::Rate, 100.0),
        after: Label::at("g", Setting::Rate, 200.0),
        at_us: 1,
    };
    /// The change, made at the first interval's end only.
    struct Once(Option<Split>);
    impl Steering for Once {
        fn at_interval(&mut self, _: u64) -> Vec<Split> {
            self.0.take().into_iter().collect()
        }
    }
    r.steering = Some(Box::new(Once(Some(split.clone()))));
    /// `c` the change (with what it said), `i` an interval, `E` the end.
    struct Order(Arc<std::sync::Mutex<(String, Vec<Split>)>>);
    impl Output for Order {
        fn name(&self) -> &'static str {
            "the order"
        }
        fn event(&mut self, event: &RunEvent<'_>) -> Flow {
            let mut seen = self.0.lock().unwrap();
            let c = match event {
                RunEvent::Notice(crate::metrics::Notice::Changed(s)) => {
                    seen.1.push(s.clone());
                    'c'
                }
                RunEvent::Interval(_) => 'i',
                RunEvent::End(_) => 'E',
                RunEvent::Notice(_) | RunEvent::Window(_) => '?',
            };
            seen.0.push(c);
            Flow::More
        }
    }
    let seen = Arc::new(std::sync::Mutex::new((String::new(), Vec::new())));
    r.outputs = vec![Box::new(Order(Arc::clone(&seen)))];
    let task = tokio::spawn(r.run(rx));
    for i in 0..25u64 {
        tx.send(Sample::at(i * 100_000, 1000)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(tx);
    let recorded = task.await.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.0, "ciiE");
    assert_eq!(seen.1, vec![split.clone()]);
    assert_eq!(recorded.changes, vec![split.clone()]);
    let rows: Vec<String> = recorded
        .segments
        .iter()
        .map(|s| s.label.to_string())
        .collect();
    assert_eq!(rows, ["g@100/s", "g@200/s"]);
}
