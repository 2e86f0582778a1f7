//! Maps between places in a profile's TOML text and dotted key paths (`group[1].threads`), so
//! that both parse errors (which know a byte span) and validation errors (which know a key path)
//! can name the file, line, column, key and value.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// Line and column (both 1-based) of a byte offset.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The deepest key path whose key or value covers `offset`, with that entry's value span.
pub(crate) fn key_at(source: &str, offset: usize) -> Option<(String, Range<usize>)> {
    let doc = DeTable::parse(source).ok()?;
    let mut best: Option<(String, Range<usize>, usize)> = None;
    walk_table(doc.get_ref(), "", offset, &mut best);
    best.map(|(path, span, _)| (path, span))
}

/// Every value's span by its key path, from one parse (a genny workload's profile has thousands
/// of operations, each located for its row).
#[derive(Debug, Clone, Default)]
pub(crate) struct Spans(std::collections::HashMap<Vec<OwnedSeg>, Range<usize>>);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum OwnedSeg {
    Key(String),
    Index(usize),
}

impl Spans {
    pub(crate) fn of(source: &str) -> Spans {
        let mut spans = Spans::default();
        if let Ok(doc) = DeTable::parse(source) {
            spans.table(doc.get_ref(), &mut Vec::new());
        }
        spans
    }

    fn table(&mut self, t: &DeTable, at: &mut Vec<OwnedSeg>) {
        for (k, v) in t.iter() {
            at.push(OwnedSeg::Key(k.get_ref().to_string()));
            self.value(v, at);
            at.pop();
        }
    }

    fn value(&mut self, v: &Spanned<DeValue>, at: &mut Vec<OwnedSeg>) {
        self.0.insert(at.clone(), v.span());
        match v.get_ref() {
            DeValue::Table(t) => self.table(t, at),
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    at.push(OwnedSeg::Index(i));
                    self.value(item, at);
                    at.pop();
                }
            }
            _ => {}
        }
    }

    /// The span of the value at a dotted key path, or of its nearest existing ancestor.
    pub(crate) fn get(&self, path: &str) -> Option<Range<usize>> {
        let mut at = Vec::new();
        let mut last = None;
        for seg in segments(path) {
            at.push(match seg {
                Seg::Key(k) => OwnedSeg::Key(k.to_string()),
                Seg::Index(i) => OwnedSeg::Index(i),
            });
            match self.0.get(&at) {
                Some(span) => last = Some(span.clone()),
                None => break,
            }
        }
        last
    }
}

enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

fn segments(path: &str) -> impl Iterator<Item = Seg<'_>> {
    path.split('.').flat_map(|part| {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        let indices = rest
            .split('[')
            .filter_map(|s| s.trim_end_matches(']').parse().ok())
            .map(Seg::Index);
        std::iter::once(Seg::Key(key))
            .filter(|s| !matches!(s, Seg::Key("")))
            .chain(indices)
    })
}

type Best = Option<(String, Range<usize>, usize)>;

fn consider(best: &mut Best, path: &str, span: Range<usize>, cover: Range<usize>, offset: usize) {
    if cover.start <= offset && offset < cover.end.max(cover.start + 1) {
        let width = cover.end - cover.start;
        if best.as_ref().is_none_or(|(_, _, w)| width <= *w) {
            *best = Some((path.to_string(), span, width));
        }
    }
}

fn walk_table(table: &DeTable, prefix: &str, offset: usize, best: &mut Best) {
    for (key, value) in table.iter() {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        let (ks, vs) = (key.span(), value.span());
        consider(best, &path, vs.clone(), ks.clone(), offset);
        consider(
            best,
            &path,
            vs.clone(),
            ks.start.min(vs.start)..ks.end.max(vs.end),
            offset,
        );
        walk_value(value, &path, offset, best);
    }
}

fn walk_value(value: &Spanned<DeValue>, path: &str, offset: usize, best: &mut Best) {
    match value.get_ref() {
        DeValue::Table(t) => walk_table(t, path, offset, best),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let p = format!("{path}[{i}]");
                consider(best, &p, item.span(), item.span(), offset);
                walk_value(item, &p, offset, best);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "name = \"x\"\n[[group]]\nname = \"a\"\nthreads = 4\n[[group]]\nname = \"b\"\nthreads = -5\n";

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col(SRC, 0), (1, 1));
        let at = SRC.find("-5").unwrap();
        assert_eq!(line_col(SRC, at), (7, 11));
    }

    #[test]
    fn key_at_finds_the_deepest_key_in_an_array_of_tables() {
        let at = SRC.find("-5").unwrap();
        let (path, span) = key_at(SRC, at).unwrap();
        assert_eq!(path, "group[1].threads");
        assert_eq!(&SRC[span], "-5");
    }

    #[test]
    fn spans_resolve_a_key_path_back_to_its_value_or_its_nearest_ancestor() {
        let spans = Spans::of(SRC);
        let at = |path: &str| spans.get(path).map(|r| &SRC[r]);
        assert_eq!(at("group[0].threads"), Some("4"));
        assert_eq!(at("group[1].name"), Some("\"b\""));
        assert_eq!(at("name"), Some("\"x\""));
        // A key that is not there: its nearest existing ancestor.
        assert_eq!(spans.get("group[1].nothing"), spans.get("group[1]"));
        assert_eq!(spans.get("group[5].threads"), spans.get("group"));
        assert!(at("group[1]").is_some());
        assert_eq!(spans.get(""), None);
    }
}
