//! What can be read about processes and devices on this machine: CPU, memory and disk I/O of the
//! server process and of this tool (sysinfo), and a device's completed I/Os (/proc/diskstats).
//! Blocking reads: the sampler calls them off the async runtime.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::health::Health;
use super::row::ResourceRow;

/// The local readings and the counters that turn them into rates.
pub(crate) struct Local {
    sys: System,
    own_pid: Pid,
    server_pid: Option<Arc<AtomicU32>>,
    /// The port the server was found listening on: its process, once gone, is looked for there
    /// again (a restart on the same port is a new process).
    port: Option<u16>,
    device: Option<(u32, u32)>,
    last_disk: Option<[u64; 2]>,
    /// The tool's own health (waits to run, throttling, runtime lag).
    pub(crate) health: Health,
}

impl Local {
    pub(crate) fn new(server_pid: Option<Arc<AtomicU32>>, data_dir: Option<&Path>) -> Self {
        Local {
            sys: System::new(),
            own_pid: Pid::from_u32(std::process::id()),
            server_pid,
            port: None,
            device: data_dir.and_then(device_of),
            last_disk: None,
            health: Health::new(),
        }
    }

    /// Follows the process listening on `port` when the one sampled is gone.
    pub(crate) fn following(mut self, port: Option<u16>) -> Self {
        self.port = port;
        self
    }

    /// The server process is gone: the one listening on its port now, if another is.
    fn find_again(&self) {
        let (Some(port), Some(cell)) = (self.port, &self.server_pid) else {
            return;
        };
        if let Some(pid) = crate::server::local::pid_listening_on(port) {
            cell.store(pid, Ordering::Relaxed);
        }
    }

    /// Fills the local columns of `row`, with rates over the last `secs` seconds.
    pub(crate) fn read(&mut self, row: &mut ResourceRow, secs: f64) {
        let gone = self
            .server_pid
            .as_ref()
            .is_some_and(|p| !alive(p.load(Ordering::Relaxed)));
        if gone {
            self.find_again();
        }
        let mut pids = vec![self.own_pid];
        // Read each time: a restarted server is a new process.
        let server_pid = self
            .server_pid
            .as_ref()
            .map(|p| Pid::from_u32(p.load(Ordering::Relaxed)));
        pids.extend(server_pid);
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&pids),
            true,
            ProcessRefreshKind::nothing()
                .with_cpu()
                .with_memory()
                .with_disk_usage(),
        );
        self.sys.refresh_cpu_usage();
        // All of the machine's CPUs, not those this tool may use (its affinity or quota).
        let cpus = crate::num::real_len(self.sys.cpus().len().max(1));
        row.host_cpu_pct = Some(f64::from(self.sys.global_cpu_usage()) * cpus);
        row.health = self.health.read(secs);
        if let Some(p) = self.sys.process(self.own_pid) {
            row.client_cpu_pct = Some(f64::from(p.cpu_usage()));
            row.client_rss_mb = Some(crate::num::real(p.memory()) / 1_048_576.0);
        }
        // A process gone (or a zombie its parent has not reaped yet) is not sampled: its
        // columns are empty, not zero.
        let live = server_pid.filter(|pid| alive(pid.as_u32()));
        if let Some(p) = live.and_then(|pid| self.sys.process(pid)) {
            let d = p.disk_usage();
            row.server_cpu_pct = Some(f64::from(p.cpu_usage()));
            row.server_rss_mb = Some(crate::num::real(p.memory()) / 1_048_576.0);
            row.disk_read_kbs = Some(crate::num::real(d.read_bytes) / 1024.0 / secs);
            row.disk_write_kbs = Some(crate::num::real(d.written_bytes) / 1024.0 / secs);
        }
        if let Some(dev) = self.device {
            let ios = disk_ios(dev);
            if let (Some(now), Some(last)) = (ios, self.last_disk) {
                row.iops = Some(
                    crate::num::real((now[0] + now[1]).saturating_sub(last[0] + last[1])) / secs,
                );
            }
            self.last_disk = ios;
        }
    }
}

/// The machine's online CPUs (`cpuN` lines of /proc/stat), whatever this process may use.
/// The process `pid` runs (or sleeps): it exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's closing parenthesis (the command may hold spaces).
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

pub(crate) fn machine_cpus() -> usize {
    let from_stat = std::fs::read_to_string("/proc/stat").ok().map(|t| {
        t.lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .count()
    });
    from_stat
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Major and minor number of the block device holding `dir`.
pub(crate) fn device_of(dir: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    (major != 0).then_some((major, minor))
}

/// Reads and writes completed on a device, from /proc/diskstats.
pub(crate) fn disk_ios((major, minor): (u32, u32)) -> Option<[u64; 2]> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_in_diskstats_has_readable_counters() {
        // The first device /proc/diskstats lists is always checked against the text itself
        // (counters only grow), and the working directory's device too where it has one (it
        // does not in some containers).
        let text = std::fs::read_to_string("/proc/diskstats").expect("/proc/diskstats");
        let f: Vec<u64> = text
            .lines()
            .next()
            .expect("at least one device")
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        let ios = disk_ios((u32::try_from(f[0]).unwrap(), u32::try_from(f[1]).unwrap()))
            .expect("the first listed device");
        // Fields after major, minor and the name: reads completed is 3rd, writes completed 7th.
        assert!(ios[0] >= f[2] && ios[1] >= f[6], "{ios:?} vs {f:?}");
        match device_of(Path::new(".")) {
            Some(dev) => assert!(
                disk_ios(dev).is_some(),
                "device {dev:?} not in /proc/diskstats"
            ),
            None => errln!("skipped: the working directory is not on a block device"),
        }
    }
}
