//! Command-line interface (clap derive). Values are parsed into typed settings here, with the
//! bounds of `plan::limits`; `app` resolves them into the `RunPlan` and its `RunOptions`, and
//! nothing past `app` sees these structs.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};

mod parse;
use parse::*;

#[derive(Debug, Parser)]
#[command(
    name = "mongo-stress",
    version,
    about = "MongoDB CRUD stress tester: JMeter-style thread groups, HdrHistogram latencies, TSV/JSON summaries"
)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a profile (a path, or the name of a bundled profile)
    Run(Box<RunCommand>),
    /// Parse and check a profile and print its resolved plan; exit 0 or 2
    Validate {
        /// Profile path or bundled name
        profile: String,
        /// Also check every template against this server with its explain (no load, nothing
        /// written)
        #[arg(long, value_name = "URI")]
        uri: Option<String>,
        /// A genny workload: print it preprocessed (as genny's evaluate does), then the
        /// profile it runs as
        #[arg(long)]
        expand: bool,
        #[command(flatten)]
        overrides: OverrideArgs,
    },
    /// List the bundled profiles
    Profiles,
    /// Compare two runs side by side, with a noise-aware verdict per cell; --fail-if gates
    /// give exit 4
    Compare {
        /// The base run directory
        base: PathBuf,
        /// The new run directory
        new: PathBuf,
        /// A relative gate, e.g. 'find.p99 > +10%' or 'TOTAL.throughput < -5%' (repeatable)
        #[arg(long = "fail-if", value_name = "EXPR")]
        fail_if: Vec<String>,
        /// Also write the comparison as TSV to PATH (- for stdout)
        #[arg(long, value_name = "PATH")]
        tsv: Option<PathBuf>,
        /// Also write the comparison as JSON to PATH (- for stdout)
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
        /// Also write an HTML page with both runs on shared axes to PATH
        #[arg(long, value_name = "PATH")]
        html: Option<PathBuf>,
        /// Compare runs of different profiles, threads or rates
        #[arg(long)]
        force: bool,
        /// Seed of the bootstrap that judges noise
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Runs as series per profile, label and metric, and the change points in each (E-Divisive
    /// means, Hunter's t-test); --fail-on-new gives exit 4
    History(Box<HistoryArgs>),
    /// Merge the parts of one run (`run --part I/N` or `--parts N` on several machines) into one
    /// run directory, exactly: histograms added, counts summed
    Merge {
        /// The parts' run directories
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// The merged run's directory
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Merge even when some parts are missing (the result then has less load than the run)
        #[arg(long)]
        allow_missing: bool,
        #[command(flatten)]
        console: ConsoleArgs,
    },
    /// Search for the highest rate the deployment holds within an SLO: each step a short
    /// open-loop run, the rate doubled, then bisected to within 5 %
    // `run`'s options a step sets itself are refused (app::steps) and not shown in its help.
    #[command(
        mut_arg("duration", hidden),
        mut_arg("loops", hidden),
        mut_arg("thresholds", hidden),
        mut_arg("rate", hidden),
        mut_arg("scale", hidden),
        mut_arg("scale_threads", hidden),
        mut_arg("warmup", hidden),
        mut_arg("repeat", hidden),
        mut_arg("part", hidden),
        mut_arg("on_part_loss", hidden)
    )]
    Capacity(Box<CapacityArgs>),
    /// Make a profile from what a deployment served: its profiler (--from-profiler) or its
    /// MongoDB 4.4+ JSON log (--from-log)
    Capture(Box<CaptureArgs>),
    /// How the deployment scales with concurrency: closed-loop steps at N users (--threads
    /// 1,2,4,8 or doubled until throughput falls), with the Universal Scalability Law fitted
    #[command(
        mut_arg("duration", hidden),
        mut_arg("loops", hidden),
        mut_arg("thresholds", hidden),
        mut_arg("rate", hidden),
        mut_arg("scale", hidden),
        mut_arg("scale_threads", hidden),
        mut_arg("repeat", hidden),
        mut_arg("part", hidden),
        mut_arg("start_at", hidden),
        mut_arg("setup_wait", hidden),
        mut_arg("baseline", hidden),
        mut_arg("audit", hidden),
        mut_arg("faults", hidden),
        mut_arg("metrics_listen", hidden),
        mut_arg("metrics_push", hidden),
        mut_arg("live_control", hidden),
        mut_arg("on_part_loss", hidden)
    )]
    Sweep(Box<SweepArgs>),
    /// Join a coordinated run (`run PROFILE --parts N --coordinator ADDR`) as one of its parts:
    /// fetch its plan, start with the other parts, send every interval, keep this part's run
    /// directory
    Part(Box<PartArgs>),
    /// Rebuild report.html from the files of a finished or interrupted run
    Report {
        /// The run directory (what `run --out` named)
        run_dir: PathBuf,
        /// Where to write the report [default: RUN_DIR/report.html]
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from_profiler", "from_log"])))]
pub(crate) struct CaptureArgs {
    /// Turn the database profiler on for --for on each --db of this deployment and read
    /// system.profile (the previous settings are put back, also on Ctrl-C or an error)
    #[arg(long, value_name = "URI")]
    pub(crate) from_profiler: Option<String>,
    /// MongoDB 4.4+ JSON log files (plain or gzip; - for standard input): the slow-operation
    /// lines (id 51803)
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub(crate) from_log: Vec<PathBuf>,
    /// Beside a log: the live deployment, for its indexes, counts and a sample of documents
    #[arg(long, value_name = "URI")]
    pub(crate) uri: Option<String>,
    /// A database to profile (repeatable; default: the URI's database)
    #[arg(long = "db", value_name = "DB")]
    pub(crate) dbs: Vec<String>,
    /// How long to profile
    #[arg(long = "for", default_value = "1m", value_parser = parse_capture_window, value_name = "D")]
    pub(crate) for_: Duration,
    /// Profile at level 1 with slowms 0 and this sample rate (0 to 1) instead of level 2; the
    /// rates are divided by it
    #[arg(long, value_name = "F", value_parser = parse_sample_rate)]
    pub(crate) sample_rate: Option<f64>,
    /// The capture's directory [default: captured/capture-<YYYYmmdd-HHMMSS>]
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Emit the fewest shapes that cover this percentage of the operations
    #[arg(long, default_value = "95", value_parser = parse_coverage, value_name = "P")]
    pub(crate) coverage: f64,
    /// Emit at most this many shapes
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000), value_name = "N")]
    pub(crate) max_shapes: u32,
    /// One thread group per client application (app), per namespace, or one for all (none)
    #[arg(long, default_value = "app", value_parser = ["app", "namespace", "none"], value_name = "BY")]
    pub(crate) group_by: String,
    /// Rates times this (3 = three times what was observed)
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale, value_name = "X")]
    pub(crate) scale: f64,
    /// Write the observed literal values (by default only types, ranges, frequencies and
    /// lengths leave the source)
    #[arg(long)]
    pub(crate) keep_values: bool,
    /// Documents read from each captured collection (a $sample, read only) to learn how often
    /// each value of the fields the reads select by occurs
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000), value_name = "N")]
    pub(crate) sample_docs: u64,
    /// Read no document of the source: values, references and templates are fitted from the
    /// captured operations alone (indexes and counts are still asked for)
    #[arg(long)]
    pub(crate) no_sample_data: bool,
    /// Only log lines at or after this time (RFC 3339, e.g. 2024-03-01T10:00:00Z)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub(crate) since: Option<i64>,
    /// Only log lines at or before this time (RFC 3339)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub(crate) until: Option<i64>,
    /// Do not check the replay's work: by default each read of the profile is drawn 100 times
    /// on a scratch embedded server holding the profile's preload, and its documents returned,
    /// examined and counted per call are printed beside the source's
    #[arg(long)]
    pub(crate) no_check: bool,
    /// The program for the scratch server of the check (default: mongod on PATH, else
    /// secantusd-rs)
    #[arg(long, env = "MONGO_STRESS_SERVER_BIN", value_name = "PATH")]
    pub(crate) server_bin: Option<PathBuf>,
}

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub(crate) struct OverrideArgs {
    /// Virtual users per group, overriding every group (`sweep`: a list of steps, 1,2,4,8)
    #[arg(long, value_parser = parse_threads, value_name = "N")]
    pub(crate) threads: Option<ThreadList>,
    /// Operations per virtual user, overriding every group's loops or duration
    #[arg(long, value_parser = parse_loops, conflicts_with = "duration")]
    pub(crate) loops: Option<u64>,
    /// Run every group for this long (e.g. 30s, 5m), overriding loops or duration
    #[arg(long, value_parser = parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Longest wait for one operation before it fails as a timeout [default: the profile's, else 60s]
    #[arg(long, value_parser = parse_op_timeout)]
    pub(crate) op_timeout: Option<Duration>,
    /// Operations per second for every group (open loop; latency from the intended start)
    #[arg(long, value_parser = parse_rate)]
    pub(crate) rate: Option<f64>,
    /// Every group's rate times X (its steps and ramps too), e.g. a captured profile at 2 or 3
    /// times the rate it was captured at; a closed-loop group, which has no rate, is left as
    /// it is (a warning names it)
    #[arg(long, value_name = "X", value_parser = parse_rate_scale, conflicts_with = "rate")]
    pub(crate) scale: Option<f64>,
    /// Whether --scale above 1 raises each open-loop group's users with its rate (on, the
    /// default: X times the rate needs X times the operations in flight), or keeps them (off)
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"], requires = "scale")]
    pub(crate) scale_threads: String,
    /// Run this long first in every group without counting it in the summary (it stays in the
    /// logs, marked), e.g. 10s
    #[arg(long, value_parser = parse_duration)]
    pub(crate) warmup: Option<Duration>,
    /// Pass/fail limit on the result, e.g. 'find.p99<50ms' or 'TOTAL.error_pct<0.1'; exit 4
    /// when one fails (repeatable)
    #[arg(long = "threshold", value_name = "EXPR")]
    pub(crate) thresholds: Vec<String>,
    /// Documents the setup loads first in batches, overriding setup.preload (YCSB's recordcount)
    #[arg(long, value_name = "N", value_parser = parse_recordcount)]
    pub(crate) recordcount: Option<u64>,
    /// After each run, read back what the server kept of every acknowledged write (inserts,
    /// deletes, $inc counters); acknowledged data lost exits 5, listed in audit.tsv
    #[arg(long)]
    pub(crate) audit: bool,
    /// A fault done to the server, from the first stage's start: kill@4s+2s (SIGKILL, start
    /// again 2 s later), restart@10s+1s, pause@5s+2s (SIGSTOP), stepdown@5s+3s; replaces the
    /// profile's [[fault]]s (repeatable)
    #[arg(long = "fault", value_name = "KIND@AT+LEN")]
    pub(crate) faults: Vec<String>,
    /// An extra flag for the embedded server, e.g. --server-arg=--sync-on-commit; replaces the
    /// profile's [server] args (repeatable)
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) server_args: Vec<String>,
    /// genny workloads: set a ^Parameter everywhere, over the workload's own Parameters and
    /// Defaults, e.g. -p Repeat=200 (repeatable)
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub(crate) params: Vec<(String, String)>,
    /// genny workloads: deep-merge this YAML file onto the workload first, as genny's -o
    /// (repeatable)
    #[arg(short = 'o', long = "overrides", value_name = "FILE")]
    pub(crate) genny_overrides: Vec<PathBuf>,
    /// genny workloads: every phase once (Repeat 1, no Duration, rate or sleep), as genny's
    /// smoke check: checks a workload in seconds
    #[arg(long)]
    pub(crate) smoke: bool,
}

