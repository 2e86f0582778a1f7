//! A group's own operations: one operation table (`[group.find]`) or several named ones with
//! weights (`[[group.ops]]`), each read into a `TemplateOp` with its arguments checked: unknown
//! arguments (with did-you-mean), wrong types, a generator where the server needs a constant,
//! an update without operators or pipeline, `$` keys in a document to insert, `^Field` paths the
//! collection's document lacks. Each template is generated once here, so a shape the server
//! would refuse is found before anything is sent.
//!
//! Owns: operation tables becoming `TemplateOp`s. Never: sends them (that is `ops::template`)
//! or explains them (`ops::explain`).

use std::sync::Arc;

use mongodb::bson::{Bson, Document};
use rand::SeedableRng;

use super::groups::GroupAt;
use crate::error::ProfileError;
use crate::plan::profile::Loaded;
use crate::plan::CollectionPlan;
use crate::workload::command::{
    BulkModel, Command, FindAndModifyArgs, FindArgs, StepsOp, TemplateOp, Verb, WriteArgs,
};
use crate::workload::op::OpName;
use crate::workload::template::{Cx, Lookup, UserState};
use crate::workload::{DocGen, OpSpec, Template};

/// A group's first operation, and (for several) each with its weight.
type Ops = (OpSpec, Vec<(OpSpec, u32)>);

/// The most documents one insertMany may carry.
const MAX_BATCH: i64 = 100_000;

/// A sample `Lookup` for the trial generation: `_id` 0 and the document template's values.
struct Trial<'a>(&'a DocGen);

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
struct Args<'a> {
    loaded: &'a Loaded,
    path: String,
    table: toml::Table,
    verb: Verb,
    coll: &'a CollectionPlan,
}

