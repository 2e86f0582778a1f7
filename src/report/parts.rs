//! The `parts` table of a merged run: each part's samples, throughput, client CPU and late
//! start, on the console and as `parts.tsv`.

use std::io::Write;

use crate::summary::Summary;

pub(crate) const HEADER: [&str; 8] = [
    "Part",
    "# Samples",
    "Throughput",
    "Client CPU % avg",
    "Client CPU % peak",
    "Late start ms",
    "Host",
    "Directory",
];

/// One line per part, as text cells (`-` for what a part did not measure).
pub(crate) fn lines(s: &Summary) -> Vec<Vec<String>> {
    let opt = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |x| format!("{x:.d$}"));
    s.parts
        .iter()
        .map(|p| {
            vec![
                p.part.to_string(),
                p.samples.to_string(),
                format!("{:.2}", p.throughput),
                opt(p.client_cpu_avg, 1),
                opt(p.client_cpu_peak, 1),
                opt(p.late_start_ms, 1),
                p.host.clone().unwrap_or_else(|| "-".into()),
                p.dir.clone(),
            ]
        })
        .collect()
}

/// `parts.tsv`.
pub(crate) fn render_tsv(s: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", HEADER.join("\t"))?;
    for l in lines(s) {
        writeln!(out, "{}", l.join("\t"))?;
    }
    Ok(())
}

/// The console table, after the summary of a merged run; within `width` (a terminal's), the
/// directory, host and CPU peak go first.
pub(crate) fn render(
    s: &Summary,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if s.parts.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nParts ({} merged; Throughput is each part's TOTAL over its own span):",
        s.parts.len()
    )?;
    let mut all = vec![HEADER.iter().map(|h| h.to_string()).collect()];
    all.extend(lines(s));
    let dropped = [HEADER[7], HEADER[6], HEADER[4], HEADER[5], HEADER[3]];
    super::layout::fitted(&all, &[6, 7], width, &dropped, "parts.tsv", out).map(|_| ())
}
