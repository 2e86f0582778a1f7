//! `RunPlan::build`: a loaded profile and the overrides become a checked plan, one part at a
//! time, every problem located in the profile (file, line, key, the expected form).
//!
//! Owns: the assembly of a `RunPlan`, its handles (each collection with a group's concerns) and
//! `stop_on_error_pct`; one file per part: `target` (`[target]`), `collections`
//! (`[[collection]]` and `[setup]`, index options, each group's concerns), `groups` (each
//! `[[group]]` and the stages), `rates` (rate steps and ramps), `operations` (a group's `op` or
//! `mix`), `templates` (a group's own operation tables, `[[group.ops]]` and `[[group.steps]]`),
//! `thresholds` (the profile's and the command line's), `faults` (`audit`, `[server]`,
//! `[[fault]]`, `unavailable_after`), `watch` (a watch group's streams). Never: talks to a
//! server, touches the run directory, or formats a result.

mod collections;
mod faults;
mod groups;
mod operations;
mod rates;
mod target;
mod templates;
mod thresholds;
mod watch;

use super::limits;
use super::profile::{expected_for, Loaded};
use super::{
    CollectionPlan, Concerns, HandlePlan, Overrides, ReadPrefPlan, RunPlan, Stage, TargetPlan,
};
use crate::error::ProfileError;
use crate::workload::OpSpec;

/// What every group's build reads besides its own table.
pub(super) struct Env<'a> {
    pub(crate) collections: &'a [CollectionPlan],
    pub(crate) target: &'a TargetPlan,
    /// Each collection by the names a group may give it (`name`, and `database.name` for one of
    /// a database of its own), the first of a name: 10,000 collections are found at once.
    named: std::collections::HashMap<String, usize>,
}

impl<'a> Env<'a> {
    fn new(collections: &'a [CollectionPlan], target: &'a TargetPlan) -> Env<'a> {
        let mut named = std::collections::HashMap::new();
        for (i, c) in collections.iter().enumerate() {
            named.entry(c.name.clone()).or_insert(i);
            if let Some(d) = &c.database {
                named.entry(format!("{d}.{}", c.name)).or_insert(i);
            }
        }
        Env {
            collections,
            target,
            named,
        }
    }

    /// The collection a group calls `name` (`CollectionPlan::is_named`).
    pub(crate) fn named(&self, name: &str) -> Option<usize> {
        self.named.get(name).copied()
    }
}

/// Each distinct (collection, concerns) the groups send on, `[target]`'s on the first
/// collection first; each group gets its index.
fn handles(target: &TargetPlan, stages: &mut [Stage]) -> Vec<HandlePlan> {
    let mut handles = vec![HandlePlan {
        collection: 0,
        concerns: Concerns {
            write: target.write_concern.clone(),
            journal: target.journal,
            read_preference: ReadPrefPlan {
                mode: target.read_preference,
                ..ReadPrefPlan::default()
            },
            ..Concerns::default()
        },
    }];
    // By collection, then among that collection's handles (a few concerns each).
    let mut of_collection: std::collections::HashMap<usize, Vec<usize>> =
        std::collections::HashMap::from([(0, vec![0])]);
    let mut index_of = |h: HandlePlan| {
        let mine = of_collection.entry(h.collection).or_default();
        match mine.iter().copied().find(|&i| handles[i] == h) {
            Some(i) => i,
            None => {
                handles.push(h);
                mine.push(handles.len() - 1);
                handles.len() - 1
            }
        }
    };
    for g in stages.iter_mut().flat_map(|s| s.groups.iter_mut()) {
        g.handle = index_of(HandlePlan {
            collection: g.collection,
            concerns: g.concerns.clone(),
        });
        for (c, h) in &mut g.spread {
            *h = index_of(HandlePlan {
                collection: *c,
                concerns: g.concerns.clone(),
            });
        }
        // A step on another collection sends with the group's concerns there.
        if let OpSpec::Steps(s) = &g.op {
            for step in &s.steps {
                index_of(HandlePlan {
                    collection: step.collection,
                    concerns: g.concerns.clone(),
                });
            }
        }
    }
    handles
}

