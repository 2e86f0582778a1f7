//! The embedded server: a throwaway local `mongod` (preferred, when on PATH) or `secantusd-rs`,
//! bound to 127.0.0.1 on a free port with its data in a temporary directory, with the
//! profile's extra flags. Dropping the handle stops the process and removes the directory; a
//! second Ctrl-C does the same through `emergency_cleanup` before exiting. It can be killed,
//! paused and started again on the same data and port (`crate::fault` does). `local` finds a
//! server we did not start.
//!
//! Owns: server processes and their directories. Never: sends workload traffic. Starting and
//! stopping wait (sleep, poll): async callers use `launch` and `shut_down`, which run them on the
//! blocking pool.

pub(crate) mod local;

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::Error;

/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The running embedded server, if any: its pid (None while it is down between a kill and its
/// restart) and directory, for `emergency_cleanup`.
static RUNNING: Mutex<Option<(Option<i32>, PathBuf)>> = Mutex::new(None);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Mongod,
    Secantus,
    /// `secantusd-py` (PyPI's SecantusDB): secantusd-rs's flags, but it names its port only
    /// in INFO logs, so it is given one.
    SecantusPy,
}

impl Flavor {
    /// From what the program answered to `--version` (so a wrapper script is known by what it
    /// runs), else from its file name.
    fn of(answer: &str, file: &str) -> Flavor {
        let said = |s: &str| answer.contains(s);
        if said("secantusd-py") {
            Flavor::SecantusPy
        } else if said("secantusd-rs") {
            Flavor::Secantus
        } else if said("db version v") || file.starts_with("mongod") {
            Flavor::Mongod
        } else if file.starts_with("secantusd-py") {
            Flavor::SecantusPy
        } else {
            Flavor::Secantus
        }
    }
}

