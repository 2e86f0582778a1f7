//! Rendering: the profile (collections with their indexes and preloads, groups at the observed
//! rates) from the chosen shapes and fitted fields, as a TOML document (`toml_edit`) whose
//! comments say where each number comes from; its text is the document's.

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table};

use super::*;

/// A value of the profile with a comment after it (`threads = 3  # connections seen: 1`).
fn noted(value: impl Into<toml_edit::Value>, note: &str) -> Item {
    let mut v: toml_edit::Value = value.into();
    v.decor_mut().set_suffix(format!("  # {note}"));
    Item::Value(v)
}

/// A value given as TOML text, as the document's own; text that does not parse back (a
/// `toml::Value`'s and `rate_text`'s always do) is kept as a string.
fn from_text(text: String) -> toml_edit::Value {
    text.parse::<toml_edit::Value>()
        .unwrap_or_else(|_| toml_edit::Value::from(text))
}

/// A fitted template's or generator's value (`toml::Value`), as the document's own.
fn parsed(value: &Value) -> Item {
    Item::Value(from_text(value.to_string()))
}

/// Comment lines, each `# ...`, to stand before a key or a header.
fn comment_lines(lines: &[String]) -> String {
    lines.iter().map(|l| format!("# {l}\n")).collect()
}

/// Puts `lines` as comments on the line before `key` of `table`.
fn comment_before(table: &mut Table, key: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    if let Some(mut k) = table.key_mut(key) {
        k.leaf_decor_mut().set_prefix(comment_lines(lines));
    }
}

/// A table whose header is written on a line of its own after a blank line (`[[group]]`), or
/// right after what comes before (`[collection.document]`).
fn table(blank_before: bool) -> Table {
    let mut t = Table::new();
    t.decor_mut()
        .set_prefix(if blank_before { "\n" } else { "" });
    t
}

/// The emitted shapes of one `[[group]]`: a thread group's on one collection, or one
/// transaction shape's steps.
pub(super) struct Grouped {
    pub(super) group: String,
    pub(super) coll: String,
    /// The transaction's shape, for a group of steps.
    pub(super) unit: Option<String>,
    /// Indexes in `seen`, in order.
    pub(super) members: Vec<usize>,
}

/// How hard a `[[group]]` drives its collection, from what the source observed.
pub(super) struct Load {
    /// Operations (a transaction counted once).
    pub(super) count: u64,
    pub(super) observed_rate: f64,
    /// The observed rate times the scale.
    pub(super) rate: f64,
    /// Distinct connections seen.
    pub(super) conns: usize,
    /// The most operations in flight at once.
    pub(super) peak: usize,
    pub(super) threads: usize,
}

/// Makes the profile: what it is made from, and the emitted shapes' collections and groups;
/// keeps each emitted shape's name for the account.
pub(super) struct Renderer<'a> {
    pub(super) seen: &'a [Seen],
    pub(super) emitted: &'a [usize],
    pub(super) infos: &'a HashMap<(String, String), CollectionInfo>,
    pub(super) fields: &'a Fields,
    pub(super) opts: &'a Options,
    pub(super) window_s: f64,
    pub(super) operations: u64,
    pub(super) database: Option<&'a str>,
    /// Emitted shape (index in `seen`) -> `group:name`, or a step's group and position.
    pub(super) names: HashMap<usize, String>,
}

