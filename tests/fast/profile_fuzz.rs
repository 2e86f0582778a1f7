//! Fuzzing the profile parser and validator (proptest): whatever the text, `parse` then
//! `RunPlan::build` return a plan or an error that names a real place in the file; they never
//! panic. Inputs that once broke it are kept in tests/corpus/ and replayed here.

// The profile error is large by design (file, line, key, value, fix); see src/lib.rs.
#![allow(clippy::result_large_err)]

use mongo_stress::plan::profile::{self, bundled};
use mongo_stress::plan::{Overrides, RunPlan};
use proptest::prelude::*;

/// Parses and validates; panics only if the code under test does, or if an error points
/// outside the text.
fn check(text: &str) {
    let lines = text.lines().count().max(1);
    let result = profile::parse("fuzz.toml", text, "fuzz")
        .and_then(|l| RunPlan::build(&l, &Overrides::default()));
    if let Err(e) = result {
        assert!(
            e.line >= 1 && e.line <= lines + 1,
            "line {} of {lines}: {e}",
            e.line
        );
        assert!(e.column >= 1, "{e}");
        assert!(!e.problem.is_empty() && !e.expected.is_empty(), "{e:?}");
        assert_eq!(e.file, "fuzz.toml");
    }
}

const KEYS: &[&str] = &[
    "name",
    "op",
    "threads",
    "loops",
    "duration",
    "ramp_up",
    "start_delay",
    "stage",
    "rate",
    "limit",
    "count",
    "filter",
    "set",
    "target",
    "many",
    "mix",
    "keys",
    "inc",
    "recordcount",
    "step",
    "thredas",
    "",
    "city",
    "paired_with",
    "choice",
    "int",
    "float",
];
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-0.0",
    "nan",
    "inf",
    "\"\"",
    "\"10s\"",
    "\"99999999999y\"",
    "\"1ns\"",
    "\"insert\"",
    "\"find\"",
    "\"update\"",
    "\"remove\"",
    "\"random\"",
    "\"filter\"",
    "true",
    "[]",
    "[\"city\"]",
    "[\"nope\"]",
    "{}",
    "{ choice = [] }",
    "{ int = [5, 1] }",
    "{ paired_with = \"city\", choice = [1] }",
    "\"\\u00e9\\u0000\"",
    "[1, \"a\"]",
    "1979-05-27T07:32:00Z",
    "{ get = 95, update = 5 }",
    "{ get = 0 }",
    "{ get = -1, scan = 1 }",
    "{ upsert = 1 }",
    "{ rmw = 4294967296 }",
    "{ find = 1, remove = 1, insert = 1 }",
    "\"zipfian\"",
    "\"latest\"",
    "\"bell\"",
    "\"get\"",
    "\"rmw\"",
    "\"scan\"",
    "[\"updates\"]",
    "[\"$x\"]",
    "[500, 1000, 2000]",
    "[2000, 1000]",
    "{ from = 100, to = 5000, over = \"5m\" }",
    "{ from = 100 }",
];

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        (prop::sample::select(KEYS), prop::sample::select(VALUES))
            .prop_map(|(k, v)| format!("{k} = {v}")),
        prop::sample::select(vec![
            "[[group]]",
            "[target]",
            "[setup]",
            "[document]",
            "[document.loc]",
            "[group]",
            "["
        ])
        .prop_map(String::from),
        "[ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_profiles_never_panic(lines in prop::collection::vec(line(), 0..30)) {
        check(&lines.join("\n"));
    }

    #[test]
    fn mutated_bundled_profiles_never_panic(
        which in 0..bundled::ALL.len(),
        cut in 0usize..4000,
        len in 0usize..40,
        insert in "[ -~\n]{0,20}",
    ) {
        let text = bundled::ALL[which].text;
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) { at -= 1; }
        let mut end = (at + len).min(text.len());
        while !text.is_char_boundary(end) { end -= 1; }
        check(&format!("{}{insert}{}", &text[..at], &text[end..]));
    }
}

#[test]
fn every_case_in_the_corpus_is_refused_cleanly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        check(&text);
        let result = profile::parse("fuzz.toml", &text, "fuzz")
            .and_then(|l| RunPlan::build(&l, &Overrides::default()));
        assert!(result.is_err(), "{} should be refused", path.display());
        n += 1;
    }
    assert!(n >= 10, "the corpus has {n} cases");
}
