//! Fields fitted once per collection, and each shape's templates: which values a filter draws
//! (the source's own, by how often it used them) and which are generated.

use super::*;

/// Every field of every emitted collection, fitted once from its slots and sampled documents.
pub(super) struct Fields {
    /// (collection, field) -> generator.
    pub(super) gens: HashMap<(String, String), Value>,
    /// Collection -> its document template (nested), and whether it is synthetic.
    pub(super) templates: HashMap<String, (toml::Table, bool)>,
    /// Collections whose `_id` hits are skewed.
    pub(super) skewed: BTreeSet<String>,
    /// (collection, field) -> the collection whose `_id`s its values are, and its preload.
    pub(super) references: BTreeMap<(String, String), (String, u64)>,
    /// (collection, field) of the fields operations select by, with the distinct values the
    /// replay draws for them.
    pub(super) selecting: BTreeMap<(String, String), u64>,
    /// (collection, field) -> what its values are drawn from, for the template's comment.
    pub(super) notes: BTreeMap<(String, String), String>,
    /// Fields the operations select by whose documents could not be read (or were not, with
    /// `--no-sample-data`): fitted from the operations alone.
    pub(super) from_queries: Vec<(String, String)>,
    /// (collection, field) -> its ranks, for a read that asked for its values often enough to
    /// draw its own.
    pub(super) ranked: HashMap<(String, String), fit::Ranking>,
    /// (collection, field) of the fields under a unique index.
    pub(super) unique: BTreeSet<(String, String)>,
}

/// The value at a dotted path of a template, if it has one there.
fn lookup_table<'t>(t: &'t toml::Table, path: &str) -> Option<&'t Value> {
    match path.split_once('.') {
        None => t.get(path),
        Some((head, rest)) => match t.get(head) {
            Some(Value::Table(sub)) => lookup_table(sub, rest),
            _ => None,
        },
    }
}

/// Whether a slot selects documents: a value or list of a field in a filter (`filter`,
/// `query`, `q`, a `$match`), `_id` aside.
pub(super) fn selects(slot: &shape::Slot) -> bool {
    let head = slot.path.split(['.', '[']).next().unwrap_or("");
    slot.kind != SlotKind::Param
        && slot.field.as_deref().is_some_and(|f| f != "_id")
        && (matches!(head, "filter" | "query" | "q") || slot.path.contains("$match"))
}

/// The documents the replay preloads of a collection: the server's count, capped; 1,000 when
/// it is not known.
pub(super) fn preload_of(info: Option<&CollectionInfo>, cap: u64) -> u64 {
    info.and_then(|i| i.count).map_or(1000, |n| n.min(cap))
}

/// Per (collection, field), documents the source returned per call to the finds that select by
/// that field alone, by equality, and that no limit cut.
pub(super) fn returned_per_value(
    seen: &[Seen],
    emitted: &[usize],
) -> HashMap<(String, String), f64> {
    let mut sums: HashMap<(String, String), (i64, u64)> = HashMap::new();
    for &i in emitted {
        let s = &seen[i];
        if s.op.verb != crate::workload::command::Verb::Find || s.nreturned_n == 0 {
            continue;
        }
        let selecting: Vec<(usize, &shape::Slot)> =
            s.op.slots
                .iter()
                .enumerate()
                .filter(|(_, sl)| sl.kind != SlotKind::Param)
                .collect();
        let [(_, slot)] = selecting.as_slice() else {
            continue;
        };
        if slot.kind != SlotKind::Value
            || !selects(slot)
            || !slot
                .path
                .ends_with(slot.field.as_deref().unwrap_or_default())
        {
            continue;
        }
        let mean = crate::num::real_signed(s.nreturned) / crate::num::real(s.nreturned_n);
        let limit =
            s.op.slots
                .iter()
                .zip(&s.values)
                .filter(|(sl, _)| sl.path == "limit")
                .filter_map(|(_, vs)| vs.iter().filter_map(super::super::as_f64).reduce(f64::min))
                .next();
        if limit.is_some_and(|l| mean >= 0.9 * l) {
            continue;
        }
        let f = slot.field.clone().unwrap_or_default();
        let e = sums.entry((s.coll.clone(), f)).or_default();
        e.0 += s.nreturned;
        e.1 += s.nreturned_n;
    }
    sums.into_iter()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(k, (r, n))| (k, crate::num::real_signed(r) / crate::num::real(n)))
        .collect()
}

