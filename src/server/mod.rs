//! The embedded server: a throwaway local `mongod` (preferred, when on PATH) or `secantusd-rs`,
//! bound to 127.0.0.1 on a free port with its data in a temporary directory. Dropping the handle
//! stops the process and removes the directory; a second Ctrl-C does the same through
//! `emergency_cleanup` before exiting. `local` finds a server we did not start.
//!
//! Owns: server processes and their directories. Never: sends workload traffic. Starting and
//! stopping wait (sleep, poll): async callers use `launch` and `shut_down`, which run them on the
//! blocking pool.

pub mod local;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Error;

/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The running embedded server, if any: its pid and data directory, for `emergency_cleanup`.
static RUNNING: Mutex<Option<(i32, PathBuf)>> = Mutex::new(None);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Mongod,
    Secantus,
}

pub struct EmbeddedServer {
    child: Child,
    dir: Option<tempfile::TempDir>,
    pub flavor: Flavor,
    pub program: PathBuf,
    pub version: String,
    pub address: String,
}

impl EmbeddedServer {
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.address)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Starts the chosen server: `explicit` (from --server-bin or MONGO_STRESS_SERVER_BIN), else
    /// `mongod` on PATH, else `secantusd-rs` on PATH or in ~/.cargo/bin.
    pub fn start(explicit: Option<&Path>) -> Result<Self, Error> {
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
        let flavor = if file.starts_with("mongod") {
            Flavor::Mongod
        } else {
            Flavor::Secantus
        };
        let version = version_of(&program);
        let dir = tempfile::Builder::new()
            .prefix("mongo-stress-server-")
            .tempdir()
            .map_err(|e| {
                Error::Server(format!(
                    "cannot create a temporary directory for the server: {e}"
                ))
            })?;
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| Error::Server(format!("cannot create {}: {e}", log_path.display())))?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data)
            .map_err(|e| Error::Server(format!("cannot create {}: {e}", data.display())))?;

        let mut cmd = Command::new(&program);
        let mongod_port = match flavor {
            Flavor::Mongod => {
                let port = free_port()?;
                cmd.args([
                    "--bind_ip",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--dbpath",
                ])
                .arg(&data)
                .args(["--quiet", "--nounixsocket"]);
                Some(port)
            }
            Flavor::Secantus => {
                cmd.args([
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--log-level",
                    "WARNING",
                    "--cache-size",
                    "1G",
                    "--storage-path",
                ])
                .arg(&data);
                None
            }
        };
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
        let child = cmd
            .spawn()
            .map_err(|e| Error::Server(format!("cannot start {}: {e}", program.display())))?;
        *RUNNING.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((child.id() as i32, dir.path().to_path_buf()));
        let mut server = EmbeddedServer {
            child,
            dir: Some(dir),
            flavor,
            program,
            version,
            address: String::new(),
        };

        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = server.child.try_wait().ok().flatten() {
                return Err(Error::Server(format!(
                    "{} exited ({status}) before listening; its log ends:\n{}",
                    server.program.display(),
                    tail(&log_path)
                )));
            }
            let address = match mongod_port {
                Some(port) => std::net::TcpStream::connect(("127.0.0.1", port))
                    .ok()
                    .map(|_| format!("127.0.0.1:{port}")),
                None => listening_address(&log_path),
            };
            if let Some(address) = address {
                server.address = address;
                return Ok(server);
            }
            if Instant::now() > deadline {
                return Err(Error::Server(format!(
                    "{} did not listen within {}s; its log ends:\n{}",
                    server.program.display(),
                    START_TIMEOUT.as_secs(),
                    tail(&log_path)
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `start` on the blocking pool, for async callers.
    pub async fn launch(explicit: Option<PathBuf>) -> Result<Self, Error> {
        tokio::task::spawn_blocking(move || Self::start(explicit.as_deref()))
            .await
            .map_err(|e| Error::Server(format!("starting the embedded server failed: {e}")))?
    }

    /// `stop` on the blocking pool, for async callers.
    pub async fn shut_down(mut self) {
        let _ = tokio::task::spawn_blocking(move || self.stop()).await;
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and removes its directory.
    pub fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: plain kill(2) on our own child's pid.
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
        *RUNNING.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Drop for EmbeddedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Kills the embedded server at once and removes its directory; for exits that skip `Drop`.
pub fn emergency_cleanup() {
    if let Some((pid, dir)) = RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take() {
        // SAFETY: kill(2) and waitpid(2) on our own child's pid.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
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

fn version_of(program: &Path) -> String {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown version".into())
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
pub fn find_default() -> Option<PathBuf> {
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
