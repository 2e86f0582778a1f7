//! A watch group (`watch = { ... }`): its listeners' streams, checked; its row's operation is
//! the event received, so it is built as a `nop` group that the executor never starts.

use std::sync::Arc;
use std::time::Duration;

use super::groups::GroupAt;
use super::Env;
use crate::error::ProfileError;
use crate::plan::{GroupPlan, Overrides, StopAt, WatchPlan, WatchScope};

/// The stages a change stream's pipeline may hold (MongoDB's "Modify Change Stream Output":
/// `$addFields`, `$match`, `$project`, `$replaceRoot`, `$replaceWith`, `$redact`, `$set`,
/// `$unset`; and `$changeStreamSplitLargeEvent`, 7.0 and later).
const STREAM_STAGES: &[&str] = &[
    "$addFields",
    "$match",
    "$project",
    "$replaceRoot",
    "$replaceWith",
    "$redact",
    "$set",
    "$unset",
    "$changeStreamSplitLargeEvent",
];

/// Why a change stream's pipeline stage is refused offline (one key, a stage a change stream
/// takes), with what is expected; None when it is one.
fn stage_refused(t: &toml::Table) -> Option<(String, String)> {
    let keys: Vec<&String> = t.keys().collect();
    let [name] = keys.as_slice() else {
        return Some((
            format!("a stage has one key, its name; this one has {}", keys.len()),
            "one stage per table, e.g. { \"$match\" = { operationType = \"insert\" } }".into(),
        ));
    };
    if STREAM_STAGES.contains(&name.as_str()) {
        return None;
    }
    let near = STREAM_STAGES
        .iter()
        .map(|s| (strsim::levenshtein(s, name), s))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= 3)
        .map_or(String::new(), |(_, s)| format!("did you mean `{s}`? "));
    Some((
        format!("`{name}` is not a stage a change stream takes"),
        format!("{near}one of {}", STREAM_STAGES.join(", ")),
    ))
}

/// How long the run's end waits for events not delivered yet, unless `drain` says.
pub(super) const DEFAULT_DRAIN: Duration = Duration::from_secs(5);

const FULL_DOCUMENT: &[&str] = &["default", "updateLookup", "whenAvailable", "required"];
const BEFORE_CHANGE: &[&str] = &["off", "whenAvailable", "required"];

