//! What `sweep` shows and writes: the table of steps on the console, the fit with its
//! uncertainties, the peak, the SLO's knee, one paragraph in words and the stop reason;
//! `sweep.tsv`, `sweep.json`, and `sweep.html` (throughput against users with the fitted curve,
//! latency against users, efficiency, latency against throughput); and `compare` of two sweeps.

use std::io::Write;

use serde::Serialize;

use crate::compare::sweeps::{Parameter, SweepComparison};
use crate::sweep::usl::{Analysis, Estimate};
use crate::sweep::{self, Step, SweepResult};

/// SPEC's `sweep.tsv` columns, and `Fit`: whether the step was fitted, or why it was left out.
pub(crate) const HEADER: [&str; 11] = [
    "Threads",
    "Throughput",
    "Median",
    "99% Line",
    "Error %",
    "Little's N = X x R",
    "Efficiency",
    "Client CPU %",
    "Server CPU %",
    "SLO",
    "Fit",
];

fn cells(s: &Step) -> Vec<String> {
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |x| format!("{x:.digits$}"));
    vec![
        s.threads.to_string(),
        format!("{:.1}", s.throughput),
        format!("{:.2}", s.median_ms),
        format!("{:.2}", s.p99_ms),
        format!("{:.2}", s.error_pct),
        format!("{:.1}", s.littles_n),
        opt(s.efficiency, 2),
        opt(s.client_cpu_pct, 0),
        opt(s.server_cpu_pct, 0),
        match s.slo {
            None => "-".into(),
            Some(true) => "held".into(),
            Some(false) => format!("broken: {}", s.why.join("; ")),
        },
        fit_cell(s),
    ]
}

/// `fitted`, or `left out: ` and why (`sweep::unfit`).
fn fit_cell(s: &Step) -> String {
    sweep::unfit(s).map_or("fitted".into(), |why| format!("left out: {why}"))
}

/// The result in words: how throughput grew, what the fit says and what it cannot.
pub(crate) fn paragraph(r: &SweepResult) -> String {
    let s = r.by_threads();
    let (Some(first), Some(best)) = (
        s.first(),
        s.iter()
            .max_by(|a, b| a.throughput.total_cmp(&b.throughput)),
    ) else {
        return "No step completed.".into();
    };
    let users = |n: u32| {
        if n == 1 {
            "1 user".to_string()
        } else {
            format!("{n} users")
        }
    };
    let mut p = format!(
        "Throughput went from {:.0}/s at {} per group to at most {:.0}/s at {}",
        first.throughput,
        users(first.threads),
        best.throughput,
        users(best.threads)
    );
    if let Some(e) = best.efficiency {
        p.push_str(&format!(
            " ({:.0} % of linear scaling from {})",
            100.0 * e,
            if first.threads == 1 {
                "one user".to_string()
            } else {
                format!("{} users", first.threads)
            }
        ));
    }
    p.push('.');
    let a = &r.fit;
    if let Some(f) = &a.fit {
        if a.sigma_identified {
            p.push_str(&format!(
                " Contention (sigma {:.3}) costs each added user about {:.1} % of one user's throughput",
                f.sigma.value,
                100.0 * f.sigma.value
            ));
            if let Some(c) = a.amdahl_ceiling {
                p.push_str(&format!(
                    ", and caps throughput below {c:.0}/s however many users"
                ));
            }
            p.push('.');
        }
        match (a.peak_n, a.peak_throughput) {
            (Some(n), Some(x)) if a.fell_past_peak => p.push_str(&format!(
                " Coherency (kappa {:.2e}) makes throughput peak near {n:.0} users per group at about {x:.0}/s; beyond that, more users give less, as the steps past it measured.",
                f.kappa.value
            )),
            (Some(n), Some(x)) => p.push_str(&format!(
                " The fit's coherency (kappa {:.2e}) puts a peak near {n:.0} users per group at about {x:.0}/s; no step past it fell by more than the steps' noise, so that beyond it more users give less is the curve's shape, not measured.",
                f.kappa.value
            )),
            _ => p.push_str(" No peak can be read from these steps."),
        }
    }
    if let Some(k) = r.slo_knee {
        p.push_str(&format!(
            " For {} run at most {k} users per group.",
            r.slo.join(" and ")
        ));
    }
    p
}

