//! `rollups.json` of a genny workload's run: each row under the name genny gives its metric
//! (`Actor.Operation`) with the names of genny's rollups (`AverageLatency`,
//! `OperationThroughput`, ...), so dashboards keyed by those names find them. The values are
//! the summary's, in its units (said in the file).

use std::io::Write;

use serde_json::{json, Map, Value};

use crate::metrics::Label;
use crate::summary::Summary;

/// Is the run a genny workload's (its profile a `.yml`/`.yaml` file)?
pub(crate) fn applies(s: &Summary) -> bool {
    let origin = s.origin.trim_end_matches(" (as a profile)");
    origin.ends_with(".yml") || origin.ends_with(".yaml")
}

pub(crate) fn render(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    let runs: Vec<Value> = s
        .runs
        .iter()
        .map(|run| {
            let mut rows = Map::new();
            for r in &run.rows {
                let (name, group) = match &r.label {
                    Label::Group(g) => (g.to_string(), g),
                    Label::Kind { group, kind } => (format!("{group}.{kind}"), group),
                    Label::Total | Label::Stage(_) => continue,
                };
                let threads = s
                    .groups
                    .iter()
                    .find(|g| group.is(&g.name))
                    .map_or(0, |g| g.threads);
                let documents = r.returned + r.inserted + r.updated + r.upserted + r.deleted;
                let error_rate = if r.samples == 0 {
                    0.0
                } else {
                    crate::num::real(r.errors) / crate::num::real(r.samples)
                };
                rows.insert(
                    name,
                    json!({
                        "AverageLatency": r.average_ms,
                        "Latency50thPercentile": r.median_ms,
                        "Latency90thPercentile": r.p90_ms,
                        "Latency95thPercentile": r.p95_ms,
                        "Latency99thPercentile": r.p99_ms,
                        "LatencyMin": r.min_ms,
                        "LatencyMax": r.max_ms,
                        "OperationThroughput": r.throughput,
                        "DocumentThroughput": r.docs_per_sec,
                        "ErrorRate": error_rate,
                        "WorkersMin": threads,
                        "WorkersMax": threads,
                        "OperationsTotal": r.samples,
                        "DocumentsTotal": documents,
                        "ErrorsTotal": r.errors,
                    }),
                );
            }
            json!({ "run": run.run, "rollups": rows })
        })
        .collect();
    let doc = json!({
        "profile": s.profile,
        "units": {
            "latency": "milliseconds",
            "throughput": "per second",
            "ErrorRate": "errors / operations",
            "Workers": "the group's threads",
        },
        "runs": runs,
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
