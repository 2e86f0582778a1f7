//! The replies the member sampler reads, as real servers send them: `hello` (or the legacy
//! `isMaster`), `serverStatus`, `replSetGetStatus`, `listShards` and `config.changelog`, each
//! read into a type that keeps only what the sampler uses. Every field may be missing (older
//! servers, arbiters, a mongos): a missing field is `None`, never an error.

use mongodb::bson::{Bson, Document};

use super::super::status::number;

/// What a member says of itself and of its set (`hello`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hello {
    pub set_name: Option<String>,
    /// Data-bearing members, priority-0 ones (`passives`) and arbiters, as the member lists them.
    pub hosts: Vec<String>,
    pub arbiters: Vec<String>,
    pub primary: Option<String>,
    pub me: Option<String>,
    pub writable_primary: bool,
    pub secondary: bool,
    pub arbiter: bool,
    /// A `mongos` (`msg: "isdbgrid"`).
    pub router: bool,
}

impl Hello {
    pub fn read(d: &Document) -> Hello {
        let yes = |k: &str| d.get_bool(k).unwrap_or(false);
        let strings = |k: &str| -> Vec<String> {
            d.get_array(k)
                .map(|a| {
                    a.iter()
                        .filter_map(|h| h.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut hosts = strings("hosts");
        hosts.extend(strings("passives"));
        Hello {
            set_name: d.get_str("setName").ok().map(str::to_string),
            hosts,
            arbiters: strings("arbiters"),
            primary: d.get_str("primary").ok().map(str::to_string),
            me: d.get_str("me").ok().map(str::to_string),
            writable_primary: yes("isWritablePrimary") || yes("ismaster"),
            secondary: yes("secondary"),
            arbiter: yes("arbiterOnly"),
            router: d.get_str("msg") == Ok("isdbgrid"),
        }
    }

    /// Every member it names: data-bearing, passive and arbiter.
    pub fn members(&self) -> impl Iterator<Item = &String> {
        self.hosts.iter().chain(&self.arbiters)
    }

    /// Its state in its own words, as `replSetGetStatus` spells states.
    pub fn state(&self) -> Option<&'static str> {
        self.set_name.as_ref()?;
        Some(if self.writable_primary {
            "PRIMARY"
        } else if self.secondary {
            "SECONDARY"
        } else if self.arbiter {
            "ARBITER"
        } else {
            "OTHER"
        })
    }
}

/// The counters a member row is made of (`serverStatus`); rates come from two of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// opcounters, in `OPCOUNTERS` order.
    pub ops: [Option<f64>; 6],
    /// opcountersRepl, summed (what the member applied from its sync source).
    pub repl: Option<f64>,
    pub connections: Option<f64>,
    pub bytes_in: Option<f64>,
    pub bytes_out: Option<f64>,
}

impl Counters {
    pub fn read(status: &Document) -> Counters {
        let mut ops = [None; 6];
        for (cell, op) in ops.iter_mut().zip(crate::monitor::OPCOUNTERS) {
            *cell = number(status, &["opcounters", op]);
        }
        let repl: Vec<f64> = crate::monitor::OPCOUNTERS
            .iter()
            .filter_map(|op| number(status, &["opcountersRepl", op]))
            .collect();
        Counters {
            ops,
            repl: (!repl.is_empty()).then(|| repl.iter().sum()),
            connections: number(status, &["connections", "current"]),
            bytes_in: number(status, &["network", "bytesIn"]),
            bytes_out: number(status, &["network", "bytesOut"]),
        }
    }
}

/// One member as the primary sees it (`replSetGetStatus.members[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct SeenMember {
    pub name: String,
    pub state: String,
    /// Its last applied operation's time, epoch milliseconds: `optimeDate` (millisecond
    /// precision), else the optime's timestamp (whole seconds); none for an arbiter, or a
    /// member the primary cannot reach (`optimeDate` of 1970).
    pub optime_ms: Option<i64>,
    /// When it was elected, for the primary (`electionDate`).
    pub election_ms: Option<i64>,
    pub is_self: bool,
}

/// The set as one member sees it (`replSetGetStatus`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetStatus {
    pub set: Option<String>,
    pub members: Vec<SeenMember>,
}

