//! The resource sampler: once a second, the server process's CPU, memory and disk I/O (sysinfo),
//! the IOPS of the device holding its data (/proc/diskstats), the tool's own CPU and memory, and
//! from `serverStatus` over the wire (so remote servers too) opcounters, connections, network and
//! cache: the fields of mongostat. Each row is appended to `resources.tsv` as it is taken.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mongodb::bson::{doc, Bson, Document};
use serde::Serialize;
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::Error;

pub const PERIOD: Duration = Duration::from_secs(1);

/// Header of `resources.tsv`; empty cells mean "not known here".
pub const HEADER: &str = "time_ms\tinterval_ms\tserver_cpu_pct\tserver_rss_mb\tdisk_read_kbs\tdisk_write_kbs\tiops\tclient_cpu_pct\tclient_rss_mb\thost_cpu_pct\tinsert_s\tquery_s\tupdate_s\tdelete_s\tgetmore_s\tcommand_s\tconnections\tnet_in_kbs\tnet_out_kbs\tcache_used_mb\tcache_dirty_mb";

/// One second of resource use. Rates are over the second before `time_ms`.
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
    /// opcounters per second: insert, query, update, delete, getmore, command.
    pub ops_s: [Option<f64>; 6],
    pub connections: Option<f64>,
    pub net_in_kbs: Option<f64>,
    pub net_out_kbs: Option<f64>,
    pub cache_used_mb: Option<f64>,
    pub cache_dirty_mb: Option<f64>,
}

impl ResourceRow {
    /// Server-side CRUD operations per second (opcounters insert + query + update + delete).
    pub fn server_ops_s(&self) -> Option<f64> {
        let v: Vec<f64> = self.ops_s[..4].iter().flatten().copied().collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    fn tsv(&self) -> String {
        let f = |x: &Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
        let mut cells = vec![
            self.time_ms.to_string(),
            self.interval_ms.to_string(),
            f(&self.server_cpu_pct),
            f(&self.server_rss_mb),
            f(&self.disk_read_kbs),
            f(&self.disk_write_kbs),
            f(&self.iops),
            f(&self.client_cpu_pct),
            f(&self.client_rss_mb),
            f(&self.host_cpu_pct),
        ];
        cells.extend(self.ops_s.iter().map(f));
        cells.extend(
            [
                &self.connections,
                &self.net_in_kbs,
                &self.net_out_kbs,
                &self.cache_used_mb,
                &self.cache_dirty_mb,
            ]
            .into_iter()
            .map(f),
        );
        cells.join("\t")
    }
}

/// What to watch.
pub struct Target {
    pub client: mongodb::Client,
    /// The local server process, when known.
    pub server_pid: Option<u32>,
    /// Its data directory, when known, for the device's IOPS.
    pub data_dir: Option<PathBuf>,
}

/// The running sampler; rows can be read while it runs.
pub struct Sampler {
    rows: Arc<Mutex<Vec<ResourceRow>>>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling into `path` (created now, so a bad path fails before any load).
    pub fn start(target: Target, path: &Path) -> Result<Sampler, Error> {
        let io = |source| Error::Output {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        writeln!(out, "{HEADER}")
            .and_then(|_| out.flush())
            .map_err(io)?;
        let rows = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let (shared, stopped) = (Arc::clone(&rows), stop.clone());
        let task = tokio::spawn(async move {
            let mut state = State::new(&target);
            state.take(&target).await; // primes the counters; rates need two readings
            let mut tick = tokio::time::interval_at((Instant::now() + PERIOD).into(), PERIOD);
            loop {
                // On stop, one last row covers the time since the previous one.
                let last = tokio::select! {
                    _ = tick.tick() => false,
                    _ = stopped.cancelled() => true,
                };
                let row = state.take(&target).await;
                // A full disk must not stop the run; the summary still has the rows.
                let _ = writeln!(out, "{}", row.tsv()).and_then(|_| out.flush());
                shared.lock().unwrap_or_else(|p| p.into_inner()).push(row);
                if last {
                    break;
                }
            }
            let _ = out.flush();
        });
        Ok(Sampler { rows, stop, task })
    }

    /// Every row taken so far.
    pub fn rows(&self) -> Vec<ResourceRow> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops sampling; returns every row taken.
    pub async fn stop(self) -> Vec<ResourceRow> {
        self.stop.cancel();
        let rows = Arc::clone(&self.rows);
        let _ = self.task.await;
        let rows = rows.lock().unwrap_or_else(|p| p.into_inner()).clone();
        rows
    }
}

struct State {
    sys: System,
    own_pid: Pid,
    device: Option<(u32, u32)>,
    last_at: Instant,
    last_disk: Option<[u64; 2]>,
    last_status: Option<Document>,
    cores: f64,
}

impl State {
    fn new(target: &Target) -> Self {
        State {
            sys: System::new(),
            own_pid: Pid::from_u32(std::process::id()),
            device: target.data_dir.as_deref().and_then(device_of),
            last_at: Instant::now(),
            last_disk: None,
            last_status: None,
            cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
        }
    }

