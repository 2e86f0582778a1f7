//! The winning plan the server's explain gave each of the profile's own operations (`ops::explain`
//! asks for them; the summary keeps them).

use serde::{Deserialize, Serialize};

/// One template's plan, as the server's explain gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryPlan {
    /// The row it belongs to (`recent`, `app:lookup`).
    pub(crate) label: crate::metrics::Label,
    /// The driver's name of the operation (`find`, `aggregate`).
    pub(crate) operation: String,
    pub(crate) collection: String,
    /// `IXSCAN status_1_created_-1`, `COLLSCAN`, `IDHACK`, `EOF`, ...: the winning plan's
    /// access stages.
    pub(crate) plan: String,
    /// The indexes the winning plan reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) indexes: Vec<String>,
    /// It reads the whole collection.
    pub(crate) collscan: bool,
    /// From `executionStats` (reads only): keys and documents examined, documents returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) keys_examined: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) docs_examined: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) returned: Option<u64>,
    /// An aggregate's: what the whole pipeline returned in that one call (`returned` is what
    /// its first stage read from the collection into it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pipeline_returned: Option<u64>,
    /// A find's or aggregate's documents returned per call, on average over `draws` requests
    /// drawn as the users draw them: what its filter's values select here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) returned_per_call: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) draws: Option<u32>,
}

impl QueryPlan {
    /// `recent (find on orders): IXSCAN status_1_created_-1, 20 keys and 20 documents examined
    /// for 20 returned`.
    pub(crate) fn line(&self) -> String {
        let per = |k: u64, d: u64, n: u64| {
            format!(
                "{:.1} and {:.1} per document returned",
                crate::num::real(k) / crate::num::real(n),
                crate::num::real(d) / crate::num::real(n)
            )
        };
        let stats = match (self.keys_examined, self.docs_examined, self.returned) {
            // An aggregate: its first stage's reads fed the pipeline; what it returned is
            // what a call gives the application.
            (Some(k), Some(d), Some(n)) if self.operation == "aggregate" => {
                match self.pipeline_returned {
                    Some(p) if p > 0 => format!(
                        "; one call examined {k} keys and {d} documents, {n} of them into the pipeline, which returned {p} ({})",
                        per(k, d, p)
                    ),
                    Some(_) => format!(
                        "; one call examined {k} keys and {d} documents, {n} of them into the pipeline, which returned none"
                    ),
                    None => format!(
                        "; one call examined {k} keys and {d} documents, {n} of them into the pipeline"
                    ),
                }
            }
            (Some(k), Some(d), Some(n)) if n > 0 => format!(
                "; one call examined {k} keys and {d} documents for {n} returned ({})",
                per(k, d, n)
            ),
            (Some(k), Some(d), Some(_)) => {
                format!("; one call examined {k} keys and {d} documents, returned none")
            }
            _ => String::new(),
        };
        let mean = match (self.returned_per_call, self.draws) {
            (Some(m), Some(d)) if d > 1 => {
                format!("; about {m:.1} returned per call over {d} draws")
            }
            _ => String::new(),
        };
        format!(
            "{} ({} on {}): {}{}{stats}{mean}",
            self.label,
            self.operation,
            self.collection,
            self.plan,
            if self.collscan {
                " (reads the whole collection: no index serves this query)"
            } else {
                ""
            }
        )
    }
}
