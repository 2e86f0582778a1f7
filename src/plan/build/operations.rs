//! A group's built-in operations: its `op` or the kinds and weights of its `mix`, each with the
//! settings that belong to it (filter, limit, count, set, inc, target, many), checked against
//! the `[document]` of its collection and read as the verb that does what the kind does (`get`
//! is a findOne by a drawn `_id`, `remove` a find from a drawn `_id` then a delete by the one
//! found, ...), so they are sent, audited and explained as the profile's own operations are.
//!
//! Owns: a group's settings becoming `OpSpec`s. Never: builds a request or calls the driver
//! (that is `workload` and `ops`).

use std::sync::Arc;

use super::groups::GroupAt;
use crate::error::ProfileError;
use crate::plan::limits;
use crate::plan::profile::{expected_for, UpdateTarget};
use crate::plan::CollectionPlan;
use crate::plan::{DEFAULT_FIND_LIMIT, DEFAULT_SCAN_LIMIT};
use crate::workload::command::{
    Change, Command, Delete, Desugared, Filter, Find, FindArgs, Insert, TemplateOp, Update,
    UpdateBy, Verb, WriteArgs,
};
use crate::workload::{DocGen, Gen, OpKind, OpSpec, Template};

/// The document template a built-in kind draws from, where the profile writes it and how a
/// message names it (`[document]`, or a `[[collection]]`'s own).
struct Doc<'a> {
    gen: &'a DocGen,
    at: String,
    called: String,
}