impl Renderer<'_> {
    /// The profile's text and each emitted shape's name.
    pub(super) fn render(mut self, name: &str, source: &str) -> (String, HashMap<usize, String>) {
        let mut doc = self.header(name, source);
        let collections: ArrayOfTables = self
            .collection_names()
            .iter()
            .map(|coll| self.collection(coll))
            .collect();
        doc.insert("collection", Item::ArrayOfTables(collections));
        // Groups: per (group, collection), in the order of their first shape; a group per
        // transaction shape.
        let groups = self.groups();
        let per_group_coll: BTreeMap<&str, usize> = groups
            .iter()
            .filter(|g| g.unit.is_none())
            .fold(BTreeMap::new(), |mut m, g| {
                *m.entry(g.group.as_str()).or_default() += 1;
                m
            });
        let mut group_names: BTreeSet<String> = BTreeSet::new();
        let mut tables = ArrayOfTables::new();
        for g in &groups {
            let gname = group_name(g, &per_group_coll, &mut group_names);
            tables.push(self.group(&gname, g));
        }
        doc.insert("group", Item::ArrayOfTables(tables));
        (doc.to_string(), self.names)
    }

    /// Where the profile comes from (comments), its name and its `[target]`.
    pub(super) fn header(&self, name: &str, source: &str) -> DocumentMut {
        let (seen, emitted) = (self.seen, self.emitted);
        let heads = || emitted.iter().filter(|&&i| seen[i].pos() == 0);
        let covered: u64 = heads().map(|&i| seen[i].count).sum();
        let mut about = vec![
            format!("Captured by mongo-stress capture from {source}."),
            format!(
                "{} operations seen over {:.1} s (the rates are over that span); {} shapes emitted cover {:.1} % of them.",
                self.operations,
                self.window_s,
                heads().count(),
                share_pct(covered, self.operations)
            ),
        ];
        if !self.opts.keep_values {
            about.push("No observed value is written: strings are placeholders with the observed frequencies,".into());
            about.push(
                "numbers and dates the observed ranges (--keep-values writes the values).".into(),
            );
        }
        let mut doc = DocumentMut::new();
        doc.insert("name", toml_edit::value(name));
        doc.insert(
            "description",
            toml_edit::value(format!(
                "captured from {source}, rates x {}",
                self.opts.scale
            )),
        );
        comment_before(doc.as_table_mut(), "name", &about);
        // Another database than the source's: the collections are dropped before each run, so a
        // run pointed at the source by mistake must never drop the source's own.
        let source_db = self.database.unwrap_or("test");
        let mut target = Table::new();
        target.insert("database", toml_edit::value(replay_database(source_db)));
        target.decor_mut().set_prefix(format!(
            "\n{}",
            comment_lines(&[
                format!(
                    "The source's database is {}; this one is named apart so that a run against the source",
                    Value::String(source_db.to_string())
                ),
                "never drops its collections (rename it to use the same names elsewhere).".into(),
            ])
        ));
        doc.insert("target", Item::Table(target));
        doc
    }

    /// The emitted shapes' collections, in the order of their first shape.
    pub(super) fn collection_names(&self) -> Vec<String> {
        let mut colls: Vec<String> = Vec::new();
        for &i in self.emitted {
            if !colls.contains(&self.seen[i].coll) {
                colls.push(self.seen[i].coll.clone());
            }
        }
        colls
    }

    /// One `[[collection]]`: its preload, indexes and document template.
    pub(super) fn collection(&self, coll: &str) -> Table {
        let (db, infos) = (self.database.unwrap_or(""), self.infos);
        let info = infos.get(&(db.to_string(), coll.to_string()));
        let mut t = table(true);
        t.insert("name", toml_edit::value(coll));
        t.insert("drop", toml_edit::value(true));
        let preload = match info.and_then(|i| i.count) {
            Some(n) => {
                let preload = n.min(self.opts.preload_cap);
                let note = if n > preload {
                    format!(
                        "the server held {n} documents (capped at {})",
                        self.opts.preload_cap
                    )
                } else {
                    format!("the server held {n} documents")
                };
                noted(i64::try_from(preload).unwrap_or(i64::MAX), &note)
            }
            None => noted(
                1000,
                "the real count is unknown here (capture with --uri to read it)",
            ),
        };
        t.insert("preload", preload);
        self.indexes(&mut t, coll, info);
        t.insert("document", Item::Table(self.document(coll, info)));
        t
    }

    /// A collection's `indexes`: the server's when it listed them, else the ones the plans
    /// named.
    pub(super) fn indexes(&self, t: &mut Table, coll: &str, info: Option<&CollectionInfo>) {
        let mut idx: Vec<String> = info
            .map(|info| info.indexes.iter().map(index_spec).collect())
            .unwrap_or_default();
        let from_server = info.is_some_and(|i| !i.indexes.is_empty());
        if !from_server {
            idx.extend(self.plan_named_indexes(coll));
        }
        if idx.is_empty() {
            return;
        }
        // One index a line.
        let mut list = Array::new();
        for spec in &idx {
            let mut v = from_text(spec.clone());
            v.decor_mut().set_prefix("\n  ");
            v.decor_mut().set_suffix("");
            list.push_formatted(v);
        }
        list.set_trailing_comma(true);
        list.set_trailing("\n");
        t.insert("indexes", toml_edit::value(list));
        if !from_server {
            comment_before(
                t,
                "indexes",
                &["indexes: the ones the plans named (no --uri to list the server's)".into()],
            );
        }
    }

    /// The indexes the plans of the emitted shapes on `coll` named, as index specs.
    pub(super) fn plan_named_indexes(&self, coll: &str) -> Vec<String> {
        let mut named: Vec<Vec<(String, i64)>> = Vec::new();
        for &i in self.emitted {
            if self.seen[i].coll != *coll {
                continue;
            }
            for p in self.seen[i].plans.keys() {
                for keys in plan_indexes(p) {
                    if !named.contains(&keys) {
                        named.push(keys);
                    }
                }
            }
        }
        named
            .into_iter()
            .map(|keys| {
                let k: toml::Table = keys
                    .into_iter()
                    .map(|(k, v)| (k, Value::Integer(v)))
                    .collect();
                format!("{{ keys = {} }}", Value::Table(k))
            })
            .collect()
    }

    /// A collection's `[collection.document]`: its fitted template, with where its fields
    /// come from in comments before them.
    pub(super) fn document(&self, coll: &str, info: Option<&CollectionInfo>) -> Table {
        let mut notes = Vec::new();
        if let Some(size) = info.and_then(|i| i.avg_size) {
            notes.push(format!("the sampled documents average {size:.0} bytes"));
        }
        let mut t = table(false);
        if let Some((tmpl, synthetic)) = self.fields.templates.get(coll) {
            if *synthetic {
                notes.push(
                    "synthetic: made from the fields the operations use (no sampled documents)"
                        .into(),
                );
            }
            let fitted = |c: &String, f: &String| self.fields.notes.get(&(c.clone(), f.clone()));
            for ((c, f), (target, n)) in &self.fields.references {
                if c == coll {
                    notes.push(match fitted(c, f) {
                        Some(note) => format!(
                            "{f}: the _ids of {target}, which the replay preloads as 0 .. {}, ranked by the source's documents that hold each; {note}",
                            n.saturating_sub(1)
                        ),
                        None => format!(
                            "{f}: the _ids of {target}, which the replay preloads as 0 .. {}: it references them as the source did",
                            n.saturating_sub(1)
                        ),
                    });
                }
            }
            for ((c, f), k) in &self.fields.selecting {
                if c == coll && !self.fields.references.contains_key(&(c.clone(), f.clone())) {
                    notes.push(match fitted(c, f) {
                        Some(note) => format!("{f}: operations select by it; {note}"),
                        None => format!(
                            "{f}: operations select by it; about {k} distinct values in the source, drawn alike by the documents and the queries"
                        ),
                    });
                }
            }
            for ((c, f), note) in &self.fields.notes {
                let key = (c.clone(), f.clone());
                if c == coll
                    && !self.fields.references.contains_key(&key)
                    && !self.fields.selecting.contains_key(&key)
                {
                    notes.push(format!("{f}: {note}"));
                }
            }
            for (k, v) in tmpl {
                t.insert(k, parsed(v));
            }
        }
        let first = t.iter().next().map(|(k, _)| k.to_string());
        match first {
            Some(first) => comment_before(&mut t, &first, &notes),
            // No field: the notes follow the header.
            None if !notes.is_empty() => {
                t.decor_mut()
                    .set_suffix(format!("\n{}", comment_lines(&notes).trim_end()));
            }
            None => {}
        }
        t
    }

    /// The emitted shapes gathered into groups, in the order of their first shape.
    pub(super) fn groups(&self) -> Vec<Grouped> {
        let mut groups: Vec<Grouped> = Vec::new();
        for &i in self.emitted {
            let s = &self.seen[i];
            let unit = s.txn.as_ref().map(|t| t.unit.clone());
            let found = groups.iter_mut().find(|g| {
                g.group == s.group && (g.unit == unit) && (unit.is_some() || g.coll == s.coll)
            });
            match found {
                Some(g) => g.members.push(i),
                None => groups.push(Grouped {
                    group: s.group.clone(),
                    coll: s.coll.clone(),
                    unit,
                    members: vec![i],
                }),
            }
        }
        groups
    }

    /// How hard group `g` drives its collection: its rate, and threads enough for its
    /// connections, its operations in flight at once and its rate at its mean time.
    pub(super) fn load(&self, g: &Grouped) -> Load {
        let (seen, members) = (self.seen, &g.members);
        let txn = g.unit.is_some();
        let count: u64 = if txn {
            seen[members[0]].count
        } else {
            members.iter().map(|&i| seen[i].count).sum()
        };
        let observed_rate = crate::num::real(count) / self.window_s / self.opts.sample_rate;
        let rate = observed_rate * self.opts.scale;
        let conns: BTreeSet<&String> = members.iter().flat_map(|&i| seen[i].conns.iter()).collect();
        let mut intervals = self.intervals(g, count);
        let peak = peak_in_flight(&mut intervals);
        let mean_ms = self.mean_ms(g);
        let needed = crate::num::whole_len((rate * mean_ms.max(1.0) / 1000.0 * 2.0).ceil());
        // The concurrency seen, times the scale: a rate X times higher keeps as many
        // operations in flight per user only with X times the users.
        let seen_at_once = crate::num::whole_len(
            (crate::num::real_len(conns.len().max(peak)) * self.opts.scale.max(1.0)).ceil(),
        );
        let threads = seen_at_once.max(needed).clamp(1, 10_000);
        Load {
            count,
            observed_rate,
            rate,
            conns: conns.len(),
            peak,
            threads,
        }
    }

    /// The time intervals of group `g`'s `count` operations (of a transaction, the whole
    /// transaction's).
    pub(super) fn intervals(&self, g: &Grouped, count: u64) -> Vec<(i64, i64)> {
        let (seen, members) = (self.seen, &g.members);
        if g.unit.is_some() {
            // The k-th interval of each step is the k-th transaction's: from its first step's
            // start to its last step's end.
            (0..usize::try_from(count).unwrap_or(usize::MAX))
                .map(|k| {
                    let ends = members.iter().filter_map(|&i| seen[i].intervals.get(k));
                    ends.fold((i64::MAX, i64::MIN), |(a, b), (s, e)| {
                        (a.min(*s), b.max(*e))
                    })
                })
                .collect()
        } else {
            members
                .iter()
                .flat_map(|&i| seen[i].intervals.iter().copied())
                .collect()
        }
    }

    /// The mean time of one operation of group `g`: of a transaction, its steps' means added.
    pub(super) fn mean_ms(&self, g: &Grouped) -> f64 {
        let (seen, members) = (self.seen, &g.members);
        let mean = |i: usize| {
            seen[i].millis.iter().sum::<f64>() / crate::num::real_len(seen[i].millis.len().max(1))
        };
        if g.unit.is_some() {
            members.iter().map(|&i| mean(i)).sum()
        } else {
            let all: Vec<f64> = members
                .iter()
                .flat_map(|&i| seen[i].millis.iter().copied())
                .collect();
            all.iter().sum::<f64>() / crate::num::real_len(all.len().max(1))
        }
    }

    /// One `[[group]]` named `gname`: its threads, rate and duration, then its operations or
    /// steps.
    pub(super) fn group(&mut self, gname: &str, g: &Grouped) -> Table {
        let Load {
            count,
            observed_rate,
            rate,
            conns,
            peak,
            threads,
        } = self.load(g);
        let duration = crate::num::whole(self.window_s).clamp(10, 600);
        let mut t = table(true);
        t.insert("name", toml_edit::value(gname));
        t.insert("collection", toml_edit::value(g.coll.as_str()));
        t.insert(
            "threads",
            noted(
                i64::try_from(threads).unwrap_or(i64::MAX),
                &if self.opts.scale > 1.0 {
                    format!("connections seen: {conns}, most operations in flight at once: {peak}, x --scale {}", self.opts.scale)
                } else {
                    format!("connections seen: {conns}, most operations in flight at once: {peak}")
                },
            ),
        );
        t.insert(
            "rate",
            noted(
                rate_value(rate),
                &format!(
                    "observed {observed_rate:.2}/s x --scale {}",
                    self.opts.scale
                ),
            ),
        );
        t.insert("duration", toml_edit::value(format!("{duration}s")));
        if self.fields.skewed.contains(&g.coll) {
            t.insert(
                "keys",
                noted(
                    "zipfian",
                    "a tenth of the _ids seen took half the hits or more",
                ),
            );
        }
        if g.unit.is_some() {
            t.insert(
                "transaction",
                noted(
                    true,
                    &format!(
                        "{count} transactions of {} statements seen whole ({:.1} % of the operations)",
                        g.members.len(),
                        share_pct(count, self.operations)
                    ),
                ),
            );
        }
        let mut taken = BTreeSet::new();
        let members: ArrayOfTables = g
            .members
            .iter()
            .map(|&i| self.member(i, gname, &g.coll, &mut taken))
            .collect();
        let list = if g.unit.is_some() { "steps" } else { "ops" };
        t.insert(list, Item::ArrayOfTables(members));
        t
    }

    /// Shape `i` of group `gname` (on collection `coll`): a `[[group.steps]]` of a transaction
    /// or a `[[group.ops]]` named apart from the names `taken`.
    pub(super) fn member(
        &mut self,
        i: usize,
        gname: &str,
        coll: &str,
        taken: &mut BTreeSet<String>,
    ) -> Table {
        let (seen, fields, operations) = (self.seen, self.fields, self.operations);
        let s = &seen[i];
        let ms = s.sorted_ms();
        let q = |p: f64| quantile(&ms, p);
        let plan = s.plan().map(|p| format!(", plan {p}")).unwrap_or_default();
        let mut t = table(false);
        let note = if let Some(step) = &s.txn {
            self.names
                .insert(i, format!("{gname} step {}/{}", step.pos + 1, step.of));
            if s.coll != *coll {
                t.insert("collection", toml_edit::value(s.coll.as_str()));
            }
            format!("source p50 {:.1} ms, p95 {:.1} ms{plan}", q(0.5), q(0.95))
        } else {
            let oname = op_name(s, taken);
            self.names.insert(i, format!("{gname}:{oname}"));
            t.insert("name", toml_edit::value(oname));
            t.insert(
                "weight",
                toml_edit::value(i64::try_from(s.count).unwrap_or(i64::MAX)),
            );
            format!(
                "{} operations ({:.1} %), source p50 {:.1} ms, p95 {:.1} ms{plan}",
                s.count,
                share_pct(s.count, operations),
                q(0.5),
                q(0.95)
            )
        };
        let args = to_toml(&Bson::Document(s.op.args.clone()), &|slot| {
            Some(slot_value(s, slot, fields))
        });
        let verb = s.op.verb.name();
        t.insert(verb, parsed(&args));
        comment_before(&mut t, verb, &[note]);
        t
    }
}

