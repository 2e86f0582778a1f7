//! What the live page (`--live`) costs per interval, in-process: the events of one interval
//! made from the recorder's own histograms and totals (4 groups, each interval 1,000 latencies a
//! group, the totals 100,000 each), on the recorder's thread's CPU clock, with no viewer and with
//! 5 viewers (`curl -N` processes reading /events, as a browser's EventSource does), and the whole
//! process's CPU over the same intervals (the viewers' threads writing the events out included).
//! Run by scripts/bench.sh (`page`); see docs/performance.md.

// Tests and examples compute with small known numbers (counts of a few thousand, seconds,
// percentages), where a cast loses nothing; and a test may be one long story, read top to bottom.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    reason = "small known numbers; a test reads as one story"
)]
// Tests and tools print as they like; the library's console is `outln!`/`errln!` (clippy.toml).
#![allow(clippy::disallowed_macros)]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mongo_stress::executor::steer::Steer;
use mongo_stress::metrics::interval::{Spares, Tag};
use mongo_stress::metrics::sample::GroupId;
use mongo_stress::metrics::{
    Activity, Clock, GroupMetrics, IntervalBatch, IntervalHist, Label, Output, RunEvent, Sample,
};
use mongo_stress::plan::{profile, RunPlan};
use mongo_stress::watch::{Options, Page, View};
use mongo_stress::workload::OpKind;

fn clock_ns(which: libc::clockid_t) -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe {
        libc::clock_gettime(which, &mut t);
    }
    t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128
}

/// A spread of latencies from 0.1 ms to about 100 ms.
fn latencies(n: u64, x: &mut u64) -> impl Iterator<Item = u64> + '_ {
    (0..n).map(move |_| {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        100 + *x % 100_000
    })
}

fn sample(group: usize, us: u64) -> Sample {
    Sample {
        group: GroupId::try_from(group).expect("a group"),
        op: OpKind::Insert.into(),
        mixed: false,
        thread: 1,
        start_us: 0,
        intended_us: 0,
        elapsed_us: us,
        late: false,
        warmup: false,
        sent: 0,
        received: 0,
        matched: true,
        modified: false,
        docs: Default::default(),
        extra: None,
        error: None,
    }
}

const ROUNDS: u32 = 200;

/// `ROUNDS` intervals shown to the view: the recorder thread's CPU per interval, and the
/// process's.
fn rounds(view: &mut View, plan: &RunPlan, totals: &[GroupMetrics], x: &mut u64) -> (f64, f64) {
    let (mut own, process0) = (0u128, clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID));
    for _ in 0..ROUNDS {
        let mut hists = Vec::new();
        let mut activity = Vec::new();
        let mut all = mongo_stress::metrics::new_histogram();
        for g in plan.groups() {
            let mut h = mongo_stress::metrics::new_histogram();
            for v in latencies(1000, x) {
                h.record(v).unwrap();
            }
            all.add(&h).unwrap();
            let tag = Tag::latency(Label::group(&g.name));
            activity.push(Activity {
                tag: tag.clone(),
                users: g.threads,
                errors: 0,
            });
            hists.push(IntervalHist { tag, hist: h });
        }
        hists.push(IntervalHist {
            tag: Tag::latency(Label::Total),
            hist: all,
        });
        let batch = IntervalBatch {
            start_epoch_us: Clock::new().now_us(),
            duration: Duration::from_secs(1),
            hists,
            activity,
            spares: Spares::default(),
        };
        let batch = Arc::new(batch);
        let interval = RunEvent::Interval(mongo_stress::metrics::Closed {
            batch: &batch,
            totals,
            segments: &[],
            elapsed: Duration::from_secs(1),
        });
        let t = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        view.event(&interval);
        own += clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - t;
        // The viewers' threads have their interval to write it out, as in a run.
        std::thread::sleep(Duration::from_millis(2));
    }
    let process = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID) - process0;
    let per = |ns: u128| ns as f64 / 1e6 / f64::from(ROUNDS);
    (per(own), per(process))
}

fn main() {
    let loaded = profile::load("crud-mixed").expect("the bundled profile");
    let plan = Arc::new(RunPlan::build(&loaded, &Default::default()).expect("a plan"));
    let groups = plan.groups().count();
    let mut x: u64 = 12345;
    let mut totals = vec![GroupMetrics::default(); groups];
    for (g, m) in totals.iter_mut().enumerate() {
        for v in latencies(100_000, &mut x) {
            m.record(&sample(g, v));
        }
    }
    let (page, endpoint) = Page::serve(
        Options {
            addr: "127.0.0.1:0".parse().unwrap(),
            control: false,
            token: None,
        },
        Default::default(),
    )
    .expect("the page's endpoint");
    let clock = Clock::new();
    let base = page.begin_run(&plan, None, (Arc::new(Steer::new(groups)), clock, true));
    let mut view = View::new(&page, Arc::clone(&plan), base);

    let (own0, process0) = rounds(&mut view, &plan, &totals, &mut x);
    let url = format!("http://{}/events", endpoint.addr);
    let mut viewers: Vec<_> = (0..5)
        .map(|_| {
            Command::new("curl")
                .args(["-sN", "-o", "/dev/null", &url])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("curl")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while page.viewers() < 5 {
        assert!(Instant::now() < deadline, "the viewers did not connect");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (own5, process5) = rounds(&mut view, &plan, &totals, &mut x);
    let watching = page.viewers();
    for v in &mut viewers {
        let _ = v.kill();
        let _ = v.wait();
    }
    endpoint.close();
    println!(
        "{groups} groups, {ROUNDS} intervals of 1,000 latencies a group; totals of 100,000 each"
    );
    println!(
        "events of one interval, on the recorder's thread: {own0:.3} ms with no viewer, {own5:.3} ms with 5 (ratio {:.2})",
        own5 / own0
    );
    println!(
        "the whole process per interval (the viewers' threads included): {process0:.3} ms with no viewer, {process5:.3} ms with 5 (ratio {:.2}); {watching} viewers still connected at the end",
        process5 / process0
    );
}
