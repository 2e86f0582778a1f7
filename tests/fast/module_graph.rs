//! The layout's rules, checked on the source: every top-level module of `src/` has a rank, and a
//! module imports only modules of lower rank (so no import goes up, and none comes back around a
//! circle); nothing imports `app`, and nothing on the hot path (`executor`, `ops`, `metrics`)
//! imports `report`. Inside a module, no files import each other around a circle (one known
//! circle left in `workload`, listed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to: `src/plan/build.rs` -> `plan`, `src/cli.rs` -> `cli`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component");
    Path::new(first.as_os_str())
        .file_stem()
        .expect("a name")
        .to_string_lossy()
        .into_owned()
}

/// The top-level modules a file names through `crate::x` or `crate::{x, y}`.
fn uses(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let m = module_of(&src, &f);
        if m == "lib" || m == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read");
        let entry = g.entry(m.clone()).or_default();
        for u in uses(&text) {
            if u != m {
                entry.insert(u);
            }
        }
    }
    g
}

/// A cycle through `node`, if any, as the path that closes it.
fn cycle_from(
    g: &BTreeMap<String, BTreeSet<String>>,
    node: &str,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|p| p == node) {
        let mut c = path[at..].to_vec();
        c.push(node.to_string());
        return Some(c);
    }
    path.push(node.to_string());
    for next in g.get(node).into_iter().flatten() {
        if let Some(c) = cycle_from(g, next, path) {
            return Some(c);
        }
    }
    path.pop();
    None
}

#[test]
fn the_graph_is_read_from_the_source() {
    let g = graph();
    // The check below is only worth something if the parser sees the real edges.
    for (from, to) in [
        ("executor", "metrics"),
        ("executor", "ops"),
        ("summary", "metrics"),
        ("report", "summary"),
        ("app", "executor"),
        ("plan", "workload"),
    ] {
        assert!(g[from].contains(to), "{from} -> {to} not found in {g:?}");
    }
    assert!(g.len() >= 14, "{g:?}");
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let g = graph();
    for node in g.keys() {
        if let Some(c) = cycle_from(&g, node, &mut Vec::new()) {
            panic!("import cycle: {}", c.join(" -> "));
        }
    }
}

#[test]
fn nothing_imports_app_and_the_hot_path_never_imports_report() {
    let g = graph();
    for (from, to) in &g {
        assert!(!to.contains("app"), "{from} imports app");
    }
    for hot in ["executor", "ops", "metrics", "workload"] {
        assert!(!g[hot].contains("report"), "{hot} imports report");
    }
}

/// The ranks, lowest first: a module imports only modules of a lower rank. The result model
/// (`summary`) sits below the modules that act (`audit`, `fault`, `ops`, `executor`): their
/// results' types are its own. A new top-level module must be given a rank here.
const RANKS: &[(&str, u32)] = &[
    // Imports nothing of the crate.
    ("console", 0),
    ("error", 0),
    ("num", 0),
    ("redact", 0),
    ("vocab", 0),
    ("workload", 1),
    ("driver_error", 1),
    ("server", 1),
    ("metrics", 1),
    ("serve", 1),
    ("monitor", 2),
    ("samplelog", 2),
    ("plan", 3),
    // The result model and what reads only plans.
    ("summary", 4),
    ("cli", 4),
    ("capture", 4),
    ("exporter", 4),
    // The actors, and the searches over results.
    ("audit", 5),
    ("fault", 5),
    ("listen", 5),
    ("capacity", 5),
    ("ops", 6),
    ("sweep", 6),
    ("executor", 7),
    ("rundir", 7),
    ("compare", 8),
    ("merge", 8),
    ("history", 8),
    ("report", 9),
    // The live page: the report's drawing, fed by the recorder, steering the executor.
    ("watch", 10),
    // A run across many load generators: the protocol, the coordinator's hub, a part's link.
    ("coordinate", 10),
    ("app", 11),
];

