//! The coordinator served live (`--live`, `--live-control`, `--metrics-listen`,
//! `--metrics-push`): its page and Prometheus fed from the merged intervals as a run's own
//! recorder feeds them. Each merged interval is an `IntervalBatch` of the parts' histograms
//! added; the run's totals so far are the parts' tallies added, around the merged intervals'
//! histograms added up: the numbers `merge` makes of the parts' directories afterwards.
//!
//! A change asked on the page is made on the whole run (`Whole`) at a merged interval's end and
//! split over the parts as `--parts` splits the profile (`Shared`); each part makes its share at
//! its own next interval's end, its rows named as here.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use tokio_util::sync::CancellationToken;

use crate::cli::RunArgs;
use crate::coordinate::hub::MergedSeries;
use crate::coordinate::Shared;
use crate::error::Error;
use crate::executor::steer::{Now, Steers};
use crate::metrics::interval::{Spares, Tag};
use crate::metrics::tally::Tally;
use crate::metrics::{
    Activity, Closed, GroupMetrics, IntervalBatch, IntervalHist, Label, Notice, Output, RunEvent,
    Segment, Series, Split, Steering,
};
use crate::plan::part::Part;
use crate::plan::RunPlan;
use crate::vocab::Setting;

/// The whole run's groups as the page changes them: each group's value now, the parts' count.
pub(super) struct Whole {
    now: Mutex<Vec<Option<Now>>>,
    /// The run is stopping: no group may be changed any more.
    stopped: std::sync::atomic::AtomicBool,
    /// The profile's value of each group (a group not running yet starts at it).
    planned: Vec<Now>,
    parts: u32,
}