impl GroupAt<'_> {
    /// Field names of `k` (filter, set) as indexes into the document; with `default`, the first
    /// choice field when none is given.
    fn fields(
        &self,
        doc: &Doc<'_>,
        k: &str,
        names: &Option<Vec<String>>,
        default: bool,
    ) -> Result<Vec<usize>, ProfileError> {
        let document = doc.gen;
        let names: Vec<String> = match names {
            Some(n) if n.is_empty() => {
                return Err(self.err(k, format!("`{k}` needs at least one field")))
            }
            Some(n) => n.clone(),
            None if default => document
                .fields
                .iter()
                .find(|(_, g)| matches!(g, Gen::Choice(_)))
                .map(|(n, _)| vec![n.clone()])
                .ok_or_else(|| {
                    self.err(
                        k,
                        format!("no `{k}` given and the document has no choice field to use"),
                    )
                })?,
            None => return Err(self.err(k, format!("`{k}` is required for this operation"))),
        };
        names
            .iter()
            .map(|n| {
                document.field_index(n).ok_or_else(|| {
                    self.loaded.error_at(
                        &self.path(k),
                        format!("`{n}` is not a field of {}", doc.called),
                        format!(
                            "names from {}: {}",
                            doc.called,
                            document.field_names().join(", ")
                        ),
                    )
                })
            })
            .collect()
    }

    /// The ways a group says what it sends, those of the form the profile already uses first:
    /// its own operations (`[group.find]`, `[[group.ops]]`, `[[group.steps]]`) when another
    /// group or a `[[collection]]` has them, else the built-in `op` and `mix`.
    fn operation_forms(&self) -> String {
        let p = &self.loaded.profile;
        let own = !p.collections.is_empty()
            || p.groups
                .iter()
                .any(|g| !g.op_tables().is_empty() || g.ops.is_some() || g.steps.is_some());
        let own_forms = "an operation of its own: a table such as [group.find] (filter = { ... }), [group.insertOne], [group.updateOne] or [group.aggregate]; [[group.ops]] for several, weighted; [[group.steps]] for steps in order (docs/workload.md)";
        let built_in = format!(
            "a built-in op = \"insert\" (one of {}) or mix = {{ get = 95, update = 5 }}",
            OpKind::listed()
        );
        if own {
            format!("{own_forms}; or {built_in}")
        } else {
            format!("{built_in}; or {own_forms}")
        }
    }

    fn misplaced(&self, k: &str, set: bool, ok_for: &str) -> Result<(), ProfileError> {
        if set {
            let what = match (&self.g.op, &self.g.mix) {
                (Some(op), _) => format!("op = \"{op}\""),
                _ => "this group's mix".to_string(),
            };
            Err(self.err(
                k,
                format!("`{k}` has no meaning for {what}; it applies to {ok_for}"),
            ))
        } else {
            Ok(())
        }
    }

    /// The group's operation, or the kinds of its mix with their weights (the first kind is
    /// then the group's `op`).
    pub(super) fn ops(
        &self,
        coll: &CollectionPlan,
        collection: usize,
    ) -> Result<(OpSpec, Vec<(OpSpec, u32)>), ProfileError> {
        let document = &if self.loaded.profile.collections.is_empty() {
            Doc {
                gen: &coll.document,
                at: "document".into(),
                called: "[document]".into(),
            }
        } else {
            Doc {
                gen: &coll.document,
                at: format!("collection[{collection}].document"),
                called: format!("collection `{}`'s [collection.document]", coll.name),
            }
        };
        let g = self.g;
        let kinds: Vec<(OpKind, u32)> = match (g.op, &g.mix) {
            (Some(op), None) => vec![(op, 1)],
            (None, Some(mix)) => self.mix(mix)?,
            (Some(_), Some(_)) => {
                return Err(self.err(
                    "mix",
                    "both op and mix are set; a group has one operation or a mix of them".into(),
                ))
            }
            (None, None) => {
                return Err(self.loaded.error_at(
                    &format!("group[{}]", self.index),
                    format!("group `{}` has no operation", g.name),
                    self.operation_forms(),
                ))
            }
        };
        let has = |ks: &[OpKind]| kinds.iter().any(|(k, _)| ks.contains(k));
        // Settings that belong to some operation kinds only.
        for (k, set, ks, ok_for) in [
            (
                "limit",
                g.limit.is_some(),
                &[OpKind::Find, OpKind::Scan][..],
                "find and scan",
            ),
            ("count", g.count.is_some(), &[OpKind::Find][..], "find"),
            (
                "set",
                g.set.is_some(),
                &[OpKind::Update, OpKind::Rmw][..],
                "update and rmw",
            ),
            (
                "inc",
                g.inc.is_some(),
                &[OpKind::Update, OpKind::Rmw][..],
                "update and rmw",
            ),
            (
                "target",
                g.target.is_some(),
                &[OpKind::Update][..],
                "update",
            ),
            ("many", g.many.is_some(), &[OpKind::Update][..], "update"),
            (
                "filter",
                g.filter.is_some(),
                &[OpKind::Find, OpKind::Update, OpKind::Remove][..],
                "find, update and remove",
            ),
        ] {
            self.misplaced(k, set && !has(ks), ok_for)?;
        }
        let specs = kinds
            .iter()
            .map(|(k, w)| {
                let at = if g.mix.is_some() {
                    format!("{}.{k}", self.path("mix"))
                } else {
                    self.path("op")
                };
                let (verb, command, needs_key, inc) = self.op(*k, document)?;
                let op = TemplateOp {
                    name: (*k).into(),
                    verb,
                    line: self.loaded.error_at(&at, "", "").line,
                    at,
                    collection,
                    collection_name: coll.name.clone(),
                    command,
                    desugared: Some(Desugared {
                        kind: *k,
                        needs_key,
                        inc,
                    }),
                };
                Ok((OpSpec::Template(Arc::new(op)), *w))
            })
            .collect::<Result<Vec<_>, ProfileError>>()?;
        let first = specs[0].0.clone();
        Ok((first, if g.mix.is_some() { specs } else { Vec::new() }))
    }

    /// An update's `set` fields (of the document) and `inc` fields (any names): at least one.
    fn change(&self, doc: &Doc<'_>) -> Result<Change, ProfileError> {
        let document = doc.gen;
        let g = self.g;
        let inc = match &g.inc {
            Some(f) if f.is_empty() => {
                return Err(self.err("inc", "`inc` needs at least one field".into()))
            }
            Some(f) => {
                let unfit = |n: &String| {
                    n.is_empty() || n.starts_with('$') || n.contains(['.', '\0']) || n == "_id"
                };
                if let Some(bad) = f.iter().find(|n| unfit(n)) {
                    return Err(self.err(
                        "inc",
                        format!(
                            "`{}` cannot be a counter field (empty, `$`, `.`, NUL or _id)",
                            bad.escape_debug()
                        ),
                    ));
                }
                f.clone()
            }
            None => Vec::new(),
        };
        let set = if g.set.is_none() && !inc.is_empty() {
            Vec::new()
        } else {
            self.fields(doc, "set", &g.set, false)?
        };
        // A counter must be a number where it exists: a generated field that is not an int or
        // a float would make every update fail at the server, and so would one both set and
        // incremented.
        for name in &inc {
            let numeric = match document.fields.iter().find(|(n, _)| n == name) {
                None => true,
                Some((_, gen)) => matches!(gen, Gen::Int(..) | Gen::Float(..)),
            };
            let also_set = set.iter().any(|i| &document.fields[*i].0 == name);
            if !numeric || also_set {
                return Err(self.err(
                    "inc",
                    if also_set {
                        format!("`{name}` is both set and incremented; an update can do one of them")
                    } else {
                        format!(
                            "`{name}` is a {} field that is not a number (int or float), so $inc would fail",
                            doc.called
                        )
                    },
                ));
            }
        }
        Ok(Change { set, inc })
    }

    /// `mix = { get = 95, update = 5 }`: kinds and whole-number weights, at least one above 0.
    fn mix(&self, mix: &toml::Table) -> Result<Vec<(OpKind, u32)>, ProfileError> {
        let mut kinds = Vec::new();
        for (name, weight) in mix {
            let kind = OpKind::try_from(name.clone()).map_err(|p| {
                self.loaded.error_at(
                    &format!("{}.{name}", self.path("mix")),
                    p,
                    expected_for("mix"),
                )
            })?;
            let w = weight
                .as_integer()
                .and_then(|w| u32::try_from(w).ok())
                .ok_or_else(|| {
                    self.loaded.error_at(
                        &format!("{}.{name}", self.path("mix")),
                        format!("the weight of `{name}` must be a whole number from 0"),
                        expected_for("mix"),
                    )
                })?;
            kinds.push((kind, w));
        }
        if kinds.iter().map(|(_, w)| u64::from(*w)).sum::<u64>() == 0 {
            return Err(self.err(
                "mix",
                "the weights sum to 0, so no operation could be drawn".into(),
            ));
        }
        Ok(kinds)
    }

    /// A kind as the verb that does what it does: the verb, its command, whether it needs an
    /// existing document (sent only once there is one) and the counters it increments.
    fn op(&self, kind: OpKind, doc: &Doc<'_>) -> Result<Builtin, ProfileError> {
        let g = self.g;
        let by_key = || Filter::Template(Template::by_key(false));
        Ok(match kind {
            OpKind::Insert => {
                if doc.gen.fields.is_empty() {
                    return Err(self.loaded.error_at(
                        &doc.at,
                        format!("insert needs a {} to generate", doc.called),
                        expected_for("document"),
                    ));
                }
                let command = Command::Insert(Arc::new(Insert {
                    batch: 1,
                    ordered: true,
                    document: None,
                }));
                (Verb::InsertOne, command, false, Vec::new())
            }
            OpKind::Find => (Verb::Find, self.find(doc)?, false, Vec::new()),
            OpKind::Update => self.update(doc)?,
            OpKind::Remove => {
                let command = Command::Delete(Arc::new(Delete {
                    filter: Filter::Fields(self.fields(doc, "filter", &g.filter, true)?),
                    hint: None,
                    collation: None,
                    many: false,
                    from_key: true,
                }));
                (Verb::DeleteOne, command, false, Vec::new())
            }
            OpKind::Get => {
                // As the driver's findOne sends it: limit 1 in a single batch.
                let args = FindArgs {
                    limit: Some(-1),
                    ..FindArgs::default()
                };
                (
                    Verb::FindOne,
                    find(by_key(), args, false, None),
                    true,
                    Vec::new(),
                )
            }
            OpKind::Rmw => {
                let (verb, command, inc) = update(by_key(), self.change(doc)?, false, true);
                (verb, command, true, inc)
            }
            OpKind::Scan => {
                let max = g.limit.unwrap_or(DEFAULT_SCAN_LIMIT);
                if max < limits::MIN_FIND_LIMIT {
                    return Err(self.err("limit", "a scan of 0 documents reads nothing".into()));
                }
                let args = FindArgs {
                    sort: Some(mongodb::bson::doc! { "_id": 1 }),
                    ..FindArgs::default()
                };
                let from = Filter::Template(Template::by_key(true));
                (
                    Verb::Find,
                    find(from, args, false, Some(max)),
                    true,
                    Vec::new(),
                )
            }
        })
    }

    /// The built-in find: a filter on the document's fields, its limit, and `count`.
    fn find(&self, doc: &Doc<'_>) -> Result<Command, ProfileError> {
        let g = self.g;
        let limit = g.limit.unwrap_or(DEFAULT_FIND_LIMIT);
        if limit < limits::MIN_FIND_LIMIT {
            return Err(self.err(
                "limit",
                "limit = 0 means no limit to MongoDB; give a real bound".into(),
            ));
        }
        let filter = Filter::Fields(self.fields(doc, "filter", &g.filter, true)?);
        let args = FindArgs {
            limit: Some(i64::from(limit)),
            ..FindArgs::default()
        };
        Ok(find(filter, args, g.count.unwrap_or(false), None))
    }

    /// The built-in update: of a drawn `_id`, or (`target = "filter"`) of the documents a
    /// filter on the document's fields matches.
    fn update(&self, doc: &Doc<'_>) -> Result<Builtin, ProfileError> {
        let g = self.g;
        let change = self.change(doc)?;
        Ok(match g.target.unwrap_or(UpdateTarget::Random) {
            UpdateTarget::Random => {
                let why = "update with target = \"filter\"";
                self.misplaced("filter", g.filter.is_some(), why)?;
                self.misplaced("many", g.many.is_some(), why)?;
                let filter = Filter::Template(Template::by_key(false));
                let (verb, command, inc) = update(filter, change, false, false);
                (verb, command, true, inc)
            }
            UpdateTarget::Filter => {
                let filter = Filter::Fields(self.fields(doc, "filter", &g.filter, true)?);
                let many = g.many.unwrap_or(false);
                let (verb, command, inc) = update(filter, change, many, false);
                (verb, command, false, inc)
            }
        })
    }
}

