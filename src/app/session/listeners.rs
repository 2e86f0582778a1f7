//! A run's watch groups: every listener's stream opened before the first stage (the writers
//! start once all are open), the drain after the last, and each group's delivery counted
//! (`summary::streams`) with `changes.tsv`'s lines.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::executor::{Clock, Listening};
use crate::listen::Acks;
use crate::metrics::Sample;
use crate::ops::listen::{ListenRun, Listened};
use crate::ops::Backend;
use crate::plan::{GroupPlan, RunPlan};
use crate::summary::streams::{ChangeLine, ListenerResult, StreamResult};

/// The listeners of a run, open.
pub(super) struct Listeners {
    acks: Arc<Acks>,
    writers_done: CancellationToken,
    running: Vec<(Arc<GroupPlan>, tokio::task::JoinHandle<Option<Listened>>)>,
}

/// What the writers share with the listeners, when the plan has watch groups.
pub(super) fn listening(plan: &RunPlan) -> Option<Listening> {
    plan.groups()
        .any(|g| g.watch.is_some() && g.threads > 0)
        .then(|| {
            let namespaces = (0..plan.collections.len())
                .map(|i| {
                    (
                        plan.database_of(i).to_string(),
                        plan.collections[i].name.clone(),
                    )
                })
                .collect();
            Listening {
                acks: Arc::new(Acks::new(namespaces)),
                plan: Arc::new(crate::audit::AuditPlan::of(plan)),
            }
        })
}

impl Listeners {
    /// Every listener of every watch group, each with its stream open when this returns
    /// (or failed to open: that failure is in `failures`).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn open<B: Backend>(
        plan: &RunPlan,
        backend: &B,
        listening: &Listening,
        samples: &mpsc::Sender<Sample>,
        (clock, seed): (Clock, u64),
        (active, stop): (&Arc<Vec<AtomicU32>>, &CancellationToken),
        failures: &mut Vec<String>,
    ) -> Listeners {
        let writers_done = CancellationToken::new();
        let mut running = Vec::new();
        let mut opened = Vec::new();
        for g in plan.groups().filter(|g| g.watch.is_some()) {
            let g = Arc::new(g.clone());
            for n in 0..g.threads {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let run = ListenRun {
                    acks: Arc::clone(&listening.acks),
                    samples: samples.clone(),
                    clock,
                    writers_done: writers_done.clone(),
                    stop: stop.clone(),
                    keep_lines: true,
                };
                let task = tokio::spawn(backend.listen(Arc::clone(&g), n, seed, run, tx));
                active[g.index].fetch_add(1, Ordering::Relaxed);
                running.push((Arc::clone(&g), task));
                opened.push((g.name.clone(), n, rx));
            }
        }
        for (name, n, rx) in opened {
            if let Ok(Err(e)) = rx.await {
                failures.push(format!(
                    "listener {} of watch group `{name}` could not open its change stream: {e}",
                    n + 1
                ));
            }
        }
        Listeners {
            acks: Arc::clone(&listening.acks),
            writers_done,
            running,
        }
    }

    /// The writers are done: each listener drains, then each group's delivery is counted.
    /// A watch group with a `duration` listens at least that long from the first stage's start
    /// (`t0`), for a run with no writers or shorter ones; Ctrl-C (`stop`) ends the wait.
    pub(super) async fn close(
        self,
        (t0, stop): (tokio::time::Instant, &CancellationToken),
        active: &Arc<Vec<AtomicU32>>,
        failures: &mut Vec<String>,
    ) -> (Vec<StreamResult>, Vec<ChangeLine>) {
        let longest = self
            .running
            .iter()
            .filter_map(|(g, _)| match g.stop {
                crate::plan::StopAt::Duration(d) => Some(d),
                _ => None,
            })
            .max();
        if let Some(d) = longest {
            tokio::select! {
                _ = tokio::time::sleep_until(t0 + d) => {}
                _ = stop.cancelled() => {}
            }
        }
        self.writers_done.cancel();
        let mut by_group: Vec<(Arc<GroupPlan>, Vec<Listened>)> = Vec::new();
        for (g, task) in self.running {
            let ended = task.await;
            active[g.index].fetch_sub(1, Ordering::Relaxed);
            let listened = match ended {
                Ok(Some(l)) => l,
                Ok(None) => continue,
                Err(e) => {
                    failures.push(format!(
                        "a listener of watch group `{}` failed: {e}",
                        g.name
                    ));
                    continue;
                }
            };
            match by_group.iter_mut().find(|(h, _)| h.index == g.index) {
                Some((_, ls)) => ls.push(listened),
                None => by_group.push((g, vec![listened])),
            }
        }
        let mut results = Vec::new();
        let mut lines = Vec::new();
        for (g, listened) in by_group {
            let mut per = Vec::new();
            let mut resumes = Vec::new();
            let not_judged = listened.iter().find_map(|l| l.admits.unknown.clone());
            for mut l in listened {
                let v = l.book.verdict(&self.acks, &l.admits);
                let c = &l.book.counts;
                per.push(ListenerResult {
                    listener: l.book.listener,
                    expected: not_judged.is_none().then_some(v.expected),
                    delivered: v.delivered,
                    // Not judged: nothing counted as missing (or skipped), as the group's row.
                    missing: if not_judged.is_some() {
                        0
                    } else {
                        v.expected.saturating_sub(v.delivered)
                    },
                    skipped: if not_judged.is_some() { 0 } else { v.skipped },
                    duplicated: c.duplicated,
                    out_of_order: c.out_of_order,
                    late: c.late,
                    other: c.other,
                    events: c.events,
                    resumes: u32::try_from(l.resumes.len()).unwrap_or(u32::MAX),
                    failed: l.failed.clone(),
                });
                let mine = l.book.lines.take().unwrap_or_default();
                // Each resume: the listener's missing writes acknowledged before it, and after.
                for mut r in l.resumes {
                    let at_us = r.at_ms.saturating_mul(1000);
                    for m in mine.iter().filter(|m| m.received_us.is_none()) {
                        match m.ack_us {
                            Some(a) if a < at_us => r.missing_before += 1,
                            _ => r.missing_after += 1,
                        }
                    }
                    resumes.push(r);
                }
                lines.extend(mine);
            }
            let scope = g
                .watch
                .as_ref()
                .map(|w| w.scope.to_string())
                .unwrap_or_default();
            resumes.sort_by_key(|r| r.at_ms);
            results.push(StreamResult::of(
                g.name.clone(),
                scope,
                per,
                resumes,
                not_judged,
            ));
        }
        (results, lines)
    }
}
