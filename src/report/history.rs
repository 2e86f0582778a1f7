//! `history`'s outputs: the console (change points newest first, each series' last stable
//! mean, the `--fail-on-new` gate), `history.tsv` (the change points), `history.json`
//! (everything: runs, every series' values and change points) and `history.html` (a chart per
//! series, the runs on the x axis, each change point marked with its means before and after,
//! each point a link to its run's report.html: SVG, offline, no script).

use std::io::Write;

use super::layout::aligned;
use crate::history::{Found, History, RunPoint, Series};

const CHANGES: [&str; 10] = [
    "Run", "Started", "Tags", "Profile", "Label", "Metric", "Before", "After", "Change", "p-value",
];

fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn pct(p: Option<f64>) -> String {
    p.map_or("-".into(), |p| format!("{p:+.1} %"))
}

fn pvalue(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

fn tags(r: &RunPoint) -> String {
    crate::history::ledger::tags_cell(&r.tags)
}

/// The change points of every series, newest first (then by series order).
fn newest_first(h: &History) -> Vec<(&Series, &Found)> {
    let mut all: Vec<(usize, &Series, &Found)> = h
        .series
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.change_points.iter().map(move |f| (i, s, f)))
        .collect();
    all.sort_by(|a, b| b.2.run.cmp(&a.2.run).then(a.0.cmp(&b.0)));
    all.into_iter().map(|(_, s, f)| (s, f)).collect()
}

/// A series' profile, with its plan only when the profile ran several in this history (each
/// profile's plans are said once, above the tables).
fn series_name(h: &History, s: &Series) -> String {
    if plans_of(h, &s.profile).len() > 1 {
        format!("{} [{}]", s.profile, s.plan)
    } else {
        s.profile.clone()
    }
}

fn plans_of<'a>(h: &'a History, profile: &str) -> Vec<&'a str> {
    let mut plans: Vec<&str> = Vec::new();
    for s in h.series.iter().filter(|s| s.profile == profile) {
        if !plans.contains(&s.plan.as_str()) {
            plans.push(&s.plan);
        }
    }
    plans
}

/// Each profile and its plans, in the order of the series.
fn profiles(h: &History) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in &h.series {
        if !out.iter().any(|(p, _)| *p == s.profile) {
            out.push((&s.profile, plans_of(h, &s.profile)));
        }
    }
    out
}

fn change_cells(h: &History, s: &Series, f: &Found) -> Vec<String> {
    let run = &h.runs[f.run - 1];
    vec![
        f.run.to_string(),
        run.started_at.clone(),
        tags(run),
        series_name(h, s),
        s.label.clone(),
        format!("{} ({})", s.metric.name(), s.metric.unit()),
        num(f.mean_before),
        num(f.mean_after),
        pct(f.change_pct),
        pvalue(f.pvalue),
    ]
}

