//! `compare`'s output: the console table, its TSV and its JSON.

use std::io::Write;

use crate::compare::Comparison;

fn change(c: Option<f64>) -> String {
    c.map_or("-".into(), |c| format!("{c:+.1}%"))
}

/// Rows of label, metric, base, new, change, verdict.
fn rows(c: &Comparison) -> Vec<Vec<String>> {
    c.cells
        .iter()
        .map(|x| {
            vec![
                x.label.to_string(),
                x.metric.to_string(),
                format!("{:.2}", x.base),
                format!("{:.2}", x.new),
                change(x.change_pct),
                x.verdict.words().to_string(),
            ]
        })
        .collect()
}

const HEADER: [&str; 6] = ["Label", "Metric", "Base", "New", "Change", "Verdict"];

pub fn table(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    let noise = c.cells.first().map_or("intervals", |x| x.noise.as_str());
    writeln!(out, "base: {}\nnew:  {}", c.base, c.new)?;
    writeln!(
        out,
        "(times in ms, throughput in samples/s; noise {})\n",
        if noise == "runs" {
            "from the spread of the runs of --repeat on both sides"
        } else {
            "from a seeded bootstrap of the per-interval values in latency.hlog, within each run only: use --repeat on both sides for the run-to-run noise"
        }
    )?;
    let mut lines = vec![HEADER.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(rows(c));
    // Label, metric and verdict are words; the rest numbers.
    super::layout::aligned(&lines, &[0, 1, 5], out)?;
    if !c.gates.is_empty() {
        writeln!(out)?;
        for g in &c.gates {
            writeln!(
                out,
                "gate {}: {} (change {}, {})",
                g.gate,
                if g.pass { "pass" } else { "FAILED" },
                change(g.change_pct),
                g.verdict.words()
            )?;
        }
        let failed = c.gates.iter().filter(|g| !g.pass).count();
        if failed > 0 {
            writeln!(out, "GATES FAILED: {failed} (exit 4)")?;
        }
    }
    Ok(())
}

pub fn tsv(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", HEADER.join("\t"))?;
    for r in rows(c) {
        writeln!(out, "{}", r.join("\t"))?;
    }
    Ok(())
}

pub fn json(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, c)?;
    writeln!(out)
}
