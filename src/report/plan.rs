//! `validate`'s output: the resolved plan in a few lines.

use std::io::Write;

use crate::plan::fault::FaultPlan;
use crate::plan::{GroupPlan, RunPlan, StopAt, WriteConcernPlan};

/// Writes the resolved plan as `validate` shows it.
pub(crate) fn render(plan: &RunPlan, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "profile {} ({}): valid", plan.name, plan.origin)?;
    if !plan.description.is_empty() {
        writeln!(out, "  {}", plan.description)?;
    }
    target(plan, out)?;
    for stage in &plan.stages {
        if !stage.name.is_empty() {
            writeln!(out, "stage {}", stage.name)?;
        }
        for g in &stage.groups {
            if let Some(w) = &g.watch {
                watch(g, w, out)?;
                continue;
            }
            writeln!(
                out,
                "  group {:<14} {:<6} threads {:>5}  ramp-up {}  delay {}  {}",
                g.name,
                operation(plan, g),
                g.threads,
                humantime::format_duration(g.ramp_up),
                humantime::format_duration(g.start_delay),
                match g.after.and_then(|a| plan.groups().find(|x| x.index == a)) {
                    Some(a) => format!("{}, once {} has ended", stop(g), a.name),
                    None => stop(g),
                }
            )?;
        }
    }
    if let Some(scale) = &plan.scale {
        writeln!(
            out,
            "scale: every rate x{} (--scale; the rates above are the products){}",
            scale.factor,
            if scale.unscaled.is_empty() {
                String::new()
            } else {
                format!(
                    "; closed loop, left as they are: {}",
                    scale.unscaled.join(", ")
                )
            }
        )?;
        if let Some(line) = scale.threads_line() {
            writeln!(out, "{line}")?;
        }
    }
    if !plan.server_args.is_empty() {
        writeln!(out, "embedded server flags: {}", plan.server_args.join(" "))?;
    }
    for f in &plan.faults {
        fault(f, out)?;
    }
    if plan.audit {
        writeln!(out, "audit: after each run, the collections are read back and every acknowledged insert, delete and $inc checked (audit.tsv; lost data exits 5)")?;
    }
    match plan.planned_operations() {
        Some(n) => writeln!(out, "total: {n} operations"),
        None => writeln!(out, "total: time-bound (some groups run for a duration)"),
    }
}

/// A watch group: its listeners and what each one's stream is.
fn watch(g: &GroupPlan, w: &crate::plan::WatchPlan, out: &mut dyn Write) -> std::io::Result<()> {
    let mut opts = Vec::new();
    if let Some(f) = &w.full_document {
        opts.push(format!("fullDocument {f}"));
    }
    if let Some(f) = &w.full_document_before_change {
        opts.push(format!("fullDocumentBeforeChange {f}"));
    }
    if let Some(b) = w.batch_size {
        opts.push(format!("batch {b}"));
    }
    if let Some(m) = w.max_await_time {
        opts.push(format!("maxAwaitTime {}", humantime::format_duration(m)));
    }
    if !w.think.is_zero() {
        opts.push(format!("{} per event", humantime::format_duration(w.think)));
    }
    opts.push(format!("drain {}", humantime::format_duration(w.drain)));
    writeln!(
        out,
        "  group {:<14} watch  listeners {:>3}  {}; open from before the first stage to the run's end; {}",
        g.name,
        g.threads,
        w.scope,
        opts.join(", ")
    )?;
    if w.pipeline.is_some() {
        writeln!(out, "    pipeline {}", w.pipeline_shown)?;
    }
    Ok(())
}

/// Writes the target, its server metrics, the error stop and each collection's setup.
fn target(plan: &RunPlan, out: &mut dyn Write) -> std::io::Result<()> {
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
    if plan.collections.len() == 1 {
        writeln!(
            out,
            "setup drop={} preload={} indexes={}",
            plan.setup().drop,
            plan.setup().preload,
            plan.setup().indexes.len()
        )?;
    } else {
        for c in &plan.collections {
            writeln!(
                out,
                "collection {}  drop={} preload={} indexes={}",
                c.name,
                c.setup.drop,
                c.setup.preload,
                c.setup.indexes.len()
            )?;
        }
    }
    Ok(())
}

/// When group `g` stops: after its loops or a duration, and its open-loop rate.
fn stop(g: &GroupPlan) -> String {
    let stop = match g.stop {
        StopAt::Loops(l) => {
            format!(
                "{l} loops = {} operations",
                l.saturating_mul(u64::from(g.threads))
            )
        }
        StopAt::Duration(d) => format!("for {}", humantime::format_duration(d)),
        StopAt::AtLeast(l, d) => format!(
            "at least {l} loops = {} operations and at least {}",
            l.saturating_mul(u64::from(g.threads)),
            humantime::format_duration(d)
        ),
        StopAt::Background => "in the background, until the stage's other groups are done".into(),
    };
    match g.rate {
        Some(r) => format!("{stop}, open loop at {r}/s"),
        None => stop,
    }
}

