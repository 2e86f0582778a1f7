//! The captured operations made into a profile and its account: shapes counted and ordered, the
//! fewest that cover the wanted share emitted as `[[group.ops]]`, fields fitted once per
//! collection, a `[[collection]]` per namespace with its indexes, document template and a
//! preload, a `[[group]]` per application (or namespace, or one) at the observed rate times the
//! scale; `shapes.tsv`, `capture.json` and the console's lines.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use mongodb::bson::{Bson, Document};
use serde::Serialize;
use toml::Value;

use super::fit;
use super::shape::{self, Class, Op, SlotKind};
use super::{CollectionInfo, GroupBy, LeftOut, Observed, Options};

mod choice;
use choice::*;

mod collect;
pub(crate) use collect::Collector;

mod fields;
use fields::*;

mod ranks;
use ranks::*;

mod render;
use render::*;

mod tally;
use tally::*;

/// One shape with what the source said of its operations.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ShapeStat {
    pub(crate) namespace: String,
    pub(crate) operation: &'static str,
    pub(crate) shape: String,
    pub(crate) count: u64,
    pub(crate) share: f64,
    /// Share of the server's time (the source's `millis` added) the shape took, 0..=1.
    pub(crate) server_time_share: f64,
    pub(crate) ops_per_sec: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p95_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) plan: Option<String>,
    pub(crate) keys_per_returned: Option<f64>,
    pub(crate) docs_per_returned: Option<f64>,
    /// `group:name` when emitted, else why not.
    pub(crate) emitted: String,
    /// Documents the source returned per call (its `nreturned`), when it said.
    pub(crate) returned_per_call: Option<f64>,
    /// What the replay's reads return per call, measured by capture's check on a scratch
    /// server holding the profile's preload (None when not checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replay_returned_per_call: Option<f64>,
    /// The work per call of the source's own commands, sent to the source again by the check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) source_work: Option<super::Work>,
    /// The work per call of the replay's drawn requests on the check's scratch server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) replay_work: Option<super::Work>,
    /// Commands of a read as the source received them (up to 100), for the check.
    #[serde(skip)]
    pub(crate) examples: Vec<Document>,
    /// The fields the shape selects by (its filter's), for the check's advice.
    #[serde(skip)]
    pub(crate) selects_by: Vec<String>,
    /// It writes (kept whatever `--coverage` says; a line names it when left out).
    pub(crate) writes: bool,
}

/// The capture's result: the profile's text and its account.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Captured {
    pub(crate) source: String,
    pub(crate) first: Option<String>,
    pub(crate) last: Option<String>,
    pub(crate) window_s: f64,
    /// The window the source was read for (`--for`), when it had one: the operations' rates
    /// are over `window_s`, the span they were seen in.
    pub(crate) capture_window_s: Option<f64>,
    /// Operations of the kinds a profile sends (statements of updates and deletes one each).
    pub(crate) operations: u64,
    pub(crate) emitted_shapes: usize,
    /// Share of the operations the emitted shapes cover, 0..=1.
    pub(crate) coverage: f64,
    pub(crate) database: Option<String>,
    pub(crate) shapes: Vec<ShapeStat>,
    pub(crate) left_out: LeftOut,
    /// What the source cannot see, said once.
    pub(crate) blind: Vec<String>,
    /// What the profile could not learn that it should have (said as warnings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
    pub(crate) scale: f64,
    #[serde(skip)]
    pub(crate) profile: String,
}

