//! `validate`'s output: the resolved plan in a few lines.

use std::io::Write;

use crate::plan::{RunPlan, StopAt, WriteConcernPlan};

/// Writes the resolved plan as `validate` shows it.
pub fn render(plan: &RunPlan, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "profile {} ({}): valid", plan.name, plan.origin)?;
    if !plan.description.is_empty() {
        writeln!(out, "  {}", plan.description)?;
    }
    let t = &plan.target;
    let w = match &t.write_concern {
        None => "the deployment's default".to_string(),
        Some(WriteConcernPlan::Nodes(n)) => format!("w={n}"),
        Some(WriteConcernPlan::Majority) => "w=majority".to_string(),
    };
    writeln!(
        out,
        "target {}.{}  pool {}  read {}  write concern {w}  operation timeout {}",
        t.database,
        t.collection,
        t.pool_size,
        t.read_preference,
        humantime::format_duration(t.op_timeout)
    )?;
    if !t.server_metrics.is_empty() {
        let shown: Vec<String> = t
            .server_metrics
            .iter()
            .map(|u| crate::monitor::scrape::shown(u))
            .collect();
        writeln!(out, "server metrics from {}", shown.join(", "))?;
    }
    if let Some(pct) = plan.stop_on_error_pct {
        writeln!(out, "stop when {pct} % of the recent operations failed")?;
    }
    writeln!(
        out,
        "setup drop={} preload={} indexes={}",
        plan.setup().drop,
        plan.setup().preload,
        plan.setup().indexes.len()
    )?;
    for stage in &plan.stages {
        if !stage.name.is_empty() {
            writeln!(out, "stage {}", stage.name)?;
        }
        for g in &stage.groups {
            let stop = match g.stop {
                StopAt::Loops(l) => {
                    format!(
                        "{l} loops = {} operations",
                        l.saturating_mul(u64::from(g.threads))
                    )
                }
                StopAt::Duration(d) => format!("for {}", humantime::format_duration(d)),
            };
            let stop = match g.rate {
                Some(r) => format!("{stop}, open loop at {r}/s"),
                None => stop,
            };
            // A mix shows its kinds and weights, and keys other than uniform are named.
            let op = if g.mix.is_empty() {
                g.op.kind().to_string()
            } else {
                let kinds: Vec<String> = g
                    .mix
                    .iter()
                    .map(|(s, w)| format!("{} {w}", s.kind()))
                    .collect();
                format!("mix({})", kinds.join(", "))
            };
            let op = match g.keys {
                crate::workload::KeyDist::Uniform => op,
                k => format!("{op} keys {k}"),
            };
            writeln!(
                out,
                "  group {:<14} {:<6} threads {:>5}  ramp-up {}  delay {}  {stop}",
                g.name,
                op,
                g.threads,
                humantime::format_duration(g.ramp_up),
                humantime::format_duration(g.start_delay)
            )?;
        }
    }
    match plan.planned_operations() {
        Some(n) => writeln!(out, "total: {n} operations"),
        None => writeln!(out, "total: time-bound (some groups run for a duration)"),
    }
}