/// `part` of `whole` in percent; 0 of nothing.
fn share_pct(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * crate::num::real(part) / crate::num::real(whole)
    } else {
        0.0
    }
}

/// A rate as the profile writes it (`rate_text`): a whole number when it is one.
fn rate_value(rate: f64) -> toml_edit::Value {
    from_text(rate_text(rate))
}

/// A server index (`listIndexes`) as the profile's index spec: its keys and options.
pub(super) fn index_spec(ix: &Document) -> String {
    let mut spec = toml::Table::new();
    let to = |v: &Bson| to_toml(v, &|_| None);
    if let Some(Bson::Document(k)) = ix.get("key") {
        // Directions as integers (the legacy shell stored 1.0); index types as text.
        let keys: toml::Table = k
            .iter()
            .map(|(f, d)| {
                let v = match super::super::as_f64(d) {
                    Some(x) => Value::Integer(crate::num::whole_signed(x.trunc())),
                    None => to(d),
                };
                (f.clone(), v)
            })
            .collect();
        spec.insert("keys".into(), Value::Table(keys));
    }
    for opt in [
        "name",
        "unique",
        "sparse",
        "partialFilterExpression",
        "expireAfterSeconds",
    ] {
        if let Some(v) = ix.get(opt) {
            spec.insert(opt.into(), to(v));
        }
    }
    Value::Table(spec).to_string()
}

