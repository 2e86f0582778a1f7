//! CrudActor's operations and states, their options and write concerns, and RunCommand: each a
//! step of its group.

use super::*;

impl<'a> Translator<'a> {
    /// A CrudActor's operations, as steps; `withTransaction` makes the group a transaction.
    pub(super) fn crud(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
        g: &mut toml::Table,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let collection = match (cx.get("Collection"), cx.get("CollectionCount")) {
            (Some(c), _) => scalar_text(c)
                .ok_or_else(|| self.refuse(Some(name), Some(p), "`Collection` is not a name"))?,
            // Above 1: each thread its own (`group` splits the group by collection).
            (None, Some(n)) if number(n).is_some_and(|n| n >= 1.0) => "Collection0".to_string(),
            (None, Some(n)) => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    format!(
                        "`CollectionCount: {}` is not a number of collections",
                        show(n)
                    ),
                ))
            }
            (None, None) => {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "CrudActor needs `Collection` or `CollectionCount`",
                ))
            }
        };
        if let Some(states) = cx.phase.get("States") {
            self.states(name, p, cx, states, database, &collection, g)?;
            return Ok(Vec::new());
        }
        let ops = plural(cx.phase, "Operation", "Operations").ok_or_else(|| {
            self.refuse(
                Some(name),
                Some(p),
                "CrudActor has neither `Operations` nor `States`",
            )
        })?;
        let op_name = |op: &Yaml| {
            op.get("OperationName")
                .and_then(Yaml::as_str)
                .unwrap_or("")
                .to_string()
        };
        // `startTransaction`, the operations, `commitTransaction`: the phase's operations in one
        // transaction, as `withTransaction` of them.
        let names: Vec<String> = ops.iter().map(|o| op_name(o)).collect();
        let txn_ops = ["startTransaction", "commitTransaction", "abortTransaction"];
        if names.iter().any(|n| txn_ops.contains(&n.as_str())) {
            let wrapped = names.len() >= 2
                && names[0] == "startTransaction"
                && names[names.len() - 1] == "commitTransaction"
                && !names[1..names.len() - 1]
                    .iter()
                    .any(|n| txn_ops.contains(&n.as_str()) || n == "withTransaction");
            if !wrapped {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "start/commit/abortTransaction are read only as a phase's first and last operations (`startTransaction`, the operations, `commitTransaction`: one transaction); write other transactions as `withTransaction` with `OperationsInTransaction`, alone in its phase",
                ));
            }
            g.insert("transaction".into(), Toml::Boolean(true));
            let mut steps = Vec::new();
            for op in &ops[1..ops.len() - 1] {
                steps.push(self.crud_op(name, p, op, database, &collection, g, cx)?);
            }
            rows_from_metrics(&mut steps, name);
            return Ok(steps);
        }
        let mut steps = Vec::new();
        for op in ops {
            if op_name(op) == "withTransaction" {
                if g.contains_key("transaction") || !steps.is_empty() || ops_len(cx.phase) > 1 {
                    return Err(self.refuse(Some(name), Some(p), "withTransaction beside other operations of its phase is not read yet: the tool runs a phase's withTransaction alone, the group one transaction of its `OperationsInTransaction` (put the other operations in a phase or actor of their own)"));
                }
                g.insert("transaction".into(), Toml::Boolean(true));
                let inner = op
                    .get("OperationCommand")
                    .and_then(|c| c.get("OperationsInTransaction"))
                    .and_then(Yaml::as_sequence)
                    .ok_or_else(|| {
                        self.refuse(
                            Some(name),
                            Some(p),
                            "withTransaction without `OperationsInTransaction`",
                        )
                    })?;
                for t in inner {
                    steps.push(self.crud_op(name, p, t, database, &collection, g, cx)?);
                }
                continue;
            }
            steps.push(self.crud_op(name, p, op, database, &collection, g, cx)?);
        }
        rows_from_metrics(&mut steps, name);
        Ok(steps)
    }

    /// `Continue`: each thread starts in the state it was last in, in the actor's phase
    /// before (`resume_from`); `SkipFirstOperations`: without sending that state's operations
    /// again (`skip_first`).
    fn continued(
        &self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        // `Continue`: each thread starts in the state it was last in, in the actor's phase
        // before; `SkipFirstOperations`: without sending that state's operations again.
        let flag = |key: &str| cx.phase.get(key).and_then(Yaml::as_bool) == Some(true);
        if flag("Continue") {
            if cx.get("Collection").is_none()
                && cx
                    .get("CollectionCount")
                    .and_then(number)
                    .is_some_and(|n| n > 1.0)
            {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "`Continue` with `CollectionCount` above 1 is not read yet (each thread's collection is a group of its own)",
                ));
            }
            let Some(before) = self.last_group.get(name).cloned() else {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "`Continue: true` in the actor's first phase: nothing to continue from (genny refuses it too)",
                ));
            };
            g.insert("resume_from".into(), Toml::String(before));
            if flag("SkipFirstOperations") {
                g.insert("skip_first".into(), Toml::Boolean(true));
            }
        }
        Ok(())
    }

    /// A CrudActor's `States` (its state machine, genny's FSM): `[[group.states]]`, each
    /// state's operations its steps, `Transitions` (`To`, `Weight`, `SleepBefore`) its ways
    /// out, `InitialStates` the group's `initial`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn states(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        states: &Yaml,
        database: &str,
        collection: &str,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        self.continued(name, p, cx, g)?;
        if plural(cx.phase, "Operation", "Operations").is_some() {
            return Err(self.refuse(
                Some(name),
                Some(p),
                "CrudActor has Operations and States at the same time (genny refuses it too)",
            ));
        }
        let list = states
            .as_sequence()
            .ok_or_else(|| self.refuse(Some(name), Some(p), "`States` is not a list"))?;
        let mut out = Vec::new();
        for s in list {
            let state = s
                .get("Name")
                .and_then(scalar_text)
                .ok_or_else(|| self.refuse(Some(name), Some(p), "a state without a `Name`"))?;
            let ops = plural(s, "Operation", "Operations").ok_or_else(|| {
                self.refuse(
                    Some(name),
                    Some(p),
                    format!("state `{state}` has no `Operations`"),
                )
            })?;
            let mut steps = Vec::new();
            for op in ops {
                steps.push(self.crud_op(name, p, op, database, collection, g, cx)?);
            }
            rows_from_metrics(&mut steps, name);
            let transitions =
                transitions(s, &state).map_err(|why| self.refuse(Some(name), Some(p), why))?;
            let mut st = toml::Table::new();
            st.insert("name".into(), Toml::String(state));
            st.insert(
                "steps".into(),
                Toml::Array(steps.into_iter().map(Toml::Table).collect()),
            );
            st.insert("transitions".into(), Toml::Array(transitions));
            out.push(Toml::Table(st));
        }
        let mut initial = toml::Table::new();
        for i in cx
            .phase
            .get("InitialStates")
            .and_then(Yaml::as_sequence)
            .into_iter()
            .flatten()
        {
            let (Some(s), Some(w)) = (
                i.get("State").and_then(scalar_text),
                i.get("Weight").and_then(number),
            ) else {
                return Err(self.refuse(
                    Some(name),
                    Some(p),
                    "an `InitialStates` entry without `State` and `Weight`",
                ));
            };
            let sum = initial.get(&s).and_then(Toml::as_float).unwrap_or(0.0) + w;
            initial.insert(s, Toml::Float(sum));
        }
        let resumed = g.contains_key("resume_from");
        if initial.is_empty() && !resumed {
            return Err(self.refuse(
                Some(name),
                Some(p),
                "CrudActor has States, but no `InitialStates` (genny refuses it too)",
            ));
        }
        // The first step's collection is the group's.
        let first = out
            .first()
            .and_then(|s| s.get("steps"))
            .and_then(|s| s.get(0))
            .and_then(|s| s.get("collection"))
            .cloned();
        if let Some(c) = first {
            g.insert("collection".into(), c);
        }
        g.insert("states".into(), Toml::Array(out));
        if !initial.is_empty() {
            g.insert("initial".into(), Toml::Table(initial));
        }
        Ok(())
    }

    /// One CrudActor operation as a step, with genny's name for its metric and what its failure
    /// does.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn crud_op(
        &mut self,
        name: &str,
        p: usize,
        op: &Yaml,
        database: &str,
        collection: &str,
        g: &mut toml::Table,
        cx: &Ctx<'a>,
    ) -> Result<toml::Table, Refusal> {
        let mut step = self.crud_step(name, p, op, database, collection, g)?;
        let mn = cx.phase.get("MetricsName").and_then(scalar_text);
        let mn = mn.as_deref();
        let op_name = op.get("OperationName").and_then(Yaml::as_str).unwrap_or("");
        let omn = op.get("OperationMetricsName").and_then(scalar_text);
        // CrudActor's rule (`PhaseConfig::addOperation`): the phase's `MetricsName` with the
        // operation's own `OperationMetricsName` when that differs from its name; else the
        // phase's name for all its operations; else the operation's, in every phase.
        let metric = match (mn, omn.as_deref()) {
            (Some(mn), Some(o)) if o != op_name => {
                genny_metric(name, Scope::Actor(&format!("{mn}.{o}")), None, p)
            }
            (Some(_), _) => genny_metric(name, Scope::Phase(op_name), mn, p),
            (None, o) => genny_metric(name, Scope::Actor(o.unwrap_or(op_name)), None, p),
        };
        step.insert("metric".into(), Toml::String(metric));
        self.failure_rule(name, p, op, cx, &mut step)?;
        Ok(step)
    }

    /// An operation's `ThrowOnFailure` and `RecordFailure` (the phase's when it has none), as
    /// the step's `on_error`, as CrudActor's `decodeThrowMode` reads them.
    fn failure_rule(
        &self,
        name: &str,
        p: usize,
        op: &Yaml,
        cx: &Ctx<'a>,
        step: &mut toml::Table,
    ) -> Result<(), Refusal> {
        let flag = |key: &str| -> Result<Option<bool>, Refusal> {
            let v = op.get(key).or_else(|| cx.get(key));
            match v {
                None => Ok(None),
                Some(v) => v.as_bool().map(Some).ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        format!("`{key}: {}` is not true or false", show(v)),
                    )
                }),
            }
        };
        let throw = flag("ThrowOnFailure")?.unwrap_or(true);
        let record = flag("RecordFailure")?.unwrap_or(false);
        let on_error = match (record, throw) {
            (true, _) => "record",
            (false, false) => "ignore",
            (false, true) => return Ok(()),
        };
        step.insert("on_error".into(), Toml::String(on_error.into()));
        Ok(())
    }

    fn crud_step(
        &mut self,
        name: &str,
        p: usize,
        op: &Yaml,
        database: &str,
        collection: &str,
        g: &mut toml::Table,
    ) -> Result<toml::Table, Refusal> {
        let op_name = op
            .get("OperationName")
            .and_then(Yaml::as_str)
            .ok_or_else(|| {
                self.refuse(Some(name), Some(p), "an operation without `OperationName`")
            })?;
        let text_or = |k: &str, default: &str| {
            op.get(k)
                .and_then(scalar_text)
                .unwrap_or_else(|| default.to_string())
        };
        let row = text_or("OperationMetricsName", op_name);
        let database = text_or("Database", database);
        let coll_name = text_or("Collection", collection);
        let coll = self.collection(&database, &coll_name);
        let empty = Yaml::Mapping(Default::default());
        let c = op.get("OperationCommand").unwrap_or(&empty);
        let bad =
            |t: &Self, what: String| t.refuse(Some(name), Some(p), format!("{op_name}: {what}"));
        let mut args = toml::Table::new();
        let put = |args: &mut toml::Table, k: &str, v: Option<&Yaml>| {
            if let Some(v) = v {
                args.insert(k.to_string(), to_toml(v));
            }
        };
        let verb = match op_name {
            "insertOne" => {
                put(&mut args, "document", c.get("Document"));
                "insertOne"
            }
            "insertMany" => {
                let docs = c.get("Documents").and_then(Yaml::as_sequence).ok_or_else(|| bad(self, "`Documents` is not a list".into()))?;
                let first = docs.first().ok_or_else(|| bad(self, "`Documents` is empty".into()))?;
                if docs.iter().any(|d| d != first) {
                    // Different templates: one insert command of them all, as bulkWrite's
                    // insertOne models go (ordered, as insertMany is).
                    args.insert("requests".into(), Toml::Array(insert_models(docs)));
                    return Ok(step(&row, &coll, "bulkWrite", Toml::Table(args)));
                }
                put(&mut args, "document", Some(first));
                args.insert("batch".into(), Toml::Integer(crate::num::signed(docs.len())));
                "insertMany"
            }
            "find" | "findOne" => {
                put(&mut args, "filter", c.get("Filter"));
                self.find_args(op_name, c, &mut args, g).map_err(|e| bad(self, e))?;
                op_name
            }
            "aggregate" => {
                put(&mut args, "pipeline", c.get("Pipeline"));
                self.options(op_name, c.get("Options"), &mut args, &[("AllowDiskUse", "allowDiskUse"), ("BatchSize", "batchSize"), ("Hint", "hint"), ("MaxTime", "maxTimeMS")])
                    .map_err(|e| bad(self, e))?;
                "aggregate"
            }
            "countDocuments" => {
                put(&mut args, "filter", c.get("Filter"));
                self.options(op_name, c.get("Options"), &mut args, &[("Limit", "limit"), ("Skip", "skip"), ("Hint", "hint")])
                    .map_err(|e| bad(self, e))?;
                "countDocuments"
            }
            "estimatedDocumentCount" => "estimatedDocumentCount",
            "updateOne" | "updateMany" | "findOneAndUpdate" => {
                put(&mut args, "filter", c.get("Filter"));
                put(&mut args, "update", c.get("Update"));
                self.write_options(name, p, op_name, c, &mut args, g)?;
                op_name
            }
            "replaceOne" | "findOneAndReplace" => {
                put(&mut args, "filter", c.get("Filter"));
                put(&mut args, "replacement", c.get("Replacement"));
                self.write_options(name, p, op_name, c, &mut args, g)?;
                op_name
            }
            "deleteOne" | "deleteMany" | "findOneAndDelete" => {
                put(&mut args, "filter", c.get("Filter"));
                self.write_options(name, p, op_name, c, &mut args, g)?;
                op_name
            }
            "drop" => {
                let mut cmd = toml::Table::new();
                cmd.insert("drop".into(), Toml::String(coll_name.clone()));
                return Ok(step(&row, &coll, "command", Toml::Table(cmd)));
            }
            "createIndex" => return Ok(create_index(&row, &coll, &coll_name, c)),
            "bulkWrite" => {
                let requests = bulk_requests(c).map_err(|e| bad(self, e))?;
                args.insert("requests".into(), Toml::Array(requests));
                if let Some(o) = c.get("Options").and_then(|o| o.get("Ordered")) {
                    put(&mut args, "ordered", Some(o));
                }
                "bulkWrite"
            }
            other => {
                return Err(bad(self, match did_you_mean(other, &CRUD_OPS) {
                    Some(near) => format!("operation `{other}` is not one CrudActor has: did you mean `{near}`?"),
                    None => format!("operation `{other}` is not supported (the CrudActor operations the tool runs are in docs/genny.md)"),
                }))
            }
        };
        Ok(step(&row, &coll, verb, Toml::Table(args)))
    }

    /// A find's or findOne's `Options`: the cursor's, and `ReadPreference` as the group's (the
    /// tool's are per group, as its write concern is).
    fn find_args(
        &self,
        op_name: &str,
        c: &Yaml,
        args: &mut toml::Table,
        g: &mut toml::Table,
    ) -> Result<(), String> {
        let mut options = c.get("Options").cloned();
        let rp = options
            .as_mut()
            .and_then(Yaml::as_mapping_mut)
            .and_then(|o| o.remove("ReadPreference"));
        if let Some(rp) = rp {
            let ours = read_preference(&rp).ok_or_else(|| {
                format!(
                    "`ReadPreference: {}` is not one the tool reads (ReadMode, MaxStaleness)",
                    show(&rp)
                )
            })?;
            if g.get("read_preference").is_some_and(|old| *old != ours) {
                return Err("two read preferences in one phase of an actor are not supported (the tool's are per group)".into());
            }
            g.insert("read_preference".into(), ours);
        }
        self.options(
            op_name,
            options.as_ref(),
            args,
            &[
                ("Limit", "limit"),
                ("Skip", "skip"),
                ("Sort", "sort"),
                ("Projection", "projection"),
                ("Hint", "hint"),
                ("BatchSize", "batchSize"),
                ("Collation", "collation"),
                ("MaxTime", "maxTimeMS"),
                ("Let", "let"),
            ],
        )?;
        if op_name == "findOne" {
            args.remove("limit");
            args.remove("batchSize");
        }
        Ok(())
    }

    /// genny's `Options` of a read, by the names it takes.
    pub(super) fn options(
        &self,
        op: &str,
        options: Option<&Yaml>,
        args: &mut toml::Table,
        known: &[(&str, &str)],
    ) -> Result<(), String> {
        let Some(o) = options.and_then(Yaml::as_mapping) else {
            return Ok(());
        };
        for (k, v) in o {
            let k = scalar_text(k).unwrap_or_default();
            // A comment for the server's logs and profiler: it changes no work, and is left out.
            if k == "Comment" {
                continue;
            }
            let Some((_, ours)) = known.iter().find(|(g, _)| *g == k) else {
                return Err(format!(
                    "option `{k}` of {op} is not supported (the tool reads {})",
                    known.iter().map(|(g, _)| *g).collect::<Vec<_>>().join(", ")
                ));
            };
            let value = if k == "MaxTime" {
                Toml::Integer(
                    duration(v)
                        .map(|d| crate::num::signed(d.as_millis()))
                        .ok_or(format!("`MaxTime: {}` is not a duration", show(v)))?,
                )
            } else {
                to_toml(v)
            };
            args.insert((*ours).to_string(), value);
        }
        Ok(())
    }

    /// `OperationOptions` of a write: `Upsert`, `WriteConcern` (the group's), `Hint`.
    pub(super) fn write_options(
        &mut self,
        name: &str,
        p: usize,
        op: &str,
        c: &Yaml,
        args: &mut toml::Table,
        g: &mut toml::Table,
    ) -> Result<(), Refusal> {
        let Some(o) = c
            .get("OperationOptions")
            .or_else(|| c.get("Options"))
            .and_then(Yaml::as_mapping)
        else {
            return Ok(());
        };
        for (k, v) in o {
            let k = scalar_text(k).unwrap_or_default();
            match k.as_str() {
                "Upsert" => {
                    args.insert("upsert".into(), to_toml(v));
                }
                "Hint" => {
                    args.insert("hint".into(), to_toml(v));
                }
                // For the server's logs and profiler: it changes no work, and is left out.
                "Comment" => {}
                // `WriteConcern:` with nothing under it: genny converts the empty node to a
                // write concern of no settings, the deployment's default; a `Level` written
                // beside it (not under it) is read by neither.
                "WriteConcern" if v.is_null() => {
                    self.notes.push(format!("{name}, phase {p}: {op}: `WriteConcern:` holds nothing: the deployment's default write concern, as genny's empty one"));
                }
                "Level" if o.iter().any(|(k, v)| scalar_text(k).as_deref() == Some("WriteConcern") && v.is_null()) => {
                    self.notes.push(format!("{name}, phase {p}: {op}: `Level` beside an empty `WriteConcern` (not under it) is read by neither genny nor the tool"));
                }
                "WriteConcern" => {
                    let wc = write_concern(v).ok_or_else(|| self.refuse(Some(name), Some(p), format!("{op}: `WriteConcern: {}` is not one the tool reads (Level: majority or a number, Journal, TimeoutMillis)", show(v))))?;
                    if let Some(old) = g.get("write_concern") {
                        if *old != wc {
                            return Err(self.refuse(Some(name), Some(p), format!("{op}: two write concerns in one phase of an actor are not supported (the tool's are per group)")));
                        }
                    }
                    g.insert("write_concern".into(), wc);
                }
                other => return Err(self.refuse(Some(name), Some(p), format!("{op}: option `{other}` is not supported (the tool reads Upsert, Hint, WriteConcern)"))),
            }
        }
        Ok(())
    }

    /// RunCommand / AdminCommand: each operation a `command` step on the database.
    pub(super) fn run_command(
        &mut self,
        name: &str,
        p: usize,
        cx: &Ctx<'a>,
        database: &str,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let ops = plural(cx.phase, "Operation", "Operations").ok_or_else(|| {
            self.refuse(
                Some(name),
                Some(p),
                "RunCommand needs `Operation` or `Operations`",
            )
        })?;
        let coll = self.database_handle(database);
        let mut steps = Vec::new();
        for op in ops {
            let kind = op
                .get("OperationName")
                .and_then(Yaml::as_str)
                .unwrap_or("RunCommand");
            if kind != "RunCommand" && kind != "AdminCommand" {
                return Err(self.refuse(Some(name), Some(p), format!("operation `{kind}` of RunCommand is not supported (RunCommand, AdminCommand)")));
            }
            let coll = if kind == "AdminCommand" {
                self.database_handle("admin")
            } else {
                coll.clone()
            };
            let command = op
                .get("OperationCommand")
                .filter(|c| c.is_mapping())
                .ok_or_else(|| {
                    self.refuse(
                        Some(name),
                        Some(p),
                        "a RunCommand operation without an `OperationCommand` document",
                    )
                })?;
            // RunCommand's: `OperationMetricsName` is the actor's metric; without it, the
            // phase's (`DatabaseOperation`).
            let omn = op.get("OperationMetricsName").and_then(scalar_text);
            let metric = match &omn {
                Some(o) => genny_metric(name, Scope::Actor(o), None, p),
                None => genny_metric(
                    name,
                    Scope::Phase("DatabaseOperation"),
                    cx.phase.get("MetricsName").and_then(scalar_text).as_deref(),
                    p,
                ),
            };
            let mut s = step(
                "DatabaseOperation",
                &coll,
                "command",
                in_order(to_toml(command)),
            );
            s.insert("metric".into(), Toml::String(metric));
            if op.get("ReportMetrics").and_then(Yaml::as_bool) == Some(false) {
                s.insert("report".into(), Toml::Boolean(false));
            }
            // RunCommand's `ThrowOnFailure` is the phase's: false goes on past a failure,
            // which its metric still counts.
            if cx.get("ThrowOnFailure").and_then(Yaml::as_bool) == Some(false) {
                s.insert("on_error".into(), Toml::String("record".into()));
            }
            steps.push(s);
        }
        rows_from_metrics(&mut steps, name);
        Ok(steps)
    }
}