/// Builds the profile and the account from what the source gave (`collected`, finished here).
pub(crate) fn build(
    mut collected: Collector,
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    name: &str,
    source: &str,
) -> Captured {
    collected.finish();
    let (partial, aborted, commits_visible) = collected.transactions();
    let Collector {
        tally:
            Tally {
                mut seen,
                first,
                last,
                operations,
                ..
            },
        mut left,
        ..
    } = collected;
    left.partial_transactions += partial;
    left.aborted_transactions = aborted;
    let blind = transaction_notes(commits_visible, &left);
    // Rates are over the span the operations were seen in, not the window asked for (an
    // application busy for 10 s of a 60 s window ran at its rate, not a sixth of it).
    let window_s = window_between(first, last);
    // Largest first; a transaction's steps together and in order.
    seen.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.unit().cmp(&b.unit()))
            .then(a.pos().cmp(&b.pos()))
    });
    // The profile is for one database: the one with the most operations.
    let database = main_database(&seen);
    let chosen = choose(&seen, database.as_deref(), opts, operations, &mut left);

    let now_ms = if last > i64::MIN { last } else { 0 };
    let fields = fit_fields(&seen, &chosen.emitted, infos, opts, now_ms);
    let mut blind = blind;
    let warnings = unsampled(&fields, infos, opts, &mut blind);
    let (profile, names) = Renderer {
        seen: &seen,
        emitted: &chosen.emitted,
        infos,
        fields: &fields,
        opts,
        window_s,
        operations,
        database: database.as_deref(),
        names: HashMap::new(),
    }
    .render(name, source);

    let total_ms: f64 = seen.iter().flat_map(|s| s.millis.iter()).sum();
    let shapes = seen
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let emitted = names
                .get(&i)
                .cloned()
                .unwrap_or_else(|| format!("not emitted: {}", chosen.reasons[i]));
            shape_stat(s, emitted, operations, total_ms, window_s, opts.sample_rate)
        })
        .collect();
    let date = |ms: i64| {
        (first <= last)
            .then(|| {
                mongodb::bson::DateTime::from_millis(ms)
                    .try_to_rfc3339_string()
                    .ok()
            })
            .flatten()
    };
    Captured {
        source: source.to_string(),
        first: date(first),
        last: date(last),
        window_s,
        capture_window_s: opts.window_s,
        operations,
        emitted_shapes: chosen.units,
        coverage: if operations > 0 {
            crate::num::real(chosen.covered) / crate::num::real(operations)
        } else {
            0.0
        },
        database,
        shapes,
        left_out: left,
        blind,
        warnings,
        scale: opts.scale,
        profile,
    }
}

/// What the fields fitted from the operations alone (their documents not read) are said as: a
/// note with `--no-sample-data` (added to `blind`), else a warning naming them and why.
fn unsampled(
    fields: &Fields,
    infos: &HashMap<(String, String), CollectionInfo>,
    opts: &Options,
    blind: &mut Vec<String>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if !fields.from_queries.is_empty() {
        let named: Vec<String> = fields
            .from_queries
            .iter()
            .map(|(c, f)| format!("{c}.{f}"))
            .collect();
        let refused: Vec<String> = infos
            .iter()
            .filter_map(|((_, c), i)| i.unreadable.as_ref().map(|why| format!("{c}: {why}")))
            .collect();
        let failed: Vec<String> = infos
            .iter()
            .filter_map(|((_, c), i)| i.sampling_failed.as_ref().map(|why| format!("{c}: {why}")))
            .collect();
        if !opts.sample_data {
            blind.push(format!(
                "--no-sample-data: the values of {} are fitted from the captured operations alone (how often the documents hold each is not known)",
                named.join(", ")
            ));
        } else if !refused.is_empty() {
            warnings.push(format!(
                "the source's documents could not be read ({}): the values of {} are fitted from the captured operations alone, so the replay's documents may hold them more or less often than the source's\n  fix: capture as a user that may find on those collections (the read role), or pass --no-sample-data to say you mean it",
                refused.join("; "),
                named.join(", ")
            ));
        } else if !failed.is_empty() {
            warnings.push(format!(
                "reading the source's documents failed ({}): the values of {} are fitted from the captured operations alone, so the replay's documents may hold them more or less often than the source's\n  fix: capture again when the source answers, with a smaller --sample-docs, or pass --no-sample-data to say you mean it",
                failed.join("; "),
                named.join(", ")
            ));
        }
    }
    warnings
}

/// The value at a dotted path of a document.
pub(crate) fn lookup_path<'a>(d: &'a Document, path: &str) -> Option<&'a Bson> {
    lookup(d, path)
}

/// The captured profile's database: the source's name with `_replay` (within MongoDB's 63 bytes).
pub(crate) fn replay_database(source: &str) -> String {
    let mut base: String = source.to_string();
    while base.len() > 63 - "_replay".len() {
        base.pop();
    }
    format!("{base}_replay")
}

