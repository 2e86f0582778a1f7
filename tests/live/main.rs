//! The live tier in one test binary (one link, not 25): the tests that start a real server or a
//! real program beside the tool (Prometheus, node_exporter, Chromium, pymongo, Java), and the
//! offline checks of deploy/kubernetes. Run one file's tests with a filter on its module, e.g.
//! `cargo test --release --test live scale::`.
//!
//! libtest runs two tests at a time here, from any two files. Each live test holds a turn on the
//! machine (`common::shared()`, which `TestServer::start` takes); those that measure rates,
//! latencies, windows, memory, CPU or timeouts take theirs alone (`TestServer::start_alone`,
//! `common::alone()`), so that no other live test runs beside them. No test sets an environment
//! variable of this process: a child is given its own (`Command::env`).
//!
//! - `audit`: the write audit and scheduled faults (kill, step-down, pause)
//! - `browser_report`: report.html, sweep.html and compare's page in headless Chromium
//! - `capacity`: the knee of a proxy of known capacity
//! - `capture`: a pymongo workload captured from the profiler and run again
//! - `change_streams`: listeners under load: every write once, the lag against a pymongo
//!   watcher, a killed server's resumes, history lost, a refused pipeline, `sweep --watchers`
//! - `compare`: a held server told from noise
//! - `counts`: documents and opcounters against the tool's counts
//! - `coordinated`: a coordinator and three parts: counts, `merge` of the parts and the
//!   server agree; a part killed mid-run; a wrong token, a taken index, parts that never come
//! - `coordinated_live`: the coordinator's live page and metrics equal the merged run; a rate
//!   change on its page split over the parts, the server's count within 2 % of it; an abort on
//!   the merged p99 (one part behind a delaying proxy) stopping every part within an interval.
//! - `coordinated_hosts`: three parts in network namespaces of their own (hosts with their own
//!   addresses and names): counts, every interval said live equal to `merge`, clocks
//! - `coordinated_series`: `sweep` across three parts against the scalability law's proxy:
//!   the peak, and every step's inserts by the server's counter; `capacity` across two parts:
//!   the knee, and every step's inserts on the server
//! - `coordinated_tls`: parts joining an https coordinator by its CA; one without it refused
//! - `embedded`: the embedded server, a wrong URI, Ctrl-C and SIGTERM
//! - `faults`: a frozen server, a killed one, a collection the tool did not write
//! - `first_hour`: a wrong update in the server's words, run directories that never mix, a
//!   failed run that leaves nothing, an HTTP port named at once
//! - `genny`: genny's workloads: phases as barriers, Repeat, Blocking: None, GlobalRate, a
//!   Loader's and a CrudActor's documents by the server's count, refusals
//! - `history`: 20 runs of a find, its index dropped before run 12 and made again before 17:
//!   change points at 12 and 17, `--fail-on-new`, a changed plan a series of its own
//! - `intervals`: latency.hlog read by three readers; the warm-up
//! - `jmeter_2016`: the 2016 samplers on the wire and the 2016 document
//! - `live_page`: the live page: rate and users changed mid-run, refusals, stop, a browser
//! - `manifests`: deploy/kubernetes against the API schemas, offline
//! - `manifests_coordinated`: deploy/kubernetes/coordinated built as kustomize builds it, the
//!   schemas, and the coordinator, its Service and the parts agreeing
//! - `members`: a scripted three-member replica set (lag, a primary change, a member leaving,
//!   an unauthorised member) and the real one-member set
//! - `metrics`: live metrics against a real Prometheus
//! - `monitor`: serverStatus every second under 1000 users
//! - `open_loop`: the share of slow operations, and late ones
//! - `parts`: one run in three parts, merged
//! - `rate`: a target rate, and a frozen server in the intended-start latency
//! - `samples`: the sample log and the resource sampler
//! - `scale`: 100,000 users in 150 MB; RSS and open files flat over a minute
//! - `server_metrics`: node_exporter and serverStatus's mongostat columns
//! - `starved`: a starved load generator named
//! - `sweep`: the peak of a proxy of known USL scaling
//! - `templates`: the profile's own operations, the server as the witness
//! - `thresholds`: thresholds on real runs, an aborting one
//! - `transactions`: steps and transactions
//! - `workloads`: mixes, key distributions, the bundled YCSB workloads

// Tests and examples compute with small known numbers (counts of a few thousand, seconds,
// percentages), where a cast loses nothing; and a test may be one long story, read top to bottom.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::too_many_lines,
    reason = "small known numbers; a test reads as one story"
)]
// Tests and tools print as they like; the library's console is `outln!`/`errln!` (clippy.toml).
#![allow(clippy::disallowed_macros)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/wire_log.rs"]
mod wire_log;

mod audit;
mod browser_report;
mod capacity;
mod capture;
mod change_streams;
mod compare;
mod coordinated;
mod coordinated_hosts;
mod coordinated_live;
mod coordinated_series;
mod coordinated_tls;
mod counts;
mod embedded;
mod faults;
mod first_hour;
mod genny;
mod genny_actors;
mod history;
mod intervals;
mod jmeter_2016;
mod live_page;
mod manifests;
mod manifests_coordinated;
mod members;
mod metrics;
mod monitor;
mod open_loop;
mod parts;
mod rate;
mod samples;
mod scale;
mod server_metrics;
mod starved;
mod sweep;
mod templates;
mod thresholds;
mod transactions;
mod workloads;
