//! A preprocessed genny workload read as the run model: each phase a stage, each actor active in
//! a phase a group of that stage, each of its operations a step (its row `Actor:Operation`),
//! genny's rules as the groups' options (`loops` = `Repeat` per thread, `duration`,
//! `at_least` for both, `background` for `Blocking: None`, `rate` from `GlobalRate`,
//! `sleep_before`/`sleep_after`), the collections `[[collection]]`s with their database, and a
//! `Loader`'s documents the collection's preload. The result is a profile table: it is built,
//! checked and run as any TOML profile is.
//!
//! What is not supported is refused here, before anything is sent, naming the file, the actor,
//! the phase and the thing.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_yaml::Value as Yaml;
use toml::Value as Toml;

/// A thing of the workload the tool does not run: where, and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) file: String,
    pub(crate) actor: Option<String>,
    pub(crate) phase: Option<usize>,
    pub(crate) thing: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.file)?;
        if let Some(a) = &self.actor {
            write!(f, "actor `{a}`")?;
            match self.phase {
                Some(p) => write!(f, ", phase {p}: ")?,
                None => write!(f, ": ")?,
            }
        }
        f.write_str(&self.thing)
    }
}

/// The workload as a profile, and what a reader must know of how it was read.
#[derive(Debug, Clone)]
pub(crate) struct Translated {
    pub(crate) profile: toml::Table,
    /// How genny's parts were read where the run model differs (said by `validate` and `run`).
    pub(crate) notes: Vec<String>,
}

/// Actor types read, in the order docs/genny.md lists them.
pub(crate) const ACTORS: [&str; 15] = [
    "CrudActor",
    "RunCommand",
    "AdminCommand",
    "Loader",
    "MonotonicLoader",
    "MonotonicSingleLoader",
    "QuiesceActor",
    "HelloWorld",
    "Insert",
    "InsertRemove",
    "Deleter",
    "NopMetrics",
    "LoggingActor",
    "MultiCollectionUpdate",
    "MultiCollectionQuery",
];

/// The server's `maxWriteBatchSize`: the most documents one insert command carries.
const MAX_WRITE_BATCH: i64 = 100_000;

/// Most groups a workload may make.
const MAX_GROUPS: usize = 5000;

/// Actors that send nothing and hold no phase: they sit out.
const SILENT: [&str; 1] = ["LoggingActor"];

/// `workload`, preprocessed, read from `file`; `smoke`: every phase once (`Repeat: 1`, no
/// `Duration`, rate or sleep), as genny's smoke check runs it.
pub(crate) fn translate(file: &Path, workload: &Yaml, smoke: bool) -> Result<Translated, Refusal> {
    let mut t = Translator {
        file: file.display().to_string(),
        top: workload,
        smoke,
        collections: Vec::new(),
        groups: Vec::new(),
        notes: Vec::new(),
        names: BTreeSet::new(),
    };
    let actors = workload
        .get("Actors")
        .and_then(Yaml::as_sequence)
        .ok_or_else(|| t.refuse(None, None, "no `Actors` list: not a genny workload"))?;
    let mut phases = 0;
    let mut plans = Vec::new();
    for a in actors {
        let actor = t.actor(a)?;
        phases = phases.max(actor.phases.iter().map(|(p, _)| p + 1).max().unwrap_or(0));
        plans.push(actor);
    }
    let pool = t.pool_size();
    for p in 0..phases {
        let before = t.groups.len();
        for actor in &plans {
            for (_, config) in actor.phases.iter().filter(|(q, _)| *q == p) {
                t.group(actor, p, config)?;
            }
        }
        let made = &t.groups[before..];
        if !made.is_empty() && made.iter().all(|g| g.get("background").is_some()) {
            t.notes.push(format!(
                "phase {p}: only background actors (Blocking: None) act in it, which genny leaves undefined; it is skipped"
            ));
            t.groups.truncate(before);
        }
    }
    // A group per loaded collection: a thousand collections would be a plan too slow to build.
    if t.groups.len() > MAX_GROUPS {
        return Err(t.refuse(
            None,
            None,
            format!(
                "it makes {} groups (a group per collection a loader fills), more than the {MAX_GROUPS} the tool reads of a genny workload yet",
                t.groups.len()
            ),
        ));
    }
    if t.groups.is_empty() {
        return Err(t.refuse(
            None,
            None,
            "no phase of this workload sends anything (every actor's phases are `Nop`, or it only logs): there is nothing to measure",
        ));
    }
    let database = t
        .collections
        .first()
        .map(|c| c.database.clone())
        .unwrap_or_else(|| "test".into());
    let mut profile = toml::Table::new();
    let name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "genny".into());
    profile.insert("name".into(), Toml::String(name));
    if let Some(d) = workload.get("Description").and_then(Yaml::as_str) {
        let first = d.trim().lines().next().unwrap_or("").trim();
        profile.insert("description".into(), Toml::String(first.to_string()));
    }
    let mut target = toml::Table::new();
    target.insert("database".into(), Toml::String(database.clone()));
    if let Some(p) = pool {
        target.insert("pool_size".into(), Toml::Integer(i64::from(p)));
    }
    profile.insert("target".into(), Toml::Table(target));
    let collections: Vec<Toml> = t
        .collections
        .iter()
        .map(|c| {
            let mut e = toml::Table::new();
            e.insert("name".into(), Toml::String(c.name.clone()));
            if c.database != database {
                e.insert("database".into(), Toml::String(c.database.clone()));
            }
            Toml::Table(e)
        })
        .collect();
    profile.insert("collection".into(), Toml::Array(collections));
    profile.insert(
        "group".into(),
        Toml::Array(t.groups.into_iter().map(Toml::Table).collect()),
    );
    let mut notes = t.notes;
    let mut seen = BTreeSet::new();
    notes.retain(|n| seen.insert(n.clone()));
    Ok(Translated { profile, notes })
}

struct Translator<'a> {
    file: String,
    top: &'a Yaml,
    smoke: bool,
    collections: Vec<Coll>,
    groups: Vec<toml::Table>,
    notes: Vec<String>,
    names: BTreeSet<String>,
}

/// A collection the workload works on; `load`: a Loader's documents, as its preload.
struct Coll {
    database: String,
    name: String,
    /// How groups and steps name it.
    key: String,
}

