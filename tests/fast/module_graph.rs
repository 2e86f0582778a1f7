//! The layout's rules, checked on the source: every top-level module of `src/` has a rank, and a
//! module imports only modules of lower rank (so no import goes up, and none comes back around a
//! circle); nothing imports `app`, and nothing on the hot path (`executor`, `ops`, `metrics`)
//! imports `report`.

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
