//! The merged `resources.tsv`: the server's columns once (from the part that sampled the server
//! process, else part 0, whose serverStatus columns every part saw alike), the busiest part's
//! client CPU, RSS and host CPU in the client columns (so the load-generator warning fires when
//! any part was the limit), the most starved part's health columns (so the starvation warning
//! fires when any part was starved), and each part's client CPU in a column of its own.

use super::PartDir;
use crate::monitor::ResourceRow;

/// The merged `resources.tsv`.
#[derive(Debug)]
pub(crate) struct MergedResources {
    pub(crate) rows: Vec<ResourceRow>,
    /// Per row, each part's client CPU, in the order of `columns`.
    pub(crate) part_cpu: Vec<Vec<Option<f64>>>,
    /// `client_cpu_pct_part0`, ...
    pub(crate) columns: Vec<String>,
}

/// Base rows, each part's client CPU per base row, and the names of those columns; None when
/// no part sampled.
pub(crate) fn merge(parts: &[PartDir]) -> Option<MergedResources> {
    let sampled: Vec<(&PartDir, &Vec<ResourceRow>)> = parts
        .iter()
        .filter_map(|p| p.resources.as_ref().map(|r| (p, r)))
        .collect();
    let server_cells =
        |rows: &Vec<ResourceRow>| rows.iter().filter(|r| r.server_cpu_pct.is_some()).count();
    // The part that saw the server process (the first such), else the first part.
    let (_, base) = sampled
        .iter()
        .max_by_key(|(p, rows)| (server_cells(rows), std::cmp::Reverse(p.index())))?;
    let columns: Vec<String> = sampled
        .iter()
        .map(|(p, _)| format!("client_cpu_pct_part{}", p.index()))
        .collect();
    let mut rows = Vec::with_capacity(base.len());
    let mut extra = Vec::with_capacity(base.len());
    for b in base.iter() {
        let mut row = b.clone();
        let mut cells = Vec::with_capacity(sampled.len());
        let mut busiest: Option<&ResourceRow> = None;
        // The health of the most starved part: a starved part uses little CPU, so the busiest
        // part's health would hide it.
        let mut health: Option<&crate::monitor::row::HealthCells> = None;
        let starved = |h: &crate::monitor::row::HealthCells| {
            let wait = h.wait_ms.unwrap_or(0.0) / (h.run_ms.unwrap_or(0.0) + 1.0);
            let lag = h.lag_avg_ms.unwrap_or(0.0) / 20.0;
            wait.max(lag).max(h.throttled_ms.unwrap_or(0.0) / 100.0)
        };
        for (_, theirs) in &sampled {
            let near = nearest(theirs, b.time_ms);
            if let Some(h) = near.map(|r| &r.health) {
                if health.is_none_or(|x| starved(h) > starved(x)) {
                    health = Some(h);
                }
            }
            cells.push(near.and_then(|r| r.client_cpu_pct));
            if let Some(r) = near.filter(|r| r.client_cpu_pct.is_some()) {
                if busiest.is_none_or(|x| r.client_cpu_pct > x.client_cpu_pct) {
                    busiest = Some(r);
                }
            }
        }
        if let Some(r) = busiest {
            row.client_cpu_pct = r.client_cpu_pct;
            row.client_rss_mb = r.client_rss_mb;
            row.host_cpu_pct = r.host_cpu_pct;
        }
        if let Some(h) = health {
            row.health = h.clone();
        }
        rows.push(row);
        extra.push(cells);
    }
    Some(MergedResources {
        rows,
        part_cpu: extra,
        columns,
    })
}

/// The row of a part taken within half a second of `time_ms` (parts sample on their own clocks).
fn nearest(rows: &[ResourceRow], time_ms: u64) -> Option<&ResourceRow> {
    let i = rows.partition_point(|r| r.time_ms < time_ms);
    [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter_map(|j| rows.get(j))
        .min_by_key(|r| r.time_ms.abs_diff(time_ms))
        .filter(|r| r.time_ms.abs_diff(time_ms) <= 500)
}