impl GroupAt<'_> {
    /// The watch group's plan: `threads` listeners (or `sweep --watchers`), stopping with the
    /// run; the keys that make operations refused.
    pub(super) fn build_watch(
        &self,
        ov: &Overrides,
        env: &Env<'_>,
        next_index: &mut usize,
    ) -> Result<Vec<GroupPlan>, ProfileError> {
        let g = self.g;
        let Some(w) = &g.watch else {
            unreachable!("build_watch is called for a group with `watch`")
        };
        self.no_operations()?;
        let plan = self.watch_plan(w, env)?;
        // Its operation is the event: a `nop` the executor never sends.
        let mut listening = g.clone();
        listening.watch = None;
        listening.nop = Some(toml::Value::Table(toml::Table::new()));
        listening.duration = None;
        listening.loops = Some(1);
        let at_nop = GroupAt {
            loaded: self.loaded,
            index: self.index,
            g: &listening,
        };
        let plain = Overrides {
            threads: ov.watchers.filter(|n| *n > 0),
            ..Overrides::default()
        };
        let mut one = at_nop.build(&plain, env, None)?;
        // `sweep --watchers 0`: the step without listeners (the group stays, so thresholds
        // naming it still read; its row is empty).
        if ov.watchers == Some(0) {
            one.threads = 0;
        }
        one.stop = match self.duration("duration", &g.duration)? {
            Some(d) => StopAt::Duration(ov.duration.unwrap_or(d)),
            None => StopAt::Background,
        };
        one.warmup = Duration::ZERO;
        one.watch = Some(Arc::new(plan));
        one.index = *next_index;
        *next_index += 1;
        Ok(vec![one])
    }

    /// A watch group sends no operations of its own: every key that would make one is refused.
    fn no_operations(&self) -> Result<(), ProfileError> {
        let g = self.g;
        for (k, set) in [
            ("op", g.op.is_some()),
            ("mix", g.mix.is_some()),
            ("ops", g.ops.is_some()),
            ("steps", g.steps.is_some()),
            ("states", g.states.is_some()),
            ("rate", g.rate.is_some()),
            ("loops", g.loops.is_some()),
            ("collections", g.collections.is_some()),
            ("after", g.after.is_some()),
            ("background", g.background.is_some()),
            ("transaction", g.transaction.is_some()),
        ]
        .into_iter()
        .chain(g.op_tables().into_iter().map(|(k, _)| (k, true)))
        {
            if set {
                return Err(self.err(
                    k,
                    format!("`{k}` beside `watch`: a watch group's listeners read change streams and send no operations of their own; put the writes in a group of their own"),
                ));
            }
        }
        Ok(())
    }

    /// What its listeners' streams see: the watched collection, database or cluster.
    fn watch_scope(&self, w: &crate::plan::profile::model::WatchDef, env: &Env<'_>) -> WatchScope {
        let g = self.g;
        if let Some(d) = &w.database {
            WatchScope::Database(d.clone())
        } else if w.cluster == Some(true) {
            WatchScope::Cluster
        } else {
            let name = w.collection.as_ref().or(g.collection.as_ref());
            match name.and_then(|n| env.collections.iter().find(|c| c.is_named(n))) {
                Some(c) => WatchScope::Collection {
                    database: c
                        .database
                        .clone()
                        .unwrap_or_else(|| env.target.database.clone()),
                    name: c.name.clone(),
                },
                // Not one the run writes: a collection of `[target]`'s database by that name.
                None => match name {
                    Some(n) => WatchScope::Collection {
                        database: env.target.database.clone(),
                        name: n.clone(),
                    },
                    None => WatchScope::Collection {
                        database: env.collections[0]
                            .database
                            .clone()
                            .unwrap_or_else(|| env.target.database.clone()),
                        name: env.collections[0].name.clone(),
                    },
                },
            }
        }
    }

    /// Its streams' options, checked: the scope, the document modes, the pipeline, the batch
    /// and the times.
    fn watch_plan(
        &self,
        w: &crate::plan::profile::model::WatchDef,
        env: &Env<'_>,
    ) -> Result<WatchPlan, ProfileError> {
        let at = |k: &str| self.path(&format!("watch.{k}"));
        let scopes = [
            w.collection.is_some(),
            w.database.is_some(),
            w.cluster == Some(true),
        ];
        if scopes.iter().filter(|s| **s).count() > 1 {
            return Err(self.loaded.error_at(
                &at("collection"),
                "more than one scope: `collection`, `database` and `cluster` each say what the stream sees".to_string(),
                "one of collection = \"orders\", database = \"shop\", cluster = true",
            ));
        }
        let scope = self.watch_scope(w, env);
        let one_of = |k: &str, v: &Option<String>, allowed: &[&str]| match v {
            Some(v) if !allowed.contains(&v.as_str()) => Err(self.loaded.error_at(
                &at(k),
                format!("`{v}` is not a `{k}` mode"),
                format!("one of {}", allowed.join(", ")),
            )),
            _ => Ok(v.clone()),
        };
        let full_document = one_of("full_document", &w.full_document, FULL_DOCUMENT)?;
        let full_document_before_change = one_of(
            "full_document_before_change",
            &w.full_document_before_change,
            BEFORE_CHANGE,
        )?;
        let pipeline = match &w.pipeline {
            None => None,
            Some(stages) => {
                for (i, s) in stages.iter().enumerate() {
                    let Some(t) = s.as_table() else {
                        return Err(self.loaded.error_at(
                            &format!("{}[{i}]", at("pipeline")),
                            "a pipeline stage is a table".to_string(),
                            "{ \"$match\" = { operationType = \"insert\" } }",
                        ));
                    };
                    if let Some((problem, expected)) = stage_refused(t) {
                        return Err(self.loaded.error_at(
                            &format!("{}[{i}]", at("pipeline")),
                            problem,
                            &expected,
                        ));
                    }
                }
                let value = toml::Value::Array(stages.clone());
                Some(
                    crate::workload::Template::compile(&value, "pipeline")
                        .map_err(|e| self.loaded.error_at(&at(&e.key), e.problem, e.expected))?,
                )
            }
        };
        if w.batch_size == Some(0) {
            return Err(self.loaded.error_at(
                &at("batch_size"),
                "a batch of 0 events would read nothing".to_string(),
                "batch_size = 1 or more",
            ));
        }
        let time = |k: &str, v: &Option<String>| {
            v.as_deref()
                .map(|s| {
                    crate::plan::limits::parse_duration(s).map_err(|p| {
                        self.loaded
                            .error_at(&at(k), p, "a duration, e.g. \"500ms\"")
                    })
                })
                .transpose()
        };
        let pipeline_shown = w
            .pipeline
            .as_ref()
            .and_then(|p| serde_json::to_string(p).ok())
            .unwrap_or_default();
        let plan = WatchPlan {
            scope,
            pipeline,
            pipeline_shown,
            full_document,
            full_document_before_change,
            batch_size: w.batch_size,
            max_await_time: time("max_await_time", &w.max_await_time)?,
            drain: time("drain", &w.drain)?.unwrap_or(DEFAULT_DRAIN),
            think: time("think", &w.think)?.unwrap_or_default(),
        };
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::build::test_profile::{build, DOC};
    use crate::plan::RunPlan;

    const WRITERS: &str =
        "[[group]]\nname = \"w\"\nop = \"insert\"\nthreads = 2\nduration = \"5s\"\n";

    fn with(watch: &str) -> Result<RunPlan, ProfileError> {
        build(&format!(
            "{DOC}{WRITERS}[[group]]\nname = \"l\"\nthreads = 3\nwatch = {{ {watch} }}\n"
        ))
    }

    #[test]
    fn a_watch_group_is_read_with_its_scope_and_the_executor_never_starts_it() {
        let plan = with("pipeline = [{ \"$match\" = { operationType = \"insert\" } }], full_document = \"updateLookup\", think = \"10ms\"").unwrap();
        let l = plan.groups().find(|g| g.name == "l").unwrap();
        let w = l.watch.as_ref().unwrap();
        assert_eq!(l.threads, 3);
        assert_eq!(l.stop, StopAt::Background);
        assert_eq!(
            w.scope,
            WatchScope::Collection {
                database: plan.target.database.clone(),
                name: plan.target.collection.clone()
            }
        );
        assert_eq!(
            (w.drain, w.think),
            (DEFAULT_DRAIN, Duration::from_millis(10))
        );
        assert_eq!(w.full_document.as_deref(), Some("updateLookup"));
        assert!(w.pipeline_shown.contains("$match"));
        assert_eq!(
            with("database = \"shop\"")
                .unwrap()
                .groups()
                .last()
                .unwrap()
                .watch
                .as_ref()
                .unwrap()
                .scope,
            WatchScope::Database("shop".into())
        );
        // `sweep --watchers 0`: no listeners; `--threads` leaves them as they are.
        let loaded = crate::plan::profile::parse(
            "p.toml",
            &format!("{DOC}{WRITERS}[[group]]\nname = \"l\"\nthreads = 3\nwatch = {{}}\n"),
            "p",
        )
        .unwrap();
        let none = RunPlan::build(
            &loaded,
            &Overrides {
                watchers: Some(0),
                threads: Some(7),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(
            none.groups()
                .map(|g| (g.name.as_str(), g.threads))
                .collect::<Vec<_>>(),
            [("w", 7), ("l", 0)]
        );
        // A threshold on the TOTAL leaves the watch group's events out.
        let judged = RunPlan::build(
            &loaded,
            &Overrides {
                thresholds: vec!["TOTAL.p99<50ms".into(), "l.p99<200ms".into()],
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(judged.thresholds[0].beside, [1]);
        assert!(judged.thresholds[1].beside.is_empty());
        // `after` a watch group would never start.
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"l\"\nthreads = 3\nwatch = {{}}\n{WRITERS}after = \"l\"\n"
        ))
        .unwrap_err();
        assert!(e.problem.contains("is a watch group"), "{}", e.problem);
        let two = RunPlan::build(
            &loaded,
            &Overrides {
                watchers: Some(2),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(two.groups().last().unwrap().threads, 2);
    }

    #[test]
    fn what_a_watch_group_cannot_hold_is_refused_where_it_is_written() {
        let e = build(&format!(
            "{DOC}{WRITERS}[[group]]\nname = \"l\"\nop = \"find\"\nthreads = 3\nwatch = {{}}\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "group[1].op");
        assert!(e.problem.contains("send no operations"), "{}", e.problem);
        let e = with("database = \"a\", cluster = true").unwrap_err();
        assert!(e.problem.contains("more than one scope"), "{}", e.problem);
        let e = with("full_document = \"lookup\"").unwrap_err();
        assert_eq!(e.key, "group[1].watch.full_document");
        assert!(e.expected.contains("updateLookup"));
        let e = with("batch_size = 0").unwrap_err();
        assert_eq!(e.key, "group[1].watch.batch_size");
        let e = with("pipeline = [{ \"$matc\" = { operationType = \"insert\" } }]").unwrap_err();
        assert_eq!(e.key, "group[1].watch.pipeline[0]");
        assert!(e.problem.contains("`$matc` is not a stage"), "{e}");
        assert!(e.expected.contains("did you mean `$match`?"), "{e}");
        let e = with("pipeline = [1]").unwrap_err();
        assert_eq!(e.key, "group[1].watch.pipeline[0]");
        let e = with("drain = \"soon\"").unwrap_err();
        assert_eq!(e.key, "group[1].watch.drain");
        let e = with("colection = \"x\"").unwrap_err();
        assert!(e.problem.contains("colection"), "{}", e.problem);
    }
}
