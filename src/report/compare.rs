//! `compare`'s output: the console table, its TSV and its JSON.

use std::io::Write;

use crate::compare::members::change_pct;
use crate::compare::Comparison;
use crate::metrics::Label;

fn change(c: Option<f64>) -> String {
    c.map_or("-".into(), |c| format!("{c:+.1}%"))
}

/// Rows of label, metric, base, new, change, verdict; `against`: the console's label says which
/// row of the base run a change row was judged against, when its name differs.
fn rows(c: &Comparison, against: bool) -> Vec<Vec<String>> {
    c.cells
        .iter()
        .map(|x| {
            vec![
                match (&x.base_label, against) {
                    (Some(b), true) => format!("{} (base: {b})", x.label),
                    _ => x.label.to_string(),
                },
                x.metric.to_string(),
                format!("{:.2}", x.base),
                format!("{:.2}", x.new),
                change(x.change_pct),
                x.verdict.words().to_string(),
            ]
        })
        .collect()
}

/// A member's value, or `-` where its run did not have it or did not measure it.
fn member_value(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// The members' rows in the table's columns: per member (its name as the label), its average
/// operations per second (`member_ops_s`) and largest lag in seconds (`member_lag_max`), not
/// judged.
fn member_rows(c: &Comparison) -> Vec<Vec<String>> {
    c.members
        .iter()
        .flat_map(|m| {
            [
                ("member_ops_s", m.base_ops_s, m.new_ops_s),
                ("member_lag_max", m.base_lag_max, m.new_lag_max),
            ]
            .map(|(metric, base, new)| {
                vec![
                    m.member.clone(),
                    metric.to_string(),
                    member_value(base),
                    member_value(new),
                    change(change_pct(base, new)),
                    "-".to_string(),
                ]
            })
        })
        .collect()
}

/// The members section of the console: one line per member, both runs side by side.
fn members(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    if c.members.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nMembers (operations/s of every kind, averaged over the run; largest lag behind the primary, s; - = not in that run, or not measured):"
    )?;
    let mut lines = vec![[
        "Member",
        "Base ops/s",
        "New ops/s",
        "Change",
        "Base lag max",
        "New lag max",
    ]
    .map(String::from)
    .to_vec()];
    lines.extend(c.members.iter().map(|m| {
        vec![
            m.member.clone(),
            member_value(m.base_ops_s),
            member_value(m.new_ops_s),
            change(change_pct(m.base_ops_s, m.new_ops_s)),
            member_value(m.base_lag_max),
            member_value(m.new_lag_max),
        ]
    }));
    super::layout::aligned(&lines, &[0], out)
}

const HEADER: [&str; 6] = ["Label", "Metric", "Base", "New", "Change", "Verdict"];

/// The metrics of the headline, TOTAL's.
const HEADLINE: [crate::vocab::Compared; 3] = [
    crate::vocab::Compared::Throughput,
    crate::vocab::Compared::P50,
    crate::vocab::Compared::P99,
];

/// The first line: TOTAL's throughput, p50 and p99, each with its change and verdict.
fn headline(c: &Comparison) -> Option<String> {
    let parts: Vec<String> = HEADLINE
        .iter()
        .filter_map(|m| {
            c.cells
                .iter()
                .find(|x| x.label == Label::Total && x.metric == *m)
        })
        .map(|x| {
            format!(
                "{} {} ({})",
                x.metric,
                change(x.change_pct),
                x.verdict.words()
            )
        })
        .collect();
    (!parts.is_empty()).then(|| format!("TOTAL: {}", parts.join(", ")))
}

