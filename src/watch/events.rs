//! The page's events, made on the recorder's task once per interval (`View`), and the changes
//! asked for, made at an interval's end (`Control`).

use std::sync::Arc;

use super::frames::{
    ActivityNow, ChangeFrame, FaultFrame, GroupFrame, IntervalFrame, PageEvent, RowTotals,
    SeriesNow, SpectrumFrame, StageFrame, StateFrame, ThresholdNow, WarningNow,
};
use super::{lock, Page};
use crate::executor::steer::Now;
use crate::metrics::timing::quantile_ms;
use crate::metrics::{GroupMetrics, IntervalBatch, Label, Segment, Split};
use crate::plan::{RunPlan, StopAt};
use crate::summary::{Change, Failure};
use crate::vocab::label::{At, AtValue, GroupRow};
pub(super) use crate::vocab::Setting;

/// A group of the run as the page and a change see it.
pub(super) struct GroupNow {
    pub(crate) index: usize,
    pub(crate) name: String,
    pub(crate) open_loop: bool,
    pub(crate) stage: String,
    /// A rate step of the profile (`insert@500/s`): its rate is the profile's.
    pub(crate) step: bool,
    pub(crate) threads: u32,
    pub(crate) rate: Option<f64>,
    /// It runs for a time (not a number of loops).
    pub(crate) timed: bool,
    /// A mix's or steps' kinds: their series beside the group's.
    pub(crate) kinds: Vec<String>,
}

impl GroupNow {
    /// As report.html's `groups`: the group, then each of its kinds (`kind_of` the group),
    /// with what may be set of the group.
    pub(super) fn frames(&self) -> Vec<GroupFrame> {
        let tag = |label: Label| crate::metrics::interval::Tag::latency(label).to_string();
        let setting = (!self.step).then_some(self.setting());
        std::iter::once(GroupFrame {
            tag: tag(Label::group(&self.name)),
            name: self.name.clone(),
            open_loop: self.open_loop,
            stage: self.stage.clone(),
            kind_of: None,
            setting: setting.map(Setting::word),
            value: Some(self.rate.unwrap_or(f64::from(self.threads))),
        })
        .chain(self.kinds.iter().map(|k| {
            let label = Label::kind(&self.name, k.as_str());
            GroupFrame {
                tag: tag(label.clone()),
                name: label.to_string(),
                open_loop: self.open_loop,
                stage: self.stage.clone(),
                kind_of: Some(self.name.clone()),
                setting: None,
                value: None,
            }
        }))
        .collect()
    }

    fn setting(&self) -> Setting {
        if self.open_loop {
            Setting::Rate
        } else {
            Setting::Users
        }
    }
}

pub(super) fn groups(plan: &RunPlan) -> Vec<GroupNow> {
    plan.stages
        .iter()
        .flat_map(|stage| {
            stage.groups.iter().map(|g| GroupNow {
                index: g.index,
                name: g.name.clone(),
                open_loop: g.rate.is_some(),
                stage: stage.name.clone(),
                step: g.step_of.is_some(),
                threads: g.threads,
                rate: g.rate,
                timed: g.stop.counted().is_none(),
                kinds: if g.mix.is_empty() && !matches!(g.op, crate::workload::OpSpec::Steps(_)) {
                    Vec::new()
                } else {
                    g.kinds().iter().map(ToString::to_string).collect()
                },
            })
        })
        .collect()
}

/// A change asked for, waiting for the end of the interval.
pub(super) struct Pending {
    group: usize,
    name: String,
    setting: Setting,
    to: f64,
    who: String,
}

/// What a request asked to change, read from its body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Ask {
    pub(crate) setting: Setting,
    pub(crate) to: f64,
}

/// A refused change: the HTTP status and the reason.
pub(super) type Refused = (u16, String);

