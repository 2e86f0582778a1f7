//! The live view, every `--interval`: per group, operations per second, p50 and p99 of the
//! interval (from the same interval histograms as `latency.hlog`), errors, running users, and
//! progress: operations done of the planned loops, or time of the planned duration, with an
//! estimate of the time left. On a terminal, one updating line per group (indicatif); in a pipe
//! or a CI log, plain lines on stderr.

use std::io::Write;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::metrics::{GroupMetrics, IntervalSink};
use crate::plan::{RunPlan, StopAt};

/// What a group has to do.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// Operations in all (loops x threads).
    Operations(u64),
    Time(Duration),
}

struct Group {
    name: String,
    /// Its stage, when the profile names stages.
    stage: String,
    threads: u32,
    work: Work,
    /// Operations completed so far (the warm-up's too).
    done: u64,
    /// When the group was first seen running, from the run's start.
    started: Option<Duration>,
    bar: Option<ProgressBar>,
}

pub struct Live {
    groups: Vec<Group>,
    /// On a terminal: the bars; None writes plain lines.
    bars: Option<MultiProgress>,
}

/// Thousandths of progress, the bars' length.
const BAR: u64 = 1000;

impl Live {
    /// `bars`: stderr is a terminal, and these draw on it (lines update in place); None writes
    /// plain lines.
    pub fn new(plan: &RunPlan, bars: Option<MultiProgress>) -> Self {
        let stage_of = |index: usize| {
            plan.stages
                .iter()
                .find(|s| s.groups.iter().any(|g| g.index == index))
                .map_or(String::new(), |s| s.name.clone())
        };
        Live {
            groups: plan
                .groups()
                .map(|g| Group {
                    name: g.name.clone(),
                    stage: stage_of(g.index),
                    threads: g.threads,
                    work: match g.stop {
                        StopAt::Loops(l) => {
                            Work::Operations(l.saturating_mul(u64::from(g.threads)))
                        }
                        StopAt::Duration(d) => Work::Time(d),
                    },
                    done: 0,
                    started: None,
                    bar: None,
                })
                .collect(),
            bars,
        }
    }

    /// The bars of a terminal's stderr, when it is one.
    pub fn terminal_bars() -> Option<MultiProgress> {
        use std::io::IsTerminal;
        std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
    }
}

/// Progress of a group at `elapsed` since the run's start: the fraction done and its words.
fn progress(work: Work, done: u64, running_for: Duration) -> (f64, String) {
    let fraction = match work {
        Work::Operations(total) if total > 0 => done as f64 / total as f64,
        Work::Operations(_) => 1.0,
        Work::Time(d) => running_for.as_secs_f64() / d.as_secs_f64().max(1e-9),
    }
    .clamp(0.0, 1.0);
    let left = if fraction > 0.0 {
        let secs = running_for.as_secs_f64() * (1.0 - fraction) / fraction;
        format!(
            ", about {} left",
            humantime::format_duration(Duration::from_secs(secs.round() as u64))
        )
    } else {
        String::new()
    };
    let what = match work {
        Work::Operations(total) => format!("{done}/{total} ops"),
        Work::Time(d) => format!(
            "{}/{}",
            humantime::format_duration(Duration::from_secs(
                running_for.as_secs_f64().round() as u64
            )),
            humantime::format_duration(d)
        ),
    };
    (
        fraction,
        format!("{what} ({:.0} %){left}", fraction * 100.0),
    )
}

impl IntervalSink for Live {
    fn interval(
        &mut self,
        elapsed: Duration,
        period: Duration,
        window: &[GroupMetrics],
        active: &[u32],
    ) {
        let mut err = std::io::stderr().lock();
        for (i, w) in window.iter().enumerate() {
            let g = &mut self.groups[i];
            let active = active.get(i).copied().unwrap_or(0);
            g.done += w.samples;
            if w.samples == 0 && active == 0 {
                if let Some(bar) = g.bar.take() {
                    bar.finish();
                }
                continue;
            }
            let started = *g.started.get_or_insert(elapsed.saturating_sub(period));
            let r = w.row(&g.name);
            let head = format!("[{:>7.1}s] {:<14}", elapsed.as_secs_f64(), g.name);
            let stats = format!(
                "{:>9.1} ops/s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {:>5}  threads {}/{}",
                w.samples as f64 / period.as_secs_f64(),
                r.median_ms,
                r.p99_ms,
                w.errors,
                active,
                g.threads
            );
            let (fraction, words) = progress(g.work, g.done, elapsed.saturating_sub(started));
            let words = if g.stage.is_empty() {
                words
            } else {
                format!("stage {}: {words}", g.stage)
            };
            match &self.bars {
                Some(bars) => {
                    let bar = g.bar.get_or_insert_with(|| {
                        let bar = bars.add(ProgressBar::new(BAR));
                        // One line per group whatever the terminal's width: the progress first,
                        // the interval's numbers cut at the right edge (a wrapped line would be
                        // left behind on every redraw).
                        bar.set_style(
                            ProgressStyle::with_template("{prefix} [{bar:20}] {wide_msg}")
                                .expect("a static template"),
                        );
                        bar
                    });
                    bar.set_position((fraction * BAR as f64) as u64);
                    bar.set_prefix(head);
                    bar.set_message(format!("{words}  {stats}"));
                }
                None => {
                    let _ = writeln!(err, "{head} {stats}  {words}");
                }
            }
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        for g in &mut self.groups {
            if let Some(bar) = g.bar.take() {
                bar.finish();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_operations_or_time_and_estimates_what_is_left() {
        let (f, words) = progress(Work::Operations(20_000), 5_000, Duration::from_secs(10));
        assert_eq!(f, 0.25);
        assert_eq!(words, "5000/20000 ops (25 %), about 30s left");
        let (f, words) = progress(
            Work::Time(Duration::from_secs(60)),
            0,
            Duration::from_secs(15),
        );
        assert_eq!(f, 0.25);
        assert_eq!(words, "15s/1m (25 %), about 45s left");
        let (_, words) = progress(Work::Operations(10), 0, Duration::ZERO);
        assert_eq!(
            words, "0/10 ops (0 %)",
            "no estimate before anything is done"
        );
    }
}