impl<'a> Args<'a> {
    fn err(
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

    fn check_keys(&self) -> Result<(), ProfileError> {
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

    fn template(&self, k: &str) -> Result<Option<Template>, ProfileError> {
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

    fn required(&self, k: &str, example: &str) -> Result<Template, ProfileError> {
        self.template(k)?.ok_or_else(|| {
            self.err(
                "",
                format!("{} needs `{k}`", self.verb.name()),
                format!("{k} = {example}"),
            )
        })
    }

    /// A filter: `{}` (every document) when not given.
    fn filter(&self) -> Result<Template, ProfileError> {
        Ok(match self.template("filter")? {
            Some(t) => t,
            None => Template::compile(&toml::Value::Table(toml::Table::new()), &self.path)
                .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?,
        })
    }

    /// A constant value (the server needs it fixed).
    fn constant(&self, k: &str) -> Result<Option<Bson>, ProfileError> {
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

    fn doc(&self, k: &str, example: &str) -> Result<Option<Document>, ProfileError> {
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

    fn hint(&self) -> Result<Option<Bson>, ProfileError> {
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

    fn bool(&self, k: &str) -> Result<Option<bool>, ProfileError> {
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

    fn int(&self, k: &str, min: i64, max: i64) -> Result<Option<i64>, ProfileError> {
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

    fn array_filters(&self) -> Result<Option<Vec<Document>>, ProfileError> {
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

    fn write_args(&self) -> Result<WriteArgs, ProfileError> {
        Ok(WriteArgs {
            upsert: self.bool("upsert")?,
            array_filters: self.array_filters()?,
            hint: self.hint()?,
            collation: self.doc("collation", "{ locale = \"en\" }")?,
        })
    }

    /// Generates `t` once with a sample key and the collection's values.
    fn trial(&self, t: &Template) -> Bson {
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

    fn must_be_doc(&self, k: &str, t: &Template, example: &str) -> Result<Document, ProfileError> {
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
    fn update(&self, k: &str) -> Result<Template, ProfileError> {
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

    fn pipeline_shape(&self, k: &str, stages: &[Bson]) -> Result<(), ProfileError> {
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
    fn stored(&self, k: &str, t: &Template) -> Result<(), ProfileError> {
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

    fn sort(&self) -> Result<Option<Document>, ProfileError> {
        self.doc("sort", "{ created = -1 }")
    }

    fn projection(&self) -> Result<Option<Document>, ProfileError> {
        self.doc("projection", "{ _id = 0, customer = 1 }")
    }

    /// A find's `projection` and `let`: each a document as written, or, with a generator in it,
    /// made per operation (genny's find `Options` are generated): the third value holds those.
    #[allow(clippy::type_complexity)]
    fn find_shape(
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

    fn return_after(&self) -> Result<bool, ProfileError> {
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
    fn doc_filter(&self) -> Result<Template, ProfileError> {
        let filter = self.filter()?;
        self.must_be_doc("filter", &filter, "{ status = \"open\" }")?;
        Ok(filter)
    }

    /// A filter that must be given and make a document.
    fn required_filter(&self) -> Result<Template, ProfileError> {
        let filter = self.required("filter", "{ _id = { \"^Key\" = {} } }")?;
        self.must_be_doc("filter", &filter, "{ status = \"open\" }")?;
        Ok(filter)
    }

    /// insertOne or insertMany: the document (else the collection's), the batch and `ordered`.
    fn insert_command(&self) -> Result<Command, ProfileError> {
        let document = self.template("document")?;
        if let Some(d) = &document {
            self.stored("document", d)?;
        } else if self.coll.document.fields.is_empty() {
            return Err(self.err(
                "",
                format!(
                    "{} has no `document` and collection `{}` has no document template",
                    self.verb.name(),
                    self.coll.name
                ),
                "document = { status = \"open\" }, or a [collection.document] (or [document]) table",
            ));
        }
        let batch = if self.verb == Verb::InsertMany {
            self.int("batch", 1, MAX_BATCH)?.ok_or_else(|| {
                self.err(
                    "",
                    "insertMany needs `batch`, the documents per command",
                    "batch = 100",
                )
            })? as u32
        } else {
            1
        };
        Ok(Command::Insert {
            batch,
            ordered: self.bool("ordered")?.unwrap_or(true),
            document,
        })
    }

    /// find or findOne (a limit of 1): the filter and the cursor's options.
    fn find_command(&self) -> Result<Command, ProfileError> {
        let filter = self.doc_filter()?;
        let limit = if self.verb == Verb::FindOne {
            Some(1)
        } else {
            self.int("limit", 0, i64::from(i32::MAX))?
        };
        let (projection, let_vars, shaped) = self.find_shape()?;
        Ok(Command::Find {
            filter,
            count_first: false,
            page: None,
            shaped,
            args: Box::new(FindArgs {
                projection,
                let_vars,
                sort: self.sort()?,
                skip: self.int("skip", 0, i64::MAX)?.map(|n| n as u64),
                limit,
                batch_size: self
                    .int("batchSize", 0, i64::from(i32::MAX))?
                    .map(|n| n as u32),
                hint: self.hint()?,
                collation: self.doc("collation", "{ locale = \"en\" }")?,
                max_time_ms: self
                    .int("maxTimeMS", 0, i64::from(i32::MAX))?
                    .map(|n| n as u64),
            }),
        })
    }

    /// aggregate: a pipeline that makes a list of stages, and its options.
    fn aggregate_command(&self) -> Result<Command, ProfileError> {
        let pipeline = self.required("pipeline", "[ { \"$match\" = { status = \"open\" } } ]")?;
        match self.trial(&pipeline) {
            Bson::Array(stages) => self.pipeline_shape("pipeline", &stages)?,
            other => {
                return Err(self.err(
                    "pipeline",
                    format!("a pipeline is a list of stages, not {}", kind_of(&other)),
                    "pipeline = [ { \"$match\" = { status = \"open\" } } ]",
                ))
            }
        }
        Ok(Command::Aggregate {
            pipeline,
            allow_disk_use: self.bool("allowDiskUse")?,
            batch_size: self
                .int("batchSize", 0, i64::from(i32::MAX))?
                .map(|n| n as u32),
            hint: self.hint()?,
            max_time_ms: self
                .int("maxTimeMS", 0, i64::from(i32::MAX))?
                .map(|n| n as u64),
        })
    }

    /// countDocuments: the filter, skip, limit and hint.
    fn count_command(&self) -> Result<Command, ProfileError> {
        let filter = self.doc_filter()?;
        Ok(Command::Count {
            filter,
            skip: self.int("skip", 0, i64::MAX)?.map(|n| n as u64),
            limit: self.int("limit", 1, i64::MAX)?.map(|n| n as u64),
            hint: self.hint()?,
        })
    }

    /// distinct: the key whose values it lists, and the filter.
    fn distinct_command(&self) -> Result<Command, ProfileError> {
        let key = match self.table.get("key") {
            Some(toml::Value::String(s)) if !s.is_empty() => s.clone(),
            _ => {
                return Err(self.err(
                    "key",
                    "distinct needs `key`, the field whose values it lists",
                    "key = \"status\"",
                ))
            }
        };
        let filter = self.doc_filter()?;
        Ok(Command::Distinct { key, filter })
    }

    /// updateOne or updateMany: the filter, the update and the write options.
    fn update_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        Ok(Command::Update {
            filter,
            update: self.update("update")?,
            args: self.write_args()?,
            read_first: false,
        })
    }

    /// replaceOne: the filter, a replacement that can be stored, and the write options.
    fn replace_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        let replacement = self.required("replacement", "{ status = \"open\" }")?;
        self.stored("replacement", &replacement)?;
        Ok(Command::Replace {
            filter,
            replacement,
            args: self.write_args()?,
        })
    }

    /// deleteOne or deleteMany: the filter, hint and collation.
    fn delete_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        Ok(Command::Delete {
            filter,
            hint: self.hint()?,
            collation: self.doc("collation", "{ locale = \"en\" }")?,
            from: None,
        })
    }

    /// findOneAndUpdate, findOneAndReplace or findOneAndDelete: the filter, the change (an
    /// update, a replacement, or none for a delete) and the options.
    fn find_and_modify_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        // findOneAndDelete changes nothing.
        let change = if self.verb == Verb::FindOneAndUpdate {
            Some(self.update("update")?)
        } else if self.verb == Verb::FindOneAndReplace {
            let r = self.required("replacement", "{ status = \"open\" }")?;
            self.stored("replacement", &r)?;
            Some(r)
        } else {
            None
        };
        Ok(Command::FindAndModify {
            filter,
            change,
            args: FindAndModifyArgs {
                sort: self.sort()?,
                projection: self.projection()?,
                return_after: self.return_after()?,
                upsert: self.bool("upsert")?,
                array_filters: self.array_filters()?,
                hint: self.hint()?,
            },
        })
    }
}

fn kind_of(b: &Bson) -> &'static str {
    match b {
        Bson::Document(_) => "a document",
        Bson::Array(_) => "an array",
        Bson::String(_) => "a string",
        Bson::Null => "null",
        _ => "a single value",
    }
}

/// A field name a stored document cannot have (`$` first, or NUL), anywhere in it.
fn bad_key(d: &Document) -> Option<String> {
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

impl GroupAt<'_> {
    /// The group's own operations, if it has any: the first, and (with `[[group.ops]]`) each
    /// with its weight.
    pub(super) fn templates(
        &self,
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<Option<Ops>, ProfileError> {
        let g = self.g;
        let tables = g.op_tables();
        let coll = &collections[collection];
        if let Some(states) = &g.states {
            if let Some((verb, _)) = tables.first() {
                return Err(self.err(
                    verb,
                    format!("both [[group.states]] and `{verb}` are set; a group's operations are in its states"),
                ));
            }
            for (k, set) in [
                ("steps", g.steps.is_some()),
                ("ops", g.ops.is_some()),
                ("bind", g.bind.is_some()),
                ("transaction", g.transaction.is_some()),
            ] {
                if set {
                    return Err(self.err(
                        k,
                        format!("`{k}` beside [[group.states]]: a state machine's operations are its states' steps"),
                    ));
                }
            }
            self.no_builtin("states")?;
            if states.is_empty() {
                return Err(self.err("states", "[[group.states]] is empty".into()));
            }
            let mut specs: Vec<(OpSpec, u32)> = Vec::new();
            for (k, st) in states.iter().enumerate() {
                let at = self.path(&format!("states[{k}]"));
                let bad = st.name.trim().is_empty()
                    || st.name.contains([':', '@'])
                    || st.name.chars().any(char::is_control);
                if bad || specs.iter().any(|(s, _)| s.kind().as_str() == st.name) {
                    return Err(self.loaded.error_at(
                        &format!("{at}.name"),
                        format!("`{}` cannot name a state (empty, `:`, `@`, a control character, or another state's name)", st.name.escape_debug()),
                        "a short name of its own, e.g. name = \"browse\"",
                    ));
                }
                let spec = self.steps_at(
                    &format!("states[{k}].steps"),
                    &st.name,
                    &st.steps,
                    collections,
                    collection,
                )?;
                specs.push((spec, 1));
            }
            return Ok(Some((specs[0].0.clone(), specs)));
        }
        if let Some(steps) = &g.steps {
            if let Some((verb, _)) = tables.first() {
                return Err(self.err(
                    verb,
                    format!("both [[group.steps]] and `{verb}` are set; a group's operation is one table, named ones ([[group.ops]]) or steps"),
                ));
            }
            if g.ops.is_some() {
                return Err(self.err(
                    "ops",
                    "both [[group.steps]] and [[group.ops]] are set".into(),
                ));
            }
            self.no_builtin("steps")?;
            return Ok(Some((
                self.steps(steps, collections, collection)?,
                Vec::new(),
            )));
        }
        for (k, set) in [
            ("bind", g.bind.is_some()),
            ("transaction", g.transaction.is_some()),
        ] {
            if set {
                return Err(self.err(k, format!("`{k}` belongs to a group with [[group.steps]]")));
            }
        }
        match (&g.ops, tables.as_slice()) {
            (None, []) => Ok(None),
            (Some(_), [(verb, _), ..]) => Err(self.err(
                verb,
                format!("both [[group.ops]] and `{verb}` are set; a group has one operation table or a list of named ones"),
            )),
            (None, [_, (second, _), ..]) => Err(self.err(
                second,
                format!("group `{}` has two operation tables; one operation per group, or several in [[group.ops]] with names and weights", g.name),
            )),
            (None, [(verb, value)]) => {
                self.no_builtin(verb)?;
                let op = self.template_op(verb, value, &self.path(verb), OpName::from(*verb), collection, coll)?;
                Ok(Some((OpSpec::Template(op), Vec::new())))
            }
            (Some(ops), []) => {
                self.no_builtin("ops")?;
                if ops.is_empty() {
                    return Err(self.err("ops", "[[group.ops]] is empty".into()));
                }
                let mut specs: Vec<(OpSpec, u32)> = Vec::new();
                for (i, o) in ops.iter().enumerate() {
                    let at = self.path(&format!("ops[{i}]"));
                    let name_bad = o.name.trim().is_empty()
                        || o.name.contains([':', '@'])
                        || o.name.chars().any(char::is_control);
                    if name_bad {
                        return Err(self.loaded.error_at(
                            &format!("{at}.name"),
                            format!("`{}` cannot name a row (empty, `:`, `@` or a control character)", o.name.escape_debug()),
                            "a short name, e.g. name = \"lookup\"",
                        ));
                    }
                    let name = OpName::from(o.name.as_str());
                    if specs.iter().any(|(s, _)| s.kind() == name) {
                        return Err(self.loaded.error_at(
                            &format!("{at}.name"),
                            format!("two operations of group `{}` are named `{}`", g.name, o.name),
                            "a different name for each of the group's operations",
                        ));
                    }
                    let tables = o.op_tables();
                    let (verb, value) = match tables.as_slice() {
                        [one] => *one,
                        [] => {
                            return Err(self.loaded.error_at(
                                &at,
                                format!("operation `{}` has no operation table", o.name),
                                format!("one of: {}", Verb::listed()),
                            ))
                        }
                        [_, (second, _), ..] => {
                            return Err(self.loaded.error_at(
                                &format!("{at}.{second}"),
                                format!("operation `{}` has two operation tables", o.name),
                                "one operation table per [[group.ops]] entry",
                            ))
                        }
                    };
                    let weight = o.weight.unwrap_or(1);
                    let op = self.template_op(verb, value, &format!("{at}.{verb}"), name, collection, coll)?;
                    specs.push((OpSpec::Template(op), weight));
                }
                if specs.iter().all(|(_, w)| *w == 0) {
                    return Err(self.err("ops", "the weights sum to 0, so no operation could be drawn".into()));
                }
                Ok(Some((specs[0].0.clone(), specs)))
            }
        }
    }

    /// `[[group.steps]]` with `[group.bind]`: each step an operation table on the group's
    /// collection or its own; `^Step` may read only an earlier step.
    fn steps(
        &self,
        steps: &[crate::plan::profile::model::StepDef],
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<OpSpec, ProfileError> {
        self.steps_at("steps", &self.g.name, steps, collections, collection)
    }

    /// Steps at key `key` of the group (`steps`, or a state's `states[k].steps`), named `name`.
    fn steps_at(
        &self,
        key: &str,
        name: &str,
        steps: &[crate::plan::profile::model::StepDef],
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<OpSpec, ProfileError> {
        let g = self.g;
        if steps.is_empty() {
            return Err(self.err(key, format!("{key} is empty")));
        }
        let bind = self.bind()?;
        let mut out: Vec<Arc<TemplateOp>> = Vec::new();
        let mut late = Vec::new();
        for (j, s) in steps.iter().enumerate() {
            let (op, reads_step) = self.step(key, j, s, &out, &bind, collections, collection)?;
            late.push(reads_step);
            out.push(op);
        }
        Ok(OpSpec::Steps(Arc::new(StepsOp {
            name: OpName::from(name),
            at: self.path(key),
            steps: out,
            late,
            bind,
            transaction: g.transaction.unwrap_or(false),
        })))
    }

    /// `[group.bind]`: each bound value compiled, none reading a step's result or another bound
    /// value (all are made before the first step).
    fn bind(&self) -> Result<Vec<(String, Template)>, ProfileError> {
        let mut bind = Vec::new();
        for (name, v) in self.g.bind.iter().flatten() {
            let path = self.path(&format!("bind.{name}"));
            let t = Template::compile(v, &path)
                .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?;
            if !t.step_refs().is_empty() || !t.bind_names().is_empty() {
                return Err(self.loaded.error_at(
                    &path,
                    "a bound value is made before the first step: it cannot read a step's result or another bound value",
                    "a generator, e.g. from = { \"^Key\" = {} }",
                ));
            }
            bind.push((name.clone(), t));
        }
        Ok(bind)
    }

    /// Step `j` read into its operation (after the `earlier` steps, with the `bind` values at
    /// hand), and whether it reads an earlier step's result (so is made at its turn).
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        key: &str,
        j: usize,
        s: &crate::plan::profile::model::StepDef,
        earlier: &[Arc<TemplateOp>],
        bind: &[(String, Template)],
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<(Arc<TemplateOp>, bool), ProfileError> {
        let at = self.path(&format!("{key}[{j}]"));
        let c = self.step_collection(&at, s, collections, collection)?;
        let (verb, value) = self.step_table(&at, j, s)?;
        let path = format!("{at}.{verb}");
        let step_name = self.step_name(&at, j, s, earlier)?;
        let op = self.template_op(verb, value, &path, step_name, c, &collections[c])?;
        let reads_step = self.step_reads(&op, j, &path, bind)?;
        Ok((op, reads_step))
    }

    /// The index of the collection a step works on: its own `collection`, else the group's.
    fn step_collection(
        &self,
        at: &str,
        s: &crate::plan::profile::model::StepDef,
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<usize, ProfileError> {
        match &s.collection {
            None => Ok(collection),
            Some(name) => collections
                .iter()
                .position(|c| c.is_named(name))
                .ok_or_else(|| {
                    self.loaded.error_at(
                        &format!("{at}.collection"),
                        format!("`{name}` is not a collection of this profile"),
                        format!(
                            "one of: {}",
                            collections
                                .iter()
                                .map(|c| c.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                }),
        }
    }

    /// Step `j`'s one operation table: its verb and value.
    fn step_table<'s>(
        &self,
        at: &str,
        j: usize,
        s: &'s crate::plan::profile::model::StepDef,
    ) -> Result<(&'static str, &'s toml::Value), ProfileError> {
        let tables = s.op_tables();
        match tables.as_slice() {
            [one] => Ok(*one),
            [] => Err(self.loaded.error_at(
                at,
                format!("step {j} has no operation table"),
                format!("one of: {}", Verb::listed()),
            )),
            [_, (second, _), ..] => Err(self.loaded.error_at(
                &format!("{at}.{second}"),
                format!("step {j} has two operation tables"),
                "one operation table per [[group.steps]] entry",
            )),
        }
    }

    /// Step `j`'s row name: its own `name` (one that can label a row), else `stepJ`; none the
    /// same as an `earlier` step's.
    fn step_name(
        &self,
        at: &str,
        j: usize,
        s: &crate::plan::profile::model::StepDef,
        earlier: &[Arc<TemplateOp>],
    ) -> Result<OpName, ProfileError> {
        let step_name = match &s.name {
            None => OpName::from(format!("step{j}")),
            Some(n) => {
                let bad = n.trim().is_empty()
                    || n.contains([':', '@'])
                    || n.chars().any(char::is_control)
                    || n == crate::metrics::group::FIRST_ATTEMPT;
                if bad {
                    return Err(self.loaded.error_at(
                        &format!("{at}.name"),
                        format!("`{}` cannot name a step's row (empty, `:`, `@`, a control character, or `{}`)", n.escape_debug(), crate::metrics::group::FIRST_ATTEMPT),
                        "a short name, e.g. name = \"debit\"",
                    ));
                }
                OpName::from(n.as_str())
            }
        };
        if earlier.iter().any(|o| o.name == step_name) {
            return Err(self.loaded.error_at(
                &format!("{at}.name"),
                format!(
                    "two steps of group `{}` are named `{step_name}`",
                    self.g.name
                ),
                "a different name for each step",
            ));
        }
        Ok(step_name)
    }

    /// Whether step `j`'s operation reads an earlier step's result, after checking that it
    /// reads only earlier steps and bound names `bind` has, and that such a step draws no `^Key`
    /// or `^Field`.
    fn step_reads(
        &self,
        op: &TemplateOp,
        j: usize,
        path: &str,
        bind: &[(String, Template)],
    ) -> Result<bool, ProfileError> {
        let mut reads_step = false;
        for t in op.templates() {
            for (index, _) in t.step_refs() {
                if index >= j {
                    return Err(self.loaded.error_at(
                        path,
                        format!("step {j} reads step {index}'s result, which it does not have yet"),
                        format!("^Step with index below {j} (steps count from 0)"),
                    ));
                }
                reads_step = true;
            }
            for name in t.bind_names() {
                if !bind.iter().any(|(n, _)| n == &name) {
                    return Err(self.loaded.error_at(
                        path,
                        format!("`^Bind` names `{name}`, which [group.bind] does not have"),
                        format!(
                            "one of the bound names: {}",
                            bind.iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
        }
        if reads_step
            && op
                .templates()
                .iter()
                .any(|t| t.uses_key() || !t.field_paths().is_empty())
        {
            return Err(self.loaded.error_at(
                path,
                format!("step {j} reads an earlier step's result and also draws ^Key or ^Field; it is made at its turn, where those draws are not at hand"),
                "draw the value in [group.bind] (e.g. id = { \"^Key\" = {} }) and read it with { \"^Bind\" = \"id\" }",
            ));
        }
        Ok(reads_step)
    }

    /// The built-in operation settings have no meaning beside an operation table.
    fn no_builtin(&self, verb: &str) -> Result<(), ProfileError> {
        let g = self.g;
        for (k, set) in [
            ("op", g.op.is_some()),
            ("mix", g.mix.is_some()),
            ("filter", g.filter.is_some()),
            ("set", g.set.is_some()),
            ("inc", g.inc.is_some()),
            ("limit", g.limit.is_some()),
            ("count", g.count.is_some()),
            ("target", g.target.is_some()),
            ("many", g.many.is_some()),
        ] {
            if set {
                return Err(self.err(
                    k,
                    format!("`{k}` belongs to the built-in operations; this group's operation is `{verb}`, whose arguments go in its own table"),
                ));
            }
        }
        Ok(())
    }

    /// One operation table (`verb_name = value`, located at `path`) read into the operation
    /// `name` on collection `collection` (`coll`), its arguments checked.
    fn template_op(
        &self,
        verb_name: &str,
        value: &toml::Value,
        path: &str,
        name: OpName,
        collection: usize,
        coll: &CollectionPlan,
    ) -> Result<Arc<TemplateOp>, ProfileError> {
        let verb = Verb::from_name(verb_name).expect("op_tables names only verbs");
        let line = self.loaded.error_at(path, "", "").line;
        let a = Args {
            loaded: self.loaded,
            path: path.to_string(),
            table: self.op_table(verb, value, path)?,
            verb,
            coll,
        };
        a.check_keys()?;
        let command = self.command(&a, value)?;
        Ok(Arc::new(TemplateOp {
            name,
            verb,
            at: path.to_string(),
            line,
            collection,
            collection_name: coll.name.clone(),
            command,
            desugared: None,
        }))
    }

    /// The table of `verb`'s arguments: the TOML table, or a string of JSON; a command's is
    /// empty (its table is its document, with no arguments of its own).
    fn op_table(
        &self,
        verb: Verb,
        value: &toml::Value,
        path: &str,
    ) -> Result<toml::Table, ProfileError> {
        let verb_name = verb.name();
        match value {
            _ if verb == Verb::Command || verb == Verb::Nop => Ok(toml::Table::new()),
            toml::Value::Table(t) => Ok(t.clone()),
            toml::Value::String(s) => match serde_json::from_str::<toml::Table>(s) {
                Ok(t) => Ok(t),
                Err(e) => Err(self.loaded.error_at(
                    path,
                    format!("not a JSON object of {verb_name}'s arguments: {e}"),
                    format!("a table of {verb_name}'s arguments, e.g. {verb_name} = {{ filter = {{ status = \"open\" }} }}"),
                )),
            },
            _ => Err(self.loaded.error_at(
                path,
                format!("{verb_name} takes a table of its arguments"),
                format!("{verb_name} = {{ {} }}", verb.arguments().join(" = ..., ")),
            )),
        }
    }

    /// The command `a`'s verb sends, made from its arguments (a command's from `value`, its
    /// document).
    fn command(&self, a: &Args<'_>, value: &toml::Value) -> Result<Command, ProfileError> {
        Ok(match a.verb {
            Verb::InsertOne | Verb::InsertMany => a.insert_command()?,
            Verb::Find | Verb::FindOne => a.find_command()?,
            Verb::Aggregate => a.aggregate_command()?,
            Verb::CountDocuments => a.count_command()?,
            Verb::EstimatedDocumentCount => Command::EstimatedCount,
            Verb::Nop => Command::Nop,
            Verb::Distinct => a.distinct_command()?,
            Verb::UpdateOne | Verb::UpdateMany => a.update_command()?,
            Verb::ReplaceOne => a.replace_command()?,
            Verb::DeleteOne | Verb::DeleteMany => a.delete_command()?,
            Verb::FindOneAndUpdate | Verb::FindOneAndReplace | Verb::FindOneAndDelete => {
                a.find_and_modify_command()?
            }
            Verb::BulkWrite => Command::Bulk {
                ordered: a.bool("ordered")?.unwrap_or(true),
                models: self.bulk_models(a)?,
            },
            Verb::Command => {
                let document = Template::compile_arg(value, &a.path)
                    .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?;
                a.must_be_doc("", &document, "{ ping = 1 }")?;
                Command::RunCommand { document }
            }
        })
    }

    /// `requests = [ { insertOne = { document } }, { updateOne = { filter, update } }, ... ]`.
    fn bulk_models(&self, a: &Args<'_>) -> Result<Vec<BulkModel>, ProfileError> {
        let expected = "requests = [ { insertOne = { document = {...} } }, { updateOne = { filter = {...}, update = {...} } }, { deleteOne = { filter = {...} } } ] (insertOne, updateOne, updateMany, replaceOne, deleteOne, deleteMany)";
        let Some(toml::Value::Array(requests)) = a.table.get("requests") else {
            return Err(a.err(
                "requests",
                "bulkWrite needs `requests`, a list of write models",
                expected,
            ));
        };
        if requests.is_empty() {
            return Err(a.err("requests", "bulkWrite's requests are empty", expected));
        }
        let mut out = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            let at = format!("{}.requests[{i}]", a.path);
            let one = match r {
                toml::Value::Table(t) if t.len() == 1 => t.iter().next(),
                _ => None,
            };
            let Some((model, args)) = one else {
                return Err(self.loaded.error_at(
                    &at,
                    "a write model is a one-key table",
                    expected,
                ));
            };
            let verb = match model.as_str() {
                "insertOne" => Verb::InsertOne,
                "updateOne" => Verb::UpdateOne,
                "updateMany" => Verb::UpdateMany,
                "replaceOne" => Verb::ReplaceOne,
                "deleteOne" => Verb::DeleteOne,
                "deleteMany" => Verb::DeleteMany,
                other => {
                    return Err(self.loaded.error_at(
                        &format!("{at}.{other}"),
                        format!("`{other}` is not a write model of bulkWrite"),
                        expected,
                    ))
                }
            };
            let toml::Value::Table(table) = args else {
                return Err(self.loaded.error_at(
                    &format!("{at}.{model}"),
                    "a write model takes a table",
                    expected,
                ));
            };
            let m = Args {
                loaded: self.loaded,
                path: format!("{at}.{model}"),
                table: table.clone(),
                verb,
                coll: a.coll,
            };
            m.check_keys()?;
            out.push(match verb {
                Verb::InsertOne => {
                    let d = m.template("document")?;
                    if let Some(d) = &d {
                        m.stored("document", d)?;
                    }
                    BulkModel::InsertOne(d)
                }
                Verb::UpdateOne | Verb::UpdateMany => BulkModel::Update {
                    many: verb == Verb::UpdateMany,
                    filter: m.required("filter", "{ _id = 1 }")?,
                    update: m.update("update")?,
                    args: m.write_args()?,
                },
                Verb::ReplaceOne => {
                    let replacement = m.required("replacement", "{ status = \"open\" }")?;
                    m.stored("replacement", &replacement)?;
                    BulkModel::ReplaceOne {
                        filter: m.required("filter", "{ _id = 1 }")?,
                        replacement,
                        args: m.write_args()?,
                    }
                }
                Verb::DeleteOne | Verb::DeleteMany => BulkModel::Delete {
                    many: verb == Verb::DeleteMany,
                    filter: m.required("filter", "{ _id = 1 }")?,
                },
                // Named above from the six model names only.
                Verb::InsertMany
                | Verb::Find
                | Verb::FindOne
                | Verb::Aggregate
                | Verb::CountDocuments
                | Verb::EstimatedDocumentCount
                | Verb::Distinct
                | Verb::FindOneAndUpdate
                | Verb::FindOneAndReplace
                | Verb::FindOneAndDelete
                | Verb::BulkWrite
                | Verb::Command
                | Verb::Nop => {
                    return Err(self.loaded.error_at(
                        &format!("{at}.{model}"),
                        format!("`{model}` is not a write model of bulkWrite"),
                        expected,
                    ))
                }
            });
        }
        Ok(out)
    }
}
