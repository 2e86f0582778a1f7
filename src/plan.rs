//! The validated run plan: profile plus command-line overrides, checked once. Everything after
//! this point takes a `RunPlan`, never the raw profile or the CLI.

use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::Document;
use serde::Serialize;

use crate::error::ProfileError;
use crate::profile::{Loaded, OpKind, UpdateTarget};
use crate::workload::DocGen;

/// Command-line settings that override every group.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub threads: Option<u32>,
    pub loops: Option<u64>,
    pub duration: Option<Duration>,
    pub rate: Option<f64>,
    pub op_timeout: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct RunPlan {
    pub name: String,
    pub origin: String,
    pub description: String,
    pub target: TargetPlan,
    pub setup: SetupPlan,
    pub document: Arc<DocGen>,
    pub stages: Vec<Stage>,
    /// The profile as written, for run.json.
    pub profile_text: String,
    pub stop_on_error_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetPlan {
    pub database: String,
    pub collection: String,
    /// `None` leaves the deployment's default.
    pub write_concern: Option<WriteConcernPlan>,
    pub journal: Option<bool>,
    pub read_preference: String,
    pub pool_size: u32,
    /// Longest wait for one operation; past it the operation fails as `timeout`.
    pub op_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum WriteConcernPlan {
    Nodes(u32),
    Majority,
}

#[derive(Debug, Clone)]
pub struct SetupPlan {
    pub drop: bool,
    pub preload: u64,
    pub indexes: Vec<Document>,
}

pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct Stage {
    pub name: String,
    pub groups: Vec<GroupPlan>,
}

#[derive(Debug, Clone)]
pub struct GroupPlan {
    /// Position among all groups of the plan; samples carry it.
    pub index: usize,
    pub name: String,
    pub op: OpPlan,
    pub threads: u32,
    pub ramp_up: Duration,
    pub start_delay: Duration,
    pub stop: StopAt,
    /// Target operations per second for the group (open loop); None: closed loop.
    pub rate: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopAt {
    /// Operations per virtual user.
    Loops(u64),
    /// Time from the group's start (after its start delay), ramp-up included, as in JMeter.
    Duration(Duration),
}

#[derive(Debug, Clone, PartialEq)]
pub enum OpPlan {
    Insert,
    Find {
        filter: Vec<usize>,
        limit: u32,
        count: bool,
    },
    UpdateById {
        set: Vec<usize>,
    },
    UpdateByFilter {
        filter: Vec<usize>,
        set: Vec<usize>,
        many: bool,
    },
    Remove {
        filter: Vec<usize>,
    },
}

impl OpPlan {
    pub fn kind(&self) -> &'static str {
        match self {
            OpPlan::Insert => "insert",
            OpPlan::Find { .. } => "find",
            OpPlan::UpdateById { .. } | OpPlan::UpdateByFilter { .. } => "update",
            OpPlan::Remove { .. } => "remove",
        }
    }
}

pub const DEFAULT_FIND_LIMIT: u32 = 50;
/// Bounds that keep a plan runnable: beyond them a typo, not a test, is the likelier cause.
pub const MAX_THREADS: u32 = 1_000_000;
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
pub const MIN_RATE: f64 = 0.001;
pub const MAX_PRELOAD: u64 = 100_000_000;
pub const MAX_LOOPS: u64 = 1_000_000_000_000;
pub const MAX_RATE: f64 = 10_000_000.0;
pub const DEFAULT_POOL_SIZE: u32 = 100;

impl RunPlan {
    pub fn groups(&self) -> impl Iterator<Item = &GroupPlan> {
        self.stages.iter().flat_map(|s| s.groups.iter())
    }

    /// Total planned operations, when every group stops by loops.
    pub fn planned_operations(&self) -> Option<u64> {
        self.groups()
            .map(|g| match g.stop {
                StopAt::Loops(l) => Some(l.saturating_mul(u64::from(g.threads))),
                StopAt::Duration(_) => None,
            })
            .sum()
    }

    pub fn build(loaded: &Loaded, ov: &Overrides) -> Result<RunPlan, ProfileError> {
        let p = &loaded.profile;
        let t = &p.target;
        let name_ok =
            |s: &str| !s.is_empty() && !s.contains('$') && !s.starts_with('.') && !s.ends_with('.');
        let database = t.database.clone().unwrap_or_else(|| "mongo_stress".into());
        if !name_ok(&database) || database.contains('.') || database.contains(' ') {
            return Err(loaded.error_at(
                "target.database",
                "not a valid database name",
                crate::profile::expected_for("database"),
            ));
        }
        let collection = t.collection.clone().unwrap_or_else(|| "cities".into());
        if !name_ok(&collection) || collection.starts_with("system.") {
            return Err(loaded.error_at(
                "target.collection",
                "not a valid collection name",
                crate::profile::expected_for("collection"),
            ));
        }
        let write_concern = match &t.write_concern {
            None => None,
            Some(toml::Value::Integer(n)) if *n >= 0 && *n <= 50 => {
                Some(WriteConcernPlan::Nodes(*n as u32))
            }
            Some(toml::Value::String(s)) if s == "majority" => Some(WriteConcernPlan::Majority),
            Some(toml::Value::String(s)) if s.parse::<u32>().is_ok() => {
                Some(WriteConcernPlan::Nodes(s.parse().unwrap_or(1)))
            }
            Some(_) => {
                return Err(loaded.error_at(
                    "target.write_concern",
                    "not a write concern",
                    crate::profile::expected_for("write_concern"),
                ))
            }
        };
        let read_preference = t
            .read_preference
            .clone()
            .unwrap_or_else(|| "primary".into());
        if ![
            "primary",
            "primaryPreferred",
            "secondary",
            "secondaryPreferred",
            "nearest",
        ]
        .contains(&read_preference.as_str())
        {
            return Err(loaded.error_at(
                "target.read_preference",
                "unknown read preference",
                crate::profile::expected_for("read_preference"),
            ));
        }
        let pool_size = t.pool_size.unwrap_or(DEFAULT_POOL_SIZE);
        if pool_size == 0 {
            return Err(loaded.error_at(
                "target.pool_size",
                "a pool of 0 connections cannot run anything",
                crate::profile::expected_for("pool_size"),
            ));
        }

        let op_timeout = match (ov.op_timeout, &t.op_timeout) {
            (Some(d), _) => d,
            (None, None) => DEFAULT_OP_TIMEOUT,
            (None, Some(s)) => match parse_duration(s) {
                Ok(d) if !d.is_zero() && d <= MAX_DURATION => d,
                Ok(_) => {
                    return Err(loaded.error_at(
                        "target.op_timeout",
                        "an operation timeout must be more than 0 and at most a year",
                        crate::profile::expected_for("op_timeout"),
                    ))
                }
                Err(problem) => {
                    return Err(loaded.error_at(
                        "target.op_timeout",
                        problem,
                        crate::profile::expected_for("op_timeout"),
                    ))
                }
            },
        };
        let stop_on_error_pct = match p.stop_on_error_pct {
            Some(x) if !(x > 0.0 && x <= 100.0) => {
                return Err(loaded.error_at(
                    "stop_on_error_pct",
                    "not a percentage of failed operations",
                    crate::profile::expected_for("stop_on_error_pct"),
                ))
            }
            x => x,
        };

        let document = DocGen::from_table(&p.document)
            .map_err(|e| loaded.error_at(&e.key, e.problem, e.expected))?;

        let mut indexes = Vec::new();
        for (i, idx) in p.setup.indexes.iter().enumerate() {
            let key = format!("setup.indexes[{i}]");
            let mut doc = Document::new();
            for (field, dir) in idx {
                match dir {
                    toml::Value::Integer(d @ (1 | -1)) => doc.insert(field.clone(), *d as i32),
                    toml::Value::String(s) if ["text", "hashed", "2d", "2dsphere"].contains(&s.as_str()) => {
                        doc.insert(field.clone(), s.clone())
                    }
                    _ => {
                        return Err(loaded.error_at(
                            &format!("{key}.{field}"),
                            "not an index direction",
                            "1, -1, \"hashed\", \"text\", \"2d\" or \"2dsphere\", e.g. indexes = [{ city = 1 }]",
                        ))
                    }
                };
            }
            if doc.is_empty() {
                return Err(loaded.error_at(
                    &key,
                    "an index needs at least one field",
                    crate::profile::expected_for("indexes"),
                ));
            }
            indexes.push(doc);
        }

        if p.setup.preload > MAX_PRELOAD {
            return Err(loaded.error_at(
                "setup.preload",
                format!(
                    "{} documents is more than the {MAX_PRELOAD} preload inserts",
                    p.setup.preload
                ),
                crate::profile::expected_for("preload"),
            ));
        }

        if p.groups.is_empty() {
            return Err(crate::error::ProfileError {
                file: loaded.origin.clone(),
                line: loaded.text.lines().count().max(1),
                column: 1,
                key: "group".into(),
                value: None,
                problem: "the profile has no thread group, so there is nothing to run".into(),
                expected: "at least one [[group]] table, e.g.\n    [[group]]\n    name = \"insert\"\n    op = \"insert\"\n    threads = 10\n    loops = 100".into(),
            });
        }

        let mut stages: Vec<Stage> = Vec::new();
        let mut seen_names = std::collections::HashSet::new();
        for (index, g) in p.groups.iter().enumerate() {
            let at = |k: &str| format!("group[{index}].{k}");
            let err = |k: &str, problem: String| {
                loaded.error_at(&at(k), problem, crate::profile::expected_for(k))
            };
            if g.name.trim().is_empty() {
                return Err(err(
                    "name",
                    "a group needs a name for its summary row".into(),
                ));
            }
            if !seen_names.insert(g.name.clone()) {
                return Err(err(
                    "name",
                    format!(
                        "two groups are named `{}`; summary rows would clash",
                        g.name
                    ),
                ));
            }
            let threads = ov.threads.unwrap_or(g.threads);
            if threads == 0 {
                return Err(err("threads", "0 threads would run nothing".into()));
            }
            if threads > MAX_THREADS {
                return Err(err(
                    "threads",
                    format!("{threads} virtual users per group is more than the {MAX_THREADS} this tool runs"),
                ));
            }
            let dur = |k: &str, v: &Option<String>| -> Result<Option<Duration>, ProfileError> {
                v.as_deref()
                    .map(|s| parse_duration(s).map_err(|p| err(k, p)))
                    .transpose()?
                    .map(|d| {
                        if d > MAX_DURATION {
                            Err(err(
                                k,
                                format!(
                                    "`{}` is longer than a year",
                                    humantime::format_duration(d)
                                ),
                            ))
                        } else {
                            Ok(d)
                        }
                    })
                    .transpose()
            };
            let ramp_up = dur("ramp_up", &g.ramp_up)?.unwrap_or_default();
            let start_delay = dur("start_delay", &g.start_delay)?.unwrap_or_default();
            let duration = dur("duration", &g.duration)?;
            let stop = match (ov.loops, ov.duration, g.loops, duration) {
                (Some(l), _, _, _) => StopAt::Loops(l),
                (_, Some(d), _, _) => StopAt::Duration(d),
                (_, _, Some(_), Some(_)) => {
                    return Err(err(
                        "duration",
                        "both loops and duration are set; a group stops by one of them".into(),
                    ))
                }
                (_, _, Some(0), None) => {
                    return Err(err("loops", "0 loops would run nothing".into()))
                }
                (_, _, Some(l), None) if l > MAX_LOOPS => {
                    return Err(err(
                        "loops",
                        format!("{l} operations per user would never finish"),
                    ))
                }
                (_, _, Some(l), None) => StopAt::Loops(l),
                (_, _, None, Some(d)) if d.is_zero() => {
                    return Err(err("duration", "a zero duration would run nothing".into()))
                }
                (_, _, None, Some(d)) => StopAt::Duration(d),
                (_, _, None, None) => {
                    return Err(loaded.error_at(
                        &format!("group[{index}]"),
                        format!(
                            "group `{}` has neither loops nor duration, so it would never stop",
                            g.name
                        ),
                        "loops = N (operations per thread) or duration = \"30s\"",
                    ))
                }
            };
            if let StopAt::Loops(0) = stop {
                return Err(err("loops", "0 loops would run nothing".into()));
            }

            let fields = |k: &str,
                          names: &Option<Vec<String>>,
                          default: bool|
             -> Result<Vec<usize>, ProfileError> {
                let names: Vec<String> = match names {
                    Some(n) if n.is_empty() => {
                        return Err(err(k, format!("`{k}` needs at least one field")))
                    }
                    Some(n) => n.clone(),
                    None if default => document
                        .fields
                        .iter()
                        .find(|(_, g)| matches!(g, crate::workload::Gen::Choice(_)))
                        .map(|(n, _)| vec![n.clone()])
                        .ok_or_else(|| {
                            err(
                                k,
                                format!(
                                    "no `{k}` given and the document has no choice field to use"
                                ),
                            )
                        })?,
                    None => return Err(err(k, format!("`{k}` is required for this operation"))),
                };
                names
                    .iter()
                    .map(|n| {
                        document.field_index(n).ok_or_else(|| {
                            loaded.error_at(
                                &at(k),
                                format!("`{n}` is not a field of [document]"),
                                format!(
                                    "names from [document]: {}",
                                    document.field_names().join(", ")
                                ),
                            )
                        })
                    })
                    .collect()
            };
            let misplaced = |k: &str, set: bool, ok_for: &str| -> Result<(), ProfileError> {
                if set {
                    Err(err(
                        k,
                        format!(
                            "`{k}` has no meaning for op = \"{}\"; it applies to {ok_for}",
                            kind_name(g.op)
                        ),
                    ))
                } else {
                    Ok(())
                }
            };
            misplaced("limit", g.limit.is_some() && g.op != OpKind::Find, "find")?;
            misplaced("count", g.count.is_some() && g.op != OpKind::Find, "find")?;
            misplaced("set", g.set.is_some() && g.op != OpKind::Update, "update")?;
            misplaced(
                "target",
                g.target.is_some() && g.op != OpKind::Update,
                "update",
            )?;
            misplaced("many", g.many.is_some() && g.op != OpKind::Update, "update")?;
            misplaced(
                "filter",
                g.filter.is_some() && g.op == OpKind::Insert,
                "find, update and remove",
            )?;

            let op = match g.op {
                OpKind::Insert => {
                    if document.fields.is_empty() {
                        return Err(loaded.error_at(
                            "document",
                            "insert needs a [document] to generate",
                            crate::profile::expected_for("document"),
                        ));
                    }
                    OpPlan::Insert
                }
                OpKind::Find => {
                    let limit = g.limit.unwrap_or(DEFAULT_FIND_LIMIT);
                    if limit == 0 {
                        return Err(err(
                            "limit",
                            "limit = 0 means no limit to MongoDB; give a real bound".into(),
                        ));
                    }
                    OpPlan::Find {
                        filter: fields("filter", &g.filter, true)?,
                        limit,
                        count: g.count.unwrap_or(false),
                    }
                }
                OpKind::Update => {
                    let set = fields("set", &g.set, false)?;
                    match g.target.unwrap_or(UpdateTarget::Random) {
                        UpdateTarget::Random => {
                            misplaced(
                                "filter",
                                g.filter.is_some(),
                                "update with target = \"filter\"",
                            )?;
                            misplaced("many", g.many.is_some(), "update with target = \"filter\"")?;
                            OpPlan::UpdateById { set }
                        }
                        UpdateTarget::Filter => OpPlan::UpdateByFilter {
                            filter: fields("filter", &g.filter, true)?,
                            set,
                            many: g.many.unwrap_or(false),
                        },
                    }
                }
                OpKind::Remove => OpPlan::Remove {
                    filter: fields("filter", &g.filter, true)?,
                },
            };

            let stage_name = g.stage.clone().unwrap_or_default();
            let rate = match ov.rate.or(g.rate) {
                Some(r) if !(r.is_finite() && (MIN_RATE..=MAX_RATE).contains(&r)) => {
                    return Err(err(
                        "rate",
                        format!("{r} operations per second cannot be scheduled"),
                    ));
                }
                r => r,
            };
            let group = GroupPlan {
                index,
                name: g.name.clone(),
                op,
                threads,
                ramp_up,
                start_delay,
                stop,
                rate,
            };
            match stages.iter_mut().find(|s| s.name == stage_name) {
                Some(s) => s.groups.push(group),
                None => stages.push(Stage {
                    name: stage_name,
                    groups: vec![group],
                }),
            }
        }

        Ok(RunPlan {
            name: loaded.name.clone(),
            origin: loaded.origin.clone(),
            description: p.description.clone().unwrap_or_default(),
            target: TargetPlan {
                database,
                collection,
                write_concern,
                journal: t.journal,
                read_preference,
                pool_size,
                op_timeout,
            },
            setup: SetupPlan {
                drop: p.setup.drop,
                preload: p.setup.preload,
                indexes,
            },
            document: Arc::new(document),
            stages,
            profile_text: loaded.text.clone(),
            stop_on_error_pct,
        })
    }
}

fn kind_name(op: OpKind) -> &'static str {
    match op {
        OpKind::Insert => "insert",
        OpKind::Find => "find",
        OpKind::Update => "update",
        OpKind::Remove => "remove",
    }
}

/// Parses "30s", "5m", "1h 30m", "250ms". A bare number is refused rather than guessed at.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("`{s}` is not a duration ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str) -> Result<RunPlan, ProfileError> {
        let loaded = crate::profile::parse("p.toml", text, "p")?;
        RunPlan::build(&loaded, &Overrides::default())
    }

    const DOC: &str = "[document]\ncity = { choice = [\"a\", \"b\"] }\n";

    #[test]
    fn a_profile_without_groups_is_refused() {
        let e = build(DOC).unwrap_err();
        assert_eq!(e.key, "group");
        assert!(e.problem.contains("no thread group"));
    }

    #[test]
    fn a_group_without_a_stop_condition_is_refused() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 2\n"
        ))
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("group[0]", 3));
        assert!(e.problem.contains("neither loops nor duration"));
    }

    #[test]
    fn zero_threads_and_bad_durations_are_located() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 0\nloops = 1\n"
        ))
        .unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.line, e.column),
            ("group[0].threads", 6, 11)
        );
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 1\nduration = \"soon\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "group[0].duration");
        assert_eq!(e.value.as_deref(), Some("\"soon\""));
    }

    #[test]
    fn a_filter_on_an_unknown_field_lists_the_document_fields() {
        let e = build(&format!("{DOC}[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 1\nloops = 1\nfilter = [\"town\"]\n")).unwrap_err();
        assert_eq!(e.key, "group[0].filter");
        assert!(e.expected.contains("city"));
    }

    #[test]
    fn overrides_replace_every_groups_threads_and_stop() {
        let text = format!("{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 5\nduration = \"1m\"\n[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 7\nloops = 3\n");
        let loaded = crate::profile::parse("p.toml", &text, "p").unwrap();
        let plan = RunPlan::build(
            &loaded,
            &Overrides {
                threads: Some(2),
                loops: Some(4),
                duration: None,
                rate: None,
                op_timeout: None,
            },
        )
        .unwrap();
        assert!(plan
            .groups()
            .all(|g| g.threads == 2 && g.stop == StopAt::Loops(4)));
        assert_eq!(plan.planned_operations(), Some(16));
        assert_eq!(
            plan.groups().nth(1).unwrap().op,
            OpPlan::Find {
                filter: vec![0],
                limit: 50,
                count: false
            }
        );
    }

    #[test]
    fn groups_with_a_stage_run_after_the_earlier_stage() {
        let text = format!("{DOC}[[group]]\nname = \"i\"\nstage = \"one\"\nop = \"insert\"\nthreads = 1\nloops = 1\n[[group]]\nname = \"f\"\nstage = \"two\"\nop = \"find\"\nthreads = 1\nloops = 1\n");
        let plan = build(&text).unwrap();
        assert_eq!(
            plan.stages
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["one", "two"]
        );
    }
}
