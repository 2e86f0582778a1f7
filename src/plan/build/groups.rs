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

pub(super) fn stages(
    loaded: &Loaded,
    ov: &Overrides,
    env: &Env<'_>,
) -> Result<Vec<Stage>, ProfileError> {
    let groups = &loaded.profile.groups;
    if groups.is_empty() {
        return Err(ProfileError {
            file: loaded.origin.clone(),
            line: loaded.text.lines().count().max(1),
            column: 1,
            key: "group".into(),
            value: None,
            problem: "the profile has no thread group, so there is nothing to run".into(),
            expected: "at least one [[group]] table, e.g.\n    [[group]]\n    name = \"insert\"\n    op = \"insert\"\n    threads = 10\n    loops = 100".into(),
        });
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
            let earlier = groups[..index].iter().position(|e| &e.name == name);
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
                    format!("`{name}` is of another stage than `{}`: stages already run one after another", g.name),
                ));
            }
            if g.background == Some(true) {
                return Err(at.err(
                    "after",
                    "a background group runs beside its stage's others, from the stage's start"
                        .into(),
                ));
            }
            let last = plans_of[j].last().copied();
            for b in &mut built {
                b.after = last;
            }
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
                    Some(v) => {
                        let path = format!("{tat}.sleep");
                        let tpl = crate::workload::Template::compile(v, &path)
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
                                &path,
                                "a pause is milliseconds: a number, or a generator of numbers",
                                "sleep = 100, or sleep = { \"^TimeSpec\" = { value = 1, unit = \"seconds\" } }",
                            ));
                        }
                        Some(tpl)
                    }
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
        let Some(table) = &g.initial else {
            return Err(self.err(
                "initial",
                "a state machine needs `initial`: the weights of its first states".into(),
            ));
        };
        for (name, w) in table {
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
        let named = |at: &str, name: &str| {
            env.collections
                .iter()
                .position(|c| c.is_named(name))
                .ok_or_else(|| {
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
        let collection = match (&g.collection, spread.first()) {
            (None, Some(&(first, _))) => first,
            (None, None) => 0,
            (Some(name), _) => named("collection", name)?,
        };
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
            spread,
            chain,
            after: None, // set by `stages`
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
mod tests {
    use super::*;
    use crate::plan::build::test_profile::{build, DOC};
    use crate::plan::RunPlan;
    use crate::workload::command::Command;
    use crate::workload::{OpKind, OpSpec};

    #[test]
    fn a_profile_without_groups_is_refused() {
        let e = build(DOC).unwrap_err();
        assert_eq!(e.key, "group");
        assert!(e.problem.contains("no thread group"));
    }

    #[test]
    fn a_group_without_a_stop_condition_is_refused() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\n"
        ))
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("group[0]", 3));
        assert!(e.problem.contains("neither loops nor duration"));
    }

    #[test]
    fn a_stage_of_background_groups_only_is_refused_and_a_rate_may_run_in_the_background() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\nbackground = true\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "group[0].background");
        assert!(e.problem.contains("nothing would end it"), "{}", e.problem);
        let plan = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\nbackground = true\nrate = 100\n[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 1\nloops = 3\n"
        ))
        .unwrap();
        let g = plan.groups().find(|g| g.name == "i").unwrap();
        assert_eq!(
            (g.stop, g.rate),
            (crate::plan::StopAt::Background, Some(100.0))
        );
    }

    #[test]
    fn a_group_over_several_collections_has_a_handle_on_each_and_names_only_its_own() {
        let colls = "[[collection]]\nname = \"a\"\n[[collection]]\nname = \"b\"\n[[collection]]\nname = \"c\"\n";
        let group = "[[group]]\nname = \"u\"\nthreads = 2\nloops = 3\nupdateMany = { filter = {}, update = { \"$inc\" = { n = 1 } } }\n";
        let plan = build(&format!("{colls}{group}collections = [\"b\", \"c\"]\n")).unwrap();
        let g = plan.groups().next().unwrap();
        assert_eq!(g.collection, 1, "the first of its collections");
        let spread: Vec<usize> = g.spread.iter().map(|s| s.0).collect();
        assert_eq!(spread, vec![1, 2]);
        for (c, h) in &g.spread {
            assert_eq!(
                plan.handles[*h].collection, *c,
                "each collection its handle"
            );
        }
        // Drawn uniformly, each one.
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(7);
        let mut seen = [0u32; 3];
        for _ in 0..1000 {
            seen[g.target(&mut rng).0] += 1;
        }
        assert!(seen[0] == 0 && (400..600).contains(&seen[1]), "{seen:?}");
        let e = build(&format!("{colls}{group}collections = [\"b\", \"x\"]\n")).unwrap_err();
        assert_eq!(e.key, "group[0].collections[1]");
        assert!(
            e.problem.contains("`x` is not a collection"),
            "{}",
            e.problem
        );
        let e = build(&format!(
            "{colls}{group}collection = \"a\"\ncollections = [\"b\"]\n"
        ))
        .unwrap_err();
        assert!(e.problem.contains("both set"), "{}", e.problem);
    }

    #[test]
    fn a_state_machine_is_read_with_its_ways_out_and_refused_where_it_could_not_walk() {
        let head = "[[group]]\nname = \"m\"\nthreads = 1\nloops = 5\n";
        let a = "[[group.states]]\nname = \"a\"\nsteps = [{ estimatedDocumentCount = {} }]\n";
        let b = "[[group.states]]\nname = \"b\"\nsteps = [{ name = \"n\", estimatedDocumentCount = {} }]\ntransitions = [{ to = \"a\", weight = 1, sleep = 5 }]\n";
        let a_out = "transitions = [{ to = \"b\", weight = 3 }, { to = \"a\", weight = 1 }]\n";
        let ok = format!("{DOC}{head}initial = {{ a = 1 }}\n{a}{a_out}{b}");
        let plan = build(&ok).unwrap();
        let g = plan.groups().next().unwrap();
        let chain = g.chain.as_ref().unwrap();
        assert_eq!(
            g.kinds().iter().map(|k| k.to_string()).collect::<Vec<_>>(),
            ["a", "b", "step0", "n"]
        );
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(3);
        let to_b = (0..4000)
            .filter(|_| chain.next(0, &mut rng).to == 1)
            .count();
        assert!((2800..3200).contains(&to_b), "3 of 4 go to b: {to_b}");
        assert!((0..100).all(|_| chain.first(&mut rng) == 0 && chain.next(1, &mut rng).to == 0));
        let cases = [
            (format!("{DOC}{head}initial = {{ a = 1 }}\n{a}transitions = [{{ to = \"c\", weight = 1 }}]\n{b}"), "`c` is not a state"),
            (format!("{DOC}{head}initial = {{ a = 1 }}\n{a}{b}"), "no way out"),
            (format!("{DOC}{head}{a}{a_out}{b}"), "needs `initial`"),
            (format!("{DOC}{head}rate = 10\ninitial = {{ a = 1 }}\n{a}{a_out}{b}"), "not a rate"),
            (format!("{DOC}{head}initial = {{ a = 1 }}\n{a}transitions = [{{ to = \"b\", weight = 1, sleep = \"x\" }}]\n{b}"), "a pause is milliseconds"),
        ];
        for (text, said) in cases {
            let e = build(&text).unwrap_err();
            assert!(e.problem.contains(said), "{said}: {}", e.problem);
        }
    }

    #[test]
    fn a_group_after_another_of_its_stage_waits_for_it_and_nothing_else_may() {
        let g = |name: &str, extra: &str| {
            format!(
                "[[group]]\nname = \"{name}\"\nop = \"insert\"\nthreads = 1\nloops = 1\n{extra}"
            )
        };
        let plan = build(&format!("{DOC}{}{}", g("a", ""), g("b", "after = \"a\"\n"))).unwrap();
        let b = plan.groups().find(|x| x.name == "b").unwrap();
        assert_eq!(
            b.after,
            Some(plan.groups().find(|x| x.name == "a").unwrap().index)
        );
        for (text, said) in [
            (
                format!("{DOC}{}{}", g("a", "after = \"b\"\n"), g("b", "")),
                "not a group before",
            ),
            (
                format!(
                    "{DOC}{}{}",
                    g("a", ""),
                    g("b", "after = \"a\"\nstage = \"two\"\n")
                ),
                "another stage",
            ),
        ] {
            let e = build(&text).unwrap_err();
            assert!(e.problem.contains(said), "{said}: {}", e.problem);
        }
    }

    #[test]
    fn zero_threads_and_bad_durations_are_located() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 0\nloops = 1\n"
        ))
        .unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line, e.column),
            ("group[0].threads", 6, 11)
        );
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 1\nduration = \"soon\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "group[0].duration");
        assert_eq!(e.value.as_deref(), Some("\"soon\""));
    }

    #[test]
    fn overrides_replace_every_groups_threads_and_stop() {
        let text = format!("{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 5\nduration = \"1m\"\n[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 7\nloops = 3\n");
        let loaded = crate::plan::profile::parse("p.toml", &text, "p").unwrap();
        let plan = RunPlan::build(
            &loaded,
            &Overrides {
                threads: Some(2),
                loops: Some(4),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert!(plan
            .groups()
            .all(|g| g.threads == 2 && g.stop == StopAt::Loops(4)));
        assert_eq!(plan.planned_operations(), Some(16));
        // A built-in find reads as a find of the first choice field, limit 50, no count.
        let OpSpec::Template(t) = &plan.groups().nth(1).unwrap().op else {
            panic!("a built-in find is one operation")
        };
        assert_eq!(t.desugared.as_ref().map(|d| d.kind), Some(OpKind::Find));
        assert!(matches!(
            &t.command,
            Command::Find { args, count_first: false, page: None, .. } if args.limit == Some(50)
        ));
    }

    #[test]
    fn groups_with_a_stage_run_after_the_earlier_stage() {
        let text = format!("{DOC}[[group]]\nname = \"i\"\nstage = \"one\"\nop = \"insert\"\nthreads = 1\nloops = 1\n[[group]]\nname = \"f\"\nstage = \"two\"\nop = \"find\"\nthreads = 1\nloops = 1\n");
        let plan = build(&text).unwrap();
        assert_eq!(
            plan.stages
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["one", "two"]
        );
    }

    #[test]
    fn a_group_name_with_a_control_character_is_refused() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"in\\tsert\"\nop = \"insert\"\nthreads = 1\nloops = 1\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "group[0].name");
        assert!(e.problem.contains("in\\tsert"), "{}", e.problem);
        assert!(e.problem.contains("control character"), "{}", e.problem);
    }

    #[test]
    fn a_warm_up_must_leave_part_of_a_timed_group_and_falls_back_to_the_profiles() {
        let group = |extra: &str| {
            format!("{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 1\nduration = \"6s\"\n{extra}")
        };
        let e = build(&group("warmup = \"6s\"\n")).unwrap_err();
        assert_eq!(e.key, "group[0].warmup");
        assert!(
            e.problem.contains("leaves nothing of group `i`'s 6s"),
            "{e}"
        );
        let plan = build(&format!("warmup = \"2s\"\n{}", group(""))).unwrap();
        assert_eq!(plan.groups().next().unwrap().warmup, Duration::from_secs(2));
        let plan = build(&format!("warmup = \"2s\"\n{}", group("warmup = \"1s\"\n"))).unwrap();
        assert_eq!(plan.groups().next().unwrap().warmup, Duration::from_secs(1));
    }
}