fn write_fit(a: &Analysis, out: &mut dyn Write) -> std::io::Result<()> {
    if let Some(f) = &a.fit {
        let shown = |name: &str, e: &crate::sweep::usl::Estimate, known: bool| match (known, name) {
            (false, _) => format!("{name} not determined"),
            (true, "lambda") => format!("{name} {:.2} +/- {:.2}", e.value, e.se),
            (true, "sigma") => format!("{name} {:.4} +/- {:.4}", e.value, e.se),
            (true, _) => format!("{name} {:.3e} +/- {:.1e}", e.value, e.se),
        };
        writeln!(
            out,
            "USL fit: {}, {}, {}; residual error {:.1}/s, largest residual {:+.1}/s at {} users, R^2 {:.4}",
            shown("lambda", &f.lambda, true),
            shown("sigma", &f.sigma, a.sigma_identified),
            shown("kappa", &f.kappa, a.kappa_identified),
            f.residual_se,
            f.max_residual,
            f.max_residual_at,
            f.r_squared
        )?;
        if let (Some(n), Some(x)) = (a.peak_n, a.peak_throughput) {
            let se = |v: Option<f64>, digits: usize| {
                v.map_or(String::new(), |v| format!(" +/- {v:.digits$}"))
            };
            writeln!(
                out,
                "peak: N* = sqrt((1 - sigma) / kappa) = {n:.1}{} users per group, {x:.0}{}/s",
                se(a.peak_n_se, 2),
                se(a.peak_throughput_se, 1)
            )?;
        }
        if let (Some(i), Some(c)) = (a.one_over_sigma, a.amdahl_ceiling) {
            writeln!(
                out,
                "1/sigma = {i:.1} users (returns fall fast beyond); Amdahl ceiling lambda/sigma = {c:.0}/s"
            )?;
        }
        if let Some(h) = &a.holdout {
            let each: Vec<String> = h
                .predicted
                .iter()
                .map(|(n, x, p)| format!("{n} users: {p:.0}/s predicted, {x:.0}/s measured"))
                .collect();
            writeln!(
                out,
                "hold-out: fitted on the first {} steps, {}; worst error {:.1} %",
                h.fitted_steps,
                each.join(", "),
                100.0 * h.worst_error
            )?;
        }
    }
    for n in &a.notes {
        writeln!(out, "fit: {n}")?;
    }
    Ok(())
}

/// The console.
pub(crate) fn render(r: &SweepResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\nSweep of `{}` (closed loop; users per group; Throughput in operations/s, latencies in ms):",
        r.profile
    )?;
    let mut lines = vec![HEADER.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(r.by_threads().into_iter().map(cells));
    super::layout::aligned(&lines, &[9], out)?;
    write_fit(&r.fit, out)?;
    if let Some(k) = r.slo_knee {
        writeln!(
            out,
            "SLO knee: {k} users per group, the most that held {}",
            r.slo.join(", ")
        )?;
    }
    for s in r.by_threads() {
        match (&s.distorted, &s.load_generator) {
            (Some(why), _) => writeln!(
                out,
                "note: at {} users per group the load generator, not the server, set the pace: {why}; left out of the fit",
                s.threads
            )?,
            (None, Some(warned)) => writeln!(
                out,
                "note: at {} users per group the run warned that {}; judged against the step, {}: the step is the server's, and fitted",
                s.threads,
                warned.split(':').next().unwrap_or_default(),
                generator_share(s)
            )?,
            (None, None) => {}
        }
    }
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    // In the order the steps ran: what each left behind for the next.
    let held: Vec<String> = r
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.held.is_empty())
        .map(|(i, s)| {
            let each: Vec<String> = s
                .held
                .iter()
                .map(|h| format!("{} {}", h.collection, h.documents))
                .collect();
            format!("step {} ({} users): {}", i + 1, s.threads, each.join(", "))
        })
        .collect();
    if !held.is_empty() {
        writeln!(
            out,
            "note: documents held after each step in the collections not dropped between steps: {}",
            held.join("; ")
        )?;
    }
    writeln!(out, "{}", paragraph(r))?;
    writeln!(out, "stopped: {}", r.stop_text)
}

