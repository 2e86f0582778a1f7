//! genny's CollectionScanner (`src/cast_core/src/CollectionScanner.cpp`) with generated
//! collection names: each thread's collections (`distributeCollectionNames`), in each of the
//! actor's databases, sorted and skipped as `collectionsFromNameList` does, each scanned in turn
//! (`find` with the filter and `FindOptions`, or `aggregate` of `AggregatePipeline` with
//! `AggregateOptions`, each cursor read to its end; or `countDocuments`), one step per
//! collection; the whole scan one operation, the group's row, genny's `Scan` metric.
//! `snapshot` runs it in a transaction at read concern snapshot. What it does not read yet is
//! refused by name.

use super::*;

/// `FindOptions` keys read, and the find argument each is.
const FIND_OPTIONS: [(&str, &str); 7] = [
    ("Sort", "sort"),
    ("Hint", "hint"),
    ("Limit", "limit"),
    ("Skip", "skip"),
    ("BatchSize", "batchSize"),
    ("MaxTime", "maxTimeMS"),
    ("Collation", "collation"),
];

/// `AggregateOptions` keys read, and the aggregate argument each is.
const AGGREGATE_OPTIONS: [(&str, &str); 4] = [
    ("AllowDiskUse", "allowDiskUse"),
    ("BatchSize", "batchSize"),
    ("MaxTime", "maxTimeMS"),
    ("Hint", "hint"),
];

impl<'a> Translator<'a> {
    pub(super) fn collection_scanner(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
        g: toml::Table,
    ) -> Result<(), Refusal> {
        let name = actor.name.as_str();
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        let (databases, count) = self.scanner_actor(actor, p)?;
        let threads = u64::from(actor.threads);
        // genny's `distributeCollectionNames` throws unless the collections divide evenly
        // among the threads (and so whenever the threads outnumber them).
        if count % threads != 0 {
            return Err(refuse(self, format!("{threads} threads do not divide {count} collections evenly (genny refuses it too)")));
        }
        let per = count / threads;
        let dbs = u64::try_from(databases.len()).unwrap_or(u64::MAX);
        if per * threads * dbs > MAX_COLLECTIONS {
            return Err(refuse(self, format!("`CollectionCount: {count}` spreads it over more than the {MAX_COLLECTIONS} collections the tool reads of a genny workload")));
        }
        let phase = cx.phase;
        let (scan_type, verb, args) = self.scan_request(name, p, phase, per * dbs)?;
        let order = phase
            .get("CollectionSortOrder")
            .and_then(scalar_text)
            .map(|s| s.to_lowercase())
            .unwrap_or_else(|| "none".into());
        let skip = phase
            .get("CollectionSkip")
            .and_then(number)
            .map_or(0, |n| crate::num::whole_len(n.max(0.0)));
        if !["none", "forward", "reverse"].contains(&order.as_str()) {
            return Err(refuse(
                self,
                format!("`CollectionSortOrder: {order}` is not one of none, forward, reverse"),
            ));
        }
        if skip != 0 && order == "none" {
            return Err(refuse(self, "a non-zero `CollectionSkip` requires a `CollectionSortOrder` (genny refuses it too)".into()));
        }
        let group_name = g
            .get("name")
            .and_then(Toml::as_str)
            .unwrap_or(name)
            .to_string();
        let metric = genny_metric(
            name,
            Scope::Phase("Scan"),
            phase.get("MetricsName").and_then(scalar_text).as_deref(),
            p,
        );
        for t in 0..threads {
            // distributeCollectionNames: thread t's `per` collections from `(t % count) x per`.
            let start = (t % count) * per;
            let names = sort_and_skip(
                (start..start + per)
                    .map(|k| format!("Collection{k}"))
                    .collect(),
                &order,
                skip,
            );
            let mut steps = Vec::new();
            for db in &databases {
                for c in &names {
                    let key = self.collection(db, c);
                    let row = if databases.len() > 1 {
                        format!("{db}.{c}")
                    } else {
                        c.clone()
                    };
                    let mut s = step(&row, &key, verb, Toml::Table(args.clone()));
                    // genny counts a collection that fails (dropped under it) in
                    // `ExceptionsCaught` and scans the next.
                    s.insert("on_error".into(), Toml::String("record".into()));
                    steps.push(s);
                }
            }
            if steps.is_empty() {
                return Err(refuse(
                    self,
                    format!("`CollectionSkip: {skip}` leaves thread {t} nothing to scan"),
                ));
            }
            let mut one = self.share(&g, &group_name, (threads > 1).then_some(start), 1, threads);
            one.insert("collection".into(), steps[0]["collection"].clone());
            if scan_type == "snapshot" {
                one.insert("transaction".into(), Toml::Boolean(true));
                one.insert("read_concern".into(), Toml::String("snapshot".into()));
            }
            one.insert("metric".into(), Toml::String(metric.clone()));
            one.insert(
                "steps".into(),
                Toml::Array(steps.into_iter().map(Toml::Table).collect()),
            );
            self.groups.push(one);
        }
        self.notes.push(format!(
            "{name} (CollectionScanner): a scan of the thread's collections is one operation, its group's row ({metric}); a collection that fails counts on its step's row, and the scan goes on (genny's ExceptionsCaught)"
        ));
        Ok(())
    }