    async fn take(&mut self, target: &Target) -> ResourceRow {
        let now = Instant::now();
        let elapsed = now.duration_since(self.last_at);
        let secs = elapsed.as_secs_f64().max(1e-3);
        self.last_at = now;
        let mut row = ResourceRow {
            time_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            interval_ms: elapsed.as_millis() as u64,
            ..Default::default()
        };

        let mut pids = vec![self.own_pid];
        pids.extend(target.server_pid.map(Pid::from_u32));
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&pids),
            true,
            ProcessRefreshKind::nothing()
                .with_cpu()
                .with_memory()
                .with_disk_usage(),
        );
        self.sys.refresh_cpu_usage();
        row.host_cpu_pct = Some(f64::from(self.sys.global_cpu_usage()) * self.cores);
        if let Some(p) = self.sys.process(self.own_pid) {
            row.client_cpu_pct = Some(f64::from(p.cpu_usage()));
            row.client_rss_mb = Some(p.memory() as f64 / 1_048_576.0);
        }
        if let Some(p) = target
            .server_pid
            .and_then(|pid| self.sys.process(Pid::from_u32(pid)))
        {
            let d = p.disk_usage();
            row.server_cpu_pct = Some(f64::from(p.cpu_usage()));
            row.server_rss_mb = Some(p.memory() as f64 / 1_048_576.0);
            row.disk_read_kbs = Some(d.read_bytes as f64 / 1024.0 / secs);
            row.disk_write_kbs = Some(d.written_bytes as f64 / 1024.0 / secs);
        }
        if let Some(dev) = self.device {
            let ios = disk_ios(dev);
            if let (Some(now), Some(last)) = (ios, self.last_disk) {
                row.iops = Some((now[0] + now[1]).saturating_sub(last[0] + last[1]) as f64 / secs);
            }
            self.last_disk = ios;
        }

        let status = tokio::time::timeout(
            Duration::from_millis(900),
            target
                .client
                .database("admin")
                .run_command(doc! { "serverStatus": 1 }),
        )
        .await;
        match status {
            Ok(Ok(status)) => {
                let rate = |path: &[&str]| -> Option<f64> {
                    let (now, last) = (
                        number(&status, path)?,
                        number(self.last_status.as_ref()?, path)?,
                    );
                    Some(((now - last) / secs).max(0.0))
                };
                for (i, op) in ["insert", "query", "update", "delete", "getmore", "command"]
                    .iter()
                    .enumerate()
                {
                    row.ops_s[i] = rate(&["opcounters", op]);
                }
                row.net_in_kbs = rate(&["network", "bytesIn"]).map(|b| b / 1024.0);
                row.net_out_kbs = rate(&["network", "bytesOut"]).map(|b| b / 1024.0);
                row.connections = number(&status, &["connections", "current"]);
                let mb =
                    |k: &str| number(&status, &["wiredTiger", "cache", k]).map(|b| b / 1_048_576.0);
                row.cache_used_mb = mb("bytes currently in the cache");
                row.cache_dirty_mb = mb("tracked dirty bytes in the cache");
                self.last_status = Some(status);
            }
            // No answer within the second: leave the server columns empty, keep sampling.
            _ => self.last_status = None,
        }
        row
    }
}