/// What group `g` runs: its operation or mix, its own concerns and its keys.
fn operation(plan: &RunPlan, g: &GroupPlan) -> String {
    // A mix shows its kinds and weights, and keys other than uniform are named.
    let op = if g.mix.is_empty() {
        spec(&g.op)
    } else if g.chain.is_some() {
        let states: Vec<String> = g.mix.iter().map(|(s, _)| s.kind().to_string()).collect();
        format!("states({})", states.join(", "))
    } else {
        let kinds: Vec<String> = g
            .mix
            .iter()
            .map(|(s, w)| match s {
                crate::workload::OpSpec::Template(t) if t.desugared.is_none() => {
                    format!("{} {w} = {}", s.kind(), t.verb.name())
                }
                _ => format!("{} {w}", s.kind()),
            })
            .collect();
        format!("mix({})", kinds.join(", "))
    };
    // The group's own concerns, where they differ from [target]'s.
    let op = if g.handle != 0 || g.spread.len() > 1 {
        let parts = concerns(plan, g);
        if parts.is_empty() {
            op
        } else {
            format!("{op} [{}]", parts.join(", "))
        }
    } else {
        op
    };
    match g.keys {
        crate::workload::KeyDist::Uniform => op,
        k => format!("{op} keys {k}"),
    }
}

/// One operation: a sugar's kind, a template's verb, or the verbs of steps in order.
fn spec(s: &crate::workload::OpSpec) -> String {
    match s {
        crate::workload::OpSpec::Template(t) if t.desugared.is_some() => s.kind().to_string(),
        crate::workload::OpSpec::Template(t) => t.verb.name().to_string(),
        crate::workload::OpSpec::Steps(st) => format!(
            "{}({})",
            if st.transaction {
                "transaction"
            } else {
                "steps"
            },
            {
                // A step sent several times in a row (`repeat`) is said once, with its count.
                let mut said: Vec<(&str, usize)> = Vec::new();
                let mut last: Option<&std::sync::Arc<crate::workload::command::TemplateOp>> = None;
                for t in &st.steps {
                    match (last, said.last_mut()) {
                        (Some(l), Some((_, n))) if std::sync::Arc::ptr_eq(l, t) => *n += 1,
                        _ => said.push((t.verb.name(), 1)),
                    }
                    last = Some(t);
                }
                said.into_iter()
                    .map(|(v, n)| {
                        if n > 1 {
                            format!("{v} x{n}")
                        } else {
                            v.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", then ")
            }
        ),
    }
}

/// Where group `g`'s collection and concerns differ from `[target]`'s, each in a few words.
fn concerns(plan: &RunPlan, g: &GroupPlan) -> Vec<String> {
    let c = &g.concerns;
    let mut parts = Vec::new();
    if g.spread.len() > 1 {
        let first = &plan.collections[g.spread[0].0].name;
        let last = &plan.collections[g.spread[g.spread.len() - 1].0].name;
        parts.push(if g.in_turn {
            format!(
                "on {} collections ({first} .. {last}), one per operation in turn",
                g.spread.len()
            )
        } else {
            format!(
                "on one of {} collections ({first} .. {last}), drawn per operation",
                g.spread.len()
            )
        });
    } else if g.collection != 0 {
        parts.push(format!("on {}", plan.collections[g.collection].name));
    }
    if c.write != plan.target.write_concern
        || c.journal != plan.target.journal
        || c.wtimeout.is_some()
    {
        parts.push(format!(
            "w {}{}",
            match &c.write {
                None => "default".to_string(),
                Some(crate::plan::WriteConcernPlan::Majority) => "majority".into(),
                Some(crate::plan::WriteConcernPlan::Nodes(n)) => n.to_string(),
            },
            if c.journal == Some(true) { ", j" } else { "" }
        ));
    }
    if let Some(r) = c.read_concern {
        parts.push(format!("read concern {}", r.name()));
    }
    if c.read_preference.mode != plan.target.read_preference {
        parts.push(format!("read {}", c.read_preference.mode));
    }
    parts
}

/// Writes fault `f`: when it strikes and what it does.
fn fault(f: &FaultPlan, out: &mut dyn Write) -> std::io::Result<()> {
    use crate::plan::fault::FaultKind;
    let secs = |d: std::time::Duration| humantime::format_duration(d).to_string();
    let what = match f.kind {
        FaultKind::Kill => format!(
            "SIGKILL the embedded server, start it again {} later",
            secs(f.length)
        ),
        FaultKind::Restart => format!(
            "SIGTERM the embedded server, start it again {} later",
            secs(f.length)
        ),
        FaultKind::Pause => format!("SIGSTOP the embedded server for {}", secs(f.length)),
        FaultKind::Stepdown => format!("replSetStepDown for {} with force", secs(f.length)),
    };
    writeln!(
        out,
        "fault {}: at {} from the first stage's start, {what}",
        f.text(),
        secs(f.at)
    )
}
