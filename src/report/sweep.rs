//! What `sweep` shows and writes: the table of steps on the console, the fit with its
//! uncertainties, the peak, the SLO's knee, one paragraph in words and the stop reason;
//! `sweep.tsv`, `sweep.json`, and `sweep.html` (throughput against users with the fitted curve,
//! latency against users, efficiency, latency against throughput).

use std::io::Write;

use serde::Serialize;

use crate::sweep::usl::Analysis;
use crate::sweep::{Step, StopReason};

/// A sweep as written.
#[derive(Debug, Clone, Serialize)]
pub struct SweepResult {
    pub profile: String,
    pub slo: Vec<String>,
    /// In the order they ran.
    pub steps: Vec<Step>,
    pub fit: Analysis,
    /// The most users per group whose step held the SLO, below every step that broke it.
    pub slo_knee: Option<u32>,
    pub stop: StopReason,
    pub stop_text: String,
    pub notes: Vec<String>,
    /// The result in plain words.
    pub paragraph: String,
}

impl SweepResult {
    pub fn new(
        profile: &str,
        slo: &[String],
        steps: Vec<Step>,
        stop: StopReason,
        notes: Vec<String>,
    ) -> SweepResult {
        let fit = crate::sweep::analyse(&steps);
        let first_broken = steps
            .iter()
            .filter(|s| s.slo == Some(false))
            .map(|s| s.threads)
            .min()
            .unwrap_or(u32::MAX);
        let slo_knee = steps
            .iter()
            .filter(|s| s.slo == Some(true) && s.threads < first_broken)
            .map(|s| s.threads)
            .max();
        let mut r = SweepResult {
            profile: profile.to_string(),
            slo: slo.to_vec(),
            steps,
            fit,
            slo_knee,
            stop_text: stop.text(),
            stop,
            notes,
            paragraph: String::new(),
        };
        r.paragraph = paragraph(&r);
        r
    }

    fn sorted(&self) -> Vec<&Step> {
        crate::sweep::by_threads(&self.steps)
    }
}

/// SPEC's `sweep.tsv` columns.
pub const HEADER: [&str; 10] = [
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
    ]
}

/// The result in words: how throughput grew, what the fit says and what it cannot.
fn paragraph(r: &SweepResult) -> String {
    let s = r.sorted();
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
            " ({:.0} % of linear scaling from one user)",
            100.0 * e
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
            (Some(n), Some(x)) => p.push_str(&format!(
                " Coherency (kappa {:.2e}) makes throughput peak near {n:.0} users per group at about {x:.0}/s; beyond that, more users give less.",
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
            writeln!(
                out,
                "peak: N* = sqrt((1 - sigma) / kappa) = {n:.1} users per group, {x:.0}/s"
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
pub fn render(r: &SweepResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\nSweep of `{}` (closed loop; users per group; Throughput in operations/s, latencies in ms):",
        r.profile
    )?;
    let mut lines = vec![HEADER.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(r.sorted().into_iter().map(cells));
    super::layout::aligned(&lines, &[9], out)?;
    write_fit(&r.fit, out)?;
    if let Some(k) = r.slo_knee {
        writeln!(
            out,
            "SLO knee: {k} users per group, the most that held {}",
            r.slo.join(", ")
        )?;
    }
    for s in r.sorted() {
        if s.littles_n < 0.95 * f64::from(s.users) && s.throughput > 0.0 {
            writeln!(
                out,
                "note: at {} users the measurement implies {:.1} busy (Little's law, X x R): the client (think time, a starved generator or the pool), not the server, set that step",
                s.users, s.littles_n
            )?;
        }
    }
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    writeln!(out, "{}", r.paragraph)?;
    writeln!(out, "stopped: {}", r.stop_text)
}

/// `sweep.tsv`: one line per step, by users.
pub fn render_tsv(r: &SweepResult, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", HEADER.join("\t"))?;
    for s in r.sorted() {
        writeln!(out, "{}", cells(s).join("\t").replace('\n', " "))?;
    }
    Ok(())
}

pub fn render_json(r: &SweepResult, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    writeln!(out)
}

/// `sweep.html`.
pub fn render_html(r: &SweepResult) -> String {
    let data = serde_json::to_value(r).unwrap_or_default();
    super::html::page(
        &format!("mongo-stress sweep: {}", r.profile),
        &data,
        include_str!("sweep.js"),
    )
}