/// Fits every field of the emitted shapes' collections once, from the values their slots saw
/// and the sampled documents: a field whose values are another captured collection's `_id`s
/// becomes a reference to its preloaded keys, a field operations select by keeps the source's
/// number of distinct values; finds the collections whose `_id` hits are skewed.
pub(super) fn fit_fields(
    seen: &[Seen],
    emitted: &[usize],
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    now_ms: i64,
) -> Fields {
    let keep = opts.keep_values;
    let Gathered {
        mut pools,
        id_hits,
        order,
        selecting_fields,
        asked,
    } = gathered(seen, emitted);
    let colls: BTreeSet<String> = emitted.iter().map(|&i| seen[i].coll.clone()).collect();
    let db = emitted
        .first()
        .map(|&i| seen[i].db.clone())
        .unwrap_or_default();
    let info_of = |coll: &str| infos.get(&(db.clone(), coll.to_string()));
    // The sampled documents' values, apart from the operations', per field.
    let sampled = sampled_values(&colls, &info_of);
    // The `_id`s known of each collection: read from the server, sampled, and asked for.
    let known_ids = known_ids(&colls, &info_of, &sampled, &id_hits);
    let mut templates: HashMap<String, (toml::Table, bool)> = colls
        .iter()
        .map(|c| {
            (
                c.clone(),
                template(c, info_of(c), &mut pools, &order, keep, now_ms),
            )
        })
        .collect();
    let per_value = returned_per_value(seen, emitted);
    let mut fitted = Fitted::default();
    let unique = unique_fields(&colls, &info_of, &selecting_fields, &mut pools);
    // A unique field the operations never used still gets its never-repeating values.
    fitted.unique.clone_from(&unique);
    for ((coll, f), vals) in &pools {
        let key = (coll.clone(), f.clone());
        let asked_here = asked.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        let data = info_of(coll)
            .and_then(|i| i.values.get(f))
            .filter(|d| !d.counts.is_empty());
        if selecting_fields.contains(&key) && data.is_none() && !unique.contains(&key) {
            fitted.from_queries.push(key.clone());
        }
        if unique.contains(&key) {
            let (preload, selects) = (
                preload_of(info_of(coll), opts.preload_cap),
                &selecting_fields,
            );
            fitted.unique(&key, vals, asked_here, preload, selects.contains(&key));
            continue;
        }
        let distinct = distinct_of(vals);
        let target = reference_target(coll, f, &distinct, &colls, &info_of, &known_ids);
        if let Some(t) = target {
            let preload = preload_of(info_of(t), opts.preload_cap);
            fitted.reference(&key, data, asked_here, (t, preload));
            continue;
        }
        if let (true, Some(d)) = (selecting_fields.contains(&key), data) {
            let docs = (
                info_of(coll).and_then(|i| i.count),
                preload_of(info_of(coll), opts.preload_cap),
            );
            fitted.sampled(&key, d, asked_here, vals, docs, (keep, now_ms));
            continue;
        }
        if selecting_fields.contains(&key) {
            let sel = fit::Selecting {
                source_docs: info_of(coll).and_then(|i| i.count),
                replay_docs: preload_of(info_of(coll), opts.preload_cap),
                returned_per_value: per_value.get(&key).copied(),
                sampled: sampled.get(&key).map(Vec::as_slice).unwrap_or(&[]),
            };
            if let Some(g) = fit::selecting(f, vals, &sel, keep) {
                fitted
                    .selecting
                    .insert(key.clone(), fit::cardinality(distinct.len(), &sel));
                fitted.gens.insert(key, g);
                continue;
            }
        }
        fitted.gens.insert(key, fit::field(f, vals, keep, now_ms));
    }
    draw_documents(&mut templates, &fitted);
    joint_dates(seen, emitted, &info_of, &mut templates, &mut fitted, now_ms);
    let skewed = id_hits
        .iter()
        .filter(|(_, h)| fit::skewed(h))
        .map(|(c, _)| c.clone())
        .collect();
    Fields {
        gens: fitted.gens,
        templates,
        skewed,
        references: fitted.references,
        selecting: fitted.selecting,
        notes: fitted.notes,
        from_queries: fitted.from_queries,
        ranked: fitted.ranked,
        unique: fitted.unique,
    }
}

