//! What a Prometheus exporter's page says about a server host: `node_exporter`'s CPU, load,
//! memory, disks and network, and a `mongod` process's CPU and RSS from `process-exporter`
//! (`namedprocess_namegroup_*`, group named like mongod) or the MongoDB exporter
//! (`mongodb_ss_extra_info_*`, `mongodb_ss_mem_resident`). Counters are totals; two readings
//! make the rates of a `HostRow`. Pure: the scraper fetches the text.

use std::collections::HashMap;

use prometheus_parse::{Scrape, Value};

use super::row::{host_column, HOST_COLUMNS};

/// One page's totals and gauges, by the names `rates` needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reading {
    /// CPU seconds by mode, summed over CPUs.
    pub(crate) cpu: HashMap<String, f64>,
    pub(crate) load1: Option<f64>,
    pub(crate) mem_total: Option<f64>,
    pub(crate) mem_available: Option<f64>,
    /// Summed over non-virtual devices: reads, writes, bytes read, bytes written, and the
    /// busiest device's seconds of I/O time (by device, for its own rate).
    pub(crate) disk: Option<[f64; 4]>,
    pub(crate) disk_busy: HashMap<String, f64>,
    /// Bytes received and sent over the non-loopback, non-virtual interfaces.
    pub(crate) net: Option<[f64; 2]>,
    /// The mongod process's CPU seconds and resident bytes, when the exporter tells.
    pub(crate) mongod_cpu_s: Option<f64>,
    pub(crate) mongod_rss: Option<f64>,
    /// `node_exporter`, `process-exporter` or `mongodb_exporter`: which metrics it had.
    pub(crate) kind: &'static str,
}

/// Devices that hold no data of their own (or mirror another's): left out of disk sums.
fn virtual_disk(dev: &str) -> bool {
    ["loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd"]
        .iter()
        .any(|p| dev.starts_with(p))
}

fn virtual_net(dev: &str) -> bool {
    dev == "lo"
        || [
            "ifb", "veth", "docker", "br-", "virbr", "cni", "flannel", "cali",
        ]
        .iter()
        .any(|p| dev.starts_with(p))
}

/// A process-exporter group of the server: `mongod`, `mongod-27017`, ..., but not the MongoDB
/// exporter's own process (`mongodb_exporter`, which process-exporter may name after it).
fn is_mongod(group: &str) -> bool {
    group.starts_with("mongod") && !group.starts_with("mongodb") && !group.contains("exporter")
}

fn value(v: &Value) -> Option<f64> {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => Some(*x),
        _ => None,
    }
}

/// Parses an exporter's page; an error names what was missing or malformed.
pub(crate) fn parse(text: &str) -> Result<Reading, String> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .map_err(|e| format!("not the Prometheus text format: {e}"))?;
    let mut r = Reading::default();
    let mut disk = [0.0; 4];
    let (mut any_disk, mut net, mut any_net) = (false, [0.0; 2], false);
    let (mut proc_cpu, mut proc_rss) = (None::<f64>, None::<f64>);
    let (mut ss_cpu_us, mut ss_rss_mb) = (None::<f64>, None::<f64>);
    for s in &scrape.samples {
        let Some(v) = value(&s.value).filter(|v| v.is_finite()) else {
            continue;
        };
        let label = |k: &str| s.labels.get(k).unwrap_or_default();
        let disk_slot = match s.metric.as_str() {
            "node_cpu_seconds_total" => {
                *r.cpu.entry(label("mode").to_string()).or_default() += v;
                None
            }
            "node_load1" => {
                r.load1 = Some(v);
                None
            }
            "node_memory_MemTotal_bytes" => {
                r.mem_total = Some(v);
                None
            }
            "node_memory_MemAvailable_bytes" => {
                r.mem_available = Some(v);
                None
            }
            "node_disk_reads_completed_total" => Some(0),
            "node_disk_writes_completed_total" => Some(1),
            "node_disk_read_bytes_total" => Some(2),
            "node_disk_written_bytes_total" => Some(3),
            "node_disk_io_time_seconds_total" => {
                if !virtual_disk(label("device")) {
                    r.disk_busy.insert(label("device").to_string(), v);
                }
                None
            }
            m @ ("node_network_receive_bytes_total" | "node_network_transmit_bytes_total") => {
                if !virtual_net(label("device")) {
                    net[usize::from(m.contains("transmit"))] += v;
                    any_net = true;
                }
                None
            }
            "namedprocess_namegroup_cpu_seconds_total" if is_mongod(label("groupname")) => {
                *proc_cpu.get_or_insert(0.0) += v;
                None
            }
            "namedprocess_namegroup_memory_bytes"
                if is_mongod(label("groupname")) && label("memtype") == "resident" =>
            {
                *proc_rss.get_or_insert(0.0) += v;
                None
            }
            "mongodb_ss_extra_info_user_time_us" | "mongodb_ss_extra_info_system_time_us" => {
                *ss_cpu_us.get_or_insert(0.0) += v;
                None
            }
            "mongodb_ss_mem_resident" => {
                ss_rss_mb = Some(v);
                None
            }
            _ => None,
        };
        if let Some(i) = disk_slot {
            if !virtual_disk(label("device")) {
                disk[i] += v;
                any_disk = true;
            }
        }
    }
    r.disk = any_disk.then_some(disk);
    r.net = any_net.then_some(net);
    (r.mongod_cpu_s, r.mongod_rss, r.kind) = match (proc_cpu, ss_cpu_us) {
        (Some(cpu), _) => (Some(cpu), proc_rss, "process-exporter"),
        (None, Some(us)) => (
            Some(us / 1e6),
            ss_rss_mb.map(|m| m * 1_048_576.0),
            "mongodb_exporter",
        ),
        (None, None) => (None, proc_rss, "node_exporter"),
    };
    if r.cpu.is_empty() && r.mongod_cpu_s.is_none() && r.disk.is_none() {
        return Err(format!(
            "no node_exporter, process-exporter or MongoDB exporter metrics in its {} lines (node_cpu_seconds_total, namedprocess_namegroup_cpu_seconds_total, mongodb_ss_extra_info_user_time_us)",
            text.lines().count()
        ));
    }
    Ok(r)
}

