//! The choice: the fewest shapes that cover the wanted share, a transaction's steps together,
//! and each shape's account.

use super::*;

/// The shapes chosen for the profile and why each other one was not.
pub(super) struct Chosen {
    /// Indexes in `seen` of the emitted shapes (a transaction's every step).
    pub(super) emitted: Vec<usize>,
    /// Shapes emitted, a transaction counted once.
    pub(super) units: usize,
    /// Operations the emitted shapes cover.
    pub(super) covered: u64,
    /// Per shape, why it was left out (empty when emitted).
    pub(super) reasons: Vec<String>,
}

/// Share of the operations, or of the server's time, above which a shape is kept whatever
/// `--coverage` says (as a write is).
pub(super) const KEEP_SHARE: f64 = 0.01;

/// The server time a shape took (its operations' `millis` added, one timed 0 counted as half a
/// millisecond), the count where the source timed none of its operations: what `--coverage`
/// counts.
fn cost(s: &Seen, timed: bool) -> f64 {
    if timed {
        // Whole milliseconds: an operation timed 0 took under one, half of one on average.
        s.millis.iter().map(|m| m.max(0.5)).sum()
    } else {
        crate::num::real(s.count)
    }
}

/// The fewest shapes that cover the wanted share of the server's time (the count times the
/// mean latency the source timed, its operations where it timed none), at most `max_shapes`;
/// a shape above `KEEP_SHARE` of the operations or of the time, and every write, kept whatever
/// `--coverage` says; a transaction is one shape, its steps emitted or left out together.
/// Those left out are counted in `left`, each with both its shares.
pub(super) fn choose(
    seen: &[Seen],
    database: Option<&str>,
    opts: &Options,
    operations: u64,
    left: &mut LeftOut,
) -> Chosen {
    let mut c = Chosen {
        emitted: Vec::new(),
        units: 0,
        covered: 0,
        reasons: vec![String::new(); seen.len()],
    };
    // Units: a shape, or a transaction's steps (which follow its first).
    let mut units: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, s) in seen.iter().enumerate() {
        match units.last_mut() {
            Some(u) if s.pos() > 0 && u.end == i => u.end = i + 1,
            _ => units.push(i..i + 1),
        }
    }
    let timed = seen.iter().any(|s| s.millis.iter().any(|&m| m > 0.0));
    let unit_cost = |u: &std::ops::Range<usize>| -> f64 {
        seen[u.clone()].iter().map(|s| cost(s, timed)).sum()
    };
    let total: f64 = units
        .iter()
        .filter(|u| Some(seen[u.start].db.as_str()) == database)
        .map(unit_cost)
        .sum();
    // The costliest first.
    units.sort_by(|a, b| {
        unit_cost(b)
            .total_cmp(&unit_cost(a))
            .then(seen[b.start].count.cmp(&seen[a.start].count))
            .then(a.start.cmp(&b.start))
    });
    let mut spent = 0.0;
    for u in units {
        let s = &seen[u.start];
        let time_share = if total > 0.0 {
            unit_cost(&u) / total
        } else {
            0.0
        };
        let op_share = if operations > 0 {
            crate::num::real(s.count) / crate::num::real(operations)
        } else {
            0.0
        };
        // A write changes what every other operation finds: kept whatever --coverage says
        // (a transaction writes when any of its steps does).
        let writes = seen[u.clone()].iter().any(|t| t.op.verb.writes());
        let large = op_share > KEEP_SHARE || time_share > KEEP_SHARE;
        let shares = format!(
            "{:.1} % of the operations, {:.1} % of the server's time",
            100.0 * op_share,
            100.0 * time_share
        );
        let reason = if Some(s.db.as_str()) != database {
            format!("another database ({}), not in this profile", s.db)
        } else if !writes && !large && spent >= opts.coverage * total {
            format!("beyond --coverage ({shares})")
        } else if c.units >= opts.max_shapes {
            format!("beyond --max-shapes ({shares})")
        } else {
            c.emitted.extend(u.clone());
            c.covered += s.count;
            c.units += 1;
            spent += unit_cost(&u);
            continue;
        };
        for i in u {
            c.reasons[i] = reason.clone();
        }
        left.shapes_not_emitted += 1;
        left.operations_not_emitted += s.count;
    }
    // In the order seen (the largest first, a transaction's steps in order).
    c.emitted.sort_unstable();
    c
}

/// The account of one shape: what the source said of it, and `emitted` (how it was emitted, or
/// why not).
pub(super) fn shape_stat(
    s: &Seen,
    emitted: String,
    operations: u64,
    total_ms: f64,
    window_s: f64,
    sample_rate: f64,
) -> ShapeStat {
    let ms = s.sorted_ms();
    let q = |p: f64| quantile(&ms, p);
    let per = |x: i64| {
        (s.examined_known && s.returned > 0)
            .then(|| crate::num::real_signed(x) / crate::num::real_signed(s.returned))
    };
    ShapeStat {
        namespace: format!("{}.{}", s.db, s.coll),
        operation: s.op.verb.name(),
        shape: match &s.txn {
            Some(t) => format!("transaction step {}/{}: {}", t.pos + 1, t.of, s.op.key()),
            None => s.op.key(),
        },
        count: s.count,
        // A transaction is one operation: its share is on its first step.
        share: if operations > 0 && s.pos() == 0 {
            crate::num::real(s.count) / crate::num::real(operations)
        } else {
            0.0
        },
        server_time_share: if total_ms > 0.0 {
            s.millis.iter().sum::<f64>() / total_ms
        } else {
            0.0
        },
        ops_per_sec: crate::num::real(s.count) / window_s / sample_rate,
        p50_ms: q(0.5),
        p95_ms: q(0.95),
        max_ms: ms.last().copied().unwrap_or(0.0),
        plan: s.plan().cloned(),
        keys_per_returned: per(s.keys_examined),
        docs_per_returned: per(s.docs_examined),
        emitted,
        returned_per_call: (s.nreturned_n > 0)
            .then(|| crate::num::real_signed(s.nreturned) / crate::num::real(s.nreturned_n)),
        replay_returned_per_call: None,
        source_work: None,
        replay_work: None,
        examples: s.examples.clone(),
        writes: s.op.verb.writes(),
        selects_by: s
            .op
            .slots
            .iter()
            .filter(|sl| {
                sl.kind != SlotKind::Param && (selects(sl) || sl.field.as_deref() == Some("_id"))
            })
            .filter_map(|sl| sl.field.clone())
            .fold(Vec::new(), |mut v, f| {
                if !v.contains(&f) {
                    v.push(f);
                }
                v
            }),
    }
}
