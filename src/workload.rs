//! What the virtual users send: generated documents, filters and `$set` updates, and the key
//! space of `_id`s that updates and removes draw from. No driver calls here.
//!
//! Generator forms in `[document]`:
//! - a literal: `state = "GD"` (any string, number, boolean or array);
//! - `{ choice = [a, b, ...] }`: one element, uniformly;
//! - `{ choice = [...], paired_with = "city" }`: the element at the index drawn for the sibling
//!   choice field `city` (so `pop` follows `city`);
//! - `{ int = [lo, hi] }`, `{ float = [lo, hi] }`: uniform, inclusive of both ends for int;
//! - any other table: a nested document of generators.

use std::sync::atomic::{AtomicI64, Ordering};

use mongodb::bson::{Bson, Document};
use rand::Rng;

/// Most fields one document level may have when one of them is `paired_with` another.
const MAX_PAIRED_LEVEL: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub enum Gen {
    Literal(Bson),
    Choice(Vec<Bson>),
    /// Index of the sibling choice field, and the values paired with its elements.
    Paired(usize, Vec<Bson>),
    Int(i64, i64),
    Float(f64, f64),
    Nested(DocGen),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocGen {
    pub fields: Vec<(String, Gen)>,
}

/// A generator problem: the key path (relative to `document`) and what is wrong.
#[derive(Debug)]
pub struct GenError {
    pub key: String,
    pub problem: String,
    pub expected: String,
}

impl DocGen {
    pub fn from_table(table: &toml::Table) -> Result<Self, GenError> {
        Self::level(table, "document")
    }

    fn level(table: &toml::Table, path: &str) -> Result<Self, GenError> {
        let names: Vec<&String> = table.keys().collect();
        let mut fields = Vec::with_capacity(table.len());
        for (name, value) in table {
            let key = format!("{path}.{name}");
            if name.is_empty() || name.starts_with('$') || name.contains('.') || name.contains('\0')
            {
                return Err(GenError {
                    key,
                    problem: format!("`{name}` cannot be a MongoDB field name"),
                    expected:
                        "a field name that is not empty, does not start with '$' and has no '.'"
                            .into(),
                });
            }
            let gen = match value {
                toml::Value::Table(t) if t.contains_key("paired_with") => {
                    let with = t
                        .get("paired_with")
                        .and_then(|v| v.as_str())
                        .ok_or_else(|| GenError {
                            key: format!("{key}.paired_with"),
                            problem: "paired_with must name a sibling field".into(),
                            expected: "paired_with = \"city\" next to choice = [...]".into(),
                        })?;
                    let values = choice_list(t, &key)?;
                    let idx = names.iter().position(|n| *n == with);
                    let source = idx.and_then(|i| match table.get(names[i]) {
                        Some(toml::Value::Table(s)) if s.len() == 1 => {
                            s.get("choice").and_then(|c| c.as_array())
                        }
                        _ => None,
                    });
                    match (idx, source) {
                        (Some(i), Some(src)) if src.len() == values.len() && i < MAX_PAIRED_LEVEL => {
                            Gen::Paired(i, values)
                        }
                        (Some(_), Some(src)) if src.len() != values.len() => {
                            return Err(GenError {
                                key: format!("{key}.choice"),
                                problem: format!(
                                    "{} values, but `{with}` has {} choices",
                                    values.len(),
                                    src.len()
                                ),
                                expected: format!("exactly one value per choice of `{with}`"),
                            })
                        }
                        _ => {
                            return Err(GenError {
                                key: format!("{key}.paired_with"),
                                problem: format!("`{with}` is not a choice field of the same table"),
                                expected: format!(
                                    "the name of a sibling field written as {{ choice = [...] }} (one of: {})",
                                    names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                                ),
                            })
                        }
                    }
                }
                toml::Value::Table(t) if t.len() == 1 && t.contains_key("choice") => {
                    Gen::Choice(choice_list(t, &key)?)
                }
                toml::Value::Table(t) if t.len() == 1 && t.contains_key("int") => {
                    let (lo, hi) = range(t, "int", &key, |v| v.as_integer())?;
                    Gen::Int(lo, hi)
                }
                toml::Value::Table(t) if t.len() == 1 && t.contains_key("float") => {
                    let (lo, hi) = range(t, "float", &key, |v| {
                        v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
                    })?;
                    Gen::Float(lo, hi)
                }
                toml::Value::Table(t) => Gen::Nested(Self::level(t, &key)?),
                other => Gen::Literal(to_bson(other)),
            };
            fields.push((name.clone(), gen));
        }
        Ok(DocGen { fields })
    }

    /// Index of a top-level field by name.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }

    pub fn field_names(&self) -> Vec<&str> {
        self.fields.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// A whole document, fields in profile order.
    pub fn generate(&self, rng: &mut impl Rng) -> Document {
        let mut doc = Document::new();
        self.fill(&mut doc, None, rng);
        doc
    }

    /// Only the given top-level fields (a filter or a `$set`), with pairing kept.
    pub fn generate_fields(&self, only: &[usize], rng: &mut impl Rng) -> Document {
        let mut doc = Document::new();
        self.fill(&mut doc, Some(only), rng);
        doc
    }

    pub(crate) fn fill(&self, doc: &mut Document, only: Option<&[usize]>, rng: &mut impl Rng) {
        let mut picked = [usize::MAX; MAX_PAIRED_LEVEL];
        let mut pick = |i: usize, n: usize, rng: &mut dyn rand::RngCore| -> usize {
            if i < MAX_PAIRED_LEVEL {
                if picked[i] == usize::MAX {
                    picked[i] = rng.random_range(0..n);
                }
                picked[i]
            } else {
                rng.random_range(0..n)
            }
        };
        for (i, (name, gen)) in self.fields.iter().enumerate() {
            if only.is_some_and(|o| !o.contains(&i)) {
                continue;
            }
            let value = match gen {
                Gen::Literal(b) => b.clone(),
                Gen::Choice(c) => c[pick(i, c.len(), rng)].clone(),
                Gen::Paired(src, values) => values[pick(*src, values.len(), rng)].clone(),
                Gen::Int(lo, hi) => Bson::Int64(rng.random_range(*lo..=*hi)),
                Gen::Float(lo, hi) => Bson::Double(if lo < hi {
                    rng.random_range(*lo..*hi)
                } else {
                    *lo
                }),
                Gen::Nested(g) => Bson::Document(g.generate(rng)),
            };
            doc.insert(name.clone(), value);
        }
    }
}

fn choice_list(t: &toml::Table, key: &str) -> Result<Vec<Bson>, GenError> {
    match t.get("choice") {
        Some(toml::Value::Array(a)) if !a.is_empty() => Ok(a.iter().map(to_bson).collect()),
        _ => Err(GenError {
            key: format!("{key}.choice"),
            problem: "choice needs a non-empty list".into(),
            expected: "choice = [\"a\", \"b\", ...]".into(),
        }),
    }
}

fn range<T: PartialOrd + Copy>(
    t: &toml::Table,
    kind: &str,
    key: &str,
    get: impl Fn(&toml::Value) -> Option<T>,
) -> Result<(T, T), GenError> {
    let bad = || GenError {
        key: format!("{key}.{kind}"),
        problem: format!("{kind} needs two numbers, low then high"),
        expected: format!("{kind} = [lo, hi] with lo <= hi, e.g. {kind} = [0, 100]"),
    };
    let a = t.get(kind).and_then(|v| v.as_array()).ok_or_else(bad)?;
    match a.as_slice() {
        [lo, hi] => match (get(lo), get(hi)) {
            (Some(lo), Some(hi)) if lo <= hi => Ok((lo, hi)),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

fn to_bson(v: &toml::Value) -> Bson {
    match v {
        toml::Value::String(s) => Bson::String(s.clone()),
        toml::Value::Integer(i) => Bson::Int64(*i),
        toml::Value::Float(f) => Bson::Double(*f),
        toml::Value::Boolean(b) => Bson::Boolean(*b),
        toml::Value::Datetime(d) => Bson::String(d.to_string()),
        toml::Value::Array(a) => Bson::Array(a.iter().map(to_bson).collect()),
        toml::Value::Table(t) => {
            Bson::Document(t.iter().map(|(k, v)| (k.clone(), to_bson(v))).collect())
        }
    }
}

/// The `_id`s the run has written: preload takes `0..n`, each insert takes the next one, and
/// updates by `_id` draw from everything issued so far (a removed one shows as "not matched").
#[derive(Debug, Default)]
pub struct KeySpace {
    next: AtomicI64,
}

impl KeySpace {
    pub fn starting_at(first: i64) -> Self {
        KeySpace {
            next: AtomicI64::new(first),
        }
    }

    pub fn issue(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub fn issued(&self) -> i64 {
        self.next.load(Ordering::Relaxed)
    }

    /// A uniformly drawn `_id` already issued, or None when nothing has been.
    pub fn existing(&self, rng: &mut impl Rng) -> Option<i64> {
        let n = self.issued();
        (n > 0).then(|| rng.random_range(0..n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn gen(text: &str) -> Result<DocGen, GenError> {
        let t: toml::Table = toml::from_str(text).unwrap();
        DocGen::from_table(&t)
    }

    const CITIES: &str = r#"
        city = { choice = ["a", "b", "c"] }
        loc = { x = { float = [1.0, 2.0] }, y = { int = [5, 5] } }
        pop = { paired_with = "city", choice = [1, 2, 3] }
        state = "GD"
    "#;

    #[test]
    fn paired_values_follow_their_choice_field() {
        let g = gen(CITIES).unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..200 {
            let d = g.generate(&mut rng);
            let city = d.get_str("city").unwrap();
            let pop = d.get_i64("pop").unwrap();
            assert_eq!(
                pop,
                match city {
                    "a" => 1,
                    "b" => 2,
                    _ => 3,
                }
            );
            let loc = d.get_document("loc").unwrap();
            let x = loc.get_f64("x").unwrap();
            assert!((1.0..2.0).contains(&x));
            assert_eq!(loc.get_i64("y").unwrap(), 5);
            assert_eq!(d.get_str("state").unwrap(), "GD");
        }
        let keys: Vec<_> = g.generate(&mut rng).keys().cloned().collect();
        assert_eq!(keys, ["city", "loc", "pop", "state"]);
    }

    #[test]
    fn selected_fields_keep_pairing_and_nothing_else() {
        let g = gen(CITIES).unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let only = [g.field_index("pop").unwrap()];
        let d = g.generate_fields(&only, &mut rng);
        assert_eq!(d.len(), 1);
        assert!([1, 2, 3].contains(&d.get_i64("pop").unwrap()));
    }

    #[test]
    fn every_choice_is_drawn() {
        let g = gen(CITIES).unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let seen: std::collections::HashSet<String> = (0..300)
            .map(|_| g.generate(&mut rng).get_str("city").unwrap().to_string())
            .collect();
        assert_eq!(seen.len(), 3);
    }

    #[test]
    fn pairing_with_a_missing_or_mismatched_field_is_an_error() {
        let e = gen("pop = { paired_with = \"town\", choice = [1] }").unwrap_err();
        assert_eq!(e.key, "document.pop.paired_with");
        let e =
            gen("city = { choice = [\"a\"] }\npop = { paired_with = \"city\", choice = [1, 2] }")
                .unwrap_err();
        assert!(e.problem.contains("2 values"), "{}", e.problem);
    }

    #[test]
    fn an_inverted_range_is_an_error() {
        let e = gen("n = { int = [5, 1] }").unwrap_err();
        assert_eq!(e.key, "document.n.int");
    }

    #[test]
    fn key_space_draws_only_issued_ids() {
        let k = KeySpace::starting_at(0);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        assert_eq!(k.existing(&mut rng), None);
        for _ in 0..10 {
            k.issue();
        }
        assert!((0..100).all(|_| k.existing(&mut rng).unwrap() < 10));
    }
}

/// One operation's request, built before its clock starts so generation is never timed.
#[derive(Debug, Clone)]
pub enum Request {
    Insert(mongodb::bson::RawDocumentBuf),
    Find {
        filter: Document,
        limit: u32,
        count: bool,
    },
    UpdateById {
        id: Option<i64>,
        update: Document,
    },
    UpdateByFilter {
        filter: Document,
        update: Document,
        many: bool,
    },
    /// Find one matching `filter` at or after `_id` `from` (so concurrent removers spread over
    /// the collection instead of all finding its first match), then delete it by `_id`.
    Remove {
        filter: Document,
        from: Option<i64>,
    },
}

/// A remove's filter restricted to `_id`s from `from` on: where its search starts.
pub fn from_id(filter: &Document, from: i64) -> Document {
    let mut after = filter.clone();
    after.insert("_id", mongodb::bson::doc! { "$gte": from });
    after
}

impl Request {
    pub fn build(
        op: &crate::plan::OpPlan,
        gen: &DocGen,
        keys: &KeySpace,
        rng: &mut impl Rng,
    ) -> Request {
        use crate::plan::OpPlan;
        let set = |fields: &[usize], rng: &mut _| {
            let mut u = Document::new();
            u.insert("$set", gen.generate_fields(fields, rng));
            u
        };
        match op {
            OpPlan::Insert => {
                let mut doc = Document::new();
                doc.insert("_id", keys.issue());
                gen.fill(&mut doc, None, rng);
                // A generated document always serializes: keys are TOML keys, values plain BSON.
                let raw = mongodb::bson::RawDocumentBuf::from_document(&doc)
                    .expect("generated document is valid BSON");
                Request::Insert(raw)
            }
            OpPlan::Find {
                filter,
                limit,
                count,
            } => Request::Find {
                filter: gen.generate_fields(filter, rng),
                limit: *limit,
                count: *count,
            },
            OpPlan::UpdateById { set: fields } => Request::UpdateById {
                id: keys.existing(rng),
                update: set(fields, rng),
            },
            OpPlan::UpdateByFilter {
                filter,
                set: fields,
                many,
            } => Request::UpdateByFilter {
                filter: gen.generate_fields(filter, rng),
                update: set(fields, rng),
                many: *many,
            },
            OpPlan::Remove { filter } => Request::Remove {
                filter: gen.generate_fields(filter, rng),
                from: keys.existing(rng),
            },
        }
    }
}