/// A field's distinct values (arrays, documents and nulls aside), in the order seen.
fn distinct_of(vals: &[Bson]) -> Vec<&Bson> {
    let mut distinct: Vec<&Bson> = Vec::new();
    let mut shown: std::collections::HashSet<String> = std::collections::HashSet::new();
    for v in vals
        .iter()
        .filter(|v| !matches!(v, Bson::Array(_) | Bson::Document(_) | Bson::Null))
    {
        if shown.insert(v.to_string()) {
            distinct.push(v);
        }
    }
    distinct
}

/// The captured collection whose `_id`s field `f` of `coll` holds (its `distinct` values), the
/// one whose known `_id`s they cover the most of. Numbers are another collection's `_id`s only
/// where the name says so too (`customer`, `customer_id` of `customers`): small numbers are
/// found among any integer `_id`s.
fn reference_target<'c, 'a>(
    coll: &str,
    f: &str,
    distinct: &[&Bson],
    colls: &'c BTreeSet<String>,
    info_of: &dyn Fn(&str) -> Option<&'a CollectionInfo>,
    known_ids: &BTreeMap<&'c String, std::collections::HashSet<String>>,
) -> Option<&'c String> {
    let numeric = distinct.iter().any(|v| super::super::as_f64(v).is_some());
    colls
        .iter()
        .filter(|c| !numeric || (*c != coll && names_reference(f, c)))
        .filter(|c| {
            let count = info_of(c)
                .and_then(|i| i.count)
                .unwrap_or(known_ids[c].len() as u64);
            fit::references(distinct, &known_ids[c], count)
        })
        .max_by(|a, b| {
            let share = |c: &String| {
                let found = distinct
                    .iter()
                    .filter(|v| known_ids[c].contains(&v.to_string()))
                    .count();
                crate::num::real_len(found) / crate::num::real_len(known_ids[c].len().max(1))
            };
            share(a).total_cmp(&share(b))
        })
}

/// The templates draw the documents' distribution where it was measured, else the same
/// generators as the operations (for references and selecting fields).
fn draw_documents(templates: &mut HashMap<String, (toml::Table, bool)>, fitted: &Fitted) {
    for (coll, (t, _)) in templates.iter_mut() {
        for ((c, f), g) in &fitted.gens {
            let key = (c.clone(), f.clone());
            if c != coll {
                continue;
            }
            if let Some(d) = fitted.data_gens.get(&key) {
                if fitted.unique.contains(&key) && lookup_table(t, f).is_none() {
                    insert_path(t, f, d.clone());
                }
                replace_path(t, f, d.clone());
            } else if fitted.references.contains_key(&key) || fitted.selecting.contains_key(&key) {
                replace_path(t, f, g.clone());
            }
        }
    }
}