struct Load {
    documents: i64,
    /// Documents per insert.
    batch: i64,
    document: toml::Table,
    indexes: Vec<Toml>,
}

/// One actor: its type, name, threads, its own keys, and its config per phase (Nop left out).
struct Actor<'a> {
    kind: String,
    name: String,
    threads: u32,
    node: &'a Yaml,
    phases: Vec<(usize, &'a Yaml)>,
}

/// Looks a key up as genny's contexts do: the phase's, then the actor's, then the workload's.
struct Ctx<'a> {
    phase: &'a Yaml,
    actor: &'a Yaml,
    top: &'a Yaml,
}

impl<'a> Ctx<'a> {
    fn get(&self, k: &str) -> Option<&'a Yaml> {
        self.phase
            .get(k)
            .or_else(|| self.actor.get(k))
            .or_else(|| self.top.get(k))
    }
}

impl<'a> Translator<'a> {
    fn refuse(
        &self,
        actor: Option<&str>,
        phase: Option<usize>,
        thing: impl Into<String>,
    ) -> Refusal {
        Refusal {
            file: self.file.clone(),
            actor: actor.map(str::to_string),
            phase,
            thing: thing.into(),
        }
    }

    /// `Clients`: the largest `QueryOptions.maxPoolSize` (one pool serves every actor).
    fn pool_size(&mut self) -> Option<u32> {
        let clients = self.top.get("Clients")?.as_mapping()?;
        let sizes: Vec<u32> = clients
            .values()
            .filter_map(|c| c.get("QueryOptions")?.get("maxPoolSize"))
            .filter_map(number)
            .filter_map(|n| u32::try_from(n as u64).ok())
            .collect();
        if clients.len() > 1 {
            self.notes.push(format!(
                "Clients: {} pools named; one pool serves every actor, of the largest size",
                clients.len()
            ));
        }
        sizes.into_iter().max()
    }

