//! The console summary: JMeter's Aggregate Report as an aligned table, then failures and the
//! run-to-run spread. Within a width (a terminal's), the columns that do not fit are left out and
//! named, and prose is wrapped; without one (a pipe, a file, `--wide`), everything as it is.

use std::io::Write;

use super::columns::{
    cells, CLOSED_LOOP_COLUMNS, COLUMNS, DOC_COLUMNS, JMETER_COLUMNS, TX_COLUMNS,
};
use super::layout::{aligned, fitted, Wrapped};
use crate::summary::{Summary, Warning, WarningCode};

/// The JMeter columns left out first when even they do not fit, in that order: the byte rates
/// (approximate, and the least looked at in a database test), then Min, 95% (between 90 and 99),
/// 90%, and last Max (it shows a stall). Label, # Samples, Average, Median, 99% Line, Error %
/// and Throughput always stay.
const JMETER_DROPPED: [&str; 6] = [
    "Sent KB/sec",
    "Received KB/sec",
    "Min",
    "95% Line",
    "90% Line",
    "Max",
];

/// The whole summary, every column (as in a pipe or a file).
pub fn render(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    render_within(s, None, out)
}

/// The summary within `width` columns (a terminal's), or whole when None.
pub(crate) fn render_within(
    s: &Summary,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match width {
        None => body(s, None, out),
        Some(w) => {
            let mut wrapped = Wrapped::new(out, w);
            body(s, Some(w), &mut wrapped)?;
            wrapped.finish()
        }
    }
}

/// `transactions transfer: 17233 committed, 101 aborted, 0 in doubt; 4959 retries ...`.
pub(crate) fn transactions_line(
    label: &crate::metrics::Label,
    t: &crate::metrics::row::TxCounts,
) -> String {
    let most = t.retried.keys().next_back().copied().unwrap_or(0);
    let mut retried: Vec<String> = t
        .retried
        .iter()
        .take(4)
        .map(|(k, n)| format!("{n} x {k}"))
        .collect();
    if t.retried.len() > 4 {
        retried.push(format!("... at most {most}"));
    }
    format!(
        "transactions {label}: {} committed, {} aborted, {} in doubt; {} retries of the whole transaction (transactions x retries: {}), {} of the commit",
        t.committed,
        t.aborted,
        t.in_doubt,
        t.retries,
        retried.join(", "),
        t.commit_retries
    )
}

/// The whole console summary: the table, then each note, warning and failure below it.
fn body(s: &Summary, width: Option<usize>, out: &mut dyn Write) -> std::io::Result<()> {
    let with_run = s.runs.len() > 1;
    let left_out = table(s, with_run, width, out)?;
    run_notes(s, with_run, width, out)?;
    legend(&left_out, out)?;
    failures_by_class(s, with_run, out)?;
    for w in of(s, WarningCode::NoMatch) {
        writeln!(out, "warning: {}: {}", labelled(w, with_run), w.message)?;
    }
    for w in of(s, WarningCode::StoppedEarly) {
        writeln!(
            out,
            "\nSTOPPED: {}{}",
            run_prefix(w.run, with_run),
            w.message
        )?;
    }
    latency_model(s, out)?;
    for w in of(s, WarningCode::WarmupExcluded) {
        writeln!(out, "warm-up: {}: {}", labelled(w, with_run), w.message)?;
    }
    super::parts::render(s, width, out)?;
    for w in of(s, WarningCode::LateStart).chain(of(s, WarningCode::MissingParts)) {
        writeln!(out, "warning: {}", w.message)?;
    }
    resources(s, with_run, width, out)?;
    members(s, with_run, width, out)?;
    spread(s, out)?;
    thresholds(s, with_run, out)?;
    let failures: Vec<&Warning> = of(s, WarningCode::Failure).collect();
    if !failures.is_empty() {
        writeln!(out)?;
        for w in failures {
            writeln!(out, "FAILED: {}{}", run_prefix(w.run, with_run), w.message)?;
        }
    }
    if s.interrupted {
        writeln!(out, "\nINTERRUPTED: the numbers above cover only the operations that completed before the stop.")?;
    }
    Ok(())
}

/// `run N: ` before a line about run N, when there are several runs; nothing otherwise.
fn run_prefix(run: Option<u32>, with_run: bool) -> String {
    match run {
        Some(run) if with_run => format!("run {run}: "),
        _ => String::new(),
    }
}