pub(crate) fn render(h: &History, out: &mut dyn Write) -> std::io::Result<()> {
    let (first, last) = (h.runs.first(), h.runs.last());
    writeln!(
        out,
        "history: {} runs ({} to {}), ordered {}; {} series",
        h.runs.len(),
        first.map_or("", |r| r.started_at.as_str()),
        last.map_or("", |r| r.started_at.as_str()),
        h.order,
        h.series.len()
    )?;
    writeln!(
        out,
        "method: {}; a change point has p < {} and changes the mean by more than {} %, window {} runs",
        h.method, h.pvalue, h.min_change, h.window
    )?;
    for (profile, plans) in profiles(h) {
        writeln!(out, "plan of {profile}: [{}]", plans.join("], ["))?;
    }
    for n in &h.notes {
        writeln!(out, "note: {n}")?;
    }
    writeln!(out)?;
    let found = newest_first(h);
    if found.is_empty() {
        writeln!(out, "Change points: none")?;
    } else {
        writeln!(out, "Change points, newest first")?;
        let mut header: Vec<String> = CHANGES.iter().map(|c| c.to_string()).collect();
        header.push("Verdict".into());
        let mut lines = vec![header];
        for (s, f) in &found {
            let mut cells = change_cells(h, s, f);
            cells.push(if f.better { "better" } else { "worse" }.into());
            lines.push(cells);
        }
        aligned(&lines, &[1, 2, 3, 4, 5, 10], out)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Series, each since its last change point (Noise: its runs' standard deviation over their mean; a --min-change below it finds noise)"
    )?;
    let mut lines = vec![[
        "Profile",
        "Label",
        "Metric",
        "Runs",
        "Change points",
        "Stable mean",
        "Noise",
        "Since run",
    ]
    .map(String::from)
    .to_vec()];
    for s in &h.series {
        lines.push(vec![
            series_name(h, s),
            s.label.clone(),
            format!("{} ({})", s.metric.name(), s.metric.unit()),
            s.runs.len().to_string(),
            s.change_points.len().to_string(),
            num(s.stable_mean),
            s.noise_pct.map_or("-".into(), |n| format!("{n:.1} %")),
            s.stable_since.to_string(),
        ]);
    }
    aligned(&lines, &[0, 1, 2], out)?;
    Ok(())
}

/// The `--fail-on-new` gate's lines.
pub(crate) fn render_gate(h: &History, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out)?;
    let noise = |c: &crate::history::NewChange| {
        c.noise_pct
            .map_or("noise before it unknown: one run".to_string(), |n| {
                format!("noise before it {n:.1} %")
            })
    };
    // `SERIES: VERDICT: run N starts a change for the worse, A -> B (change C, p P`
    let worse = |c: &crate::history::NewChange, verdict: &str| {
        format!(
            "gate --fail-on-new: {}: {verdict}: run {} starts a change for the worse, {} -> {} (change {}, p {}",
            c.series,
            c.run,
            num(c.mean_before),
            num(c.mean_after),
            pct(c.change_pct),
            pvalue(c.pvalue)
        )
    };
    for c in &h.within_noise {
        writeln!(
            out,
            "{}), within {} times the noise of the runs before it ({})",
            worse(c, "pass"),
            crate::history::NOISE_MULTIPLE,
            noise(c)
        )?;
    }
    if h.new_changes.is_empty() {
        writeln!(
            out,
            "gate --fail-on-new: pass (run {} starts no change point for the worse beyond --min-change {}% and {} times its noise)",
            h.runs.len(),
            h.min_change,
            crate::history::NOISE_MULTIPLE
        )?;
        return Ok(());
    }
    for c in &h.new_changes {
        writeln!(out, "{}; {})", worse(c, "FAILED"), noise(c))?;
    }
    writeln!(out, "GATES FAILED: {} (exit 4)", h.new_changes.len())
}

/// `history.tsv`: one line per change point, newest first.
pub(crate) fn render_tsv(h: &History, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}\tPlan\tVerdict\tRun id", CHANGES.join("\t"))?;
    for (s, f) in newest_first(h) {
        let mut cells = change_cells(h, s, f);
        cells[3] = s.profile.clone();
        cells[5] = s.metric.name().into();
        cells[6] = format!("{}", f.mean_before);
        cells[7] = format!("{}", f.mean_after);
        cells[8] = f.change_pct.map_or(String::new(), |c| format!("{c:.3}"));
        cells[9] = format!("{}", f.pvalue);
        cells.push(s.plan.clone());
        cells.push(if f.better { "better" } else { "worse" }.into());
        cells.push(h.runs[f.run - 1].id.clone());
        let cells: Vec<String> = cells.iter().map(|c| c.replace(['\t', '\n'], " ")).collect();
        writeln!(out, "{}", cells.join("\t"))?;
    }
    Ok(())
}

pub(crate) fn render_json(h: &History, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, h)?;
    writeln!(out)
}

use super::html::escape as esc;