/// An option of `run` hidden from a command's help (it refuses it: see `app::steps`).
fn hidden(a: clap::Arg) -> clap::Arg {
    a.hide(true)
}

/// `run`: what a capacity step shares (`RunArgs`), and how the summary is shown.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunCommand {
    #[command(flatten)]
    pub(crate) args: RunArgs,
    #[command(flatten)]
    pub(crate) console: ConsoleArgs,
}

/// How the summary table is printed.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct ConsoleArgs {
    /// Print every column of the summary table on a terminal too, however wide (by default a
    /// terminal gets the columns that fit; a pipe or a file always gets them all)
    #[arg(long)]
    pub(crate) wide: bool,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct CapacityArgs {
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// What each step must hold, in the [thresholds] grammar: 'p99<20ms' (the TOTAL row) or
    /// 'find.p99<20ms' (repeatable)
    #[arg(long = "slo", value_name = "EXPR", required = true)]
    pub(crate) slo: Vec<String>,
    /// Most failed operations a step may have, in percent
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub(crate) error_pct: f64,
    /// Measured length of each step, after its warm-up
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration, value_name = "D")]
    pub(crate) step: Duration,
    /// Warm-up of each step, run but not counted
    #[arg(long, default_value = "3s", value_parser = parse_duration, value_name = "D")]
    pub(crate) step_warmup: Duration,
    /// The first rate offered, operations per second
    #[arg(long, default_value_t = 100.0, value_parser = parse_rate, value_name = "R")]
    pub(crate) start_rate: f64,
    /// The highest rate offered, operations per second
    #[arg(long, default_value_t = 1_000_000.0, value_parser = parse_rate, value_name = "R")]
    pub(crate) max_rate: f64,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// Measured length of each step, after its warm-up (--warmup, default 5s)
    #[arg(long, default_value = "20s", value_parser = parse_positive_duration, value_name = "D")]
    pub(crate) step: Duration,
    /// What every step must hold, in the [thresholds] grammar: 'p99<50ms' (the TOTAL row) or
    /// 'find.p99<50ms' (repeatable); the first step that breaks it ends the sweep
    #[arg(long = "slo", value_name = "EXPR")]
    pub(crate) slo: Vec<String>,
    /// Without --threads: the most users per group the doubling goes to
    #[arg(long, default_value_t = 1024, value_parser = parse_threads_one, value_name = "N")]
    pub(crate) max_threads: u32,
    /// The cost of listening: run the profile as written once per number of listeners given
    /// (`0,1,15,105`), every watch group at that many; the writers' throughput and p99 and the
    /// listeners' lag at each (watchers.tsv, watchers.json, watchers.html)
    #[arg(long, value_parser = parse_watchers, value_name = "LIST")]
    pub(crate) watchers: Option<WatcherList>,
}

