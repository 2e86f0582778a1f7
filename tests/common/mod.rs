//! Helpers shared by the integration tests: the binary, a real server per test, a turn on the
//! machine, and witnesses read from the server itself.
#![allow(dead_code)]

pub(crate) mod proxy;
pub(crate) mod replset;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use mongodb::bson::{doc, Document};

pub(crate) fn bin() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("mongo-stress").expect("binary is built");
    // A run without --out writes results/ under the working directory: not into the repository.
    cmd.current_dir(std::env::temp_dir());
    cmd
}

pub(crate) fn bin_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("mongo-stress")
}

/// True when `MONGO_STRESS_SKIP_LIVE=1` asks to skip the live tests; the caller then returns
/// at once. The skip is recorded by `skipped`.
pub(crate) fn skip_live() -> bool {
    skip_if_set("MONGO_STRESS_SKIP_LIVE")
}

/// True when the variable `var` is `1`; records the skip (`skipped`).
pub(crate) fn skip_if_set(var: &str) -> bool {
    let set = std::env::var(var).as_deref() == Ok("1");
    if set {
        skipped(var);
    }
    set
}

/// The directory where skipped tests leave their marker: `target/tmp/skipped-tests/`.
pub(crate) fn skipped_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests")
}

/// Records that the running test is skipped because of `var`. libtest has no runtime skip, so
/// the test still reports "ok": this says so on stderr (shown with --nocapture) and leaves a
/// marker file in `skipped_dir()`, one per test, which scripts/test.sh counts and names at the
/// end, so a skipped test never passes for one that ran.
pub(crate) fn skipped(var: &str) {
    // libtest runs each test on a thread named after it (`scale::a_test`); the crate is the test
    // binary (`fast` or `live`).
    let krate = module_path!().split("::").next().unwrap_or("tests");
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("unnamed");
    let name = format!("{krate}::{test}");
    eprintln!("SKIPPED {name}: {var}=1 is set, so this test did not run (it still reports ok)");
    let dir = skipped_dir();
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(&name), format!("{var}\n")))
        .unwrap_or_else(|e| panic!("cannot record the skip of {name} in {}: {e}", dir.display()));
}

/// The machine, shared by the tests of one binary: libtest runs two tests at a time, and in
/// tests/live/ any file's beside any other's. A live test holds a turn while it runs: a shared
/// one (`shared()`, which `TestServer::start` takes) runs beside other shared ones; one alone
/// (`alone()`, `TestServer::start_alone`) waits until no other turn is held and keeps the others
/// waiting until it ends. Tests that measure rates, latencies, windows, memory, CPU or timeouts
/// take theirs alone.
static MACHINE: RwLock<()> = RwLock::new(());

thread_local! {
    /// How many turns this thread holds: a turn taken inside another is the same turn.
    static TURNS_HELD: Cell<usize> = const { Cell::new(0) };
}

/// A test's turn on the machine, released on drop (see `MACHINE`).
pub(crate) struct Turn {
    _guard: Option<Guard>,
}

