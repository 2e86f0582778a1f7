//! The console summary: JMeter's Aggregate Report as an aligned table, then failures and the
//! run-to-run spread.

use std::io::Write;

use super::columns::{cells, CLOSED_LOOP_COLUMNS, COLUMNS};
use crate::summary::{Summary, Warning, WarningCode};

pub fn render(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    let with_run = s.runs.len() > 1;
    // In closed loop the service columns repeat the latency ones and the schedule columns are
    // zero: the console leaves them out (summary.tsv and summary.json always have them).
    let open_loop = s.groups.iter().any(|g| g.rate.is_some());
    let shown = if open_loop {
        COLUMNS.len()
    } else {
        CLOSED_LOOP_COLUMNS
    };
    let mut header: Vec<String> = COLUMNS[..shown].iter().map(|c| c.to_string()).collect();
    if with_run {
        header.insert(0, "Run".into());
    }
    let mut lines = vec![header];
    for run in &s.runs {
        for row in &run.rows {
            let mut line = cells(row);
            line.truncate(shown);
            if with_run {
                line.insert(0, run.run.to_string());
            }
            lines.push(line);
        }
    }
    aligned(&lines, &[usize::from(with_run)], out)?;
    for run in &s.runs {
        if let Some(l) = &run.load {
            let prefix = if with_run {
                format!("run {}: ", run.run)
            } else {
                String::new()
            };
            writeln!(
                out,
                "{prefix}load phase (setup.preload, insertMany of {}): {} documents in {:.2} s = {:.1} documents/s",
                l.batch, l.documents, l.secs, l.throughput
            )?;
        }
    }
    writeln!(out, "(times in ms; Throughput in samples/s; Matched = operations that found or wrote a document, Modified = updates that changed one or removes that deleted one)")?;

    for run in &s.runs {
        if run.errors_by_class.is_empty() {
            continue;
        }
        let prefix = if with_run {
            format!("run {}: ", run.run)
        } else {
            String::new()
        };
        writeln!(out)?;
        for (label, classes) in &run.errors_by_class {
            let list: Vec<String> = classes.iter().map(|(c, n)| format!("{c} {n}")).collect();
            writeln!(out, "{prefix}{label} failures: {}", list.join(", "))?;
        }
        for (msg, n) in &run.error_messages {
            writeln!(out, "  {n} x {msg}")?;
        }
    }
    for w in of(s, WarningCode::NoMatch) {
        writeln!(out, "warning: {}: {}", labelled(w, with_run), w.message)?;
    }
    for w in of(s, WarningCode::StoppedEarly) {
        let prefix = match w.run {
            Some(run) if with_run => format!("run {run}: "),
            _ => String::new(),
        };
        writeln!(out, "\nSTOPPED: {prefix}{}", w.message)?;
    }
    latency_model(s, out)?;
    for w in of(s, WarningCode::WarmupExcluded) {
        writeln!(out, "warm-up: {}: {}", labelled(w, with_run), w.message)?;
    }
    super::parts::render(s, out)?;
    for w in of(s, WarningCode::LateStart).chain(of(s, WarningCode::MissingParts)) {
        writeln!(out, "warning: {}", w.message)?;
    }
    resources(s, with_run, out)?;

    if !s.spread.is_empty() {
        writeln!(out, "\nThroughput over {} runs (samples/s):", s.runs.len())?;
        let w = s
            .spread
            .iter()
            .map(|x| x.label.len())
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
    }
    thresholds(s, with_run, out)?;
    let failures: Vec<&Warning> = of(s, WarningCode::Failure).collect();
    if !failures.is_empty() {
        writeln!(out)?;
        for w in failures {
            let prefix = match w.run {
                Some(run) if with_run => format!("run {run}: "),
                _ => String::new(),
            };
            writeln!(out, "FAILED: {prefix}{}", w.message)?;
        }
    }
    if s.interrupted {
        writeln!(out, "\nINTERRUPTED: the numbers above cover only the operations that completed before the stop.")?;
    }
    Ok(())
}

/// The server resource summary: per stage, average / peak of each sampled quantity.
fn resources(s: &Summary, with_run: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if s.resources.is_empty() {
        return Ok(());
    }
    let ap = |a: &crate::summary::resources::AvgPeak, decimals: usize| match (a.avg, a.peak) {
        (Some(avg), Some(peak)) => format!("{avg:.decimals$} / {peak:.decimals$}"),
        _ => "-".to_string(),
    };
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
            r.label.clone(),
            r.seconds.to_string(),
            format!("{:.1}", r.client_ops_s),
            ap(&r.server_ops_s, 0),
            ap(&r.server_cpu_pct, 0),
            ap(&r.iops, 0),
            ap(&r.disk_write_kbs, 0),
            ap(&r.client_cpu_pct, 0),
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
    aligned(&lines, &[usize::from(with_run)], out)?;
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
    {
        writeln!(out, "warning: {}: {}", labelled(w, with_run), w.message)?;
    }
    Ok(())
}

/// Writes `lines` (the first is the header, underlined) as columns two spaces apart: the
/// `left` columns (labels, words) left-aligned, every other one right-aligned.
pub(crate) fn aligned(
    lines: &[Vec<String>],
    left: &[usize],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let columns = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, l) in lines.iter().enumerate() {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                if left.contains(&c) {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            writeln!(out, "{}", rule.join("  "))?;
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
