//! genny's SamplingLoader (`src/cast_core/src/SamplingLoader.cpp`): an `insertSample` step on
//! the actor's `Database`.`Collection`: `SampleSize` documents sampled once for the actor (its
//! threads and phases share the sample, taken at its first operation), `Pipeline` run after the
//! sample; each iteration `Batches` unordered insertMany of `InsertBatchSize` copies. Its metric
//! is the actor's `TotalBulkInsert`.

use super::*;

impl<'a> Translator<'a> {
    pub(super) fn sampling_loader(
        &mut self,
        actor: &Actor<'a>,
        p: usize,
        cx: &Ctx<'a>,
    ) -> Result<Vec<toml::Table>, Refusal> {
        let name = actor.name.as_str();
        let refuse = |t: &Self, what: String| t.refuse(Some(name), Some(p), what);
        // genny reads these from the actor (its producer), never from a phase.
        let own = |k: &str| actor.node.get(k).and_then(scalar_text);
        let (Some(database), Some(collection)) = (own("Database"), own("Collection")) else {
            return Err(refuse(
                self,
                "SamplingLoader needs `Database` and `Collection` (the actor's)".into(),
            ));
        };
        let whole = |v: Option<&Yaml>| {
            v.and_then(number)
                .filter(|n| *n >= 1.0 && n.fract() == 0.0)
                .map(crate::num::whole_signed)
        };
        let size = whole(actor.node.get("SampleSize")).ok_or_else(|| {
            refuse(
                self,
                "SamplingLoader needs `SampleSize`, a whole number from 1".into(),
            )
        })?;
        let mut args = toml::Table::new();
        args.insert("sample".into(), Toml::String(name.to_string()));
        args.insert("size".into(), Toml::Integer(size));
        for (key, ours) in [("InsertBatchSize", "batch"), ("Batches", "batches")] {
            let n = whole(cx.phase.get(key)).ok_or_else(|| {
                refuse(
                    self,
                    format!("SamplingLoader needs `{key}` in its phase, a whole number from 1"),
                )
            })?;
            args.insert(ours.into(), Toml::Integer(n));
        }
        if let Some(pipeline) = actor.node.get("Pipeline") {
            if !pipeline.is_sequence() {
                return Err(refuse(self, "`Pipeline` is a list of stages".into()));
            }
            args.insert("pipeline".into(), to_toml(pipeline));
        }
        let coll = self.collection(&database, &collection);
        self.notes.push(format!(
            "{name} (SamplingLoader): one operation per iteration, its `TotalBulkInsert` row (each insertMany, genny's IndividualBulkInsert, is not timed apart)"
        ));
        let mut s = step("TotalBulkInsert", &coll, "insertSample", Toml::Table(args));
        s.insert(
            "metric".into(),
            Toml::String(format!("{name}.TotalBulkInsert")),
        );
        Ok(vec![s])
    }
}
