//! `report.html`: one self-contained page (styles, scripts and data inside it, no network) with
//! the run's header, the summary tables, and interactive charts drawn by the vendored uPlot
//! (`vendor/uplot/`) from the interval log, `resources.tsv` and `members.tsv`: throughput and
//! errors, latency percentiles, the percentile spectrum, active users, the server's and client's
//! resources, and each member of a replica set or cluster, with the topology's events marked.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::metrics::Label;
use crate::monitor::members::MemberRow;
use crate::rundir::RunDir;
use crate::summary::members::MemberSummary;
use crate::summary::run_info::HostInfo;
use crate::summary::Summary;

const UPLOT_JS: &str = include_str!("../../vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../vendor/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../../vendor/uplot/LICENSE");
const REPORT_JS: &str = include_str!("report.js");
const LIVE_JS: &str = include_str!("live.js");
const REPORT_CSS: &str = include_str!("report.css");
const COMPARE_JS: &str = include_str!("compare.js");
const COMMON_JS: &str = include_str!("common.js");
/// First on the page: every script error is shown and recorded (the browser test reads it).
const ERRORS_JS: &str = "window.addEventListener('error', function (e) { var b = document.getElementById('errors'); b.hidden = false; b.textContent += (e.message || String(e)) + '\\n'; document.body.dataset.errors = String((+document.body.dataset.errors || 0) + 1); });";

/// The resources.tsv columns the report charts, with their chart and label.
const RESOURCE_SERIES: [(&str, &str, &str); 26] = [
    ("server_cpu_pct", "cpu", "server CPU %"),
    ("status_cpu_pct", "cpu", "server CPU % (serverStatus)"),
    ("client_cpu_pct", "cpu", "client CPU %"),
    ("host_cpu_pct", "cpu", "host CPU %"),
    ("iops", "iops", "IOPS"),
    ("disk_read_kbs", "disk", "disk read KB/s"),
    ("disk_write_kbs", "disk", "disk write KB/s"),
    ("insert_s", "server_ops", "insert/s"),
    ("query_s", "server_ops", "query/s"),
    ("update_s", "server_ops", "update/s"),
    ("delete_s", "server_ops", "delete/s"),
    ("getmore_s", "server_ops", "getmore/s"),
    ("connections", "connections", "connections"),
    ("cache_used_mb", "cache", "cache used MB"),
    ("cache_dirty_mb", "cache", "cache dirty MB"),
    ("reads_us", "server_latency", "server read us"),
    ("writes_us", "server_latency", "server write us"),
    ("commands_us", "server_latency", "server command us"),
    ("qr", "queues", "queued readers"),
    ("qw", "queues", "queued writers"),
    ("ar", "queues", "active readers"),
    ("aw", "queues", "active writers"),
    ("client_wait_ms", "health", "client wait to run ms/s"),
    ("client_throttled_ms", "health", "client throttled ms/s"),
    ("client_lag_max_ms", "lag", "worst ms"),
    ("client_lag_avg_ms", "lag", "average ms"),
];

/// A `--server-metrics` host's columns the report charts (`column@host`), with chart and label.
const HOST_SERIES: [(&str, &str, &str); 7] = [
    ("node_cpu_pct", "cpu", "host CPU %"),
    ("mongod_cpu_pct", "cpu", "mongod CPU %"),
    ("node_disk_reads_s", "iops", "reads/s"),
    ("node_disk_writes_s", "iops", "writes/s"),
    ("node_disk_write_kbs", "disk", "write KB/s"),
    ("node_net_in_kbs", "network", "in KB/s"),
    ("node_net_out_kbs", "network", "out KB/s"),
];

