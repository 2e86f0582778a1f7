//! The replies the member sampler reads, as real servers send them: `hello` (or the legacy
//! `isMaster`), `serverStatus`, `replSetGetStatus`, `listShards` and `config.changelog`, each
//! read into a type that keeps only what the sampler uses. Every field may be missing (older
//! servers, arbiters, a mongos): a missing field is `None`, never an error.

use mongodb::bson::{Bson, Document};

use super::super::status::number;

/// What a member says of itself and of its set (`hello`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Hello {
    pub(crate) set_name: Option<String>,
    /// Data-bearing members, priority-0 ones (`passives`) and arbiters, as the member lists them.
    pub(crate) hosts: Vec<String>,
    pub(crate) arbiters: Vec<String>,
    pub(crate) primary: Option<String>,
    pub(crate) me: Option<String>,
    pub(crate) writable_primary: bool,
    pub(crate) secondary: bool,
    pub(crate) arbiter: bool,
    /// A `mongos` (`msg: "isdbgrid"`).
    pub(crate) router: bool,
    /// Its newest oplog entry's time, whole seconds (`lastWrite.opTime.ts`).
    pub(crate) last_write_s: Option<u32>,
}

impl Hello {
    pub(crate) fn read(d: &Document) -> Hello {
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
            last_write_s: d
                .get_document("lastWrite")
                .and_then(|w| w.get_document("opTime"))
                .and_then(|o| o.get_timestamp("ts"))
                .ok()
                .map(|t| t.time),
        }
    }

    /// Every member it names: data-bearing, passive and arbiter.
    pub(crate) fn members(&self) -> impl Iterator<Item = &String> {
        self.hosts.iter().chain(&self.arbiters)
    }

    /// Its state in its own words, as `replSetGetStatus` spells states.
    pub(crate) fn state(&self) -> Option<&'static str> {
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
pub(crate) struct Counters {
    /// opcounters, in `OPCOUNTERS` order.
    pub(crate) ops: [Option<f64>; 6],
    /// opcountersRepl, summed (what the member applied from its sync source).
    pub(crate) repl: Option<f64>,
    pub(crate) connections: Option<f64>,
    pub(crate) bytes_in: Option<f64>,
    pub(crate) bytes_out: Option<f64>,
}

impl Counters {
    pub(crate) fn read(status: &Document) -> Counters {
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
pub(crate) struct SeenMember {
    pub(crate) name: String,
    pub(crate) state: String,
    /// Its last applied operation's time, epoch milliseconds: `optimeDate` (millisecond
    /// precision), else the optime's timestamp (whole seconds); none for an arbiter, or a
    /// member the primary cannot reach (`optimeDate` of 1970).
    pub(crate) optime_ms: Option<i64>,
    /// When it was elected, for the primary (`electionDate`).
    pub(crate) election_ms: Option<i64>,
    pub(crate) is_self: bool,
}

/// The set as one member sees it (`replSetGetStatus`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SetStatus {
    pub(crate) set: Option<String>,
    pub(crate) members: Vec<SeenMember>,
}

impl SetStatus {
    pub(crate) fn read(d: &Document) -> SetStatus {
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
    pub(crate) fn primary(&self) -> Option<&SeenMember> {
        self.members.iter().find(|m| m.state == "PRIMARY")
    }

    /// How far `name` is behind the primary, in seconds: the primary's last applied time less
    /// the member's (never below 0); none without a primary, or for a member without an optime.
    pub(crate) fn lag_s(&self, name: &str) -> Option<f64> {
        let primary = self.primary()?.optime_ms?;
        let member = self.members.iter().find(|m| m.name == name)?.optime_ms?;
        Some((crate::num::real_signed(primary - member) / 1000.0).max(0.0))
    }
}

/// `replSetGetStatus`'s `state` numbers, where a reply has no `stateStr`.
#[allow(
    clippy::cast_possible_truncation,
    reason = "a member state is a small whole number; any other falls to `UNKNOWN`"
)]
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
pub(crate) struct Shard {
    pub(crate) name: String,
    pub(crate) hosts: Vec<String>,
}