pub(crate) fn table(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    let noise = c.cells.first().map_or("intervals", |x| x.noise.as_str());
    if let Some(h) = headline(c) {
        writeln!(out, "{h}")?;
    }
    let tagged = |dir: &str, tags: &std::collections::BTreeMap<String, String>| {
        if tags.is_empty() {
            dir.to_string()
        } else {
            format!("{dir} ({})", crate::history::ledger::tags_cell(tags))
        }
    };
    writeln!(
        out,
        "base: {}\nnew:  {}",
        tagged(&c.base, &c.base_tags),
        tagged(&c.new, &c.new_tags)
    )?;
    for n in &c.notes {
        writeln!(out, "{n}")?;
    }
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
    lines.extend(rows(c, true));
    // Label, metric and verdict are words; the rest numbers.
    super::layout::aligned(&lines, &[0, 1, 5], out)?;
    members(c, out)?;
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

pub(crate) fn tsv(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", HEADER.join("\t"))?;
    for r in rows(c, false).into_iter().chain(member_rows(c)) {
        writeln!(out, "{}", r.join("\t"))?;
    }
    Ok(())
}

pub(crate) fn json(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, c)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::members::MemberCell;
    use crate::compare::{Cell, Verdict};

    fn cell(label: Label, metric: &'static str, change: f64, verdict: Verdict) -> Cell {
        Cell {
            label,
            metric: crate::vocab::Compared::from_name(metric).unwrap(),
            base: 100.0,
            new: 100.0 + change,
            change_pct: Some(change),
            verdict,
            noise: "intervals".into(),
            base_label: None,
        }
    }

    #[test]
    fn the_console_starts_with_totals_headline_then_the_notes_then_the_table() {
        let g = Label::group("ins@200/s");
        let mut judged = cell(g.clone(), "p50", 1.0, Verdict::SameWithinNoise);
        judged.base_label = Some(Label::group("ins"));
        let c = Comparison {
            base: "a".into(),
            new: "b".into(),
            base_tags: Default::default(),
            new_tags: Default::default(),
            cells: vec![
                judged,
                cell(Label::Total, "samples", 40.0, Verdict::NotJudged),
                cell(Label::Total, "throughput", -13.6, Verdict::Slower),
                cell(Label::Total, "p50", 18.3, Verdict::SameWithinNoise),
                cell(Label::Total, "p99", 14.0, Verdict::Steered),
            ],
            gates: Vec::new(),
            members: Vec::new(),
            notes: vec!["note: the new run was steered live".into()],
        };
        let mut console = Vec::new();
        table(&c, &mut console).unwrap();
        let text = String::from_utf8(console).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..4],
            [
                "TOTAL: throughput -13.6% (slower), p50 +18.3% (same within noise), p99 +14.0% (not judged: steered)",
                "base: a",
                "new:  b",
                "note: the new run was steered live",
            ]
        );
        assert!(text.contains("ins@200/s (base: ins)"), "{text}");
        // The TSV keeps its form: the row's own label.
        let mut out = Vec::new();
        tsv(&c, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.lines().nth(1).unwrap().starts_with("ins@200/s\tp50\t"),
            "{text}"
        );
        // No TOTAL in both runs: no headline.
        let none = Comparison {
            cells: Vec::new(),
            notes: Vec::new(),
            ..c
        };
        let mut console = Vec::new();
        table(&none, &mut console).unwrap();
        assert!(String::from_utf8(console).unwrap().starts_with("base: a\n"));
    }

    #[test]
    fn members_follow_the_table_in_its_columns_and_have_a_console_section() {
        let c = Comparison {
            base: "a".into(),
            new: "b".into(),
            base_tags: Default::default(),
            new_tags: Default::default(),
            cells: Vec::new(),
            gates: Vec::new(),
            members: vec![MemberCell {
                member: "s0/h1:27017".into(),
                base_ops_s: Some(100.0),
                new_ops_s: Some(150.0),
                base_lag_max: None,
                new_lag_max: Some(1.25),
            }],
            notes: Vec::new(),
        };
        let mut tsv_out = Vec::new();
        tsv(&c, &mut tsv_out).unwrap();
        let text = String::from_utf8(tsv_out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "Label\tMetric\tBase\tNew\tChange\tVerdict",
                "s0/h1:27017\tmember_ops_s\t100.00\t150.00\t+50.0%\t-",
                "s0/h1:27017\tmember_lag_max\t-\t1.25\t-\t-",
            ]
        );
        let mut console = Vec::new();
        table(&c, &mut console).unwrap();
        let text = String::from_utf8(console).unwrap();
        assert!(text.contains("\nMembers ("), "{text}");
        assert!(text.contains("Base lag max"), "{text}");
        // Without members, no section.
        let none = Comparison {
            members: Vec::new(),
            ..c
        };
        let mut console = Vec::new();
        table(&none, &mut console).unwrap();
        assert!(!String::from_utf8(console).unwrap().contains("Members"));
    }
}
