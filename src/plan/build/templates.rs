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

mod args;
use args::*;

mod commands;

mod scan;

mod steps;

/// A group's first operation, and (for several) each with its weight.
type Ops = (OpSpec, Vec<(OpSpec, u32)>);

/// The most documents one insertMany may carry.
const MAX_BATCH: i64 = 100_000;

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
            return self.state_ops(states, collections, collection).map(Some);
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
                self.named_ops(ops, collection, coll).map(Some)
            }
        }
    }

    /// `[[group.states]]`: each state's steps, one operation per state.
    fn state_ops(
        &self,
        states: &[crate::plan::profile::model::StateDef],
        collections: &[CollectionPlan],
        collection: usize,
    ) -> Result<Ops, ProfileError> {
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
        Ok((specs[0].0.clone(), specs))
    }

    /// `[[group.ops]]`: named operations with their weights.
    fn named_ops(
        &self,
        ops: &[crate::plan::profile::model::NamedOp],
        collection: usize,
        coll: &CollectionPlan,
    ) -> Result<Ops, ProfileError> {
        let g = self.g;
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
                    format!(
                        "`{}` cannot name a row (empty, `:`, `@` or a control character)",
                        o.name.escape_debug()
                    ),
                    "a short name, e.g. name = \"lookup\"",
                ));
            }
            let name = OpName::from(o.name.as_str());
            if specs.iter().any(|(s, _)| s.kind() == name) {
                return Err(self.loaded.error_at(
                    &format!("{at}.name"),
                    format!(
                        "two operations of group `{}` are named `{}`",
                        g.name, o.name
                    ),
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
            let op =
                self.template_op(verb, value, &format!("{at}.{verb}"), name, collection, coll)?;
            specs.push((OpSpec::Template(op), weight));
        }
        if specs.iter().all(|(_, w)| *w == 0) {
            return Err(self.err(
                "ops",
                "the weights sum to 0, so no operation could be drawn".into(),
            ));
        }
        Ok((specs[0].0.clone(), specs))
    }
}
