//! A phase of an actor as a group: its threads, its rules (Repeat, Duration, GlobalRate, sleeps,
//! Blocking) as the group's stop rule and rate, and the actors that touch many collections.

use super::*;

impl<'a> Translator<'a> {
    /// The group of `actor` in phase `p`.
    pub(super) fn group(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        config: &'a Yaml,
    ) -> Result<(), Refusal> {
        let cx = Ctx {
            phase: config,
            actor: actor.node,
            top: self.top,
        };
        let name = actor.name.as_str();
        if actor.kind == "Loader" || actor.kind == "MonotonicLoader" {
            return self.loader(actor, p, &cx);
        }
        if actor.kind == "MonotonicSingleLoader" {
            return self.single_loader(actor, p, &cx);
        }
        let mut g = toml::Table::new();
        let group_name = self.group_name(actor, p);
        g.insert("name".into(), Toml::String(group_name));
        g.insert("stage".into(), Toml::String(format!("phase{p}")));
        g.insert("threads".into(), Toml::Integer(i64::from(actor.threads)));
        // Every genny actor runs each operation of an iteration, whatever the one before found.
        g.insert("every_step".into(), Toml::Boolean(true));
        self.stop_rule(name, p, &cx, &mut g)?;
        let default_db = if actor.kind == "AdminCommand" {
            "admin"
        } else {
            "test"
        };
        let database = match cx.get("Database") {
            Some(d) => scalar_text(d)
                .ok_or_else(|| self.refuse(Some(name), Some(p), "`Database` is not a name"))?,
            None => default_db.to_string(),
        };
        let database = if actor.kind == "AdminCommand" {
            "admin".to_string()
        } else {
            database
        };
        let mut steps = match actor.kind.as_str() {
            "CrudActor" => self.crud(name, p, &cx, &database, &mut g)?,
            "RunCommand" | "AdminCommand" => self.run_command(name, p, &cx, &database)?,
            "QuiesceActor" => self.quiesce(name),
            "HelloWorld" | "NopMetrics" => {
                let coll = self.database_handle(&database);
                let row = if actor.kind == "HelloWorld" {
                    "DefaultMetricsName"
                } else {
                    "Iterate"
                };
                vec![step(row, &coll, "nop", Toml::Table(toml::Table::new()))]
            }
            "Insert" | "InsertRemove" | "Deleter" => self.writer(actor, p, &cx, &database)?,
            "MultiCollectionUpdate" | "MultiCollectionQuery" => {
                self.multi_collection(actor, p, &cx, &database, &mut g)?
            }
            "RandomSampler" => return self.random_sampler(actor, p, &cx, &database, g),
            "AssertiveActor" => self.assertive(actor, p, &cx)?,
            "SamplingLoader" => self.sampling_loader(actor, p, &cx)?,
            "CollectionScanner" => return self.collection_scanner(actor, p, &cx, g),
            other => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    format!("actor type `{other}` is not supported"),
                ))
            }
        };
        name_metrics(actor, p, &cx, &mut steps);
        if let Some(first) = steps.first().and_then(|s| s.get("collection")).cloned() {
            if !g.contains_key("collections") {
                g.insert("collection".into(), first);
            }
        }
        if !g.contains_key("states") {
            g.insert(
                "steps".into(),
                Toml::Array(steps.into_iter().map(Toml::Table).collect()),
            );
        }
        let count = (actor.kind == "CrudActor" && cx.get("Collection").is_none())
            .then(|| cx.get("CollectionCount").and_then(number))
            .flatten()
            .map_or(1, |n| {
                u32::try_from(crate::num::whole(n.trunc())).unwrap_or(u32::MAX)
            });
        if let Some(n) = g.get("name").and_then(Toml::as_str) {
            self.last_group.insert(name.to_string(), n.to_string());
        }
        if count > 1 {
            return self.split(g, actor, &database, count);
        }
        self.groups.push(g);
        Ok(())
    }

    /// `MultiCollectionUpdate` (an `updateMany` of `UpdateFilter` and `Update`) and
    /// `MultiCollectionQuery` (a `find` of `Filter`, with `Limit`, `Sort` and `ReadConcern`),
    /// each operation on `Collection{k}` of `Database` with k drawn uniformly per operation, as
    /// genny's do: the group's `collections`. genny's query draws k from 0 to
    /// `CollectionCount` inclusive (one past the collections its loaders make), its update from
    /// 0 to `CollectionCount - 1`; the same here.
    pub(super) fn multi_collection(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
        g: &mut toml::Table,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let name = actor.name.as_str();
        let query = actor.kind == "MultiCollectionQuery";
        let count = cx
            .get("CollectionCount")
            .and_then(number)
            .filter(|n| *n >= 1.0 && n.fract() == 0.0)
            .ok_or_else(|| {
                self.refuse(
                    Some(name),
                    Some(p),
                    format!(
                        "{} needs `CollectionCount`, a whole number from 1",
                        actor.kind
                    ),
                )
            })
            .map(crate::num::whole)?;
        let drawn = if query { count + 1 } else { count };
        if drawn > MAX_COLLECTIONS {
            return Err(self.refuse(
                Some(name),
                Some(p),
                format!(
                    "`CollectionCount: {count}` spreads it over more than the {MAX_COLLECTIONS} collections the tool reads of a genny workload"
                ),
            ));
        }
        let names: Vec<Toml> = (0..drawn)
            .map(|k| Toml::String(self.collection(database, &format!("Collection{k}"))))
            .collect();
        let first = names[0].as_str().unwrap_or_default().to_string();
        g.insert("collections".into(), Toml::Array(names));
        let mut args = toml::Table::new();
        let missing = |t: &Self, key: &str| {
            t.refuse(Some(name), Some(p), format!("{} needs `{key}`", actor.kind))
        };
        if query {
            let filter = cx.get("Filter").ok_or_else(|| missing(self, "Filter"))?;
            args.insert("filter".into(), to_toml(filter));
            if let Some(l) = cx.get("Limit") {
                args.insert("limit".into(), to_toml(l));
            }
            if let Some(s) = cx.get("Sort") {
                args.insert("sort".into(), to_toml(s));
            }
            if let Some(rc) = cx.get("ReadConcern") {
                let level = rc
                    .get("Level")
                    .and_then(scalar_text)
                    .or_else(|| scalar_text(rc))
                    .ok_or_else(|| {
                        self.refuse(
                            Some(name),
                            Some(p),
                            format!("`ReadConcern: {}` has no `Level`", show(rc)),
                        )
                    })?;
                g.insert("read_concern".into(), Toml::String(level));
            }
            Ok(vec![step("Query", &first, "find", Toml::Table(args))])
        } else {
            let filter = cx
                .get("UpdateFilter")
                .ok_or_else(|| missing(self, "UpdateFilter"))?;
            let update = cx.get("Update").ok_or_else(|| missing(self, "Update"))?;
            args.insert("filter".into(), to_toml(filter));
            args.insert("update".into(), to_toml(update));
            Ok(vec![step(
                "Update",
                &first,
                "updateMany",
                Toml::Table(args),
            )])
        }
    }

    /// RandomSampler: each operation a findOne of `{_id: k}`, k drawn uniformly from 0 to
    /// `DocumentCount - 1`, on one of the thread's collections drawn uniformly; genny's
    /// `distributeCollectionNames` gives thread t the `CollectionCount / Threads` collections
    /// from `(t % CollectionCount) x that` (one each when the threads are more): a group per
    /// set of collections, with the threads that share it. Its metric is the phase's `Read`.
    fn random_sampler(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
        g: toml::Table,
    ) -> Result<(), Refusal> {
        let name = actor.name.as_str();
        let whole = |key: &str| {
            cx.get(key)
                .and_then(number)
                .filter(|n| *n >= 1.0 && n.fract() == 0.0)
                .map(crate::num::whole)
                .ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("RandomSampler needs `{key}`, a whole number from 1"),
                    )
                })
        };
        let (count, documents) = (whole("CollectionCount")?, whole("DocumentCount")?);
        if count > MAX_COLLECTIONS {
            return Err(self.refuse(
                Some(name),
                Some(p),
                format!("`CollectionCount: {count}` spreads it over more than the {MAX_COLLECTIONS} collections the tool reads of a genny workload"),
            ));
        }
        let threads = u64::from(actor.threads);
        // genny's own rule (it refuses the rest too).
        if (threads > count && threads % count != 0) || (threads <= count && count % threads != 0) {
            return Err(self.refuse(
                Some(name),
                Some(p),
                format!("{threads} threads do not divide {count} collections evenly, nor they the threads (genny refuses it too)"),
            ));
        }
        let per = if threads > count { 1 } else { count / threads };
        let mn = cx.phase.get("MetricsName").and_then(scalar_text);
        let metric = genny_metric(name, Scope::Phase("Read"), mn.as_deref(), p);
        let group_name = g
            .get("name")
            .and_then(Toml::as_str)
            .unwrap_or(name)
            .to_string();
        let mut sets: Vec<(u64, u32)> = Vec::new();
        for t in 0..threads {
            let start = (t % count) * per;
            match sets.iter_mut().find(|(s, _)| *s == start) {
                Some((_, n)) => *n += 1,
                None => sets.push((start, 1)),
            }
        }
        for (start, users) in sets {
            let names: Vec<Toml> = (start..start + per)
                .map(|k| Toml::String(self.collection(database, &format!("Collection{k}"))))
                .collect();
            let first = names[0].as_str().unwrap_or_default().to_string();
            let several = sets_len(threads, per, count) > 1;
            let mut one = self.share(&g, &group_name, several.then_some(start), users, threads);
            if per > 1 {
                one.insert("collections".into(), Toml::Array(names));
            } else {
                one.insert("collection".into(), Toml::String(first.clone()));
            }
            let mut args = toml::Table::new();
            let mut id = toml::Table::new();
            id.insert("min".into(), Toml::Integer(0));
            id.insert(
                "max".into(),
                Toml::Integer(crate::num::signed(documents - 1)),
            );
            let mut random = toml::Table::new();
            random.insert("^RandomInt".into(), Toml::Table(id));
            let mut filter = toml::Table::new();
            filter.insert("_id".into(), Toml::Table(random));
            args.insert("filter".into(), Toml::Table(filter));
            let mut s = step("Read", &first, "findOne", Toml::Table(args));
            s.insert("metric".into(), Toml::String(metric.clone()));
            let mut steps = vec![s];
            rows_from_metrics(&mut steps, name);
            one.insert(
                "steps".into(),
                Toml::Array(steps.into_iter().map(Toml::Table).collect()),
            );
            self.groups.push(one);
        }
        self.notes.push(format!(
            "{name}: RandomSampler: a document it does not find is an operation that matched nothing (genny's actor throws and ends); its `ReadWithScan` metric (while a CollectionScanner runs) is not told apart"
        ));
        Ok(())
    }

    /// A group of the actor's `g` (named `group_name`) for `users` of its `threads`, those
    /// that work on the collections from `Collection{start}` (named after it when given): the
    /// actor's `GlobalRate` is its threads' together, so the group takes its users' share.
    pub(super) fn share(
        &mut self,
        g: &toml::Table,
        group_name: &str,
        start: Option<u64>,
        users: u32,
        threads: u64,
    ) -> toml::Table {
        let mut one = g.clone();
        if let Some(start) = start {
            one.insert(
                "name".into(),
                Toml::String(self.unique(format!("{group_name}.Collection{start}"))),
            );
        }
        one.insert("threads".into(), Toml::Integer(i64::from(users)));
        if let Some(r) = g.get("rate").and_then(Toml::as_float) {
            one.insert(
                "rate".into(),
                Toml::Float(r * f64::from(users) / crate::num::real(threads)),
            );
        }
        one
    }

    /// A CrudActor with `CollectionCount` above 1: genny gives each thread the collection
    /// `Collection{id % count}`; here thread t (from 0) works on `Collection{t % count}`, one
    /// group per collection (`Name.CollectionK`) with its threads.
    pub(super) fn split(
        &mut self,
        g: toml::Table,
        actor: &Actor<'a>,
        database: &str,
        count: u32,
    ) -> Result<(), Refusal> {
        let first = self.collection(database, "Collection0");
        let name = g
            .get("name")
            .and_then(Toml::as_str)
            .unwrap_or("")
            .to_string();
        self.notes.push(format!(
            "{}: CollectionCount {count}: thread t works on Collection(t % {count}), a group per collection",
            actor.name
        ));
        for k in 0..count.min(actor.threads) {
            let threads = (0..actor.threads).filter(|t| t % count == k).count();
            let key = self.collection(database, &format!("Collection{k}"));
            let mut one = g.clone();
            one.insert("name".into(), Toml::String(format!("{name}.Collection{k}")));
            one.insert("threads".into(), Toml::Integer(crate::num::signed(threads)));
            if one.get("collection").and_then(Toml::as_str) == Some(first.as_str()) {
                one.insert("collection".into(), Toml::String(key.clone()));
            }
            let mut lists: Vec<&mut Vec<Toml>> = Vec::new();
            let (steps, states) = (one.get("steps").is_some(), one.get("states").is_some());
            if steps {
                if let Some(Toml::Array(s)) = one.get_mut("steps") {
                    lists.push(s);
                }
            } else if states {
                if let Some(Toml::Array(states)) = one.get_mut("states") {
                    for st in states.iter_mut().filter_map(Toml::as_table_mut) {
                        if let Some(Toml::Array(s)) = st.get_mut("steps") {
                            lists.push(s);
                        }
                    }
                }
            }
            for list in lists {
                for st in list.iter_mut().filter_map(Toml::as_table_mut) {
                    if st.get("collection").and_then(Toml::as_str) == Some(first.as_str()) {
                        st.insert("collection".into(), Toml::String(key.clone()));
                    }
                }
            }
            self.groups.push(one);
        }
        Ok(())
    }

    /// The group's row name: the phase's `MetricsName`, else the actor's (with the phase when
    /// it has several), made unique (genny adds up the metrics of actors of one name; here each
    /// is a group of its own, `Name.2`, ...).
    fn group_name(&mut self, actor: &Actor<'a>, p: usize) -> String {
        let name = actor.name.as_str();
        // The actor's name, as genny's metrics begin (`Actor.Operation`); its phase after it
        // when it acts in several.
        let group_name = if actor.phases.len() > 1 {
            format!("{name}.{p}")
        } else {
            name.to_string()
        };
        self.unique(group_name.replace([':', '@'], "_"))
    }

    /// AssertiveActor: `Expected` then `Actual` sent to `Database`, their first batches
    /// compared (an `assert` step, genny's rules); its metric the actor's `Assert`. genny ends
    /// the whole workload when they differ; here the iteration ends with the step's error.
    fn assertive(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let name = actor.name.as_str();
        // genny reads the actor's `Database`, never a phase's.
        let database = actor
            .node
            .get("Database")
            .and_then(scalar_text)
            .ok_or_else(|| {
                self.refuse(
                    Some(name),
                    Some(p),
                    "AssertiveActor needs `Database` (the actor's)",
                )
            })?;
        let coll = self.database_handle(&database);
        let mut args = toml::Table::new();
        for (key, ours) in [("Expected", "expected"), ("Actual", "actual")] {
            let command = cx
                .phase
                .get(key)
                .filter(|c| c.is_mapping())
                .ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("AssertiveActor needs `{key}`, a command document"),
                    )
                })?;
            args.insert(ours.into(), in_order(to_toml(command)));
        }
        if let Some(fields) = cx.phase.get("IgnoreFields") {
            let list = fields
                .as_sequence()
                .and_then(|s| s.iter().map(scalar_text).collect::<Option<Vec<_>>>())
                .ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        "`IgnoreFields` is not a list of field names",
                    )
                })?;
            args.insert(
                "ignore".into(),
                Toml::Array(list.into_iter().map(Toml::String).collect()),
            );
        }
        self.notes.push(format!(
            "{name} (AssertiveActor): results that differ are an error of its `Assert` row; genny ends the whole workload there, the tool ends the iteration"
        ));
        let mut s = step("Assert", &coll, "assert", Toml::Table(args));
        s.insert("metric".into(), Toml::String(format!("{name}.Assert")));
        Ok(vec![s])
    }

    /// QuiesceActor: an fsync to admin (genny also waits for the secondaries' oplog and
    /// dropped collections, said in a note).
    fn quiesce(&mut self, name: &str) -> Vec<toml::Table> {
        let coll = self.database_handle("admin");
        let mut cmd = toml::Table::new();
        cmd.insert("fsync".into(), Toml::Integer(1));
        self.notes.push(format!(
            "{name} (QuiesceActor) sends fsync to admin; genny also waits for the secondaries' oplog and dropped collections"
        ));
        vec![step("Quiesce", &coll, "command", Toml::Table(cmd))]
    }

    /// Insert (its `Document`), InsertRemove (`{ _id: <actor id> }` inserted, then deleted)
    /// and Deleter (a findOneAndDelete of any document) on the actor's `Collection`.
    fn writer(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let name = actor.name.as_str();
        let coll_name = cx.get("Collection").and_then(scalar_text).ok_or_else(|| {
            self.refuse(
                Some(name),
                Some(p),
                format!("{} needs `Collection`", actor.kind),
            )
        })?;
        let coll = self.collection(database, &coll_name);
        let table = |pairs: Vec<(&str, Toml)>| {
            Toml::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        };
        Ok(match actor.kind.as_str() {
            "Insert" => {
                let doc = cx
                    .get("Document")
                    .map(to_toml)
                    .ok_or_else(|| self.refuse(Some(name), Some(p), "Insert needs `Document`"))?;
                vec![step(
                    "Insert",
                    &coll,
                    "insertOne",
                    table(vec![("document", doc)]),
                )]
            }
            "InsertRemove" => {
                // genny's: a document `{ _id: <the thread's actor id> }`, inserted, then deleted
                // (deleteMany of it).
                let mine = || table(vec![("_id", table(vec![("^ActorId", table(vec![]))]))]);
                vec![
                    step(
                        "Insert",
                        &coll,
                        "insertOne",
                        table(vec![("document", mine())]),
                    ),
                    step(
                        "Remove",
                        &coll,
                        "deleteMany",
                        table(vec![("filter", mine())]),
                    ),
                ]
            }
            _ => vec![step(
                "Delete",
                &coll,
                "findOneAndDelete",
                table(vec![("filter", table(vec![]))]),
            )],
        })
    }

    /// `Repeat`, `Duration`, `Blocking: None`, `GlobalRate`, `SleepBefore`/`SleepAfter`.
    pub(super) fn stop_rule(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        let phase = cx.phase;
        let repeat = phase
            .get("Repeat")
            .map(|v| {
                whole(v).ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("`Repeat: {}` is not a whole number", show(v)),
                    )
                })
            })
            .transpose()?;
        let length = phase
            .get("Duration")
            .map(|v| {
                duration(v).ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!(
                            "`Duration: {}` is not a duration like `10 seconds`",
                            show(v)
                        ),
                    )
                })
            })
            .transpose()?;
        let blocking_none = phase
            .get("Blocking")
            .and_then(scalar_text)
            .is_some_and(|b| b == "None");
        if self.smoke {
            g.insert("loops".into(), Toml::Integer(1));
            return Ok(());
        }
        match (repeat, length) {
            (Some(0), None) => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "`Repeat: 0` would run nothing; genny's Nop: true sits a phase out",
                ))
            }
            (Some(r), None) => {
                g.insert("loops".into(), Toml::Integer(r));
            }
            (None, Some(d)) => {
                g.insert("duration".into(), humane(d));
            }
            (Some(r), Some(d)) => {
                g.insert("loops".into(), Toml::Integer(r.max(1)));
                g.insert("duration".into(), humane(d));
                g.insert("at_least".into(), Toml::Boolean(true));
            }
            (None, None) if blocking_none => {
                g.insert("background".into(), Toml::Boolean(true));
            }
            (None, None) => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "neither `Repeat` nor `Duration`, and not `Blocking: None`: genny requires one",
                ))
            }
        }
        if let Some(r) = phase.get("GlobalRate") {
            let text = scalar_text(r).unwrap_or_default();
            let rate = global_rate(&text).ok_or_else(|| {
                self.refuse(Some(name), Some(p), format!("`GlobalRate: {text}` is not supported: the tool reads `N per T` (`500 per 1 second`); a percentage of a measured rate is not supported yet"))
            })?;
            g.insert("rate".into(), Toml::Float(rate));
            // A rate with Repeat: the operations per thread the schedule holds.
        }
        for (key, ours) in [
            ("SleepBefore", "sleep_before"),
            ("SleepAfter", "sleep_after"),
        ] {
            if let Some(v) = phase.get(key) {
                let d = duration(v).ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("`{key}: {}` is not a duration", show(v)),
                    )
                })?;
                if !d.is_zero() {
                    g.insert(
                        ours.into(),
                        Toml::String(humantime::format_duration(d).to_string()),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A whole number from 0 (genny's `Repeat`).
fn whole(v: &Yaml) -> Option<i64> {
    number(v)
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map(crate::num::whole_signed)
}

/// A duration as the profile writes it (`10s`).
fn humane(d: std::time::Duration) -> Toml {
    Toml::String(humantime::format_duration(d).to_string())
}

/// How many sets of collections RandomSampler's threads read (one group each).
fn sets_len(threads: u64, per: u64, count: u64) -> u64 {
    if per > 1 {
        threads.min(count / per)
    } else {
        threads.min(count)
    }
}

/// The other actors' metrics, as each one's source names them (CrudActor's and RunCommand's
/// steps have theirs): a phase's for those that take `PhaseContext::operation`, the actor's
/// for the rest; then each step's row from its metric.
fn name_metrics(actor: &Actor<'_>, p: usize, cx: &Ctx<'_>, steps: &mut [toml::Table]) {
    let mn = cx.phase.get("MetricsName").and_then(scalar_text);
    for s in steps.iter_mut() {
        if s.contains_key("metric") {
            continue;
        }
        let row = s.get("name").and_then(Toml::as_str).unwrap_or_default();
        let scope = match actor.kind.as_str() {
            "HelloWorld" | "NopMetrics" | "Deleter" | "MultiCollectionUpdate" => Scope::Phase(row),
            _ => Scope::Actor(row),
        };
        let metric = genny_metric(&actor.name, scope, mn.as_deref(), p);
        s.insert("metric".into(), Toml::String(metric));
    }
    rows_from_metrics(steps, &actor.name);
}