fn number(d: &Document, path: &[&str]) -> Option<f64> {
    let (last, parents) = path.split_last()?;
    let mut cur = d;
    for p in parents {
        cur = cur.get_document(p).ok()?;
    }
    match cur.get(last)? {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        _ => None,
    }
}

/// Major and minor number of the block device holding `dir`.
fn device_of(dir: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    (major != 0).then_some((major, minor))
}

/// Reads and writes completed on a device, from /proc/diskstats.
fn disk_ios((major, minor): (u32, u32)) -> Option<[u64; 2]> {
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 7 && f[0].parse() == Ok(major) && f[1].parse() == Ok(minor) {
            Some([f[3].parse().ok()?, f[7].parse().ok()?])
        } else {
            None
        }
    })
}

/// The local process listening on TCP `port` (IPv4 or IPv6), from /proc; None when not found or
/// not visible to this user.
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address is HEX_IP:HEX_PORT; state 0A is LISTEN.
            let listening = f.get(3) == Some(&"0A");
            let local_port = f
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if listening && local_port == Some(port) {
                inodes.extend(f.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for proc_dir in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = proc_dir.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(proc_dir.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| link.as_os_str() == i.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// The data directory a local server reports (`getCmdLineOpts`), resolved against its cwd.
pub async fn data_dir_of(client: &mongodb::Client, pid: Option<u32>) -> Option<PathBuf> {
    let opts = client
        .database("admin")
        .run_command(doc! { "getCmdLineOpts": 1 })
        .await
        .ok()?;
    let path = opts
        .get_document("parsed")
        .ok()?
        .get_document("storage")
        .ok()?
        .get_str("dbPath")
        .ok()?;
    let path = PathBuf::from(path);
    if path.is_absolute() {
        Some(path)
    } else {
        Some(
            std::fs::read_link(format!("/proc/{}/cwd", pid?))
                .ok()?
                .join(path),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_has_one_cell_per_header_column_and_blanks_for_unknowns() {
        let row = ResourceRow {
            time_ms: 5,
            interval_ms: 1000,
            server_cpu_pct: Some(61.25),
            ..Default::default()
        };
        let line = row.tsv();
        assert_eq!(line.split('\t').count(), HEADER.split('\t').count());
        assert!(line.starts_with("5\t1000\t61.2\t\t"), "{line}");
    }

    #[test]
    fn the_listener_of_a_port_is_found_in_proc() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(pid_listening_on(port), Some(std::process::id()));
        drop(l);
        assert_eq!(pid_listening_on(port), None);
    }

    #[test]
    fn the_device_of_the_working_directory_is_in_diskstats() {
        // Where the tests run from a real block device, its counters can be read.
        if let Some(dev) = device_of(Path::new(".")) {
            assert!(
                disk_ios(dev).is_some(),
                "device {dev:?} not in /proc/diskstats"
            );
        }
    }

    #[test]
    fn nested_numbers_of_any_bson_width_are_read() {
        let d = doc! { "a": { "b": 3_i32, "c": 4_i64, "d": 2.5 } };
        assert_eq!(number(&d, &["a", "b"]), Some(3.0));
        assert_eq!(number(&d, &["a", "c"]), Some(4.0));
        assert_eq!(number(&d, &["a", "d"]), Some(2.5));
        assert_eq!(number(&d, &["a", "x"]), None);
    }
}
