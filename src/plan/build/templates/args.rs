//! A verb's arguments as a step's table gives them: each key read once, typed and checked (a
//! template tried on a sample document), and a key no verb reads refused by name.

use super::*;

/// A sample `Lookup` for the trial generation: `_id` 0 and the document template's values.
pub(super) struct Trial<'a>(&'a DocGen);

impl Lookup for Trial<'_> {
    fn key(&mut self, _rng: &mut dyn rand::RngCore) -> Option<Bson> {
        Some(Bson::Int64(0))
    }
    fn field(&mut self, path: &str, rng: &mut dyn rand::RngCore) -> Option<Bson> {
        let mut rng = rng;
        self.0.generate_path(path, &mut rng)
    }
}

/// Reads one operation table's arguments, each located at `path.ARG`.
pub(super) struct Args<'a> {
    pub(super) loaded: &'a Loaded,
    pub(super) path: String,
    pub(super) table: toml::Table,
    pub(super) verb: Verb,
    pub(super) coll: &'a CollectionPlan,
}

impl<'a> Args<'a> {
    pub(super) fn err(
        &self,
        k: &str,
        problem: impl Into<String>,
        expected: impl Into<String>,
    ) -> ProfileError {
        let key = if k.is_empty() {
            self.path.clone()
        } else {
            format!("{}.{k}", self.path)
        };
        self.loaded.error_at(&key, problem, expected)
    }

