//! Every member of a replica set or sharded cluster, sampled each second on a connection of its
//! own (`directConnection`, the URI's credentials and TLS, never the workload's pool): its state
//! and its own `hello`, `serverStatus` (operations by kind, replicated operations, connections,
//! network), and from each set's primary `replSetGetStatus` (every member's state and optime, so
//! each one's lag). Discovery: the deployment's `hello`, and for a `mongos` `listShards`; the
//! members' own `hello` lists keep it current (members that join or leave are followed). Events:
//! a primary change, a member's state change, a member added or removed, and for a sharded
//! cluster each chunk migration the config server logged (`config.changelog`).
//!
//! Owns: finding members, reading them, their rows and events. Never: writes a file (its sink
//! does) or stops the run: a member that does not answer, or refuses a command, gets one
//! warning and `-` in its cells.

pub(crate) mod parse;

use std::collections::BTreeMap;
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::options::{ClientOptions, ServerAddress};
use mongodb::Client;
use serde::{Deserialize, Serialize};

use parse::{Counters, Hello, SetStatus};

mod words;
use words::*;

mod reading;
use reading::*;

mod events;
use events::*;

/// Longest wait for one member's readings in a second; past it its cells show `-`.
const READ_TIMEOUT: Duration = Duration::from_millis(900);

/// How often a member's oplog window is read (two finds of one entry each).
const OPLOG_EVERY_MS: u64 = 10_000;

/// One member's second. Rates are over the interval before `time_ms`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MemberRow {
    pub(crate) time_ms: u64,
    /// Length of the interval the rates cover, ending at `time_ms`.
    pub(crate) interval_ms: u64,
    /// The shard it belongs to; none in a replica set.
    pub(crate) shard: Option<String>,
    /// host:port, as the set names it.
    pub(crate) member: String,
    /// PRIMARY, SECONDARY, ARBITER, ... as `replSetGetStatus` spells it; none when unknown.
    pub(crate) state: Option<String>,
    /// opcounters per second, in `OPCOUNTERS` order.
    pub(crate) ops_s: [Option<f64>; 6],
    /// opcountersRepl per second, all kinds together.
    pub(crate) repl_ops_s: Option<f64>,
    pub(crate) connections: Option<f64>,
    pub(crate) net_in_kbs: Option<f64>,
    pub(crate) net_out_kbs: Option<f64>,
    /// Seconds behind its primary (the primary's last applied time less its own).
    pub(crate) lag_s: Option<f64>,
    /// The time its oplog spans (its last entry's time less its first's), seconds: read every
    /// `OPLOG_EVERY_MS`, the last reading repeated in between.
    pub(crate) oplog_window_s: Option<f64>,
}

/// A member's name across files and pages: `shard0/h1:27017`, or the host alone in a
/// replica set.
pub(crate) fn member_name(shard: Option<&str>, host: &str) -> String {
    match shard {
        Some(s) => format!("{s}/{host}"),
        None => host.to_string(),
    }
}

impl MemberRow {
    /// `shard/host`, or the host (`member_name`).
    pub(crate) fn name(&self) -> String {
        member_name(self.shard.as_deref(), &self.member)
    }

    /// Its operations per second, all kinds.
    pub(crate) fn ops_total(&self) -> Option<f64> {
        let known: Vec<f64> = self.ops_s.iter().flatten().copied().collect();
        (!known.is_empty()).then(|| known.iter().sum())
    }
}

/// What happened to the deployment's shape during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TopologyKind {
    /// The set's primary changed (to none, while there is none).
    PrimaryChange,
    /// A member's state changed.
    StateChange,
    MemberAdded,
    MemberRemoved,
    /// A chunk migration committed (`config.changelog` `moveChunk.commit`).
    Migration,
}

/// One topology event, as the sampler saw it; `offset_secs`, `unavailable` and `election_secs`
/// are filled when the run is judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopologyEvent {
    pub(crate) kind: TopologyKind,
    /// Epoch milliseconds: when it happened (a primary change: the new primary's
    /// `electionDate` when it lies within the second it was seen in; a migration: the
    /// changelog's time), and when the sampler saw it.
    pub(crate) time_ms: u64,
    pub(crate) seen_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<String>,
    /// The member it is about (a primary change: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) member: Option<String>,
    /// A primary change: the old and the new primary; a state change: the old and new states;
    /// a migration: the donor and recipient shards.
    #[serde(default)]
    pub(crate) from: Option<String>,
    #[serde(default)]
    pub(crate) to: Option<String>,
    /// In words.
    pub(crate) detail: String,
    /// From the first stage's start.
    #[serde(default)]
    pub(crate) offset_secs: f64,
    /// The client's longest window without a success around it (within a second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unavailable: Option<EventWindow>,
    /// A new primary after a `stepdown` fault: seconds from the step-down to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) election_secs: Option<f64>,
}