/// `sweep --watchers`: listeners per watch group at each step, `0,1,15,105`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatcherList(pub Vec<u32>);

/// `run`'s options; a coordinator sends them to its parts as they are (`coordinate::PlanDoc`),
/// but for the tokens, which never leave the process that was given them.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub(crate) struct RunArgs {
    /// Profile path or bundled name (see `mongo-stress profiles`)
    pub(crate) profile: String,
    /// Target deployment; without it an embedded server is started
    #[arg(long, env = "MONGODB_URI", hide_env_values = true)]
    pub(crate) uri: Option<String>,
    /// Run directory [default: results/<profile>-<YYYYmmdd-HHMMSS>]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) overrides: OverrideArgs,
    /// Run the whole profile N times; one summary row per run per group, plus the spread
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: u32,
    /// Live report interval (whole intervals of --hdr-interval)
    #[arg(long, default_value = "5s", value_parser = parse_positive_duration)]
    pub(crate) interval: Duration,
    /// Length of the interval histograms in latency.hlog
    #[arg(long, default_value = "1s", value_parser = parse_positive_duration)]
    pub(crate) hdr_interval: Duration,
    /// Also write the summary as TSV to PATH (- for stdout)
    #[arg(long, value_name = "PATH")]
    pub(crate) tsv: Option<PathBuf>,
    /// Add this run's rows to the --tsv file instead of replacing it, with the run's directory,
    /// time, tags and plan in columns of their own (the file `history` reads)
    #[arg(long)]
    pub(crate) append: bool,
    /// What the run is of, stored in run.json and shown by report, compare and history, e.g.
    /// commit=abc123 (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub(crate) tags: Vec<String>,
    /// Also write the summary as JSON to PATH (- for stdout)
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,
    /// Also write every operation as JMeter's CSV result file (JTL) at PATH
    #[arg(long, value_name = "PATH")]
    pub(crate) jtl: Option<PathBuf>,
    /// Do not write the per-operation sample log (samples.tsv)
    #[arg(long)]
    pub(crate) no_samples: bool,
    /// A previous run (its directory) that relative thresholds, e.g. 'find.p99<=+10%', compare
    /// against
    #[arg(long, value_name = "DIR")]
    pub(crate) baseline: Option<PathBuf>,
    /// Do not write the interval histograms (latency.hlog)
    #[arg(long)]
    pub(crate) no_interval_log: bool,
    /// Do not sample server and client resources (resources.tsv, the resource summary)
    #[arg(long)]
    pub(crate) no_resources: bool,
    /// Do not sample a replica set's or cluster's members one by one (members.tsv, lag, the
    /// primary's changes; --no-resources turns this off too)
    #[arg(long)]
    pub(crate) no_members: bool,
    /// Seed of every random choice [default: a random one, printed]
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// The local server process to sample, when --uri names a server the tool did not start
    /// [default: the process listening on the URI's port, for a loopback URI]
    #[arg(long, value_name = "PID")]
    pub(crate) server_pid: Option<u32>,
    /// A Prometheus exporter on a server host (node_exporter; process-exporter or the MongoDB
    /// exporter for the mongod process), read every second for the host's CPU, memory, disks
    /// and network; repeat once per host, the server's first (replaces the profile's
    /// target.server_metrics) [env: MONGO_STRESS_SERVER_METRICS, URLs separated by spaces or
    /// commas]
    #[arg(long = "server-metrics", value_name = "URL")]
    pub(crate) server_metrics: Vec<String>,
    /// Let setup.drop drop a collection that holds documents mongo-stress did not write
    #[arg(long)]
    pub(crate) force: bool,
    /// Print only the final summary
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Run part I of N of the profile (0-based; each group's threads and rate divided), for
    /// load from several machines; `merge` joins the parts' run directories
    #[arg(long, value_name = "I/N", value_parser = crate::plan::part::Part::parse, conflicts_with = "parts")]
    pub(crate) part: Option<crate::plan::part::Part>,
    /// Run one of N parts, its index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job sets
    /// it); with --coordinator, the N parts it coordinates
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) parts: Option<u32>,
    /// Begin the first stage at this wall-clock time, after setup: RFC 3339
    /// (2026-11-30T12:00:00Z) or +D from now (+30s); parts on many machines start together
    #[arg(long, value_name = "TIME")]
    pub(crate) start_at: Option<String>,
    /// Longest wait of parts 1.. for part 0's setup
    #[arg(long, default_value = "10m", value_parser = parse_duration, value_name = "D")]
    pub(crate) setup_wait: Duration,
    /// Server program for the embedded server (mongod or secantusd-rs)
    #[arg(long, env = "MONGO_STRESS_SERVER_BIN", value_name = "PATH")]
    pub(crate) server_bin: Option<PathBuf>,
    /// Serve live metrics for Prometheus at http://ADDR/metrics during the run (ADDR like
    /// 127.0.0.1:9464, or a port on loopback); profile [metrics] listen
    #[arg(long, env = "MONGO_STRESS_METRICS_LISTEN", value_name = "ADDR")]
    pub(crate) metrics_listen: Option<String>,
    /// Send the same live metrics to a Prometheus remote-write endpoint every interval, e.g.
    /// http://prometheus:9090/api/v1/write; profile [metrics] push
    #[arg(
        long,
        env = "MONGO_STRESS_METRICS_PUSH",
        value_name = "URL",
        hide_env_values = true
    )]
    pub(crate) metrics_push: Option<String>,
    /// The embedded server's data directory, kept after the run (to read what it holds with
    /// another client); default a temporary one, removed at the end
    #[arg(long, value_name = "DIR")]
    pub(crate) server_data: Option<PathBuf>,
    /// Watch the run in a browser: serve its report, growing every interval, at
    /// http://ADDR/ (default a free port on 127.0.0.1; the URL is printed)
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "", value_parser = live_address)]
    pub(crate) live: Option<String>,
    /// With --live: change a group's rate or users, or stop the run, from the page (or by
    /// POST /api/groups/NAME, POST /api/stop)
    #[arg(long, requires = "live")]
    pub(crate) live_control: bool,
    /// With --live: every request must carry this token (?token=T on the page, or
    /// Authorization: Bearer T); needed to listen beyond loopback. Never printed
    #[arg(
        long,
        env = "MONGO_STRESS_LIVE_TOKEN",
        value_name = "T",
        hide_env_values = true
    )]
    #[serde(skip)]
    pub(crate) live_token: Option<String>,
    /// Coordinate the run's --parts N from here: serve its plan at ADDR (host:port) to the parts
    /// (`mongo-stress part --join http://ADDR`), start them together, merge their intervals as
    /// they come, and write the merged run; it sends no load itself
    #[arg(long, value_name = "ADDR", requires = "parts")]
    pub(crate) coordinator: Option<String>,
    /// The token a part must give to join [default: one is made and printed once]; never
    /// written to a file or log
    #[arg(
        long,
        env = "MONGO_STRESS_TOKEN",
        value_name = "T",
        hide_env_values = true
    )]
    #[serde(skip)]
    pub(crate) token: Option<String>,
    /// With --coordinator: serve HTTPS with this certificate (PEM: the certificate, then any
    /// intermediates); the parts then join https://ADDR
    #[arg(long, value_name = "FILE", requires_all = ["coordinator", "tls_key"])]
    #[serde(skip)]
    pub(crate) tls_cert: Option<PathBuf>,
    /// With --tls-cert: the certificate's private key (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    #[serde(skip)]
    pub(crate) tls_key: Option<PathBuf>,
    /// With --coordinator: how long to wait for the N parts to join
    #[arg(long, default_value = "2m", value_parser = parse_positive_duration, value_name = "D")]
    pub(crate) join_timeout: Duration,
    /// With --coordinator: what a part silent for 3 s does to the run: stop it (exit 1,
    /// everything measured kept) or let the other parts continue
    #[arg(long, value_enum, default_value_t = PartLoss::Stop, value_name = "WHAT")]
    pub(crate) on_part_loss: PartLoss,
}