/// The page's data: what report.js draws.
pub fn data(dir: &RunDir) -> Value {
    let s = &dir.summary;
    let base_ms = dir.base_secs * 1000.0;
    let secs = |ms: f64| ((ms - base_ms) / 1000.0).max(0.0);
    // Each group, then (for a mix) each of its kinds, whose `group:kind` series the interval
    // log holds beside the group's.
    let groups: Vec<Value> = s
        .groups
        .iter()
        .flat_map(|g| {
            std::iter::once(Label::group(&g.name))
                .chain(g.mix.iter().map(|k| Label::kind(&g.name, k.op.clone())))
                .chain(g.steps.iter().map(|k| Label::kind(&g.name, k.as_str())))
                .map(|label| {
                    let name = label.to_string();
                    json!({
                        "tag": crate::metrics::interval::Tag::latency(label.clone()).to_string(),
                        "name": name,
                        "open_loop": g.rate.is_some(),
                        "stage": g.stage,
                        "kind_of": matches!(label, Label::Kind { .. }).then_some(&g.name),
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let runs: Vec<Value> = s
        .runs
        .iter()
        .map(|r| {
            let stages: Vec<Value> = r
                .stages
                .iter()
                .map(|st| {
                    json!({
                        "label": st.label,
                        "began": secs(crate::num::real(st.began_ms)),
                        "start": secs(crate::num::real(st.start_ms)),
                        "end": secs(crate::num::real(st.end_ms)),
                    })
                })
                .collect();
            // Rate steps (`group@RATE/s` rows): where each step's counted operations began
            // (the rows of changes are marked where the change was made, below).
            let steps: Vec<Value> = r
                .rows
                .iter()
                .filter(|row| row.label.is_step() && row.first_start_us > 0 && !r.is_change_row(&row.label))
                .map(|row| json!({ "label": row.label, "at": secs(crate::num::real(row.first_start_us) / 1000.0) }))
                .collect();
            // Each fault as a band from when it was done to when it was over.
            let faults: Vec<Value> = r
                .faults
                .iter()
                .filter(|f| !f.detail.is_empty())
                .map(|f| json!({ "label": f.fault, "from": secs(crate::num::real(f.start_ms)), "to": secs(crate::num::real(f.end_ms)) }))
                .collect();
            // Changes made while it ran (`--live-control`): a marker where each took effect.
            let changes: Vec<Value> = r
                .changes
                .iter()
                .map(|c| json!({ "at": secs(crate::num::real(c.time_ms)), "label": c.text() }))
                .collect();
            // The topology's events (primary and state changes, members added or removed,
            // chunk migrations): a marker where each happened, styled by its kind.
            let topology: Vec<Value> = r
                .topology
                .iter()
                .map(|e| json!({ "at": secs(crate::num::real(e.time_ms)), "kind": e.kind, "label": e.detail }))
                .collect();
            json!({ "run": r.run, "stages": stages, "steps": steps, "faults": faults, "changes": changes, "topology": topology })
        })
        .collect();
    let (intervals, activity) = series(dir, secs);
    json!({
        "header": header(dir),
        "thresholds": thresholds(s),
        "plans": s.plans.iter().map(|p| json!({ "line": p.line(), "collscan": p.collscan })).collect::<Vec<_>>(),
        // Transactions and invariants, as the console says them.
        "checks": s.runs.iter().flat_map(|r| {
            let run = if s.runs.len() > 1 { format!("run {}: ", r.run) } else { String::new() };
            r.rows
                .iter()
                .filter(|row| row.label.group_row().is_some())
                .filter_map(|row| row.transactions.as_ref().map(|t| super::table::transactions_line(&row.label, t)))
                .chain(r.invariants.iter().map(|i| i.line()))
                .map(move |l| format!("{run}{l}"))
                .collect::<Vec<_>>()
        }).collect::<Vec<_>>(),
        // Faults, windows without a success and the write audit, as the console says them.
        "outage": s.runs.iter().filter_map(|r| {
            let prefix = if s.runs.len() > 1 { format!("run {}: ", r.run) } else { String::new() };
            let mut text = Vec::new();
            super::outage::render(r, &prefix, None, &mut text).ok()?;
            (!text.is_empty()).then(|| String::from_utf8_lossy(&text).into_owned())
        }).collect::<Vec<_>>(),
        "summary_tsv": dir.summary_tsv,
        "resources_summary_tsv": dir.resources_summary_tsv,
        "parts_tsv": dir.parts_tsv,
        "spread": s.spread,
        "groups": groups,
        "runs": runs,
        "intervals": intervals,
        "activity": activity,
        "spectrum": spectrum(s),
        "resources": resources(dir),
        "members": dir.members.as_deref().map_or_else(Vec::new, |rows| member_series(rows, dir.base_secs)),
        "members_tsv": members_tsv(s),
    })
}

/// The interval log's series as the charts draw them: `intervals` per tag and `activity` per
/// group, each interval as the part of it its series ran in, and a rate as a count over that
/// part.
fn series(
    dir: &RunDir,
    secs: impl Fn(f64) -> f64,
) -> (BTreeMap<&str, Value>, BTreeMap<&str, Value>) {
    let s = &dir.summary;
    let spans = running_spans(s, secs);
    let spans_of = |tag: &str| spans.get(tag).map(Vec::as_slice).unwrap_or_default();
    let parts = |spans: &[(f64, f64)], list: Vec<(u64, f64, f64)>| {
        let ran = running(&list, spans);
        let col = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<f64> { ran.iter().map(f).collect() };
        (col(|r| r.0), col(|r| r.1), col(|r| r.2))
    };
    let intervals: BTreeMap<&str, Value> = dir
        .intervals
        .iter()
        .map(|(tag, list)| {
            let col = |f: fn(&crate::rundir::IntervalStats) -> f64| -> Vec<f64> {
                list.iter().map(f).collect()
            };
            let (from, to, rate) = parts(
                spans_of(tag),
                list.iter().map(|i| (i.count, i.start, i.length)).collect(),
            );
            (
                tag.as_str(),
                json!({
                    "t": col(|i| i.start + i.length),
                    // The part of each interval the series ran in: its values are drawn over it.
                    "from": from,
                    "to": to,
                    "rate": rate,
                    "count": col(|i| crate::num::real(i.count)),
                    "p50": col(|i| i.p50),
                    "p90": col(|i| i.p90),
                    "p99": col(|i| i.p99),
                    "max": col(|i| i.max),
                }),
            )
        })
        .collect();
    let activity: BTreeMap<&str, Value> = dir
        .activity
        .iter()
        .map(|(tag, list)| {
            // A group's activity counts its warm-up's failures too.
            let warmup = crate::metrics::interval::Tag {
                warmup: true,
                ..crate::metrics::interval::Tag::parse(tag)
            };
            let (from, to, errors) = parts(
                &[spans_of(tag), spans_of(&warmup.to_string())].concat(),
                list.iter().map(|a| (a.errors, a.start, a.length)).collect(),
            );
            (
                tag.as_str(),
                json!({
                    "t": list.iter().map(|a| a.start + a.length).collect::<Vec<_>>(),
                    "from": from,
                    "to": to,
                    "users": list.iter().map(|a| a.users).collect::<Vec<_>>(),
                    "errors": errors,
                }),
            )
        })
        .collect();
    (intervals, activity)
}

/// Less of an interval than this is too short a time for a rate of its own: a few operations
/// over a few milliseconds (and samples are put in the interval they reach the recorder in, a
/// little after they end). Such a piece is taken together with the interval next to it.
const SHORTEST_RATE_SECS: f64 = 0.1;

/// When each series of the interval log ran, per run, in seconds from the log's base: a row's
/// (and its service time's) from its first start to its last end; its warm-up's from the start
/// of its stage to that first start.
fn running_spans(s: &Summary, secs: impl Fn(f64) -> f64) -> BTreeMap<String, Vec<(f64, f64)>> {
    use crate::metrics::interval::{Series, Tag};
    let mut spans: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for run in &s.runs {
        for row in run.rows.iter().filter(|row| row.samples > 0) {
            let from = secs(crate::num::real(row.first_start_us) / 1000.0);
            let to = secs(crate::num::real(row.last_end_us) / 1000.0);
            let began = run
                .stages
                .iter()
                .map(|st| secs(crate::num::real(st.began_ms)))
                .filter(|&b| b <= from)
                .reduce(f64::max);
            for series in [Series::Latency, Series::Service] {
                let mut add = |warmup: bool, span: (f64, f64)| {
                    let tag = Tag::new(row.label.clone(), series, warmup).to_string();
                    spans.entry(tag).or_default().push(span);
                };
                add(false, (from, to));
                if let Some(b) = began {
                    add(true, (b, from));
                }
            }
        }
    }
    spans
}

/// Per interval of a series (its `count`, `start` and `length`): the part of it the series ran
/// in, by the series' `spans`, and its count per second of that part, so that a group that
/// begins or ends inside an interval (after its warm-up, its last loops, its stage's end, the
/// run's short last interval, whose end waits for the run to finish) does not read as a drop.
/// A span's first interval holds all the series did from the span's start, also before the
/// interval's own start (the recorder's first interval starts when its task first runs); the
/// interval right after the one a span ended in holds what reached the recorder late, and is
/// no time of its own. An interval that no span meets otherwise (or of a series without spans)
/// is taken whole. A part shorter than SHORTEST_RATE_SECS joins the one before it (a first one,
/// the one after it), and each shows the rate of the two.
fn running(intervals: &[(u64, f64, f64)], spans: &[(f64, f64)]) -> Vec<(f64, f64, f64)> {
    let part = |k: usize| {
        let (_, start, length) = intervals[k];
        let end = start + length;
        let before = k
            .checked_sub(1)
            .map_or(f64::NEG_INFINITY, |b| intervals[b].1 + intervals[b].2);
        let met = spans
            .iter()
            .map(|&(from, to)| {
                // A span's first interval (none before it reaches the span) that it reaches.
                let first = before <= from && to > start;
                let begin = if first { from } else { start.max(from) };
                (begin, end.min(to))
            })
            .filter(|(begin, end)| end > begin)
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
        let late = || {
            spans
                .iter()
                .find(|&&(from, to)| {
                    from < before && to <= before && (before - start).abs() < 0.005
                })
                .map(|&(_, to)| (to, to))
        };
        met.or_else(late).unwrap_or((start, end))
    };
    let parts: Vec<(f64, f64)> = (0..intervals.len()).map(part).collect();
    // Count and seconds per group of intervals taken together, and each interval's group.
    let mut sums: Vec<(f64, f64)> = Vec::new();
    let mut group = Vec::with_capacity(intervals.len());
    for (k, &(count, start, _)) in intervals.iter().enumerate() {
        let secs = parts[k].1 - parts[k].0;
        // One right after the other (their times are written to the millisecond).
        let joins = k > 0 && {
            let (_, before, before_length) = intervals[k - 1];
            let adjacent = (before + before_length - start).abs() < 0.005;
            let short = secs < SHORTEST_RATE_SECS
                || sums.last().is_some_and(|&(_, s)| s < SHORTEST_RATE_SECS);
            adjacent && short
        };
        if !joins {
            sums.push((0.0, 0.0));
        }
        if let Some(last) = sums.last_mut() {
            last.0 += crate::num::real(count);
            last.1 += secs;
        }
        group.push(sums.len() - 1);
    }
    parts
        .iter()
        .zip(group)
        .map(|(&(from, to), g)| {
            let (count, secs) = sums[g];
            (from, to, if secs > 0.0 { count / secs } else { 0.0 })
        })
        .collect()
}

/// Every threshold of every run, judged: the table under the header.
fn thresholds(s: &Summary) -> Vec<Value> {
    s.runs
        .iter()
        .flat_map(|r| {
            r.thresholds.iter().map(move |t| {
                json!({
                    "run": r.run,
                    "threshold": t.threshold,
                    "value": t.value,
                    "limit": t.limit,
                    "unit": t.unit,
                    "verdict": if t.deferred {
                        "judged by merge"
                    } else if t.aborted {
                        "FAIL (stopped the run)"
                    } else if t.pass {
                        "pass"
                    } else {
                        "FAIL"
                    },
                })
            })
        })
        .collect()
}

/// The run's identity and outcome, in words.
fn header(dir: &RunDir) -> Value {
    let (s, r) = (&dir.summary, &dir.run_info);
    let outcome = s.outcome();
    let host = |h: &HostInfo| {
        format!(
            "{} ({}, {} cores)",
            h.hostname.as_deref().unwrap_or("?"),
            h.os.as_deref().unwrap_or("?"),
            h.cpus
        )
    };
    // A merged run ran on its parts' hosts.
    let hosts: Vec<String> = r
        .parts
        .iter()
        .map(|p| {
            format!(
                "part {} on {} ({} cores)",
                p.index,
                p.host
                    .as_ref()
                    .and_then(|h| h.hostname.as_deref())
                    .unwrap_or("?"),
                p.host.as_ref().map_or(0, |h| h.cpus)
            )
        })
        .collect();
    let kind = match s.server.kind {
        crate::summary::ServerKind::Embedded => "embedded",
        crate::summary::ServerKind::External => "external",
    };
    json!({
        "profile": format!("{} ({})", s.profile, s.origin),
        "description": r.profile.description,
        "seed": s.seed,
        "server": format!("{kind} {} at {}", s.server.version, s.server.uri),
        "host": match (&r.host, hosts.is_empty()) {
            (Some(h), _) => host(h),
            (None, false) => format!("merged from {} parts: {}", hosts.len(), hosts.join(", ")),
            (None, true) => "?".to_string(),
        },
        "command_line": r.command_line.join(" "),
        "tags": crate::history::ledger::tags_cell(&r.tags),
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "duration": duration(&r.started_at, r.finished_at.as_deref()),
        "exit": outcome.words(),
        "exit_code": outcome.exit_code(),
        "tool": s.tool,
        "warnings": s.warnings,
    })
}

/// From start to finish, in words (the RFC 3339 times of run.json).
fn duration(start: &str, end: Option<&str>) -> Option<String> {
    let parse = |v: &str| humantime::parse_rfc3339(v).ok();
    let d = parse(end?)?.duration_since(parse(start)?).ok()?;
    Some(humantime::format_duration(d).to_string())
}

/// Per run and row (groups and TOTAL), HdrHistogram's percentile spectrum of the whole-run
/// histogram: x = 1/(1-p), y = latency in ms.
fn spectrum(s: &Summary) -> Vec<Value> {
    let mut out = Vec::new();
    for run in &s.runs {
        for row in &run.rows {
            // A change's rows are parts of their group's, drawn as that group.
            if row.label.is_stage_total() || row.samples == 0 || run.is_change_row(&row.label) {
                continue;
            }
            let Some(h) = row
                .latency_hdr
                .as_deref()
                .and_then(|e| crate::metrics::decode(e).ok())
            else {
                continue;
            };
            let (x, y) = crate::metrics::group::spectrum(&h);
            out.push(json!({ "run": run.run, "label": row.label, "x": x, "y": y }));
        }
    }
    out
}

fn resources(dir: &RunDir) -> Value {
    let Some(r) = &dir.resources else {
        return Value::Null;
    };
    // Rows from before the log's start (the sampler starts first) are left out.
    let t: Vec<Option<f64>> = r.columns["time_ms"]
        .iter()
        .map(|ms| ms.map(|m| m / 1000.0 - dir.base_secs))
        .collect();
    let keep: Vec<usize> = (0..t.len())
        .filter(|&i| t[i].is_some_and(|x| x >= 0.0))
        .collect();
    let mut hosts: Vec<&str> = r
        .columns
        .keys()
        .filter_map(|c| c.split_once('@').map(|(_, h)| h))
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    let host_series = hosts.iter().flat_map(|h| {
        HOST_SERIES
            .iter()
            .map(move |(col, chart, label)| (format!("{col}@{h}"), *chart, format!("{label} @{h}")))
    });
    let series: Vec<Value> = RESOURCE_SERIES
        .iter()
        .map(|(col, chart, label)| (col.to_string(), *chart, label.to_string()))
        .chain(host_series)
        .filter_map(|(col, chart, label)| {
            let values = r.columns.get(&col)?;
            let values: Vec<Option<f64>> = keep.iter().map(|&i| values[i]).collect();
            values
                .iter()
                .any(Option::is_some)
                .then(|| json!({ "chart": chart, "label": label, "values": values }))
        })
        .collect();
    let t: Vec<Option<f64>> = keep.iter().map(|&i| t[i]).collect();
    json!({ "t": t, "series": series })
}

/// One member's series on the member charts, at seconds from the interval log's base.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct MemberSeries {
    name: String,
    t: Vec<f64>,
    /// Operations per second, every kind together.
    ops: Vec<Option<f64>>,
    /// Replicated operations per second.
    repl: Vec<Option<f64>>,
    /// Seconds behind its primary.
    lag: Vec<Option<f64>>,
    /// Its lag is known in a second it was not the primary: it has a line on the lag chart.
    secondary: bool,
}

/// `members.tsv`'s rows as one series per member, in the order first seen; rows from before
/// the log's base are left out (the sampler starts first), as the resource charts leave them.
fn member_series(rows: &[MemberRow], base_secs: f64) -> Vec<MemberSeries> {
    let mut out: Vec<MemberSeries> = Vec::new();
    for r in rows {
        let t = crate::num::real(r.time_ms) / 1000.0 - base_secs;
        if t < 0.0 {
            continue;
        }
        let name = r.name();
        let at = match out.iter().position(|m| m.name == name) {
            Some(at) => at,
            None => {
                out.push(MemberSeries {
                    name,
                    t: Vec::new(),
                    ops: Vec::new(),
                    repl: Vec::new(),
                    lag: Vec::new(),
                    secondary: false,
                });
                out.len() - 1
            }
        };
        let m = &mut out[at];
        m.t.push(t);
        m.ops.push(r.ops_total());
        m.repl.push(r.repl_ops_s);
        m.lag.push(r.lag_s);
        m.secondary |= r.lag_s.is_some() && r.state.as_deref() != Some("PRIMARY");
    }
    out
}

/// The Members table (as the console's): per run and member its state at the end, seconds
/// answered / sampled, and average / peak operations, replicated operations and lag; none
/// when no run had members.
fn members_tsv(s: &Summary) -> Option<String> {
    let members: Vec<(u32, &MemberSummary)> = s
        .runs
        .iter()
        .flat_map(|r| r.members.iter().map(move |m| (r.run, m)))
        .collect();
    member_lines(&members, s.runs.len() > 1)
}

/// `members_tsv`'s text: a Run column first when there are several runs.
fn member_lines(members: &[(u32, &MemberSummary)], with_run: bool) -> Option<String> {
    let lines = super::table::member_lines(members, with_run)?;
    Some(lines.iter().map(|l| l.join("\t") + "\n").collect())
}

/// The whole page.
pub(crate) fn render(dir: &RunDir) -> String {
    let title = format!("mongo-stress report: {}", dir.summary.profile);
    page(&title, &data(dir), REPORT_JS)
}

/// The live page (`--live`): the report's frame and drawing, its data from the event stream.
pub(crate) fn render_live(data: &Value) -> String {
    page(
        "mongo-stress live",
        data,
        &format!("{REPORT_JS}\n{LIVE_JS}"),
    )
}

/// `compare --html`: both runs' throughput and p99 per interval on shared axes, and the table.
pub(crate) fn render_compare(base: &RunDir, new: &RunDir, table_tsv: &str) -> String {
    let side = |dir: &RunDir| -> Value {
        let first = dir
            .intervals
            .values()
            .flat_map(|l| l.first())
            .map(|i| i.start)
            .fold(f64::INFINITY, f64::min);
        let series: BTreeMap<&str, Value> = dir
            .intervals
            .iter()
            .map(|(tag, list)| {
                (
                    tag.as_str(),
                    json!({
                        "t": list.iter().map(|i| i.start + i.length - first).collect::<Vec<_>>(),
                        "rate": list.iter().map(|i| if i.length > 0.0 { crate::num::real(i.count) / i.length } else { 0.0 }).collect::<Vec<_>>(),
                        "p99": list.iter().map(|i| i.p99).collect::<Vec<_>>(),
                    }),
                )
            })
            .collect();
        json!(series)
    };
    let groups: Vec<Value> = new
        .summary
        .groups
        .iter()
        .map(|g| {
            json!({ "name": g.name, "tag": crate::metrics::interval::Tag::latency(Label::group(&g.name)).to_string() })
        })
        .collect();
    let data = json!({
        "base_name": base.path.display().to_string(),
        "new_name": new.path.display().to_string(),
        "table_tsv": table_tsv,
        "groups": groups,
        "base": side(base),
        "new": side(new),
    });
    page("mongo-stress compare", &data, COMPARE_JS)
}

pub(super) fn page(title: &str, data: &Value, script: &str) -> String {
    let data = serde_json::to_string(data)
        .expect("the page's data is JSON")
        // Inside <script>: no "<" at all, so no string can end the element or open a comment.
        .replace('<', "\\u003c");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
         <style>\n{UPLOT_CSS}\n{REPORT_CSS}\n</style>\n</head>\n<body>\n\
         <div id=\"errors\" hidden></div>\n<main id=\"report\"></main>\n\
         <script>\n{ERRORS_JS}\n</script>\n\
         <script id=\"data\" type=\"application/json\">{data}</script>\n\
         <!-- uPlot, vendored from npm (vendor/uplot/VERSION):\n{}\n-->\n\
         <script>\n{UPLOT_JS}\n</script>\n<script>\n{COMMON_JS}\n</script>\n<script>\n{script}\n</script>\n</body>\n</html>\n",
        escape(title),
        UPLOT_LICENSE.replace("--", "- -"),
    )
}

/// Text made safe inside HTML and its attributes.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests;