/// The CrudActor operations read (its `getOpConstructors`, less setReadConcern).
const CRUD_OPS: [&str; 23] = [
    "insertOne",
    "insertMany",
    "find",
    "findOne",
    "updateOne",
    "updateMany",
    "replaceOne",
    "deleteOne",
    "deleteMany",
    "findOneAndUpdate",
    "findOneAndReplace",
    "findOneAndDelete",
    "aggregate",
    "countDocuments",
    "estimatedDocumentCount",
    "bulkWrite",
    "drop",
    "createIndex",
    "withTransaction",
    "startTransaction",
    "commitTransaction",
    "abortTransaction",
    "setReadConcern",
];

/// A state's `Transitions`: each its `To`, `Weight` and `SleepBefore` as the state's
/// transitions.
fn transitions(s: &Yaml, state: &str) -> Result<Vec<Toml>, String> {
    let mut transitions = Vec::new();
    for t in s
        .get("Transitions")
        .and_then(Yaml::as_sequence)
        .into_iter()
        .flatten()
    {
        let to = t.get("To").and_then(scalar_text);
        let weight = t.get("Weight").and_then(number);
        let (Some(to), Some(weight)) = (to, weight) else {
            return Err(format!("a transition of state `{state}` without a scalar `To` and `Weight` (genny needs both)"));
        };
        let mut tt = toml::Table::new();
        tt.insert("to".into(), Toml::String(to));
        tt.insert("weight".into(), Toml::Float(weight));
        if let Some(sleep) = t.get("SleepBefore") {
            tt.insert("sleep".into(), to_toml(sleep));
        }
        transitions.push(Toml::Table(tt));
    }
    Ok(transitions)
}

