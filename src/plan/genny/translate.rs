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

mod groups;

mod crud;

mod loaders;

mod sampling;

mod scanner;

mod yaml;
use yaml::*;

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
    /// No phase sends anything (every actor's phases are `Nop`, or it only logs): the profile
    /// has no group, and the workload ends at once, as genny's does.
    pub(crate) idle: bool,
}

/// Actor types read, in the order docs/genny.md lists them.
pub(crate) const ACTORS: [&str; 19] = [
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
    "RandomSampler",
    "AssertiveActor",
    "CollectionScanner",
    "SamplingLoader",
];

/// The server's `maxWriteBatchSize`: the most documents one insert command carries.
const MAX_WRITE_BATCH: i64 = 100_000;

/// Most groups a workload may make (each has its rows and histograms).
const MAX_GROUPS: usize = 5000;

/// Most collections one actor may spread its operations over (genny's scale workloads use
/// 10,000; `validate` of such a plan takes a few seconds).
const MAX_COLLECTIONS: u64 = 20_000;

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
        last_group: std::collections::HashMap::new(),
        coll_index: std::collections::HashMap::new(),
        coll_names: std::collections::HashSet::new(),
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
                "it makes {} groups (a group per actor and phase, per thread of a loader or scanner), more than the {MAX_GROUPS} the tool reads of a genny workload",
                t.groups.len()
            ),
        ));
    }
    // genny runs a workload whose every phase is `Nop` (the disabled TPC-H queries, the
    // LoggingActor's example): it ends at once, having sent nothing. So does the tool.
    let idle = t.groups.is_empty();
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
    Ok(Translated {
        profile,
        notes,
        idle,
    })
}

struct Translator<'a> {
    file: String,
    top: &'a Yaml,
    smoke: bool,
    collections: Vec<Coll>,
    groups: Vec<toml::Table>,
    notes: Vec<String>,
    names: BTreeSet<String>,
    /// Each actor's group of its latest phase read so far (a CrudActor's `Continue`).
    last_group: std::collections::HashMap<String, String>,
    /// `collections` by (database, name), and how many share each name.
    coll_index: std::collections::HashMap<(String, String), usize>,
    coll_names: std::collections::HashSet<String>,
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
        // genny adds `Default` and `Stream` (a `mongostream` client, for Atlas stream
        // processing) to every workload: only the `mongo` pools are the workload's load.
        let clients: Vec<&Yaml> = self
            .top
            .get("Clients")?
            .as_mapping()?
            .values()
            .filter(|c| {
                c.get("Type")
                    .and_then(Yaml::as_str)
                    .is_none_or(|t| t == "mongo")
            })
            .collect();
        let sizes: Vec<u32> = clients
            .iter()
            .filter_map(|c| c.get("QueryOptions")?.get("maxPoolSize"))
            .filter_map(number)
            .filter_map(|n| u32::try_from(crate::num::whole(n.trunc())).ok())
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
                .map(|n| u32::try_from(crate::num::whole(n)).unwrap_or(u32::MAX))
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
                match did_you_mean(&kind, &ACTORS) {
                    Some(near) => format!("actor type `{kind}` is not one genny has: did you mean `{near}`?"),
                    None => format!(
                        "actor type `{kind}` is not one the tool runs (docs/genny.md lists the {} it does)",
                        ACTORS.len()
                    ),
                },
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
            return Ok(vec![crate::num::whole_len(n)]);
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
        let at = (database.to_string(), name.to_string());
        if let Some(&i) = self.coll_index.get(&at) {
            return self.collections[i].key.clone();
        }
        let key = if self.coll_names.insert(name.to_string()) {
            name.to_string()
        } else {
            format!("{database}.{name}")
        };
        self.coll_index.insert(at, self.collections.len());
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
}

#[cfg(test)]
mod tests;