/// A window without a success beside an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventWindow {
    pub(crate) label: crate::metrics::Label,
    /// From the first stage's start, and how long.
    pub(crate) start_secs: f64,
    pub(crate) secs: f64,
}

impl TopologyEvent {
    /// The event in a line, as the console and the charts' markers say it.
    pub(crate) fn line(&self) -> String {
        let window = self.unavailable.as_ref().map_or(String::new(), |w| {
            format!(
                "; {} had no success for {:.2}s from +{:.2}s",
                w.label, w.secs, w.start_secs
            )
        });
        let election = self
            .election_secs
            .map_or(String::new(), |s| format!(", {s:.2}s after the step-down"));
        format!(
            "+{:.2}s {}{election}{window}",
            self.offset_secs, self.detail
        )
    }
}

/// Where each second's member rows go.
pub(crate) trait MemberSink: Send {
    fn write(&mut self, rows: &[MemberRow]) -> std::io::Result<()>;
    fn name(&self) -> String;
}

/// What the member sampler was told to watch.
pub(crate) struct MembersTarget {
    /// The URI's options (hosts, credentials, TLS); each member's client is these, direct.
    pub(crate) options: ClientOptions,
    pub(crate) sink: Box<dyn MemberSink>,
}

/// One member being sampled.
struct Member {
    shard: Option<String>,
    host: String,
    client: Client,
    /// Its last `serverStatus` counters, and when they were read (epoch ms).
    last: Option<(u64, Counters)>,
    /// Its last known state, and whether the primary's view said so (else its own `hello`):
    /// a state change is told only between two states of the same source.
    state: Option<(String, bool)>,
    /// The commands it failed, each said once.
    said: Vec<&'static str>,
    /// Its oplog window as last read, when it was read, and the reading going on.
    oplog: Option<f64>,
    oplog_read_ms: u64,
    oplog_task: Option<tokio::task::JoinHandle<OplogRead>>,
}

/// An oplog window reading: none when it did not answer in time.
type OplogRead = Option<mongodb::error::Result<Option<f64>>>;

/// One member's readings in a second.
#[derive(Default)]
struct Read {
    hello: Option<Hello>,
    /// Its counters, and when they were read (epoch ms).
    status: Option<(u64, Counters)>,
    set_status: Option<SetStatus>,
    /// What went wrong: (command, error in words, the server's code name).
    failed: Vec<(&'static str, String, Option<String>)>,
}

/// The member sampler's state between seconds.
pub(crate) struct Members {
    options: ClientOptions,
    members: Vec<Member>,
    /// The primary of each set (by shard), as last seen, and the last one there was (with
    /// when it was lost, while there is none).
    primaries: BTreeMap<Option<String>, Option<String>>,
    lost: BTreeMap<Option<String>, (String, u64)>,
    /// A `mongos`: changelog entries after this are new.
    router: Option<Client>,
    changelog_after_ms: i64,
    last_ms: u64,
    /// Warnings said so far (each printed at once), and those not yet taken for the summary.
    said: Vec<String>,
    untaken: Vec<String>,
}

/// How long discovery waits for each of its commands.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(2);

impl Members {
    /// Finds the members behind `client` (the sampler's own client): none for a standalone
    /// server (nothing to do), a set's members from its `hello` (asked of the nearest member,
    /// so a set without a primary is found too), a cluster's from `listShards`.
    pub(crate) async fn discover(
        client: &Client,
        options: &ClientOptions,
    ) -> Result<Option<Members>, String> {
        let admin = client.database("admin");
        let nearest = mongodb::options::SelectionCriteria::ReadPreference(
            mongodb::options::ReadPreference::Nearest {
                options: Default::default(),
            },
        );
        let hello = tokio::time::timeout(
            DISCOVERY_TIMEOUT,
            admin
                .run_command(doc! { "hello": 1 })
                .selection_criteria(nearest),
        )
        .await
        .map_err(|_| "hello did not answer within 2 s".to_string())?
        .map_err(|e| format!("hello failed: {}", words(&e)))?;
        let hello = Hello::read(&hello);
        let now = now_ms();
        let mut m = Members {
            options: options.clone(),
            members: Vec::new(),
            primaries: BTreeMap::new(),
            lost: BTreeMap::new(),
            router: None,
            changelog_after_ms: i64::try_from(now).unwrap_or(i64::MAX),
            last_ms: now,
            said: Vec::new(),
            untaken: Vec::new(),
        };
        if hello.router {
            let reply = tokio::time::timeout(
                DISCOVERY_TIMEOUT,
                admin.run_command(doc! { "listShards": 1 }),
            )
            .await
            .map_err(|_| "listShards did not answer within 2 s".to_string())?
            .map_err(|e| {
                format!(
                    "listShards failed on the mongos ({}): the clusterMonitor role grants it",
                    words(&e)
                )
            })?;
            for shard in parse::shards(&reply) {
                for host in &shard.hosts {
                    m.add(Some(shard.name.clone()), host)?;
                }
                m.primaries.insert(Some(shard.name), None);
            }
            m.router = Some(client.clone());
        } else if hello.set_name.is_some() {
            for host in hello.members() {
                m.add(None, host)?;
            }
            m.primaries.insert(None, hello.primary.clone());
        } else {
            return Ok(None);
        }
        Ok(Some(m))
    }