pub(crate) fn shards(list_shards: &Document) -> Vec<Shard> {
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
pub(crate) struct Migration {
    pub(crate) time_ms: i64,
    pub(crate) ns: String,
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
}

/// The changelog entries the sampler asks for.
pub(crate) const MIGRATION_COMMIT: &str = "moveChunk.commit";

pub(crate) fn migration(entry: &Document) -> Option<Migration> {
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

#[cfg(test)]
mod tests {
    //! On real servers' documents (`tests/data/topology`, each one's source and version in its
    //! README): Percona's getDiagnosticData from 3.6.20 and 4.2.8 primaries (Go JSON), and
    //! `rs.status()`, `rs.isMaster()` and `sh.status()` printed by the legacy shell (3.6, 4.2,
    //! 4.4.6). The readers below only undo each format's spelling of BSON types.
    use super::*;
    use mongodb::bson::{DateTime, Timestamp};

    const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/topology/");

    fn file(name: &str) -> String {
        std::fs::read_to_string(format!("{DATA}{name}")).expect("a topology document")
    }

    /// Go's `encoding/json` of a `bson.M`: a timestamp is `{"T", "I"}`, a date an RFC 3339
    /// string; every number is JSON's.
    fn go_json(v: &serde_json::Value) -> Bson {
        use serde_json::Value;
        match v {
            Value::Object(o) if o.len() == 2 && o.contains_key("T") && o.contains_key("I") => {
                Bson::Timestamp(Timestamp {
                    time: u32::try_from(o["T"].as_u64().unwrap()).unwrap(),
                    increment: u32::try_from(o["I"].as_u64().unwrap()).unwrap(),
                })
            }
            Value::Object(o) => {
                Bson::Document(o.iter().map(|(k, v)| (k.clone(), go_json(v))).collect())
            }
            Value::Array(a) => Bson::Array(a.iter().map(go_json).collect()),
            Value::String(s) => match DateTime::parse_rfc3339_str(s) {
                Ok(d) if s.len() >= 20 && s.as_bytes()[10] == b'T' => Bson::DateTime(d),
                _ => Bson::String(s.clone()),
            },
            Value::Number(n) => n
                .as_i64()
                .map_or(Bson::Double(n.as_f64().unwrap()), Bson::Int64),
            Value::Bool(b) => Bson::Boolean(*b),
            Value::Null => Bson::Null,
        }
    }

    fn diagnostic(name: &str) -> Document {
        let v: serde_json::Value = serde_json::from_str(&file(name)).unwrap();
        match go_json(&v) {
            Bson::Document(d) => d,
            _ => panic!("not a document"),
        }
    }

    /// The legacy shell's printout as Extended JSON: `ISODate(..)`, `Timestamp(t, i)`,
    /// `NumberLong(..)`, `ObjectId(..)`, `BinData(t,..)`; the prompt line is skipped.
    fn shell(name: &str) -> Bson {
        let text = file(name);
        let start = text.find(['{', '[']).unwrap();
        let mut s = text[start..].to_string();
        let mut out = String::new();
        while let Some(i) = s.find(|c: char| c.is_ascii_uppercase()) {
            out.push_str(&s[..i]);
            let rest = &s[i..];
            let call = [
                "ISODate(",
                "Timestamp(",
                "NumberLong(",
                "ObjectId(",
                "BinData(",
            ]
            .into_iter()
            .find(|p| rest.starts_with(p));
            let Some(call) = call else {
                out.push_str(&rest[..1]);
                s = rest[1..].to_string();
                continue;
            };
            let end = rest.find(')').unwrap();
            let args: Vec<&str> = rest[call.len()..end].split(',').map(str::trim).collect();
            let unq = |a: &str| a.trim_matches('"').to_string();
            out.push_str(&match call {
                "ISODate(" => format!("{{\"$date\":\"{}\"}}", unq(args[0])),
                "Timestamp(" => {
                    format!("{{\"$timestamp\":{{\"t\":{},\"i\":{}}}}}", args[0], args[1])
                }
                "NumberLong(" => format!("{{\"$numberLong\":\"{}\"}}", unq(args[0])),
                "ObjectId(" => format!("{{\"$oid\":\"{}\"}}", unq(args[0])),
                _ => format!(
                    "{{\"$binary\":{{\"base64\":\"{}\",\"subType\":\"00\"}}}}",
                    unq(args[1])
                ),
            });
            s = rest[end + 1..].to_string();
        }
        out.push_str(&s);
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: {e}\n{out}"));
        Bson::try_from(v).unwrap()
    }

    fn shell_doc(name: &str) -> Document {
        shell(name).as_document().unwrap().clone()
    }

    #[test]
    fn a_4_2_8_primary_its_counters_its_own_view_and_its_set_without_lag() {
        let d = diagnostic("percona-mongod-4.2.8-primary-getDiagnosticData.json");
        let status = d.get_document("serverStatus").unwrap();
        let c = Counters::read(status);
        assert_eq!(
            c.ops,
            [2083.0, 6132.0, 1559.0, 2064.0, 19527.0, 44255.0].map(Some)
        );
        assert_eq!(c.repl, Some(0.0));
        assert_eq!(c.connections, Some(22.0));
        assert_eq!(c.bytes_in, Some(32556669.0));
        // serverStatus.repl is hello's own section.
        let me = Hello::read(status.get_document("repl").unwrap());
        assert_eq!(me.state(), Some("PRIMARY"));
        assert_eq!(me.hosts.len(), 3);
        assert_eq!(me.primary.as_deref(), Some("172.19.0.9:27017"));
        // Its newest oplog entry: lastWrite.opTime, the primary's own optime in the set.
        assert_eq!(me.last_write_s, Some(1599759587));
        let set = SetStatus::read(d.get_document("replSetGetStatus").unwrap());
        assert_eq!(set.set.as_deref(), Some("rs1"));
        assert_eq!(set.primary().unwrap().name, "172.19.0.9:27017");
        for m in &set.members {
            assert_eq!(set.lag_s(&m.name), Some(0.0), "{}", m.name);
        }
        assert_eq!(set.members[1].state, "SECONDARY");
    }

    #[test]
    fn a_3_6_20_primary_sees_its_two_secondaries_15_s_behind() {
        let d = diagnostic("percona-mongod-3.6.20-primary-getDiagnosticData.json");
        let set = SetStatus::read(d.get_document("replSetGetStatus").unwrap());
        assert_eq!(set.lag_s("172.18.0.9:27017"), Some(0.0));
        assert_eq!(set.lag_s("172.18.0.3:27017"), Some(15.0));
        assert_eq!(set.lag_s("172.18.0.8:27017"), Some(15.0));
        let c = Counters::read(d.get_document("serverStatus").unwrap());
        assert_eq!(c.ops[0], Some(3.0));
        assert_eq!(c.connections, Some(20.0));
    }

    #[test]
    fn after_a_4_2_failover_the_new_primary_and_the_unreachable_member_without_lag() {
        let before = SetStatus::read(&shell_doc("rs-status-4.2-primary-healthy.txt"));
        let after = SetStatus::read(&shell_doc("rs-status-4.2-after-failover-member-down.txt"));
        let (p0, p1) = (before.primary().unwrap(), after.primary().unwrap());
        assert_ne!(p0.name, p1.name, "the primary changed");
        assert!(p1.election_ms.is_some());
        let down = after
            .members
            .iter()
            .find(|m| m.state == "(not reachable/healthy)")
            .expect("the member that went away");
        assert_eq!(down.optime_ms, None, "an optime of 1970 is none");
        assert_eq!(after.lag_s(&down.name), None);
        assert!(after
            .members
            .iter()
            .filter(|m| m.state == "SECONDARY")
            .all(|m| after.lag_s(&m.name).is_some()));
    }

    #[test]
    fn a_3_6_secondary_alone_knows_no_primary_so_no_lag() {
        let s = SetStatus::read(&shell_doc("rs-status-3.6-secondary-two-members-down.txt"));
        assert!(s.primary().is_none());
        assert_eq!(s.members.len(), 3);
        assert!(s.members.iter().all(|m| s.lag_s(&m.name).is_none()));
        assert_eq!(s.members.iter().filter(|m| m.is_self).count(), 1);
    }

    #[test]
    fn a_4_4_6_arbiter_has_a_state_and_no_optime() {
        let s = SetStatus::read(&shell_doc("rs-status-4.4.6-primary-with-arbiter.txt"));
        let arbiter = s.members.iter().find(|m| m.state == "ARBITER").unwrap();
        assert_eq!(arbiter.optime_ms, None);
        assert_eq!(s.lag_s(&arbiter.name), None);
        let members = shell("rs-status-members-4.4.6-shard-primary-with-arbiter.txt");
        let s = SetStatus::read(&mongodb::bson::doc! { "members": members });
        let states: Vec<&str> = s.members.iter().map(|m| m.state.as_str()).collect();
        assert_eq!(states.len(), 3);
        assert!(states.contains(&"PRIMARY") && states.contains(&"ARBITER"));
        let secondary = s.members.iter().find(|m| m.state == "SECONDARY").unwrap();
        assert!(s.lag_s(&secondary.name).is_some());
    }

    #[test]
    fn a_4_4_6_mongos_and_its_shards() {
        let h = Hello::read(&shell_doc("mongos-ismaster-4.4.6.txt"));
        assert!(h.router);
        assert_eq!(h.state(), None, "a mongos has no set");
        // sh.status()'s shard lines are config.shards' documents, as listShards returns them.
        let lines: Vec<Bson> = file("mongos-sh-status-4.4.6.txt")
            .lines()
            .filter(|l| l.contains("\"host\""))
            .map(|l| {
                Bson::try_from(serde_json::from_str::<serde_json::Value>(l.trim()).unwrap())
                    .unwrap()
            })
            .collect();
        let s = shards(&mongodb::bson::doc! { "shards": lines, "ok": 1 });
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "shard0");
        assert_eq!(
            s[0].hosts.len(),
            2,
            "the replica set's members, without its name"
        );
        assert!(s[0].hosts[0].starts_with("mongo-sh-arb-shard0-0."));
        // Standalone shards (DOCS-9217): a bare host:port.
        let v: serde_json::Value =
            serde_json::from_str(&file("listShards-standalone-shards.json")).unwrap();
        let s = shards(Bson::try_from(v).unwrap().as_document().unwrap());
        assert_eq!(s.len(), 3);
        assert_eq!(s[2].hosts, vec!["localhost:1030".to_string()]);
    }

    #[test]
    fn a_migration_from_the_changelog_as_the_manual_names_its_fields() {
        // No real changelog entry was found (tests/data/topology/README.md); the fields are
        // those of the manual's config.changelog page: what, ns, time, details.from/to.
        let entry = mongodb::bson::doc! {
            "_id": "h-2024-01-01T00:00:00.000Z-1", "server": "h:27018",
            "time": DateTime::from_millis(1_700_000_000_123), "what": "moveChunk.commit",
            "ns": "db.orders", "details": { "from": "shard0", "to": "shard1" },
        };
        let m = migration(&entry).unwrap();
        assert_eq!(
            (m.from.as_deref(), m.to.as_deref()),
            (Some("shard0"), Some("shard1"))
        );
        assert_eq!(m.time_ms, 1_700_000_000_123);
        let split = mongodb::bson::doc! { "what": "split", "time": DateTime::now() };
        assert_eq!(migration(&split), None);
    }
}
