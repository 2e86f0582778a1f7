//! Each verb's command read from its arguments: insert, find, aggregate, count, distinct, update,
//! replace, delete and findAndModify.

use std::sync::Arc;

use super::*;
use crate::workload::command::{
    Aggregate, Count, Delete, Distinct, Filter, Find, FindAndChange, FindAndModify, Insert,
    Replace, Update, UpdateBy,
};

impl<'a> Args<'a> {
    /// insertOne or insertMany: the document (else the collection's), the batch and `ordered`.
    pub(super) fn insert_command(&self) -> Result<Command, ProfileError> {
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
            let batch = self.int("batch", 1, MAX_BATCH)?.ok_or_else(|| {
                self.err(
                    "",
                    "insertMany needs `batch`, the documents per command",
                    "batch = 100",
                )
            })?;
            u32::try_from(batch).unwrap_or(u32::MAX)
        } else {
            1
        };
        Ok(Command::Insert(Arc::new(Insert {
            batch,
            ordered: self.bool("ordered")?.unwrap_or(true),
            document,
        })))
    }

    /// insertSample: the sample's name, size and pipeline, and the batches each operation
    /// inserts.
    pub(super) fn insert_sample_command(&self) -> Result<Command, ProfileError> {
        const EXAMPLE: &str =
            "insertSample = { sample = \"seed\", size = 7, batch = 5, batches = 2 }";
        let whole = |k: &str, max: i64| -> Result<u32, ProfileError> {
            let n = self
                .int(k, 1, max)?
                .ok_or_else(|| self.err("", format!("insertSample needs `{k}`"), EXAMPLE))?;
            Ok(u32::try_from(n).unwrap_or(u32::MAX))
        };
        let sample = match self.table.get("sample") {
            Some(toml::Value::String(s)) if !s.is_empty() => s.clone(),
            _ => {
                return Err(self.err(
                    "sample",
                    "insertSample needs `sample`, the name its operations share one sample by",
                    EXAMPLE,
                ))
            }
        };
        let pipeline = match self.constant("pipeline")? {
            None => Vec::new(),
            Some(Bson::Array(stages)) if stages.iter().all(|s| s.as_document().is_some()) => stages
                .into_iter()
                .filter_map(|s| s.as_document().cloned())
                .collect(),
            Some(_) => {
                return Err(self.err(
                    "pipeline",
                    "`pipeline` is a list of stages run after the sample",
                    "pipeline = [ { \"$set\" = { copied = true } } ]",
                ))
            }
        };
        Ok(Command::InsertSample(Arc::new(
            crate::workload::command::InsertSample {
                sample,
                size: whole("size", MAX_BATCH)?,
                pipeline,
                batch: whole("batch", MAX_BATCH)?,
                batches: whole("batches", MAX_BATCH)?,
            },
        )))
    }

    /// find or findOne (a limit of 1): the filter and the cursor's options.
    pub(super) fn find_command(&self) -> Result<Command, ProfileError> {
        let filter = self.doc_filter()?;
        let limit = if self.verb == Verb::FindOne {
            Some(1)
        } else {
            self.int("limit", 0, i64::from(i32::MAX))?
        };
        let (projection, let_vars, shaped) = self.find_shape()?;
        Ok(Command::Find(Arc::new(Find {
            filter: Filter::Template(filter),
            count_first: false,
            page: None,
            shaped: shaped.map(|s| *s),
            args: FindArgs {
                projection,
                let_vars,
                sort: self.sort()?,
                skip: self.int_as::<u64>("skip", 0, i64::MAX)?,
                limit,
                batch_size: self.int_as::<u32>("batchSize", 0, i64::from(i32::MAX))?,
                hint: self.hint()?,
                collation: self.doc("collation", "{ locale = \"en\" }")?,
                max_time_ms: self.int_as::<u64>("maxTimeMS", 0, i64::from(i32::MAX))?,
            },
        })))
    }

    /// aggregate: a pipeline that makes a list of stages, and its options.
    pub(super) fn aggregate_command(&self) -> Result<Command, ProfileError> {
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
        Ok(Command::Aggregate(Arc::new(Aggregate {
            pipeline,
            allow_disk_use: self.bool("allowDiskUse")?,
            batch_size: self.int_as::<u32>("batchSize", 0, i64::from(i32::MAX))?,
            hint: self.hint()?,
            max_time_ms: self.int_as::<u64>("maxTimeMS", 0, i64::from(i32::MAX))?,
        })))
    }

    /// countDocuments: the filter, skip, limit and hint.
    pub(super) fn count_command(&self) -> Result<Command, ProfileError> {
        let filter = self.doc_filter()?;
        Ok(Command::Count(Arc::new(Count {
            filter,
            skip: self.int_as::<u64>("skip", 0, i64::MAX)?,
            limit: self.int_as::<u64>("limit", 1, i64::MAX)?,
            hint: self.hint()?,
        })))
    }

    /// distinct: the key whose values it lists, and the filter.
    pub(super) fn distinct_command(&self) -> Result<Command, ProfileError> {
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
        Ok(Command::Distinct(Arc::new(Distinct { key, filter })))
    }

    /// updateOne or updateMany: the filter, the update and the write options.
    pub(super) fn update_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        Ok(Command::Update(Arc::new(Update {
            filter: Filter::Template(filter),
            update: UpdateBy::Template(self.update("update")?),
            args: self.write_args()?,
            many: self.verb == Verb::UpdateMany,
            read_first: false,
        })))
    }

    /// replaceOne: the filter, a replacement that can be stored, and the write options.
    pub(super) fn replace_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        let replacement = self.required("replacement", "{ status = \"open\" }")?;
        self.stored("replacement", &replacement)?;
        Ok(Command::Replace(Arc::new(Replace {
            filter,
            replacement,
            args: self.write_args()?,
        })))
    }

    /// deleteOne or deleteMany: the filter, hint and collation.
    pub(super) fn delete_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        Ok(Command::Delete(Arc::new(Delete {
            filter: Filter::Template(filter),
            hint: self.hint()?,
            collation: self.doc("collation", "{ locale = \"en\" }")?,
            many: self.verb == Verb::DeleteMany,
            from_key: false,
        })))
    }

    /// findOneAndUpdate, findOneAndReplace or findOneAndDelete: the filter, the change (an
    /// update, a replacement, or none for a delete) and the options.
    pub(super) fn find_and_modify_command(&self) -> Result<Command, ProfileError> {
        let filter = self.required_filter()?;
        // findOneAndDelete changes nothing.
        let change = if self.verb == Verb::FindOneAndUpdate {
            FindAndChange::Update(self.update("update")?)
        } else if self.verb == Verb::FindOneAndReplace {
            let r = self.required("replacement", "{ status = \"open\" }")?;
            self.stored("replacement", &r)?;
            FindAndChange::Replace(r)
        } else {
            FindAndChange::Delete
        };
        Ok(Command::FindAndModify(Arc::new(FindAndModify {
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
        })))
    }
}
