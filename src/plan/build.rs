//! `RunPlan::build`: a loaded profile and the overrides become a checked plan, one part at a
//! time (target, setup, document, each group), every problem located in the profile.

use std::collections::HashSet;
use std::time::Duration;

use mongodb::bson::Document;

use super::limits;
use super::profile::{expected_for, Group, Loaded, UpdateTarget};
use super::thresholds::{self, ThresholdPlan};
use super::{
    GroupPlan, Overrides, ReadPref, RunPlan, SetupPlan, Stage, StopAt, TargetPlan,
    WriteConcernPlan, DEFAULT_FIND_LIMIT, DEFAULT_OP_TIMEOUT, DEFAULT_POOL_SIZE,
    DEFAULT_SCAN_LIMIT,
};
use crate::error::ProfileError;
use crate::workload::op::Change;
use crate::workload::{DocGen, Gen, KeyDist, OpKind, OpSpec};

impl RunPlan {
    pub fn build(loaded: &Loaded, ov: &Overrides) -> Result<RunPlan, ProfileError> {
        let p = &loaded.profile;
        let target = target(loaded, ov)?;
        let stop_on_error_pct = match p.stop_on_error_pct {
            Some(x) if !(x > 0.0 && x <= limits::MAX_ERROR_PCT) => {
                return Err(loaded.error_at(
                    "stop_on_error_pct",
                    "not a percentage of failed operations",
                    expected_for("stop_on_error_pct"),
                ))
            }
            x => x,
        };
        let document = DocGen::from_table(&p.document)
            .map_err(|e| loaded.error_at(&e.key, e.problem, e.expected))?;
        let mut setup = setup(loaded)?;
        if let Some(n) = ov.recordcount {
            setup.preload = n;
        }
        let stages = stages(loaded, ov, &document)?;
        let thresholds = thresholds(loaded, ov, &stages)?;
        Ok(RunPlan {
            name: loaded.name.clone(),
            origin: loaded.origin.clone(),
            description: p.description.clone().unwrap_or_default(),
            target,
            setup,
            document: std::sync::Arc::new(document),
            stages,
            profile_text: loaded.text.clone(),
            stop_on_error_pct,
            thresholds,
            part: None,
        })
    }
}

fn target(loaded: &Loaded, ov: &Overrides) -> Result<TargetPlan, ProfileError> {
    let t = &loaded.profile.target;
    let name_ok = |s: &str| {
        !s.is_empty() && !s.contains(['$', '\0']) && !s.starts_with('.') && !s.ends_with('.')
    };
    let database = t.database.clone().unwrap_or_else(|| "mongo_stress".into());
    if !name_ok(&database) || database.contains('.') || database.contains(' ') {
        return Err(loaded.error_at(
            "target.database",
            "not a valid database name",
            expected_for("database"),
        ));
    }
    let collection = t.collection.clone().unwrap_or_else(|| "cities".into());
    if !name_ok(&collection) || collection.starts_with("system.") {
        return Err(loaded.error_at(
            "target.collection",
            "not a valid collection name",
            expected_for("collection"),
        ));
    }
    let write_concern = match &t.write_concern {
        None => None,
        Some(toml::Value::Integer(n)) if (0..=limits::MAX_WRITE_NODES).contains(n) => {
            Some(WriteConcernPlan::Nodes(*n as u32))
        }
        Some(toml::Value::String(s)) if s == "majority" => Some(WriteConcernPlan::Majority),
        Some(toml::Value::String(s))
            if s.parse::<i64>()
                .is_ok_and(|n| (0..=limits::MAX_WRITE_NODES).contains(&n)) =>
        {
            Some(WriteConcernPlan::Nodes(s.parse().unwrap_or(1)))
        }
        Some(_) => {
            return Err(loaded.error_at(
                "target.write_concern",
                "not a write concern",
                expected_for("write_concern"),
            ))
        }
    };
    let read_preference = match t.read_preference.as_deref() {
        None => ReadPref::Primary,
        Some(s) => ReadPref::from_name(s).ok_or_else(|| {
            loaded.error_at(
                "target.read_preference",
                "unknown read preference",
                expected_for("read_preference"),
            )
        })?,
    };
    let pool_size = t.pool_size.unwrap_or(DEFAULT_POOL_SIZE);
    if pool_size < limits::MIN_POOL_SIZE {
        return Err(loaded.error_at(
            "target.pool_size",
            "a pool of 0 connections cannot run anything",
            expected_for("pool_size"),
        ));
    }
    let op_timeout = match (ov.op_timeout, &t.op_timeout) {
        (Some(d), _) => d,
        (None, None) => DEFAULT_OP_TIMEOUT,
        (None, Some(s)) => match limits::parse_duration(s) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => {
                return Err(loaded.error_at(
                    "target.op_timeout",
                    "an operation timeout must be more than 0 and at most a year",
                    expected_for("op_timeout"),
                ))
            }
            Err(problem) if problem.contains("longer than a year") => {
                return Err(loaded.error_at(
                    "target.op_timeout",
                    "an operation timeout must be more than 0 and at most a year",
                    expected_for("op_timeout"),
                ))
            }
            Err(problem) => {
                return Err(loaded.error_at(
                    "target.op_timeout",
                    problem,
                    expected_for("op_timeout"),
                ))
            }
        },
    };
    let server_metrics = t.server_metrics.clone().unwrap_or_default();
    for (i, _) in server_metrics.iter().enumerate() {
        if let Err(problem) = crate::monitor::scrape::check_urls(&server_metrics[..=i]) {
            return Err(loaded.error_at(
                &format!("target.server_metrics[{i}]"),
                problem,
                expected_for("server_metrics"),
            ));
        }
    }
    Ok(TargetPlan {
        database,
        collection,
        write_concern,
        journal: t.journal,
        read_preference,
        pool_size,
        op_timeout,
        server_metrics,
    })
}