/// A date a read ranges over beside a ranked field it selects by equality (`author` and
/// `created >= now - 12h`), both top-level fields: drawn by the ranked field's rank where the
/// source's documents' dates differ by rank (`fit::dated_by_rank`), so that each value's
/// share of documents in the range is its own.
fn joint_dates<'a>(
    seen: &[Seen],
    emitted: &[usize],
    info_of: &dyn Fn(&str) -> Option<&'a CollectionInfo>,
    templates: &mut HashMap<String, (toml::Table, bool)>,
    fitted: &mut Fitted,
    now_ms: i64,
) {
    let range = |p: &str| p.contains(".$gt") || p.contains(".$lt");
    let mut done: BTreeSet<(String, String)> = BTreeSet::new();
    let mut tried: BTreeSet<((String, String), String)> = BTreeSet::new();
    for &i in emitted {
        let s = &seen[i];
        let top = |f: &&str| !f.contains('.');
        // Equality: `author = v` or `author.$eq`, not `$ne`, `$regex`, ...
        let equality = |p: &str| !p.contains(".$") || p.ends_with(".$eq");
        let dates: Vec<&str> =
            s.op.slots
                .iter()
                .zip(&s.values)
                .filter(|(sl, vals)| {
                    selects(sl)
                        && range(&sl.path)
                        && !vals.is_empty()
                        && vals.iter().all(|v| matches!(v, Bson::DateTime(_)))
                })
                .filter_map(|(sl, _)| sl.field.as_deref())
                .filter(top)
                .collect();
        let equal: Vec<&str> =
            s.op.slots
                .iter()
                .filter(|sl| selects(sl) && sl.kind == SlotKind::Value && equality(&sl.path))
                .filter_map(|sl| sl.field.as_deref())
                .filter(top)
                .collect();
        for (t, f) in dates
            .iter()
            .flat_map(|t| equal.iter().map(move |f| (*t, *f)))
        {
            let (dkey, fkey) = (
                (s.coll.clone(), t.to_string()),
                (s.coll.clone(), f.to_string()),
            );
            // Once per pair and date field; never a unique field's or a reference's values.
            if !tried.insert((dkey.clone(), f.to_string()))
                || done.contains(&dkey)
                || fitted.unique.contains(&dkey)
                || fitted.references.contains_key(&dkey)
                || fitted.references.contains_key(&fkey)
            {
                continue;
            }
            let Some(pairs) = info_of(&s.coll)
                .and_then(|info| info.values.get(f))
                .and_then(|d| d.dated.get(t))
            else {
                continue;
            };
            let Some(ranking) = fitted.ranked.get(&fkey) else {
                continue;
            };
            let Some((template, _)) = templates.get_mut(&s.coll) else {
                continue;
            };
            // The sibling must be the documents' draw of ranks (a `^Choose`), the date one
            // value (not an array of them).
            let chosen =
                matches!(template.get(f), Some(Value::Table(g)) if g.contains_key("^Choose"));
            let array =
                matches!(template.get(t), Some(Value::Table(g)) if g.contains_key("^Array"));
            if !chosen || array || !matches!(ranking.form, fit::Form::Placeholder { .. }) {
                continue;
            }
            let index = ranking.data_index();
            if let Some(d) = fit::dated_by_rank(f, pairs, &index, now_ms) {
                replace_path(template, t, d.gen);
                fitted.notes.insert(dkey.clone(), d.note);
                done.insert(dkey);
            }
        }
    }
}

/// The fields under a unique index of each collection, made never to repeat: a single field's
/// index, or of a compound one the first field no read selects by, else its last (one field
/// unique makes the compound unique; a field the reads select by keeps its selectivity).
fn unique_fields<'a>(
    colls: &BTreeSet<String>,
    info_of: &dyn Fn(&str) -> Option<&'a CollectionInfo>,
    selecting: &BTreeSet<(String, String)>,
    pools: &mut BTreeMap<(String, String), Vec<Bson>>,
) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for c in colls {
        let Some(info) = info_of(c) else { continue };
        for spec in &info.indexes {
            if !spec.get_bool("unique").unwrap_or(false) {
                continue;
            }
            let Ok(keys) = spec.get_document("key") else {
                continue;
            };
            let keys: Vec<&String> = keys.keys().filter(|k| *k != "_id").collect();
            let chosen = match keys.as_slice() {
                [] => None,
                [one] => Some(*one),
                many => many
                    .iter()
                    .find(|k| !selecting.contains(&(c.clone(), (**k).clone())))
                    .or(many.last())
                    .copied(),
            };
            if let Some(f) = chosen {
                // A unique field the operations never used still gets its own values.
                pools.entry((c.clone(), f.clone())).or_default();
                out.insert((c.clone(), f.clone()));
            }
        }
    }
    out
}

/// What the emitted shapes' operations gave each field (`_id`s apart, counted per value), each
/// collection's fields in the order first seen, and the fields some filter selects on.
pub(super) struct Gathered {
    pub(super) pools: BTreeMap<(String, String), Vec<Bson>>,
    pub(super) id_hits: HashMap<String, HashMap<String, u64>>,
    pub(super) order: BTreeMap<String, Vec<String>>,
    pub(super) selecting_fields: BTreeSet<(String, String)>,
    /// Per (collection, field), each value a filter asked for, with how often (estimated from
    /// the values kept, each standing for its shape's `weight`).
    pub(super) asked: BTreeMap<(String, String), Vec<(Bson, u64)>>,
}

/// The operations each value a shape kept stands for: its count over the operations whose values
/// it kept (1 while it kept every one; `tally::VALUES_KEPT` at most are kept).
fn weight(s: &Seen) -> f64 {
    crate::num::real(s.count) / crate::num::real_len(s.times.len().max(1))
}

