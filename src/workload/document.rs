//! The document generator of `[document]`, and the check that every document it can make is one
//! the server accepts (field names, NUL characters, nesting, size).
//!
//! Generator forms:
//! - a literal: `state = "GD"` (any string, number, boolean, array or table);
//! - `{ choice = [a, b, ...] }`: one element, uniformly;
//! - `{ choice = [...], paired_with = "city" }`: the element at the index drawn for the sibling
//!   choice field `city` (so `pop` follows `city`);
//! - `{ by_rank_of = "author", ranks = [10, 100], then = [a, b, c] }`: `a` when the sibling
//!   field `author` (a `^Choose`) drew one of its first 10 values, `b` for the next 90, `c` for
//!   the rest (each a literal or a generator): two fields drawn together, as capture fits a
//!   date whose range differs with the author's rank;
//! - `{ int = [lo, hi] }`, `{ float = [lo, hi] }`: uniform, inclusive of both ends for int;
//! - any other table: a nested document of generators.

use mongodb::bson::{Bson, Document, RawBson, RawDocumentBuf};
use rand::Rng;

use super::distribution::Chooser;
pub use super::template::GenError;

/// Most fields one document level may have when one of them is `paired_with` another.
const MAX_PAIRED_LEVEL: usize = 64;
/// Levels of nesting the server accepts and the largest document it stores.
pub(crate) const MAX_NESTING: usize = 100;
pub(crate) const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;
/// BSON bytes of the `_id` element every generated document gets (type, "_id\0", int64).
const ID_ELEMENT_BYTES: usize = 1 + 4 + 8;

#[derive(Debug, Clone)]
pub enum Gen {
    Literal(Bson),
    Choice(Vec<Bson>),
    /// Index of the sibling choice field, and the values paired with its elements.
    Paired(usize, Vec<Bson>),
    Int(i64, i64),
    Float(f64, f64),
    Nested(DocGen),
    /// A value with generators (`^RandomInt`, ...) or Extended JSON (`$date`, ...) in it.
    Template(super::template::Template),
    /// A value by the rank the sibling `^Choose` field drew (`by_rank_of`).
    ByRank(Box<ByRank>),
}

/// `{ by_rank_of, ranks, then }`: `then[b]`, where `b` counts the `ranks` bounds at or below
/// the index the field `of` drew.
#[derive(Debug, Clone)]
pub struct ByRank {
    of: usize,
    ranks: Vec<usize>,
    then: Vec<super::template::Template>,
}

impl ByRank {
    fn generate(&self, index: usize, cx: &mut super::template::Cx<'_>) -> Bson {
        let b = self.ranks.iter().take_while(|&&r| index >= r).count();
        self.then.get(b).map_or(Bson::Null, |t| t.generate(cx))
    }
}

/// Per document: the index (and the value, until it is written) each `^Choose` field that
/// another field ranks by drew.
struct Drawn {
    at: Vec<Option<(usize, Option<Bson>)>>,
}

impl Drawn {
    fn new(g: &DocGen) -> Drawn {
        let n = if g.ranked_by.iter().any(|&r| r) {
            g.fields.len()
        } else {
            0
        };
        Drawn { at: vec![None; n] }
    }

    fn draw(&mut self, i: usize, gen: &Gen, cx: &mut super::template::Cx<'_>) {
        if self.at.get(i).is_some_and(Option::is_none) {
            let (j, v) = match gen {
                Gen::Template(t) => t.generate_choice(cx).unwrap_or((0, Bson::Null)),
                _ => (0, Bson::Null),
            };
            self.at[i] = Some((j, Some(v)));
        }
    }

    /// The index field `i` drew (drawing it now if it is written later).
    fn index_of(&mut self, i: usize, gen: &Gen, cx: &mut super::template::Cx<'_>) -> usize {
        self.draw(i, gen, cx);
        self.at.get(i).and_then(|a| a.as_ref()).map_or(0, |a| a.0)
    }