/// The profile's `[thresholds]`, then the command line's `--threshold`s.
fn thresholds(
    loaded: &Loaded,
    ov: &Overrides,
    stages: &[Stage],
) -> Result<Vec<ThresholdPlan>, ProfileError> {
    let mut by_index: Vec<&GroupPlan> = stages.iter().flat_map(|s| s.groups.iter()).collect();
    by_index.sort_by_key(|g| g.index);
    let names: Vec<String> = by_index.iter().map(|g| g.name.clone()).collect();
    // `group:kind` names a kind the group mixes (a single-operation group has no kind rows).
    let mixes = |t: &ThresholdPlan| -> Result<(), String> {
        match (t.group, t.kind) {
            (Some(g), Some(kind)) => {
                let group = by_index[g];
                if group.mix.is_empty() {
                    return Err(format!(
                        "`{}:{kind}`: group `{}` runs one operation, so it has no kind rows; name it `{}`",
                        group.name, group.name, group.name
                    ));
                }
                if !group.kinds().contains(&kind) {
                    let rows: Vec<String> = group
                        .kinds()
                        .iter()
                        .map(|k| format!("{}:{k}", group.name))
                        .collect();
                    return Err(format!(
                        "`{}:{kind}`: group `{}` does not run {kind}; its kind rows are {}",
                        group.name,
                        group.name,
                        rows.join(", ")
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    };
    let mut out = Vec::new();
    for (key, value) in &loaded.profile.thresholds {
        let at = format!("thresholds.{key}");
        let err = |problem: String| loaded.error_at(&at, problem, thresholds::GRAMMAR);
        let parsed = match value {
            toml::Value::String(limit) => {
                ThresholdPlan::parse(key, limit, false, Duration::ZERO, &names)
            }
            toml::Value::Table(t) => {
                if let Some(k) = t
                    .keys()
                    .find(|k| !["limit", "abort", "after"].contains(&k.as_str()))
                {
                    return Err(err(format!(
                        "unknown key `{k}`; a threshold table has limit, abort and after"
                    )));
                }
                let limit = t
                    .get("limit")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| err("a threshold table needs limit = \"< ...\"".into()))?;
                let abort = match t.get("abort") {
                    None => false,
                    Some(toml::Value::Boolean(b)) => *b,
                    Some(_) => return Err(err("abort is true or false".into())),
                };
                let after = match t.get("after") {
                    None => Duration::ZERO,
                    Some(toml::Value::String(s)) => limits::parse_duration(s).map_err(err)?,
                    Some(_) => return Err(err("after is a duration such as \"10s\"".into())),
                };
                ThresholdPlan::parse(key, limit, abort, after, &names)
            }
            _ => {
                return Err(err(
                    "a threshold is a string such as \"< 50ms\" or a table".into()
                ))
            }
        };
        let parsed = parsed.map_err(err)?;
        mixes(&parsed).map_err(err)?;
        out.push(parsed);
    }
    for expr in &ov.thresholds {
        out.push(
            ThresholdPlan::parse_cli(expr, &names)
                .and_then(|t| mixes(&t).map(|()| t))
                .map_err(|problem| ProfileError {
                    file: "--threshold".into(),
                    line: 1,
                    column: 1,
                    key: String::new(),
                    value: Some(expr.clone()),
                    problem,
                    expected: thresholds::GRAMMAR.into(),
                })?,
        );
    }
    Ok(out)
}

fn setup(loaded: &Loaded) -> Result<SetupPlan, ProfileError> {
    let s = &loaded.profile.setup;
    let mut indexes = Vec::new();
    for (i, idx) in s.indexes.iter().enumerate() {
        let key = format!("setup.indexes[{i}]");
        let mut doc = Document::new();
        for (field, dir) in idx {
            if field.is_empty() || field.starts_with('$') || field.contains('\0') {
                return Err(loaded.error_at(
                    &format!("{key}.{field}"),
                    format!("`{}` cannot be an index field", field.escape_debug()),
                    "a document field name, e.g. indexes = [{ city = 1 }]",
                ));
            }
            match dir {
                toml::Value::Integer(d @ (1 | -1)) => doc.insert(field.clone(), *d as i32),
                toml::Value::String(s) if limits::INDEX_TYPES.contains(&s.as_str()) => {
                    doc.insert(field.clone(), s.clone())
                }
                _ => {
                    return Err(loaded.error_at(
                        &format!("{key}.{field}"),
                        "not an index direction",
                        limits::index_expected(),
                    ))
                }
            };
        }
        if doc.is_empty() {
            return Err(loaded.error_at(
                &key,
                "an index needs at least one field",
                expected_for("indexes"),
            ));
        }
        indexes.push(doc);
    }
    let preload = limits::check_preload(s.preload)
        .map_err(|problem| loaded.error_at("setup.preload", problem, expected_for("preload")))?;
    Ok(SetupPlan {
        drop: s.drop,
        preload,
        indexes,
    })
}

fn stages(loaded: &Loaded, ov: &Overrides, document: &DocGen) -> Result<Vec<Stage>, ProfileError> {
    let groups = &loaded.profile.groups;
    if groups.is_empty() {
        return Err(ProfileError {
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
    let mut next_index = 0;
    let mut seen_names = HashSet::new();
    let mut seen_tags = std::collections::HashMap::new();
    for (index, g) in groups.iter().enumerate() {
        let at = GroupAt { loaded, index, g };
        at.name()?;
        if !seen_names.insert(g.name.clone()) {
            return Err(at.err(
                "name",
                format!(
                    "two groups are named `{}`; summary rows would clash",
                    g.name
                ),
            ));
        }
        // The interval log's tag of a group is its name with spaces and commas as `_`.
        let tag = crate::metrics::interval::tag(&g.name, crate::metrics::Series::Latency, false);
        if let Some(other) = seen_tags.insert(tag.clone(), g.name.clone()) {
            return Err(at.err(
                "name",
                format!(
                    "`{}` and `{other}` would share the tag `{tag}` in latency.hlog (spaces and commas become `_`)",
                    g.name
                ),
            ));
        }
        let built = at.build_steps(ov, document, &mut next_index)?;
        let stage_name = g.stage.clone().unwrap_or_default();
        if stage_name.chars().any(char::is_control) {
            return Err(at.err(
                "stage",
                format!(
                    "`{}` holds a tab, newline or other control character, which would break the TSV files",
                    stage_name.escape_debug()
                ),
            ));
        }
        match stages.iter_mut().find(|s| s.name == stage_name) {
            Some(s) => s.groups.extend(built),
            None => stages.push(Stage {
                name: stage_name,
                groups: built,
            }),
        }
    }
    Ok(stages)
}

/// The most rate steps one group may have.
const MAX_STEPS: usize = 1000;

/// A ramp without `step` runs in this many steps.
const RAMP_STEPS: u32 = 10;

/// What a group's `rate` says.
enum Rates {
    /// Closed loop.
    None,
    One(f64),
    /// Increasing rates, each run for the duration.
    Steps(Vec<f64>, Duration),
}

/// The row label of one rate step: `run@500/s`, `run@2.5/s`.
pub fn step_name(group: &str, rate: f64) -> String {
    let r = if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.2}").trim_end_matches('0').to_string()
    };
    format!("{group}@{r}/s")
}

/// One `[[group]]` of the profile, with what is needed to locate its errors.
struct GroupAt<'a> {
    loaded: &'a Loaded,
    index: usize,
    g: &'a Group,
}

impl GroupAt<'_> {
    fn path(&self, k: &str) -> String {
        format!("group[{}].{k}", self.index)
    }

    fn err(&self, k: &str, problem: String) -> ProfileError {
        self.loaded
            .error_at(&self.path(k), problem, expected_for(k))
    }

    /// A name that can label a summary row and a TSV cell.
    fn name(&self) -> Result<(), ProfileError> {
        let g = self.g;
        if g.name.trim().is_empty() {
            return Err(self.err("name", "a group needs a name for its summary row".into()));
        }
        if g.name == "TOTAL"
            || g.name.starts_with("TOTAL ")
            || g.name.starts_with("svc:")
            || g.name.starts_with("warmup:")
            || g.name.contains([':', '@'])
        {
            return Err(self.err(
                "name",
                format!(
                    "`{}` is reserved: TOTAL rows, the svc: and warmup: series of latency.hlog, a mix's `group:kind` rows and rate steps' `group@RATE/s` use it (no `:` or `@` in a name)",
                    g.name
                ),
            ));
        }
        if g.name.chars().any(char::is_control) {
            return Err(self.err(
                "name",
                format!(
                    "`{}` holds a tab, newline or other control character, which would break the TSV files",
                    g.name.escape_debug()
                ),
            ));
        }
        Ok(())
    }

    /// The group as planned: one group, or one per rate step (`name@RATE/s`), each starting
    /// when the one before ends, in the same stage.
    fn build_steps(
        &self,
        ov: &Overrides,
        document: &DocGen,
        next_index: &mut usize,
    ) -> Result<Vec<GroupPlan>, ProfileError> {
        let rates = match (self.rates()?, ov.rate) {
            // --rate replaces the steps: one rate for as long as the steps would have run.
            (Rates::Steps(steps, length), Some(r)) => {
                let mut one = self.build(ov, document, Some(length * steps.len() as u32))?;
                one.rate = Some(r);
                one.index = *next_index;
                *next_index += 1;
                return Ok(vec![one]);
            }
            (_, Some(r)) => Rates::One(r),
            (rates, None) => rates,
        };
        let Rates::Steps(steps, length) = rates else {
            let mut one = self.build(ov, document, None)?;
            one.rate = match rates {
                Rates::One(r) => Some(r),
                _ => None,
            };
            one.index = *next_index;
            *next_index += 1;
            return Ok(vec![one]);
        };
        if self.g.loops.is_some() || ov.loops.is_some() {
            return Err(self.err(
                "loops",
                "rate steps are timed, each `step` long; loops cannot count them".into(),
            ));
        }
        if self.g.duration.is_some() {
            return Err(self.err(
                "duration",
                "the rate steps set the group's length (steps x step); remove duration".into(),
            ));
        }
        let length = ov.duration.unwrap_or(length);
        let mut out = Vec::new();
        for (i, rate) in steps.iter().enumerate() {
            let mut g = self.build(ov, document, Some(length))?;
            g.name = step_name(&self.g.name, *rate);
            g.rate = Some(*rate);
            g.start_delay += length * i as u32;
            g.index = *next_index;
            *next_index += 1;
            out.push(g);
        }
        Ok(out)
    }

    /// A rate step long enough to measure.
    fn measurable_step(&self, step: Duration) -> Result<(), ProfileError> {
        if step < limits::MIN_INTERVAL {
            return Err(self.err(
                "step",
                format!(
                    "steps shorter than {} are too short to measure",
                    humantime::format_duration(limits::MIN_INTERVAL)
                ),
            ));
        }
        Ok(())
    }

    /// `rate`: none (closed loop), one, or steps with their length (a list, or a ramp cut in
    /// steps); `--rate` replaces them with one.
    fn rates(&self) -> Result<Rates, ProfileError> {
        let g = self.g;
        let check = |r: f64, k: &str| limits::check_rate(r).map_err(|p| self.err(k, p));
        let number = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
        let step = self.duration("step", &g.step)?;
        let Some(value) = &g.rate else {
            return match step {
                Some(_) => Err(self.err("step", "`step` needs a list of rates or a ramp".into())),
                None => Ok(Rates::None),
            };
        };
        if let Some(r) = number(value) {
            if step.is_some() {
                return Err(self.err(
                    "step",
                    "`step` needs a list of rates or a ramp, not one rate".into(),
                ));
            }
            return Ok(Rates::One(check(r, "rate")?));
        }
        if let Some(list) = value.as_array() {
            let mut rates = Vec::new();
            for v in list {
                let r = number(v)
                    .ok_or_else(|| self.err("rate", "a rate step must be a number".into()))?;
                rates.push(check(r, "rate")?);
            }
            if rates.is_empty() {
                return Err(self.err("rate", "an empty list of rate steps runs nothing".into()));
            }
            if rates.windows(2).any(|w| w[1] <= w[0]) {
                return Err(self.err(
                    "rate",
                    "rate steps must increase, each above the one before".into(),
                ));
            }
            let step = step.ok_or_else(|| {
                self.err(
                    "rate",
                    "a list of rates needs `step`, the length of each, e.g. step = \"30s\"".into(),
                )
            })?;
            self.measurable_step(step)?;
            if rates.len() > MAX_STEPS {
                return Err(self.err(
                    "rate",
                    format!(
                        "{} steps are more than the {MAX_STEPS} a group may have",
                        rates.len()
                    ),
                ));
            }
            return Ok(Rates::Steps(rates, step));
        }
        if let Some(t) = value.as_table() {
            if let Some(k) = t
                .keys()
                .find(|k| !["from", "to", "over"].contains(&k.as_str()))
            {
                return Err(self.err(
                    "rate",
                    format!("`{k}` is not part of a ramp (from, to, over)"),
                ));
            }
            let (from, to) = (t.get("from").and_then(number), t.get("to").and_then(number));
            let over = t
                .get("over")
                .and_then(|v| v.as_str())
                .map(limits::parse_duration);
            let (Some(from), Some(to), Some(Ok(over))) = (from, to, over) else {
                return Err(self.err(
                    "rate",
                    "a ramp needs from, to (operations per second) and over (a duration)".into(),
                ));
            };
            let (from, to) = (check(from, "rate")?, check(to, "rate")?);
            if to <= from || over.is_zero() {
                return Err(self.err(
                    "rate",
                    "a ramp must rise (to above from) over a time above 0".into(),
                ));
            }
            let step = step.unwrap_or(over / RAMP_STEPS);
            self.measurable_step(step)?;
            let n = ((over.as_secs_f64() / step.as_secs_f64()).round() as usize).max(2);
            if n > MAX_STEPS {
                return Err(self.err(
                    "step",
                    format!("{n} steps are more than the {MAX_STEPS} a group may have; take a longer step"),
                ));
            }
            let rates = (0..n)
                .map(|i| from + (to - from) * i as f64 / (n - 1) as f64)
                .collect();
            return Ok(Rates::Steps(rates, over / n as u32));
        }
        Err(self.err("rate", "not a rate".into()))
    }

    fn build(
        &self,
        ov: &Overrides,
        document: &DocGen,
        step: Option<Duration>,
    ) -> Result<GroupPlan, ProfileError> {
        let g = self.g;
        let threads = limits::check_threads(ov.threads.unwrap_or(g.threads))
            .map_err(|p| self.err("threads", p))?;
        let ramp_up = self.duration("ramp_up", &g.ramp_up)?.unwrap_or_default();
        let start_delay = self
            .duration("start_delay", &g.start_delay)?
            .unwrap_or_default();
        let stop = match step {
            Some(d) => StopAt::Duration(d),
            None => self.stop(ov)?,
        };
        let warmup = self.warmup(ov, stop)?;
        let (op, mix) = self.ops(document)?;
        let keys = match &g.keys {
            None => KeyDist::Uniform,
            Some(k) => KeyDist::from_name(k)
                .ok_or_else(|| self.err("keys", format!("`{k}` is not a key distribution")))?,
        };
        let rate = None; // set by `build_steps`
        Ok(GroupPlan {
            index: self.index,
            name: g.name.clone(),
            op,
            threads,
            ramp_up,
            start_delay,
            warmup,
            stop,
            rate,
            mix,
            keys,
        })
    }

    /// The group's warm-up: `--warmup`, else its own, else the profile's; it must leave some of
    /// a timed group to measure.
    fn warmup(&self, ov: &Overrides, stop: StopAt) -> Result<Duration, ProfileError> {
        let (key, warmup) = match (ov.warmup, &self.g.warmup, &self.loaded.profile.warmup) {
            (Some(d), _, _) => (self.path("warmup"), d),
            (None, Some(s), _) => (
                self.path("warmup"),
                limits::parse_duration(s).map_err(|p| self.err("warmup", p))?,
            ),
            (None, None, Some(s)) => (
                "warmup".to_string(),
                limits::parse_duration(s)
                    .map_err(|p| self.loaded.error_at("warmup", p, expected_for("warmup")))?,
            ),
            (None, None, None) => return Ok(Duration::ZERO),
        };
        if let StopAt::Duration(d) = stop {
            if warmup >= d {
                return Err(self.loaded.error_at(
                    &key,
                    format!(
                        "a warm-up of {} leaves nothing of group `{}`'s {} to measure",
                        humantime::format_duration(warmup),
                        self.g.name,
                        humantime::format_duration(d)
                    ),
                    "a warm-up shorter than the group's duration, e.g. warmup = \"10s\" for duration = \"60s\"",
                ));
            }
        }
        Ok(warmup)
    }

    fn duration(&self, k: &str, v: &Option<String>) -> Result<Option<Duration>, ProfileError> {
        v.as_deref()
            .map(|s| limits::parse_duration(s).map_err(|p| self.err(k, p)))
            .transpose()
    }

    fn stop(&self, ov: &Overrides) -> Result<StopAt, ProfileError> {
        let g = self.g;
        let duration = self.duration("duration", &g.duration)?;
        Ok(match (ov.loops, ov.duration, g.loops, duration) {
            (Some(l), _, _, _) => StopAt::Loops(l),
            (_, Some(d), _, _) => StopAt::Duration(d),
            (_, _, Some(_), Some(_)) => {
                return Err(self.err(
                    "duration",
                    "both loops and duration are set; a group stops by one of them".into(),
                ))
            }
            (_, _, Some(l), None) => {
                StopAt::Loops(limits::check_loops(l).map_err(|p| self.err("loops", p))?)
            }
            (_, _, None, Some(d)) if d.is_zero() => {
                return Err(self.err("duration", "a zero duration would run nothing".into()))
            }
            (_, _, None, Some(d)) => StopAt::Duration(d),
            (_, _, None, None) => {
                return Err(self.loaded.error_at(
                    &format!("group[{}]", self.index),
                    format!(
                        "group `{}` has neither loops nor duration, so it would never stop",
                        g.name
                    ),
                    "loops = N (operations per thread) or duration = \"30s\"",
                ))
            }
        })
    }

    /// Field names of `k` (filter, set) as indexes into the document; with `default`, the first
    /// choice field when none is given.
    fn fields(
        &self,
        document: &DocGen,
        k: &str,
        names: &Option<Vec<String>>,
        default: bool,
    ) -> Result<Vec<usize>, ProfileError> {
        let names: Vec<String> = match names {
            Some(n) if n.is_empty() => {
                return Err(self.err(k, format!("`{k}` needs at least one field")))
            }
            Some(n) => n.clone(),
            None if default => document
                .fields
                .iter()
                .find(|(_, g)| matches!(g, Gen::Choice(_)))
                .map(|(n, _)| vec![n.clone()])
                .ok_or_else(|| {
                    self.err(
                        k,
                        format!("no `{k}` given and the document has no choice field to use"),
                    )
                })?,
            None => return Err(self.err(k, format!("`{k}` is required for this operation"))),
        };
        names
            .iter()
            .map(|n| {
                document.field_index(n).ok_or_else(|| {
                    self.loaded.error_at(
                        &self.path(k),
                        format!("`{n}` is not a field of [document]"),
                        format!(
                            "names from [document]: {}",
                            document.field_names().join(", ")
                        ),
                    )
                })
            })
            .collect()
    }

    fn misplaced(&self, k: &str, set: bool, ok_for: &str) -> Result<(), ProfileError> {
        if set {
            let what = match (&self.g.op, &self.g.mix) {
                (Some(op), _) => format!("op = \"{op}\""),
                _ => "this group's mix".to_string(),
            };
            Err(self.err(
                k,
                format!("`{k}` has no meaning for {what}; it applies to {ok_for}"),
            ))
        } else {
            Ok(())
        }
    }

    /// The group's operation, or the kinds of its mix with their weights (the first kind is
    /// then the group's `op`).
    fn ops(&self, document: &DocGen) -> Result<(OpSpec, Vec<(OpSpec, u32)>), ProfileError> {
        let g = self.g;
        let kinds: Vec<(OpKind, u32)> = match (g.op, &g.mix) {
            (Some(op), None) => vec![(op, 1)],
            (None, Some(mix)) => self.mix(mix)?,
            (Some(_), Some(_)) => {
                return Err(self.err(
                    "mix",
                    "both op and mix are set; a group has one operation or a mix of them".into(),
                ))
            }
            (None, None) => {
                return Err(self.loaded.error_at(
                    &format!("group[{}]", self.index),
                    format!("group `{}` has neither op nor mix", g.name),
                    format!(
                        "op = \"insert\" (one of {}) or mix = {{ get = 95, update = 5 }}",
                        OpKind::listed()
                    ),
                ))
            }
        };
        let has = |ks: &[OpKind]| kinds.iter().any(|(k, _)| ks.contains(k));
        // Settings that belong to some operation kinds only.
        for (k, set, ks, ok_for) in [
            (
                "limit",
                g.limit.is_some(),
                &[OpKind::Find, OpKind::Scan][..],
                "find and scan",
            ),
            ("count", g.count.is_some(), &[OpKind::Find][..], "find"),
            (
                "set",
                g.set.is_some(),
                &[OpKind::Update, OpKind::Rmw][..],
                "update and rmw",
            ),
            (
                "inc",
                g.inc.is_some(),
                &[OpKind::Update, OpKind::Rmw][..],
                "update and rmw",
            ),
            (
                "target",
                g.target.is_some(),
                &[OpKind::Update][..],
                "update",
            ),
            ("many", g.many.is_some(), &[OpKind::Update][..], "update"),
            (
                "filter",
                g.filter.is_some(),
                &[OpKind::Find, OpKind::Update, OpKind::Remove][..],
                "find, update and remove",
            ),
        ] {
            self.misplaced(k, set && !has(ks), ok_for)?;
        }
        let specs = kinds
            .iter()
            .map(|(k, w)| Ok((self.op(*k, document)?, *w)))
            .collect::<Result<Vec<_>, ProfileError>>()?;
        let first = specs[0].0.clone();
        Ok((first, if g.mix.is_some() { specs } else { Vec::new() }))
    }

    /// An update's `set` fields (of the document) and `inc` fields (any names): at least one.
    fn change(&self, document: &DocGen) -> Result<Change, ProfileError> {
        let g = self.g;
        let inc = match &g.inc {
            Some(f) if f.is_empty() => {
                return Err(self.err("inc", "`inc` needs at least one field".into()))
            }
            Some(f) => {
                let unfit = |n: &String| {
                    n.is_empty() || n.starts_with('$') || n.contains(['.', '\0']) || n == "_id"
                };
                if let Some(bad) = f.iter().find(|n| unfit(n)) {
                    return Err(self.err(
                        "inc",
                        format!(
                            "`{}` cannot be a counter field (empty, `$`, `.`, NUL or _id)",
                            bad.escape_debug()
                        ),
                    ));
                }
                f.clone()
            }
            None => Vec::new(),
        };
        let set = if g.set.is_none() && !inc.is_empty() {
            Vec::new()
        } else {
            self.fields(document, "set", &g.set, false)?
        };
        // A counter must be a number where it exists: a generated field that is not an int or
        // a float would make every update fail at the server, and so would one both set and
        // incremented.
        for name in &inc {
            let numeric = match document.fields.iter().find(|(n, _)| n == name) {
                None => true,
                Some((_, gen)) => matches!(gen, Gen::Int(..) | Gen::Float(..)),
            };
            let also_set = set.iter().any(|i| &document.fields[*i].0 == name);
            if !numeric || also_set {
                return Err(self.err(
                    "inc",
                    format!(
                        "`{name}` {}",
                        if also_set {
                            "is both set and incremented; an update can do one of them"
                        } else {
                            "is a [document] field that is not a number (int or float), so $inc would fail"
                        }
                    ),
                ));
            }
        }
        Ok(Change { set, inc })
    }

    /// `mix = { get = 95, update = 5 }`: kinds and whole-number weights, at least one above 0.
    fn mix(&self, mix: &toml::Table) -> Result<Vec<(OpKind, u32)>, ProfileError> {
        let mut kinds = Vec::new();
        for (name, weight) in mix {
            let kind = OpKind::try_from(name.clone()).map_err(|p| {
                self.loaded.error_at(
                    &format!("{}.{name}", self.path("mix")),
                    p,
                    expected_for("mix"),
                )
            })?;
            let w = weight
                .as_integer()
                .and_then(|w| u32::try_from(w).ok())
                .ok_or_else(|| {
                    self.loaded.error_at(
                        &format!("{}.{name}", self.path("mix")),
                        format!("the weight of `{name}` must be a whole number from 0"),
                        expected_for("mix"),
                    )
                })?;
            kinds.push((kind, w));
        }
        if kinds.iter().map(|(_, w)| u64::from(*w)).sum::<u64>() == 0 {
            return Err(self.err(
                "mix",
                "the weights sum to 0, so no operation could be drawn".into(),
            ));
        }
        Ok(kinds)
    }

    fn op(&self, kind: OpKind, document: &DocGen) -> Result<OpSpec, ProfileError> {
        let g = self.g;
        Ok(match kind {
            OpKind::Insert => {
                if document.fields.is_empty() {
                    return Err(self.loaded.error_at(
                        "document",
                        "insert needs a [document] to generate",
                        expected_for("document"),
                    ));
                }
                OpSpec::Insert
            }
            OpKind::Find => {
                let limit = g.limit.unwrap_or(DEFAULT_FIND_LIMIT);
                if limit < limits::MIN_FIND_LIMIT {
                    return Err(self.err(
                        "limit",
                        "limit = 0 means no limit to MongoDB; give a real bound".into(),
                    ));
                }
                OpSpec::Find {
                    filter: self.fields(document, "filter", &g.filter, true)?,
                    limit,
                    count: g.count.unwrap_or(false),
                }
            }
            OpKind::Update => {
                let change = self.change(document)?;
                match g.target.unwrap_or(UpdateTarget::Random) {
                    UpdateTarget::Random => {
                        self.misplaced(
                            "filter",
                            g.filter.is_some(),
                            "update with target = \"filter\"",
                        )?;
                        self.misplaced(
                            "many",
                            g.many.is_some(),
                            "update with target = \"filter\"",
                        )?;
                        OpSpec::UpdateById { change }
                    }
                    UpdateTarget::Filter => OpSpec::UpdateByFilter {
                        filter: self.fields(document, "filter", &g.filter, true)?,
                        change,
                        many: g.many.unwrap_or(false),
                    },
                }
            }
            OpKind::Remove => OpSpec::Remove {
                filter: self.fields(document, "filter", &g.filter, true)?,
            },
            OpKind::Get => OpSpec::Get,
            OpKind::Rmw => OpSpec::Rmw {
                change: self.change(document)?,
            },
            OpKind::Scan => {
                let max = g.limit.unwrap_or(DEFAULT_SCAN_LIMIT);
                if max < limits::MIN_FIND_LIMIT {
                    return Err(self.err("limit", "a scan of 0 documents reads nothing".into()));
                }
                OpSpec::Scan { max }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Overrides;

    fn build(text: &str) -> Result<RunPlan, ProfileError> {
        let loaded = crate::plan::profile::parse("p.toml", text, "p")?;
        RunPlan::build(&loaded, &Overrides::default())
    }

    const DOC: &str = "[document]\ncity = { choice = [\"a\", \"b\"] }\n";

    #[test]
    fn rate_steps_and_ramps_become_one_group_per_step() {
        let plan = build(&format!("{DOC}[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 4\nstart_delay = \"1s\"\nrate = [100, 250.5]\nstep = \"2s\"\n")).unwrap();
        let g: Vec<_> = plan.groups().collect();
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].name.as_str(), g[1].name.as_str()),
            ("g@100/s", "g@250.5/s")
        );
        assert_eq!((g[0].rate, g[1].rate), (Some(100.0), Some(250.5)));
        assert_eq!(g[1].start_delay, Duration::from_secs(3));
        assert_eq!(g[1].stop, StopAt::Duration(Duration::from_secs(2)));
        assert_eq!((g[0].index, g[1].index), (0, 1));
        let plan = build(&format!("{DOC}[[group]]\nname = \"r\"\nop = \"insert\"\nthreads = 4\nrate = {{ from = 100, to = 1000, over = \"10s\" }}\n")).unwrap();
        let rates: Vec<f64> = plan.groups().map(|g| g.rate.unwrap()).collect();
        assert_eq!(
            rates,
            vec![100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0]
        );
        for (bad, says) in [
            ("rate = [200, 100]\nstep = \"1s\"", "must increase"),
            ("rate = [100, 200]", "needs `step`"),
            (
                "rate = [100, 200]\nstep = \"1s\"\nduration = \"5s\"",
                "remove duration",
            ),
            ("rate = { from = 100 }", "a ramp needs from, to"),
            (
                "rate = 100\nstep = \"1s\"\nduration = \"5s\"",
                "not one rate",
            ),
        ] {
            let e = build(&format!(
                "{DOC}[[group]]\nname = \"g\"\nop = \"insert\"\nthreads = 1\n{bad}\n"
            ))
            .unwrap_err();
            assert!(e.problem.contains(says), "{bad}: {e}");
        }
    }

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
        let loaded = crate::plan::profile::parse("p.toml", &text, "p").unwrap();
        let plan = RunPlan::build(
            &loaded,
            &Overrides {
                threads: Some(2),
                loops: Some(4),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert!(plan
            .groups()
            .all(|g| g.threads == 2 && g.stop == StopAt::Loops(4)));
        assert_eq!(plan.planned_operations(), Some(16));
        assert_eq!(
            plan.groups().nth(1).unwrap().op,
            OpSpec::Find {
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

    #[test]
    fn a_group_name_with_a_control_character_is_refused() {
        let e = build(&format!(
            "{DOC}[[group]]\nname = \"in\\tsert\"\nop = \"insert\"\nthreads = 1\nloops = 1\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "group[0].name");
        assert!(e.problem.contains("in\\tsert"), "{}", e.problem);
        assert!(e.problem.contains("control character"), "{}", e.problem);
    }

    #[test]
    fn a_warm_up_must_leave_part_of_a_timed_group_and_falls_back_to_the_profiles() {
        let group = |extra: &str| {
            format!("{DOC}[[group]]\nname = \"i\"\nop = \"insert\"\nthreads = 1\nduration = \"6s\"\n{extra}")
        };
        let e = build(&group("warmup = \"6s\"\n")).unwrap_err();
        assert_eq!(e.key, "group[0].warmup");
        assert!(
            e.problem.contains("leaves nothing of group `i`'s 6s"),
            "{e}"
        );
        let plan = build(&format!("warmup = \"2s\"\n{}", group(""))).unwrap();
        assert_eq!(plan.groups().next().unwrap().warmup, Duration::from_secs(2));
        let plan = build(&format!("warmup = \"2s\"\n{}", group("warmup = \"1s\"\n"))).unwrap();
        assert_eq!(plan.groups().next().unwrap().warmup, Duration::from_secs(1));
    }
}
