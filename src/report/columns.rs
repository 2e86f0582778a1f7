//! The summary's columns: their names, in order, and each cell's text. The console table,
//! `summary.tsv` and every later renderer share this one list.

use crate::metrics::Row;

/// The columns that mean something in closed loop: all up to `Modified`.
pub(crate) const CLOSED_LOOP_COLUMNS: usize = 18;

/// JMeter's Aggregate Report columns, `Label` to `Sent KB/sec`: the first the console keeps.
pub(crate) const JMETER_COLUMNS: usize = 13;

/// Column names, in order, as in the console table and `summary.tsv`.
pub(crate) const COLUMNS: [&str; 37] = [
    "Label",
    "# Samples",
    "Average",
    "Median",
    "90% Line",
    "95% Line",
    "99% Line",
    "Min",
    "Max",
    "Error %",
    "Throughput",
    "Received KB/sec",
    "Sent KB/sec",
    "99.9% Line",
    "Std. Dev.",
    "Errors",
    "Matched",
    "Modified",
    "Service Average",
    "Service Median",
    "Service 90% Line",
    "Service 99% Line",
    "Service Max",
    "Late",
    "Max Behind",
    "Missed",
    "Returned",
    "Inserted",
    "Updated",
    "Upserted",
    "Deleted",
    "Docs/sec",
    "Committed",
    "Aborted",
    "In Doubt",
    "Retries",
    "Commit Retries",
];

/// Where the transaction counts begin (`Committed`): the console shows them for a profile with
/// transactions.
pub(crate) const TX_COLUMNS: usize = 32;

/// Where the document counts begin (`Returned`): the console shows them for a profile's own
/// operations.
pub(crate) const DOC_COLUMNS: usize = 26;

/// A row's cells as text, in `COLUMNS` order: milliseconds and rates with two decimals.
pub(crate) fn cells(row: &Row) -> Vec<String> {
    let f = |x: f64| format!("{x:.2}");
    vec![
        row.label.to_string(),
        row.samples.to_string(),
        f(row.average_ms),
        f(row.median_ms),
        f(row.p90_ms),
        f(row.p95_ms),
        f(row.p99_ms),
        f(row.min_ms),
        f(row.max_ms),
        format!("{:.2}%", row.error_pct),
        f(row.throughput),
        f(row.received_kb_sec),
        f(row.sent_kb_sec),
        f(row.p999_ms),
        f(row.stddev_ms),
        row.errors.to_string(),
        row.matched.to_string(),
        row.modified.to_string(),
        f(row.service_average_ms),
        f(row.service_median_ms),
        f(row.service_p90_ms),
        f(row.service_p99_ms),
        f(row.service_max_ms),
        row.late.to_string(),
        f(row.max_behind_ms),
        row.missed.to_string(),
        row.returned.to_string(),
        row.inserted.to_string(),
        row.updated.to_string(),
        row.upserted.to_string(),
        row.deleted.to_string(),
        f(row.docs_per_sec),
    ]
    .into_iter()
    .chain({
        let t = row.transactions.clone().unwrap_or_default();
        [
            t.committed,
            t.aborted,
            t.in_doubt,
            t.retries,
            t.commit_retries,
        ]
        .map(|n| n.to_string())
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::GroupMetrics;

    #[test]
    fn the_closed_loop_columns_end_at_modified() {
        assert_eq!(COLUMNS[CLOSED_LOOP_COLUMNS - 1], "Modified");
        assert_eq!(COLUMNS[CLOSED_LOOP_COLUMNS], "Service Average");
    }

    #[test]
    fn the_document_counts_follow_the_schedule_columns() {
        assert_eq!(COLUMNS[DOC_COLUMNS - 1], "Missed");
        assert_eq!(COLUMNS[DOC_COLUMNS], "Returned");
        assert_eq!(COLUMNS[TX_COLUMNS - 1], "Docs/sec");
        assert_eq!(COLUMNS[TX_COLUMNS], "Committed");
        assert_eq!(
            cells(&GroupMetrics::default().row("x")).len(),
            COLUMNS.len()
        );
    }

    #[test]
    fn the_jmeter_columns_end_at_sent_kb_per_second() {
        assert_eq!(COLUMNS[JMETER_COLUMNS - 1], "Sent KB/sec");
        assert_eq!(COLUMNS[JMETER_COLUMNS], "99.9% Line");
    }

    #[test]
    fn an_empty_group_has_zeros_not_nans() {
        let r = GroupMetrics::default().row("none");
        assert_eq!(
            cells(&r)[1..]
                .iter()
                .filter(|c| c.contains("NaN") || c.contains("inf"))
                .count(),
            0
        );
    }
}