    /// Field `i`'s value (drawn now, or taken as a ranked field drew it before).
    fn value_of(&mut self, i: usize, gen: &Gen, cx: &mut super::template::Cx<'_>) -> Bson {
        self.draw(i, gen, cx);
        self.at
            .get_mut(i)
            .and_then(|a| a.as_mut())
            .and_then(|a| a.1.take())
            .unwrap_or(Bson::Null)
    }
}

#[derive(Debug, Clone, Default)]
pub struct DocGen {
    pub(crate) fields: Vec<(String, Gen)>,
    /// By field: a literal's value or a choice's values already in BSON's bytes, so a raw
    /// document (`fill_raw`) copies them instead of encoding them again.
    raw: Vec<Vec<RawBson>>,
    /// By field: another field's value goes by the index this one drew (`by_rank_of`).
    ranked_by: Vec<bool>,
}

impl DocGen {
    /// Builds the generator and proves that every document it can make is one the server
    /// accepts: no NUL character in a key or string, no key starting with `$`, at most
    /// `MAX_NESTING` levels, at most `MAX_DOCUMENT_BYTES` with its `_id`.
    pub(crate) fn from_table(table: &toml::Table) -> Result<Self, GenError> {
        Self::from_table_at(table, "document")
    }

    /// The same for a document template at another place (`collection[1].document`).
    pub(crate) fn from_table_at(table: &toml::Table, path: &str) -> Result<Self, GenError> {
        let gen = Self::level(table, path, 1)?;
        let most = ID_ELEMENT_BYTES + gen.max_bytes();
        if most > MAX_DOCUMENT_BYTES {
            return Err(GenError {
                key: "document".into(),
                problem: format!(
                    "a generated document can reach {most} bytes, more than the server's limit of {MAX_DOCUMENT_BYTES} (16 MiB)"
                ),
                expected: "smaller literals and choices, so that the largest document fits in 16 MiB".into(),
            });
        }
        Ok(gen)
    }

    /// `depth` is the nesting level of this table's fields (the top-level document is level 1).
    fn level(table: &toml::Table, path: &str, depth: usize) -> Result<Self, GenError> {
        let names: Vec<&String> = table.keys().collect();
        let mut fields = Vec::with_capacity(table.len());
        // Fields by the rank another drew: (field, sibling, key), placed once all are read.
        let mut by_rank: Vec<(usize, String, String)> = Vec::new();
        for (name, value) in table {
            let key = format!("{path}.{name}");
            check_name(name, &key)?;
            let gen = match value {
                toml::Value::Table(t) if t.contains_key("by_rank_of") => {
                    let (of, r) = by_rank_of(t, &key)?;
                    by_rank.push((fields.len(), of, key.clone()));
                    Gen::ByRank(Box::new(r))
                }
                v if templated(v) => {
                    let t = super::template::Template::compile(v, &key)?;
                    if let Some(bad) = stored_key_problem(&t) {
                        return Err(GenError {
                            key,
                            problem: format!("`{}` cannot be a field name of a stored document", bad.escape_debug()),
                            expected: "field names that do not start with `$` and hold no NUL; a generator is a one-key table whose key starts with `^`".into(),
                        });
                    }
                    Gen::Template(t)
                }
                toml::Value::Table(t) if t.contains_key("paired_with") => {
                    let with = t
                        .get("paired_with")
                        .and_then(|v| v.as_str())
                        .ok_or_else(|| GenError {
                            key: format!("{key}.paired_with"),
                            problem: "paired_with must name a sibling field".into(),
                            expected: "paired_with = \"city\" next to choice = [...]".into(),
                        })?;
                    let values = choice_list(t, &key, depth)?;
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
                    Gen::Choice(choice_list(t, &key, depth)?)
                }
                toml::Value::Table(t) if t.len() == 1 && t.contains_key("int") => {
                    let (lo, hi) = range(t, "int", &key, |v| v.as_integer())?;
                    Gen::Int(lo, hi)
                }
                toml::Value::Table(t) if t.len() == 1 && t.contains_key("float") => {
                    let (lo, hi) = range(t, "float", &key, |v| {
                        v.as_float()
                            .or_else(|| v.as_integer().map(crate::num::real_signed))
                    })?;
                    Gen::Float(lo, hi)
                }
                toml::Value::Table(t) => {
                    too_deep(depth + 1, &key)?;
                    Gen::Nested(Self::level(t, &key, depth + 1)?)
                }
                other => Gen::Literal(to_bson(other, &key, depth)?),
            };
            fields.push((name.clone(), gen));
        }
        let raw = raw_values(&fields);
        let ranked_by = place_by_rank(&mut fields, by_rank, &names)?;
        Ok(DocGen {
            fields,
            raw,
            ranked_by,
        })
    }