/// The host's columns over `secs` seconds from `before` to `now` (gauges from `now`).
pub(crate) fn rates(
    before: Option<&Reading>,
    now: &Reading,
    secs: f64,
) -> [Option<f64>; HOST_COLUMNS.len()] {
    let mut out = [None; HOST_COLUMNS.len()];
    let mut put = |name: &str, v: Option<f64>| out[host_column(name)] = v;
    let per_s = |a: f64, b: f64| ((a - b) / secs).max(0.0);
    put("node_load1", now.load1);
    if let (Some(t), Some(a)) = (now.mem_total, now.mem_available) {
        put("node_mem_used_mb", Some((t - a) / 1_048_576.0));
    }
    put(
        "node_mem_available_mb",
        now.mem_available.map(|a| a / 1_048_576.0),
    );
    put("mongod_rss_mb", now.mongod_rss.map(|b| b / 1_048_576.0));
    let Some(before) = before else { return out };
    // CPU: % of one core, like top; busy = everything but idle and iowait (as /proc readers
    // such as sysinfo count it), iowait on its own.
    if !now.cpu.is_empty() && !before.cpu.is_empty() {
        let mode = |r: &Reading, m: &str| r.cpu.get(m).copied().unwrap_or(0.0);
        let total = |r: &Reading| r.cpu.values().sum::<f64>();
        let pct = |m: &str| Some(per_s(mode(now, m), mode(before, m)) * 100.0);
        let idle = per_s(mode(now, "idle"), mode(before, "idle"))
            + per_s(mode(now, "iowait"), mode(before, "iowait"));
        put(
            "node_cpu_pct",
            Some(((per_s(total(now), total(before)) - idle) * 100.0).max(0.0)),
        );
        put("node_cpu_user_pct", pct("user"));
        put("node_cpu_system_pct", pct("system"));
        put("node_cpu_iowait_pct", pct("iowait"));
    }
    if let (Some(a), Some(b)) = (now.disk, before.disk) {
        put("node_disk_reads_s", Some(per_s(a[0], b[0])));
        put("node_disk_writes_s", Some(per_s(a[1], b[1])));
        put("node_disk_read_kbs", Some(per_s(a[2], b[2]) / 1024.0));
        put("node_disk_write_kbs", Some(per_s(a[3], b[3]) / 1024.0));
    }
    let busiest = now
        .disk_busy
        .iter()
        .filter_map(|(dev, t)| Some(per_s(*t, *before.disk_busy.get(dev)?)))
        .reduce(f64::max);
    put(
        "node_disk_util_pct",
        busiest.map(|b| (b * 100.0).min(100.0)),
    );
    if let (Some(a), Some(b)) = (now.net, before.net) {
        put("node_net_in_kbs", Some(per_s(a[0], b[0]) / 1024.0));
        put("node_net_out_kbs", Some(per_s(a[1], b[1]) / 1024.0));
    }
    if let (Some(a), Some(b)) = (now.mongod_cpu_s, before.mongod_cpu_s) {
        put("mongod_cpu_pct", Some(per_s(a, b) * 100.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(idle: f64, user: f64, written: f64, io_time: f64) -> String {
        format!(
            "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\"}} {idle}
node_cpu_seconds_total{{cpu=\"0\",mode=\"user\"}} {user}
node_cpu_seconds_total{{cpu=\"0\",mode=\"iowait\"}} 1
node_cpu_seconds_total{{cpu=\"1\",mode=\"idle\"}} {idle}
node_cpu_seconds_total{{cpu=\"1\",mode=\"user\"}} {user}
node_load1 1.5
node_memory_MemTotal_bytes 2.147483648e+09
node_memory_MemAvailable_bytes 1.073741824e+09
node_disk_reads_completed_total{{device=\"vda\"}} 10
node_disk_writes_completed_total{{device=\"vda\"}} {written}
node_disk_written_bytes_total{{device=\"vda\"}} {}
node_disk_read_bytes_total{{device=\"vda\"}} 0
node_disk_written_bytes_total{{device=\"dm-0\"}} 9e+12
node_disk_io_time_seconds_total{{device=\"vda\"}} {io_time}
node_network_receive_bytes_total{{device=\"lo\"}} 9e+12
node_network_receive_bytes_total{{device=\"eth0\"}} 2048
node_network_transmit_bytes_total{{device=\"eth0\"}} 1024
",
            written * 4096.0
        )
    }

    #[test]
    fn two_pages_make_a_host_row() {
        let a = parse(&page(100.0, 50.0, 0.0, 3.0)).unwrap();
        let b = parse(&page(100.5, 51.0, 100.0, 3.5)).unwrap();
        assert_eq!(a.kind, "node_exporter");
        let v = rates(Some(&a), &b, 2.0);
        let at = |n: &str| v[host_column(n)];
        // Over 2 s, each of 2 CPUs: idle +0.5 s, user +1 s: per second 1 core of user = 100 %
        // of one core, busy the same (iowait did not move).
        assert_eq!(at("node_cpu_pct"), Some(100.0));
        assert_eq!(at("node_cpu_user_pct"), Some(100.0));
        assert_eq!(at("node_cpu_iowait_pct"), Some(0.0));
        assert_eq!(at("node_load1"), Some(1.5));
        assert_eq!(at("node_mem_used_mb"), Some(1024.0));
        assert_eq!(at("node_disk_writes_s"), Some(50.0));
        // dm-0 (a device mapper over vda) is left out: vda's bytes only.
        assert_eq!(at("node_disk_write_kbs"), Some(200.0));
        assert_eq!(at("node_disk_util_pct"), Some(25.0));
        assert_eq!(at("node_net_in_kbs"), Some(0.0), "lo is left out");
        assert_eq!(at("mongod_cpu_pct"), None);
        // The first reading has gauges only.
        let first = rates(None, &a, 1.0);
        assert_eq!(first[host_column("node_cpu_pct")], None);
        assert_eq!(first[host_column("node_load1")], Some(1.5));
    }

    #[test]
    fn a_process_exporter_gives_the_mongod_process() {
        let text = |cpu: f64| {
            format!(
                "namedprocess_namegroup_cpu_seconds_total{{groupname=\"mongod\",mode=\"user\"}} {cpu}
namedprocess_namegroup_cpu_seconds_total{{groupname=\"mongod\",mode=\"system\"}} 1
namedprocess_namegroup_cpu_seconds_total{{groupname=\"sshd\",mode=\"user\"}} 99
namedprocess_namegroup_cpu_seconds_total{{groupname=\"mongodb_exporter\",mode=\"user\"}} {cpu}
namedprocess_namegroup_memory_bytes{{groupname=\"mongod\",memtype=\"resident\"}} 1.048576e+08
"
            )
        };
        let (a, b) = (parse(&text(10.0)).unwrap(), parse(&text(10.5)).unwrap());
        assert_eq!(b.kind, "process-exporter");
        let v = rates(Some(&a), &b, 1.0);
        assert_eq!(v[host_column("mongod_cpu_pct")], Some(50.0));
        assert_eq!(v[host_column("mongod_rss_mb")], Some(100.0));
    }

    #[test]
    fn pages_that_are_not_an_exporters_are_refused() {
        for text in [
            "",
            "<html><body>404</body></html>",
            "hello world\n\u{0}\u{1}",
            "other_metric 1\n",
        ] {
            let e = parse(text).unwrap_err();
            assert!(
                e.contains("no node_exporter") || e.contains("not the Prometheus"),
                "{text:?}: {e}"
            );
        }
    }
}
