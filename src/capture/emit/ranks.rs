//! The fields fitted from the source's documents as well as the operations: a field under a
//! unique index, a reference whose documents were sampled, a selecting field whose documents'
//! values were counted. Each adds its generators (the operations' and the documents'), its
//! ranks and its comment to a `Fitted`.

use super::*;

/// What the fitting of the fields gives, as it goes.
#[derive(Default)]
pub(super) struct Fitted {
    /// (collection, field) -> what the operations draw.
    pub(super) gens: HashMap<(String, String), Value>,
    /// (collection, field) -> what the documents draw, where it differs.
    pub(super) data_gens: HashMap<(String, String), Value>,
    pub(super) references: BTreeMap<(String, String), (String, u64)>,
    pub(super) selecting: BTreeMap<(String, String), u64>,
    pub(super) notes: BTreeMap<(String, String), String>,
    pub(super) ranked: HashMap<(String, String), fit::Ranking>,
    pub(super) from_queries: Vec<(String, String)>,
    /// (collection, field) of the fields under a unique index.
    pub(super) unique: BTreeSet<(String, String)>,
}

/// Each value of `pairs` as many times as counted.
fn expand(pairs: &[(Bson, u64)]) -> Vec<Bson> {
    pairs
        .iter()
        .flat_map(|(v, n)| std::iter::repeat_n(v.clone(), usize::try_from(*n).unwrap_or(0)))
        .collect()
}

impl Fitted {
    /// A field under a unique index: each document holds its own value, made from its `_id`
    /// (`^Id`, a string's `name-%d` of it), and the reads ask for those by rank, as often as
    /// they asked.
    pub(super) fn unique(
        &mut self,
        key: &(String, String),
        vals: &[Bson],
        asked: &[(Bson, u64)],
        preload: u64,
        selecting: bool,
    ) {
        let f = &key.1;
        let leaf = f.rsplit('.').next().unwrap_or(f);
        let numeric = vals.iter().any(|v| super::super::as_f64(v).is_some());
        let own = fit::bare("^Id");
        let ranking = fit::Ranking {
            data: None,
            pooled: asked.to_vec(),
            k: preload,
            leaf: leaf.to_string(),
            form: if numeric {
                fit::Form::Ids
            } else {
                fit::Form::Unique
            },
        };
        let made = ranking.fit("");
        self.ranked.insert(key.clone(), ranking);
        let data = if numeric {
            own
        } else {
            fit::generator(
                "^FormatString",
                [
                    ("format".to_string(), Value::String(format!("{leaf}-%d"))),
                    ("withArgs".to_string(), Value::Array(vec![own])),
                ]
                .into_iter()
                .collect::<toml::Table>()
                .into(),
            )
        };
        self.data_gens.insert(key.clone(), data);
        self.notes.insert(key.clone(), made.note);
        if selecting {
            self.selecting.insert(key.clone(), made.distinct);
        }
        self.gens.insert(key.clone(), made.access);
    }

    /// A reference to `target`'s `(name, preload)`: its preloaded `_id`s ranked by the
    /// documents that hold each when they were sampled (`data`), else drawn uniformly.
    pub(super) fn reference(
        &mut self,
        key: &(String, String),
        data: Option<&crate::capture::FieldData>,
        asked: &[(Bson, u64)],
        target: (&String, u64),
    ) {
        let (name, preload) = target;
        match data {
            Some(d) => {
                let ranking = fit::Ranking {
                    data: Some(d.clone()),
                    pooled: asked.to_vec(),
                    k: preload,
                    leaf: String::new(),
                    form: fit::Form::Ids,
                };
                let made = ranking.fit(fit::data_cardinality(d, None).1);
                self.ranked.insert(key.clone(), ranking);
                if let Some(g) = made.data {
                    self.data_gens.insert(key.clone(), g);
                }
                self.notes.insert(key.clone(), made.note);
                self.gens.insert(key.clone(), made.access);
            }
            None => {
                self.gens.insert(key.clone(), fit::reference(preload));
            }
        }
        self.references.insert(key.clone(), (name.clone(), preload));
    }

    /// A selecting field whose documents' values were counted (`d`): strings and ObjectIds
    /// ranked (placeholders, or the values with `keep`), over the source's distinct values
    /// scaled to a capped preload (`docs`: the source's count and the preload); booleans,
    /// numbers and dates fitted from the documents' values for the documents and from the values
    /// asked for the operations, never the two mixed.
    pub(super) fn sampled(
        &mut self,
        key: &(String, String),
        d: &crate::capture::FieldData,
        asked: &[(Bson, u64)],
        vals: &[Bson],
        docs: (Option<u64>, u64),
        (keep, now_ms): (bool, i64),
    ) {
        let f = &key.1;
        let textual = d
            .counts
            .iter()
            .filter(|(v, _)| matches!(v, Bson::String(_) | Bson::ObjectId(_)))
            .count()
            * 2
            > d.counts.len();
        if !textual {
            self.data_gens
                .insert(key.clone(), fit::field(f, &expand(&d.counts), keep, now_ms));
            let asked_values = expand(asked);
            let from = if asked_values.is_empty() {
                vals
            } else {
                &asked_values
            };
            self.gens
                .insert(key.clone(), fit::field(f, from, keep, now_ms));
            return;
        }
        let (source_docs, replay_docs) = docs;
        let (in_source, how) = fit::data_cardinality(d, source_docs);
        // A preload capped below the source's count holds as many fewer values, so that a
        // value selects as many documents per call as it did.
        let k = match source_docs {
            Some(n) if n > replay_docs && n > 0 => crate::num::whole(
                crate::num::real(in_source) * crate::num::real(replay_docs) / crate::num::real(n),
            )
            .max(1),
            _ => in_source,
        };
        let leaf = f.rsplit('.').next().unwrap_or(f);
        let ranking = fit::Ranking {
            data: Some(d.clone()),
            pooled: asked.to_vec(),
            k,
            leaf: leaf.to_string(),
            form: fit::Form::Placeholder { keep },
        };
        let made = ranking.fit(how);
        self.ranked.insert(key.clone(), ranking);
        if let Some(g) = made.data {
            self.data_gens.insert(key.clone(), g);
        }
        let note = if k == in_source {
            made.note
        } else {
            format!(
                "the source's {in_source} distinct values ({how}) scaled to the capped preload; {}",
                made.note
            )
        };
        self.notes.insert(key.clone(), note);
        self.selecting.insert(key.clone(), in_source);
        self.gens.insert(key.clone(), made.access);
    }
}