    /// Index of a top-level field by name.
    pub(crate) fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }

    pub(crate) fn field_names(&self) -> Vec<&str> {
        self.fields.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Is `path` (dotted: `loc.x`) a field of the documents it makes?
    pub(crate) fn has_path(&self, path: &str) -> bool {
        let (head, rest) = path.split_once('.').unwrap_or((path, ""));
        match self.fields.iter().find(|(n, _)| n == head) {
            None => false,
            Some((_, Gen::Nested(g))) if !rest.is_empty() => g.has_path(rest),
            Some(_) => rest.is_empty(),
        }
    }

    /// A fresh value of the field at `path` (`^Field`); a paired field follows a fresh draw of
    /// the field it pairs with.
    pub(crate) fn generate_path(&self, path: &str, rng: &mut impl Rng) -> Option<Bson> {
        let (head, rest) = path.split_once('.').unwrap_or((path, ""));
        let i = self.field_index(head)?;
        match (&self.fields[i].1, rest.is_empty()) {
            (Gen::Nested(g), false) => g.generate_path(rest, rng),
            (_, true) => self.generate_fields(&[i], rng).remove(head),
            _ => None,
        }
    }

    /// The largest BSON size of a generated document without `_id`: every field at its largest.
    fn max_bytes(&self) -> usize {
        let elements: usize = self
            .fields
            .iter()
            .map(|(name, gen)| {
                let value = match gen {
                    Gen::Literal(b) => bson_value_bytes(b),
                    Gen::Choice(c) | Gen::Paired(_, c) => {
                        c.iter().map(bson_value_bytes).max().unwrap_or(0)
                    }
                    Gen::Int(..) | Gen::Float(..) => 8,
                    Gen::Nested(g) => g.max_bytes(),
                    // Generated sizes are not bounded here; the server refuses a document over
                    // 16 MiB, counted as an error.
                    Gen::Template(t) => t.constant().map_or(0, bson_value_bytes),
                    Gen::ByRank(r) => r
                        .then
                        .iter()
                        .map(|t| t.constant().map_or(0, bson_value_bytes))
                        .max()
                        .unwrap_or(0),
                };
                1 + name.len() + 1 + value
            })
            .sum();
        4 + elements + 1
    }

    /// A whole document, fields in profile order.
    pub fn generate(&self, rng: &mut impl Rng) -> Document {
        let mut doc = Document::new();
        self.fill(&mut doc, None, rng);
        doc
    }

    /// Only the given top-level fields (a filter or a `$set`), with pairing kept.
    pub(crate) fn generate_fields(&self, only: &[usize], rng: &mut impl Rng) -> Document {
        let mut doc = Document::new();
        self.fill(&mut doc, Some(only), rng);
        doc
    }

    /// A filter on the given fields, each choice drawn by `keys` (the group's key
    /// distribution, over the choice list in its order).
    pub(crate) fn generate_filter(
        &self,
        only: &[usize],
        keys: &mut Chooser,
        rng: &mut impl Rng,
    ) -> Document {
        let mut doc = Document::new();
        let mut state = super::template::UserState::default();
        let mut lookup = super::template::NoLookup;
        let mut cx = super::template::Cx {
            rng,
            lookup: &mut lookup,
            now_ms: 0,
            user: 0,
            state: &mut state,
        };
        self.fill_picked(&mut doc, Some(only), Some(keys), &mut cx);
        doc
    }

    /// Adds the generated fields (all, or `only` those) to `doc`. Templates in it generate
    /// without `^Key` or `^Field` values and with a fresh `^Inc` state: `fill_raw` gives them
    /// the user's.
    pub(crate) fn fill(&self, doc: &mut Document, only: Option<&[usize]>, rng: &mut impl Rng) {
        self.with_plain_cx(rng, |cx| self.fill_picked(doc, only, None, cx))
    }

    /// A document to insert with `_id` `id`, in BSON's bytes: what `fill` makes, with the same
    /// draws.
    pub fn raw_with_id(&self, id: i64, rng: &mut impl Rng) -> RawDocumentBuf {
        self.with_plain_cx(rng, |cx| self.raw_doc(id, cx))
    }

    /// Runs `f` with a context of no lookups, a fresh `^Inc` state and the wall clock read
    /// only when a template needs it.
    fn with_plain_cx<R>(
        &self,
        rng: &mut impl Rng,
        f: impl FnOnce(&mut super::template::Cx<'_>) -> R,
    ) -> R {
        let mut state = super::template::UserState::default();
        let mut lookup = super::template::NoLookup;
        let mut cx = super::template::Cx {
            rng,
            lookup: &mut lookup,
            now_ms: if self.has_templates() {
                super::template::now_ms()
            } else {
                0
            },
            user: 0,
            state: &mut state,
        };
        f(&mut cx)
    }

    /// A document with `_id` `id` and every generated field, in BSON's bytes; a template with
    /// an `_id` field of its own keeps its own (as a `Document` would, the generated value
    /// replacing the issued one).
    pub(crate) fn raw_doc(&self, id: i64, cx: &mut super::template::Cx<'_>) -> RawDocumentBuf {
        let mut doc = RawDocumentBuf::new();
        if self.fields.iter().any(|(name, _)| name == "_id") {
            // Its own `_id`: the issued one is not the document's, so `^Id` gives null.
            self.fill_raw(&mut doc, cx);
            return doc;
        }
        doc.append("_id", id);
        super::template::with_own_id(id, || self.fill_raw(&mut doc, cx));
        doc
    }

    /// Appends every generated field to a raw document, as `fill` does to a `Document` (the
    /// same draws in the same order, so a seed makes the same documents): an insert's
    /// document built in the bytes it is sent in, without a `Document` to encode again.
    pub(crate) fn fill_raw(&self, doc: &mut RawDocumentBuf, cx: &mut super::template::Cx<'_>) {
        let mut picked = [usize::MAX; MAX_PAIRED_LEVEL];
        let mut pick = |i: usize, n: usize, rng: &mut &mut dyn rand::RngCore| -> usize {
            if i < MAX_PAIRED_LEVEL {
                if picked[i] == usize::MAX {
                    picked[i] = rand::Rng::random_range(rng, 0..n);
                }
                picked[i]
            } else {
                rand::Rng::random_range(rng, 0..n)
            }
        };
        let mut drawn = Drawn::new(self);
        for (i, (name, gen)) in self.fields.iter().enumerate() {
            if self.ranked_by.get(i).copied().unwrap_or(false) {
                let v = drawn.value_of(i, gen, cx);
                doc.append(name, RawBson::try_from(v).unwrap_or(RawBson::Null));
                continue;
            }
            // A literal or a choice: its bytes, made once when the profile was read (`raw`
            // is built beside `fields` by the one constructor, so it has this entry).
            let mut cached = |j: usize| doc.append_ref(name, self.raw[i][j].as_raw_bson_ref());
            match gen {
                Gen::Literal(_) => cached(0),
                Gen::Choice(c) => {
                    let j = pick(i, c.len(), &mut cx.rng);
                    cached(j)
                }
                Gen::Paired(src, values) => {
                    let j = pick(*src, values.len(), &mut cx.rng);
                    cached(j)
                }
                Gen::Int(lo, hi) => doc.append(name, cx.rng.random_range(*lo..=*hi)),
                Gen::Float(lo, hi) => doc.append(
                    name,
                    if lo < hi {
                        cx.rng.random_range(*lo..*hi)
                    } else {
                        *lo
                    },
                ),
                Gen::Nested(g) => {
                    let mut d = RawDocumentBuf::new();
                    g.fill_raw(&mut d, cx);
                    doc.append(name, d)
                }
                Gen::Template(t) => doc.append(
                    name,
                    RawBson::try_from(t.generate(cx)).unwrap_or(RawBson::Null),
                ),
                Gen::ByRank(r) => {
                    let j = drawn.index_of(r.of, &self.fields[r.of].1, cx);
                    let v = r.generate(j, cx);
                    doc.append(name, RawBson::try_from(v).unwrap_or(RawBson::Null))
                }
            }
        }
    }

    fn has_templates(&self) -> bool {
        self.fields.iter().any(|(_, g)| match g {
            Gen::Template(_) | Gen::ByRank(_) => true,
            Gen::Nested(n) => n.has_templates(),
            _ => false,
        })
    }

    fn fill_picked(
        &self,
        doc: &mut Document,
        only: Option<&[usize]>,
        mut keys: Option<&mut Chooser>,
        cx: &mut super::template::Cx<'_>,
    ) {
        let mut picked = [usize::MAX; MAX_PAIRED_LEVEL];
        let mut pick = |i: usize, n: usize, rng: &mut &mut dyn rand::RngCore| -> usize {
            let mut draw = |rng: &mut &mut dyn rand::RngCore| match keys.as_deref_mut() {
                Some(k) => usize::try_from(k.pick(n as u64, rng)).unwrap_or(0),
                None => rand::Rng::random_range(rng, 0..n),
            };
            if i < MAX_PAIRED_LEVEL {
                if picked[i] == usize::MAX {
                    picked[i] = draw(rng);
                }
                picked[i]
            } else {
                draw(rng)
            }
        };
        let mut drawn = Drawn::new(self);
        for (i, (name, gen)) in self.fields.iter().enumerate() {
            if only.is_some_and(|o| !o.contains(&i)) {
                continue;
            }
            if self.ranked_by.get(i).copied().unwrap_or(false) {
                let v = drawn.value_of(i, gen, cx);
                doc.insert(name.clone(), v);
                continue;
            }
            let value = match gen {
                Gen::Literal(b) => b.clone(),
                Gen::Choice(c) => c[pick(i, c.len(), &mut cx.rng)].clone(),
                Gen::Paired(src, values) => values[pick(*src, values.len(), &mut cx.rng)].clone(),
                Gen::Int(lo, hi) => Bson::Int64(cx.rng.random_range(*lo..=*hi)),
                Gen::Float(lo, hi) => Bson::Double(if lo < hi {
                    cx.rng.random_range(*lo..*hi)
                } else {
                    *lo
                }),
                Gen::Nested(g) => {
                    let mut d = Document::new();
                    g.fill_picked(&mut d, None, None, cx);
                    Bson::Document(d)
                }
                Gen::Template(t) => t.generate(cx),
                Gen::ByRank(r) => {
                    let j = drawn.index_of(r.of, &self.fields[r.of].1, cx);
                    r.generate(j, cx)
                }
            };
            doc.insert(name.clone(), value);
        }
    }
}

/// The keys of Extended JSON's type wrappers (`{ "$date" = "2026-01-01T00:00:00Z" }`); any
/// other `$` key in a document to store is refused.
const EXTENDED_JSON: [&str; 16] = [
    "$date",
    "$oid",
    "$numberLong",
    "$numberInt",
    "$numberDouble",
    "$numberDecimal",
    "$binary",
    "$uuid",
    "$regularExpression",
    "$regex",
    "$timestamp",
    "$minKey",
    "$maxKey",
    "$symbol",
    "$code",
    "$dbPointer",
];

/// By field: a literal's value or a choice's values in BSON's bytes (checked when read: every
/// literal encodes, no NUL, no `$` key, within the size).
fn raw_values(fields: &[(String, Gen)]) -> Vec<Vec<RawBson>> {
    fields
        .iter()
        .map(|(_, g)| {
            let values: &[Bson] = match g {
                Gen::Literal(b) => std::slice::from_ref(b),
                Gen::Choice(c) | Gen::Paired(_, c) => c,
                _ => &[],
            };
            values
                .iter()
                .map(|b| RawBson::try_from(b.clone()).unwrap_or(RawBson::Null))
                .collect()
        })
        .collect()
}

/// Points each `by_rank_of` field (`(field, sibling, key)`) at its sibling, which must be a
/// `^Choose`; which fields others go by.
fn place_by_rank(
    fields: &mut [(String, Gen)],
    by_rank: Vec<(usize, String, String)>,
    names: &[&String],
) -> Result<Vec<bool>, GenError> {
    let mut ranked_by = vec![false; fields.len()];
    for (at, of, key) in by_rank {
        let i = fields.iter().position(|(n, _)| *n == of);
        let choices = i.and_then(|i| match &fields[i].1 {
            Gen::Template(t) => t.choices(),
            _ => None,
        });
        match (i, choices) {
            (Some(i), Some(_)) => {
                ranked_by[i] = true;
                if let Gen::ByRank(r) = &mut fields[at].1 {
                    r.of = i;
                }
            }
            _ => {
                return Err(GenError {
                    key: format!("{key}.by_rank_of"),
                    problem: format!("`{of}` is not a `^Choose` field of the same table"),
                    expected: format!(
                        "the name of a sibling field written as {{ \"^Choose\" = {{ from = [...], weights = [...] }} }} (one of: {})",
                        names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                })
            }
        }
    }
    Ok(ranked_by)
}

/// `{ by_rank_of = "author", ranks = [10, 100], then = [a, b, c] }`: the sibling's name and the
/// form (its sibling placed by the caller).
fn by_rank_of(t: &toml::Table, key: &str) -> Result<(String, ByRank), GenError> {
    let err = |k: &str, problem: String| {
        GenError {
        key: format!("{key}{k}"),
        problem,
        expected: "{ by_rank_of = \"author\", ranks = [10, 100], then = [a, b, c] }: a sibling `^Choose` field, increasing ranks above 0, and one value more than ranks".into(),
    }
    };
    if let Some(extra) = t
        .keys()
        .find(|k| !["by_rank_of", "ranks", "then"].contains(&k.as_str()))
    {
        return Err(err(
            &format!(".{extra}"),
            format!("`{extra}` is not a key of by_rank_of"),
        ));
    }
    let of = t
        .get("by_rank_of")
        .and_then(|v| v.as_str())
        .ok_or_else(|| err(".by_rank_of", "by_rank_of must name a sibling field".into()))?;
    let ranks: Vec<usize> = t
        .get("ranks")
        .and_then(|v| v.as_array())
        .ok_or_else(|| err(".ranks", "ranks is missing or not an array".into()))?
        .iter()
        .map(|r| {
            r.as_integer()
                .and_then(|r| usize::try_from(r).ok())
                .filter(|&r| r > 0)
        })
        .collect::<Option<_>>()
        .ok_or_else(|| err(".ranks", "every rank must be an integer above 0".into()))?;
    if ranks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(err(".ranks", "the ranks must increase".into()));
    }
    let then = t
        .get("then")
        .and_then(|v| v.as_array())
        .ok_or_else(|| err(".then", "then is missing or not an array".into()))?;
    if then.len() != ranks.len() + 1 {
        return Err(err(
            ".then",
            format!(
                "{} values for {} ranks (one more than the ranks is needed)",
                then.len(),
                ranks.len()
            ),
        ));
    }
    let then = then
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("{key}.then[{i}]");
            let t = super::template::Template::compile(v, &at)?;
            if let Some(bad) = stored_key_problem(&t) {
                return Err(GenError {
                    key: at,
                    problem: format!(
                        "`{}` cannot be a field name of a stored document",
                        bad.escape_debug()
                    ),
                    expected: "field names that do not start with `$` and hold no NUL".into(),
                });
            }
            Ok(t)
        })
        .collect::<Result<Vec<_>, GenError>>()?;
    Ok((
        of.to_string(),
        ByRank {
            of: usize::MAX,
            ranks,
            then,
        },
    ))
}

