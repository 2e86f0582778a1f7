//! The live view, every `--interval`: per group, operations per second, p50 and p99 of the
//! interval (from the same interval histograms as `latency.hlog`), errors, running users, and
//! progress: operations done of the planned loops, or time of the planned duration, with an
//! estimate of the time left. On a terminal, one updating line per group (indicatif), no wider
//! than the terminal: what does not fit is left out, the least telling first; in a pipe or a CI
//! log, plain lines on stderr, whole.

use std::io::Write;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::metrics::{Flow, Notice, Output, RunEvent};
use crate::plan::{RunPlan, StopAt};
use crate::summary::Change;

/// What a group has to do.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// Operations in all (loops x threads).
    Operations(u64),
    Time(Duration),
    /// At least this long (and at least its loops): it may go on past it.
    AtLeast(Duration),
    /// No end of its own: a background group (until its stage's other groups end) or a watch
    /// group's listeners (until the writers end, then the drain).
    Until(&'static str),
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

pub(crate) struct Live {
    groups: Vec<Group>,
    /// On a terminal: the bars; None writes plain lines.
    bars: Option<MultiProgress>,
    /// A line every this many intervals; None: quiet (`--quiet`), only what a person must
    /// hear at once (a change made, a warning) is said.
    every: Option<u32>,
}

impl Live {
    /// `bars`: stderr is a terminal, and these draw on it (lines update in place); None writes
    /// plain lines. A line per group every `every` intervals (None: quiet).
    pub(crate) fn new(plan: &RunPlan, bars: Option<MultiProgress>, every: Option<u32>) -> Self {
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
                        _ if g.watch.is_some() => {
                            Work::Until("listening until the writers end, then the drain")
                        }
                        StopAt::Loops(l) => {
                            Work::Operations(l.saturating_mul(u64::from(g.threads)))
                        }
                        StopAt::Duration(d) => Work::Time(d),
                        StopAt::AtLeast(_, d) => Work::AtLeast(d),
                        StopAt::Background => {
                            Work::Until("in the background, until the stage's other groups end")
                        }
                    },
                    done: 0,
                    started: None,
                    bar: None,
                })
                .collect(),
            bars,
            every,
        }
    }

    /// The bars of a terminal's stderr, when it is one.
    pub(crate) fn terminal_bars() -> Option<MultiProgress> {
        use std::io::IsTerminal;
        std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
    }
}

/// How far a group is.
#[derive(Debug, Clone, PartialEq)]
struct Progress {
    /// From 0 to 1.
    fraction: f64,
    /// `5000/20000 ops` or `15s/1m`.
    done: String,
    /// `about 30s left`, once something is done.
    left: Option<String>,
    /// No end of its own (`Work::Until`): no share done to say.
    open_ended: bool,
}

impl Progress {
    /// As a plain line says it: `5000/20000 ops (25 %), about 30s left`.
    fn words(&self) -> String {
        if self.open_ended {
            return self.done.clone();
        }
        format!(
            "{} ({:.0} %){}",
            self.done,
            self.fraction * 100.0,
            self.left
                .as_deref()
                .map_or(String::new(), |l| format!(", {l}"))
        )
    }
}

/// Progress of a group running for `running_for`: the fraction done and its words.
fn progress(work: Work, done: u64, running_for: Duration) -> Progress {
    let secs = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs()));
    if let Work::Until(what) = work {
        return Progress {
            fraction: 0.0,
            done: format!("{} {what}", secs(running_for)),
            left: None,
            open_ended: true,
        };
    }
    // Past its time: what it waits for is its operations in flight.
    if let Work::Time(d) = work {
        if running_for > d + Duration::from_secs(1) {
            return Progress {
                fraction: 1.0,
                done: format!("{}/{}", secs(running_for), humantime::format_duration(d)),
                left: Some(
                    "past its end: waiting for the operations in flight (at most --op-timeout)"
                        .into(),
                ),
                open_ended: false,
            };
        }
    }
    let fraction = match work {
        Work::Operations(total) if total > 0 => crate::num::real(done) / crate::num::real(total),
        Work::Operations(_) | Work::Until(_) => 1.0,
        Work::Time(d) | Work::AtLeast(d) => running_for.as_secs_f64() / d.as_secs_f64().max(1e-9),
    }
    .clamp(0.0, 1.0);
    let left = (fraction > 0.0).then(|| {
        let secs = running_for.as_secs_f64() * (1.0 - fraction) / fraction;
        format!(
            "about {} left",
            humantime::format_duration(Duration::from_secs(crate::num::whole(secs)))
        )
    });
    let done = match work {
        Work::Operations(total) => format!("{done}/{total} ops"),
        Work::Time(d) | Work::AtLeast(d) => format!(
            "{}/{}",
            humantime::format_duration(Duration::from_secs(crate::num::whole(
                running_for.as_secs_f64()
            ))),
            humantime::format_duration(d)
        ),
        Work::Until(what) => what.to_string(),
    };
    Progress {
        fraction,
        done,
        left,
        open_ended: false,
    }
}

