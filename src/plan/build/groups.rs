//! The thread groups: each `[[group]]` checked (name, threads, ramp-up, start delay, stop
//! condition, warm-up, key distribution) and gathered into stages in the profile's order.
//!
//! Owns: `GroupAt`, one group with what locates its errors, and `stages`. Never: the rate steps
//! a group becomes (`rates`) or the operation it sends (`operations`).

use std::collections::HashSet;
use std::time::Duration;

use super::Env;
use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::{expected_for, Group, Loaded};
use crate::plan::{GroupPlan, Overrides, Stage, StopAt};
use crate::workload::KeyDist;

/// `after = NAME` of profile group `index` (`at`): the plan of that earlier group of its stage
/// whose end starts it (its last, with rate steps; `plans_of` by profile group).
fn after(
    at: &GroupAt<'_>,
    name: &str,
    index: usize,
    plans_of: &[Vec<usize>],
) -> Result<Option<usize>, ProfileError> {
    let groups = &at.loaded.profile.groups;
    let g = at.g;
    let earlier = groups[..index].iter().position(|e| e.name == name);
    let Some(j) = earlier else {
        return Err(at.err(
            "after",
            format!("`{name}` is not a group before `{}` in the profile", g.name),
        ));
    };
    if groups[j].watch.is_some() {
        return Err(at.err(
            "after",
            format!("`{name}` is a watch group: its listeners are open for the whole run, so nothing would start `{}`", g.name),
        ));
    }
    if groups[j].stage != g.stage {
        return Err(at.err(
            "after",
            format!(
                "`{name}` is of another stage than `{}`: stages already run one after another",
                g.name
            ),
        ));
    }
    if g.background == Some(true) {
        return Err(at.err(
            "after",
            "a background group runs beside its stage's others, from the stage's start".into(),
        ));
    }
    Ok(plans_of[j].last().copied())
}

/// `resume_from = NAME` of profile group `index`: that earlier group, of an earlier stage, with
/// a state machine as this one has.
fn resume(
    at: &GroupAt<'_>,
    index: usize,
    plans_of: &[Vec<usize>],
) -> Result<Option<crate::plan::Resume>, ProfileError> {
    let groups = &at.loaded.profile.groups;
    let g = at.g;
    let Some(name) = &g.resume_from else {
        if g.skip_first.is_some() {
            return Err(at.err(
                "skip_first",
                "`skip_first` belongs to a group with `resume_from` (genny's SkipFirstOperations with Continue)".into(),
            ));
        }
        return Ok(None);
    };
    if g.states.is_none() {
        return Err(at.err(
            "resume_from",
            "`resume_from` belongs to a group with [[group.states]]".into(),
        ));
    }
    let Some(j) = groups[..index].iter().position(|e| &e.name == name) else {
        return Err(at.err(
            "resume_from",
            format!("`{name}` is not a group before `{}` in the profile", g.name),
        ));
    };
    if groups[j].states.is_none() || groups[j].stage == g.stage {
        return Err(at.err(
            "resume_from",
            format!("`{name}` is not a state machine of an earlier stage: only its users' last states can be resumed"),
        ));
    }
    let from = plans_of[j].last().copied().unwrap_or_default();
    Ok(Some(crate::plan::Resume {
        from,
        skip_first: g.skip_first.unwrap_or(false),
    }))
}

/// A profile with no group: nothing to run (a genny workload's every phase `Nop`, said so).
fn no_groups(loaded: &Loaded) -> ProfileError {
    let idle = loaded.genny.as_ref().is_some_and(|g| g.idle);
    ProfileError {
        file: loaded.origin.clone(),
        line: loaded.text.lines().count().max(1),
        column: 1,
        key: "group".into(),
        value: None,
        problem: if idle {
            format!("nothing to run: {}", crate::plan::genny::IDLE)
        } else {
            "the profile has no thread group, so there is nothing to run".into()
        },
        expected: if idle {
            "an actor with a phase that is not `Nop: true`".into()
        } else {
            "at least one [[group]] table, e.g.\n    [[group]]\n    name = \"insert\"\n    op = \"insert\"\n    threads = 10\n    loops = 100".into()
        },
    }
}