    fn add(&mut self, shard: Option<String>, host: &str) -> Result<(), String> {
        let mut o = self.options.clone();
        o.hosts = vec![ServerAddress::parse(host).map_err(|e| format!("member {host}: {e}"))?];
        o.direct_connection = Some(true);
        o.repl_set_name = None;
        o.app_name = Some("mongo-stress members".into());
        o.max_pool_size = Some(2);
        o.min_pool_size = None;
        o.server_selection_timeout = Some(READ_TIMEOUT);
        o.connect_timeout = Some(READ_TIMEOUT);
        let client = Client::with_options(o).map_err(|e| format!("member {host}: {e}"))?;
        self.members.push(Member {
            shard,
            host: host.to_string(),
            client,
            last: None,
            state: None,
            said: Vec::new(),
            oplog: None,
            oplog_read_ms: 0,
            oplog_task: None,
        });
        Ok(())
    }

    /// Says `w` once: taken by the sampler (`take_warnings`), which says it at once and keeps
    /// it for the summary.
    fn warn_once(&mut self, w: String) {
        if !self.said.contains(&w) {
            self.said.push(w.clone());
            self.untaken.push(w);
        }
    }

    /// The warnings said since the last call, for the summary.
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.untaken)
    }

    /// One second: every member read at once (and a cluster's changelog beside), each one's
    /// row, and what changed since the last second. Events are timed when the reads were done.
    pub(crate) async fn tick(&mut self) -> (Vec<MemberRow>, Vec<TopologyEvent>) {
        let now = now_ms();
        let handles: Vec<_> = self
            .members
            .iter()
            .map(|m| tokio::spawn(read(m.client.clone())))
            .collect();
        let reads = async {
            let mut reads = Vec::with_capacity(handles.len());
            for h in handles {
                reads.push(h.await.unwrap_or_default());
            }
            reads
        };
        let changelog = changelog(self.router.clone(), self.changelog_after_ms);
        let (reads, changelog) = tokio::join!(reads, changelog);
        let after = now_ms();
        let mut events = self.migrations(changelog, after);
        let views = views(&self.members, &reads);
        let mut rows = Vec::with_capacity(self.members.len());
        let mut warnings = Vec::new();
        for (m, r) in self.members.iter_mut().zip(&reads) {
            let view = views.get(&m.shard);
            // Its state, and whether the primary's view said so (else its own hello).
            let seen = view
                .and_then(|v| v.members.iter().find(|s| s.name == m.host))
                .map(|s| (s.state.clone(), true))
                .or_else(|| Some((r.hello.as_ref().and_then(Hello::state)?.to_string(), false)));
            rows.push(row(
                m,
                r,
                view,
                seen.as_ref().map(|s| s.0.clone()),
                now,
                self.last_ms,
            ));
            // Its own "not primary, secondary or arbiter" says nothing a view would not say
            // better (RECOVERING, STARTUP2, ...): no event from it.
            let state = seen.filter(|(s, from_view)| *from_view || s != "OTHER");
            if let (Some((before, b_view)), Some((now_state, n_view))) = (&m.state, &state) {
                // A member's own hello knows only these; other states are the primary's words.
                let shared = |s: &str| matches!(s, "PRIMARY" | "SECONDARY" | "ARBITER");
                let comparable = b_view == n_view || (shared(before) && shared(now_state));
                if before != now_state && comparable {
                    events.push(TopologyEvent::new(
                        TopologyKind::StateChange,
                        after,
                        m.shard.clone(),
                        Some(m.host.clone()),
                        Some(before.clone()),
                        Some(now_state.clone()),
                        format!("{} {before} → {now_state}", m.host),
                    ));
                }
            }
            if state.is_some() {
                m.state = state;
            }
            if let Some(w) = oplog(m, r, after).await {
                warnings.push(w);
            }
            for (command, error, code) in &r.failed {
                if !m.said.contains(command) {
                    m.said.push(command);
                    warnings.push(refusal(&m.host, command, error, code.as_deref()));
                }
            }
        }
        for w in warnings {
            self.warn_once(w);
        }
        self.primary_changes(&reads, &views, after, &mut events);
        self.membership(&reads, after, &mut events);
        self.last_ms = after;
        (rows, events)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
