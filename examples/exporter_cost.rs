//! What live metrics cost per second of a run, in-process: one update of the families from the
//! totals of 4 groups (each with 100,000 latencies recorded), one scrape's rendering in each
//! format, and one remote-write request encoded and compressed, each timed over many rounds on
//! this thread's CPU clock. Run by scripts/bench.sh (`live`); see docs/performance.md.

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

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use mongo_stress::exporter::{push, text, Exporter};
use mongo_stress::metrics::sample::GroupId;
use mongo_stress::metrics::{GroupMetrics, Sample};
use mongo_stress::plan::{profile, RunPlan};
use mongo_stress::workload::OpKind;

fn cpu_ns() -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t);
    }
    t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128
}

fn main() {
    // The bundled crud-mixed: four groups.
    let loaded = profile::load("crud-mixed").expect("the bundled profile");
    let plan = RunPlan::build(&loaded, &Default::default()).expect("a plan");
    let active = Arc::new((0..4).map(|_| AtomicU32::new(10)).collect::<Vec<_>>());
    let e = Exporter::new(&plan, "cost", active);
    let mut totals = vec![GroupMetrics::default(); 4];
    let mut x: u64 = 12345;
    for m in &mut totals {
        for i in 0..100_000u64 {
            // A spread of latencies from 0.1 ms to about 100 ms.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            m.record(&Sample {
                group: GroupId::try_from(0usize).expect("group 0"),
                op: OpKind::Insert.into(),
                mixed: false,
                thread: 1,
                start_us: i,
                intended_us: i,
                elapsed_us: 100 + x % 100_000,
                late: false,
                warmup: false,
                sent: 0,
                received: 0,
                matched: true,
                modified: false,
                docs: Default::default(),
                extra: None,
                error: None,
            });
        }
    }
    let rounds = 200u32;
    let time = |f: &mut dyn FnMut()| {
        let t = cpu_ns();
        for _ in 0..rounds {
            f();
        }
        (cpu_ns() - t) as f64 / f64::from(rounds) / 1e6
    };
    let update = time(&mut || e.update(&totals));
    let families = e.families();
    let samples: usize = families.iter().map(|f| f.samples.len()).sum();
    let prom = time(&mut || {
        std::hint::black_box(text::prometheus(&families));
    });
    let om = time(&mut || {
        std::hint::black_box(text::openmetrics(&families));
    });
    let encode = time(&mut || {
        let req = push::request(&families, 1, &[("job", "mongo-stress")]);
        let body = prost::Message::encode_to_vec(&req);
        std::hint::black_box(snap::raw::Encoder::new().compress_vec(&body).unwrap());
    });
    println!(
        "{samples} samples in {} families (4 groups)",
        families.len()
    );
    println!("update from the totals: {update:.3} ms per interval");
    println!("one scrape, Prometheus text: {prom:.3} ms; OpenMetrics: {om:.3} ms");
    println!("one remote-write request, encoded and compressed: {encode:.3} ms");
    println!(
        "per second at 1 s intervals: listen (update + one scrape) {:.2} ms of CPU, push (update + one push) {:.2} ms (the resource sampler's, to beat: 3.5 ms)",
        update + prom,
        update + encode
    );
}
