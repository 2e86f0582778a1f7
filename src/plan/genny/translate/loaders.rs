//! genny's loaders (Loader, MonotonicLoader, MonotonicSingleLoader): each loader thread a
//! group that loads its collections in turn (`collections_in_turn`), batches then indexes, as
//! genny's thread does (`src/cast_core/src/Loader.cpp`).

use super::*;

impl<'a> Translator<'a> {
    /// A MonotonicSingleLoader's documents: `DocumentCount` in one collection, shared by its
    /// threads, as the collection's preload.
    pub(super) fn single_loader(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
    ) -> Result<(), Refusal> {
        let name = actor.name.as_str();
        let documents = cx
            .get("DocumentCount")
            .and_then(number)
            .filter(|n| *n >= 0.0 && n.fract() == 0.0)
            .map(crate::num::whole_signed)
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
            .map_or(1000, |n| crate::num::whole_signed(n.trunc()));
        let load = Load {
            documents,
            batch,
            document,
            indexes: Vec::new(),
        };
        self.load(name, p, &database, &[coll], load, name.to_string())
    }

    /// A name no group has yet: `base`, else `base.2`, `base.3`, ...
    pub(super) fn unique(&mut self, base: String) -> String {
        if self.names.insert(base.clone()) {
            return base;
        }
        let mut n = 2;
        while !self.names.insert(format!("{base}.{n}")) {
            n += 1;
        }
        format!("{base}.{n}")
    }

    /// One loader thread's collections `colls` of `database`, loaded with `load` in phase `p`
    /// as genny's thread loads them: a group of one user whose operation n loads its n-th
    /// collection (`collections_in_turn`), each operation inserts of `batch` documents
    /// (`IndividualBulkInsert`, a step sent `DocumentCount / BatchSize` times), the last the
    /// remainder, then its indexes (`IndexBuild`, a `createIndexes` of the collection);
    /// `--smoke`: one batch of the first collection.
    pub(super) fn load(
        &mut self,
        actor: &str,
        p: usize,
        database: &str,
        colls: &[String],
        load: Load,
        name: String,
    ) -> Result<(), Refusal> {
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
        let keys: Vec<String> = colls.iter().map(|c| self.collection(database, c)).collect();
        let Some(first) = keys.first().cloned() else {
            return Ok(());
        };
        let (full, rest) = (load.documents / batch, load.documents % batch);
        let smoke = self.smoke;
        let insert = |n: i64, times: i64| {
            let mut a = toml::Table::new();
            a.insert("document".into(), Toml::Table(load.document.clone()));
            a.insert("batch".into(), Toml::Integer(n));
            let mut s = step("IndividualBulkInsert", &first, "insertMany", Toml::Table(a));
            s.insert(
                "metric".into(),
                Toml::String(format!("{actor}.IndividualBulkInsert")),
            );
            if times > 1 {
                s.insert("repeat".into(), Toml::Integer(times));
            }
            s
        };
        let mut steps = Vec::new();
        if full > 0 {
            steps.push(insert(batch, if smoke { 1 } else { full }));
        }
        if rest > 0 && !(smoke && full > 0) {
            // The remainder: a row of its own (`IndividualBulkInsert.2`), one metric with
            // the full batches'.
            let mut s = insert(rest, 1);
            if full > 0 {
                s.insert("name".into(), Toml::String("IndividualBulkInsert.2".into()));
            }
            steps.push(s);
        }
        if !load.indexes.is_empty() {
            // The first collection's name: the operation's own is sent in its place.
            let mut cmd = toml::Table::new();
            cmd.insert("createIndexes".into(), Toml::String(colls[0].clone()));
            cmd.insert("indexes".into(), Toml::Array(load.indexes.clone()));
            let mut s = step("IndexBuild", &first, "command", Toml::Table(cmd));
            s.insert("metric".into(), Toml::String(format!("{actor}.IndexBuild")));
            steps.push(s);
        }
        if steps.is_empty() {
            return Ok(());
        }
        let loops = if smoke { 1 } else { keys.len() };
        let mut g = toml::Table::new();
        g.insert("name".into(), Toml::String(self.unique(name)));
        g.insert("stage".into(), Toml::String(format!("phase{p}")));
        g.insert("threads".into(), Toml::Integer(1));
        g.insert("loops".into(), Toml::Integer(crate::num::signed(loops)));
        // A whole collection in one operation: the operation timeout once per batch sent, as
        // when each batch was an operation of its own (genny bounds none).
        g.insert("op_timeout_per_step".into(), Toml::Boolean(true));
        if keys.len() > 1 {
            g.insert(
                "collections".into(),
                Toml::Array(keys.into_iter().map(Toml::String).collect()),
            );
            g.insert("collections_in_turn".into(), Toml::Boolean(true));
        } else {
            g.insert("collection".into(), Toml::String(first));
        }
        g.insert(
            "steps".into(),
            Toml::Array(steps.into_iter().map(Toml::Table).collect()),
        );
        self.groups.push(g);
        Ok(())
    }

    /// A Loader's documents: each of its collections' preload, with its indexes.
    pub(super) fn loader(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
    ) -> Result<(), Refusal> {
        let name = actor.name.as_str();
        let int = |k: &str| -> Result<i64, Refusal> {
            cx.get(k)
                .and_then(number)
                .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                .map(crate::num::whole_signed)
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
        let indexes = loader_indexes(cx.get("Indexes"));
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
                .map_or(i64::from(actor.threads), |n| {
                    crate::num::whole_signed(n.trunc())
                })
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
        let several = loads.len() > 1;
        for thread in loads {
            let colls: Vec<String> = thread.iter().map(|i| format!("Collection{i}")).collect();
            let group = match (several, colls.first()) {
                (true, Some(c)) => format!("{name}.{c}"),
                _ => name.to_string(),
            };
            let load = Load {
                documents,
                batch,
                document: document.clone(),
                indexes: indexes.clone(),
            };
            self.load(name, p, &database, &colls, load, group)?;
        }
        Ok(())
    }
}

/// A Loader's `Indexes`, as genny makes them: `keys`, named `field_value_...` unless its
/// `options` name it.
fn loader_indexes(list: Option<&Yaml>) -> Vec<Toml> {
    let mut indexes = Vec::new();
    for i in list.and_then(Yaml::as_sequence).into_iter().flatten() {
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
    indexes
}
