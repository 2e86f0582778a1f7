//! What `capacity` shows and writes: the table of steps on the console, `capacity.tsv`,
//! `capacity.json`, and `capacity.html` (latency against achieved throughput).

use std::io::Write;

use serde::Serialize;

use crate::capacity::Step;

/// The result of a capacity search, as written.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CapacityResult {
    pub(crate) profile: String,
    pub(crate) slo: Vec<String>,
    pub(crate) error_pct: f64,
    /// The highest offered rate that held below every rate that failed.
    pub(crate) knee: Option<f64>,
    /// In the order they ran.
    pub(crate) steps: Vec<Step>,
    pub(crate) warnings: Vec<String>,
    pub(crate) interrupted: bool,
}

pub(crate) const HEADER: [&str; 10] = [
    "Offered/s",
    "Achieved/s",
    "p50 ms",
    "p99 ms",
    "Error %",
    "Server CPU %",
    "Client CPU %",
    "Late",
    "Held",
    "Why not",
];

fn cells(s: &Step) -> Vec<String> {
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
    vec![
        format!("{:.1}", s.offered),
        format!("{:.1}", s.achieved),
        format!("{:.2}", s.p50_ms),
        format!("{:.2}", s.p99_ms),
        format!("{:.2}", s.error_pct),
        opt(s.server_cpu_pct),
        opt(s.client_cpu_pct),
        s.late.to_string(),
        if s.held { "yes" } else { "no" }.to_string(),
        s.why.join("; "),
    ]
}

fn sorted(r: &CapacityResult) -> Vec<&Step> {
    let mut steps: Vec<&Step> = r.steps.iter().collect();
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    steps
}

/// The console: the steps by offered rate, the knee, the warnings.
pub(crate) fn render(r: &CapacityResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\nCapacity of `{}` within {} (steps by offered rate):",
        r.profile,
        r.slo.join(", ")
    )?;
    let mut lines = vec![HEADER.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(sorted(r).into_iter().map(cells));
    super::layout::aligned(&lines, &[9], out)?;
    match r.knee {
        Some(k) => writeln!(out, "knee: {k:.1} operations/s, the highest offered rate that held the SLO (the search stops when the rates that held and failed are within 5 %)")?,
        None => writeln!(out, "no step held the SLO: the deployment does not hold it even at the lowest rate tried")?,
    }
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    if r.interrupted {
        writeln!(out, "interrupted: the steps above are those that completed")?;
    }
    Ok(())
}

/// `capacity.tsv`: one line per step in the order they ran.
pub(crate) fn render_tsv(r: &CapacityResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "Step\t{}", HEADER.join("\t"))?;
    for (i, s) in r.steps.iter().enumerate() {
        writeln!(out, "{}\t{}", i + 1, cells(s).join("\t").replace('\n', " "))?;
    }
    Ok(())
}

pub(crate) fn render_json(r: &CapacityResult, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    writeln!(out)
}

/// `capacity.html`.
pub(crate) fn render_html(r: &CapacityResult) -> String {
    let data = serde_json::to_value(r).unwrap_or_default();
    super::html::page(
        &format!("mongo-stress capacity: {}", r.profile),
        &data,
        include_str!("capacity.js"),
    )
}