pub(super) fn gathered(seen: &[Seen], emitted: &[usize]) -> Gathered {
    let mut pools: BTreeMap<(String, String), Vec<Bson>> = BTreeMap::new();
    let mut id_hits: HashMap<String, HashMap<String, f64>> = HashMap::new();
    let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut selecting_fields: BTreeSet<(String, String)> = BTreeSet::new();
    let mut asked: BTreeMap<(String, String), HashMap<String, (Bson, f64)>> = BTreeMap::new();
    // Per field, the largest weight among the shapes that use it: each shape gives the pool
    // the share of its kept values that makes every shape count by its operations.
    let mut heaviest: HashMap<(&str, &str), f64> = HashMap::new();
    for &i in emitted {
        let s = &seen[i];
        for slot in &s.op.slots {
            if let Some(f) = &slot.field {
                let w = heaviest.entry((&s.coll, f)).or_insert(0.0);
                *w = w.max(weight(s));
            }
        }
    }
    for &i in emitted {
        let s = &seen[i];
        let w = weight(s);
        for (slot, vals) in s.op.slots.iter().zip(&s.values) {
            let Some(f) = &slot.field else { continue };
            let each = |v: &Bson| -> Vec<Bson> {
                match v {
                    Bson::Array(a) => a.clone(),
                    v => vec![v.clone()],
                }
            };
            if f == "_id" {
                let hits = id_hits.entry(s.coll.clone()).or_default();
                for v in vals.iter().flat_map(each) {
                    *hits.entry(v.to_string()).or_default() += w;
                }
                continue;
            }
            if selects(slot) {
                selecting_fields.insert((s.coll.clone(), f.clone()));
                let counts = asked.entry((s.coll.clone(), f.clone())).or_default();
                for v in vals.iter().flat_map(each) {
                    counts.entry(v.to_string()).or_insert_with(|| (v, 0.0)).1 += w;
                }
            }
            // Every value when this shape is the heaviest; else an even share of them.
            let keep = w / heaviest
                .get(&(s.coll.as_str(), f.as_str()))
                .copied()
                .unwrap_or(w);
            let pool = pools.entry((s.coll.clone(), f.clone())).or_default();
            let mut owed = 0.0;
            for v in vals {
                owed += keep;
                if owed >= 1.0 - 1e-9 {
                    owed -= 1.0;
                    pool.extend(each(v));
                }
            }
            let o = order.entry(s.coll.clone()).or_default();
            if !o.contains(f) {
                o.push(f.clone());
            }
        }
    }
    let whole = |x: f64| crate::num::whole(x.round().max(1.0));
    Gathered {
        pools,
        id_hits: id_hits
            .into_iter()
            .map(|(c, m)| (c, m.into_iter().map(|(k, n)| (k, whole(n))).collect()))
            .collect(),
        order,
        selecting_fields,
        asked: asked
            .into_iter()
            .map(|(k, m)| (k, m.into_values().map(|(v, n)| (v, whole(n))).collect()))
            .collect(),
    }
}

/// The `_id`s known of each collection: read from the server, sampled, and asked for.
fn known_ids<'c, 'a>(
    colls: &'c BTreeSet<String>,
    info_of: &dyn Fn(&str) -> Option<&'a CollectionInfo>,
    sampled: &BTreeMap<(String, String), Vec<Bson>>,
    id_hits: &HashMap<String, HashMap<String, u64>>,
) -> BTreeMap<&'c String, std::collections::HashSet<String>> {
    colls
        .iter()
        .map(|c| {
            let mut ids: std::collections::HashSet<String> = info_of(c)
                .map(|i| i.ids.iter().map(ToString::to_string).collect())
                .unwrap_or_default();
            if let Some(v) = sampled.get(&(c.clone(), "_id".to_string())) {
                ids.extend(v.iter().map(ToString::to_string));
            }
            if let Some(h) = id_hits.get(c) {
                ids.extend(h.keys().cloned());
            }
            (c, ids)
        })
        .collect()
}

/// The values of each field of each collection's sampled documents.
fn sampled_values<'a>(
    colls: &BTreeSet<String>,
    info_of: &dyn Fn(&str) -> Option<&'a CollectionInfo>,
) -> BTreeMap<(String, String), Vec<Bson>> {
    let mut sampled: BTreeMap<(String, String), Vec<Bson>> = BTreeMap::new();
    for coll in colls {
        for d in info_of(coll).map(|i| i.sample.as_slice()).unwrap_or(&[]) {
            leaves(d, "", &mut |path, v| {
                let pool = sampled.entry((coll.clone(), path.to_string())).or_default();
                match v {
                    Bson::Array(a) => pool.extend(a.iter().cloned()),
                    v => pool.push(v.clone()),
                }
            });
        }
    }
    sampled
}