enum Guard {
    Shared(RwLockReadGuard<'static, ()>),
    Alone(RwLockWriteGuard<'static, ()>),
}

impl Drop for Turn {
    fn drop(&mut self) {
        TURNS_HELD.with(|n| n.set(n.get() - 1));
    }
}

/// A turn beside the other live tests. Inside a turn this thread holds already, that one.
pub(crate) fn shared() -> Turn {
    let guard = (TURNS_HELD.with(Cell::get) == 0).then(|| {
        // A test that failed holding its turn poisons the lock; the next test's turn is whole.
        Guard::Shared(MACHINE.read().unwrap_or_else(|e| e.into_inner()))
    });
    TURNS_HELD.with(|n| n.set(n.get() + 1));
    Turn { _guard: guard }
}

/// The machine to this test alone: waits for the other tests' turns to end, and no other live
/// test starts until this one's ends. Taken first in the test (a shared turn held already cannot
/// become one alone: that panics rather than wait for itself).
pub(crate) fn alone() -> Turn {
    let guard = match TURNS_HELD.with(Cell::get) {
        0 => Some(Guard::Alone(
            MACHINE.write().unwrap_or_else(|e| e.into_inner()),
        )),
        _ => panic!("alone() inside a turn this test holds already: take it first"),
    };
    TURNS_HELD.with(|n| n.set(n.get() + 1));
    Turn { _guard: guard }
}

/// A real MongoDB-wire server for one test: `MONGO_STRESS_TEST_URI` if set (shared, so each
/// test uses its own database), else a `secantusd-rs` / `mongod` started here and stopped on drop.
/// No server at all fails the test, unless `MONGO_STRESS_SKIP_LIVE=1`, which makes `start`
/// return None so the caller can return early. It holds the test's turn on the machine
/// (`shared()` from `start`, `alone()` from `start_alone`) until it is dropped, after its server.
pub(crate) struct TestServer {
    pub uri: String,
    embedded: Option<mongo_stress::server::EmbeddedServer>,
    _turn: Turn,
}

impl TestServer {
    /// A server for a test that may run beside other live tests.
    pub(crate) fn start() -> Option<TestServer> {
        Self::start_in(shared())
    }

    /// A server for a test that measures the machine's time, memory or CPU: it runs with no
    /// other live test beside it.
    pub(crate) fn start_alone() -> Option<TestServer> {
        Self::start_in(alone())
    }

    fn start_in(turn: Turn) -> Option<TestServer> {
        if let Ok(uri) = std::env::var("MONGO_STRESS_TEST_URI") {
            return Some(TestServer {
                uri,
                embedded: None,
                _turn: turn,
            });
        }
        if skip_live() {
            return None;
        }
        match mongo_stress::server::EmbeddedServer::start(None, &[], None) {
            Ok(s) => Some(TestServer {
                uri: s.uri(),
                embedded: Some(s),
                _turn: turn,
            }),
            Err(e) => panic!(
                "live tests need a server and none could be started: {e}\n\
                 run scripts/install-server.sh, set MONGO_STRESS_TEST_URI, or set MONGO_STRESS_SKIP_LIVE=1 to skip them"
            ),
        }
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.embedded.as_ref().map(|s| s.pid())
    }

    pub(crate) fn client(&self) -> mongodb::Client {
        runtime()
            .block_on(mongodb::Client::with_uri_str(&self.uri))
            .expect("client")
    }

    /// `serverStatus().opcounters`.
    pub(crate) fn opcounters(&self) -> Document {
        let client = self.client();
        let status = runtime()
            .block_on(async {
                client
                    .database("admin")
                    .run_command(doc! { "serverStatus": 1 })
                    .await
            })
            .expect("serverStatus");
        status
            .get_document("opcounters")
            .expect("serverStatus has opcounters")
            .clone()
    }

    pub(crate) fn count(&self, db: &str, coll: &str, filter: Document) -> u64 {
        let client = self.client();
        runtime()
            .block_on(async {
                client
                    .database(db)
                    .collection::<Document>(coll)
                    .count_documents(filter)
                    .await
            })
            .expect("count")
    }

    /// The documents `pipeline` gives on `db.coll`, read by the test's own client.
    pub(crate) fn aggregate(&self, db: &str, coll: &str, pipeline: Vec<Document>) -> Vec<Document> {
        let client = self.client();
        runtime().block_on(async {
            let mut cursor = client
                .database(db)
                .collection::<Document>(coll)
                .aggregate(pipeline)
                .await
                .expect("aggregate");
            let mut docs = Vec::new();
            while cursor.advance().await.expect("cursor") {
                docs.push(cursor.deserialize_current().expect("document"));
            }
            docs
        })
    }
}

pub(crate) fn counter(d: &Document, key: &str) -> i64 {
    match d.get(key) {
        Some(mongodb::bson::Bson::Int32(n)) => i64::from(*n),
        Some(mongodb::bson::Bson::Int64(n)) => *n,
        Some(mongodb::bson::Bson::Double(n)) => *n as i64,
        other => panic!("opcounter {key} missing or not a number: {other:?}"),
    }
}

pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// A loopback port nothing listens on (just now).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A database name no other test uses: the tests of a binary share its process id, so each
/// `tag` is used by one test of the binary only.
pub(crate) fn unique_db(tag: &str) -> String {
    format!("ms_test_{tag}_{}", std::process::id())
}

pub(crate) const DOCUMENT: &str = r#"
[document]
city = { choice = ["Guangzhou", "Shenzhen", "Dongguan", "Foshan"] }
loc = { x = { float = [109.7, 117.3] }, y = { float = [20.2, 25.5] } }
pop = { paired_with = "city", choice = [18827000, 17791000, 10466000, 9613000] }
state = "GD"
"#;

/// Writes a profile for database `db` with the given setup and groups; returns its path.
pub(crate) fn profile(dir: &Path, db: &str, setup: &str, groups: &str) -> PathBuf {
    let text = format!("name = \"{db}\"\n[target]\ndatabase = \"{db}\"\ncollection = \"cities\"\n[setup]\n{setup}\n{DOCUMENT}\n{groups}");
    let path = dir.join(format!("{db}.toml"));
    std::fs::write(&path, text).expect("write profile");
    path
}

/// The row with `label` in the first run of a summary.json.
pub(crate) fn row<'a>(summary: &'a serde_json::Value, label: &str) -> &'a serde_json::Value {
    summary["runs"][0]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no row {label} in {summary}"))
}

pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read json")).expect("parse json")
}

/// Processes whose command line mentions `needle`.
pub(crate) fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

impl TestServer {
    /// `mongo-stress run PROFILE --uri <this server> --quiet --out OUT EXTRA...`, which must exit
    /// 0 within 5 minutes; returns summary.json, stdout and stderr.
    pub(crate) fn run_ok(
        &self,
        profile: &str,
        out: &Path,
        extra: &[&str],
    ) -> (serde_json::Value, String, String) {
        let output = bin()
            .args(["run", profile, "--uri", &self.uri, "--quiet", "--out"])
            .arg(out)
            .args(extra)
            .timeout(std::time::Duration::from_secs(300))
            .assert()
            .code(0)
            .get_output()
            .clone();
        (
            read_json(&out.join("summary.json")),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

/// Starts `mongo-stress run PROFILE --uri URI --quiet --out OUT` in the background, output piped.
pub(crate) fn spawn_run(
    profile: &std::path::Path,
    uri: &str,
    out: &std::path::Path,
) -> std::process::Child {
    std::process::Command::new(bin_path())
        .args([
            "run",
            profile.to_str().unwrap(),
            "--uri",
            uri,
            "--quiet",
            "--out",
        ])
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Checks a summary.json against docs/summary.schema.json.
pub(crate) fn validate_schema(summary: &serde_json::Value) {
    validate_against(summary, "docs/summary.schema.json");
}

/// Checks a file the tool wrote against a schema of `docs/`.
pub(crate) fn validate_against(value: &serde_json::Value, schema: &str) {
    let schema_json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(schema)).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema_json).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "a file breaks {schema}: {errors:#?}");
}

/// The first CPU this process may run on (to pin a busy process and the tool to one core).
pub(crate) fn first_allowed_cpu() -> usize {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .find(|&c| libc::CPU_ISSET(c, &set))
            .expect("an allowed CPU")
    }
}

/// A child process killed and reaped when the test ends, however it ends.
pub(crate) struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
