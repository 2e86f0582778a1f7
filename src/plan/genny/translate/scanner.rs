//! genny's CollectionScanner (`src/cast_core/src/CollectionScanner.cpp`) as one `scan` step
//! per thread: with `GenerateCollectionNames`, the thread's collections
//! (`distributeCollectionNames`), else every collection `listCollections` names at each scan;
//! in each of the actor's databases, sorted and skipped as `collectionsFromNameList` does,
//! each read in turn (`find` with the filter and `FindOptions`, or `aggregate` of
//! `AggregatePipeline` with `AggregateOptions`, each cursor read to its end, until `Documents`
//! or `ScanSizeBytes`; or `countDocuments`); the whole scan one operation, the group's row,
//! genny's `Scan` metric. `snapshot` runs it in a transaction at read concern snapshot, held
//! `ScanDuration` (`ScanContinuous`: scanning again); `ScanRateMegabytes` is the run's one
//! limiter of megabytes scanned. `SelectClusterTimeOnly` keeps each thread's cluster time (a
//! `clusterTime` step), which its `point-in-time` scans read at (the scan's `at`).

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
        let (databases, generated, megabytes) = self.scanner_actor(actor, p)?;
        let threads = u64::from(actor.threads);
        let per = match generated {
            None => None,
            Some(count) => Some((
                count,
                self.per_thread(name, p, count, threads, databases.len())?,
            )),
        };
        let phase = cx.phase;
        let (scan_type, mut args) = self.scan_request(name, p, phase)?;
        // A point-in-time scan reads the names as they are (genny sorts and skips only the
        // others).
        let in_time = scan_type == "point-in-time" || scan_type == "cluster-time";
        let skip = if in_time {
            0
        } else {
            self.scan_order(name, p, phase, &mut args)?
        };
        if let Some(m) = &megabytes {
            // genny paces only find and aggregate scans (a count reads no documents).
            if scan_type == "standard" || scan_type == "snapshot" {
                args.insert("megabytes".into(), Toml::String(m.clone()));
            }
        }
        if databases.len() > 1 && scan_type != "cluster-time" {
            args.insert(
                "databases".into(),
                Toml::Array(databases.iter().cloned().map(Toml::String).collect()),
            );
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
        // With generated names each thread scans its own collections: a group each. Without,
        // every thread scans every listed collection: one group of the actor's threads.
        let groups = if per.is_some() { threads } else { 1 };
        for t in 0..groups {
            let mut scan = args.clone();
            let (handle, start) = match per {
                Some((count, per)) => {
                    // distributeCollectionNames: thread t's `per` collections from
                    // `(t % count) x per`; the same names in each database.
                    let start = (t % count) * per;
                    let names: Vec<String> = (start..start + per)
                        .map(|k| format!("Collection{k}"))
                        .collect();
                    if skip >= names.len() {
                        return Err(refuse(
                            self,
                            format!("`CollectionSkip: {skip}` leaves thread {t} nothing to scan"),
                        ));
                    }
                    let handle = self.collection(&databases[0], &names[0]);
                    scan.insert(
                        "collections".into(),
                        Toml::Array(names.into_iter().map(Toml::String).collect()),
                    );
                    (handle, (threads > 1).then_some(start))
                }
                None => (self.database_handle(&databases[0]), None),
            };
            let mut one = if per.is_some() {
                self.share(&g, &group_name, start, 1, threads)
            } else {
                g.clone()
            };
            one.insert("collection".into(), Toml::String(handle.clone()));
            if scan_type == "snapshot" {
                one.insert("transaction".into(), Toml::Boolean(true));
                one.insert("read_concern".into(), Toml::String("snapshot".into()));
            }
            // Each thread's cluster time, kept and read under its own name.
            let kept = match start {
                Some(s) => format!("{name}.{s}"),
                None => name.to_string(),
            };
            if scan_type == "cluster-time" {
                // genny's iteration sleeps a second, then takes the time; it records no metric
                // (here the group's row is that time taken, in no metric).
                one.entry("sleep_before")
                    .or_insert_with(|| Toml::String("1s".into()));
                let mut keep = toml::Table::new();
                keep.insert("keep".into(), Toml::String(kept));
                let s = step("ClusterTime", &handle, "clusterTime", Toml::Table(keep));
                one.insert("steps".into(), Toml::Array(vec![Toml::Table(s)]));
                self.groups.push(one);
                continue;
            }
            if scan_type == "point-in-time" {
                scan.insert("at".into(), Toml::String(kept));
            }
            one.insert("metric".into(), Toml::String(metric.clone()));
            let mut s = step("Scan", &handle, "scan", Toml::Table(scan));
            // genny counts a collection that fails (dropped under it) in
            // `ExceptionsCaught`, and the scan goes on.
            s.insert("on_error".into(), Toml::String("record".into()));
            one.insert("steps".into(), Toml::Array(vec![Toml::Table(s)]));
            self.groups.push(one);
        }
        self.scanner_note(name, p, &scan_type, &metric, per.is_some());
        Ok(())
    }

    /// What the scanner's phase became, said as a note.
    fn scanner_note(
        &mut self,
        name: &str,
        p: usize,
        scan_type: &str,
        metric: &str,
        generated: bool,
    ) {
        let whose = if generated {
            "the thread's collections"
        } else {
            "every collection listCollections names, at each scan,"
        };
        self.notes.push(match scan_type {
            "cluster-time" => format!("{name} (CollectionScanner), phase {p}: each thread sleeps a second and keeps a ping's cluster time for its point-in-time scans (`SelectClusterTimeOnly`); its row is in no metric, as genny records none"),
            "point-in-time" => format!("{name} (CollectionScanner), phase {p}: a point-in-time scan of {whose} is one operation, its group's row ({metric}); genny's metric counts each find and getMore apart"),
            _ => format!("{name} (CollectionScanner): a scan of {whose} is one operation, its group's row ({metric}); a collection that fails is an error of the scan, which goes on to the next (genny's ExceptionsCaught)"),
        });
    }

    /// With generated names, each thread's share of the `count` collections.
    fn per_thread(
        &self,
        name: &str,
        p: usize,
        count: u64,
        threads: u64,
        databases: usize,
    ) -> Result<u64, Refusal> {
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        // genny's `distributeCollectionNames` throws unless the collections divide evenly
        // among the threads (and so whenever the threads outnumber them).
        if !count.is_multiple_of(threads) {
            return Err(refuse(self, format!("{threads} threads do not divide {count} collections evenly (genny refuses it too)")));
        }
        let per = count / threads;
        let dbs = u64::try_from(databases).unwrap_or(u64::MAX);
        if per * threads * dbs > MAX_COLLECTIONS {
            return Err(refuse(self, format!("`CollectionCount: {count}` spreads it over more than the {MAX_COLLECTIONS} collections the tool reads of a genny workload")));
        }
        Ok(per)
    }

    /// `CollectionSortOrder` and `CollectionSkip` as the scan's `order` and `skip`; the skip.
    fn scan_order(
        &self,
        name: &str,
        p: usize,
        phase: &Yaml,
        args: &mut toml::Table,
    ) -> Result<usize, Refusal> {
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
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
        if order != "none" {
            args.insert("order".into(), Toml::String(order.clone()));
        }
        if skip != 0 {
            args.insert(
                "skip".into(),
                Toml::Integer(i64::try_from(skip).unwrap_or(i64::MAX)),
            );
        }
        Ok(skip)
    }

    /// The actor's own keys (genny reads them from the actor, never from a phase): its
    /// databases (`Database`, comma-separated), `CollectionCount` when it generates the
    /// names, and `ScanRateMegabytes` as the scan's `megabytes`.
    #[allow(clippy::type_complexity)]
    fn scanner_actor(
        &self,
        actor: &Actor<'a>,
        p: usize,
    ) -> Result<(Vec<String>, Option<u64>, Option<String>), Refusal> {
        let name = actor.name.as_str();
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        let own = |k: &str| actor.node.get(k);
        let megabytes = match own("ScanRateMegabytes") {
            None => None,
            Some(v) => Some(scan_rate(v).ok_or_else(|| {
                refuse(
                    self,
                    "`ScanRateMegabytes` is `N per T` (whole megabytes, `10 per 1 second`)".into(),
                )
            })?),
        };
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
        if own("GenerateCollectionNames").and_then(Yaml::as_bool) != Some(true) {
            return Ok((databases, None, megabytes));
        }
        let count = own("CollectionCount")
            .and_then(number)
            .filter(|n| *n >= 1.0 && n.fract() == 0.0)
            .map(crate::num::whole)
            .ok_or_else(|| refuse(self, "CollectionScanner with `GenerateCollectionNames` needs `CollectionCount`, a whole number from 1".into()))?;
        Ok((databases, Some(count), megabytes))
    }

    /// What a scan sends: the scan type and the `scan` step's arguments (its read, limits and
    /// how long a snapshot scan holds its transaction).
    fn scan_request(
        &self,
        name: &str,
        p: usize,
        phase: &Yaml,
    ) -> Result<(String, toml::Table), Refusal> {
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        if phase.get("SelectClusterTimeOnly").and_then(Yaml::as_bool) == Some(true) {
            return Ok(("cluster-time".into(), toml::Table::new()));
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
        let whole = |k: &str| {
            phase
                .get(k)
                .and_then(number)
                .filter(|n| *n > 0.0 && n.fract() == 0.0)
                .map(crate::num::whole_signed)
        };
        let mut scan = toml::Table::new();
        let mut read = toml::Table::new();
        let filtered = |mut a: toml::Table| {
            let f = filter.map_or(Toml::Table(Default::default()), to_toml);
            a.insert("filter".into(), f);
            Toml::Table(a)
        };
        match (scan_type.as_str(), pipeline) {
            ("count", _) => {
                read.insert("countDocuments".into(), filtered(toml::Table::new()));
            }
            ("standard" | "snapshot", Some(stages)) => {
                let options = ("AggregateOptions", &AGGREGATE_OPTIONS[..]);
                let mut a = self.scan_options(name, p, phase, options.0, options.1)?;
                a.insert("pipeline".into(), to_toml(stages));
                read.insert("aggregate".into(), Toml::Table(a));
            }
            ("standard" | "snapshot", None) => {
                let a = self.scan_options(name, p, phase, "FindOptions", &FIND_OPTIONS)?;
                read.insert("find".into(), filtered(a));
            }
            // genny's command: the filter alone (its `FindOptions` are not sent).
            ("point-in-time", None) => {
                read.insert("find".into(), filtered(toml::Table::new()));
            }
            ("point-in-time", Some(_)) => {
                return Err(refuse(
                    self,
                    "a point-in-time scan sends `find` (genny reads no `AggregatePipeline` there)"
                        .into(),
                ));
            }
            (other, _) => {
                return Err(refuse(
                    self,
                    format!(
                    "`ScanType: {other}` is not one of count, standard, snapshot, point-in-time"
                ),
                ))
            }
        }
        // genny counts `Documents` and `ScanSizeBytes` only in a find or aggregate scan (a
        // count scan ignores them).
        if scan_type != "count" {
            if let Some(d) = whole("Documents") {
                scan.insert("documents".into(), Toml::Integer(d));
            }
            if let Some(b) = whole("ScanSizeBytes") {
                scan.insert("bytes".into(), Toml::Integer(b));
            }
        }
        scan.insert("read".into(), Toml::Table(read));
        self.scan_hold(name, p, phase, &scan_type, &mut scan)?;
        Ok((scan_type, scan))
    }

    /// `ScanDuration` and `ScanContinuous` as the scan's `hold` and `continuous` (none under
    /// `--smoke`, which scans once).
    fn scan_hold(
        &self,
        name: &str,
        p: usize,
        phase: &Yaml,
        scan_type: &str,
        scan: &mut toml::Table,
    ) -> Result<(), Refusal> {
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        let hold = match phase.get("ScanDuration") {
            None => None,
            Some(v) => Some(
                duration(v)
                    .ok_or_else(|| refuse(self, "`ScanDuration` is not a duration".into()))?,
            ),
        };
        let continuous = phase.get("ScanContinuous").and_then(Yaml::as_bool) == Some(true);
        // genny's own checks (CollectionScanner.cpp, PhaseConfig).
        if hold.is_some() && scan_type != "snapshot" {
            return Err(refuse(
                self,
                "`ScanDuration` is only for `ScanType: snapshot` (genny refuses it too)".into(),
            ));
        }
        if continuous && hold.is_none() {
            return Err(refuse(
                self,
                "`ScanContinuous` needs `ScanDuration` (genny refuses it too)".into(),
            ));
        }
        // `--smoke` scans once: no transaction held open.
        let hold = hold.filter(|_| !self.smoke);
        if let Some(h) = hold {
            scan.insert(
                "hold".into(),
                Toml::String(humantime::format_duration(h).to_string()),
            );
            if continuous {
                scan.insert("continuous".into(), Toml::Boolean(true));
            }
        }
        Ok(())
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

/// genny's `ScanRateMegabytes` (`10 per 1 second`) as the scan's `megabytes` (`10 per 1s`).
fn scan_rate(v: &Yaml) -> Option<String> {
    let text = scalar_text(v)?;
    let (n, per) = text.split_once(" per ")?;
    let n: u32 = n.trim().parse().ok().filter(|n| *n > 0)?;
    let per = duration(&Yaml::String(per.trim().to_string())).filter(|d| !d.is_zero())?;
    Some(format!("{n} per {}", humantime::format_duration(per)))
}