/// The edges that go to a module of the same or a higher rank.
fn upward(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let rank = |m: &str| RANKS.iter().find(|(n, _)| *n == m).map(|(_, r)| *r);
    let mut out = Vec::new();
    for (from, to) in g {
        for t in to {
            match (rank(from), rank(t)) {
                (Some(a), Some(b)) if b >= a => {
                    out.push(format!("{from} (rank {a}) imports {t} (rank {b})"))
                }
                (None, _) => out.push(format!("{from} has no rank")),
                (_, None) => out.push(format!("{t} has no rank")),
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_module_imports_only_modules_of_lower_rank() {
    let g = graph();
    let up = upward(&g);
    assert!(up.is_empty(), "imports that go up: {up:#?}");
    for m in g.keys() {
        assert!(RANKS.iter().any(|(n, _)| n == m), "{m} has no rank");
    }
}

#[test]
fn an_upward_import_is_found() {
    // The check above is only worth something if it fails on an import that goes up.
    let mut g = graph();
    g.get_mut("summary").unwrap().insert("ops".into());
    assert_eq!(upward(&g), ["summary (rank 4) imports ops (rank 6)"]);
}

// ---- Circles between the files of one module -------------------------------------------------

/// A file's module path under `src/`: `src/plan/build/mod.rs` -> `plan::build`; None for
/// `lib.rs`, `main.rs` and test modules (`tests.rs`, or a file under a `tests` folder).
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut segs: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    let skip =
        segs.is_empty() || segs == ["lib"] || segs == ["main"] || segs.iter().any(|s| s == "tests");
    (!skip).then_some(segs)
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every path a file names from `crate::`, `super::` or `self::`, a `{..}` group's items each
/// made a path of its own (one level).
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let at_word = i == 0 || {
            let b = bytes[i - 1];
            !(b.is_ascii_alphanumeric() || b == b'_' || b == b':')
        };
        let root = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|r| rest.starts_with(r));
        let Some(root) = root.filter(|_| at_word) else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let mut path = vec![root.trim_end_matches("::").to_string()];
        let mut j = i + root.len();
        loop {
            let r = &code[j..];
            if let Some(group) = r.strip_prefix('{') {
                let body = &group[..group.find('}').unwrap_or(group.len())];
                for item in body.split(',') {
                    let item = item.split(" as ").next().unwrap_or("").trim();
                    let mut p = path.clone();
                    p.extend(
                        item.split("::")
                            .map(ident)
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(str::to_string),
                    );
                    out.push(p);
                }
                j += 1 + body.len();
                break;
            }
            let name = ident(r);
            if name.is_empty() {
                break;
            }
            path.push(name.to_string());
            j += name.len();
            if code[j..].starts_with("::") {
                j += 2;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            out.push(path);
        }
        i = j.max(i + 1);
    }
    out
}

/// The items a file defines at its top level: `fn`, `struct`, `enum`, `trait`, `type`, `const`
/// and `static` names, whatever their visibility.
fn top_level_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let mut l = line;
        if l.starts_with(char::is_whitespace) {
            continue;
        }
        for v in ["pub(crate) ", "pub(super) ", "pub "] {
            l = l.strip_prefix(v).unwrap_or(l);
        }
        // `const fn`, `async fn`, `unsafe fn`: the name follows `fn`.
        for q in ["const ", "async ", "unsafe "] {
            if l.strip_prefix(q)
                .is_some_and(|r| r.starts_with("fn ") || r.starts_with("unsafe "))
            {
                l = &l[q.len()..];
            }
        }
        for kw in [
            "fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ",
        ] {
            if let Some(rest) = l.strip_prefix(kw) {
                let name = ident(rest);
                if !name.is_empty() {
                    out.insert(name.to_string());
                }
            }
        }
    }
    out
}

/// Whether `text` names `name` as an item, not as a method, field or path segment: a type
/// (capitalized) anywhere, a function where it is called.
fn uses_name(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        from = end;
        let before = start.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b':')
        {
            continue;
        }
        let after = &text[end..];
        if after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let is_type = name.starts_with(|c: char| c.is_uppercase());
        if is_type || after.trim_start().starts_with('(') {
            return true;
        }
    }
    false
}