/// A built-in update's verb, command and counters.
fn update(
    filter: Filter,
    change: Change,
    many: bool,
    read_first: bool,
) -> (Verb, Command, Vec<String>) {
    let inc = change.inc.clone();
    let verb = if many {
        Verb::UpdateMany
    } else {
        Verb::UpdateOne
    };
    let command = Command::Update(Arc::new(Update {
        filter,
        update: UpdateBy::Builtin(change),
        args: WriteArgs::default(),
        many,
        read_first,
    }));
    (verb, command, inc)
}

/// A built-in find: its filter and limit, whether it counts first, and the most documents a
/// scan draws to read.
fn find(filter: Filter, args: FindArgs, count_first: bool, page: Option<u32>) -> Command {
    Command::Find(Arc::new(Find {
        filter,
        args,
        count_first,
        page,
        shaped: None,
    }))
}

/// A built-in kind read as a verb: the verb, its command, whether it needs an existing
/// document, the counters it increments.
type Builtin = (Verb, Command, bool, Vec<String>);

#[cfg(test)]
mod tests {
    use crate::plan::build::test_profile::{build, DOC};

    #[test]
    fn a_filter_on_an_unknown_field_lists_the_document_fields() {
        let e = build(&format!("{DOC}[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 1\nloops = 1\nfilter = [\"town\"]\n")).unwrap_err();
        assert_eq!(e.key, "group[0].filter");
        assert!(e.expected.contains("city"));
    }
}
