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

pub mod parse;

use std::collections::BTreeMap;
use std::time::Duration;

use mongodb::bson::{doc, Document};
use mongodb::options::{ClientOptions, ServerAddress};
use mongodb::Client;
use serde::{Deserialize, Serialize};

use parse::{Counters, Hello, SetStatus};

/// Longest wait for one member's readings in a second; past it its cells show `-`.
const READ_TIMEOUT: Duration = Duration::from_millis(900);

/// How often a member's oplog window is read (two finds of one entry each).
const OPLOG_EVERY_MS: u64 = 10_000;

/// One member's second. Rates are over the interval before `time_ms`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemberRow {
    pub time_ms: u64,
    /// Length of the interval the rates cover, ending at `time_ms`.
    pub interval_ms: u64,
    /// The shard it belongs to; none in a replica set.
    pub shard: Option<String>,
    /// host:port, as the set names it.
    pub member: String,
    /// PRIMARY, SECONDARY, ARBITER, ... as `replSetGetStatus` spells it; none when unknown.
    pub state: Option<String>,
    /// opcounters per second, in `OPCOUNTERS` order.
    pub ops_s: [Option<f64>; 6],
    /// opcountersRepl per second, all kinds together.
    pub repl_ops_s: Option<f64>,
    pub connections: Option<f64>,
    pub net_in_kbs: Option<f64>,
    pub net_out_kbs: Option<f64>,
    /// Seconds behind its primary (the primary's last applied time less its own).
    pub lag_s: Option<f64>,
    /// The time its oplog spans (its last entry's time less its first's), seconds: read every
    /// `OPLOG_EVERY_MS`, the last reading repeated in between.
    pub oplog_window_s: Option<f64>,
}

impl MemberRow {
    /// Its operations per second, all kinds.
    pub fn ops_total(&self) -> Option<f64> {
        let known: Vec<f64> = self.ops_s.iter().flatten().copied().collect();
        (!known.is_empty()).then(|| known.iter().sum())
    }
}

/// What happened to the deployment's shape during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
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
    pub kind: TopologyKind,
    /// Epoch milliseconds: when it happened (a primary change: the new primary's
    /// `electionDate` when it lies within the second it was seen in; a migration: the
    /// changelog's time), and when the sampler saw it.
    pub time_ms: u64,
    pub seen_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The member it is about (a primary change: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// A primary change: the old and the new primary; a state change: the old and new states;
    /// a migration: the donor and recipient shards.
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    /// In words.
    pub detail: String,
    /// From the first stage's start.
    #[serde(default)]
    pub offset_secs: f64,
    /// The client's longest window without a success around it (within a second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<EventWindow>,
    /// A new primary after a `stepdown` fault: seconds from the step-down to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub election_secs: Option<f64>,
}

/// A window without a success beside an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventWindow {
    pub label: crate::metrics::Label,
    /// From the first stage's start, and how long.
    pub start_secs: f64,
    pub secs: f64,
}