impl Page {
    /// A change asked for by `who`: checked against the run now, and made at the next
    /// interval's end. The reply's status and words on success: 202 for a change to come, 200
    /// for a change asked before in this interval and taken back (the value asked is the one
    /// the group runs at).
    pub(super) fn ask(&self, name: &str, ask: Ask, who: String) -> Result<(u16, String), Refused> {
        let mut st = lock(&self.inner.state);
        let Some(run) = &st.run else {
            return Err((
                409,
                "no run is going on now (setup, or between runs)".into(),
            ));
        };
        let (g, from) = steerable(run, name, &ask)?;
        let (index, setting) = (g.index, g.setting());
        let same = |a: f64, b: f64| Change::same_value(setting, a, b);
        // A change asked before in this interval, not made yet: this request supersedes it.
        let before = st
            .pending
            .iter()
            .position(|p| p.group == index)
            .map(|i| st.pending.remove(i));
        if same(from, ask.to) {
            let Some(before) = before else {
                return Err((
                    409,
                    format!(
                        "`{name}` runs at {} already: nothing to change",
                        Change::value_text(setting, from)
                    ),
                ));
            };
            let words = format!(
                "{name}: the change to {} asked before ({}) is taken back; it stays at {}",
                Change::value_text(setting, before.to),
                before.who,
                Change::value_text(setting, from)
            );
            errln!("live: {words} ({who})");
            return Ok((200, words));
        }
        if before.as_ref().is_some_and(|b| same(b.to, ask.to)) {
            st.pending.extend(before);
            return Err((
                409,
                format!(
                    "`{name}` goes to {} from the next interval already: nothing to change",
                    Change::value_text(setting, ask.to)
                ),
            ));
        }
        let mut words = format!(
            "{name}: {} -> {} from the next interval",
            Change::value_text(setting, from),
            Change::value_text(setting, ask.to)
        );
        if let Some(b) = &before {
            let instead = format!(
                " (instead of {}, asked before by {})",
                Change::value_text(setting, b.to),
                b.who
            );
            words.push_str(&instead);
            errln!(
                "live: {name}: the change to {} ({}) superseded by {} ({who})",
                Change::value_text(setting, b.to),
                b.who,
                Change::value_text(setting, ask.to)
            );
        }
        st.pending.push(Pending {
            group: index,
            name: name.to_string(),
            setting,
            to: ask.to,
            who,
        });
        Ok((202, words))
    }

    /// The changes asked for since the last interval, made now (`now_us`, the new interval's
    /// start): each becomes a row of its own; the recorder tells them to the outputs (this
    /// page's events and the console's lines among them) and to the summary.
    fn make_changes(&self, now_us: u64) -> Vec<Split> {
        let mut splits = Vec::new();
        let mut st = lock(&self.inner.state);
        let pending = std::mem::take(&mut st.pending);
        let Some(run) = &st.run else {
            return splits;
        };
        let at = tokio::time::Instant::now();
        let mut made = Vec::new();
        for p in pending {
            let Some(now) = run.steer.now(p.group) else {
                errln!(
                    "live: {} -> {} not made: `{}` ended before the interval did",
                    p.setting.word(),
                    Change::value_text(p.setting, p.to),
                    p.name
                );
                continue;
            };
            let from = match now {
                Now::Rate(r) => r,
                Now::Users(u) => f64::from(u),
            };
            // Checked when asked, and again here: a row is never split into two of one name.
            if Change::same_value(p.setting, from, p.to) {
                errln!(
                    "live: {} -> {} not made: `{}` runs at it already",
                    p.setting.word(),
                    Change::value_text(p.setting, p.to),
                    p.name
                );
                continue;
            }
            let done = match p.setting {
                Setting::Rate => run.steer.set_rate(p.group, p.to, at),
                // Checked against MAX_THREADS when asked: a whole number that fits.
                Setting::Users => run.steer.set_users(
                    p.group,
                    u32::try_from(crate::num::whole(p.to)).unwrap_or(u32::MAX),
                ),
            };
            if !done {
                continue;
            }
            let before = Label::at(&p.name, p.setting, from);
            let after = fresh_row(&p, &before, st.changes.iter().chain(&made));
            let split = Split {
                group: p.group,
                name: p.name,
                setting: p.setting,
                from,
                to: p.to,
                who: p.who,
                before,
                after,
                at_us: now_us,
            };
            made.push(Change::from(&split));
            splits.push(split);
        }
        st.changes.extend(made);
        splits
    }

    /// A change made (`Notice::Changed`), as the page's event (its time from `base_us`).
    fn changed(&self, split: &Split, base_us: u64) {
        self.publish(
            PageEvent::Change(&ChangeFrame {
                at: secs(split.at_us, base_us),
                group: split.name.clone(),
                setting: split.setting,
                from: split.from,
                to: split.to,
                who: split.who.clone(),
                row: split.after.clone(),
            })
            .frame(),
        );
    }
}

/// Seconds from the run's base (`base_us`) to `us`, as the page's times are.
pub(super) fn secs(us: u64, base_us: u64) -> f64 {
    crate::num::real(us.saturating_sub(base_us)) / 1e6
}

/// Makes the changes asked for at the end of each interval (`--live-control`).
pub struct Control(pub Page);

impl crate::metrics::Steering for Control {
    fn at_interval(&mut self, now_us: u64) -> Vec<Split> {
        self.0.make_changes(now_us)
    }
}