/// How long the drawn bar is, between its brackets.
const BAR_CELLS: usize = 20;

/// A terminal's line: `pieces` (what each says, and how much it tells: the higher, the longer
/// it stays) in their order, two spaces apart, those that fit within `width` taken from the
/// most telling down (a smaller, less telling one may still fit where a larger did not), then
/// cut at `width` if even the most telling is wider.
fn fit(pieces: &[(u8, String)], width: Option<usize>) -> String {
    let Some(width) = width else {
        return join(pieces.iter().map(|(_, p)| p.as_str()));
    };
    let mut by_telling: Vec<usize> = (0..pieces.len()).collect();
    by_telling.sort_by_key(|i| std::cmp::Reverse(pieces[*i].0));
    let mut taken = vec![false; pieces.len()];
    let mut used = 0;
    for i in by_telling {
        if pieces[i].1.is_empty() {
            continue;
        }
        let first = !taken.contains(&true);
        let len = pieces[i].1.chars().count() + if first { 0 } else { 2 };
        // The most telling piece is always there, cut if it must be.
        if first || used + len <= width {
            taken[i] = true;
            used += len;
        }
    }
    let line = join(
        pieces
            .iter()
            .zip(&taken)
            .filter(|(_, t)| **t)
            .map(|((_, p), _)| p.as_str()),
    );
    line.chars()
        .take(width)
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// The pieces two spaces apart (a padded one keeps its padding, so that groups' lines align).
fn join<'a>(pieces: impl Iterator<Item = &'a str>) -> String {
    pieces
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("  ")
        .trim_end()
        .to_string()
}

fn bar(fraction: f64) -> String {
    let filled = usize::try_from(crate::num::whole(
        fraction.clamp(0.0, 1.0) * crate::num::real_len(BAR_CELLS),
    ))
    .unwrap_or(BAR_CELLS)
    .min(BAR_CELLS);
    format!(
        "[{}{}]",
        "\u{2588}".repeat(filled),
        "\u{2591}".repeat(BAR_CELLS - filled)
    )
}

impl Output for Live {
    fn name(&self) -> &'static str {
        "the live report"
    }

    fn window_every(&self) -> Option<u32> {
        self.every
    }

    /// A line per group that ran in the window, or has users; a group that has ended its bar.
    /// A line of its own for a named stage's beginning, a fault's beginning and end, each
    /// change made to a group (`--live-control`), each change of the deployment and each
    /// warning; when quiet, only the changes made and the warnings.
    fn event(&mut self, event: &RunEvent<'_>) -> Flow {
        let quiet = self.every.is_none();
        match event {
            RunEvent::Notice(Notice::Warning(w)) => self.line(format!("warning: {w}")),
            RunEvent::Notice(Notice::Changed(c)) => self.line(format!(
                "live: {} {} -> {} ({})",
                c.name,
                Change::value_text(c.setting, c.from),
                Change::value_text(c.setting, c.to),
                c.who
            )),
            RunEvent::Window(w) => self.window(w.elapsed, w.period, w.metrics, w.active),
            _ if quiet => {}
            RunEvent::Notice(Notice::StageBegan { name, groups, .. }) if !name.is_empty() => {
                let groups: Vec<String> = groups.iter().map(|(g, n)| format!("{g} x{n}")).collect();
                self.line(format!("stage {name}: {}", groups.join(", ")));
            }
            RunEvent::Notice(Notice::Member { detail, .. }) => {
                self.line(format!("members: {detail}"));
            }
            RunEvent::Notice(Notice::FaultBegan { fault, .. }) => {
                self.line(format!("fault {fault}: begun"));
            }
            RunEvent::Notice(Notice::FaultEnded {
                fault,
                detail,
                error,
                ..
            }) => {
                let said = [Some(detail.as_str()), error.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
                self.line(format!("fault {fault}: over ({said})"));
            }
            _ => {}
        }
        Flow::More
    }
}

