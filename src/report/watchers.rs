//! `sweep --watchers`'s outputs: the console table, `watchers.tsv`, `watchers.json` and
//! `watchers.html` (the writers' throughput and p99, and the listeners' lag, against the
//! number of listeners: drawn as SVG, offline, with no script).

use std::io::Write;

use super::layout::aligned;
use crate::sweep::watchers::{WatchStep, WatchSweep};

const HEADER: [&str; 10] = [
    "Listeners",
    "Writes/s",
    "Write p50 ms",
    "Write p99 ms",
    "Write error %",
    "Lag p50 ms",
    "Lag p99 ms",
    "Expected",
    "Delivered",
    "Missing",
];

fn cells(s: &WatchStep) -> Vec<String> {
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    vec![
        s.listeners.to_string(),
        format!("{:.1}", s.writes_per_s),
        format!("{:.2}", s.write_p50_ms),
        format!("{:.2}", s.write_p99_ms),
        format!("{:.2}", s.write_error_pct),
        ms(s.lag_p50_ms),
        ms(s.lag_p99_ms),
        s.expected.map_or("-".into(), |v| v.to_string()),
        s.delivered.to_string(),
        s.missing.map_or("-".into(), |v| v.to_string()),
    ]
}

/// The console's table, and what each step's writers lost against the first.
pub(crate) fn render(w: &WatchSweep, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "The cost of listening ({}): the writers as the profile has them, the watch groups at each number of listeners",
        w.profile
    )?;
    let mut lines = vec![HEADER.map(String::from).to_vec()];
    lines.extend(w.steps.iter().map(cells));
    aligned(&lines, &[], out)?;
    if let (Some(first), Some(last)) = (w.steps.first(), w.steps.last()) {
        if w.steps.len() > 1 && first.writes_per_s > 0.0 {
            writeln!(
                out,
                "from {} to {} listeners: writes {:+.1} %, write p99 {:.2} -> {:.2} ms",
                first.listeners,
                last.listeners,
                (last.writes_per_s / first.writes_per_s - 1.0) * 100.0,
                first.write_p99_ms,
                last.write_p99_ms
            )?;
        }
    }
    if let Some(why) = &w.stopped {
        writeln!(out, "stopped: {why}")?;
    }
    Ok(())
}

pub(crate) fn render_tsv(w: &WatchSweep, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}\tDirectory", HEADER.join("\t"))?;
    for s in &w.steps {
        writeln!(out, "{}\t{}", cells(s).join("\t"), s.dir)?;
    }
    Ok(())
}

pub(crate) fn render_json(w: &WatchSweep, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, w)?;
    writeln!(out)
}

/// One chart: `points` (x, y) as a line with dots, axes from 0 to the largest value.
fn chart(title: &str, unit: &str, points: &[(f64, f64)]) -> String {
    const W: f64 = 560.0;
    const H: f64 = 220.0;
    const PAD: f64 = 48.0;
    let xmax = points.iter().map(|p| p.0).fold(0.0_f64, f64::max).max(1.0);
    let ymax = points.iter().map(|p| p.1).fold(0.0_f64, f64::max).max(1e-9) * 1.1;
    let x = |v: f64| PAD + v / xmax * (W - 2.0 * PAD);
    let y = |v: f64| H - PAD + -(v / ymax) * (H - 2.0 * PAD);
    let mut svg = format!(
        "<figure><figcaption>{title}</figcaption><svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{title}\">\
<line x1=\"{PAD}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#888\"/><line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{b}\" stroke=\"#888\"/>\
<text x=\"{r}\" y=\"{lb}\" text-anchor=\"end\">listeners</text><text x=\"4\" y=\"{t}\">{ymax_s} {unit}</text><text x=\"4\" y=\"{b}\">0</text>",
        b = H - PAD,
        r = W - PAD,
        lb = H - 12.0,
        t = PAD,
        ymax_s = format_args!("{:.1}", ymax),
    );
    let path: Vec<String> = points
        .iter()
        .map(|(a, v)| format!("{:.1},{:.1}", x(*a), y(*v)))
        .collect();
    svg.push_str(&format!(
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>",
        path.join(" ")
    ));
    for (a, v) in points {
        svg.push_str(&format!(
            "<circle class=\"point\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#1f77b4\"><title>{a} listeners: {v:.2} {unit}</title></circle><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{a}</text>",
            x(*a),
            y(*v),
            x(*a),
            H - PAD + 16.0
        ));
    }
    svg.push_str("</svg></figure>");
    svg
}

/// `watchers.html`: the table and three charts, self-contained.
pub(crate) fn render_html(w: &WatchSweep) -> String {
    let esc = super::html::escape;
    let pts = |f: &dyn Fn(&WatchStep) -> Option<f64>| -> Vec<(f64, f64)> {
        w.steps
            .iter()
            .filter_map(|s| f(s).map(|v| (f64::from(s.listeners), v)))
            .collect()
    };
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>The cost of listening: {p}</title>\
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}figure{{display:inline-block;margin:1em}}text{{font-size:11px}}</style></head><body>\
<h1>The cost of listening: {p}</h1><p>Each step runs the profile as written, its watch groups at that many listeners.</p><table><tr>",
        p = esc(&w.profile)
    );
    for h in HEADER {
        html.push_str(&format!("<th>{h}</th>"));
    }
    html.push_str("</tr>");
    for s in &w.steps {
        html.push_str("<tr>");
        for c in cells(s) {
            html.push_str(&format!("<td>{}</td>", esc(&c)));
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html.push_str(&chart(
        "Writers' throughput",
        "writes/s",
        &pts(&|s| Some(s.writes_per_s)),
    ));
    html.push_str(&chart(
        "Writers' p99",
        "ms",
        &pts(&|s| Some(s.write_p99_ms)),
    ));
    html.push_str(&chart("Listeners' lag p99", "ms", &pts(&|s| s.lag_p99_ms)));
    if let Some(why) = &w.stopped {
        html.push_str(&format!("<p>stopped: {}</p>", esc(why)));
    }
    html.push_str("</body></html>\n");
    html
}