/// Whether field `field`'s name names collection `coll` (`customer`, `customerId`,
/// `customer_id` of `customers`), or is any `..._id`.
pub(super) fn names_reference(field: &str, coll: &str) -> bool {
    let leaf = field.rsplit('.').next().unwrap_or(field).to_lowercase();
    let stem = leaf
        .trim_end_matches("_id")
        .trim_end_matches("id")
        .trim_end_matches(['_', '-']);
    let coll = coll.to_lowercase();
    let singular = coll.strip_suffix('s').unwrap_or(&coll);
    (!stem.is_empty() && (stem == coll || stem == singular)) || leaf.ends_with("_id")
}

/// Puts `v` at the dotted `path` of a template where a generator (or an array of one) already
/// stands there: a sampled array field stays an array, of the new generator.
pub(super) fn replace_path(t: &mut toml::Table, path: &str, v: Value) {
    match path.split_once('.') {
        None => {
            if let Some(slot) = t.get_mut(path) {
                if let Value::Table(g) = slot {
                    if let Some(Value::Table(arr)) = g.get_mut("^Array") {
                        arr.insert("of".into(), v);
                        return;
                    }
                }
                *slot = v;
            }
        }
        Some((head, rest)) => {
            if let Some(Value::Table(sub)) = t.get_mut(head) {
                if !sub.keys().any(|k| k.starts_with('^')) {
                    replace_path(sub, rest, v);
                }
            }
        }
    }
}

/// The document template of collection `coll`, and whether it is synthetic: the fields of its
/// sampled documents (their values added to `pools`), else the fields its operations use
/// (`order`), each fitted from its pooled values.
pub(super) fn template(
    coll: &str,
    info: Option<&CollectionInfo>,
    pools: &mut BTreeMap<(String, String), Vec<Bson>>,
    order: &BTreeMap<String, Vec<String>>,
    keep: bool,
    now_ms: i64,
) -> (toml::Table, bool) {
    let sample = info.map(|i| i.sample.as_slice()).unwrap_or(&[]);
    let mut paths: Vec<String> = Vec::new();
    for d in sample {
        leaves(d, "", &mut |path, v| {
            if path == "_id" {
                return;
            }
            if !paths.contains(&path.to_string()) {
                paths.push(path.to_string());
            }
            let pool = pools
                .entry((coll.to_string(), path.to_string()))
                .or_default();
            match v {
                Bson::Array(a) => pool.extend(a.iter().cloned()),
                v => pool.push(v.clone()),
            }
        });
    }
    let synthetic = sample.is_empty();
    if synthetic {
        paths = order.get(coll).cloned().unwrap_or_default();
    }
    let mut t = toml::Table::new();
    if paths.is_empty() {
        // Nothing says what the documents hold: one string field of their average size
        // (100 bytes when that is unknown too), so that inserts still write that much.
        let size = info
            .and_then(|i| i.avg_size)
            .unwrap_or(100.0)
            .clamp(1.0, 1_000_000.0);
        t.insert(
            "payload".into(),
            fit::generator(
                "^RandomString",
                [(
                    "length".to_string(),
                    Value::Integer(crate::num::whole_signed(size.trunc())),
                )]
                .into_iter()
                .collect::<toml::Table>()
                .into(),
            ),
        );
    }
    for p in &paths {
        let vals = pools
            .get(&(coll.to_string(), p.clone()))
            .cloned()
            .unwrap_or_default();
        let mut g = match synthetic
            .then(|| fit::synthetic_dates(&vals, now_ms))
            .flatten()
        {
            Some(dates) => dates,
            None => fit::field(p, &vals, keep, now_ms),
        };
        // A field sampled as arrays stays an array of its elements.
        let lens: Vec<usize> = sample
            .iter()
            .filter_map(|d| lookup(d, p))
            .filter_map(|v| v.as_array().map(Vec::len))
            .collect();
        if !lens.is_empty() {
            g = fit::array(g, fit::length(&lens));
        }
        insert_path(&mut t, p, g);
    }
    (t, synthetic)
}

