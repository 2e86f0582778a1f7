//! A group's steps: each step's collection, table, name and reads, its bound values, and a step's
//! command read from its table (bulk writes' models among them).

use super::*;

/// Most sends one operation of steps may hold, repeats counted (each is a step of the plan).
const MAX_STEPS_SENT: usize = 100_000;

impl GroupAt<'_> {
    /// `[[group.steps]]` with `[group.bind]`: each step an operation table on the group's
    /// collection or its own; `^Step` may read only an earlier step.
    pub(super) fn steps(
        &self,
        steps: &[crate::plan::profile::model::StepDef],
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<OpSpec, ProfileError> {
        self.steps_at("steps", &self.g.name, steps, collections, collection)
    }

    /// Steps at key `key` of the group (`steps`, or a state's `states[k].steps`), named `name`.
    pub(super) fn steps_at(
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
        // The steps as written (what `^Step` indexes), and as sent: a step of `repeat = N` N
        // times in a row, one row.
        let mut declared: Vec<Arc<TemplateOp>> = Vec::new();
        let mut out: Vec<Arc<TemplateOp>> = Vec::new();
        let mut late = Vec::new();
        let mut policy = Vec::new();
        let mut repeated = false;
        let mut any_late = false;
        for (j, s) in steps.iter().enumerate() {
            let (op, reads_step) =
                self.step(key, j, s, &declared, &bind, collections, collection)?;
            let times = match s.repeat {
                None => 1,
                Some(0) => {
                    return Err(self.err(
                        &format!("{key}[{j}].repeat"),
                        "`repeat = 0` would never send the step: leave the step out".into(),
                    ))
                }
                Some(n) => n,
            };
            let sent = out.len() + usize::try_from(times).unwrap_or(usize::MAX);
            if sent > MAX_STEPS_SENT {
                return Err(self.err(
                    &format!("{key}[{j}].repeat"),
                    format!("the steps with their repeats come to {sent} sends in one operation, more than the {MAX_STEPS_SENT} one operation may hold: make each operation less (more loops, a smaller repeat)"),
                ));
            }
            // A repeated step is made at each of its turns (one copy's documents held at a
            // time, not all of them before the clock), so it cannot draw ^Key or ^Field.
            if times > 1
                && op
                    .templates()
                    .iter()
                    .any(|t| t.uses_key() || !t.field_paths().is_empty())
            {
                return Err(self.err(
                    &format!("{key}[{j}].repeat"),
                    "a repeated step is made at each of its turns, where ^Key and ^Field draws are not at hand".into(),
                ));
            }
            repeated |= times > 1;
            any_late |= reads_step;
            if repeated && any_late {
                return Err(self.err(
                    &format!("{key}[{j}]"),
                    "a step that reads `^Step` and a step with `repeat` cannot be in one group: `^Step` counts the steps as written".into(),
                ));
            }
            declared.push(Arc::clone(&op));
            for _ in 0..times {
                late.push(reads_step || times > 1);
                out.push(Arc::clone(&op));
                policy.push(crate::workload::command::StepPolicy {
                    on_error: s.on_error.unwrap_or_default(),
                    report: s.report.unwrap_or(true),
                    metric: s.metric.clone(),
                });
            }
        }
        let held = out
            .iter()
            .filter_map(|t| match &t.command {
                Command::Scan(s) => s.hold,
                _ => None,
            })
            .fold(
                std::time::Duration::ZERO,
                std::time::Duration::saturating_add,
            );
        Ok(OpSpec::Steps(Arc::new(StepsOp {
            held,
            name: OpName::from(name),
            at: self.path(key),
            steps: out,
            late,
            bind,
            transaction: g.transaction.unwrap_or(false),
            every_step: g.every_step.unwrap_or(false),
            policy,
            metric: g.metric.clone(),
        })))
    }

    /// `[group.bind]`: each bound value compiled, none reading a step's result or another bound
    /// value (all are made before the first step).
    pub(super) fn bind(&self) -> Result<Vec<(String, Template)>, ProfileError> {
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
    pub(super) fn step(
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
    pub(super) fn step_collection(
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
    pub(super) fn step_table<'s>(
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
    pub(super) fn step_name(
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
    pub(super) fn step_reads(
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
    pub(super) fn no_builtin(&self, verb: &str) -> Result<(), ProfileError> {
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
    pub(super) fn template_op(
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
    pub(super) fn op_table(
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
    pub(super) fn command(
        &self,
        a: &Args<'_>,
        value: &toml::Value,
    ) -> Result<Command, ProfileError> {
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
            Verb::BulkWrite => Command::Bulk(Arc::new(crate::workload::command::Bulk {
                ordered: a.bool("ordered")?.unwrap_or(true),
                models: self.bulk_models(a)?,
            })),
            Verb::Command => {
                let document = Template::compile_arg(value, &a.path)
                    .map_err(|e| self.loaded.error_at(&e.key, e.problem, e.expected))?;
                a.must_be_doc("", &document, "{ ping = 1 }")?;
                Command::Run(document)
            }
            Verb::Scan => self.scan_command(a)?,
            Verb::InsertSample => a.insert_sample_command()?,
            Verb::ClusterTime => {
                match a.table.get("keep") {
                    Some(toml::Value::String(k)) if !k.is_empty() => {
                        Command::ClusterTime(Arc::new(crate::workload::command::KeepClusterTime {
                            keep: k.clone(),
                        }))
                    }
                    _ => return Err(a.err(
                        "keep",
                        "clusterTime needs `keep`, the name a point-in-time scan reads it by",
                        "clusterTime = { keep = \"before\" } and scan = { ..., at = \"before\" }",
                    )),
                }
            }
            Verb::Assert => {
                let command = |k: &str| -> Result<Template, ProfileError> {
                    let t = a.required(
                        k,
                        "{ aggregate = \"expected\", pipeline = [], cursor = {} }",
                    )?;
                    a.must_be_doc(
                        k,
                        &t,
                        "{ aggregate = \"expected\", pipeline = [], cursor = {} }",
                    )?;
                    Ok(t)
                };
                let ignore = match a.table.get("ignore") {
                    None => vec!["_id".to_string(), "num".to_string()],
                    Some(toml::Value::Array(list)) if list.iter().all(toml::Value::is_str) => list
                        .iter()
                        .filter_map(toml::Value::as_str)
                        .map(str::to_string)
                        .collect(),
                    Some(_) => {
                        return Err(a.err(
                            "ignore",
                            "`ignore` is a list of field names",
                            "ignore = [\"_id\", \"num\"]",
                        ))
                    }
                };
                Command::Assert(Arc::new(crate::workload::command::Assert {
                    expected: command("expected")?,
                    actual: command("actual")?,
                    ignore,
                }))
            }
        })
    }

    /// `requests = [ { insertOne = { document } }, { updateOne = { filter, update } }, ... ]`.
    pub(super) fn bulk_models(&self, a: &Args<'_>) -> Result<Vec<BulkModel>, ProfileError> {
        let Some(toml::Value::Array(requests)) = a.table.get("requests") else {
            return Err(a.err(
                "requests",
                "bulkWrite needs `requests`, a list of write models",
                BULK_EXPECTED,
            ));
        };
        if requests.is_empty() {
            return Err(a.err("requests", "bulkWrite's requests are empty", BULK_EXPECTED));
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
                    BULK_EXPECTED,
                ));
            };
            let not_a_model = || {
                self.loaded.error_at(
                    &format!("{at}.{model}"),
                    format!("`{model}` is not a write model of bulkWrite"),
                    BULK_EXPECTED,
                )
            };
            let Some(verb) = Verb::from_name(model).filter(|v| BULK_MODELS.contains(v)) else {
                return Err(not_a_model());
            };
            let toml::Value::Table(table) = args else {
                return Err(self.loaded.error_at(
                    &format!("{at}.{model}"),
                    "a write model takes a table",
                    BULK_EXPECTED,
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
            out.push(m.bulk_model().ok_or_else(not_a_model)??);
        }
        Ok(out)
    }
}

/// The verbs a bulkWrite's write models are named by.
const BULK_MODELS: [Verb; 6] = [
    Verb::InsertOne,
    Verb::UpdateOne,
    Verb::UpdateMany,
    Verb::ReplaceOne,
    Verb::DeleteOne,
    Verb::DeleteMany,
];

const BULK_EXPECTED: &str = "requests = [ { insertOne = { document = {...} } }, { updateOne = { filter = {...}, update = {...} } }, { deleteOne = { filter = {...} } } ] (insertOne, updateOne, updateMany, replaceOne, deleteOne, deleteMany)";

impl Args<'_> {
    /// One write model of its verb (None: the verb names no write model).
    fn bulk_model(&self) -> Option<Result<BulkModel, ProfileError>> {
        let model = || -> Result<Option<BulkModel>, ProfileError> {
            Ok(Some(match self.verb {
                Verb::InsertOne => {
                    let d = self.template("document")?;
                    if let Some(d) = &d {
                        self.stored("document", d)?;
                    }
                    BulkModel::InsertOne(d)
                }
                Verb::UpdateOne | Verb::UpdateMany => BulkModel::Update {
                    many: self.verb == Verb::UpdateMany,
                    filter: self.required("filter", "{ _id = 1 }")?,
                    update: self.update("update")?,
                    args: self.write_args()?,
                },
                Verb::ReplaceOne => {
                    let replacement = self.required("replacement", "{ status = \"open\" }")?;
                    self.stored("replacement", &replacement)?;
                    BulkModel::ReplaceOne {
                        filter: self.required("filter", "{ _id = 1 }")?,
                        replacement,
                        args: self.write_args()?,
                    }
                }
                Verb::DeleteOne | Verb::DeleteMany => BulkModel::Delete {
                    many: self.verb == Verb::DeleteMany,
                    filter: self.required("filter", "{ _id = 1 }")?,
                },
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
                | Verb::Assert
                | Verb::Scan
                | Verb::InsertSample
                | Verb::ClusterTime
                | Verb::Nop => return Ok(None),
            }))
        };
        model().transpose()
    }
}
