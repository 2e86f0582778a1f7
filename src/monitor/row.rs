//! One second of resource use, as the sampler takes it, and its columns in `resources.tsv`.

use std::sync::Arc;

use serde::Serialize;

/// One second of resource use. Rates are over the interval before `time_ms`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResourceRow {
    pub(crate) time_ms: u64,
    /// Length of the interval the rates cover, ending at `time_ms`.
    pub(crate) interval_ms: u64,
    /// The server process on this machine (local /proc).
    pub(crate) server_cpu_pct: Option<f64>,
    pub(crate) server_rss_mb: Option<f64>,
    pub(crate) disk_read_kbs: Option<f64>,
    pub(crate) disk_write_kbs: Option<f64>,
    pub(crate) iops: Option<f64>,
    pub(crate) client_cpu_pct: Option<f64>,
    pub(crate) client_rss_mb: Option<f64>,
    /// This machine's CPU, % of one core (all of its CPUs, whatever this tool may use).
    pub(crate) host_cpu_pct: Option<f64>,
    /// opcounters per second, in `OPCOUNTERS` order.
    pub(crate) ops_s: [Option<f64>; 6],
    pub(crate) connections: Option<f64>,
    pub(crate) net_in_kbs: Option<f64>,
    pub(crate) net_out_kbs: Option<f64>,
    pub(crate) cache_used_mb: Option<f64>,
    pub(crate) cache_dirty_mb: Option<f64>,
    /// The rest of serverStatus, the mongostat way (see `status`).
    pub(crate) status: StatusCells,
    /// The load generator's own health (see `health`).
    pub(crate) health: HealthCells,
    /// One per `--server-metrics` URL, in their order.
    pub(crate) hosts: Vec<HostRow>,
    /// The fault (`[[fault]]`) going on in the interval, or done within it.
    pub(crate) fault: Option<String>,
}

/// serverStatus beyond opcounters: mongostat's columns and the server's own latencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct StatusCells {
    /// The server process's CPU from `extra_info` user and system time, % of one core.
    pub(crate) cpu_pct: Option<f64>,
    /// globalLock queued readers and writers (mongostat `qrw`), active ones (`arw`).
    pub(crate) qr: Option<f64>,
    pub(crate) qw: Option<f64>,
    pub(crate) ar: Option<f64>,
    pub(crate) aw: Option<f64>,
    /// WiredTiger cache dirty and used, % of its configured maximum (mongostat `dirty`, `used`).
    pub(crate) dirty_pct: Option<f64>,
    pub(crate) used_pct: Option<f64>,
    /// Checkpoints completed in the interval (mongostat `flushes`).
    pub(crate) flushes: Option<f64>,
    /// mem.virtual and mem.resident (mongostat `vsize`, `res`).
    pub(crate) vsize_mb: Option<f64>,
    pub(crate) res_mb: Option<f64>,
    /// Replica set state (mongostat `repl`): PRI, SEC, ARB, RTR, or none for a standalone.
    pub(crate) repl: Option<String>,
    /// opLatencies: the server's own average time per read, write and command in the
    /// interval, in microseconds.
    pub(crate) reads_us: Option<f64>,
    pub(crate) writes_us: Option<f64>,
    pub(crate) commands_us: Option<f64>,
}

/// What the kernel and the runtime say about the load generator itself, per interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct HealthCells {
    /// Time its threads waited to run (runnable, not running), ms per second, summed over
    /// threads (`/proc/self/task/*/schedstat`).
    pub(crate) wait_ms: Option<f64>,
    /// Time its threads ran, ms per second, from the same source.
    pub(crate) run_ms: Option<f64>,
    /// Its cgroup's CPU throttling: periods throttled, and ms throttled per second (`cpu.stat`).
    pub(crate) throttled: Option<f64>,
    pub(crate) throttled_ms: Option<f64>,
    /// How late a 100 ms timer on the async runtime woke: the worst and the average, in ms.
    pub(crate) lag_max_ms: Option<f64>,
    pub(crate) lag_avg_ms: Option<f64>,
}

/// The readings of one `--server-metrics` endpoint in one interval, in `HOST_COLUMNS` order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct HostRow {
    /// The endpoint's host:port (its column suffix).
    pub(crate) host: Arc<str>,
    /// What answered: `node_exporter`, `process-exporter`, `mongodb_exporter`.
    pub(crate) kind: &'static str,
    pub(crate) values: [Option<f64>; HOST_COLUMNS.len()],
}

/// A remote host's columns, each suffixed `@host:port` in `resources.tsv`.
pub(crate) const HOST_COLUMNS: [&str; 16] = [
    "node_cpu_pct",
    "node_cpu_user_pct",
    "node_cpu_system_pct",
    "node_cpu_iowait_pct",
    "node_load1",
    "node_mem_used_mb",
    "node_mem_available_mb",
    "node_disk_reads_s",
    "node_disk_writes_s",
    "node_disk_read_kbs",
    "node_disk_write_kbs",
    "node_disk_util_pct",
    "node_net_in_kbs",
    "node_net_out_kbs",
    "mongod_cpu_pct",
    "mongod_rss_mb",
];

/// Index of a host column by name.
pub(crate) fn host_column(name: &str) -> usize {
    HOST_COLUMNS
        .iter()
        .position(|c| *c == name)
        .expect("a host column")
}

/// The `serverStatus.opcounters` fields, in `ResourceRow::ops_s` order.
pub(crate) const OPCOUNTERS: [&str; 6] =
    ["insert", "query", "update", "delete", "getmore", "command"];

/// The columns of the opcounters per second, in `OPCOUNTERS` order (`resources.tsv`,
/// `members.tsv`).
pub(crate) const OPS_COLUMNS: [&str; 6] = [
    "insert_s",
    "query_s",
    "update_s",
    "delete_s",
    "getmore_s",
    "command_s",
];