/// Calls `f` with each leaf of `d` (arrays are leaves) and its dotted path.
pub(super) fn leaves(d: &Document, base: &str, f: &mut dyn FnMut(&str, &Bson)) {
    for (k, v) in d {
        let p = if base.is_empty() {
            k.clone()
        } else {
            format!("{base}.{k}")
        };
        match v {
            Bson::Document(sub) if !sub.is_empty() && !sub.keys().any(|k| k.starts_with('$')) => {
                leaves(sub, &p, f)
            }
            v => f(&p, v),
        }
    }
}

pub(super) fn lookup<'a>(d: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut cur = d;
    let mut parts = path.split('.').peekable();
    while let Some(p) = parts.next() {
        let v = cur.get(p)?;
        if parts.peek().is_none() {
            return Some(v);
        }
        cur = v.as_document()?;
    }
    None
}

pub(super) fn insert_path(t: &mut toml::Table, path: &str, v: Value) {
    match path.split_once('.') {
        None => {
            // A document already there (its fields came first) stays.
            if !matches!(t.get(path), Some(Value::Table(s)) if !s.keys().any(|k| k.starts_with('^')))
            {
                t.insert(path.to_string(), v);
            }
        }
        Some((head, rest)) => {
            let sub = t
                .entry(head.to_string())
                .or_insert_with(|| Value::Table(toml::Table::new()));
            // A field seen both as a value and as a document: the document wins (its fields
            // are what the operations use), never fields beside a generator.
            let generator = matches!(sub, Value::Table(s) if s.keys().any(|k| k.starts_with('^')));
            if generator || !matches!(sub, Value::Table(_)) {
                *sub = Value::Table(toml::Table::new());
            }
            if let Value::Table(sub) = sub {
                insert_path(sub, rest, v);
            }
        }
    }
}

/// The generator for slot `i` of shape `s`.
pub(super) fn slot_value(s: &Seen, i: usize, fields: &Fields) -> Value {
    let slot = &s.op.slots[i];
    let vals = &s.values[i];
    if let Some(f) = slot.field.as_deref() {
        let unique = fields.unique.contains(&(s.coll.clone(), f.to_string()));
        if unique && slot.kind == SlotKind::Value && !selects(slot) {
            return fresh_unique(f, vals);
        }
    }
    match (slot.kind, slot.field.as_deref()) {
        (SlotKind::Param, _) => fit::param(vals, matches!(slot.path.as_str(), "limit" | "skip")),
        (SlotKind::Value, Some("_id")) => fit::bare("^Key"),
        (SlotKind::List, Some(f)) => {
            let lens: Vec<usize> = vals
                .iter()
                .map(|v| v.as_array().map_or(1, Vec::len))
                .collect();
            let of = if f == "_id" {
                fit::bare("^Key")
            } else {
                field_gen(s, f, fields, vals)
            };
            fit::array(of, fit::length(&lens))
        }
        (SlotKind::Value, Some(f)) => {
            if vals.iter().all(|v| matches!(v, Bson::DateTime(_))) && !vals.is_empty() {
                let offsets: Vec<i64> = vals
                    .iter()
                    .zip(&s.times)
                    .filter_map(|(v, t)| match v {
                        Bson::DateTime(d) => Some(d.timestamp_millis() - t),
                        _ => None,
                    })
                    .collect();
                return fit::query_date(&offsets);
            }
            field_gen(s, f, fields, vals)
        }
        (_, None) => fit::param(vals, false),
    }
}