impl Live {
    /// A line of its own between the groups' (above the bars on a terminal).
    fn line(&self, line: String) {
        match &self.bars {
            Some(b) => {
                let _ = b.println(line);
            }
            None => errln!("{line}"),
        }
    }

    fn window(
        &mut self,
        elapsed: Duration,
        period: Duration,
        window: &[crate::metrics::GroupMetrics],
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
            let r = w.row(g.name.as_str());
            let cells = Cells {
                elapsed: format!("[{:>7.1}s]", elapsed.as_secs_f64()),
                name: format!("{:<14}", g.name),
                rate: format!(
                    "{:>9.1} ops/s",
                    crate::num::real(w.samples) / period.as_secs_f64()
                ),
                p50: format!("p50 {:>8.2} ms", r.median_ms),
                p99: format!("p99 {:>8.2} ms", r.p99_ms),
                errors: format!("errors {:>5}", w.errors),
                // A group given more users while it runs (--live-control) has that many now.
                threads: format!("threads {active}/{}", g.threads.max(active)),
            };
            let p = progress(g.work, g.done, elapsed.saturating_sub(started));
            match &self.bars {
                Some(bars) => {
                    let line = g.bar.get_or_insert_with(|| {
                        let line = bars.add(ProgressBar::no_length());
                        // The line is fitted here; indicatif only cuts it if the terminal is
                        // narrower than COLUMNS said (a wrapped line would be left behind on
                        // every redraw).
                        line.set_style(
                            ProgressStyle::with_template("{wide_msg}").expect("a static template"),
                        );
                        line
                    });
                    let width = super::layout::console_width(&std::io::stderr(), false);
                    line.set_message(fit(&cells.pieces(&p, &g.stage), width));
                }
                None => {
                    let _ = writeln!(err, "{}", cells.plain(&p, &g.stage));
                }
            }
        }
    }
}

/// One group's interval, as text (numbers padded, so that the groups' lines align).
struct Cells {
    elapsed: String,
    name: String,
    rate: String,
    p50: String,
    p99: String,
    errors: String,
    threads: String,
}

impl Cells {
    /// A plain line: everything, the progress in words last.
    fn plain(&self, p: &Progress, stage: &str) -> String {
        let words = if stage.is_empty() {
            p.words()
        } else {
            format!("stage {stage}: {}", p.words())
        };
        format!(
            "{} {} {}  {}  {}  {}  {}  {words}",
            self.elapsed, self.name, self.rate, self.p50, self.p99, self.errors, self.threads
        )
    }