/// What write concern 0 cannot serve: the driver has no unacknowledged writes, so the
/// operations whose reply is the result (findOneAnd*, bulkWrite, and the built-in remove and
/// rmw, which write what they read first) would fail every time; insert, update, replace and
/// delete go as commands.
fn unacknowledged(loaded: &super::profile::Loaded, stages: &[Stage]) -> Result<(), ProfileError> {
    let fix = "write_concern = 1 for this group, or an operation table (insertOne, updateOne, replaceOne, deleteOne, ...), whose w:0 writes are sent as commands";
    for g in stages.iter().flat_map(|s| s.groups.iter()) {
        if g.concerns.write != Some(super::WriteConcernPlan::Nodes(0)) {
            continue;
        }
        let specs: Vec<&OpSpec> = if g.mix.is_empty() {
            vec![&g.op]
        } else {
            g.mix.iter().map(|(s, _)| s).collect()
        };
        let index = loaded
            .profile
            .groups
            .iter()
            .position(|x| x.name == g.profile_name())
            .unwrap_or(0);
        for s in specs {
            let ops: Vec<&std::sync::Arc<crate::workload::command::TemplateOp>> = match s {
                OpSpec::Template(t) => vec![t],
                OpSpec::Steps(st) => st.steps.iter().collect(),
            };
            for t in ops {
                use crate::workload::OpKind;
                if let Some(kind @ (OpKind::Remove | OpKind::Rmw)) =
                    t.desugared.as_ref().map(|d| d.kind)
                {
                    return Err(loaded.error_at(
                        &format!("group[{index}]"),
                        format!("group `{}` writes with write concern 0, which the built-in {kind} cannot send (it writes what it reads first, and the driver has no unacknowledged writes)", g.name),
                        fix,
                    ));
                }
                if t.verb.writes() && !t.verb.at_w0() {
                    return Err(loaded.error_at(
                        &t.at,
                        format!("{} with write concern 0: its reply is its result, and the driver has no unacknowledged writes", t.verb.name()),
                        fix,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A `^Key` needs documents to draw: a collection that is dropped, not preloaded and never
/// inserted into by the tool has none.
fn keyed(
    loaded: &super::profile::Loaded,
    collections: &[CollectionPlan],
    stages: &[Stage],
) -> Result<(), ProfileError> {
    let groups: Vec<_> = stages.iter().flat_map(|s| s.groups.iter()).collect();
    let specs = |g: &&super::GroupPlan| -> Vec<OpSpec> {
        if g.mix.is_empty() {
            vec![g.op.clone()]
        } else {
            g.mix.iter().map(|(s, _)| s.clone()).collect()
        }
    };
    for (c, coll) in collections.iter().enumerate() {
        let inserted = groups.iter().flat_map(specs).any(|s| match s {
            OpSpec::Template(t) => t.collection == c && t.inserts_keyed(),
            OpSpec::Steps(s) => s
                .steps
                .iter()
                .any(|t| t.collection == c && t.inserts_keyed()),
        });
        if !coll.setup.drop || coll.setup.preload > 0 || inserted {
            continue;
        }
        for g in groups.iter() {
            for s in specs(g) {
                let ops: Vec<std::sync::Arc<crate::workload::command::TemplateOp>> = match s {
                    // A built-in kind waits for a document instead (nothing is sent before).
                    OpSpec::Template(t) if t.desugared.is_some() => Vec::new(),
                    OpSpec::Template(t) => vec![t],
                    // A step's ^Key draws from its group's collection (in [group.bind] too).
                    OpSpec::Steps(st) if g.collection == c => st.steps.clone(),
                    _ => Vec::new(),
                };
                for t in ops
                    .into_iter()
                    .filter(|t| t.collection == c || matches!(g.op, OpSpec::Steps(_)))
                {
                    if t.templates().iter().any(|x| x.uses_key()) {
                        return Err(loaded.error_at(
                            &t.at,
                            format!(
                                "`^Key` draws an existing _id of collection `{}`, which is dropped, not preloaded and never inserted into by the tool, so it has none",
                                coll.name
                            ),
                            "a preload (preload = 1000) or a group that inserts into it, or a filter without ^Key",
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

impl RunPlan {
    pub fn build(loaded: &Loaded, ov: &Overrides) -> Result<RunPlan, ProfileError> {
        // A genny workload's templates are read with genny's defaults and leniency.
        match &loaded.genny {
            Some(g) => crate::workload::template::with_options(
                crate::workload::template::CompileOptions {
                    genny: true,
                    base_dir: Some(g.dir.clone()),
                },
                || Self::build_plan(loaded, ov),
            ),
            None => Self::build_plan(loaded, ov),
        }
    }

    fn build_plan(loaded: &Loaded, ov: &Overrides) -> Result<RunPlan, ProfileError> {
        let p = &loaded.profile;
        let target = target::target(loaded, ov)?;
        let stop_on_error_pct = match p.stop_on_error_pct {
            Some(x) if !(x > 0.0 && x <= limits::MAX_ERROR_PCT) => {
                return Err(loaded.error_at(
                    "stop_on_error_pct",
                    "not a percentage of failed operations",
                    expected_for("stop_on_error_pct"),
                ))
            }
            x => x,
        };
        let mut target = target;
        let collections = collections::collections(loaded, ov, &mut target)?;
        let env = Env::new(&collections, &target);
        let mut stages = groups::stages(loaded, ov, &env)?;
        let handles = handles(&target, &mut stages);
        keyed(loaded, &collections, &stages)?;
        unacknowledged(loaded, &stages)?;
        let mut thresholds = thresholds::thresholds(loaded, ov, &stages)?;
        // The TOTAL is the operations': a watch group's events stand beside it.
        let beside: Vec<usize> = stages
            .iter()
            .flat_map(|s| &s.groups)
            .filter(|g| g.watch.is_some())
            .map(|g| g.index)
            .collect();
        for t in thresholds.iter_mut().filter(|t| t.group.is_none()) {
            t.beside.clone_from(&beside);
        }
        let faults::Faults {
            audit,
            faults,
            server_args,
            unavailable_after,
        } = faults::faults(loaded, ov)?;
        faults::judged_after_the_run(loaded, &thresholds, audit)?;
        faults::within_the_stages(loaded, ov, &faults, &stages)?;
        let plan = RunPlan {
            name: loaded.name.clone(),
            origin: loaded.origin.clone(),
            description: p.description.clone().unwrap_or_default(),
            target,
            collections,
            handles,
            stages,
            profile_text: loaded.text.clone(),
            stop_on_error_pct,
            thresholds,
            part: None,
            audit,
            faults,
            server_args,
            unavailable_after,
            metrics_listen: p.metrics.listen.clone(),
            metrics_push: p.metrics.push.clone(),
            scale: None,
        };
        let mut plan = RunPlan {
            scale: rates::scale(loaded, ov, &plan)?,
            ..plan
        };
        rates::scale_threads(&mut plan, ov);
        if let Some(why) = plan.audit.then(|| faults::refusal(&plan)).flatten() {
            return Err(loaded.error_at(
                "audit",
                format!("the write audit cannot judge this profile: {why}"),
                "leave out the audit (audit = true, --audit), or run it on a profile without that operation",
            ));
        }
        Ok(plan)
    }
}

/// A profile's text built with no overrides, for the tests of every part.
#[cfg(test)]
mod test_profile {
    use super::{Overrides, ProfileError, RunPlan};

    pub(super) fn build(text: &str) -> Result<RunPlan, ProfileError> {
        let loaded = crate::plan::profile::parse("p.toml", text, "p")?;
        RunPlan::build(&loaded, &Overrides::default())
    }

    pub(super) const DOC: &str = "[document]\ncity = { choice = [\"a\", \"b\"] }\n";
}