/// The page's view of the recorder: each closed interval, and the run's totals, as events.
pub struct View {
    page: Page,
    plan: Arc<RunPlan>,
    base_us: u64,
    /// Each stage's planned length (all its groups timed), in order.
    planned: Vec<Option<f64>>,
}

impl View {
    pub fn new(page: &Page, plan: Arc<RunPlan>, base_us: u64) -> View {
        let planned = plan
            .stages
            .iter()
            .map(|s| {
                s.groups
                    .iter()
                    .map(|g| match g.stop {
                        StopAt::Duration(d) => Some((g.start_delay + d).as_secs_f64()),
                        StopAt::Loops(_) | StopAt::AtLeast(..) | StopAt::Background => None,
                    })
                    .try_fold(0.0f64, |a, d| d.map(|d| a.max(d)))
            })
            .collect();
        View {
            page: page.clone(),
            plan,
            base_us,
            planned,
        }
    }

    fn interval(&self, batch: &IntervalBatch) -> IntervalFrame {
        IntervalFrame {
            start: secs(batch.start_epoch_us, self.base_us),
            length: batch.duration.as_secs_f64(),
            series: batch
                .hists
                .iter()
                .map(|h| {
                    let ms = |q: f64| quantile_ms(&h.hist, q);
                    let now = SeriesNow {
                        count: h.hist.len(),
                        p50: ms(0.5),
                        p90: ms(0.9),
                        p99: ms(0.99),
                        max: ms(1.0),
                    };
                    (h.tag.to_string(), now)
                })
                .collect(),
            activity: batch
                .activity
                .iter()
                .map(|a| {
                    let now = ActivityNow {
                        users: a.users,
                        errors: a.errors,
                    };
                    (a.tag.to_string(), now)
                })
                .collect(),
        }
    }

    fn state(&self, now_us: u64, totals: &[GroupMetrics], segments: &[Segment]) -> StateFrame {
        let plan = &*self.plan;
        let (rows, _) = crate::summary::rows(plan, totals, segments);
        let mut tsv = Vec::new();
        // Into a Vec: cannot fail.
        let _ = crate::report::tsv::render_rows(&rows, &mut tsv);
        let elapsed = secs(now_us, self.base_us);
        let (stages, faults) = {
            let st = lock(&self.page.inner.state);
            (st.stages.clone(), st.faults.clone())
        };
        let current = stages.iter().rposition(|s| s.end.is_none());
        let time_left = current.and_then(|i| {
            let s = &stages[i];
            let here = self.planned.get(i).copied().flatten()? - (elapsed - s.began);
            self.planned
                .iter()
                .skip(i + 1)
                .try_fold(here.max(0.0), |a, p| p.map(|p| a + p))
        });
        let warnings = plan
            .groups()
            .flat_map(|g| Failure::of(&g.name, &totals[g.index]))
            .map(|f| WarningNow {
                code: "failures",
                message: format!(
                    "{} x ({:.1} % of its operations) {}, the first: {}",
                    f.count, f.share_pct, f.class, f.message
                ),
                label: f.label,
            })
            .collect();
        let thresholds = crate::summary::judge::run_thresholds(plan, totals, None, false)
            .into_iter()
            .map(|t| ThresholdNow {
                threshold: t.threshold,
                value: t.value,
                unit: t.unit,
                verdict: if t.pass { "pass" } else { "FAIL" },
            })
            .collect();
        let spectrum = plan
            .groups()
            .filter(|g| totals[g.index].samples > 0)
            .map(|g| {
                let (x, y) = crate::metrics::group::spectrum(&totals[g.index].latency.hist);
                SpectrumFrame {
                    run: 1,
                    label: g.name.clone(),
                    x,
                    y,
                }
            })
            .collect();
        StateFrame {
            elapsed,
            stage: current
                .map(|i| stages[i].name.clone())
                .filter(|n| !n.is_empty()),
            time_left,
            summary_tsv: String::from_utf8_lossy(&tsv).into_owned(),
            totals: rows
                .iter()
                .map(|r| {
                    let now = RowTotals {
                        samples: r.samples,
                        errors: r.errors,
                    };
                    (r.label.to_string(), now)
                })
                .collect(),
            warnings,
            thresholds,
            stages: stages
                .iter()
                .map(|s| StageFrame {
                    label: s.label.clone(),
                    began: s.began,
                    start: s.start,
                    end: s.end,
                })
                .collect(),
            faults: faults
                .into_iter()
                .map(|(label, from, to)| FaultFrame { label, from, to })
                .collect(),
            spectrum,
        }
    }
}