/// `createIndex`: a `createIndexes` command of its `Keys` and `IndexOptions` (named
/// `genny_<row>` unless the options name it).
fn create_index(row: &str, coll: &str, coll_name: &str, c: &Yaml) -> toml::Table {
    let mut index = toml::Table::new();
    index.insert(
        "key".into(),
        c.get("Keys")
            .map(to_toml)
            .unwrap_or(Toml::Table(Default::default())),
    );
    if let Some(Toml::Table(o)) = c.get("IndexOptions").map(to_toml) {
        index.extend(o);
    }
    if !index.contains_key("name") {
        index.insert("name".into(), Toml::String(format!("genny_{row}")));
    }
    let mut cmd = toml::Table::new();
    cmd.insert("createIndexes".into(), Toml::String(coll_name.to_string()));
    cmd.insert("indexes".into(), Toml::Array(vec![Toml::Table(index)]));
    step(row, coll, "command", Toml::Table(cmd))
}

/// An insertMany's `Documents` of different templates, as bulkWrite's insertOne models.
fn insert_models(docs: &[Yaml]) -> Vec<Toml> {
    docs.iter()
        .map(|d| {
            let mut m = toml::Table::new();
            m.insert("document".into(), to_toml(d));
            let mut r = toml::Table::new();
            r.insert("insertOne".into(), Toml::Table(m));
            Toml::Table(r)
        })
        .collect()
}

/// A bulkWrite's `WriteOperations` as its write models.
fn bulk_requests(c: &Yaml) -> Result<Vec<Toml>, String> {
    let ops = c
        .get("WriteOperations")
        .and_then(Yaml::as_sequence)
        .ok_or("`WriteOperations` is not a list")?;
    let mut requests = Vec::new();
    for w in ops {
        let kind = w
            .get("WriteCommand")
            .and_then(Yaml::as_str)
            .ok_or("a write without `WriteCommand`")?;
        let mut m = toml::Table::new();
        for (k, ours) in [
            ("Document", "document"),
            ("Filter", "filter"),
            ("Update", "update"),
            ("Replacement", "replacement"),
        ] {
            if let Some(v) = w.get(k) {
                m.insert(ours.into(), to_toml(v));
            }
        }
        let mut r = toml::Table::new();
        r.insert(kind.to_string(), Toml::Table(m));
        requests.push(Toml::Table(r));
    }
    Ok(requests)
}