/// `shapes.tsv`: one line per shape.
pub(crate) fn shapes_tsv(c: &Captured) -> String {
    let mut out = String::from("namespace\toperation\tshape\tcount\tshare\tops_per_sec\tp50_ms\tp95_ms\tmax_ms\tplan\tkeys_per_returned\tdocs_per_returned\temitted\treturned_per_call\treplay_returned_per_call\tsource_docs_examined_per_call\treplay_docs_examined_per_call\tsource_keys_examined_per_call\treplay_keys_examined_per_call\tsource_counted_per_call\treplay_counted_per_call\n");
    let opt = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{x:.2}"));
    for s in &c.shapes {
        let clean = |t: &str| t.replace(['\t', '\n'], " ");
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{:.4}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            clean(&s.namespace),
            s.operation,
            clean(&s.shape),
            s.count,
            s.share,
            s.ops_per_sec,
            s.p50_ms,
            s.p95_ms,
            s.max_ms,
            clean(s.plan.as_deref().unwrap_or("-")),
            opt(s.keys_per_returned),
            opt(s.docs_per_returned),
            clean(&s.emitted),
            opt(s.returned_per_call),
            opt(s.replay_returned_per_call),
            opt(s.source_work.and_then(|w| w.docs_examined).map(|x| x.mean)),
            opt(s.replay_work.and_then(|w| w.docs_examined).map(|x| x.mean)),
            opt(s.source_work.and_then(|w| w.keys_examined).map(|x| x.mean)),
            opt(s.replay_work.and_then(|w| w.keys_examined).map(|x| x.mean)),
            opt(s.source_work.and_then(|w| w.counted).map(|x| x.mean)),
            opt(s.replay_work.and_then(|w| w.counted).map(|x| x.mean)),
        );
    }
    out
}

/// The console's account: the shapes and one line of coverage.
/// Most a replay's figure per call may differ from the source's, as a share of the source's.
pub(crate) const WORK_TOLERANCE: f64 = 0.25;

/// Whether the replay's figure `b` differs from the source's `a`: by more than
/// `WORK_TOLERANCE` of it and one document at least, and by more than twice the standard error
/// of the difference (a skewed field's calls vary widely: 30 of them can differ by chance).
pub(crate) fn differs(a: super::PerCall, b: super::PerCall) -> bool {
    let d = (b.mean - a.mean).abs();
    d >= 1.0 && d > WORK_TOLERANCE * a.mean.max(1.0) && d > 2.0 * a.se.hypot(b.se)
}

/// The check's table of the work each read does per call, in the source and in the replay
/// (returned, documents examined, keys examined, counted: "source / replay"), and a warning
/// for each read whose figures differ by more than `WORK_TOLERANCE` (and by one document at
/// least), naming the figure, the read's fields and the fix.
pub(crate) fn work_table(c: &Captured, draws: u32) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut warnings = Vec::new();
    let checked: Vec<&ShapeStat> = c
        .shapes
        .iter()
        .filter(|s| s.replay_work.is_some() || s.source_work.is_some())
        .collect();
    if checked.is_empty() {
        return (out, warnings);
    }
    let width = checked
        .iter()
        .map(|s| s.emitted.chars().count())
        .max()
        .unwrap_or(0)
        .max("read".len());
    let _ = writeln!(
        out,
        "work per call, source / replay: the source's own commands sent to it again, and the replay's requests drawn on a scratch server holding the profile's preload ({draws} calls each, fewer for a read slower than 5 s in all):"
    );
    let _ = writeln!(
        out,
        "  {:<width$}  {:>17}  {:>17}  {:>17}  {:>17}  calls",
        "read", "returned", "docs examined", "keys examined", "counted"
    );
    for s in &checked {
        let src = s.source_work;
        let rep = s.replay_work;
        // Without the source's server, what its profiler or log said it returned.
        let src_returned = src.map(|w| w.returned).or(s
            .returned_per_call
            .map(|mean| super::PerCall { mean, se: 0.0 }));
        let figures: [(&str, Option<super::PerCall>, Option<super::PerCall>); 4] = [
            ("documents returned", src_returned, rep.map(|w| w.returned)),
            (
                "documents examined",
                src.and_then(|w| w.docs_examined),
                rep.and_then(|w| w.docs_examined),
            ),
            (
                "keys examined",
                src.and_then(|w| w.keys_examined),
                rep.and_then(|w| w.keys_examined),
            ),
            (
                "documents counted",
                src.and_then(|w| w.counted),
                rep.and_then(|w| w.counted),
            ),
        ];
        let cell = |a: Option<super::PerCall>, b: Option<super::PerCall>| {
            let f = |x: Option<super::PerCall>| {
                x.map_or_else(|| "-".to_string(), |x| format!("{:.1}", x.mean))
            };
            format!("{} / {}", f(a), f(b))
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {:>17}  {:>17}  {:>17}  {:>17}  {} / {}",
            s.emitted,
            cell(figures[0].1, figures[0].2),
            cell(figures[1].1, figures[1].2),
            cell(figures[2].1, figures[2].2),
            cell(figures[3].1, figures[3].2),
            src.map_or_else(|| "-".into(), |w| w.calls.to_string()),
            rep.map_or_else(|| "-".into(), |w| w.calls.to_string()),
        );
        let fields = if s.selects_by.is_empty() {
            "its filter".to_string()
        } else {
            format!("its values of {}", s.selects_by.join(", "))
        };
        let fix = format!(
            "fix: compare the generators of {} in profile.toml with the source's values (a sampled field's frequencies come from --sample-docs documents: raise it; a date range selects what the documents' dates in [collection.document] put in it)",
            if s.selects_by.is_empty() {
                "the filter's fields".to_string()
            } else {
                s.selects_by.join(", ")
            }
        );
        for (what, a, b) in figures {
            let (Some(a), Some(b)) = (a, b) else { continue };
            if a.mean >= 0.5 && b.mean < 0.05 && what == "documents returned" {
                warnings.push(format!(
                    "{} returned {:.1} documents per call in the source but selects none in the replay: {fields} match no preloaded document\n  {fix}",
                    s.emitted, a.mean
                ));
                break;
            }
            if differs(a, b) {
                warnings.push(format!(
                    "{}: {what} per call {:.1} in the source, {:.1} in the replay ({:+.0} %, beyond the draws' noise): {fields} select another share of the documents\n  {fix}",
                    s.emitted,
                    a.mean,
                    b.mean,
                    100.0 * (b.mean - a.mean) / a.mean.max(1.0)
                ));
            }
        }
    }
    (out, warnings)
}