/// The embedded server. It can be killed, paused and started again on the same data directory
/// and port (`crate::fault`), so its process sits behind a lock and its pid in a shared cell
/// that the sampler follows.
pub struct EmbeddedServer {
    child: Mutex<Child>,
    pid: Arc<AtomicU32>,
    dir: Mutex<Option<tempfile::TempDir>>,
    data: PathBuf,
    log_path: PathBuf,
    /// Its flags but the port's value (`port_at`).
    args: Vec<OsString>,
    port_at: usize,
    pub flavor: Flavor,
    pub(crate) program: PathBuf,
    pub(crate) version: String,
    pub(crate) address: String,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl EmbeddedServer {
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.address)
    }

    /// The pid of the process running now.
    pub fn pid(&self) -> u32 {
        self.pid.load(Ordering::Relaxed)
    }

    /// The pid of whatever process runs the server, kept current across restarts.
    pub(crate) fn pid_cell(&self) -> Arc<AtomicU32> {
        Arc::clone(&self.pid)
    }

    pub(crate) fn data_dir(&self) -> &Path {
        &self.data
    }

    /// Starts the chosen server: `explicit` (from --server-bin or MONGO_STRESS_SERVER_BIN), else
    /// `mongod` on PATH, else `secantusd-rs` on PATH or in ~/.cargo/bin; `extra` flags after
    /// the tool's own (`[server] args`, `--server-arg`); its data in `keep` when given (left
    /// there after it stops), else in a temporary directory.
    pub fn start(
        explicit: Option<&Path>,
        extra: &[String],
        keep: Option<&Path>,
    ) -> Result<Self, Error> {
        let program = match explicit {
            Some(p) => resolve(p).ok_or_else(|| {
                Error::Server(format!(
                    "server program {} not found or not executable\n  fix: give the path of a mongod or secantusd-rs binary, or run scripts/install-server.sh",
                    p.display()
                ))
            })?,
            None => find_default().ok_or_else(|| {
                Error::Server(
                    "no server to start: neither mongod nor secantusd-rs was found on PATH or in ~/.cargo/bin\n  fix: run scripts/install-server.sh (builds secantusd-rs, about 5 minutes), or pass --uri mongodb://host:port"
                        .into(),
                )
            })?,
        };
        let file = program
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let answer = answer_to_version(&program);
        let flavor = Flavor::of(&answer, &file);
        let version = answer
            .lines()
            .next()
            .filter(|l| !l.starts_with("usage:"))
            .map_or_else(|| "unknown version".to_string(), str::to_string);
        let dir = tempfile::Builder::new()
            .prefix("mongo-stress-server-")
            .tempdir()
            .map_err(|e| {
                Error::Server(format!(
                    "cannot create a temporary directory for the server: {e}"
                ))
            })?;
        let log_path = dir.path().join("server.log");
        let data = keep.map_or_else(|| dir.path().join("data"), Path::to_path_buf);
        std::fs::create_dir_all(&data)
            .map_err(|e| Error::Server(format!("cannot create {}: {e}", data.display())))?;

        let os = |s: &str| OsString::from(s);
        // secantusd-rs picks a free port itself and says which in its log; mongod is given one.
        let (mut args, port_at, port): (Vec<OsString>, usize, Option<u16>) = match flavor {
            Flavor::Mongod => {
                let port = free_port()?;
                let mut a = vec![os("--bind_ip"), os("127.0.0.1"), os("--port"), os("")];
                a.extend([os("--dbpath"), data.clone().into_os_string()]);
                a.extend([os("--quiet"), os("--nounixsocket")]);
                (a, 3, Some(port))
            }
            Flavor::Secantus | Flavor::SecantusPy => {
                let mut a = vec![os("--host"), os("127.0.0.1"), os("--port"), os("")];
                a.extend([
                    os("--log-level"),
                    os("WARNING"),
                    os("--cache-size"),
                    os("1G"),
                ]);
                a.extend([os("--storage-path"), data.clone().into_os_string()]);
                let port = (flavor == Flavor::SecantusPy).then(free_port).transpose()?;
                (a, 3, port)
            }
        };
        args.extend(extra.iter().map(OsString::from));
        let mut server = EmbeddedServer {
            child: Mutex::new(spawn(
                &program,
                &args,
                port_at,
                port.unwrap_or(0),
                &log_path,
            )?),
            pid: Arc::new(AtomicU32::new(0)),
            dir: Mutex::new(Some(dir)),
            data,
            log_path,
            args,
            port_at,
            flavor,
            program,
            version,
            address: String::new(),
        };
        server.started();
        server.address = server.wait_listening(port)?;
        Ok(server)
    }

    /// The process just spawned is the one to stop, sample and clean up after.
    fn started(&self) {
        let pid = lock(&self.child).id();
        self.pid.store(pid, Ordering::Relaxed);
        let dir = lock(&self.dir).as_ref().map(|d| d.path().to_path_buf());
        *lock(&RUNNING) = dir.map(|d| (Some(pid_t(pid)), d));
    }

    /// Waits until the server listens: on `port`, or where its log says (port 0).
    fn wait_listening(&self, port: Option<u16>) -> Result<String, Error> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = lock(&self.child).try_wait().ok().flatten() {
                return Err(Error::Server(format!(
                    "{} exited ({status}) before listening; its log ends:\n{}",
                    self.program.display(),
                    tail(&self.log_path)
                )));
            }
            let address = match port {
                Some(port) => std::net::TcpStream::connect(("127.0.0.1", port))
                    .ok()
                    .map(|_| format!("127.0.0.1:{port}")),
                None => listening_address(&self.log_path),
            };
            if let Some(address) = address {
                return Ok(address);
            }
            if Instant::now() > deadline {
                return Err(Error::Server(format!(
                    "{} did not listen within {}s; its log ends:\n{}",
                    self.program.display(),
                    START_TIMEOUT.as_secs(),
                    tail(&self.log_path)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `start` on the blocking pool, for async callers.
    pub(crate) async fn launch(
        explicit: Option<PathBuf>,
        extra: Vec<String>,
        keep: Option<PathBuf>,
    ) -> Result<Self, Error> {
        tokio::task::spawn_blocking(move || {
            Self::start(explicit.as_deref(), &extra, keep.as_deref())
        })
        .await
        .map_err(|e| Error::Server(format!("starting the embedded server failed: {e}")))?
    }

    /// `stop` on the blocking pool, for async callers.
    pub(crate) async fn shut_down(self: Arc<Self>) {
        let _ = tokio::task::spawn_blocking(move || self.stop()).await;
    }

    /// Sends `signal` to the process, if it still runs (a reaped pid may be another's).
    #[allow(unsafe_code)] // kill(2), waitpid(2), prctl(2): each block says why it is sound
    pub(crate) fn signal(&self, signal: i32) {
        let mut child = lock(&self.child);
        if child.try_wait().ok().flatten().is_none() {
            // SAFETY: plain kill(2) on our own, unreaped child's pid.
            unsafe {
                libc::kill(pid_t(child.id()), signal);
            }
        }
    }

    /// SIGKILL, and waits for the process to be gone.
    pub(crate) fn kill(&self) {
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
        gone();
    }

    /// SIGTERM, and waits for it to exit (SIGKILL after 10 s). True when it exited by itself.
    #[allow(unsafe_code)] // kill(2), waitpid(2), prctl(2): each block says why it is sound
    pub(crate) fn terminate(&self) -> bool {
        let mut child = lock(&self.child);
        if child.try_wait().ok().flatten().is_some() {
            return true;
        }
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(pid_t(child.id()), libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                gone();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        gone();
        true
    }

    /// Starts the server again on its data directory and port (after `kill` or `terminate`),
    /// and waits until it listens.
    pub(crate) fn restart(&self) -> Result<(), Error> {
        let port = self
            .address
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| Error::Server(format!("no port in {}", self.address)))?;
        let child = spawn(
            &self.program,
            &self.args,
            self.port_at,
            port,
            &self.log_path,
        )?;
        *lock(&self.child) = child;
        self.started();
        self.wait_listening(Some(port)).map(|_| ())
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its directory.
    pub fn stop(&self) {
        // A paused server cannot act on SIGTERM.
        self.signal(libc::SIGCONT);
        self.terminate();
        if let Some(dir) = lock(&self.dir).take() {
            let _ = dir.close();
        }
        *lock(&RUNNING) = None;
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Spawns `program` with `args` (the port's value at `port_at`), its output appended to `log`,
/// from the one thread that lives as long as the tool: the kernel kills the server when the
/// thread that started it ends (PR_SET_PDEATHSIG follows the thread, not the process), and the
/// blocking pool's threads end when idle.
#[allow(unsafe_code)] // kill(2), waitpid(2), prctl(2): each block says why it is sound
fn spawn(
    program: &Path,
    args: &[OsString],
    port_at: usize,
    port: u16,
    log: &Path,
) -> Result<Child, Error> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::Server(format!("cannot open {}: {e}", log.display())))?;
    let mut cmd = Command::new(program);
    for (i, a) in args.iter().enumerate() {
        if i == port_at {
            cmd.arg(port.to_string());
        } else {
            cmd.arg(a);
        }
    }
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| Error::Server(e.to_string()))?)
        .stderr(log)
        // Its own process group, so the terminal's Ctrl-C reaches only us and we stop it in order.
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; it makes the kernel kill the server if we die
    // without running our cleanup (SIGKILL), so no server outlives the tool.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    type Reply = std::sync::mpsc::Sender<std::io::Result<Child>>;
    static SPAWNER: OnceLock<Mutex<std::sync::mpsc::Sender<(Command, Reply)>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<(Command, Reply)>();
        std::thread::Builder::new()
            .name("server-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread to start servers from");
        Mutex::new(tx)
    });
    let (reply, answer) = std::sync::mpsc::channel();
    let gone = || Error::Server("the thread that starts servers is gone".into());
    lock(spawner).send((cmd, reply)).map_err(|_| gone())?;
    answer
        .recv()
        .map_err(|_| gone())?
        .map_err(|e| Error::Server(format!("cannot start {}: {e}", program.display())))
}

/// The server's process is reaped: its pid may be another's now.
fn gone() {
    if let Some((pid, _)) = lock(&RUNNING).as_mut() {
        *pid = None;
    }
}

/// Kills the embedded server at once and removes its directory; for exits that skip `Drop`.
#[allow(unsafe_code)] // kill(2), waitpid(2), prctl(2): each block says why it is sound
pub(crate) fn emergency_cleanup() {
    if let Some((pid, dir)) = lock(&RUNNING).take() {
        if let Some(pid) = pid {
            // SAFETY: kill(2) and waitpid(2) on our own, unreaped child's pid.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn listening_address(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().find(|l| l.contains("listening on "))?;
    let addr = line
        .split("listening on ")
        .nth(1)?
        .split_whitespace()
        .next()?;
    Some(addr.to_string())
}

fn tail(path: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(15)..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn free_port() -> Result<u16, Error> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::Server(format!("no free loopback port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::Server(e.to_string()))
}

/// What the program says to `--version`, its output and then its error output (secantusd-py
/// answers with its usage there), or nothing when it cannot be run.
fn answer_to_version(program: &Path) -> String {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map(|o| {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            text
        })
        .unwrap_or_default()
}

fn resolve(p: &Path) -> Option<PathBuf> {
    if p.components().count() > 1 {
        return is_executable(p).then(|| p.to_path_buf());
    }
    on_path(p.to_str()?)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// `mongod` on PATH, else `secantusd-rs` on PATH or in the cargo bin directory.
pub(crate) fn find_default() -> Option<PathBuf> {
    on_path("mongod")
        .or_else(|| on_path("secantusd-rs"))
        .or_else(|| {
            let cargo_home = std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
            let p = cargo_home.join("bin").join("secantusd-rs");
            is_executable(&p).then_some(p)
        })
}

/// A child's id as kill(2) takes it: Linux pids are at most 2^22 (the kernel's `pid_max`), so
/// the cast neither wraps nor truncates.
#[allow(clippy::cast_possible_wrap)]
fn pid_t(id: u32) -> libc::pid_t {
    id as libc::pid_t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers the three servers give to `--version` (mongod's first line, secantusd-rs's,
    /// and secantusd-py's argparse usage on its error output), under any file name.
    #[test]
    fn a_server_is_known_by_its_answer_to_version_then_by_its_name() {
        let mongod = "db version v7.0.12\nBuild Info: {\n    \"version\": \"7.0.12\"\n}\n";
        let rs = "secantusd-rs 0.5.3-beta.196\nsource: crates.io\n";
        let py = "usage: secantusd-py [-h] [--config PATH] [--host HOST] [--port PORT]\nsecantusd-py: error: unrecognized arguments: --version\n";
        assert_eq!(Flavor::of(mongod, "db-wrapper"), Flavor::Mongod);
        assert_eq!(Flavor::of(rs, "server"), Flavor::Secantus);
        assert_eq!(Flavor::of(py, "my-db.sh"), Flavor::SecantusPy);
        // A program that does not answer: its name.
        assert_eq!(Flavor::of("", "mongod-7.0"), Flavor::Mongod);
        assert_eq!(Flavor::of("", "secantusd-py"), Flavor::SecantusPy);
        assert_eq!(Flavor::of("", "something"), Flavor::Secantus);
    }
}