/// One series' chart: its runs on the x axis, the values as a line of dots (each a link to its
/// run's report), each stable stretch's mean as a dashed line, each change point a red line
/// with its means before and after.
fn chart(h: &History, s: &Series) -> String {
    const W: f64 = 720.0;
    const H: f64 = 240.0;
    const PAD: f64 = 56.0;
    let n = s.values.len();
    let top = s.values.iter().copied().fold(0.0_f64, f64::max).max(1e-9) * 1.15;
    let x = |i: usize| {
        PAD + (crate::num::real_len(i) + 0.5) / crate::num::real_len(n) * (W - 2.0 * PAD)
    };
    let y = |v: f64| H - PAD - v / top * (H - 2.0 * PAD);
    let title = format!(
        "{} [{}] {}: {} ({})",
        s.profile,
        s.plan,
        s.label,
        s.metric.name(),
        s.metric.unit()
    );
    let mut svg = format!(
        "<figure class=\"series\"><figcaption>{t}</figcaption><svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\">\
<line x1=\"{PAD}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#888\"/><line x1=\"{PAD}\" y1=\"{PAD}\" x2=\"{PAD}\" y2=\"{b}\" stroke=\"#888\"/>\
<text x=\"{r}\" y=\"{lb}\" text-anchor=\"end\">run</text><text x=\"4\" y=\"{PAD}\">{ymax}</text><text x=\"4\" y=\"{b}\">0</text>",
        t = esc(&title),
        b = H - PAD,
        r = W - PAD,
        lb = H - 10.0,
        ymax = esc(&num(top)),
    );
    // Each stretch between change points: its mean.
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(s.change_points.iter().map(|f| f.at));
    bounds.push(n);
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b > a {
            let mean = s.values[a..b].iter().sum::<f64>() / crate::num::real_len(b - a);
            svg.push_str(&format!(
                "<line class=\"mean\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#2ca02c\" stroke-dasharray=\"4 3\"/>",
                x(a) - 4.0,
                y(mean),
                x(b - 1) + 4.0,
                y(mean)
            ));
        }
    }
    for f in &s.change_points {
        let cx = (x(f.at) + x(f.at - 1)) / 2.0;
        svg.push_str(&format!(
            "<g class=\"change-point\" data-run=\"{run}\"><line x1=\"{cx:.1}\" y1=\"{PAD}\" x2=\"{cx:.1}\" y2=\"{b}\" stroke=\"#d62728\" stroke-width=\"2\"/>\
<text x=\"{tx:.1}\" y=\"{ty}\" fill=\"#d62728\">run {run}: {before} → {after} ({change}, p {p})</text>\
<title>change point at run {run}: mean {before} before, {after} after ({change}, p {p}, {verdict})</title></g>",
            run = f.run,
            b = H - PAD,
            tx = cx + 4.0,
            ty = PAD - 6.0,
            before = esc(&num(f.mean_before)),
            after = esc(&num(f.mean_after)),
            change = esc(&pct(f.change_pct)),
            p = esc(&pvalue(f.pvalue)),
            verdict = if f.better { "better" } else { "worse" },
        ));
    }
    let path: Vec<String> = s
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
        .collect();
    svg.push_str(&format!(
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"{}\"/>",
        path.join(" ")
    ));
    for (i, v) in s.values.iter().enumerate() {
        let run = &h.runs[s.runs[i] - 1];
        let dot = format!(
            "<circle class=\"point\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#1f77b4\"><title>run {} ({}{}): {}</title></circle>",
            x(i),
            y(*v),
            run.number,
            esc(&run.started_at),
            if run.tags.is_empty() { String::new() } else { format!(", {}", esc(&tags(run))) },
            esc(&num(*v))
        );
        match &run.report {
            Some(href) => svg.push_str(&format!("<a href=\"{}\">{dot}</a>", esc(href))),
            None => svg.push_str(&dot),
        }
        if n <= 40 || i % (n / 20).max(1) == 0 {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x(i),
                H - PAD + 16.0,
                run.number
            ));
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

/// `history.html`: the change points' table and a chart per series, self-contained.
pub(crate) fn render_html(h: &History) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mongo-stress history</title>\
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;white-space:nowrap}\
figure{margin:1em 0}text{font-size:11px}.worse{color:#d62728}.better{color:#2ca02c}</style></head><body><h1>History</h1>",
    );
    html.push_str(&format!(
        "<p>{} runs, ordered {}; {} series. {}; a change point has p &lt; {} and changes the mean by more than {} %, window {} runs.</p>",
        h.runs.len(),
        esc(&h.order),
        h.series.len(),
        esc(&h.method),
        h.pvalue,
        h.min_change,
        h.window
    ));
    for (profile, plans) in profiles(h) {
        html.push_str(&format!(
            "<p>plan of {}: [{}]</p>",
            esc(profile),
            esc(&plans.join("], ["))
        ));
    }
    for n in &h.notes {
        html.push_str(&format!("<p class=\"note\">note: {}</p>", esc(n)));
    }
    let found = newest_first(h);
    html.push_str("<h2>Change points, newest first</h2>");
    if found.is_empty() {
        html.push_str("<p>none</p>");
    } else {
        html.push_str("<table id=\"changes\"><tr>");
        for c in CHANGES {
            html.push_str(&format!("<th>{c}</th>"));
        }
        html.push_str("<th>Verdict</th></tr>");
        for (s, f) in &found {
            let verdict = if f.better { "better" } else { "worse" };
            html.push_str(&format!("<tr class=\"{verdict}\">"));
            for c in change_cells(h, s, f) {
                html.push_str(&format!("<td>{}</td>", esc(&c)));
            }
            html.push_str(&format!("<td>{verdict}</td></tr>"));
        }
        html.push_str("</table>");
    }
    html.push_str("<h2>Series</h2>");
    for s in &h.series {
        html.push_str(&chart(h, s));
    }
    html.push_str("</body></html>\n");
    html
}