    /// The actor's own keys (genny reads them from the actor, never from a phase): its
    /// databases (`Database`, comma-separated) and `CollectionCount`.
    fn scanner_actor(&self, actor: &Actor<'a>, p: usize) -> Result<(Vec<String>, u64), Refusal> {
        let name = actor.name.as_str();
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        let own = |k: &str| actor.node.get(k);
        if own("ScanRateMegabytes").is_some() {
            return Err(refuse(self, "CollectionScanner's `ScanRateMegabytes` (a rate in megabytes scanned, shared by every scanner) is not read yet".into()));
        }
        if own("GenerateCollectionNames").and_then(Yaml::as_bool) != Some(true) {
            return Err(refuse(self, "CollectionScanner without `GenerateCollectionNames: true` lists the collections at each scan (listCollections), which the tool does not read yet".into()));
        }
        let databases: Vec<String> = own("Database")
            .and_then(scalar_text)
            .map(|d| {
                d.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .filter(|d: &Vec<String>| !d.is_empty())
            .ok_or_else(|| refuse(self, "CollectionScanner needs `Database`".into()))?;
        let count = own("CollectionCount")
            .and_then(number)
            .filter(|n| *n >= 1.0 && n.fract() == 0.0)
            .map(crate::num::whole)
            .ok_or_else(|| refuse(self, "CollectionScanner with `GenerateCollectionNames` needs `CollectionCount`, a whole number from 1".into()))?;
        Ok((databases, count))
    }

    /// What one collection's scan sends: the scan type, the step's verb and its arguments.
    fn scan_request(
        &self,
        name: &str,
        p: usize,
        phase: &Yaml,
        collections: u64,
    ) -> Result<(String, &'static str, toml::Table), Refusal> {
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        for key in [
            "SelectClusterTimeOnly",
            "ScanDuration",
            "ScanContinuous",
            "ScanSizeBytes",
        ] {
            if phase.get(key).is_some_and(|v| v.as_bool() != Some(false)) {
                return Err(refuse(
                    self,
                    format!("CollectionScanner's `{key}` is not read yet"),
                ));
            }
        }
        let scan_type = phase
            .get("ScanType")
            .and_then(scalar_text)
            .map(|s| s.to_lowercase())
            .ok_or_else(|| refuse(self, "CollectionScanner needs `ScanType` (count, standard, snapshot or point-in-time)".into()))?;
        let pipeline = match phase.get("AggregatePipeline") {
            None => None,
            Some(a) => Some(a.get("array").filter(|s| s.is_sequence()).ok_or_else(|| {
                refuse(self, "`AggregatePipeline` is `{array: [stages]}`".into())
            })?),
        };
        let filter = phase.get("Filter");
        if pipeline.is_some() && filter.is_some() {
            return Err(refuse(
                self,
                "only one of `Filter` and `AggregatePipeline` can be set (genny refuses both)"
                    .into(),
            ));
        }
        let documents = phase
            .get("Documents")
            .and_then(number)
            .filter(|n| *n > 0.0 && n.fract() == 0.0)
            .map(crate::num::whole_signed);
        // genny counts `Documents` only in a find or aggregate scan (a count scan ignores it).
        let documents = documents.filter(|_| scan_type != "count");
        if documents.is_some() && (collections > 1 || pipeline.is_some()) {
            return Err(refuse(self, "CollectionScanner's `Documents` over several collections, or with `AggregatePipeline`, is not read yet (one collection's find reads it as its limit)".into()));
        }
        let (verb, args) = match scan_type.as_str() {
            "count" => {
                let mut a = toml::Table::new();
                a.insert("filter".into(), filter.map_or(Toml::Table(Default::default()), to_toml));
                ("countDocuments", a)
            }
            "standard" | "snapshot" => match pipeline {
                Some(stages) => {
                    let mut a = self.scan_options(name, p, phase, "AggregateOptions", &AGGREGATE_OPTIONS)?;
                    a.insert("pipeline".into(), to_toml(stages));
                    ("aggregate", a)
                }
                None => {
                    let mut a = self.scan_options(name, p, phase, "FindOptions", &FIND_OPTIONS)?;
                    a.insert("filter".into(), filter.map_or(Toml::Table(Default::default()), to_toml));
                    // genny stops at `Documents` read, or where the find's own limit ends the
                    // cursor: the smaller.
                    if let Some(d) = documents {
                        let limit = a.get("limit").and_then(Toml::as_integer).map_or(d, |l| l.min(d));
                        a.insert("limit".into(), Toml::Integer(limit));
                    }
                    ("find", a)
                }
            },
            "point-in-time" => {
                return Err(refuse(self, "CollectionScanner's `ScanType: point-in-time` (reads at a cluster time an earlier phase took) is not read yet".into()))
            }
            other => return Err(refuse(self, format!("`ScanType: {other}` is not one of count, standard, snapshot, point-in-time"))),
        };
        Ok((scan_type, verb, args))
    }

    /// `FindOptions`/`AggregateOptions` as the step's arguments (genny's `OptionsConversion`);
    /// `Comment` left out (it changes no work), anything else refused.
    fn scan_options(
        &self,
        name: &str,
        p: usize,
        phase: &Yaml,
        key: &str,
        read: &[(&str, &str)],
    ) -> Result<toml::Table, Refusal> {
        let mut out = toml::Table::new();
        let Some(options) = phase.get(key) else {
            return Ok(out);
        };
        for (k, v) in options.as_mapping().into_iter().flatten() {
            let k = scalar_text(k).unwrap_or_default();
            if k == "Comment" {
                continue;
            }
            let Some((_, ours)) = read.iter().find(|(g, _)| *g == k) else {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    format!(
                        "`{key}.{k}` is not read yet (the tool reads {})",
                        read.iter().map(|(g, _)| *g).collect::<Vec<_>>().join(", ")
                    ),
                ));
            };
            let value = if k == "MaxTime" {
                let d = duration(v).ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("`{key}.MaxTime` is not a duration"),
                    )
                })?;
                Toml::Integer(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            } else {
                to_toml(v)
            };
            out.insert((*ours).to_string(), value);
        }
        Ok(out)
    }
}

/// `collectionsFromNameList`: the names sorted (`forward`: by their bytes, `reverse`: the
/// other way, `none`: as they are), then the first `skip` left out.
fn sort_and_skip(mut names: Vec<String>, order: &str, skip: usize) -> Vec<String> {
    match order {
        "forward" => names.sort(),
        "reverse" => names.sort_by(|a, b| b.cmp(a)),
        _ => {}
    }
    names.into_iter().skip(skip).collect()
}