/// `--on-part-loss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub(crate) enum PartLoss {
    Stop,
    Continue,
}

/// `mongo-stress part --join URL`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PartArgs {
    /// The coordinator's address, as it printed it: http://HOST:PORT
    #[arg(long, value_name = "URL")]
    pub(crate) join: String,
    /// The coordinator's join token
    #[arg(
        long,
        env = "MONGO_STRESS_TOKEN",
        value_name = "T",
        hide_env_values = true
    )]
    pub(crate) token: Option<String>,
    /// The deployment as this machine reaches it [default: the coordinator's --uri]
    #[arg(long, env = "MONGODB_URI", hide_env_values = true)]
    pub(crate) uri: Option<String>,
    /// This part's run directory [default: results/<profile>-<YYYYmmdd-HHMMSS>-part<I>, with
    /// -sweep or -capacity after the profile for a series]
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Which part this is (0-based) [default: JOB_COMPLETION_INDEX when set, else the first
    /// free one]
    #[arg(long, env = "JOB_COMPLETION_INDEX", value_name = "I")]
    pub(crate) index: Option<u32>,
    /// The CA (PEM) that signed an https coordinator's certificate, when it is not a public
    /// one (for a self-signed certificate, the certificate itself)
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Keep trying to reach the coordinator this long (pods start in any order) [default: 0s,
    /// fail at once]
    #[arg(long, default_value = "0s", value_parser = parse_duration, value_name = "D")]
    pub(crate) join_wait: Duration,
    /// Print only this part's final summary
    #[arg(long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) console: ConsoleArgs,
}

use crate::plan::limits;

/// `--threads`: one number of users, or (for `sweep`) a list of them, `1,2,4,8`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ThreadList(pub Vec<u32>);

impl ThreadList {
    pub(crate) fn first(&self) -> u32 {
        self.0[0]
    }
}

impl OverrideArgs {
    /// What they say of a genny workload.
    pub(crate) fn genny(&self) -> crate::plan::genny::GennyArgs {
        crate::plan::genny::GennyArgs {
            parameters: self.params.clone(),
            overrides: self.genny_overrides.clone(),
            smoke: self.smoke,
        }
    }

    /// `run`, `validate` and `capacity` take one number of users; a list is `sweep`'s.
    pub(crate) fn one_thread_count(&self) -> Result<(), crate::error::Error> {
        match &self.threads {
            Some(t) if t.0.len() > 1 => {
                let list: Vec<String> = t.0.iter().map(u32::to_string).collect();
                Err(crate::error::Error::Usage(format!(
                    "--threads {} is a list of steps, and a list is for `sweep`\n  fix: one number (e.g. --threads {}), or mongo-stress sweep PROFILE --threads {}",
                    list.join(","),
                    t.first(),
                    list.join(",")
                )))
            }
            _ => Ok(()),
        }
    }
}

impl From<&OverrideArgs> for crate::plan::Overrides {
    fn from(a: &OverrideArgs) -> Self {
        crate::plan::Overrides {
            threads: a.threads.as_ref().map(ThreadList::first),
            loops: a.loops,
            duration: a.duration,
            rate: a.rate,
            scale: a.scale,
            scale_keeps_threads: a.scale_threads == "off",
            op_timeout: a.op_timeout,
            warmup: a.warmup,
            thresholds: a.thresholds.clone(),
            recordcount: a.recordcount,
            audit: a.audit,
            faults: a.faults.clone(),
            server_args: a.server_args.clone(),
            watchers: None,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// Run directories, directories holding them, or files `run --tsv FILE --append` wrote
    #[arg(required = true, num_args = 1..)]
    pub(crate) paths: Vec<PathBuf>,
    /// The metrics to follow (comma-separated or repeated): throughput, p50, p90, p99,
    /// error_pct, server_cpu_per_op, client_cpu [default: all]
    #[arg(long = "metric", value_name = "NAME", value_delimiter = ',')]
    pub(crate) metrics: Vec<String>,
    /// Only these rows (comma-separated or repeated), e.g. find or TOTAL [default: all]
    #[arg(long = "label", value_name = "LABEL", value_delimiter = ',')]
    pub(crate) labels: Vec<String>,
    /// A change point's p-value (Student's t-test of its two sides) must be below this
    #[arg(long, default_value_t = 0.05, value_parser = parse_pvalue)]
    pub(crate) pvalue: f64,
    /// And its relative change above this, e.g. 5% (Hunter's magnitude: the larger of
    /// after/before - 1 and before/after - 1)
    #[arg(long, default_value = "10%", value_parser = parse_percent)]
    pub(crate) min_change: f64,
    /// Runs per window of E-Divisive's split step (Hunter's default)
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(2..))]
    pub(crate) window: u32,
    /// Which weak change point the merge drops first: small-changes (those within
    /// --min-change, then Hunter's order) or hunter (the largest p-value first, exactly as
    /// Apache Otava)
    #[arg(long, value_enum, default_value_t = MergeOrder::SmallChanges)]
    pub(crate) merge: MergeOrder,
    /// Order the runs by this tag's value (as numbers when every value is one) [default: by
    /// start time]
    #[arg(long, value_name = "TAG")]
    pub(crate) order_by: Option<String>,
    /// Read the steps of sweeps and capacity searches as runs (each step its own series)
    #[arg(long)]
    pub(crate) steps: bool,
    /// Where history.tsv, history.json and history.html go [default:
    /// results/history-<YYYYmmdd-HHMMSS>]
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Exit 4 when the newest run (of its profile) starts a change point for the worse
    #[arg(long)]
    pub(crate) fail_on_new: bool,
    /// With --fail-on-new: a change point for the worse at any of the newest N runs of its
    /// profile fails (a change too small to tell from one run is found a run or more later,
    /// at the run it began)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) new_runs: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MergeOrder {
    SmallChanges,
    Hunter,
}