pub(super) fn stages(
    loaded: &Loaded,
    ov: &Overrides,
    env: &Env<'_>,
) -> Result<Vec<Stage>, ProfileError> {
    let groups = &loaded.profile.groups;
    if groups.is_empty() {
        return Err(no_groups(loaded));
    }
    let mut stages: Vec<Stage> = Vec::new();
    let mut next_index = 0;
    // Each profile group's plans (several with rate steps), by `GroupPlan::index`.
    let mut plans_of: Vec<Vec<usize>> = Vec::with_capacity(groups.len());
    let mut seen_names = HashSet::new();
    let mut seen_tags = std::collections::HashMap::new();
    for (index, g) in groups.iter().enumerate() {
        let at = GroupAt { loaded, index, g };
        at.name()?;
        if !seen_names.insert(g.name.clone()) {
            return Err(at.err(
                "name",
                format!(
                    "two groups are named `{}`; summary rows would clash",
                    g.name
                ),
            ));
        }
        // The interval log's tag of a group is its name with spaces and commas as `_`.
        let tag = crate::metrics::interval::Tag::latency(crate::metrics::Label::group(&g.name))
            .to_string();
        if let Some(other) = seen_tags.insert(tag.clone(), g.name.clone()) {
            return Err(at.err(
                "name",
                format!(
                    "`{}` and `{other}` would share the tag `{tag}` in latency.hlog (spaces and commas become `_`)",
                    g.name
                ),
            ));
        }
        let mut built = at.build_steps(ov, env, &mut next_index)?;
        if let Some(name) = &g.after {
            let last = after(&at, name, index, &plans_of)?;
            for b in &mut built {
                b.after = last;
            }
        }
        let resumed = resume(&at, index, &plans_of)?;
        for b in &mut built {
            b.resume = resumed;
        }
        plans_of.push(built.iter().map(|b| b.index).collect());
        let stage_name = g.stage.clone().unwrap_or_default();
        if stage_name.chars().any(char::is_control) {
            return Err(at.err(
                "stage",
                format!(
                    "`{}` holds a tab, newline or other control character, which would break the TSV files",
                    stage_name.escape_debug()
                ),
            ));
        }
        match stages.iter_mut().find(|s| s.name == stage_name) {
            Some(s) => s.groups.extend(built),
            None => stages.push(Stage {
                name: stage_name,
                groups: built,
            }),
        }
    }
    // A background group runs until the stage's other groups end: a stage needs one that ends.
    // (A watch group's listeners are not the stage's: a stage of them alone ends at once.)
    if let Some(s) = stages.iter().find(|s| {
        s.groups.iter().any(|g| g.watch.is_none())
            && s.groups
                .iter()
                .filter(|g| g.watch.is_none())
                .all(|g| g.stop == crate::plan::StopAt::Background)
    }) {
        let index = groups
            .iter()
            .position(|g| g.stage.clone().unwrap_or_default() == s.name)
            .unwrap_or(0);
        let at = GroupAt {
            loaded,
            index,
            g: &groups[index],
        };
        return Err(at.err(
            "background",
            format!(
                "every group of stage `{}` is a background group, which runs until the stage's other groups are done: nothing would end it",
                s.name
            ),
        ));
    }
    Ok(stages)
}

/// One `[[group]]` of the profile, with what is needed to locate its errors.
pub(super) struct GroupAt<'a> {
    pub(super) loaded: &'a Loaded,
    pub(super) index: usize,
    pub(super) g: &'a Group,
}