/// Does a document's value hold a generator (`^` key), an Extended JSON wrapper (`$` key) or a
/// TOML datetime anywhere in it (then it is a template; a plain table is a nested document)?
fn templated(v: &toml::Value) -> bool {
    match v {
        toml::Value::Datetime(_) => true,
        toml::Value::Table(t) => {
            t.keys()
                .any(|k| k.starts_with('^') || EXTENDED_JSON.contains(&k.as_str()))
                && !t.contains_key("choice")
        }
        toml::Value::Array(a) => a.iter().any(|x| {
            templated(x) || matches!(x, toml::Value::Table(t) if t.values().any(templated))
        }),
        _ => false,
    }
}

/// A key a stored document cannot have, in one value generated from `t`.
fn stored_key_problem(t: &super::template::Template) -> Option<String> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut state = super::template::UserState::default();
    let mut lookup = super::template::NoLookup;
    let mut cx = super::template::Cx {
        rng: &mut rng,
        lookup: &mut lookup,
        now_ms: 0,
        user: 0,
        state: &mut state,
    };
    fn bad(b: &Bson) -> Option<String> {
        match b {
            Bson::Document(d) => d.iter().find_map(|(k, v)| {
                if k.starts_with('$') || k.contains('\0') {
                    Some(k.clone())
                } else {
                    bad(v)
                }
            }),
            Bson::Array(a) => a.iter().find_map(bad),
            _ => None,
        }
    }
    bad(&t.generate(&mut cx))
}