/// What the load generator took of a step, in words: its users' busy share, and its delay per
/// operation against the latency.
fn generator_share(s: &Step) -> String {
    let mut p = format!("Little's N was {:.1} of {} users", s.littles_n, s.users);
    if let Some(d) = s.generator_delay_ms.filter(|_| s.mean_ms > 0.0) {
        p.push_str(&format!(
            " and the tool added {d:.2} ms to each operation, {:.1} % of the mean latency of {:.2} ms",
            100.0 * d / s.mean_ms,
            s.mean_ms
        ));
    }
    p
}

/// `sweep.tsv`: one line per step, by users.
pub(crate) fn render_tsv(r: &SweepResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", HEADER.join("\t"))?;
    for s in r.by_threads() {
        writeln!(out, "{}", cells(s).join("\t").replace('\n', " "))?;
    }
    Ok(())
}

/// `sweep.json`: the result, its paragraph, and each step's Fit cell by its users per group.
#[derive(Serialize)]
struct Written<'a> {
    #[serde(flatten)]
    result: &'a SweepResult,
    paragraph: String,
    fitted: std::collections::BTreeMap<u32, String>,
}

fn written(r: &SweepResult) -> Written<'_> {
    Written {
        result: r,
        paragraph: paragraph(r),
        fitted: r.steps.iter().map(|s| (s.threads, fit_cell(s))).collect(),
    }
}

pub(crate) fn render_json(r: &SweepResult, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &written(r))?;
    writeln!(out)
}

/// `sweep.html`.
pub(crate) fn render_html(r: &SweepResult) -> String {
    let data = serde_json::to_value(written(r)).unwrap_or_default();
    super::html::page(
        &format!("mongo-stress sweep: {}", r.profile),
        &data,
        include_str!("sweep.js"),
    )
}

/// A parameter's value in its own precision.
fn estimate_text(p: Parameter, e: Option<Estimate>) -> String {
    let Some(e) = e else {
        return "not determined".into();
    };
    let (v, se) = match p {
        Parameter::Lambda => (format!("{:.2}", e.value), format!("{:.2}", e.se)),
        Parameter::Sigma => (format!("{:.4}", e.value), format!("{:.4}", e.se)),
        Parameter::Kappa => (format!("{:.3e}", e.value), format!("{:.1e}", e.se)),
        Parameter::PeakN => (format!("{:.1}", e.value), format!("{:.2}", e.se)),
        Parameter::PeakThroughput => (format!("{:.0}", e.value), format!("{:.1}", e.se)),
    };
    if e.se.is_finite() {
        format!("{v} +/- {se}")
    } else {
        v
    }
}

fn change_text(c: Option<f64>) -> String {
    c.map_or("-".into(), |c| format!("{c:+.1}%"))
}