/// What the capture left out, each kind with its count (those of none are not said).
fn left_out(l: &LeftOut) -> Vec<String> {
    let mut parts = Vec::new();
    let mut say = |n: u64, what: &str| {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    };
    say(l.driver_total(), "driver commands");
    say(l.getmore_folded, "getMore folded");
    say(
        l.double_logged,
        "update/delete command lines counted by their statements",
    );
    say(
        l.other_total(),
        &format!(
            "DDL, admin or change streams ({})",
            l.other.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    );
    say(
        l.partial_transactions,
        "partial transactions (statements captured one by one)",
    );
    say(
        l.aborted_transactions,
        "aborted transactions (statements captured one by one)",
    );
    say(
        l.truncated,
        "truncated commands (shapes kept as far as they go)",
    );
    say(l.not_json, "lines not JSON");
    say(l.not_operations, "lines not operations");
    say(l.outside_window, "outside --since/--until");
    parts
}

pub(crate) fn console(c: &Captured) -> String {
    let mut out = String::new();
    // As wide as the longest name: a name is never cut (the shapes are: shapes.tsv has them whole).
    let width = c
        .shapes
        .iter()
        .take(30)
        .map(|s| s.emitted.chars().count())
        .max()
        .unwrap_or(0)
        .max("emitted as".len());
    let _ = writeln!(
        out,
        "{:>7}  {:>6}  {:>8}  {:>8}  {:<width$}  shape",
        "share", "count", "ops/s", "p95 ms", "emitted as"
    );
    for s in c.shapes.iter().take(30) {
        let shape: String = format!("{} {}", s.namespace, s.shape)
            .chars()
            .take(100)
            .collect();
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>6}  {:>8.2}  {:>8.1}  {:<width$}  {}",
            100.0 * s.share,
            s.count,
            s.ops_per_sec,
            s.p95_ms,
            s.emitted,
            shape
        );
    }
    for s in c
        .shapes
        .iter()
        .filter(|s| s.writes && s.emitted.starts_with("not emitted"))
    {
        let _ = writeln!(
            out,
            "left out: a write, {} {} ({} operations), {}; it changes what the other operations find (raise --max-shapes to keep it)",
            s.namespace, s.shape, s.count, s.emitted
        );
    }
    if c.shapes.len() > 30 {
        let _ = writeln!(
            out,
            "... and {} more shapes (shapes.tsv has them all)",
            c.shapes.len() - 30
        );
    }
    let l = &c.left_out;
    let parts = left_out(l);
    let _ = writeln!(
        out,
        "{} operations{} seen over {:.1} s{}: {} shapes cover {:.1} %{}",
        c.operations,
        if l.transactions > 0 {
            format!(" ({} of them transactions)", l.transactions)
        } else {
            String::new()
        },
        c.window_s,
        match c.capture_window_s {
            Some(w) => format!(
                " of the {w:.1} s window (the rates are over the {:.1} s)",
                c.window_s
            ),
            None => String::new(),
        },
        c.emitted_shapes,
        100.0 * c.coverage,
        if parts.is_empty() {
            String::new()
        } else {
            format!("; left out: {}", parts.join(", "))
        }
    );
    for b in &c.blind {
        let _ = writeln!(out, "note: {b}");
    }
    out
}

#[cfg(test)]
mod tests;