/// A group's name: its application (or namespace), with its collection when the application
/// has groups on several, made apart from the report's own rows and from every name `taken`.
pub(super) fn group_name(
    g: &Grouped,
    per_group_coll: &BTreeMap<&str, usize>,
    taken: &mut BTreeSet<String>,
) -> String {
    let group = &g.group;
    let base = if g.unit.is_some() {
        format!("{group}-transaction")
    } else if per_group_coll.get(group.as_str()).copied().unwrap_or(0) > 1 {
        format!("{group}-{}", g.coll)
    } else {
        group.clone()
    };
    let mut gname: String = base
        .chars()
        .map(|c| {
            if c.is_control() || ":@".contains(c) {
                '-'
            } else {
                c
            }
        })
        .collect();
    if gname.eq_ignore_ascii_case("TOTAL")
        || gname.starts_with("svc:")
        || gname.starts_with("warmup:")
    {
        gname = format!("app-{gname}");
    }
    while !taken.insert(gname.clone()) {
        gname.push('_');
    }
    gname
}

/// A rate as the profile writes it: never below the least rate a profile takes, with the
/// significant digits a slow rate needs.
pub(super) fn rate_text(rate: f64) -> String {
    let r = rate.max(crate::plan::limits::MIN_RATE);
    let text = if r >= 100.0 {
        format!("{r:.1}")
    } else if r >= 1.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.6}")
    };
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// The most intervals that overlap at one instant.
pub(super) fn peak_in_flight(intervals: &mut [(i64, i64)]) -> usize {
    let mut events: Vec<(i64, i32)> = Vec::with_capacity(intervals.len() * 2);
    for (a, b) in intervals.iter() {
        events.push((*a, 1));
        events.push(((*b).max(*a + 1), -1));
    }
    events.sort();
    let (mut cur, mut peak) = (0i32, 0i32);
    for (_, d) in events {
        cur += d;
        peak = peak.max(cur);
    }
    usize::try_from(peak).unwrap_or(0)
}