impl GroupAt<'_> {
    pub(super) fn path(&self, k: &str) -> String {
        format!("group[{}].{k}", self.index)
    }

    pub(super) fn err(&self, k: &str, problem: String) -> ProfileError {
        self.loaded
            .error_at(&self.path(k), problem, expected_for(k))
    }

    /// `[[group.states]]`'s transitions and `initial` (the states themselves are the group's
    /// `mix`, read by `templates`): every `to` a state, every weight finite and not below 0,
    /// each state with a way out, a pause that makes a number.
    fn chain(&self) -> Result<Option<std::sync::Arc<crate::plan::Chain>>, ProfileError> {
        let g = self.g;
        let Some(states) = &g.states else {
            if g.initial.is_some() {
                return Err(self.err(
                    "initial",
                    "`initial` belongs to a group with [[group.states]]".into(),
                ));
            }
            return Ok(None);
        };
        if g.rate.is_some() {
            return Err(self.err(
                "rate",
                "a state machine is paced by its transitions' pauses, not a rate".into(),
            ));
        }
        let index = |at: &str, name: &str| {
            states.iter().position(|s| s.name == name).ok_or_else(|| {
                self.loaded.error_at(
                    at,
                    format!("`{name}` is not a state of group `{}`", g.name),
                    format!(
                        "one of: {}",
                        states
                            .iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
        };
        let weight = |at: &str, w: f64| {
            if w.is_finite() && w >= 0.0 {
                Ok(w)
            } else {
                Err(self.loaded.error_at(
                    at,
                    format!("weight {w} is not a number from 0"),
                    "weight = 1",
                ))
            }
        };
        let mut transitions = Vec::with_capacity(states.len());
        for (k, st) in states.iter().enumerate() {
            let at = self.path(&format!("states[{k}]"));
            let mut out = Vec::new();
            for (i, t) in st.transitions.iter().enumerate() {
                let tat = format!("{at}.transitions[{i}]");
                let sleep = match &t.sleep {
                    None => None,
                    Some(v) => Some(self.pause(v, &format!("{tat}.sleep"))?),
                };
                out.push(crate::plan::Transition {
                    to: index(&format!("{tat}.to"), &t.to)?,
                    weight: weight(&format!("{tat}.weight"), t.weight)?,
                    sleep,
                });
            }
            if !out.iter().any(|t| t.weight > 0.0) {
                return Err(self.loaded.error_at(
                    &at,
                    format!("state `{}` has no way out (no transition of weight above 0)", st.name),
                    "a transition, e.g. [[group.states.transitions]] to = \"browse\" weight = 1 (to itself for a state that is never left)",
                ));
            }
            transitions.push(out);
        }
        let mut initial = vec![0.0; states.len()];
        let at = self.path("initial");
        let table = self.initial_table(states)?;
        for (name, w) in &table {
            let w = match w {
                toml::Value::Integer(i) => crate::num::real_signed(*i),
                toml::Value::Float(f) => *f,
                _ => f64::NAN,
            };
            initial[index(&format!("{at}.{name}"), name)?] += weight(&format!("{at}.{name}"), w)?;
        }
        if !initial.iter().any(|w| *w > 0.0) {
            return Err(self.err(
                "initial",
                "the initial weights sum to 0, so no first state could be drawn".into(),
            ));
        }
        Ok(Some(std::sync::Arc::new(crate::plan::Chain {
            initial,
            transitions,
        })))
    }

    /// `initial`; without it, a resumed group's users without a counterpart start in the
    /// first state.
    fn initial_table(
        &self,
        states: &[crate::plan::profile::model::StateDef],
    ) -> Result<toml::Table, ProfileError> {
        match (&self.g.initial, &self.g.resume_from) {
            (Some(t), _) => Ok(t.clone()),
            (None, Some(_)) => Ok(states
                .first()
                .map(|s| (s.name.clone(), toml::Value::Integer(1)))
                .into_iter()
                .collect()),
            (None, None) => Err(self.err(
                "initial",
                "a state machine needs `initial`: the weights of its first states".into(),
            )),
        }
    }

    /// A transition's pause (`sleep`): milliseconds, a number or a generator of numbers.
    fn pause(
        &self,
        v: &toml::Value,
        path: &str,
    ) -> Result<crate::workload::Template, ProfileError> {
        let tpl = crate::workload::Template::compile(v, path)
            .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?;
        let mut state = crate::workload::template::UserState::default();
        let mut lookup = crate::workload::template::NoLookup;
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(0);
        let made = tpl.generate(&mut crate::workload::template::Cx {
            rng: &mut rng,
            lookup: &mut lookup,
            now_ms: 0,
            user: 0,
            state: &mut state,
        });
        if !matches!(
            made,
            mongodb::bson::Bson::Double(_)
                | mongodb::bson::Bson::Int32(_)
                | mongodb::bson::Bson::Int64(_)
        ) {
            return Err(self.loaded.error_at(
                path,
                "a pause is milliseconds: a number, or a generator of numbers",
                "sleep = 100, or sleep = { \"^TimeSpec\" = { value = 1, unit = \"seconds\" } }",
            ));
        }
        Ok(tpl)
    }

    /// A name that can label a summary row and a TSV cell.
    fn name(&self) -> Result<(), ProfileError> {
        let g = self.g;
        if g.name.trim().is_empty() {
            return Err(self.err("name", "a group needs a name for its summary row".into()));
        }
        // A name must read back as a group's row label (not TOTAL's, a stage's or a kind's).
        if !matches!(
            crate::metrics::Label::parse(&g.name),
            crate::metrics::Label::Group(_)
        ) || g.name.starts_with("svc:")
            || g.name.starts_with("warmup:")
            || g.name.contains([':', '@'])
        {
            return Err(self.err(
                "name",
                format!(
                    "`{}` is reserved: TOTAL rows, the svc: and warmup: series of latency.hlog, a mix's `group:kind` rows and rate steps' `group@RATE/s` use it (no `:` or `@` in a name)",
                    g.name
                ),
            ));
        }
        if g.name.chars().any(char::is_control) {
            return Err(self.err(
                "name",
                format!(
                    "`{}` holds a tab, newline or other control character, which would break the TSV files",
                    g.name.escape_debug()
                ),
            ));
        }
        Ok(())
    }

    /// The group's collections: `collections` (handles set later) and its first, or its
    /// `collection`, by name.
    fn targets(&self, env: &Env<'_>) -> Result<(Vec<(usize, usize)>, usize), ProfileError> {
        let g = self.g;
        if g.history.is_some() {
            return Err(self.err(
                "history",
                "isolation histories (SPEC's `history = { model = \"list-append\", ... }`, checked with `--consistency`) are not built in this version: nothing would record or check what the transactions saw; leave `history` out to run the group's own operations".into(),
            ));
        }
        // What only an operation of `[[group.steps]]` has.
        for (key, set) in [
            ("metric", g.metric.is_some()),
            ("op_timeout_per_step", g.op_timeout_per_step == Some(true)),
        ] {
            if set && g.steps.is_none() {
                return Err(self.err(
                    key,
                    format!("`{key}` belongs to a group of [[group.steps]] (its whole operation)"),
                ));
            }
        }
        let named = |at: &str, name: &str| {
            env.named(name).ok_or_else(|| {
                self.loaded.error_at(
                    &self.path(at),
                    format!("`{name}` is not a collection of this profile"),
                    format!(
                        "one of: {}",
                        env.collections
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
        };
        let spread: Vec<(usize, usize)> = match &g.collections {
            None => Vec::new(),
            Some(_) if g.collection.is_some() => {
                return Err(self.err(
                    "collections",
                    "`collection` and `collections` are both set: one collection, or several each operation draws from".into(),
                ))
            }
            Some(names) if names.is_empty() => {
                return Err(self.err(
                    "collections",
                    "`collections` is empty: name at least one `[[collection]]`".into(),
                ))
            }
            Some(names) => names
                .iter()
                .enumerate()
                // The handles are set by `RunPlan::build`.
                .map(|(i, n)| named(&format!("collections[{i}]"), n).map(|c| (c, 0)))
                .collect::<Result<_, _>>()?,
        };
        if g.collections_in_turn == Some(true) && spread.is_empty() {
            return Err(self.err(
                "collections_in_turn",
                "`collections_in_turn` goes with `collections`, the collections taken in turn"
                    .into(),
            ));
        }
        let collection = match (&g.collection, spread.first()) {
            (None, Some(&(first, _))) => first,
            (None, None) => 0,
            (Some(name), _) => named("collection", name)?,
        };
        Ok((spread, collection))
    }

    pub(super) fn build(
        &self,
        ov: &Overrides,
        env: &Env<'_>,
        step: Option<Duration>,
    ) -> Result<GroupPlan, ProfileError> {
        let g = self.g;
        let threads = limits::check_threads(ov.threads.unwrap_or(g.threads))
            .map_err(|p| self.err("threads", p))?;
        let ramp_up = self.duration("ramp_up", &g.ramp_up)?.unwrap_or_default();
        let start_delay = self
            .duration("start_delay", &g.start_delay)?
            .unwrap_or_default();
        let stop = match step {
            Some(d) => StopAt::Duration(d),
            None => self.stop(ov)?,
        };
        let warmup = self.warmup(ov, stop)?;
        let (spread, collection) = self.targets(env)?;
        let concerns = super::collections::concerns(self.loaded, self.index, env.target)?;
        let (op, mix) = match self.templates(env.collections, collection)? {
            Some(t) => t,
            None => self.ops(&env.collections[collection], collection)?,
        };
        let chain = self.chain()?;
        let keys = match &g.keys {
            None => KeyDist::Uniform,
            Some(k) => KeyDist::from_name(k)
                .ok_or_else(|| self.err("keys", format!("`{k}` is not a key distribution")))?,
        };
        let rate = None; // set by `build_steps`
        let sleep_before = self
            .duration("sleep_before", &g.sleep_before)?
            .unwrap_or_default();
        let sleep_after = self
            .duration("sleep_after", &g.sleep_after)?
            .unwrap_or_default();
        Ok(GroupPlan {
            index: self.index,
            name: g.name.clone(),
            step_of: None,
            op,
            threads,
            ramp_up,
            start_delay,
            warmup,
            stop,
            rate,
            mix,
            keys,
            collection,
            handle: 0, // set by `RunPlan::build`
            in_turn: g.collections_in_turn.unwrap_or(false),
            timeout_per_step: g.op_timeout_per_step.unwrap_or(false),
            spread,
            chain,
            resume: None, // set by `stages`
            after: None,  // set by `stages`
            concerns,
            sleep_before,
            sleep_after,
            watch: None,
        })
    }

    /// The group's warm-up: `--warmup`, else its own, else the profile's; it must leave some of
    /// a timed group to measure.
    fn warmup(&self, ov: &Overrides, stop: StopAt) -> Result<Duration, ProfileError> {
        let (key, warmup) = match (ov.warmup, &self.g.warmup, &self.loaded.profile.warmup) {
            (Some(d), _, _) => (self.path("warmup"), d),
            (None, Some(s), _) => (
                self.path("warmup"),
                limits::parse_duration(s).map_err(|p| self.err("warmup", p))?,
            ),
            (None, None, Some(s)) => (
                "warmup".to_string(),
                limits::parse_duration(s)
                    .map_err(|p| self.loaded.error_at("warmup", p, expected_for("warmup")))?,
            ),
            (None, None, None) => return Ok(Duration::ZERO),
        };
        if let StopAt::Duration(d) = stop {
            if warmup >= d {
                return Err(self.loaded.error_at(
                    &key,
                    format!(
                        "a warm-up of {} leaves nothing of group `{}`'s {} to measure",
                        humantime::format_duration(warmup),
                        self.g.name,
                        humantime::format_duration(d)
                    ),
                    "a warm-up shorter than the group's duration, e.g. warmup = \"10s\" for duration = \"60s\"",
                ));
            }
        }
        Ok(warmup)
    }

    pub(super) fn duration(
        &self,
        k: &str,
        v: &Option<String>,
    ) -> Result<Option<Duration>, ProfileError> {
        v.as_deref()
            .map(|s| limits::parse_duration(s).map_err(|p| self.err(k, p)))
            .transpose()
    }

    fn stop(&self, ov: &Overrides) -> Result<StopAt, ProfileError> {
        let g = self.g;
        let duration = self.duration("duration", &g.duration)?;
        if g.background == Some(true) {
            if g.loops.is_some() || duration.is_some() {
                return Err(self.err(
                    "background",
                    "a background group runs until the stage's other groups are done, so it takes neither loops nor duration".into(),
                ));
            }
            if ov.loops.is_none() && ov.duration.is_none() {
                return Ok(StopAt::Background);
            }
        }
        Ok(match (ov.loops, ov.duration, g.loops, duration) {
            (Some(l), _, _, _) => StopAt::Loops(l),
            (_, Some(d), _, _) => StopAt::Duration(d),
            (_, _, Some(l), Some(d)) if g.at_least == Some(true) => StopAt::AtLeast(
                limits::check_loops(l).map_err(|p| self.err("loops", p))?,
                d,
            ),
            (_, _, Some(_), Some(_)) => {
                return Err(self.err(
                    "duration",
                    "both loops and duration are set; a group stops by one of them (or at_least = true: at least both, as genny's Repeat with Duration)".into(),
                ))
            }
            (_, _, Some(l), None) => {
                StopAt::Loops(limits::check_loops(l).map_err(|p| self.err("loops", p))?)
            }
            (_, _, None, Some(d)) if d.is_zero() => {
                return Err(self.err("duration", "a zero duration would run nothing".into()))
            }
            (_, _, None, Some(d)) => StopAt::Duration(d),
            (_, _, None, None) => {
                return Err(self.loaded.error_at(
                    &format!("group[{}]", self.index),
                    format!(
                        "group `{}` has neither loops nor duration, so it would never stop",
                        g.name
                    ),
                    "loops = N (operations per thread) or duration = \"30s\"",
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests;