/// Columns that hold words, not numbers.
pub(crate) const TEXT_COLUMNS: [&str; 2] = ["repl", "fault"];

impl ResourceRow {
    /// Server-side CRUD operations per second (opcounters insert + query + update + delete).
    pub(crate) fn server_ops_s(&self) -> Option<f64> {
        let v: Vec<f64> = self.ops_s[..4].iter().flatten().copied().collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    /// Every numeric column but the hosts', by name, in `resources.tsv` order (`repl`, the one
    /// word column, comes after `res_mb`).
    pub(crate) fn cells(&self) -> Vec<(&'static str, Option<f64>)> {
        let s = &self.status;
        let h = &self.health;
        let mut v = vec![
            ("time_ms", Some(crate::num::real(self.time_ms))),
            ("interval_ms", Some(crate::num::real(self.interval_ms))),
            ("server_cpu_pct", self.server_cpu_pct),
            ("server_rss_mb", self.server_rss_mb),
            ("disk_read_kbs", self.disk_read_kbs),
            ("disk_write_kbs", self.disk_write_kbs),
            ("iops", self.iops),
            ("client_cpu_pct", self.client_cpu_pct),
            ("client_rss_mb", self.client_rss_mb),
            ("host_cpu_pct", self.host_cpu_pct),
        ];
        v.extend(OPS_COLUMNS.iter().zip(self.ops_s).map(|(n, x)| (*n, x)));
        v.extend([
            ("connections", self.connections),
            ("net_in_kbs", self.net_in_kbs),
            ("net_out_kbs", self.net_out_kbs),
            ("cache_used_mb", self.cache_used_mb),
            ("cache_dirty_mb", self.cache_dirty_mb),
            ("status_cpu_pct", s.cpu_pct),
            ("qr", s.qr),
            ("qw", s.qw),
            ("ar", s.ar),
            ("aw", s.aw),
            ("dirty_pct", s.dirty_pct),
            ("used_pct", s.used_pct),
            ("flushes", s.flushes),
            ("vsize_mb", s.vsize_mb),
            ("res_mb", s.res_mb),
            ("reads_us", s.reads_us),
            ("writes_us", s.writes_us),
            ("commands_us", s.commands_us),
            ("client_wait_ms", h.wait_ms),
            ("client_run_ms", h.run_ms),
            ("client_throttled", h.throttled),
            ("client_throttled_ms", h.throttled_ms),
            ("client_lag_max_ms", h.lag_max_ms),
            ("client_lag_avg_ms", h.lag_avg_ms),
        ]);
        v
    }

    /// Sets the numeric column `name` (as `cells` names it); false for an unknown name.
    pub(crate) fn set(&mut self, name: &str, x: Option<f64>) -> bool {
        let s = &mut self.status;
        let h = &mut self.health;
        let slot = match name {
            "time_ms" => {
                self.time_ms = crate::num::whole(x.unwrap_or(0.0));
                return true;
            }
            "interval_ms" => {
                self.interval_ms = crate::num::whole(x.unwrap_or(0.0));
                return true;
            }
            "server_cpu_pct" => &mut self.server_cpu_pct,
            "server_rss_mb" => &mut self.server_rss_mb,
            "disk_read_kbs" => &mut self.disk_read_kbs,
            "disk_write_kbs" => &mut self.disk_write_kbs,
            "iops" => &mut self.iops,
            "client_cpu_pct" => &mut self.client_cpu_pct,
            "client_rss_mb" => &mut self.client_rss_mb,
            "host_cpu_pct" => &mut self.host_cpu_pct,
            "insert_s" => &mut self.ops_s[0],
            "query_s" => &mut self.ops_s[1],
            "update_s" => &mut self.ops_s[2],
            "delete_s" => &mut self.ops_s[3],
            "getmore_s" => &mut self.ops_s[4],
            "command_s" => &mut self.ops_s[5],
            "connections" => &mut self.connections,
            "net_in_kbs" => &mut self.net_in_kbs,
            "net_out_kbs" => &mut self.net_out_kbs,
            "cache_used_mb" => &mut self.cache_used_mb,
            "cache_dirty_mb" => &mut self.cache_dirty_mb,
            "status_cpu_pct" => &mut s.cpu_pct,
            "qr" => &mut s.qr,
            "qw" => &mut s.qw,
            "ar" => &mut s.ar,
            "aw" => &mut s.aw,
            "dirty_pct" => &mut s.dirty_pct,
            "used_pct" => &mut s.used_pct,
            "flushes" => &mut s.flushes,
            "vsize_mb" => &mut s.vsize_mb,
            "res_mb" => &mut s.res_mb,
            "reads_us" => &mut s.reads_us,
            "writes_us" => &mut s.writes_us,
            "commands_us" => &mut s.commands_us,
            "client_wait_ms" => &mut h.wait_ms,
            "client_run_ms" => &mut h.run_ms,
            "client_throttled" => &mut h.throttled,
            "client_throttled_ms" => &mut h.throttled_ms,
            "client_lag_max_ms" => &mut h.lag_max_ms,
            "client_lag_avg_ms" => &mut h.lag_avg_ms,
            _ => return false,
        };
        *slot = x;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_can_be_set_back_by_its_name() {
        let mut row = ResourceRow::default();
        let names: Vec<&str> = row.cells().iter().map(|(n, _)| *n).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(row.set(n, Some(crate::num::real_len(i) + 1.0)), "{n}");
        }
        let cells = row.cells();
        for (i, (n, v)) in cells.iter().enumerate() {
            assert_eq!(*v, Some(crate::num::real_len(i) + 1.0), "{n}");
        }
        assert!(!row.set("nope", None));
    }
}