impl crate::metrics::Output for View {
    fn name(&self) -> &'static str {
        "the live page"
    }

    /// Each closed interval, the last too, and the run's totals then; the stages and the
    /// faults as they begin and end.
    fn event(&mut self, event: &crate::metrics::RunEvent<'_>) -> crate::metrics::Flow {
        use crate::metrics::{Notice, RunEvent};
        match event {
            RunEvent::Notice(Notice::StageBegan {
                label,
                name,
                began_us,
                start_us,
                ..
            }) => {
                self.page
                    .stage_began((label.to_string(), name.clone()), *began_us, *start_us);
            }
            RunEvent::Notice(Notice::StageEnded { end_us }) => self.page.stage_ended(*end_us),
            RunEvent::Notice(Notice::FaultBegan { fault, began_us }) => {
                self.page.fault_began(fault, *began_us);
            }
            RunEvent::Notice(Notice::FaultEnded { end_us, .. }) => self.page.fault_ended(*end_us),
            RunEvent::Notice(Notice::Changed(split)) => self.page.changed(split, self.base_us),
            _ => {}
        }
        if let RunEvent::Interval(closed) | RunEvent::End(closed) = event {
            let batch = &**closed.batch;
            let now_us =
                batch.start_epoch_us + u64::try_from(batch.duration.as_micros()).unwrap_or(0);
            if !batch.is_empty() {
                let interval = self.interval(batch);
                self.page.publish(PageEvent::Interval(&interval).frame());
            }
            let state = self.state(now_us, closed.totals, closed.segments);
            let frame = PageEvent::State(&state).frame();
            lock(&self.page.inner.state).totals = Some(state.totals);
            self.page.publish(frame);
        }
        crate::metrics::Flow::More
    }
}

/// The row of `p`'s new value: named for it, and a value the group ran at before gets a row of
/// its own too (`insert@200/s #2`), apart from every row the group had (`before`, each
/// change's, and what came before each).
fn fresh_row<'c>(
    p: &Pending,
    before: &Label,
    changes: impl Iterator<Item = &'c Change> + Clone,
) -> Label {
    let value = AtValue::of(p.setting, p.to);
    let row = |nth| {
        Label::Group(GroupRow {
            name: p.name.clone(),
            at: Some(At { value, nth }),
        })
    };
    let taken = |l: &Label| {
        *l == *before
            || changes.clone().any(|c: &Change| {
                c.row == *l || (c.group == p.name && Label::at(&c.group, p.setting, c.from) == *l)
            })
    };
    let mut nth = 1;
    while taken(&row(nth)) {
        nth += 1;
    }
    row(nth)
}

/// The group `name` of `run` that `ask` may change now, and the value it runs at; refused
/// when the run is a series' step, the group is not the run's, is a rate step, runs by the
/// other setting, runs loops per user, or is not running now.
fn steerable<'r>(
    run: &'r super::RunNow,
    name: &str,
    ask: &Ask,
) -> Result<(&'r GroupNow, f64), Refused> {
    if !run.steerable {
        return Err((
            409,
            "the steps of a series (sweep, capacity) cannot be changed: each step's load is the series'".into(),
        ));
    }
    let Some(g) = run.groups.iter().find(|g| g.name == name) else {
        let names: Vec<&str> = run.groups.iter().map(|g| g.name.as_str()).collect();
        return Err((
            404,
            format!(
                "no group `{name}` in this run; its groups: {}",
                names.join(", ")
            ),
        ));
    };
    if g.step {
        return Err((
            409,
            format!("`{name}` is a rate step of the profile: its rate is the profile's"),
        ));
    }
    if g.setting() != ask.setting {
        return Err((
            400,
            match g.setting() {
                Setting::Rate => format!(
                    "`{name}` runs in open loop, at a rate: send {{\"rate\": R}} (operations per second), not users"
                ),
                Setting::Users => format!(
                    "`{name}` runs in closed loop, with users: send {{\"users\": N}}, not a rate (a closed-loop group has none)"
                ),
            },
        ));
    }
    if let Some(why) = (ask.setting == Setting::Users)
        .then(|| {
            run.steer
                .refuse_users(crate::num::whole(ask.to).try_into().unwrap_or(u32::MAX))
        })
        .flatten()
    {
        return Err((409, why));
    }
    if g.setting() == Setting::Users && !g.timed {
        return Err((
            409,
            format!("`{name}` runs a number of loops per user: its work is loops x users, which a change of users would change; give it a duration to steer it"),
        ));
    }
    let Some(now) = run.steer.now(g.index) else {
        return Err((
            409,
            format!("`{name}` is not running now (its stage has not begun, or it ended)"),
        ));
    };
    let from = match now {
        Now::Rate(r) => r,
        Now::Users(u) => f64::from(u),
    };
    Ok((g, from))
}
