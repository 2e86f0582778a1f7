//! The load generator's own health, from what the kernel and the runtime say: the time its
//! threads waited to run (`/proc/self/task/*/schedstat`), its cgroup's CPU throttling
//! (`cpu.stat`, cgroup v2 or v1), and how late a 100 ms timer on the async runtime wakes. A
//! starved tool (pinned to a busy core, at a pod's CPU limit) shows little CPU use, so CPU alone
//! never reveals it; these do. Blocking reads, except the heartbeat (a task on the runtime).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::row::HealthCells;

pub(crate) const HEARTBEAT: Duration = Duration::from_millis(100);

/// Per-thread run and wait nanoseconds, and the cgroup's totals, from the last reading.
#[derive(Default)]
pub(crate) struct Health {
    threads: HashMap<String, [u64; 2]>,
    cpu_stat: Option<PathBuf>,
    last_throttle: Option<[u64; 2]>,
    lag: Arc<Mutex<Lag>>,
}

/// Heartbeat lateness since the last reading.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Lag {
    pub(crate) beats: u64,
    pub(crate) sum_ms: f64,
    pub(crate) max_ms: f64,
}

impl Health {
    pub(crate) fn new() -> Self {
        Health {
            cpu_stat: cpu_stat_path(),
            ..Default::default()
        }
    }

    /// Starts the heartbeat on the current runtime: every 100 ms it notes how late it woke.
    pub(crate) fn start_heartbeat(&self, stop: CancellationToken) {
        let lag = Arc::clone(&self.lag);
        tokio::spawn(async move {
            let mut due = Instant::now() + HEARTBEAT;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    _ = stop.cancelled() => return,
                }
                let now = Instant::now();
                let late = now.saturating_duration_since(due).as_secs_f64() * 1000.0;
                {
                    let mut l = lag.lock().unwrap_or_else(|p| p.into_inner());
                    l.beats += 1;
                    l.sum_ms += late;
                    l.max_ms = l.max_ms.max(late);
                }
                due = now + HEARTBEAT;
            }
        });
    }

    /// The interval's cells over `secs` seconds (the first call only primes the counters).
    pub(crate) fn read(&mut self, secs: f64) -> HealthCells {
        let mut cells = HealthCells::default();
        let threads = thread_times();
        if !self.threads.is_empty() && !threads.is_empty() {
            let (mut run, mut wait) = (0u64, 0u64);
            for (tid, [r, w]) in &threads {
                // A thread born in the interval counts from its start.
                let [r0, w0] = self.threads.get(tid).copied().unwrap_or_default();
                run += r.saturating_sub(r0);
                wait += w.saturating_sub(w0);
            }
            cells.run_ms = Some(crate::num::real(run) / 1e6 / secs);
            cells.wait_ms = Some(crate::num::real(wait) / 1e6 / secs);
        }
        self.threads = threads;
        if let Some(path) = &self.cpu_stat {
            let now = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| throttling(&t));
            if let (Some(n), Some(b)) = (now, self.last_throttle) {
                cells.throttled = Some(crate::num::real(n[0].saturating_sub(b[0])));
                cells.throttled_ms =
                    Some(crate::num::real(n[1].saturating_sub(b[1])) / 1000.0 / secs);
            }
            self.last_throttle = now;
        }
        let lag = std::mem::take(&mut *self.lag.lock().unwrap_or_else(|p| p.into_inner()));
        if lag.beats > 0 {
            cells.lag_max_ms = Some(lag.max_ms);
            cells.lag_avg_ms = Some(lag.sum_ms / crate::num::real(lag.beats));
        }
        cells
    }
}

/// Run and wait nanoseconds of each of this process's threads.
fn thread_times() -> HashMap<String, [u64; 2]> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return HashMap::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
            let t = schedstat(&text)?;
            Some((e.file_name().to_string_lossy().into_owned(), t))
        })
        .collect()
}

/// `run_ns wait_ns timeslices` of a schedstat file.
fn schedstat(text: &str) -> Option<[u64; 2]> {
    let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some([f.next()??, f.next()??])
}

/// Times throttled and microseconds throttled from a `cpu.stat` (v2 `throttled_usec`, v1
/// `throttled_time` in nanoseconds).
fn throttling(text: &str) -> Option<[u64; 2]> {
    let field = |k: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(k)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    let times = field("nr_throttled")?;
    let usec = field("throttled_usec").or_else(|| field("throttled_time").map(|ns| ns / 1000))?;
    Some([times, usec])
}

/// This process's cgroup `cpu.stat`: the v1 `cpu` controller's, else the v2 group's; the
/// root's when the path is not mounted here (inside a container the group is the root).
fn cpu_stat_path() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let root = PathBuf::from("/sys/fs/cgroup");
    let mut candidates = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "cpu") {
            for mount in [controllers, "cpu", "cpu,cpuacct"] {
                candidates.push(root.join(mount).join(path).join("cpu.stat"));
                candidates.push(root.join(mount).join("cpu.stat"));
            }
        } else if controllers.is_empty() {
            candidates.push(root.join(path).join("cpu.stat"));
            candidates.push(root.join("cpu.stat"));
        }
    }
    candidates.into_iter().find(|p| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|t| throttling(&t))
            .is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_files_are_read() {
        assert_eq!(schedstat("1222981 5558 3\n"), Some([1222981, 5558]));
        assert_eq!(schedstat("x"), None);
        let v2 = "usage_usec 10\nnr_periods 5\nnr_throttled 2\nthrottled_usec 3000\n";
        assert_eq!(throttling(v2), Some([2, 3000]));
        let v1 = "nr_periods 5\nnr_throttled 4\nthrottled_time 7000000\n";
        assert_eq!(throttling(v1), Some([4, 7000]));
        assert_eq!(throttling("nr_periods 1\n"), None);
    }

    #[test]
    fn a_busy_thread_shows_its_run_time() {
        let mut h = Health::new();
        h.read(1.0);
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let c = h.read(0.2);
        // 200 ms of spinning in 0.2 s: about 1000 ms/s of run time (less when the machine
        // shares the core; the wait takes the rest).
        let (run, wait) = (c.run_ms.unwrap(), c.wait_ms.unwrap());
        assert!(run + wait >= 500.0, "run {run} wait {wait}");
    }
}