    pub(super) fn check_keys(&self) -> Result<(), ProfileError> {
        let ok = self.verb.arguments();
        for k in self.table.keys() {
            if !ok.contains(&k.as_str()) {
                let close = ok
                    .iter()
                    .map(|o| (strsim::jaro_winkler(o, k), *o))
                    .filter(|(s, _)| *s > 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, o)| format!(" (did you mean `{o}`?)"))
                    .unwrap_or_default();
                return Err(self.err(
                    k,
                    format!("`{k}` is not an argument of {}{close}", self.verb.name()),
                    if ok.is_empty() {
                        format!(
                            "{} takes no arguments: {} = {{}}",
                            self.verb.name(),
                            self.verb.name()
                        )
                    } else {
                        format!("any of: {}", ok.join(", "))
                    },
                ));
            }
        }
        Ok(())
    }

    pub(super) fn template(&self, k: &str) -> Result<Option<Template>, ProfileError> {
        let Some(v) = self.table.get(k) else {
            return Ok(None);
        };
        let t = Template::compile_arg(v, &format!("{}.{k}", self.path))
            .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?;
        for p in t.field_paths() {
            if !self.coll.document.has_path(&p) {
                return Err(self.err(
                    k,
                    format!(
                        "`^Field` path `{p}` is not a field of collection `{}`'s document template",
                        self.coll.name
                    ),
                    format!(
                        "a path of its document: {}",
                        self.coll.document.field_names().join(", ")
                    ),
                ));
            }
        }
        Ok(Some(t))
    }

    pub(super) fn required(&self, k: &str, example: &str) -> Result<Template, ProfileError> {
        self.template(k)?.ok_or_else(|| {
            self.err(
                "",
                format!("{} needs `{k}`", self.verb.name()),
                format!("{k} = {example}"),
            )
        })
    }

    /// A filter: `{}` (every document) when not given.
    pub(super) fn filter(&self) -> Result<Template, ProfileError> {
        Ok(match self.template("filter")? {
            Some(t) => t,
            None => Template::compile(&toml::Value::Table(toml::Table::new()), &self.path)
                .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?,
        })
    }

    /// A constant value (the server needs it fixed).
    pub(super) fn constant(&self, k: &str) -> Result<Option<Bson>, ProfileError> {
        let Some(t) = self.template(k)? else {
            return Ok(None);
        };
        match t.constant() {
            Some(b) => Ok(Some(b.clone())),
            None => Err(self.err(
                k,
                format!(
                    "`{k}` of {} is sent as written; a generator has no meaning here",
                    self.verb.name()
                ),
                "a constant value (generators go in filter, update, document, pipeline)",
            )),
        }
    }

    pub(super) fn doc(&self, k: &str, example: &str) -> Result<Option<Document>, ProfileError> {
        match self.constant(k)? {
            None => Ok(None),
            Some(Bson::Document(d)) => Ok(Some(d)),
            Some(_) => Err(self.err(
                k,
                format!("`{k}` must be a document"),
                format!("{k} = {example}"),
            )),
        }
    }

    pub(super) fn hint(&self) -> Result<Option<Bson>, ProfileError> {
        // A string is the index's name, not JSON text.
        if let Some(toml::Value::String(name)) = self.table.get("hint") {
            return Ok(Some(Bson::String(name.clone())));
        }
        match self.constant("hint")? {
            None => Ok(None),
            Some(b @ (Bson::Document(_) | Bson::String(_))) => Ok(Some(b)),
            Some(_) => Err(self.err(
                "hint",
                "a hint is an index's name or its keys",
                "hint = \"status_1_created_-1\" or hint = { status = 1, created = -1 }",
            )),
        }
    }

    pub(super) fn bool(&self, k: &str) -> Result<Option<bool>, ProfileError> {
        match self.table.get(k) {
            None => Ok(None),
            Some(toml::Value::Boolean(b)) => Ok(Some(*b)),
            Some(_) => Err(self.err(
                k,
                format!("`{k}` must be true or false"),
                format!("{k} = true"),
            )),
        }
    }

    /// `int`, as the type its option takes (the bounds keep it in that type's range).
    pub(super) fn int_as<T: TryFrom<i64>>(
        &self,
        k: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<T>, ProfileError> {
        Ok(self.int(k, min, max)?.and_then(|n| T::try_from(n).ok()))
    }

    pub(super) fn int(&self, k: &str, min: i64, max: i64) -> Result<Option<i64>, ProfileError> {
        match self.table.get(k) {
            None => Ok(None),
            Some(toml::Value::Integer(n)) if (min..=max).contains(n) => Ok(Some(*n)),
            Some(_) => Err(self.err(
                k,
                format!("`{k}` must be a whole number from {min} to {max}"),
                format!("{k} = {}", min.max(1)),
            )),
        }
    }

    pub(super) fn array_filters(&self) -> Result<Option<Vec<Document>>, ProfileError> {
        match self.constant("arrayFilters")? {
            None => Ok(None),
            Some(Bson::Array(a)) if a.iter().all(|x| matches!(x, Bson::Document(_))) => Ok(Some(
                a.into_iter()
                    .filter_map(|x| match x {
                        Bson::Document(d) => Some(d),
                        _ => None,
                    })
                    .collect(),
            )),
            Some(_) => Err(self.err(
                "arrayFilters",
                "arrayFilters is a list of filter documents",
                "arrayFilters = [ { \"e.qty\" = { \"$gt\" = 2 } } ]",
            )),
        }
    }

    pub(super) fn write_args(&self) -> Result<WriteArgs, ProfileError> {
        Ok(WriteArgs {
            upsert: self.bool("upsert")?,
            array_filters: self.array_filters()?,
            hint: self.hint()?,
            collation: self.doc("collation", "{ locale = \"en\" }")?,
        })
    }

    /// Generates `t` once with a sample key and the collection's values.
    pub(super) fn trial(&self, t: &Template) -> Bson {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut lookup = Trial(&self.coll.document);
        let mut state = UserState::default();
        let mut cx = Cx {
            rng: &mut rng,
            lookup: &mut lookup,
            now_ms: 0,
            user: 0,
            state: &mut state,
        };
        t.generate(&mut cx)
    }

    pub(super) fn must_be_doc(
        &self,
        k: &str,
        t: &Template,
        example: &str,
    ) -> Result<Document, ProfileError> {
        match self.trial(t) {
            Bson::Document(d) => Ok(d),
            other => Err(self.err(
                k,
                format!("`{k}` must make a document, and makes {}", kind_of(&other)),
                format!("{k} = {example}"),
            )),
        }
    }

    /// An update: a document of operators (`$set`, `$inc`, ...) or a pipeline (a list of stages).
    pub(super) fn update(&self, k: &str) -> Result<Template, ProfileError> {
        let t = self.required(k, "{ \"$set\" = { status = \"paid\" } }")?;
        match self.trial(&t) {
            Bson::Document(d) => {
                if d.is_empty() || d.keys().any(|key| !key.starts_with('$')) {
                    let first = d.keys().find(|key| !key.starts_with('$')).cloned();
                    return Err(self.err(
                        k,
                        match first {
                            Some(f) => format!("an update is made of operators, and `{f}` is not one (without an operator it would replace the document)"),
                            None => "an empty update changes nothing".to_string(),
                        },
                        "operators, e.g. update = { \"$set\" = { status = \"paid\" }, \"$inc\" = { n = 1 } }, or a pipeline: update = [ { \"$set\" = { ... } } ] (replaceOne replaces)",
                    ));
                }
            }
            Bson::Array(stages) => self.pipeline_shape(k, &stages)?,
            other => {
                return Err(self.err(
                    k,
                    format!(
                        "an update is a document of operators or a pipeline, not {}",
                        kind_of(&other)
                    ),
                    "update = { \"$set\" = { status = \"paid\" } }",
                ))
            }
        }
        Ok(t)
    }

    pub(super) fn pipeline_shape(&self, k: &str, stages: &[Bson]) -> Result<(), ProfileError> {
        for (i, s) in stages.iter().enumerate() {
            match s {
                Bson::Document(d) if d.len() == 1 && d.keys().all(|s| s.starts_with('$')) => {}
                _ => {
                    return Err(self.err(
                        &format!("{k}[{i}]"),
                        format!("stage {i} is not a one-key document of a `$` stage"),
                        "[ { \"$match\" = { status = \"open\" } }, { \"$group\" = { _id = \"$customer\", n = { \"$sum\" = 1 } } } ]",
                    ))
                }
            }
        }
        Ok(())
    }

    /// A document to insert or a replacement: no `$` keys or NUL anywhere.
    pub(super) fn stored(&self, k: &str, t: &Template) -> Result<(), ProfileError> {
        let d = self.must_be_doc(k, t, "{ status = \"open\" }")?;
        if let Some(bad) = bad_key(&d) {
            return Err(self.err(
                k,
                format!("`{}` cannot be a field name of a stored document", bad.escape_debug()),
                "field names that do not start with `$` and hold no NUL (operators belong in filters and updates)",
            ));
        }
        Ok(())
    }

    pub(super) fn sort(&self) -> Result<Option<Document>, ProfileError> {
        self.doc("sort", "{ created = -1 }")
    }

    pub(super) fn projection(&self) -> Result<Option<Document>, ProfileError> {
        self.doc("projection", "{ _id = 0, customer = 1 }")
    }

    /// A find's `projection` and `let`: each a document as written, or, with a generator in it,
    /// made per operation (genny's find `Options` are generated): the third value holds those.
    #[allow(clippy::type_complexity)]
    pub(super) fn find_shape(
        &self,
    ) -> Result<(Option<Document>, Option<Document>, Option<Box<Template>>), ProfileError> {
        let mut fixed = [None, None];
        let mut generated = toml::Table::new();
        for (i, (k, example)) in [
            ("projection", "{ _id = 0, customer = 1 }"),
            ("let", "{ low = 10 }"),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(t) = self.template(k)? else {
                continue;
            };
            let d = self.must_be_doc(k, &t, example)?;
            match t.constant() {
                Some(_) => fixed[i] = Some(d),
                None => {
                    if let Some(v) = self.table.get(k) {
                        generated.insert(k.to_string(), v.clone());
                    }
                }
            }
        }
        let shaped = if generated.is_empty() {
            None
        } else {
            Some(Box::new(
                Template::compile_arg(&toml::Value::Table(generated), &self.path)
                    .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?,
            ))
        };
        let [projection, let_vars] = fixed;
        Ok((projection, let_vars, shaped))
    }

    pub(super) fn return_after(&self) -> Result<bool, ProfileError> {
        match self.table.get("returnDocument") {
            None => Ok(false),
            Some(toml::Value::String(s)) if s == "after" => Ok(true),
            Some(toml::Value::String(s)) if s == "before" => Ok(false),
            Some(_) => Err(self.err(
                "returnDocument",
                "returnDocument is \"before\" or \"after\"",
                "returnDocument = \"after\"",
            )),
        }
    }

    /// A filter, `{}` when not given, that makes a document.
    pub(super) fn doc_filter(&self) -> Result<Template, ProfileError> {
        let filter = self.filter()?;
        self.must_be_doc("filter", &filter, "{ status = \"open\" }")?;
        Ok(filter)
    }

    /// A filter that must be given and make a document.
    pub(super) fn required_filter(&self) -> Result<Template, ProfileError> {
        let filter = self.required("filter", "{ _id = { \"^Key\" = {} } }")?;
        self.must_be_doc("filter", &filter, "{ status = \"open\" }")?;
        Ok(filter)
    }
}

pub(super) fn kind_of(b: &Bson) -> &'static str {
    match b {
        Bson::Document(_) => "a document",
        Bson::Array(_) => "an array",
        Bson::String(_) => "a string",
        Bson::Null => "null",
        _ => "a single value",
    }
}

/// A field name a stored document cannot have (`$` first, or NUL), anywhere in it.
pub(super) fn bad_key(d: &Document) -> Option<String> {
    for (k, v) in d {
        if k.starts_with('$') || k.contains('\0') {
            return Some(k.clone());
        }
        let inner = match v {
            Bson::Document(d) => bad_key(d),
            Bson::Array(a) => a.iter().find_map(|x| match x {
                Bson::Document(d) => bad_key(d),
                _ => None,
            }),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
    }
    None
}