    /// A terminal line's pieces in their order, each with how much it tells (`fit` keeps the
    /// most telling): the group, its rate, p99 and errors longest; the stage first to go.
    fn pieces(&self, p: &Progress, stage: &str) -> Vec<(u8, String)> {
        vec![
            (4, self.elapsed.clone()),
            (10, self.name.clone()),
            (3, bar(p.fraction)),
            (8, format!("{:>3.0} %", p.fraction * 100.0)),
            (10, self.rate.clone()),
            (6, self.p50.clone()),
            (9, self.p99.clone()),
            (9, self.errors.clone()),
            (5, self.threads.clone()),
            (2, p.done.clone()),
            (7, p.left.clone().unwrap_or_default()),
            (
                1,
                if stage.is_empty() {
                    String::new()
                } else {
                    format!("stage {stage}")
                },
            ),
        ]
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
        let p = progress(Work::Operations(20_000), 5_000, Duration::from_secs(10));
        assert_eq!(p.fraction, 0.25);
        assert_eq!(p.words(), "5000/20000 ops (25 %), about 30s left");
        let p = progress(
            Work::Time(Duration::from_secs(60)),
            0,
            Duration::from_secs(15),
        );
        assert_eq!(p.fraction, 0.25);
        assert_eq!(p.words(), "15s/1m (25 %), about 45s left");
        let p = progress(Work::Operations(10), 0, Duration::ZERO);
        assert_eq!(
            p.words(),
            "0/10 ops (0 %)",
            "no estimate before anything is done"
        );
        // Past its time, and with no end of its own: what it waits for, not "0s left".
        let p = progress(
            Work::Time(Duration::from_secs(6)),
            0,
            Duration::from_secs(9),
        );
        assert_eq!(
            p.words(),
            "9s/6s (100 %), past its end: waiting for the operations in flight (at most --op-timeout)"
        );
        let p = progress(
            Work::Until("listening until the writers end, then the drain"),
            0,
            Duration::from_secs(5),
        );
        assert_eq!(
            p.words(),
            "5s listening until the writers end, then the drain"
        );
    }

    /// A busy group's interval, as `interval` writes its cells.
    fn busy() -> (Cells, Progress) {
        let cells = Cells {
            elapsed: format!("[{:>7.1}s]", 100.0),
            name: format!("{:<14}", "insert-heavy"),
            rate: format!("{:>9.1} ops/s", 123_456.7),
            p50: format!("p50 {:>8.2} ms", 1.25),
            p99: format!("p99 {:>8.2} ms", 1234.5),
            errors: format!("errors {:>5}", 12),
            threads: "threads 1000/1000".to_string(),
        };
        let p = progress(
            Work::Operations(2_000_000),
            500_000,
            Duration::from_secs(100),
        );
        (cells, p)
    }

    fn pieces() -> Vec<(u8, String)> {
        let (cells, p) = busy();
        cells.pieces(&p, "load")
    }

    #[test]
    fn a_plain_line_has_everything_as_before() {
        let (cells, p) = busy();
        assert_eq!(
            cells.plain(&p, "load"),
            "[  100.0s] insert-heavy    123456.7 ops/s  p50     1.25 ms  p99  1234.50 ms  errors    12  threads 1000/1000  stage load: 500000/2000000 ops (25 %), about 5m left"
        );
        assert_eq!(
            cells.plain(&p, ""),
            "[  100.0s] insert-heavy    123456.7 ops/s  p50     1.25 ms  p99  1234.50 ms  errors    12  threads 1000/1000  500000/2000000 ops (25 %), about 5m left"
        );
    }

    #[test]
    fn a_terminal_line_fits_80_and_120_columns_keeping_rate_p99_and_errors() {
        let full = fit(&pieces(), None);
        assert!(full.chars().count() > 120, "{full}");
        for width in [80, 120] {
            let line = fit(&pieces(), Some(width));
            assert!(line.chars().count() <= width, "{width}: {line}");
            for must in ["insert-heavy", "ops/s", "p99", "errors", "25 %"] {
                assert!(line.contains(must), "{width}: {must} missing in {line}");
            }
        }
        let narrow = fit(&pieces(), Some(80));
        assert!(
            !narrow.contains("stage load") && !narrow.contains('\u{2588}'),
            "the stage and the bar go first: {narrow}"
        );
        let wider = fit(&pieces(), Some(120));
        assert!(wider.contains("p50"), "{wider}");
        assert!(
            fit(&pieces(), Some(200)).contains("stage load"),
            "everything when it fits"
        );
    }

    #[test]
    fn a_terminal_narrower_than_the_name_gets_the_name_cut() {
        let line = fit(&pieces(), Some(8));
        assert_eq!(line, "insert-h");
    }

    #[test]
    fn the_bar_is_twenty_cells_filled_by_the_fraction() {
        assert_eq!(bar(0.25).chars().count(), BAR_CELLS + 2);
        assert_eq!(bar(0.25).matches('\u{2588}').count(), 5);
        assert_eq!(bar(7.0).matches('\u{2591}').count(), 0);
    }
}
