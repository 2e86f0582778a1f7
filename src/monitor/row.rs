//! One second of resource use, as the sampler takes it.

use serde::Serialize;

/// One second of resource use. Rates are over the interval before `time_ms`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResourceRow {
    pub time_ms: u64,
    /// Length of the interval the rates cover, ending at `time_ms`.
    pub interval_ms: u64,
    pub server_cpu_pct: Option<f64>,
    pub server_rss_mb: Option<f64>,
    pub disk_read_kbs: Option<f64>,
    pub disk_write_kbs: Option<f64>,
    pub iops: Option<f64>,
    pub client_cpu_pct: Option<f64>,
    pub client_rss_mb: Option<f64>,
    pub host_cpu_pct: Option<f64>,
    /// opcounters per second, in `OPCOUNTERS` order.
    pub ops_s: [Option<f64>; 6],
    pub connections: Option<f64>,
    pub net_in_kbs: Option<f64>,
    pub net_out_kbs: Option<f64>,
    pub cache_used_mb: Option<f64>,
    pub cache_dirty_mb: Option<f64>,
}

/// The `serverStatus.opcounters` fields, in `ResourceRow::ops_s` order.
pub const OPCOUNTERS: [&str; 6] = ["insert", "query", "update", "delete", "getmore", "command"];

impl ResourceRow {
    /// Server-side CRUD operations per second (opcounters insert + query + update + delete).
    pub fn server_ops_s(&self) -> Option<f64> {
        let v: Vec<f64> = self.ops_s[..4].iter().flatten().copied().collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }
}
