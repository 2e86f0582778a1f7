//! `rollups.json` of a genny workload's run: each metric genny would record (`Actor.Operation`,
//! the steps naming it added together, `summary::metric_rows`) with the names of genny's
//! rollups (`AverageLatency`, `OperationThroughput`, ...), so dashboards keyed by those names
//! find them. The values are the summary's, in its units (said in the file).

use std::io::Write;

use serde_json::{json, Map, Value};

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
            for m in &run.metrics {
                let r = &m.row;
                // Documents at the row's operation rate (a count's answers among them).
                let document_rate = if r.samples == 0 {
                    0.0
                } else {
                    crate::num::real(m.documents) * r.throughput / crate::num::real(r.samples)
                };
                let error_rate = if r.samples == 0 {
                    0.0
                } else {
                    crate::num::real(r.errors) / crate::num::real(r.samples)
                };
                rows.insert(
                    m.metric.clone(),
                    json!({
                        "AverageLatency": r.average_ms,
                        "Latency50thPercentile": r.median_ms,
                        "Latency90thPercentile": r.p90_ms,
                        "Latency95thPercentile": r.p95_ms,
                        "Latency99thPercentile": r.p99_ms,
                        "LatencyMin": r.min_ms,
                        "LatencyMax": r.max_ms,
                        "OperationThroughput": r.throughput,
                        "DocumentThroughput": document_rate,
                        "ErrorRate": error_rate,
                        "WorkersMin": m.workers,
                        "WorkersMax": m.workers,
                        "OperationsTotal": r.samples,
                        "DocumentsTotal": m.documents,
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