/// Adds each value of `vals` (each element of an array) to `counts`, keyed by its text.
fn count_values(counts: &mut HashMap<String, (Bson, u64)>, vals: &[Bson]) {
    for v in vals {
        let each: Vec<&Bson> = match v {
            Bson::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for v in each {
            counts
                .entry(v.to_string())
                .or_insert_with(|| (v.clone(), 0))
                .1 += 1;
        }
    }
}

/// A value of a unique field no document holds yet, for a write that sets it (`$set`, a
/// replacement, an upsert): the ranks' values all exist, so writing one would repeat it.
fn fresh_unique(f: &str, vals: &[Bson]) -> Value {
    let leaf = f.rsplit('.').next().unwrap_or(f);
    let t = |pairs: Vec<(&str, Value)>| -> Value {
        Value::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    };
    if vals.iter().any(|v| super::super::as_f64(v).is_some()) {
        return fit::generator(
            "^RandomInt",
            t(vec![
                ("min", Value::Integer(1_000_000_000_000)),
                ("max", Value::Integer(9_000_000_000_000_000)),
            ]),
        );
    }
    fit::generator(
        "^Join",
        t(vec![(
            "array",
            Value::Array(vec![
                Value::String(format!("{leaf}-new-")),
                fit::generator("^RandomString", t(vec![("length", Value::Integer(24))])),
            ]),
        )]),
    )
}

pub(super) fn field_gen(s: &Seen, f: &str, fields: &Fields, vals: &[Bson]) -> Value {
    let key = (s.coll.clone(), f.to_string());
    // A read that asked often enough (calls, not values: a `$in` of five values is one call)
    // draws the values it asked for, over the field's ranks.
    if let Some(r) = fields
        .ranked
        .get(&key)
        .filter(|_| vals.len() as u64 >= fit::OWN_ACCESS)
    {
        let mut asked = HashMap::new();
        count_values(&mut asked, vals);
        return r.access(&asked.into_values().collect::<Vec<_>>());
    }
    fields
        .gens
        .get(&(s.coll.clone(), f.to_string()))
        .cloned()
        .unwrap_or_else(|| fit::field(f, vals, false, 0))
}

/// A BSON value as the profile's TOML, each slot marker replaced by its generator.
pub(super) fn to_toml(v: &Bson, slot: &dyn Fn(usize) -> Option<Value>) -> Value {
    match v {
        Bson::String(s) => match s.strip_prefix('\u{1}').and_then(|n| n.parse().ok()) {
            Some(i) => slot(i).unwrap_or(Value::String(String::new())),
            None => Value::String(s.clone()),
        },
        Bson::Document(d) => Value::Table(
            d.iter()
                .map(|(k, v)| (k.clone(), to_toml(v, slot)))
                .collect(),
        ),
        Bson::Array(a) => Value::Array(a.iter().map(|v| to_toml(v, slot)).collect()),
        Bson::Int32(n) => Value::Integer(i64::from(*n)),
        Bson::Int64(n) => Value::Integer(*n),
        Bson::Double(x) => Value::Float(*x),
        Bson::Boolean(b) => Value::Boolean(*b),
        Bson::Null | Bson::Undefined => fit::bare("^Null"),
        other => {
            // Extended JSON type keys ($date, $oid, $numberDecimal, ...) read back as BSON.
            let json = other.clone().into_relaxed_extjson();
            serde_json::from_value::<Value>(json).unwrap_or(Value::String(String::new()))
        }
    }
}

/// A readable, unique name: `find-orders-by-status-created`.
pub(super) fn op_name(s: &Seen, taken: &mut BTreeSet<String>) -> String {
    let mut fields: Vec<String> = Vec::new();
    for slot in &s.op.slots {
        if let Some(f) = &slot.field {
            if (slot.path.starts_with("filter") || slot.path.contains(".$match"))
                && !fields.contains(f)
            {
                fields.push(f.clone());
            }
        }
    }
    let mut base = format!("{}-{}", s.op.verb.name(), s.coll);
    if !fields.is_empty() {
        base.push_str("-by-");
        base.push_str(&fields.join("-"));
    }
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean: String = clean.chars().take(60).collect();
    let mut name = clean.clone();
    let mut n = 2;
    while !taken.insert(name.clone()) {
        name = format!("{clean}-{n}");
        n += 1;
    }
    name
}

/// The indexes a plan summary names (`IXSCAN { status: 1, created: -1 }`), as key documents.
pub(super) fn plan_indexes(plan: &str) -> Vec<Vec<(String, i64)>> {
    let mut out = Vec::new();
    for part in plan.split("IXSCAN").skip(1) {
        let Some(open) = part.find('{') else { continue };
        let Some(close) = part.find('}') else {
            continue;
        };
        // An index with a key this cannot read (`loc: "2dsphere"`) is left out whole.
        let Some(keys) = part[open + 1..close]
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once(':')?;
                let k = k.trim().trim_matches('"').to_string();
                let v: i64 = v.trim().parse().ok()?;
                (!k.is_empty()).then_some((k, v))
            })
            .collect::<Option<Vec<(String, i64)>>>()
        else {
            continue;
        };
        let only_id = keys.len() == 1 && keys[0].0 == "_id";
        if !keys.is_empty() && !only_id && !out.contains(&keys) {
            out.push(keys);
        }
    }
    out
}