impl Whole {
    fn new(plan: &RunPlan, parts: u32) -> Whole {
        let n = plan.groups().count();
        let mut planned = vec![Now::Users(0); n];
        for g in plan.groups() {
            planned[g.index] = match g.rate {
                Some(r) => Now::Rate(r),
                None => Now::Users(g.threads),
            };
        }
        Whole {
            now: Mutex::new(vec![None; n]),
            stopped: std::sync::atomic::AtomicBool::new(false),
            planned,
            parts,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Now>>> {
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Group `g` runs (users in the merged interval) or not.
    fn running(&self, g: usize, running: bool) {
        let running = running && !self.stopped.load(Ordering::Acquire);
        let mut now = self.lock();
        if let Some(slot) = now.get_mut(g) {
            match (running, slot.is_some()) {
                (true, false) => *slot = self.planned.get(g).copied(),
                (false, true) => *slot = None,
                _ => {}
            }
        }
    }

    fn set(&self, g: usize, to: Now) -> bool {
        let mut now = self.lock();
        match now.get_mut(g) {
            Some(slot @ Some(_)) => {
                *slot = Some(to);
                true
            }
            _ => false,
        }
    }
}

impl Steers for Whole {
    fn now(&self, g: usize) -> Option<Now> {
        self.lock().get(g).copied().flatten()
    }

    fn set_rate(&self, g: usize, rate: f64, _at: tokio::time::Instant) -> bool {
        matches!(self.now(g), Some(Now::Rate(_))) && self.set(g, Now::Rate(rate))
    }

    fn set_users(&self, g: usize, users: u32) -> bool {
        matches!(self.now(g), Some(Now::Users(_))) && self.set(g, Now::Users(users))
    }

    fn refuse_users(&self, users: u32) -> Option<String> {
        (users < self.parts).then(|| {
            format!(
                "the run is in {} parts and each needs a user: ask for at least {} users",
                self.parts, self.parts
            )
        })
    }
}

/// The coordinator's page and metrics, while the run goes.
pub(super) struct Live {
    plan: Arc<RunPlan>,
    parts: u32,
    outputs: Vec<Box<dyn Output>>,
    control: Option<crate::watch::Control>,
    steer: Arc<Whole>,
    page: Option<crate::watch::Page>,
    /// The page's endpoint, when this run serves it (a series' step shows on its series').
    endpoint: Option<crate::watch::Endpoint>,
    /// The page's title of the run, and whether it may be changed.
    title: (Option<String>, bool),
    metrics: Option<crate::exporter::Live>,
    scrape: Option<crate::exporter::Endpoint>,
    /// Users running by `GroupPlan::index`, as the exporter reads them.
    active: Arc<Vec<AtomicU32>>,
    /// Each row's counted histograms so far, by tag (`insert`, `svc:insert`).
    whole: BTreeMap<String, Histogram<u64>>,
    /// The last totals and rows of changes (the end shows them again).
    last: (Vec<GroupMetrics>, Vec<Segment>),
    began: std::time::Instant,
}

impl Live {
    /// The page and the metrics `args` ask for, bound before any part joins; none asked: None.
    pub(super) fn start(
        args: &RunArgs,
        plan: &RunPlan,
        (stop, out): (&CancellationToken, &Path),
    ) -> Result<Option<Live>, Error> {
        let (metrics, scrape) = super::super::run::live_metrics(args, plan, out)?;
        let page = super::super::start::live_page(args, stop, "run")?;
        if metrics.is_none() && page.is_none() {
            return Ok(None);
        }
        let (page, endpoint) = page.unzip();
        let mut live = Live::new(plan, args.parts.unwrap_or(1), page, (None, true));
        live.endpoint = endpoint;
        live.metrics = metrics;
        live.scrape = scrape;
        Ok(Some(live))
    }

    /// A series' step across `parts`, shown on the series' page under `title` (never changed).
    pub(super) fn step(
        plan: &RunPlan,
        parts: u32,
        (page, title): (crate::watch::Page, String),
    ) -> Live {
        Live::new(plan, parts, Some(page), (Some(title), false))
    }

    fn new(
        plan: &RunPlan,
        parts: u32,
        page: Option<crate::watch::Page>,
        title: (Option<String>, bool),
    ) -> Live {
        let groups = plan.groups().count();
        Live {
            plan: Arc::new(plan.clone()),
            parts,
            outputs: Vec::new(),
            control: None,
            steer: Arc::new(Whole::new(plan, parts)),
            page,
            endpoint: None,
            title,
            metrics: None,
            scrape: None,
            active: Arc::new((0..groups).map(|_| AtomicU32::new(0)).collect()),
            whole: BTreeMap::new(),
            // A run that ends before its first merged interval shows empty groups.
            last: (vec![GroupMetrics::default(); groups], Vec::new()),
            began: std::time::Instant::now(),
        }
    }

    /// The run is stopping (an order to every part): nothing may be changed any more.
    pub(super) fn stopping(&self) {
        self.steer.stopped.store(true, Ordering::Release);
        self.steer.lock().iter_mut().for_each(|g| *g = None);
    }

    /// The stages began: the page's run and the metrics' feed from now.
    pub(super) fn begin(&mut self) {
        if let Some(page) = &self.page {
            let clock = crate::metrics::Clock::new();
            let (title, steerable) = self.title.clone();
            let base = page.begin_run(
                &self.plan,
                title,
                (Arc::clone(&self.steer) as Arc<dyn Steers>, clock, steerable),
            );
            self.outputs.push(Box::new(crate::watch::View::new(
                page,
                Arc::clone(&self.plan),
                base,
            )));
            if page.control() && steerable {
                self.control = Some(crate::watch::Control(page.clone()));
            }
        }
        if let Some(m) = &self.metrics {
            self.outputs.push(Box::new(crate::exporter::Feed::new(
                m,
                Arc::clone(&self.active),
            )));
        }
        self.began = std::time::Instant::now();
    }

    /// A merged interval from `start_us`, `length_us` long: shown, then the changes asked
    /// since the last one made, each split over the parts.
    pub(super) fn interval(
        &mut self,
        start_us: u64,
        length_us: u64,
        merged: &MergedSeries,
    ) -> Vec<Shared> {
        let mut activity = Vec::new();
        for g in self.plan.groups() {
            let tag = Tag::latency(Label::group(&g.name));
            let users = merged.users.get(&tag.to_string()).copied();
            if let Some(a) = self.active.get(g.index) {
                a.store(users.unwrap_or(0), Ordering::Relaxed);
            }
            self.steer.running(g.index, users.unwrap_or(0) > 0);
            if let Some(users) = users {
                let errors = merged.errors.get(&tag.to_string()).copied().unwrap_or(0);
                activity.push(Activity { tag, users, errors });
            }
        }
        // Intervals too late to be shown: in the run's histograms all the same.
        for (text, h) in &merged.late {
            self.add_counted(text, h);
        }
        let mut hists = Vec::new();
        for (text, h) in &merged.hists {
            let tag = Tag::parse(text);
            self.add_counted(text, h);
            hists.push(IntervalHist {
                tag,
                hist: h.clone(),
            });
        }
        let batch = Arc::new(IntervalBatch {
            start_epoch_us: start_us,
            duration: std::time::Duration::from_micros(length_us),
            hists,
            activity,
            spares: Spares::default(),
        });
        self.last = self.totals(&merged.tallies);
        let (totals, segments) = &self.last;
        let event = RunEvent::Interval(Closed {
            batch: &batch,
            totals,
            segments,
            elapsed: self.began.elapsed(),
        });
        for o in &mut self.outputs {
            o.event(&event);
        }
        let Some(control) = self.control.as_mut() else {
            return Vec::new();
        };
        let splits = control.at_interval(start_us + length_us);
        let mut shared = Vec::new();
        for split in splits {
            self.show(&RunEvent::Notice(&Notice::Changed(split.clone())));
            let change = crate::summary::Change::from(&split).text();
            let c = self.shared(split);
            let shares: Vec<String> = c
                .shares
                .iter()
                .map(|v| crate::summary::Change::value_text(c.setting, *v))
                .collect();
            errln!("live: {change}; each part's share: {}", shares.join(", "));
            shared.push(c);
        }
        shared
    }

    /// The run ended as `words` say (`code`), its merged run in `dir`: the page says so, the
    /// metrics are pushed and scraped a last time.
    pub(super) async fn end(mut self, (words, code): (&str, i32), dir: &Path) {
        self.last_shown();
        if let Some(page) = self.page.take() {
            page.run_ended();
            page.end(words, code, dir, crate::rundir::File::Report.name());
        }
        if let Some(endpoint) = self.endpoint.take() {
            endpoint.close();
        }
        let pushed = self.metrics.take().and_then(|m| {
            let families = m.exporter.families();
            m.pusher
                .map(|p| tokio::task::spawn_blocking(move || p.finish(families)))
        });
        if let Some(p) = pushed {
            let _ = p.await;
        }
        if let Some(e) = self.scrape.take() {
            let _ = tokio::task::spawn_blocking(move || e.close()).await;
        }
    }

    /// A series' step ended: its last totals shown; the series' page goes on.
    pub(super) fn step_ended(mut self) {
        self.last_shown();
        if let Some(page) = &self.page {
            page.run_ended();
        }
    }

    /// The last totals, shown as the run's end.
    fn last_shown(&mut self) {
        let batch = Arc::new(IntervalBatch {
            start_epoch_us: crate::coordinate::now_us(),
            duration: std::time::Duration::ZERO,
            hists: Vec::new(),
            activity: Vec::new(),
            spares: Spares::default(),
        });
        let (totals, segments) = std::mem::take(&mut self.last);
        self.show(&RunEvent::End(Closed {
            batch: &batch,
            totals: &totals,
            segments: &segments,
            elapsed: self.began.elapsed(),
        }));
    }

    /// An interval's histogram of series `text` into the run's, unless it is a warm-up's.
    fn add_counted(&mut self, text: &str, h: &Histogram<u64>) {
        if Tag::parse(text).warmup {
            return;
        }
        match self.whole.get_mut(text) {
            Some(w) => {
                let _ = w.add(h);
            }
            None => {
                self.whole.insert(text.to_string(), h.clone());
            }
        }
    }

    fn show(&mut self, event: &RunEvent<'_>) {
        for o in &mut self.outputs {
            o.event(event);
        }
    }

    /// The run's totals (by `GroupPlan::index`) and its rows of changes: the parts' tallies
    /// around the histograms added so far.
    fn totals(&self, tallies: &[(Label, Tally)]) -> (Vec<GroupMetrics>, Vec<Segment>) {
        let metrics = |label: &Label, t: &Tally, open: bool| {
            if let Some((latency, service)) = t.histograms() {
                return t.clone().into_metrics(latency, open.then_some(service));
            }
            let hist = |series| {
                self.whole
                    .get(&Tag::new(label.clone(), series, false).to_string())
                    .cloned()
                    .unwrap_or_else(crate::metrics::new_histogram)
            };
            t.clone()
                .into_metrics(hist(Series::Latency), open.then(|| hist(Series::Service)))
        };
        let n = self.plan.groups().count();
        let mut totals = vec![GroupMetrics::default(); n];
        let mut segments = Vec::new();
        for g in self.plan.groups() {
            let open = g.rate.is_some();
            let own = Label::group(&g.name);
            for (label, t) in tallies {
                let m = || metrics(label, t, open);
                match label {
                    _ if *label == own => {
                        let kinds = std::mem::take(&mut totals[g.index].kinds);
                        totals[g.index] = m();
                        totals[g.index].kinds = kinds;
                    }
                    Label::Kind { group, kind } if own.group_row() == Some(group) => {
                        totals[g.index].kinds.insert(kind.clone(), m());
                    }
                    // A change's row (a rate step's group is never changed).
                    Label::Group(row)
                        if g.step_of.is_none() && row.name == g.name && row.at.is_some() =>
                    {
                        segments.push(Segment {
                            group: g.index,
                            label: label.clone(),
                            since_us: t.first_start_us,
                            until_us: t.last_end_us,
                            metrics: m(),
                        });
                    }
                    _ => {}
                }
            }
        }
        (totals, segments)
    }

    /// A change made on the whole run, with each part's share of it as `--parts` shares the
    /// profile's users (and a rate with them).
    fn shared(&self, split: Split) -> Shared {
        let threads = self
            .plan
            .groups()
            .find(|g| g.index == split.group)
            .map_or(self.parts, |g| g.threads);
        let shares = (0..self.parts)
            .map(|index| {
                let part = Part {
                    index,
                    count: self.parts,
                };
                match split.setting {
                    Setting::Rate => {
                        split.to * f64::from(part.share(threads)) / f64::from(threads.max(1))
                    }
                    Setting::Users => f64::from(
                        part.share(u32::try_from(crate::num::whole(split.to)).unwrap_or(u32::MAX)),
                    ),
                }
            })
            .collect();
        Shared {
            number: 0,
            group: split.group,
            name: split.name,
            setting: split.setting,
            from: split.from,
            to: split.to,
            shares,
            who: split.who,
            before: split.before,
            after: split.after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(group: &str) -> RunPlan {
        let text = format!("[document]\ncity = \"a\"\n[[group]]\n{group}\n");
        let loaded = crate::plan::profile::parse("p.toml", &text, "p").unwrap();
        RunPlan::build(&loaded, &Default::default()).unwrap()
    }

    fn split(setting: Setting, from: f64, to: f64) -> Split {
        Split {
            group: 0,
            name: "g".into(),
            setting,
            from,
            to,
            who: "api 127.0.0.1".into(),
            before: Label::at("g", setting, from),
            after: Label::at("g", setting, to),
            at_us: 0,
        }
    }

    /// 7 users over 3 parts are 3, 2 and 2, and a rate goes with them; a change is split alike.
    #[test]
    fn a_change_is_split_over_the_parts_as_the_parts_split_the_profile() {
        let open =
            plan("name = \"g\"\nop = \"insert\"\nthreads = 7\nrate = 700\nduration = \"5s\"");
        let live = Live::new(&open, 3, None, (None, true));
        let c = live.shared(split(Setting::Rate, 700.0, 1400.0));
        assert_eq!(c.shares, [600.0, 400.0, 400.0]);
        assert_eq!(
            (c.from, c.to, c.after.to_string().as_str()),
            (700.0, 1400.0, "g@1400/s")
        );
        let closed = plan("name = \"g\"\nop = \"insert\"\nthreads = 7\nduration = \"5s\"");
        let live = Live::new(&closed, 3, None, (None, true));
        let c = live.shared(split(Setting::Users, 7.0, 8.0));
        assert_eq!(c.shares, [3.0, 3.0, 2.0]);
        // A user per part at least.
        assert!(live
            .steer
            .refuse_users(2)
            .is_some_and(|w| w.contains("at least 3 users")));
        assert!(live.steer.refuse_users(3).is_none());
        // Changed only while it runs, by its own setting, and not once the run stops.
        let at = tokio::time::Instant::now();
        assert!(!live.steer.set_users(0, 9));
        live.steer.running(0, true);
        assert_eq!(live.steer.now(0), Some(Now::Users(7)));
        assert!(!live.steer.set_rate(0, 5.0, at));
        assert!(live.steer.set_users(0, 9));
        assert_eq!(live.steer.now(0), Some(Now::Users(9)));
        live.stopping();
        assert_eq!(live.steer.now(0), None);
        live.steer.running(0, true);
        assert!(!live.steer.set_users(0, 10));
    }
}