/// The indexes in `COLUMNS` of the columns the console shows for `s`.
fn kept_columns(s: &Summary) -> Vec<usize> {
    // In closed loop the service columns repeat the latency ones and the schedule columns are
    // zero: the console leaves them out (summary.tsv and summary.json always have them).
    let open_loop = s.groups.iter().any(|g| g.rate.is_some());
    let shown = if open_loop {
        DOC_COLUMNS
    } else {
        CLOSED_LOOP_COLUMNS
    };
    // A profile's own operations move documents in batches and cursors: their counts are shown.
    let docs = s.groups.iter().any(|g| !g.operations.is_empty());
    let transactions = s
        .runs
        .iter()
        .any(|r| r.rows.iter().any(|row| row.transactions.is_some()));
    (0..shown)
        .chain(if docs { DOC_COLUMNS..TX_COLUMNS } else { 0..0 })
        .chain(if transactions {
            TX_COLUMNS..COLUMNS.len()
        } else {
            0..0
        })
        .collect()
}

/// Writes the table of rows within `width`; returns the columns it left out.
fn table(
    s: &Summary,
    with_run: bool,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<Vec<String>> {
    let keep = kept_columns(s);
    let mut header: Vec<String> = keep.iter().map(|&i| COLUMNS[i].to_string()).collect();
    if with_run {
        header.insert(0, "Run".into());
    }
    let mut lines = vec![header];
    for run in &s.runs {
        for row in &run.rows {
            let all = cells(row);
            let mut line: Vec<String> = keep.iter().map(|&i| all[i].clone()).collect();
            if with_run {
                line.insert(0, run.run.to_string());
            }
            lines.push(line);
        }
    }
    // Every column past JMeter's goes before any of JMeter's, the right-most first.
    let dropped: Vec<&str> = keep
        .iter()
        .filter(|&&i| i >= JMETER_COLUMNS)
        .map(|&i| &COLUMNS[i])
        .rev()
        .chain(&JMETER_DROPPED)
        .copied()
        .collect();
    fitted(
        &lines,
        &[usize::from(with_run)],
        width,
        &dropped,
        "summary.tsv",
        out,
    )
}

/// Per run: each group's transactions, the invariants and the outages; then each run's load
/// phase.
fn run_notes(
    s: &Summary,
    with_run: bool,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for run in &s.runs {
        let prefix = run_prefix(Some(run.run), with_run);
        // Per group (the totals would repeat them).
        for row in run.rows.iter().filter(|r| r.label.group_row().is_some()) {
            if let Some(t) = &row.transactions {
                writeln!(out, "{prefix}{}", transactions_line(&row.label, t))?;
            }
        }
        for i in &run.invariants {
            writeln!(out, "{prefix}{}", i.line())?;
        }
        super::outage::render(run, &prefix, width, out)?;
    }
    for run in &s.runs {
        if let Some(l) = &run.load {
            let prefix = run_prefix(Some(run.run), with_run);
            writeln!(
                out,
                "{prefix}load phase (setup.preload, insertMany of {}): {} documents in {:.2} s = {:.1} documents/s",
                l.batch, l.documents, l.secs, l.throughput
            )?;
        }
    }
    Ok(())
}

/// What the table's units and counts mean, for the columns it shows (all but `left_out`).
fn legend(left_out: &[String], out: &mut dyn Write) -> std::io::Result<()> {
    if left_out.is_empty() {
        writeln!(out, "(times in ms; Throughput in samples/s; Matched = operations that found or wrote a document, Modified = updates that changed one or removes that deleted one)")?;
    } else {
        // Only what the table shows is explained.
        let mut legend = vec!["times in ms", "Throughput in samples/s"];
        let shows = |c: &str| !left_out.iter().any(|l| l == c);
        if shows("Matched") {
            legend.push("Matched = operations that found or wrote a document");
        }
        if shows("Modified") {
            legend.push("Modified = updates that changed one or removes that deleted one");
        }
        writeln!(out, "({})", legend.join("; "))?;
    }
    Ok(())
}

/// Each run's failures per label and class, then its error messages with their counts.
fn failures_by_class(s: &Summary, with_run: bool, out: &mut dyn Write) -> std::io::Result<()> {
    for run in &s.runs {
        if run.errors_by_class.is_empty() {
            continue;
        }
        let prefix = run_prefix(Some(run.run), with_run);
        writeln!(out)?;
        for (label, classes) in &run.errors_by_class {
            let list: Vec<String> = classes.iter().map(|(c, n)| format!("{c} {n}")).collect();
            writeln!(out, "{prefix}{label} failures: {}", list.join(", "))?;
            // One line per kind (class and server code), its first message once.
            for f in run.error_kinds.iter().filter(|f| &f.label == label) {
                writeln!(
                    out,
                    "  {} x ({:.1} % of {label}'s operations) {}{}: {}",
                    f.count,
                    f.share_pct,
                    f.class,
                    // The message is the first one's: the others may differ in a document's _id.
                    if f.count > 1 { ", the first" } else { "" },
                    f.message
                )?;
            }
        }
    }
    Ok(())
}

/// The run-to-run spread of throughput per label, when there are several runs.
fn spread(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    if s.spread.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nThroughput over {} runs (samples/s):", s.runs.len())?;
    let w = s
        .spread
        .iter()
        .map(|x| x.label.to_string().len())
        .max()
        .unwrap_or(5)
        .max(5);
    writeln!(
        out,
        "{:<w$}  {:>10}  {:>10}  {:>10}  {:>10}  {:>6}",
        "Label", "Mean", "Min", "Max", "Std. Dev.", "CV %"
    )?;
    for x in &s.spread {
        writeln!(
            out,
            "{:<w$}  {:>10.2}  {:>10.2}  {:>10.2}  {:>10.2}  {:>6.1}",
            x.label, x.mean, x.min, x.max, x.stddev, x.cv_pct
        )?;
    }
    Ok(())
}

/// The server resource summary: per stage, average / peak of each sampled quantity.
fn resources(
    s: &Summary,
    with_run: bool,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if s.resources.is_empty() {
        return Ok(());
    }
    let mut lines = vec![vec![
        "Run".to_string(),
        "Label".into(),
        "Seconds".into(),
        "Client ops/s".into(),
        "Server ops/s".into(),
        "Server CPU %".into(),
        "IOPS".into(),
        "Disk write KB/s".into(),
        "Client CPU %".into(),
    ]];
    for r in &s.resources {
        lines.push(vec![
            r.run.to_string(),
            r.label.to_string(),
            r.seconds.to_string(),
            format!("{:.1}", r.client_ops_s),
            avg_peak(&r.server_ops_s, 0),
            avg_peak(&r.server_cpu_pct, 0),
            avg_peak(&r.iops, 0),
            avg_peak(&r.disk_write_kbs, 0),
            avg_peak(&r.client_cpu_pct, 0),
        ]);
    }
    if !with_run {
        for l in &mut lines {
            l.remove(0);
        }
    }
    writeln!(
        out,
        "\nServer resources, sampled every second (average / peak over each stage):"
    )?;
    fitted(
        &lines,
        &[usize::from(with_run)],
        width,
        &[
            "Seconds",
            "Disk write KB/s",
            "IOPS",
            "Client CPU %",
            "Server CPU %",
        ],
        "resources-summary.tsv",
        out,
    )?;
    writeln!(out, "(Server ops/s = serverStatus opcounters insert + query + update + delete; CPU % of one core; - = not measurable here)")?;
    for (what, sources) in [
        (
            "Server CPU",
            s.resources
                .iter()
                .map(|r| &r.cpu_source)
                .collect::<Vec<_>>(),
        ),
        (
            "IOPS and disk",
            s.resources.iter().map(|r| &r.disk_source).collect(),
        ),
    ] {
        let mut named: Vec<&str> = Vec::new();
        for s in sources.into_iter().flatten() {
            if !named.contains(&s.as_str()) {
                named.push(s);
            }
        }
        if !named.is_empty() {
            // Stages may differ (resources-summary.tsv names each stage's).
            writeln!(out, "{what} from {}", named.join("; "))?;
        }
    }
    for w in of(s, WarningCode::MetricsSource) {
        writeln!(out, "note: {}", w.message)?;
    }
    for w in of(s, WarningCode::LoadGenerator)
        .chain(of(s, WarningCode::TooShortToSample))
        .chain(of(s, WarningCode::StatusMissed))
        .chain(of(s, WarningCode::SamplingGap))
    {
        writeln!(out, "warning: {}: {}", labelled(w, with_run), w.message)?;
    }
    Ok(())
}

/// `avg / peak` with `decimals`, or `-` when either is not known.
pub(crate) fn avg_peak(a: &crate::summary::resources::AvgPeak, decimals: usize) -> String {
    match (a.avg, a.peak) {
        (Some(avg), Some(peak)) => format!("{avg:.decimals$} / {peak:.decimals$}"),
        _ => "-".to_string(),
    }
}

/// The Members table, the console's and report.html's: a header, then per run and member its
/// state at the end, seconds answered / sampled, and average / peak operations, replicated
/// operations and lag (a Run column first with several runs); none without members.
pub(crate) fn member_lines(
    members: &[(u32, &crate::summary::members::MemberSummary)],
    with_run: bool,
) -> Option<Vec<Vec<String>>> {
    if members.is_empty() {
        return None;
    }
    let run = |r: String| if with_run { vec![r] } else { Vec::new() };
    let header = ["Member", "State", "Seconds", "Ops/s", "Repl ops/s", "Lag s"].map(String::from);
    let mut lines = vec![run("Run".into()).into_iter().chain(header).collect()];
    for (r, m) in members {
        let cells = [
            m.name(),
            m.state.clone().unwrap_or_else(|| "-".into()),
            format!("{}/{}", m.answered, m.seconds),
            avg_peak(&m.ops_s, 0),
            avg_peak(&m.repl_ops_s, 0),
            avg_peak(&m.lag_s, 1),
        ];
        lines.push(run(r.to_string()).into_iter().chain(cells).collect());
    }
    Some(lines)
}

/// Each member of a replica set or cluster per run (average / peak), then the topology's
/// events; the members' warnings even when none was found.
fn members(
    s: &Summary,
    with_run: bool,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for w in of(s, WarningCode::Members) {
        writeln!(out, "warning: {}", w.message)?;
    }
    if s.runs
        .iter()
        .all(|r| r.members.is_empty() && r.topology.is_empty())
    {
        return Ok(());
    }
    let members: Vec<(u32, &crate::summary::members::MemberSummary)> = s
        .runs
        .iter()
        .flat_map(|r| r.members.iter().map(move |m| (r.run, m)))
        .collect();
    if let Some(lines) = member_lines(&members, with_run) {
        writeln!(
            out,
            "\nMembers, each sampled every second on its own connection (average / peak over the run):"
        )?;
        fitted(
            &lines,
            &[usize::from(with_run)],
            width,
            &["Seconds", "Repl ops/s"],
            "members.tsv",
            out,
        )?;
        writeln!(out, "(Seconds = answered / sampled; Ops/s = serverStatus opcounters, every kind; Lag = seconds behind the primary, from its replSetGetStatus)")?;
    }
    for r in &s.runs {
        let prefix = run_prefix(Some(r.run), with_run);
        for e in &r.topology {
            writeln!(out, "{prefix}topology: {}", e.line())?;
        }
    }
    Ok(())
}

/// Says from when latency is measured, and where an open-loop group fell behind its schedule.
fn latency_model(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    let paced: Vec<_> = s.groups.iter().filter(|g| g.rate.is_some()).collect();
    if paced.is_empty() {
        writeln!(out, "Closed loop: no rate set, each user sends its next operation when the previous one ends; latency is from the actual start (Service columns equal the latency ones).")?;
        return Ok(());
    }
    let names: Vec<String> = paced
        .iter()
        .map(|g| format!("{} at {}/s", g.name, g.rate.unwrap_or(0.0)))
        .collect();
    writeln!(out, "Open loop ({}): latency is from each operation's intended start, so waiting behind a slow server counts; the Service columns are from the actual start.", names.join(", "))?;
    let with_run = s.runs.len() > 1;
    for w in s.warnings.iter().filter(|w| {
        matches!(
            w.code,
            WarningCode::RateNotReached | WarningCode::LateOperations
        )
    }) {
        if w.code == WarningCode::RateNotReached {
            write!(out, "warning: ")?;
        }
        writeln!(out, "{}: {}", labelled(w, with_run), w.message)?;
    }
    Ok(())
}

/// The warnings of one code, in the order they were computed.
fn of(s: &Summary, code: WarningCode) -> impl Iterator<Item = &Warning> {
    s.warnings.iter().filter(move |w| w.code == code)
}

/// `run N label` (the run only with several) or what of it the warning has.
fn labelled(w: &Warning, with_run: bool) -> String {
    let run = w.run.filter(|_| with_run).map(|r| format!("run {r} "));
    format!(
        "{}{}",
        run.unwrap_or_default(),
        w.label.as_deref().unwrap_or("")
    )
}

/// Each threshold, judged per run: value, limit and pass or FAIL.
fn thresholds(s: &Summary, with_run: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if s.runs.iter().all(|r| r.thresholds.is_empty()) {
        return Ok(());
    }
    let mut lines = vec![vec![
        "Run".to_string(),
        "Threshold".into(),
        "Value".into(),
        "Result".into(),
    ]];
    for run in &s.runs {
        for t in &run.thresholds {
            lines.push(vec![
                run.run.to_string(),
                t.threshold.clone(),
                format!(
                    "{:.2}{}",
                    t.value,
                    if t.unit.is_empty() { "" } else { &t.unit }
                ),
                match (t.pass, t.aborted) {
                    _ if t.deferred => "judged by merge (a part has a share of the load)".into(),
                    (true, _) => "pass".into(),
                    (false, false) => "FAIL".into(),
                    (false, true) => "FAIL (stopped the run)".into(),
                },
            ]);
        }
    }
    if !with_run {
        for l in &mut lines {
            l.remove(0);
        }
    }
    writeln!(
        out,
        "\nThresholds (on what the summary counts; the warm-up excluded):"
    )?;
    aligned(&lines, &[usize::from(with_run)], out)?;
    let failed = s
        .runs
        .iter()
        .flat_map(|r| &r.thresholds)
        .filter(|t| !t.pass)
        .count();
    if failed > 0 {
        writeln!(out, "THRESHOLDS FAILED: {failed} (exit 4)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