impl SetStatus {
    pub fn read(d: &Document) -> SetStatus {
        let members = d
            .get_array("members")
            .map(|a| {
                a.iter()
                    .filter_map(Bson::as_document)
                    .filter_map(|m| {
                        Some(SeenMember {
                            name: m.get_str("name").ok()?.to_string(),
                            state: m
                                .get_str("stateStr")
                                .map(str::to_string)
                                .unwrap_or_else(|_| state_name(number(m, &["state"]))),
                            optime_ms: optime_ms(m),
                            election_ms: date_ms(m.get("electionDate")),
                            is_self: m.get_bool("self").unwrap_or(false),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        SetStatus {
            set: d.get_str("set").ok().map(str::to_string),
            members,
        }
    }

    /// The member in state PRIMARY, if one is.
    pub fn primary(&self) -> Option<&SeenMember> {
        self.members.iter().find(|m| m.state == "PRIMARY")
    }

    /// How far `name` is behind the primary, in seconds: the primary's last applied time less
    /// the member's (never below 0); none without a primary, or for a member without an optime.
    pub fn lag_s(&self, name: &str) -> Option<f64> {
        let primary = self.primary()?.optime_ms?;
        let member = self.members.iter().find(|m| m.name == name)?.optime_ms?;
        Some(((primary - member) as f64 / 1000.0).max(0.0))
    }
}

/// `replSetGetStatus`'s `state` numbers, where a reply has no `stateStr`.
fn state_name(n: Option<f64>) -> String {
    let name = match n.map(|n| n as i64) {
        Some(0) => "STARTUP",
        Some(1) => "PRIMARY",
        Some(2) => "SECONDARY",
        Some(3) => "RECOVERING",
        Some(5) => "STARTUP2",
        Some(6) => "UNKNOWN",
        Some(7) => "ARBITER",
        Some(8) => "DOWN",
        Some(9) => "ROLLBACK",
        Some(10) => "REMOVED",
        _ => "UNKNOWN",
    };
    name.to_string()
}

/// A member's last applied time: `optimeDate`, else `optime.ts` (protocol version 1), else
/// `optime` itself (a bare timestamp, protocol version 0). The epoch (a member the primary
/// cannot reach reports `Timestamp(0, 0)`) is no time at all.
fn optime_ms(m: &Document) -> Option<i64> {
    let ts = |b: &Bson| match b {
        Bson::Timestamp(t) => Some(i64::from(t.time) * 1000),
        Bson::Document(d) => match d.get("ts") {
            Some(Bson::Timestamp(t)) => Some(i64::from(t.time) * 1000),
            _ => None,
        },
        _ => None,
    };
    date_ms(m.get("optimeDate"))
        .or_else(|| m.get("optime").and_then(ts))
        .filter(|ms| *ms > 0)
}

fn date_ms(b: Option<&Bson>) -> Option<i64> {
    match b? {
        Bson::DateTime(d) => Some(d.timestamp_millis()),
        _ => None,
    }
}

/// One shard of a sharded cluster (`listShards.shards[]`): its name and the members its host
/// string names (`rs0/h1:27018,h2:27018`, or one `host:port` for a standalone shard).
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    pub name: String,
    pub hosts: Vec<String>,
}

pub fn shards(list_shards: &Document) -> Vec<Shard> {
    list_shards
        .get_array("shards")
        .map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .filter_map(|s| {
                    let name = s.get_str("_id").ok()?.to_string();
                    let host = s.get_str("host").ok()?;
                    let list = host.split_once('/').map_or(host, |(_, l)| l);
                    let hosts = list
                        .split(',')
                        .map(str::trim)
                        .filter(|h| !h.is_empty())
                        .map(str::to_string)
                        .collect();
                    Some(Shard { name, hosts })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A chunk migration the config server logged (`config.changelog`, `what: "moveChunk.commit"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Migration {
    pub time_ms: i64,
    pub ns: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// The changelog entries the sampler asks for.
pub const MIGRATION_COMMIT: &str = "moveChunk.commit";

pub fn migration(entry: &Document) -> Option<Migration> {
    if entry.get_str("what").ok()? != MIGRATION_COMMIT {
        return None;
    }
    let details = entry.get_document("details").ok();
    let shard = |k: &str| Some(details?.get_str(k).ok()?.to_string());
    Some(Migration {
        time_ms: date_ms(entry.get("time"))?,
        ns: entry.get_str("ns").unwrap_or("").to_string(),
        from: shard("from"),
        to: shard("to"),
    })
}