/// The graph of files (modules) inside each top-level module: an edge where a file names an
/// item of another file that is neither its ancestor (a parent is the namespace its children
/// live in) nor its descendant (a parent declares its children). A name a parent re-exports from
/// a child (`use child::{Name}`) is the child's.
fn file_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut texts: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for f in &all {
        if let Some(m) = module_path(&src, f) {
            let text = std::fs::read_to_string(f).expect("read");
            // An inline test module (at the end of its file) is the tests', not the file's.
            let text = text
                .split("\n#[cfg(test)]\nmod tests {")
                .next()
                .unwrap_or("");
            let code: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            texts.insert(m, code.join("\n"));
        }
    }
    let modules: BTreeSet<Vec<String>> = texts.keys().cloned().collect();
    let child = |m: &[String], name: &str| {
        let mut c = m.to_vec();
        c.push(name.to_string());
        modules.contains(&c).then_some(c)
    };
    // Names each module defines at its top level.
    let defines: BTreeMap<&Vec<String>, BTreeSet<String>> =
        texts.iter().map(|(m, t)| (m, top_level_names(t))).collect();
    // Names each module re-exports from a child of its own (`use child::{A, B}`, and every
    // name of the child for `use child::*`), whatever the `use`'s visibility and line breaks.
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (m, text) in &texts {
        for statement in text.split(';') {
            let l = statement.trim_start();
            let l = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find_map(|v| l.strip_prefix(v))
                .unwrap_or(l);
            let Some(rest) = l.strip_prefix("use ") else {
                continue;
            };
            let first = ident(rest);
            let Some(c) = child(m, first) else { continue };
            let Some(items) = rest[first.len()..].strip_prefix("::") else {
                continue;
            };
            let names: Vec<String> = if items.trim() == "*" {
                defines[&c].iter().cloned().collect()
            } else {
                items
                    .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                    .filter(|n| !n.is_empty() && *n != "self" && *n != "as")
                    .map(str::to_string)
                    .collect()
            };
            for name in names {
                reexports
                    .entry(m.clone())
                    .or_default()
                    .insert(name, c.clone());
            }
        }
    }
    let resolve = |m: &Vec<String>, path: &[String]| -> Option<Vec<String>> {
        let (mut cur, rest) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (m.clone(), &path[1..]),
            _ => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let keep = m.len().checked_sub(ups)?;
                (m[..keep].to_vec(), &path[ups..])
            }
        };
        for seg in rest {
            if let Some(c) = child(&cur, seg) {
                cur = c;
            } else {
                if let Some(to) = reexports.get(&cur).and_then(|r| r.get(seg)) {
                    cur = to.clone();
                }
                break;
            }
        }
        Some(cur)
    };
    let mut g: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, text) in &texts {
        let entry = g.entry(m.clone()).or_default();
        // A child with `use super::*;` names its siblings' items through its parent, by name.
        if text.lines().any(|l| l.trim() == "use super::*;") && m.len() > 1 {
            let parent = &m[..m.len() - 1];
            for (name, sibling) in reexports.get(parent).into_iter().flatten() {
                if sibling != m && !defines[m].contains(name) && uses_name(text, name) {
                    entry.insert(sibling.clone());
                }
            }
        }
        for p in named_paths(text) {
            let Some(to) = resolve(m, &p) else { continue };
            let related =
                to.is_empty() || m.starts_with(&to) || to.starts_with(m) || to.first() != m.first();
            if !related {
                entry.insert(to);
            }
        }
    }
    g
}

/// The groups of files that import each other around a circle (strongly connected, more than
/// one file), each sorted, as `a::b` names.
fn circles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in g.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        g.keys().map(|k| (k, reach(k))).collect();
    let mut out: BTreeSet<Vec<String>> = BTreeSet::new();
    for (v, r) in &reaches {
        let mut group: Vec<String> = r
            .iter()
            .filter(|w| reaches.get(w).is_some_and(|back| back.contains(*v)))
            .map(|w| w.join("::"))
            .collect();
        if group.len() > 1 {
            group.sort();
            out.insert(group);
        }
    }
    out.into_iter().collect()
}

#[test]
fn no_files_of_one_module_import_each_other_around_a_circle() {
    let g = file_graph();
    assert!(
        g.len() > 150,
        "the parser sees every file: {} modules",
        g.len()
    );
    let found = circles(&g);
    assert!(
        found.is_empty(),
        "files of one module that import each other around a circle (move what both need to \
         one of them, or to their parent): {found:#?}"
    );
}

#[test]
fn a_circle_between_two_files_is_found() {
    // The check above is only worth something if it fails on a circle the source does not have.
    let mut g = file_graph();
    let s = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    assert!(
        g[&s("history::ledger")].contains(&s("history::input")),
        "the edge the test turns into a circle: {:?}",
        g[&s("history::ledger")]
    );
    assert!(circles(&g)
        .iter()
        .all(|c| !c.contains(&"history::input".to_string())));
    g.get_mut(&s("history::input"))
        .unwrap()
        .insert(s("history::ledger"));
    assert!(circles(&g).contains(&vec![
        "history::input".to_string(),
        "history::ledger".to_string()
    ]));
}

#[test]
fn the_file_graph_reads_paths_globs_and_calls() {
    // The parser's pieces on text the source does not have, so that a blind spot fails here.
    let paths = named_paths("use super::{a::B, c as d};\nlet x = crate::m::f(super::super::g);");
    let paths: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        ["super::a::B", "super::c", "crate::m::f", "super::super::g"]
    );
    assert!(uses_name("let n = whole(&b);", "whole"));
    assert!(!uses_name(
        "let n = x.whole(&b); s.whole; a::whole(b)",
        "whole"
    ));
    assert!(uses_name("fn f(a: &Args<'_>) {}", "Args"));
    assert!(!uses_name("ArgsOf", "Args"));
    let names = top_level_names("pub(super) fn kind() {}\nstruct Args;\n    fn inner() {}\n");
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["Args", "kind"]);
}