impl TopologyEvent {
    /// The event in a line, as the console and the charts' markers say it.
    pub fn line(&self) -> String {
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
pub trait MemberSink: Send {
    fn write(&mut self, rows: &[MemberRow]) -> std::io::Result<()>;
    fn name(&self) -> String;
}

/// What the member sampler was told to watch.
pub struct MembersTarget {
    /// The URI's options (hosts, credentials, TLS); each member's client is these, direct.
    pub options: ClientOptions,
    pub sink: Box<dyn MemberSink>,
}

/// One member being sampled.
struct Member {
    shard: Option<String>,
    host: String,
    client: Client,
    last: Option<Counters>,
    state: Option<String>,
    /// The commands it failed, each said once.
    said: Vec<&'static str>,
    /// Its oplog window, and when it was last read.
    oplog: Option<f64>,
    oplog_read_ms: u64,
}

/// One member's readings in a second.
#[derive(Default)]
struct Read {
    hello: Option<Hello>,
    status: Option<Counters>,
    set_status: Option<SetStatus>,
    /// The oplog window, when it was due and could be read.
    oplog: Option<Option<f64>>,
    /// What went wrong: (command, error, the server's code name).
    failed: Vec<(&'static str, String, Option<String>)>,
}

/// The member sampler's state between seconds.
pub struct Members {
    options: ClientOptions,
    members: Vec<Member>,
    /// The primary of each set (by shard), as last seen.
    primaries: BTreeMap<Option<String>, Option<String>>,
    /// A `mongos`: changelog entries after this are new.
    router: Option<Client>,
    changelog_after_ms: i64,
    last_ms: u64,
    /// Warnings said so far (also printed at once).
    pub warnings: Vec<String>,
}

impl Members {
    /// Finds the members behind `client` (the sampler's own client): none for a standalone
    /// server (nothing to do), a set's members from its `hello`, a cluster's from `listShards`.
    pub async fn discover(
        client: &Client,
        options: ClientOptions,
    ) -> Result<Option<Members>, String> {
        let admin = client.database("admin");
        let hello = tokio::time::timeout(
            Duration::from_secs(2),
            admin.run_command(doc! { "hello": 1 }),
        )
        .await
        .map_err(|_| "hello did not answer within 2 s".to_string())?
        .map_err(|e| format!("hello failed: {e}"))?;
        let hello = Hello::read(&hello);
        let now = now_ms();
        let mut m = Members {
            options,
            members: Vec::new(),
            primaries: BTreeMap::new(),
            router: None,
            changelog_after_ms: now as i64,
            last_ms: now,
            warnings: Vec::new(),
        };
        if hello.router {
            let reply = admin
                .run_command(doc! { "listShards": 1 })
                .await
                .map_err(|e| {
                    format!(
                        "listShards failed on the mongos ({e}): the clusterMonitor role grants it"
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

    /// The members now, as `shard/host` (a set's: host).
    pub fn names(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| match &m.shard {
                Some(s) => format!("{s}/{}", m.host),
                None => m.host.clone(),
            })
            .collect()
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
        });
        Ok(())
    }

    /// One second: every member read at once, its row, and what changed since the last second.
    pub async fn tick(&mut self) -> (Vec<MemberRow>, Vec<crate::monitor::members::TopologyEvent>) {
        let now = now_ms();
        let secs = (now.saturating_sub(self.last_ms) as f64 / 1000.0).max(1e-3);
        let handles: Vec<_> = self
            .members
            .iter()
            .map(|m| {
                let oplog = now.saturating_sub(m.oplog_read_ms) >= OPLOG_EVERY_MS;
                tokio::spawn(read(m.client.clone(), oplog))
            })
            .collect();
        let mut reads = Vec::with_capacity(handles.len());
        for h in handles {
            reads.push(h.await.unwrap_or_default());
        }
        let changelog = self.changelog().await;
        let mut events = Vec::new();
        // Each set's view: its primary's replSetGetStatus.
        let views: BTreeMap<Option<String>, SetStatus> = self
            .members
            .iter()
            .zip(&reads)
            .filter_map(|(m, r)| {
                let s = r.set_status.as_ref()?;
                s.primary()
                    .is_some_and(|p| p.is_self || p.name == m.host)
                    .then(|| (m.shard.clone(), s.clone()))
            })
            .collect();
        let mut rows = Vec::with_capacity(self.members.len());
        for (m, r) in self.members.iter_mut().zip(&reads) {
            let view = views.get(&m.shard);
            let seen = view.and_then(|v| v.members.iter().find(|s| s.name == m.host));
            let state = seen
                .map(|s| s.state.clone())
                .or_else(|| r.hello.as_ref().and_then(Hello::state).map(str::to_string));
            let counters = r.status.clone();
            let rate = |now: Option<f64>, last: Option<f64>| Some(((now? - last?) / secs).max(0.0));
            let last = m.last.as_ref();
            let mut ops_s = [None; 6];
            if let Some(c) = &counters {
                for (i, cell) in ops_s.iter_mut().enumerate() {
                    *cell = rate(c.ops[i], last.and_then(|l| l.ops[i]));
                }
            }
            let c = counters.as_ref();
            rows.push(MemberRow {
                time_ms: now,
                interval_ms: now.saturating_sub(self.last_ms),
                shard: m.shard.clone(),
                member: m.host.clone(),
                state: state.clone(),
                ops_s,
                repl_ops_s: rate(c.and_then(|c| c.repl), last.and_then(|l| l.repl)),
                connections: c.and_then(|c| c.connections),
                net_in_kbs: rate(c.and_then(|c| c.bytes_in), last.and_then(|l| l.bytes_in))
                    .map(|b| b / 1024.0),
                net_out_kbs: rate(c.and_then(|c| c.bytes_out), last.and_then(|l| l.bytes_out))
                    .map(|b| b / 1024.0),
                lag_s: view.and_then(|v| v.lag_s(&m.host)),
                oplog_window_s: match r.oplog {
                    Some(w) => {
                        m.oplog = w;
                        m.oplog_read_ms = now;
                        w
                    }
                    None => m.oplog,
                },
            });
            m.last = counters;
            if let (Some(before), Some(after)) = (&m.state, &state) {
                if before != after {
                    events.push(TopologyEvent::new(
                        TopologyKind::StateChange,
                        now,
                        m.shard.clone(),
                        Some(m.host.clone()),
                        Some(before.clone()),
                        Some(after.clone()),
                        format!("{} {before} → {after}", m.host),
                    ));
                }
            }
            if state.is_some() {
                m.state = state;
            }
            for (command, error, code) in &r.failed {
                if m.said.contains(command) {
                    continue;
                }
                m.said.push(command);
                let w = refusal(&m.host, command, error, code.as_deref());
                eprintln!("warning: {w}");
                self.warnings.push(w);
            }
        }
        self.primary_changes(&reads, &views, now, &mut events);
        self.membership(&reads, now, &mut events);
        events.extend(changelog);
        self.last_ms = now;
        (rows, events)
    }

    /// A set whose primary is not the one last seen: a primary change (from the last one, to
    /// the new one or none).
    fn primary_changes(
        &mut self,
        reads: &[Read],
        views: &BTreeMap<Option<String>, SetStatus>,
        now: u64,
        events: &mut Vec<TopologyEvent>,
    ) {
        let shards: Vec<Option<String>> = self.primaries.keys().cloned().collect();
        for shard in shards {
            let answered = self
                .members
                .iter()
                .zip(reads)
                .any(|(m, r)| m.shard == shard && r.hello.is_some());
            if !answered {
                // Nobody of the set answered: nothing is known of its primary.
                continue;
            }
            let (primary, elected) = match views.get(&shard).and_then(SetStatus::primary) {
                Some(p) => (Some(p.name.clone()), p.election_ms),
                None => (
                    self.members
                        .iter()
                        .zip(reads)
                        .find(|(m, r)| {
                            m.shard == shard && r.hello.as_ref().is_some_and(|h| h.writable_primary)
                        })
                        .map(|(m, _)| m.host.clone()),
                    None,
                ),
            };
            let before = self.primaries.get(&shard).cloned().flatten();
            if before == primary {
                continue;
            }
            // The election's own time, when it falls in the second this was seen in.
            let time = elected
                .and_then(|e| u64::try_from(e).ok())
                .filter(|e| *e > self.last_ms && *e <= now)
                .unwrap_or(now);
            let name = |p: &Option<String>| p.clone().unwrap_or_else(|| "none".into());
            let set = shard
                .as_ref()
                .map_or(String::new(), |s| format!("shard {s}: "));
            let mut e = TopologyEvent::new(
                TopologyKind::PrimaryChange,
                time,
                shard.clone(),
                None,
                before.clone(),
                primary.clone(),
                format!("{set}primary {} → {}", name(&before), name(&primary)),
            );
            e.seen_ms = now;
            events.push(e);
            self.primaries.insert(shard, primary);
        }
    }

    /// Members a set's primary (or, with none, any member) names that are not sampled yet are
    /// added; members the primary no longer names are removed.
    fn membership(&mut self, reads: &[Read], now: u64, events: &mut Vec<TopologyEvent>) {
        let mut named: BTreeMap<Option<String>, (bool, Vec<String>)> = BTreeMap::new();
        for (m, r) in self.members.iter().zip(reads) {
            let Some(h) = &r.hello else { continue };
            let entry = named.entry(m.shard.clone()).or_default();
            if h.writable_primary {
                *entry = (true, h.members().cloned().collect());
            } else if !entry.0 {
                for host in h.members() {
                    if !entry.1.contains(host) {
                        entry.1.push(host.clone());
                    }
                }
            }
        }
        for (shard, (from_primary, hosts)) in named {
            if from_primary {
                let gone: Vec<usize> = self
                    .members
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.shard == shard && !hosts.contains(&m.host))
                    .map(|(i, _)| i)
                    .collect();
                for i in gone.into_iter().rev() {
                    let m = self.members.remove(i);
                    events.push(TopologyEvent::new(
                        TopologyKind::MemberRemoved,
                        now,
                        shard.clone(),
                        Some(m.host.clone()),
                        None,
                        None,
                        format!("{} left the set", m.host),
                    ));
                }
            }
            for host in hosts {
                if self
                    .members
                    .iter()
                    .any(|m| m.shard == shard && m.host == host)
                {
                    continue;
                }
                match self.add(shard.clone(), &host) {
                    Ok(()) => events.push(TopologyEvent::new(
                        TopologyKind::MemberAdded,
                        now,
                        shard.clone(),
                        Some(host.clone()),
                        None,
                        None,
                        format!("{host} joined the set"),
                    )),
                    Err(e) => {
                        let w = format!("members: {e}; it is not sampled");
                        if !self.warnings.contains(&w) {
                            eprintln!("warning: {w}");
                            self.warnings.push(w);
                        }
                    }
                }
            }
        }
    }

    /// A cluster's chunk migrations committed since the last look (`config.changelog`).
    async fn changelog(&mut self) -> Vec<TopologyEvent> {
        let Some(router) = &self.router else {
            return Vec::new();
        };
        let find = async {
            let mut cursor = router
                .database("config")
                .collection::<Document>("changelog")
                .find(doc! {
                    "what": parse::MIGRATION_COMMIT,
                    "time": { "$gt": mongodb::bson::DateTime::from_millis(self.changelog_after_ms) },
                })
                .sort(doc! { "time": 1 })
                .limit(1000)
                .await?;
            let mut out = Vec::new();
            while cursor.advance().await? {
                out.push(Document::try_from(cursor.current())?);
            }
            Ok::<_, mongodb::error::Error>(out)
        };
        let entries = match tokio::time::timeout(READ_TIMEOUT, find).await {
            Ok(Ok(e)) => e,
            Ok(Err(e)) => {
                let w = refusal(
                    "the mongos",
                    "find on config.changelog",
                    &e.to_string(),
                    code_name(&e).as_deref(),
                );
                if !self.warnings.contains(&w) {
                    eprintln!("warning: {w}");
                    self.warnings.push(w);
                }
                return Vec::new();
            }
            Err(_) => return Vec::new(),
        };
        let now = now_ms();
        entries
            .iter()
            .filter_map(parse::migration)
            .map(|mig| {
                self.changelog_after_ms = self.changelog_after_ms.max(mig.time_ms);
                let mut e = TopologyEvent::new(
                    TopologyKind::Migration,
                    u64::try_from(mig.time_ms).unwrap_or(0),
                    None,
                    None,
                    mig.from.clone(),
                    mig.to.clone(),
                    format!(
                        "chunk of {} moved {} → {}",
                        mig.ns,
                        mig.from.as_deref().unwrap_or("?"),
                        mig.to.as_deref().unwrap_or("?")
                    ),
                );
                e.seen_ms = now;
                e
            })
            .collect()
    }
}

impl TopologyEvent {
    fn new(
        kind: TopologyKind,
        time_ms: u64,
        shard: Option<String>,
        member: Option<String>,
        from: Option<String>,
        to: Option<String>,
        detail: String,
    ) -> TopologyEvent {
        TopologyEvent {
            kind,
            time_ms,
            seen_ms: time_ms,
            shard,
            member,
            from,
            to,
            detail,
            offset_secs: 0.0,
            unavailable: None,
            election_secs: None,
        }
    }
}

/// A member's `hello`, then `serverStatus` and, on a primary, `replSetGetStatus`, all within
/// `READ_TIMEOUT`.
async fn read(client: Client, oplog: bool) -> Read {
    let admin = client.database("admin");
    let mut r = Read::default();
    let work = async {
        match admin.run_command(doc! { "hello": 1 }).await {
            Ok(h) => r.hello = Some(Hello::read(&h)),
            Err(e) => {
                r.failed.push(("hello", e.to_string(), code_name(&e)));
                return;
            }
        }
        let primary = r.hello.as_ref().is_some_and(|h| h.writable_primary);
        let status =
            admin.run_command(doc! { "serverStatus": 1, "repl": 0, "metrics": 0, "locks": 0 });
        let set = async {
            if primary {
                Some(admin.run_command(doc! { "replSetGetStatus": 1 }).await)
            } else {
                None
            }
        };
        let newest = r
            .hello
            .as_ref()
            .filter(|h| h.set_name.is_some() && !h.arbiter)
            .and_then(|h| h.last_write_s);
        let window = async {
            match newest {
                Some(newest) if oplog => Some(oplog_window(&client, newest).await),
                _ => None,
            }
        };
        let (status, set, window) = tokio::join!(status, set, window);
        match window {
            Some(Ok(w)) => r.oplog = Some(w),
            Some(Err(e)) => {
                r.oplog = Some(None);
                r.failed.push((OPLOG_FIND, e.to_string(), code_name(&e)));
            }
            None => {}
        }
        match status {
            Ok(s) => r.status = Some(Counters::read(&s)),
            Err(e) => r
                .failed
                .push(("serverStatus", e.to_string(), code_name(&e))),
        }
        match set {
            Some(Ok(s)) => r.set_status = Some(SetStatus::read(&s)),
            Some(Err(e)) => r
                .failed
                .push(("replSetGetStatus", e.to_string(), code_name(&e))),
            None => {}
        }
    };
    if tokio::time::timeout(READ_TIMEOUT, work).await.is_err() && r.hello.is_none() {
        r.failed
            .push(("hello", "no answer within 900 ms".into(), None));
    }
    r
}

/// The command the oplog window is read with, as its warning names it.
const OPLOG_FIND: &str = "find on local.oplog.rs";

/// A member's oplog window: its newest entry's time (`newest_s`, its `hello`'s
/// `lastWrite.opTime`) less its oldest entry's `ts`, in seconds (none for an empty oplog). What
/// `rs.printReplicationInfo()` reports as "log length start to end".
async fn oplog_window(client: &Client, newest_s: u32) -> mongodb::error::Result<Option<f64>> {
    let oldest = client
        .database("local")
        .collection::<Document>("oplog.rs")
        .find_one(doc! {})
        .sort(doc! { "$natural": 1 })
        .projection(doc! { "ts": 1, "_id": 0 })
        .await?;
    Ok(oldest
        .and_then(|d| d.get_timestamp("ts").ok())
        .map(|t| f64::from(newest_s.saturating_sub(t.time))))
}

fn code_name(e: &mongodb::error::Error) -> Option<String> {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code_name.clone()),
        _ => None,
    }
}

/// The warning for a member's failed command: the role it needs when it was refused, else
/// what went wrong.
fn refusal(host: &str, command: &str, error: &str, code: Option<&str>) -> String {
    match code {
        Some("Unauthorized") if command == OPLOG_FIND => format!(
            "members: {host} refused {command} (not authorized): grant the user the read role on the local database to see its oplog window; that cell shows - (said once)"
        ),
        Some("Unauthorized") => format!(
            "members: {host} refused {command} (not authorized): grant the user the clusterMonitor role to see {}; those cells show - (said once)",
            match command {
                "replSetGetStatus" => "each member's state and lag",
                "serverStatus" => "its operations, connections and network",
                _ => "it",
            }
        ),
        _ if command == "hello" => format!(
            "members: {host} does not answer ({}); its cells show - while it does not (said once)",
            first_line(error)
        ),
        _ => format!(
            "members: {command} failed on {host} ({}); those cells show - (said once)",
            first_line(error)
        ),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