/// A field name the server stores as written: not empty, no `$` first, no `.`, no NUL.
fn check_name(name: &str, key: &str) -> Result<(), GenError> {
    if name.is_empty() || name.starts_with('$') || name.contains('.') || name.contains('\0') {
        return Err(GenError {
            key: key.to_string(),
            problem: format!("`{}` cannot be a MongoDB field name", name.escape_debug()),
            expected:
                "a field name that is not empty, does not start with '$' and has no '.' or NUL character"
                    .into(),
        });
    }
    Ok(())
}

fn too_deep(depth: usize, key: &str) -> Result<(), GenError> {
    if depth > MAX_NESTING {
        return Err(GenError {
            key: key.to_string(),
            problem: format!(
                "documents and arrays nested {depth} levels deep; the server accepts at most {MAX_NESTING}"
            ),
            expected: format!("at most {MAX_NESTING} levels of nested tables and arrays"),
        });
    }
    Ok(())
}

fn choice_list(t: &toml::Table, key: &str, depth: usize) -> Result<Vec<Bson>, GenError> {
    let key = format!("{key}.choice");
    match t.get("choice") {
        Some(toml::Value::Array(a)) if !a.is_empty() => a
            .iter()
            .enumerate()
            .map(|(i, v)| to_bson(v, &format!("{key}[{i}]"), depth))
            .collect(),
        _ => Err(GenError {
            key,
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

/// A literal value as BSON, checked at every depth; `depth` is the level the value sits at.
fn to_bson(v: &toml::Value, key: &str, depth: usize) -> Result<Bson, GenError> {
    Ok(match v {
        toml::Value::String(s) => {
            if s.contains('\0') {
                return Err(GenError {
                    key: key.to_string(),
                    problem: "the string holds a NUL character, which the server refuses".into(),
                    expected: "a string without \\u0000".into(),
                });
            }
            Bson::String(s.clone())
        }
        toml::Value::Integer(i) => Bson::Int64(*i),
        toml::Value::Float(f) => Bson::Double(*f),
        toml::Value::Boolean(b) => Bson::Boolean(*b),
        toml::Value::Datetime(d) => Bson::String(d.to_string()),
        toml::Value::Array(a) => {
            too_deep(depth + 1, key)?;
            Bson::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| to_bson(v, &format!("{key}[{i}]"), depth + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        toml::Value::Table(t) => {
            too_deep(depth + 1, key)?;
            let mut doc = Document::new();
            for (k, v) in t {
                let at = format!("{key}.{k}");
                check_name(k, &at)?;
                doc.insert(k.clone(), to_bson(v, &at, depth + 1)?);
            }
            Bson::Document(doc)
        }
    })
}

/// BSON bytes of a value (without its element's type byte and key).
fn bson_value_bytes(b: &Bson) -> usize {
    super::size::value(b)
}
#[cfg(test)]
mod tests;