    fn actor(&mut self, a: &'a Yaml) -> Result<Actor<'a>, Refusal> {
        let kind = a
            .get("Type")
            .and_then(Yaml::as_str)
            .ok_or_else(|| self.refuse(None, None, "an actor without a `Type`"))?
            .to_string();
        let name = a
            .get("Name")
            .and_then(scalar_text)
            .unwrap_or_else(|| kind.clone());
        let threads = match a.get("Threads") {
            None => 1,
            Some(v) => number(v)
                .filter(|n| *n >= 1.0 && n.fract() == 0.0 && *n <= f64::from(u32::MAX))
                .map(|n| n as u32)
                .ok_or_else(|| {
                    self.refuse(
                        Some(&name),
                        None,
                        format!("`Threads: {}` is not a whole number of threads", show(v)),
                    )
                })?,
        };
        if !ACTORS.contains(&kind.as_str()) && !SILENT.contains(&kind.as_str()) {
            return Err(self.refuse(
                Some(&name),
                None,
                format!(
                    "actor type `{kind}` is not supported; the tool runs {} (docs/genny.md lists each)",
                    ACTORS.join(", ")
                ),
            ));
        }
        let mut phases = Vec::new();
        if SILENT.contains(&kind.as_str()) {
            self.notes.push(format!(
                "{name} ({kind}) sits out: it logs, and sends nothing"
            ));
            return Ok(Actor {
                kind,
                name,
                threads,
                node: a,
                phases,
            });
        }
        let list = match a.get("Phases") {
            Some(Yaml::Sequence(s)) => s.iter().collect::<Vec<_>>(),
            Some(Yaml::Mapping(m)) => m.values().collect(),
            None => Vec::new(),
            Some(other) => {
                return Err(self.refuse(
                    Some(&name),
                    None,
                    format!("`Phases` is {}, not a list", show(other)),
                ))
            }
        };
        let mut next = 0usize;
        for entry in list {
            let numbers = match entry.get("Phase") {
                None => vec![next],
                Some(p) => self.phase_numbers(&name, p)?,
            };
            next = numbers.iter().max().map_or(next, |m| m + 1);
            let nop = entry.get("Nop").and_then(Yaml::as_bool).unwrap_or(false);
            if !nop {
                phases.extend(numbers.into_iter().map(|n| (n, entry)));
            }
        }
        Ok(Actor {
            kind,
            name,
            threads,
            node: a,
            phases,
        })
    }

    /// `Phase: 3`, `Phase: 3..5` (both ends in).
    fn phase_numbers(&self, actor: &str, p: &Yaml) -> Result<Vec<usize>, Refusal> {
        if let Some(n) = number(p).filter(|n| *n >= 0.0 && n.fract() == 0.0) {
            return Ok(vec![n as usize]);
        }
        let text = scalar_text(p).unwrap_or_default();
        let (a, b) = text
            .split_once("..")
            .and_then(|(a, b)| {
                Some((
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                ))
            })
            .filter(|(a, b)| a <= b && b - a < 10_000)
            .ok_or_else(|| {
                self.refuse(
                    Some(actor),
                    None,
                    format!("`Phase: {text}` is not a phase number or a range like 3..5"),
                )
            })?;
        Ok((a..=b).collect())
    }

    /// The collection `name` of `database`, added once; its key in the profile (its name, or
    /// `database.name` when another database has one of that name).
    fn collection(&mut self, database: &str, name: &str) -> String {
        if let Some(c) = self
            .collections
            .iter()
            .find(|c| c.name == name && c.database == database)
        {
            return c.key.clone();
        }
        let key = if self.collections.iter().any(|c| c.name == name) {
            format!("{database}.{name}")
        } else {
            name.to_string()
        };
        self.collections.push(Coll {
            database: database.to_string(),
            name: name.to_string(),
            key: key.clone(),
        });
        key
    }

    /// Any collection of `database` (for commands, which go to the database), made if none.
    fn database_handle(&mut self, database: &str) -> String {
        match self.collections.iter().find(|c| c.database == database) {
            Some(c) => c.key.clone(),
            None => self.collection(database, &format!("genny_{database}")),
        }
    }

    /// The group of `actor` in phase `p`.
    fn group(&mut self, actor: &Actor<'a>, p: usize, config: &'a Yaml) -> Result<(), Refusal> {
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
        let group_name = match cx.phase.get("MetricsName").and_then(scalar_text) {
            Some(m) => m,
            None if actor.phases.len() > 1 => format!("{name}.{p}"),
            None => name.to_string(),
        };
        let group_name = group_name.replace([':', '@'], "_");
        // Actors of one name (genny adds their metrics up): each group its own, `Name.2`, ...
        let mut group_name = group_name;
        if !self.names.insert(group_name.clone()) {
            let base = group_name.clone();
            let mut n = 2;
            while !self.names.insert(format!("{base}.{n}")) {
                n += 1;
            }
            group_name = format!("{base}.{n}");
        }
        g.insert("name".into(), Toml::String(group_name));
        g.insert("stage".into(), Toml::String(format!("phase{p}")));
        g.insert("threads".into(), Toml::Integer(i64::from(actor.threads)));
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
        let steps = match actor.kind.as_str() {
            "CrudActor" => self.crud(name, p, &cx, &database, &mut g)?,
            "RunCommand" | "AdminCommand" => self.run_command(name, p, &cx, &database)?,
            "QuiesceActor" => {
                let coll = self.database_handle("admin");
                let mut cmd = toml::Table::new();
                cmd.insert("fsync".into(), Toml::Integer(1));
                self.notes.push(format!(
                    "{name} (QuiesceActor) sends fsync to admin; genny also waits for the secondaries' oplog and dropped collections"
                ));
                vec![step("Quiesce", &coll, "command", Toml::Table(cmd))]
            }
            "HelloWorld" | "NopMetrics" => {
                let coll = self.database_handle(&database);
                let row = if actor.kind == "HelloWorld" {
                    "DefaultMetricsName"
                } else {
                    "Iterate"
                };
                vec![step(row, &coll, "nop", Toml::Table(toml::Table::new()))]
            }
            "Insert" | "InsertRemove" | "Deleter" => {
                let coll_name = cx.get("Collection").and_then(scalar_text).ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("{} needs `Collection`", actor.kind),
                    )
                })?;
                let coll = self.collection(&database, &coll_name);
                let table = |pairs: Vec<(&str, Toml)>| {
                    Toml::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                };
                match actor.kind.as_str() {
                    "Insert" => {
                        let doc = cx.get("Document").map(to_toml).ok_or_else(|| {
                            self.refuse(Some(name), Some(p), "Insert needs `Document`")
                        })?;
                        vec![step(
                            "Insert",
                            &coll,
                            "insertOne",
                            table(vec![("document", doc)]),
                        )]
                    }
                    "InsertRemove" => {
                        // genny's: a document `{ _id: <the thread's actor id> }`, inserted,
                        // then deleted (deleteMany of it).
                        let mine =
                            || table(vec![("_id", table(vec![("^ActorId", table(vec![]))]))]);
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
                }
            }
            "MultiCollectionUpdate" | "MultiCollectionQuery" => {
                self.multi_collection(actor, p, &cx, &database, &mut g)?
            }
            other => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    format!("actor type `{other}` is not supported"),
                ))
            }
        };
        if cx.get("ReportMetrics").and_then(Yaml::as_bool) == Some(false) {
            self.notes.push(format!(
                "{name}: ReportMetrics: false, but its rows are kept"
            ));
        }
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
            .map_or(1, |n| n as u32);
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
    fn multi_collection(
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
            })? as u64;
        let drawn = if query { count + 1 } else { count };
        if drawn > MAX_GROUPS as u64 {
            return Err(self.refuse(
                Some(name),
                Some(p),
                format!(
                    "`CollectionCount: {count}` spreads it over more than the {MAX_GROUPS} collections the tool reads of a genny workload"
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

    /// A CrudActor with `CollectionCount` above 1: genny gives each thread the collection
    /// `Collection{id % count}`; here thread t (from 0) works on `Collection{t % count}`, one
    /// group per collection (`Name.CollectionK`) with its threads.
    fn split(
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
            one.insert("threads".into(), Toml::Integer(threads as i64));
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

    /// `Repeat`, `Duration`, `Blocking: None`, `GlobalRate`, `SleepBefore`/`SleepAfter`.
    fn stop_rule(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        let phase = cx.phase;
        let repeat = match phase.get("Repeat") {
            None => None,
            Some(v) => Some(
                number(v)
                    .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                    .map(|n| n as i64)
                    .ok_or_else(|| {
                        self.refuse(
                            Some(name),
                            Some(p),
                            format!("`Repeat: {}` is not a whole number", show(v)),
                        )
                    })?,
            ),
        };
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
                g.insert(
                    "duration".into(),
                    Toml::String(humantime::format_duration(d).to_string()),
                );
            }
            (Some(r), Some(d)) => {
                g.insert("loops".into(), Toml::Integer(r.max(1)));
                g.insert(
                    "duration".into(),
                    Toml::String(humantime::format_duration(d).to_string()),
                );
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

    /// A CrudActor's operations, as steps; `withTransaction` makes the group a transaction.
    fn crud(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
        g: &mut toml::Table,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let collection = match (cx.get("Collection"), cx.get("CollectionCount")) {
            (Some(c), _) => scalar_text(c)
                .ok_or_else(|| self.refuse(Some(name), Some(p), "`Collection` is not a name"))?,
            // Above 1: each thread its own (`group` splits the group by collection).
            (None, Some(n)) if number(n).is_some_and(|n| n >= 1.0) => "Collection0".to_string(),
            (None, Some(n)) => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    format!(
                        "`CollectionCount: {}` is not a number of collections",
                        show(n)
                    ),
                ))
            }
            (None, None) => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "CrudActor needs `Collection` or `CollectionCount`",
                ))
            }
        };
        if let Some(states) = cx.phase.get("States") {
            self.states(name, p, cx, states, database, &collection, g)?;
            return Ok(Vec::new());
        }
        let ops = plural(cx.phase, "Operation", "Operations").ok_or_else(|| {
            self.refuse(
                Some(name),
                Some(p),
                "CrudActor has neither `Operations` nor `States`",
            )
        })?;
        let mut steps = Vec::new();
        for op in ops {
            let op_name = op.get("OperationName").and_then(Yaml::as_str).unwrap_or("");
            if op_name == "withTransaction" {
                if g.contains_key("transaction") || !steps.is_empty() || ops_len(cx.phase) > 1 {
                    return Err(self.refuse(Some(name), Some(p), "withTransaction beside other operations of the phase is not supported yet (one withTransaction per phase is)"));
                }
                g.insert("transaction".into(), Toml::Boolean(true));
                let inner = op
                    .get("OperationCommand")
                    .and_then(|c| c.get("OperationsInTransaction"))
                    .and_then(Yaml::as_sequence)
                    .ok_or_else(|| {
                        self.refuse(
                            Some(name),
                            Some(p),
                            "withTransaction without `OperationsInTransaction`",
                        )
                    })?;
                for t in inner {
                    steps.push(self.crud_op(name, p, t, database, &collection, g)?);
                }
                continue;
            }
            steps.push(self.crud_op(name, p, op, database, &collection, g)?);
        }
        dedupe_names(&mut steps);
        Ok(steps)
    }

    /// A CrudActor's `States` (its state machine, genny's FSM): `[[group.states]]`, each
    /// state's operations its steps, `Transitions` (`To`, `Weight`, `SleepBefore`) its ways
    /// out, `InitialStates` the group's `initial`.
    #[allow(clippy::too_many_arguments)]
    fn states(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        states: &Yaml,
        database: &str,
        collection: &str,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        for key in ["Continue", "SkipFirstOperations"] {
            if cx.phase.get(key).is_some() {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    format!("CrudActor `{key}` (a state machine carried on from the phase before) is not supported yet"),
                ));
            }
        }
        if plural(cx.phase, "Operation", "Operations").is_some() {
            return Err(self.refuse(
                Some(name),
                Some(p),
                "CrudActor has Operations and States at the same time (genny refuses it too)",
            ));
        }
        let list = states
            .as_sequence()
            .ok_or_else(|| self.refuse(Some(name), Some(p), "`States` is not a list"))?;
        let mut out = Vec::new();
        for s in list {
            let state = s
                .get("Name")
                .and_then(scalar_text)
                .ok_or_else(|| self.refuse(Some(name), Some(p), "a state without a `Name`"))?;
            let ops = plural(s, "Operation", "Operations").ok_or_else(|| {
                self.refuse(
                    Some(name),
                    Some(p),
                    format!("state `{state}` has no `Operations`"),
                )
            })?;
            let mut steps = Vec::new();
            for op in ops {
                steps.push(self.crud_op(name, p, op, database, collection, g)?);
            }
            dedupe_names(&mut steps);
            let mut transitions = Vec::new();
            for t in s
                .get("Transitions")
                .and_then(Yaml::as_sequence)
                .into_iter()
                .flatten()
            {
                let to = t.get("To").and_then(scalar_text);
                let weight = t.get("Weight").and_then(number);
                let (Some(to), Some(weight)) = (to, weight) else {
                    return Err(self.refuse(Some(name), Some(p), format!("a transition of state `{state}` without a scalar `To` and `Weight` (genny needs both)")));
                };
                let mut tt = toml::Table::new();
                tt.insert("to".into(), Toml::String(to));
                tt.insert("weight".into(), Toml::Float(weight));
                if let Some(sleep) = t.get("SleepBefore") {
                    tt.insert("sleep".into(), to_toml(sleep));
                }
                transitions.push(Toml::Table(tt));
            }
            let mut st = toml::Table::new();
            st.insert("name".into(), Toml::String(state));
            st.insert(
                "steps".into(),
                Toml::Array(steps.into_iter().map(Toml::Table).collect()),
            );
            st.insert("transitions".into(), Toml::Array(transitions));
            out.push(Toml::Table(st));
        }
        let mut initial = toml::Table::new();
        for i in cx
            .phase
            .get("InitialStates")
            .and_then(Yaml::as_sequence)
            .into_iter()
            .flatten()
        {
            let (Some(s), Some(w)) = (
                i.get("State").and_then(scalar_text),
                i.get("Weight").and_then(number),
            ) else {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "an `InitialStates` entry without `State` and `Weight`",
                ));
            };
            let sum = initial.get(&s).and_then(Toml::as_float).unwrap_or(0.0) + w;
            initial.insert(s, Toml::Float(sum));
        }
        if initial.is_empty() {
            return Err(self.refuse(
                Some(name),
                Some(p),
                "CrudActor has States, but no `InitialStates` (genny refuses it too)",
            ));
        }
        // The first step's collection is the group's.
        let first = out
            .first()
            .and_then(|s| s.get("steps"))
            .and_then(|s| s.get(0))
            .and_then(|s| s.get("collection"))
            .cloned();
        if let Some(c) = first {
            g.insert("collection".into(), c);
        }
        g.insert("states".into(), Toml::Array(out));
        g.insert("initial".into(), Toml::Table(initial));
        Ok(())
    }

    fn crud_op(
        &mut self,
        name: &str,
        p: usize,
        op: &Yaml,
        database: &str,
        collection: &str,
        g: &mut toml::Table,
    ) -> Result<toml::Table, Refusal> {
        let op_name = op
            .get("OperationName")
            .and_then(Yaml::as_str)
            .ok_or_else(|| {
                self.refuse(Some(name), Some(p), "an operation without `OperationName`")
            })?;
        let row = op
            .get("OperationMetricsName")
            .and_then(scalar_text)
            .unwrap_or_else(|| op_name.to_string());
        let database = op
            .get("Database")
            .and_then(scalar_text)
            .unwrap_or_else(|| database.to_string());
        let coll_name = op
            .get("Collection")
            .and_then(scalar_text)
            .unwrap_or_else(|| collection.to_string());
        let coll = self.collection(&database, &coll_name);
        let empty = Yaml::Mapping(Default::default());
        let c = op.get("OperationCommand").unwrap_or(&empty);
        let bad =
            |t: &Self, what: String| t.refuse(Some(name), Some(p), format!("{op_name}: {what}"));
        let mut args = toml::Table::new();
        let put = |args: &mut toml::Table, k: &str, v: Option<&Yaml>| {
            if let Some(v) = v {
                args.insert(k.to_string(), to_toml(v));
            }
        };
        let verb = match op_name {
            "insertOne" => {
                put(&mut args, "document", c.get("Document"));
                "insertOne"
            }
            "insertMany" => {
                let docs = c.get("Documents").and_then(Yaml::as_sequence).ok_or_else(|| bad(self, "`Documents` is not a list".into()))?;
                let first = docs.first().ok_or_else(|| bad(self, "`Documents` is empty".into()))?;
                if docs.iter().any(|d| d != first) {
                    // Different templates: one insert command of them all, as bulkWrite's
                    // insertOne models go (ordered, as insertMany is).
                    let requests = docs
                        .iter()
                        .map(|d| {
                            let mut m = toml::Table::new();
                            m.insert("document".into(), to_toml(d));
                            let mut r = toml::Table::new();
                            r.insert("insertOne".into(), Toml::Table(m));
                            Toml::Table(r)
                        })
                        .collect();
                    args.insert("requests".into(), Toml::Array(requests));
                    return Ok(step(&row, &coll, "bulkWrite", Toml::Table(args)));
                }
                put(&mut args, "document", Some(first));
                args.insert("batch".into(), Toml::Integer(docs.len() as i64));
                "insertMany"
            }
            "find" | "findOne" => {
                put(&mut args, "filter", c.get("Filter"));
                // `ReadPreference` is the group's (the tool's are per group), as WriteConcern.
                let mut options = c.get("Options").cloned();
                if let Some(rp) = options.as_mut().and_then(Yaml::as_mapping_mut).and_then(|o| o.remove("ReadPreference")) {
                    let ours = read_preference(&rp).ok_or_else(|| bad(self, format!("`ReadPreference: {}` is not one the tool reads (ReadMode, MaxStaleness)", show(&rp))))?;
                    if g.get("read_preference").is_some_and(|old| *old != ours) {
                        return Err(bad(self, "two read preferences in one phase of an actor are not supported (the tool's are per group)".into()));
                    }
                    g.insert("read_preference".into(), ours);
                }
                self.options(op_name, options.as_ref(), &mut args, &[("Limit", "limit"), ("Skip", "skip"), ("Sort", "sort"), ("Projection", "projection"), ("Hint", "hint"), ("BatchSize", "batchSize"), ("Collation", "collation"), ("MaxTime", "maxTimeMS"), ("Let", "let")])
                    .map_err(|e| bad(self, e))?;
                if op_name == "findOne" {
                    args.remove("limit");
                    args.remove("batchSize");
                }
                op_name
            }
            "aggregate" => {
                put(&mut args, "pipeline", c.get("Pipeline"));
                self.options(op_name, c.get("Options"), &mut args, &[("AllowDiskUse", "allowDiskUse"), ("BatchSize", "batchSize"), ("Hint", "hint"), ("MaxTime", "maxTimeMS")])
                    .map_err(|e| bad(self, e))?;
                "aggregate"
            }
            "countDocuments" => {
                put(&mut args, "filter", c.get("Filter"));
                self.options(op_name, c.get("Options"), &mut args, &[("Limit", "limit"), ("Skip", "skip"), ("Hint", "hint")])
                    .map_err(|e| bad(self, e))?;
                "countDocuments"
            }
            "estimatedDocumentCount" => "estimatedDocumentCount",
            "updateOne" | "updateMany" | "findOneAndUpdate" => {
                put(&mut args, "filter", c.get("Filter"));
                put(&mut args, "update", c.get("Update"));
                self.write_options(name, p, op_name, c, &mut args, g)?;
                op_name
            }
            "replaceOne" | "findOneAndReplace" => {
                put(&mut args, "filter", c.get("Filter"));
                put(&mut args, "replacement", c.get("Replacement"));
                self.write_options(name, p, op_name, c, &mut args, g)?;
                op_name
            }
            "deleteOne" | "deleteMany" | "findOneAndDelete" => {
                put(&mut args, "filter", c.get("Filter"));
                self.write_options(name, p, op_name, c, &mut args, g)?;
                op_name
            }
            "drop" => {
                let mut cmd = toml::Table::new();
                cmd.insert("drop".into(), Toml::String(coll_name.clone()));
                return Ok(step(&row, &coll, "command", Toml::Table(cmd)));
            }
            "createIndex" => {
                let mut index = toml::Table::new();
                index.insert("key".into(), c.get("Keys").map(to_toml).unwrap_or(Toml::Table(Default::default())));
                if let Some(Toml::Table(o)) = c.get("IndexOptions").map(to_toml) {
                    index.extend(o);
                }
                if !index.contains_key("name") {
                    index.insert("name".into(), Toml::String(format!("genny_{row}")));
                }
                let mut cmd = toml::Table::new();
                cmd.insert("createIndexes".into(), Toml::String(coll_name.clone()));
                cmd.insert("indexes".into(), Toml::Array(vec![Toml::Table(index)]));
                return Ok(step(&row, &coll, "command", Toml::Table(cmd)));
            }
            "bulkWrite" => {
                let ops = c.get("WriteOperations").and_then(Yaml::as_sequence).ok_or_else(|| bad(self, "`WriteOperations` is not a list".into()))?;
                let mut requests = Vec::new();
                for w in ops {
                    let kind = w.get("WriteCommand").and_then(Yaml::as_str).ok_or_else(|| bad(self, "a write without `WriteCommand`".into()))?;
                    let mut m = toml::Table::new();
                    for (k, ours) in [("Document", "document"), ("Filter", "filter"), ("Update", "update"), ("Replacement", "replacement")] {
                        if let Some(v) = w.get(k) {
                            m.insert(ours.into(), to_toml(v));
                        }
                    }
                    let mut r = toml::Table::new();
                    r.insert(kind.to_string(), Toml::Table(m));
                    requests.push(Toml::Table(r));
                }
                args.insert("requests".into(), Toml::Array(requests));
                if let Some(o) = c.get("Options").and_then(|o| o.get("Ordered")) {
                    put(&mut args, "ordered", Some(o));
                }
                "bulkWrite"
            }
            other => {
                return Err(bad(self, format!("operation `{other}` is not supported (the CrudActor operations the tool runs are in docs/genny.md)")))
            }
        };
        Ok(step(&row, &coll, verb, Toml::Table(args)))
    }

    /// genny's `Options` of a read, by the names it takes.
    fn options(
        &self,
        op: &str,
        options: Option<&Yaml>,
        args: &mut toml::Table,
        known: &[(&str, &str)],
    ) -> Result<(), String> {
        let Some(o) = options.and_then(Yaml::as_mapping) else {
            return Ok(());
        };
        for (k, v) in o {
            let k = scalar_text(k).unwrap_or_default();
            let Some((_, ours)) = known.iter().find(|(g, _)| *g == k) else {
                return Err(format!(
                    "option `{k}` of {op} is not supported (the tool reads {})",
                    known.iter().map(|(g, _)| *g).collect::<Vec<_>>().join(", ")
                ));
            };
            let value = if k == "MaxTime" {
                Toml::Integer(
                    duration(v)
                        .map(|d| d.as_millis() as i64)
                        .ok_or(format!("`MaxTime: {}` is not a duration", show(v)))?,
                )
            } else {
                to_toml(v)
            };
            args.insert((*ours).to_string(), value);
        }
        Ok(())
    }

    /// `OperationOptions` of a write: `Upsert`, `WriteConcern` (the group's), `Hint`.
    fn write_options(
        &mut self,
        name: &str,
        p: usize,
        op: &str,
        c: &Yaml,
        args: &mut toml::Table,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        let Some(o) = c
            .get("OperationOptions")
            .or_else(|| c.get("Options"))
            .and_then(Yaml::as_mapping)
        else {
            return Ok(());
        };
        for (k, v) in o {
            let k = scalar_text(k).unwrap_or_default();
            match k.as_str() {
                "Upsert" => {
                    args.insert("upsert".into(), to_toml(v));
                }
                "Hint" => {
                    args.insert("hint".into(), to_toml(v));
                }
                "WriteConcern" => {
                    let wc = write_concern(v).ok_or_else(|| self.refuse(Some(name), Some(p), format!("{op}: `WriteConcern: {}` is not one the tool reads (Level: majority or a number, Journal, TimeoutMillis)", show(v))))?;
                    if let Some(old) = g.get("write_concern") {
                        if *old != wc {
                            return Err(self.refuse(Some(name), Some(p), format!("{op}: two write concerns in one phase of an actor are not supported (the tool's are per group)")));
                        }
                    }
                    g.insert("write_concern".into(), wc);
                }
                other => return Err(self.refuse(Some(name), Some(p), format!("{op}: option `{other}` is not supported (the tool reads Upsert, Hint, WriteConcern)"))),
            }
        }
        Ok(())
    }

    /// RunCommand / AdminCommand: each operation a `command` step on the database.
    fn run_command(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let ops = plural(cx.phase, "Operation", "Operations").ok_or_else(|| {
            self.refuse(
                Some(name),
                Some(p),
                "RunCommand needs `Operation` or `Operations`",
            )
        })?;
        let coll = self.database_handle(database);
        let mut steps = Vec::new();
        for op in ops {
            let kind = op
                .get("OperationName")
                .and_then(Yaml::as_str)
                .unwrap_or("RunCommand");
            if kind != "RunCommand" && kind != "AdminCommand" {
                return Err(self.refuse(Some(name), Some(p), format!("operation `{kind}` of RunCommand is not supported (RunCommand, AdminCommand)")));
            }
            let coll = if kind == "AdminCommand" {
                self.database_handle("admin")
            } else {
                coll.clone()
            };
            let command = op
                .get("OperationCommand")
                .filter(|c| c.is_mapping())
                .ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        "a RunCommand operation without an `OperationCommand` document",
                    )
                })?;
            let row = op
                .get("OperationMetricsName")
                .and_then(scalar_text)
                .unwrap_or_else(|| "DatabaseOperation".to_string());
            steps.push(step(&row, &coll, "command", in_order(to_toml(command))));
        }
        dedupe_names(&mut steps);
        Ok(steps)
    }

    /// A MonotonicSingleLoader's documents: `DocumentCount` in one collection, shared by its
    /// threads, as the collection's preload.
    fn single_loader(&mut self, actor: &Actor<'a>, p: usize, cx: &Ctx<'a>) -> Result<(), Refusal> {
        let name = actor.name.as_str();
        let documents = cx
            .get("DocumentCount")
            .and_then(number)
            .filter(|n| *n >= 0.0 && n.fract() == 0.0)
            .map(|n| n as i64)
            .ok_or_else(|| {
                self.refuse(
                    Some(name),
                    Some(p),
                    "MonotonicSingleLoader needs `DocumentCount` as a whole number",
                )
            })?;
        let database = cx.get("Database").and_then(scalar_text).ok_or_else(|| {
            self.refuse(
                Some(name),
                Some(p),
                "MonotonicSingleLoader needs `Database`",
            )
        })?;
        let coll = cx
            .get("Collection")
            .and_then(scalar_text)
            .unwrap_or_else(|| "Collection0".into());
        let document = match cx.get("Document").map(to_toml) {
            Some(Toml::Table(t)) => t,
            _ => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "MonotonicSingleLoader needs a `Document` template",
                ))
            }
        };
        let batch = cx
            .get("BatchSize")
            .and_then(number)
            .map_or(1000, |n| n as i64);
        let load = Load {
            documents,
            batch,
            document,
            indexes: Vec::new(),
        };
        self.load(name, p, &database, &coll, load, true, None)
            .map(drop)
    }

    /// A name no group has yet: `base`, else `base.2`, `base.3`, ...
    fn unique(&mut self, base: String) -> String {
        if self.names.insert(base.clone()) {
            return base;
        }
        let mut n = 2;
        while !self.names.insert(format!("{base}.{n}")) {
            n += 1;
        }
        format!("{base}.{n}")
    }

    /// `coll` of `database` loaded with `load` in phase `p`, as genny's loaders do: inserts of
    /// `batch` documents (`IndividualBulkInsert`), the last batch the remainder, then its indexes
    /// (`IndexBuild`), each a group of the phase's stage, each `after` the one before (the
    /// first after `after`: the thread's collection before). `--smoke`: one batch. Returns the
    /// last group's name.
    #[allow(clippy::too_many_arguments)]
    fn load(
        &mut self,
        actor: &str,
        p: usize,
        database: &str,
        coll: &str,
        load: Load,
        one: bool,
        after: Option<String>,
    ) -> Result<Option<String>, Refusal> {
        let mut batch = load.batch;
        if batch < 1 {
            return Err(self.refuse(
                Some(actor),
                Some(p),
                format!("`BatchSize: {batch}` is not a number of documents"),
            ));
        }
        // The driver sends an insertMany of more than the server's `maxWriteBatchSize` as
        // several commands of at most that many: so does the tool, each one a sample.
        if batch > MAX_WRITE_BATCH {
            self.notes.push(format!(
                "{actor}: `BatchSize: {batch}` is sent as inserts of {MAX_WRITE_BATCH} documents (the server's maxWriteBatchSize, the commands the driver splits it into), each one a sample"
            ));
            batch = MAX_WRITE_BATCH;
        }
        let key = self.collection(database, coll);
        let base = if one {
            actor.to_string()
        } else {
            format!("{actor}.{coll}")
        };
        let (full, rest) = (load.documents / batch, load.documents % batch);
        let group = |name: String, loops: i64, steps: Vec<toml::Table>| {
            let mut g = toml::Table::new();
            g.insert("name".into(), Toml::String(name));
            g.insert("stage".into(), Toml::String(format!("phase{p}")));
            g.insert("threads".into(), Toml::Integer(1));
            g.insert("loops".into(), Toml::Integer(loops));
            g.insert("collection".into(), Toml::String(key.clone()));
            g.insert(
                "steps".into(),
                Toml::Array(steps.into_iter().map(Toml::Table).collect()),
            );
            g
        };
        let insert = |n: i64| {
            let mut a = toml::Table::new();
            a.insert("document".into(), Toml::Table(load.document.clone()));
            a.insert("batch".into(), Toml::Integer(n));
            step("IndividualBulkInsert", &key, "insertMany", Toml::Table(a))
        };
        let smoke = self.smoke;
        let mut last = after;
        let mut chained = |t: &mut Self, mut g: toml::Table| {
            if let Some(before) = last.replace(g["name"].as_str().unwrap_or_default().to_string()) {
                g.insert("after".into(), Toml::String(before));
            }
            t.groups.push(g);
        };
        if full > 0 {
            let name = self.unique(base.clone());
            let g = group(name, if smoke { 1 } else { full }, vec![insert(batch)]);
            chained(self, g);
        }
        if rest > 0 && !(smoke && full > 0) {
            let name = self.unique(format!("{base}.rest"));
            let g = group(name, 1, vec![insert(rest)]);
            chained(self, g);
        }
        if !load.indexes.is_empty() {
            let mut cmd = toml::Table::new();
            cmd.insert("createIndexes".into(), Toml::String(coll.to_string()));
            cmd.insert("indexes".into(), Toml::Array(load.indexes.clone()));
            let name = self.unique(format!("{base}.IndexBuild"));
            let g = group(
                name,
                1,
                vec![step("IndexBuild", &key, "command", Toml::Table(cmd))],
            );
            chained(self, g);
        }
        Ok(last)
    }

    /// A Loader's documents: each of its collections' preload, with its indexes.
    fn loader(&mut self, actor: &Actor<'a>, p: usize, cx: &Ctx<'a>) -> Result<(), Refusal> {
        let name = actor.name.as_str();
        let int = |k: &str| -> Result<i64, Refusal> {
            cx.get(k)
                .and_then(number)
                .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                .map(|n| n as i64)
                .ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("Loader needs `{k}` as a whole number"),
                    )
                })
        };
        let count = int("CollectionCount")?;
        let documents = int("DocumentCount")?;
        let database = cx
            .get("Database")
            .and_then(scalar_text)
            .ok_or_else(|| self.refuse(Some(name), Some(p), "Loader needs `Database`"))?;
        let document = match cx.get("Document").map(to_toml) {
            Some(Toml::Table(t)) => t,
            _ => {
                return Err(self.refuse(Some(name), Some(p), "Loader needs a `Document` template"))
            }
        };
        let mut indexes = Vec::new();
        if let Some(list) = cx.get("Indexes").and_then(Yaml::as_sequence) {
            for i in list {
                // genny's: `key`, its name `field_value_...` unless the options name it.
                let keys = i
                    .get("keys")
                    .map(to_toml)
                    .unwrap_or(Toml::Table(Default::default()));
                let name = keys
                    .as_table()
                    .map(|k| {
                        k.iter()
                            .map(|(f, v)| {
                                format!(
                                    "{f}_{}",
                                    match v {
                                        Toml::String(s) => s.clone(),
                                        other => other.to_string(),
                                    }
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("_")
                    })
                    .unwrap_or_default();
                let mut t = toml::Table::new();
                t.insert("key".into(), keys);
                t.insert("name".into(), Toml::String(name));
                if let Some(Toml::Table(o)) = i.get("options").map(to_toml) {
                    t.extend(o);
                }
                indexes.push(Toml::Table(t));
            }
        }
        // genny's Loader: with MultipleThreadsPerCollection, the actor's threads share the
        // collections (thread % CollectionCount) and each collection gets DocumentCount; else
        // each thread loads CollectionCount / Threads (the phase's) collections from
        // numCollections x thread, the phase's last thread the remainder too.
        let multiple = cx
            .get("MultipleThreadsPerCollection")
            .and_then(Yaml::as_bool)
            .unwrap_or(false);
        // Per thread, its collections, loaded one after another (each after the one before).
        let mut loads: Vec<Vec<i64>> = Vec::new();
        if multiple {
            loads.extend((0..count.min(i64::from(actor.threads))).map(|c| vec![c]));
        } else {
            let phase_threads = cx
                .phase
                .get("Threads")
                .and_then(number)
                .map_or(i64::from(actor.threads), |n| n as i64)
                .max(1);
            let per = count / phase_threads;
            for t in 0..i64::from(actor.threads) {
                let n = per
                    + if t == phase_threads - 1 {
                        count % phase_threads
                    } else {
                        0
                    };
                if n > 0 {
                    loads.push((per * t..per * t + n).collect());
                }
            }
        }
        let batch = int("BatchSize")?;
        let one = loads.iter().map(Vec::len).sum::<usize>() == 1;
        for thread in loads {
            let mut after = None;
            for i in thread {
                let load = Load {
                    documents,
                    batch,
                    document: document.clone(),
                    indexes: indexes.clone(),
                };
                after = self.load(
                    name,
                    p,
                    &database,
                    &format!("Collection{i}"),
                    load,
                    one,
                    after,
                )?;
            }
        }
        Ok(())
    }
}

/// A step table: its row's name, collection and operation.
fn step(row: &str, collection: &str, verb: &str, args: Toml) -> toml::Table {
    let mut s = toml::Table::new();
    s.insert("name".into(), Toml::String(row.replace([':', '@'], "_")));
    s.insert("collection".into(), Toml::String(collection.to_string()));
    s.insert(verb.into(), args);
    s
}

/// Steps of one group need distinct rows: a repeated name gets `.2`, `.3`, ...
fn dedupe_names(steps: &mut [toml::Table]) {
    let mut seen = std::collections::HashMap::<String, u32>::new();
    for s in steps {
        let Some(Toml::String(n)) = s.get("name").cloned() else {
            continue;
        };
        let k = seen.entry(n.clone()).or_insert(0);
        *k += 1;
        if *k > 1 {
            s.insert("name".into(), Toml::String(format!("{n}.{k}")));
        }
    }
}

/// genny's `getPlural`: `Operation` (one) or `Operations` (a list).
fn plural<'y>(node: &'y Yaml, one: &str, many: &str) -> Option<Vec<&'y Yaml>> {
    if let Some(o) = node.get(one) {
        return Some(vec![o]);
    }
    node.get(many)?.as_sequence().map(|s| s.iter().collect())
}

