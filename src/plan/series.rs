//! One step of a series (`sweep`, `capacity`): the profile's plan at one load for a time. The
//! same spec makes the step's plan wherever it runs: on this machine, or divided among the parts
//! of a coordinated series, which are sent the spec and apply it to the profile themselves.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{RunPlan, SetupPlan, StopAt};

/// A step: where it writes, its load, how long it runs and how much of that is warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StepSpec {
    /// 1 for the first step of the series.
    pub(crate) number: u32,
    /// Its directory under the series' (`steps/01-4`, `step-01-500`), relative.
    pub(crate) dir: String,
    pub(crate) load: StepLoad,
    /// The whole step, warm-up included, in milliseconds.
    pub(crate) length_ms: u64,
    pub(crate) warmup_ms: u64,
    /// The connection pool of the whole series (a sweep raises it to its largest step).
    pub(crate) pool_size: u32,
}

/// The load of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum StepLoad {
    /// `sweep`: every group at `threads` users, closed loop; the data set up again each step.
    Users { threads: u32 },
    /// `capacity`: `rate` operations a second shared among the groups in proportion to their
    /// users; the setup in the first step only (later steps keep what it left).
    Rate { rate: f64, first: bool },
}

impl StepSpec {
    pub(crate) fn new(
        number: usize,
        dir: String,
        load: StepLoad,
        length: Duration,
        warmup: Duration,
        pool_size: u32,
    ) -> StepSpec {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        StepSpec {
            number: u32::try_from(number).unwrap_or(u32::MAX),
            dir,
            load,
            length_ms: ms(length),
            warmup_ms: ms(warmup),
            pool_size,
        }
    }

    /// The step's plan: `base` (the profile's) at this step's load, every user from the start.
    pub(crate) fn plan(&self, base: &RunPlan) -> RunPlan {
        let mut plan = base.clone();
        plan.target.pool_size = self.pool_size.max(plan.target.pool_size);
        let length = Duration::from_millis(self.length_ms);
        let warmup = Duration::from_millis(self.warmup_ms);
        let users: u32 = plan.groups().map(|g| g.threads).sum();
        for stage in &mut plan.stages {
            for g in &mut stage.groups {
                match self.load {
                    StepLoad::Users { threads } => {
                        g.threads = threads;
                        g.rate = None;
                        g.start_delay = Duration::ZERO;
                    }
                    StepLoad::Rate { rate, .. } => {
                        g.rate = Some(rate * f64::from(g.threads) / f64::from(users.max(1)));
                    }
                }
                g.stop = StopAt::Duration(length);
                g.warmup = warmup;
                // The schedule starts after a ramp-up: a step offers its load from its start
                // (its warm-up covers the cold start).
                g.ramp_up = Duration::ZERO;
            }
        }
        if let StepLoad::Rate { first: false, .. } = self.load {
            // Later steps keep what the first set up: no drop, no indexes again, no preload.
            for c in &mut plan.collections {
                c.setup = SetupPlan {
                    drop: false,
                    preload: 0,
                    indexes: Vec::new(),
                };
            }
        }
        plan
    }

    /// A relative path of plain names: what a part accepts as the step's directory.
    pub(crate) fn dir_is_plain(&self) -> bool {
        let p = std::path::Path::new(&self.dir);
        !self.dir.is_empty()
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
    }
}