/// `compare` of two sweeps on the console.
pub(crate) fn compare_table(c: &SweepComparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "base: {}\nnew:  {}", c.base, c.new)?;
    writeln!(
        out,
        "\nUSL fit (+/- one standard error; a difference beyond 2.58 standard errors of the difference is judged, 99 %):"
    )?;
    let mut lines = vec![[
        "Parameter",
        "Base",
        "New",
        "Change",
        "Difference",
        "Meaning",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect::<Vec<_>>()];
    lines.extend(c.parameters.iter().map(|p| {
        vec![
            p.parameter.name().to_string(),
            estimate_text(p.parameter, p.base),
            estimate_text(p.parameter, p.new),
            change_text(p.change_pct),
            p.difference.words().to_string(),
            p.parameter.meaning().to_string(),
        ]
    }));
    super::layout::aligned(&lines, &[0, 4, 5], out)?;
    writeln!(
        out,
        "\nSteps (users per group; throughput in operations/s of each step's measured window, p99 in ms; verdicts from each pair of steps' intervals):"
    )?;
    let mut lines = vec![["Users", "Metric", "Base", "New", "Change", "Verdict"]
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()];
    let shown = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    lines.extend(c.steps.iter().map(|s| {
        vec![
            s.threads.to_string(),
            s.metric.to_string(),
            shown(s.base),
            shown(s.new),
            change_text(s.change_pct),
            s.verdict.words().to_string(),
        ]
    }));
    super::layout::aligned(&lines, &[1, 5], out)?;
    for n in &c.notes {
        writeln!(out, "note: {n}")?;
    }
    if !c.gates.is_empty() {
        writeln!(out)?;
        for g in &c.gates {
            writeln!(
                out,
                "gate {}: {} (change {}, {}){}",
                g.gate,
                if g.pass { "pass" } else { "FAILED" },
                change_text(g.change_pct),
                g.difference.words(),
                g.why.as_ref().map_or(String::new(), |w| format!(": {w}"))
            )?;
        }
        let failed = c.gates.iter().filter(|g| !g.pass).count();
        if failed > 0 {
            writeln!(out, "GATES FAILED: {failed} (exit 4)")?;
        }
    }
    Ok(())
}

/// `compare --tsv` of two sweeps: the parameters (Users `fit`), then each step's throughput and
/// p99; a value a side lacks is `-`.
pub(crate) fn compare_tsv(c: &SweepComparison, out: &mut dyn Write) -> std::io::Result<()> {
    let num = |v: Option<f64>| {
        v.filter(|v| v.is_finite())
            .map_or("-".into(), |v| v.to_string())
    };
    writeln!(
        out,
        "Users\tMetric\tBase\tBase SE\tNew\tNew SE\tChange %\tVerdict"
    )?;
    for p in &c.parameters {
        writeln!(
            out,
            "fit\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            p.parameter.name(),
            num(p.base.map(|e| e.value)),
            num(p.base.map(|e| e.se)),
            num(p.new.map(|e| e.value)),
            num(p.new.map(|e| e.se)),
            p.change_pct.map_or("-".into(), |c| format!("{c:.2}")),
            p.difference.words()
        )?;
    }
    for s in &c.steps {
        writeln!(
            out,
            "{}\t{}\t{}\t-\t{}\t-\t{}\t{}",
            s.threads,
            s.metric,
            num(s.base),
            num(s.new),
            s.change_pct.map_or("-".into(), |c| format!("{c:.2}")),
            s.verdict.words()
        )?;
    }
    Ok(())
}

pub(crate) fn compare_json(c: &SweepComparison, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, c)?;
    writeln!(out)
}

/// `compare --html` of two sweeps: both sweeps' measured throughput and fitted curves on one
/// chart, p99 against users for both, and the table.
pub(crate) fn render_compare(base: &SweepResult, new: &SweepResult, c: &SweepComparison) -> String {
    let mut tsv = Vec::new();
    compare_tsv(c, &mut tsv).ok();
    let data = serde_json::json!({
        "base_name": c.base,
        "new_name": c.new,
        "base": written(base),
        "new": written(new),
        "table_tsv": String::from_utf8_lossy(&tsv),
        "notes": c.notes,
    });
    super::html::page(
        &format!("mongo-stress sweeps compared: {}", new.profile),
        &data,
        include_str!("sweep-compare.js"),
    )
}