fn ops_len(node: &Yaml) -> usize {
    plural(node, "Operation", "Operations").map_or(0, |v| v.len())
}

/// A number, as YAML or as text (`1e4`).
pub(crate) fn number(v: &Yaml) -> Option<f64> {
    match v {
        Yaml::Number(n) => n.as_f64(),
        Yaml::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn scalar_text(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn show(v: &Yaml) -> String {
    serde_yaml::to_string(v)
        .map(|s| s.trim().replace('\n', " "))
        .unwrap_or_else(|_| "?".into())
}

/// genny's durations: `10 milliseconds`, `1 minute`, `2 seconds`; a bare number is milliseconds.
pub(crate) fn duration(v: &Yaml) -> Option<Duration> {
    if let Some(n) = number(v) {
        return (n >= 0.0).then(|| Duration::from_secs_f64(n / 1000.0));
    }
    let text = scalar_text(v)?;
    let mut parts = text.split_whitespace();
    let n: f64 = parts.next()?.parse().ok()?;
    let unit = parts.next()?.trim_end_matches('s');
    if parts.next().is_some() || n < 0.0 {
        return None;
    }
    let secs = match unit {
        "nanosecond" => n / 1e9,
        "microsecond" => n / 1e6,
        "millisecond" => n / 1e3,
        "second" => n,
        "minute" => n * 60.0,
        "hour" => n * 3600.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

/// `N per T` (`500 per 1 second`, `1 per 2 milliseconds`): operations per second.
pub(crate) fn global_rate(text: &str) -> Option<f64> {
    let (n, per) = text.split_once(" per ")?;
    let n: f64 = n.trim().parse().ok()?;
    let per = duration(&Yaml::String(per.trim().to_string()))?;
    (n > 0.0 && !per.is_zero()).then(|| n / per.as_secs_f64())
}

/// genny's write concern (`Level: majority`, `Level: 1`, `Journal`, `TimeoutMillis`/`Timeout`).
fn write_concern(v: &Yaml) -> Option<Toml> {
    let level = v.get("Level")?;
    let mut t = toml::Table::new();
    let w = match level {
        Yaml::String(s) if s == "majority" => Toml::String("majority".into()),
        other => Toml::Integer(number(other).filter(|n| *n >= 0.0 && n.fract() == 0.0)? as i64),
    };
    t.insert("w".into(), w);
    if let Some(j) = v.get("Journal").and_then(Yaml::as_bool) {
        t.insert("j".into(), Toml::Boolean(j));
    }
    if let Some(d) = v
        .get("Timeout")
        .or_else(|| v.get("TimeoutMillis"))
        .and_then(duration)
    {
        t.insert(
            "wtimeout".into(),
            Toml::String(humantime::format_duration(d).to_string()),
        );
    }
    Some(Toml::Table(t))
}

/// A command as written: TOML writes a table's plain values before its tables, which would
/// make `{explain: {...}, verbosity: ...}` a command named `verbosity`; such a command is
/// written as a string of JSON, whose order is kept. (Only commands: another operation's
/// arguments stay a table, so a refusal points into them; their documents' fields may move.)
fn in_order(doc: Toml) -> Toml {
    fn kept(v: &Toml) -> bool {
        let is_table = |v: &Toml| match v {
            Toml::Table(_) => true,
            Toml::Array(a) => !a.is_empty() && a.iter().all(Toml::is_table),
            _ => false,
        };
        match v {
            Toml::Table(t) => {
                let first_plain = t.values().position(|v| !is_table(v));
                let last_table = t.values().rposition(is_table);
                !matches!((last_table, first_plain), (Some(a), Some(b)) if a < b)
                    && t.values().all(kept)
            }
            Toml::Array(a) => a.iter().all(kept),
            _ => true,
        }
    }
    if kept(&doc) {
        return doc;
    }
    match serde_json::to_string(&doc) {
        Ok(json) => Toml::String(json),
        Err(_) => doc,
    }
}

/// genny's `ReadPreference` (`ReadMode`, `MaxStaleness`) as the group's `read_preference`.
fn read_preference(v: &Yaml) -> Option<Toml> {
    let mode = v.get("ReadMode")?.as_str()?;
    crate::plan::ReadPref::from_name(mode)?;
    let Some(stale) = v.get("MaxStaleness") else {
        return Some(Toml::String(mode.into()));
    };
    let mut t = toml::Table::new();
    t.insert("mode".into(), Toml::String(mode.into()));
    t.insert(
        "maxStalenessSeconds".into(),
        Toml::Integer(duration(stale)?.as_secs() as i64),
    );
    Some(Toml::Table(t))
}

/// A YAML value as the templates read it: null is `^Null`, keys are text, numbers keep their
/// kind (a whole number written as `1e4` stays a float, as genny's YAML reads it).
pub(crate) fn to_toml(v: &Yaml) -> Toml {
    match v {
        Yaml::Null => {
            let mut t = toml::Table::new();
            t.insert("^Null".into(), Toml::Table(Default::default()));
            Toml::Table(t)
        }
        Yaml::Bool(b) => Toml::Boolean(*b),
        Yaml::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Toml::Integer(i),
            (None, Some(f)) => Toml::Float(f),
            _ => Toml::Float(f64::NAN),
        },
        Yaml::String(s) => Toml::String(s.clone()),
        Yaml::Sequence(s) => Toml::Array(s.iter().map(to_toml).collect()),
        Yaml::Mapping(m) => Toml::Table(
            m.iter()
                .map(|(k, v)| (scalar_text(k).unwrap_or_else(|| show(k)), to_toml(v)))
                .collect(),
        ),
        Yaml::Tagged(t) => to_toml(&t.value),
    }
}

#[cfg(test)]
mod tests;
