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

/// The fewest shapes that cover the wanted share, at most `max_shapes`; a transaction is one
/// shape, its steps emitted or left out together. Those left out are counted in `left`.
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
    for (i, s) in seen.iter().enumerate() {
        if s.pos() > 0 {
            // The step before decided for the whole transaction.
            if c.emitted.last() == Some(&(i - 1)) {
                c.emitted.push(i);
            } else {
                c.reasons[i] = c.reasons[i - 1].clone();
            }
            continue;
        }
        // A write changes what every other operation finds: kept whatever --coverage says
        // (a transaction writes when any of its steps does).
        let writes = std::iter::once(s)
            .chain(seen[i + 1..].iter().take_while(|t| t.pos() > 0))
            .any(|t| t.op.verb.writes());
        c.reasons[i] = if Some(s.db.as_str()) != database {
            format!("another database ({}), not in this profile", s.db)
        } else if !writes
            && crate::num::real(c.covered) >= opts.coverage * crate::num::real(operations)
        {
            "beyond --coverage".into()
        } else if c.units >= opts.max_shapes {
            "beyond --max-shapes".into()
        } else {
            c.emitted.push(i);
            c.covered += s.count;
            c.units += 1;
            continue;
        };
        left.shapes_not_emitted += 1;
        left.operations_not_emitted += s.count;
    }
    c
}

/// The account of one shape: what the source said of it, and `emitted` (how it was emitted, or
/// why not).
pub(super) fn shape_stat(
    s: &Seen,
    emitted: String,
    operations: u64,
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
