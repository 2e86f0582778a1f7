use std::collections::HashMap;

use mongodb::bson::{doc, oid::ObjectId, spec::BinarySubtype, Bson, DateTime, Decimal128};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use super::compile::DEFAULT_ALPHABET;
use super::*;

/// 2024-01-31T12:00:00Z.
const NOW: i64 = 1_706_702_400_000;
const N: usize = 10_000;

fn value(src: &str) -> toml::Value {
    let t: toml::Table = toml::from_str(&format!("v = {src}")).expect("test TOML parses");
    t["v"].clone()
}

fn compile(src: &str) -> Template {
    Template::compile(&value(src), "v").unwrap_or_else(|e| panic!("{src}: {e:?}"))
}

fn compile_err(src: &str) -> GenError {
    match Template::compile(&value(src), "v") {
        Ok(t) => panic!("{src} compiled: {t:?}"),
        Err(e) => e,
    }
}

fn json(text: &str) -> Template {
    Template::compile_json(text, "v").unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn json_err(text: &str) -> GenError {
    match Template::compile_json(text, "v") {
        Ok(t) => panic!("{text} compiled: {t:?}"),
        Err(e) => e,
    }
}

/// A lookup with fixed keys (drawn uniformly), fixed fields, binds and step results.
#[derive(Default)]
struct Fixed {
    keys: Vec<Bson>,
    fields: HashMap<String, Bson>,
    binds: HashMap<String, Bson>,
    steps: HashMap<(usize, String), Bson>,
}

impl Lookup for Fixed {
    fn key(&mut self, rng: &mut dyn RngCore) -> Option<Bson> {
        if self.keys.is_empty() {
            None
        } else {
            Some(self.keys[rng.random_range(0..self.keys.len())].clone())
        }
    }
    fn field(&mut self, path: &str, _rng: &mut dyn RngCore) -> Option<Bson> {
        self.fields.get(path).cloned()
    }
    fn bind(&mut self, name: &str) -> Option<Bson> {
        self.binds.get(name).cloned()
    }
    fn step(&mut self, index: usize, path: &str) -> Option<Bson> {
        self.steps.get(&(index, path.to_string())).cloned()
    }
}

fn draw_with(t: &Template, n: usize, lookup: &mut dyn Lookup, seed: u64) -> Vec<Bson> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut state = UserState::default();
    (0..n)
        .map(|_| {
            let mut cx = Cx {
                rng: &mut rng,
                lookup: &mut *lookup,
                now_ms: NOW,
                user: 0,
                state: &mut state,
            };
            t.generate(&mut cx)
        })
        .collect()
}

fn draw(t: &Template, n: usize) -> Vec<Bson> {
    draw_with(t, n, &mut NoLookup, 7)
}

fn one(src: &str) -> Bson {
    draw(&compile(src), 1).remove(0)
}

fn ints(values: &[Bson]) -> Vec<i64> {
    values
        .iter()
        .map(|b| match b {
            Bson::Int64(i) => *i,
            other => panic!("not an Int64: {other:?}"),
        })
        .collect()
}

fn doubles(values: &[Bson]) -> Vec<f64> {
    values
        .iter()
        .map(|b| match b {
            Bson::Double(f) => *f,
            other => panic!("not a Double: {other:?}"),
        })
        .collect()
}

fn strings(values: &[Bson]) -> Vec<String> {
    values
        .iter()
        .map(|b| match b {
            Bson::String(s) => s.clone(),
            other => panic!("not a String: {other:?}"),
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / crate::num::real_len(v.len())
}

fn mean_i(v: &[i64]) -> f64 {
    crate::num::real_signed(v.iter().sum::<i64>()) / crate::num::real_len(v.len())
}

fn millis(values: &[Bson]) -> Vec<i64> {
    values
        .iter()
        .map(|b| match b {
            Bson::DateTime(d) => d.timestamp_millis(),
            other => panic!("not a DateTime: {other:?}"),
        })
        .collect()
}

// ---- ^RandomInt ----

#[test]
fn random_int_uniform_stays_within_and_hits_both_ends() {
    let v = ints(&draw(
        &compile(r#"{ "^RandomInt" = { min = -2, max = 3 } }"#),
        N,
    ));
    assert!(v.iter().all(|i| (-2..=3).contains(i)));
    for x in -2..=3 {
        let share =
            crate::num::real_len(v.iter().filter(|&&i| i == x).count()) / crate::num::real_len(N);
        assert!((share - 1.0 / 6.0).abs() < 0.02, "{x}: {share}");
    }
}

#[test]
fn random_int_with_equal_bounds_and_generated_bounds() {
    assert!(ints(&draw(
        &compile(r#"{ "^RandomInt" = { min = 7, max = 7 } }"#),
        100
    ))
    .iter()
    .all(|&i| i == 7));
    let t =
        compile(r#"{ "^RandomInt" = { min = 0, max = { "^RandomInt" = { min = 3, max = 3 } } } }"#);
    let v = ints(&draw(&t, N));
    assert!(v.iter().all(|i| (0..=3).contains(i)));
    assert!(v.contains(&0) && v.contains(&3));
}

#[test]
fn random_int_distributions_have_their_means() {
    let b = ints(&draw(
        &compile(r#"{ "^RandomInt" = { distribution = "binomial", t = 10, p = 0.5 } }"#),
        N,
    ));
    assert!(b.iter().all(|i| (0..=10).contains(i)));
    assert!((mean_i(&b) - 5.0).abs() < 0.1, "{}", mean_i(&b));
    let g = ints(&draw(
        &compile(r#"{ "^RandomInt" = { distribution = "geometric", p = 0.25 } }"#),
        N,
    ));
    // Failures before the first success: mean (1 - p) / p.
    assert!(g.iter().all(|&i| i >= 0) && g.contains(&0));
    assert!((mean_i(&g) - 3.0).abs() < 0.15, "{}", mean_i(&g));
    let p = ints(&draw(
        &compile(r#"{ "^RandomInt" = { distribution = "poisson", mean = 4 } }"#),
        N,
    ));
    assert!(p.iter().all(|&i| i >= 0));
    assert!((mean_i(&p) - 4.0).abs() < 0.1, "{}", mean_i(&p));
}

// ---- ^RandomDouble ----

#[test]
fn random_double_uniform_normal_exponential() {
    let u = doubles(&draw(
        &compile(r#"{ "^RandomDouble" = { min = 2, max = 3.5 } }"#),
        N,
    ));
    assert!(u.iter().all(|f| (2.0..3.5).contains(f)));
    assert!((mean(&u) - 2.75).abs() < 0.02);
    let d = doubles(&draw(&compile(r#"{ "^RandomDouble" = {} }"#), N));
    assert!(d.iter().all(|f| (0.0..1.0).contains(f)));
    let n = doubles(&draw(
        &compile(r#"{ "^RandomDouble" = { distribution = "normal", mean = 10, sigma = 2 } }"#),
        N,
    ));
    assert!((mean(&n) - 10.0).abs() < 0.1);
    let sd = (n.iter().map(|x| (x - 10.0).powi(2)).sum::<f64>() / crate::num::real_len(N)).sqrt();
    assert!((sd - 2.0).abs() < 0.1, "{sd}");
    let e = doubles(&draw(
        &compile(r#"{ "^RandomDouble" = { distribution = "exponential", lambda = 2 } }"#),
        N,
    ));
    assert!(e.iter().all(|&x| x >= 0.0));
    assert!((mean(&e) - 0.5).abs() < 0.03, "{}", mean(&e));
}

// ---- ^RandomString ----

#[test]
fn random_string_length_and_default_alphabet() {
    let s = strings(&draw(
        &compile(r#"{ "^RandomString" = { length = 12 } }"#),
        N,
    ));
    assert!(s.iter().all(|s| s.len() == 12));
    assert!(s
        .iter()
        .all(|s| s.chars().all(|c| DEFAULT_ALPHABET.contains(c))));
    // Every character of the 64 appears.
    let seen: std::collections::HashSet<char> = s.iter().flat_map(|s| s.chars()).collect();
    assert_eq!(seen.len(), 64);
    assert_eq!(DEFAULT_ALPHABET.len(), 64);
}

#[test]
fn random_string_generated_length_and_own_alphabet() {
    let t = compile(
        r#"{ "^RandomString" = { length = { "^RandomInt" = { min = 2, max = 5 } }, alphabet = "xyz" } }"#,
    );
    let s = strings(&draw(&t, N));
    let lens: Vec<usize> = s.iter().map(|s| s.len()).collect();
    assert!(lens.iter().all(|l| (2..=5).contains(l)));
    assert!(lens.contains(&2) && lens.contains(&5));
    assert!(s.iter().all(|s| s.chars().all(|c| "xyz".contains(c))));
    let u = strings(&draw(
        &compile(r#"{ "^RandomString" = { length = 3, alphabet = "äö€" } }"#),
        1000,
    ));
    assert!(u
        .iter()
        .all(|s| s.chars().count() == 3 && s.chars().all(|c| "äö€".contains(c))));
    let fast = strings(&draw(
        &compile(r#"{ "^FastRandomString" = { length = 4 } }"#),
        10,
    ));
    assert!(fast.iter().all(|s| s.len() == 4));
    assert_eq!(
        one(r#"{ "^RandomString" = { length = 0 } }"#),
        Bson::String(String::new())
    );
}

// ---- ^Choose ----

#[test]
fn choose_follows_its_weights_within_two_percent() {
    let t =
        compile(r#"{ "^Choose" = { from = ["open", "paid", "shipped"], weights = [1, 3, 6] } }"#);
    let s = strings(&draw(&t, N));
    for (name, want) in [("open", 0.1), ("paid", 0.3), ("shipped", 0.6)] {
        let share =
            crate::num::real_len(s.iter().filter(|x| *x == name).count()) / crate::num::real_len(N);
        assert!((share - want).abs() < 0.02, "{name}: {share}");
    }
}

#[test]
fn choose_uniform_with_generators_and_documents_among_the_choices() {
    let t = compile(
        r#"{ "^Choose" = { from = [1, { "^RandomInt" = { min = 10, max = 12 } }, { a = "b" }] } }"#,
    );
    let v = draw(&t, N);
    let ones = v.iter().filter(|b| **b == Bson::Int32(1)).count();
    let gen = v
        .iter()
        .filter(|b| matches!(b, Bson::Int64(i) if (10..=12).contains(i)))
        .count();
    let docs = v
        .iter()
        .filter(|b| **b == Bson::Document(doc! { "a": "b" }))
        .count();
    assert_eq!(ones + gen + docs, N);
    for c in [ones, gen, docs] {
        assert!((crate::num::real_len(c) / crate::num::real_len(N) - 1.0 / 3.0).abs() < 0.02);
    }
    // A zero weight is never chosen.
    let z = strings(&draw(
        &compile(r#"{ "^Choose" = { from = ["a", "b"], weights = [0, 1] } }"#),
        1000,
    ));
    assert!(z.iter().all(|s| s == "b"));
}

// ---- ^Now and ^RandomDate ----

#[test]
fn now_is_the_operations_time_shifted() {
    assert_eq!(
        one(r#"{ "^Now" = {} }"#),
        Bson::DateTime(DateTime::from_millis(NOW))
    );
    assert_eq!(
        one(r#"{ "^Now" = { minus = "1h" } }"#),
        Bson::DateTime(DateTime::from_millis(NOW - 3_600_000))
    );
    assert_eq!(
        one(r#"{ "^Now" = { plus = "30m", minus = "2d" } }"#),
        Bson::DateTime(DateTime::from_millis(NOW + 1_800_000 - 2 * 86_400_000))
    );
    assert_eq!(
        one(r#"{ "^Now" = { minus = "1h 30m" } }"#),
        Bson::DateTime(DateTime::from_millis(NOW - 5_400_000))
    );
}

#[test]
fn random_date_between_iso_bounds() {
    let t = compile(r#"{ "^RandomDate" = { min = "2015-01-01", max = "2016-01-01T00:00:00Z" } }"#);
    let lo = 1_420_070_400_000; // 2015-01-01T00:00:00Z
    let hi = 1_451_606_400_000; // 2016-01-01T00:00:00Z
    let v = millis(&draw(&t, N));
    assert!(v.iter().all(|m| (lo..=hi).contains(m)));
    let mid = crate::num::real_len(v.iter().filter(|&&m| m < (lo + hi) / 2).count())
        / crate::num::real_len(N);
    assert!((mid - 0.5).abs() < 0.02);
    // Offsets and fractions.
    let k = millis(&draw(
        &compile(
            r#"{ "^RandomDate" = { min = "2015-01-01T05:30:00.250+05:30", max = "2015-01-01T00:00:00.250Z" } }"#,
        ),
        5,
    ));
    assert!(k.iter().all(|&m| m == lo + 250));
}

#[test]
fn random_date_of_a_string_made_once() {
    // genny's TimeseriesFixedBucketing: bounds a ^FormatString of written arguments makes.
    let t = compile(
        r#"{ "^RandomDate" = { min = { "^FormatString" = { format = "%s.000Z", withArgs = ["2016-01-13T01:00:00"] } }, max = { "^FormatString" = { format = "%s.250Z", withArgs = ["2016-01-13T01:00:00"] } } } }"#,
    );
    let lo = 1_452_646_800_000; // 2016-01-13T01:00:00Z
    let v = millis(&draw(&t, 50));
    assert!(v.iter().all(|m| (lo..=lo + 250).contains(m)), "{v:?}");
    assert!(v.iter().any(|&m| m != v[0]), "{v:?}");
}

#[test]
fn random_date_relative_to_now_and_toml_datetimes() {
    let t = compile(r#"{ "^RandomDate" = { min = "-30d", max = "now" } }"#);
    let v = millis(&draw(&t, N));
    assert!(v
        .iter()
        .all(|&m| (NOW - 30 * 86_400_000..=NOW).contains(&m)));
    let t = compile(r#"{ "^RandomDate" = { min = "now-1h", max = "+1h" } }"#);
    assert!(millis(&draw(&t, N))
        .iter()
        .all(|&m| (NOW - 3_600_000..=NOW + 3_600_000).contains(&m)));
    let t = compile(r#"{ "^RandomDate" = { min = 2020-01-01T00:00:00Z, max = 2020-01-01 } }"#);
    assert_eq!(millis(&draw(&t, 3)), vec![1_577_836_800_000; 3]);
    let t = compile(
        r#"{ "^RandomDate" = { min = { "^Now" = { minus = "1m" } }, max = { "^Now" = {} } } }"#,
    );
    assert!(millis(&draw(&t, N))
        .iter()
        .all(|&m| (NOW - 60_000..=NOW).contains(&m)));
    let d = millis(&draw(&compile(r#"{ "^RandomDate" = {} }"#), 100));
    let max_default = 5_680_281_600_000; // 2150-01-01T00:00:00Z
    assert!(d.iter().all(|&m| (0..=max_default).contains(&m)));
}

// ---- ^ObjectId, ^UUID, ^Binary ----

#[test]
fn object_id_new_constant_and_from_hex() {
    let v = draw(&compile(r#"{ "^ObjectId" = {} }"#), 100);
    let set: std::collections::HashSet<String> = v
        .iter()
        .map(|b| match b {
            Bson::ObjectId(o) => o.to_hex(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(set.len(), 100);
    let c = compile(r#"{ "^ObjectId" = "5f1e6a3b9d1e8a2b3c4d5e6f" }"#);
    assert_eq!(
        c.constant(),
        Some(&Bson::ObjectId(
            ObjectId::parse_str("5f1e6a3b9d1e8a2b3c4d5e6f").unwrap()
        ))
    );
    let g = compile(
        r#"{ "^ObjectId" = { "^RandomString" = { length = 24, alphabet = "0123456789abcdef" } } }"#,
    );
    assert!(draw(&g, 1000)
        .iter()
        .all(|b| matches!(b, Bson::ObjectId(_))));
    let f = compile(
        r#"{ "^ObjectId" = { "^FormatString" = { format = "%024x", withArgs = [{ "^Inc" = { start = 255 } }] } } }"#,
    );
    assert_eq!(
        draw(&f, 1)[0],
        Bson::ObjectId(ObjectId::parse_str("0000000000000000000000ff").unwrap())
    );
    // A generated string that is not 24 hex digits gives null.
    let bad = compile(r#"{ "^ObjectId" = { "^RandomString" = { length = 5, alphabet = "z" } } }"#);
    assert_eq!(draw(&bad, 1)[0], Bson::Null);
}

#[test]
fn uuid_random_v4_and_from_hex() {
    let v = draw(&compile(r#"{ "^UUID" = {} }"#), 100);
    let mut seen = std::collections::HashSet::new();
    for b in &v {
        match b {
            Bson::Binary(bin) => {
                assert_eq!(bin.subtype, BinarySubtype::Uuid);
                assert_eq!(bin.bytes.len(), 16);
                assert_eq!(bin.bytes[6] >> 4, 4, "version 4");
                assert_eq!(bin.bytes[8] >> 6, 0b10, "RFC 4122 variant");
                seen.insert(bin.bytes.clone());
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), 100);
    let c = compile(r#"{ "^UUID" = { hex = "00000000-1111-2222-3333-444444444444" } }"#);
    match c.constant() {
        Some(Bson::Binary(bin)) => {
            assert_eq!(bin.subtype, BinarySubtype::Uuid);
            assert_eq!(
                bin.bytes,
                vec![
                    0, 0, 0, 0, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44, 0x44,
                    0x44
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn binary_has_its_size_and_subtype_zero() {
    let v = draw(&compile(r#"{ "^Binary" = { size = 16 } }"#), 100);
    for b in &v {
        match b {
            Bson::Binary(bin) => {
                assert_eq!(bin.subtype, BinarySubtype::Generic);
                assert_eq!(bin.bytes.len(), 16);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_ne!(v[0], v[1]);
    let g = draw(
        &compile(r#"{ "^Binary" = { size = { "^RandomInt" = { min = 0, max = 3 } } } }"#),
        1000,
    );
    let sizes: Vec<usize> = g
        .iter()
        .map(|b| match b {
            Bson::Binary(bin) => bin.bytes.len(),
            _ => usize::MAX,
        })
        .collect();
    assert!(sizes.iter().all(|s| *s <= 3) && sizes.contains(&0) && sizes.contains(&3));
}

// ---- ^Inc ----

fn gen_as(t: &Template, user: u32, state: &mut UserState) -> Bson {
    let mut rng = SmallRng::seed_from_u64(1);
    let mut cx = Cx {
        rng: &mut rng,
        lookup: &mut NoLookup,
        now_ms: NOW,
        user,
        state,
    };
    t.generate(&mut cx)
}

#[test]
fn inc_counts_per_user() {
    let t = compile(r#"{ "^Inc" = { start = 5, step = 2, multiplier = 1000 } }"#);
    let (mut a, mut b) = (UserState::default(), UserState::default());
    let got: Vec<Bson> = vec![
        gen_as(&t, 0, &mut a),
        gen_as(&t, 0, &mut a),
        gen_as(&t, 1, &mut b),
        gen_as(&t, 0, &mut a),
        gen_as(&t, 1, &mut b),
    ];
    assert_eq!(ints(&got), vec![5, 7, 1005, 9, 1007]);
    // Defaults: from 0, by 1; two ^Inc in one template count apart.
    let two = compile(r#"[{ "^Inc" = {} }, { "^Inc" = { start = 100 } }]"#);
    let mut s = UserState::default();
    assert_eq!(
        gen_as(&two, 0, &mut s),
        Bson::Array(vec![Bson::Int64(0), Bson::Int64(100)])
    );
    assert_eq!(
        gen_as(&two, 0, &mut s),
        Bson::Array(vec![Bson::Int64(1), Bson::Int64(101)])
    );
    // A clone of the template is the same counter.
    let clone = two.clone();
    assert_eq!(
        gen_as(&clone, 0, &mut s),
        Bson::Array(vec![Bson::Int64(2), Bson::Int64(102)])
    );
}

#[test]
fn inc_global_is_one_counter_for_every_user() {
    let t = compile(r#"{ "^Inc" = { start = 10, step = 10, scope = "global" } }"#);
    let (mut a, mut b) = (UserState::default(), UserState::default());
    let got = vec![
        gen_as(&t, 0, &mut a),
        gen_as(&t, 1, &mut b),
        gen_as(&t, 0, &mut a),
        gen_as(&t.clone(), 3, &mut b),
    ];
    assert_eq!(ints(&got), vec![10, 20, 30, 40]);
}

// ---- ^Array, ^Object, ^Join, ^FormatString, ^Verbatim, ^Null ----

#[test]
fn array_sizes_and_elements() {
    let c = compile(r#"{ "^Array" = { of = 1, number = 3 } }"#);
    assert_eq!(c.constant(), Some(&Bson::Array(vec![Bson::Int32(1); 3])));
    let t = compile(
        r#"{ "^Array" = { number = { "^RandomInt" = { min = 1, max = 4 } }, of = { qty = { "^RandomInt" = { min = 1, max = 5 } } } } }"#,
    );
    let mut sizes = Vec::new();
    for b in draw(&t, N) {
        let Bson::Array(a) = b else { panic!() };
        sizes.push(a.len());
        for item in a {
            let Bson::Document(d) = item else { panic!() };
            assert!((1..=5).contains(&d.get_i64("qty").unwrap()));
        }
    }
    assert!(sizes.iter().all(|s| (1..=4).contains(s)));
    assert!(sizes.contains(&1) && sizes.contains(&4));
}

#[test]
fn object_entries_keys_and_values() {
    let t = compile(
        r#"{ "^Object" = { withNEntries = 3, havingKeys = { "^RandomString" = { length = 12 } }, andValues = { "^RandomInt" = { min = 1, max = 2 } } } }"#,
    );
    for b in draw(&t, 100) {
        let Bson::Document(d) = b else { panic!() };
        assert_eq!(d.len(), 3);
        assert!(d
            .iter()
            .all(|(k, v)| k.len() == 12 && matches!(v, Bson::Int64(1 | 2))));
    }
    let few = compile(
        r#"{ "^Object" = { withNEntries = 10, havingKeys = { "^RandomString" = { length = 1, alphabet = "ab" } }, andValues = 42, duplicatedKeys = "skip" } }"#,
    );
    for b in draw(&few, 100) {
        let Bson::Document(d) = b else { panic!() };
        assert!((1..=2).contains(&d.len()));
        assert!(d
            .iter()
            .all(|(k, v)| (k == "a" || k == "b") && *v == Bson::Int32(42)));
    }
}

#[test]
fn join_strings_and_generated_values() {
    let c = compile(r#"{ "^Join" = { array = ["This", "is", 1, "string"], sep = " " } }"#);
    assert_eq!(c.constant(), Some(&Bson::String("This is 1 string".into())));
    let t = compile(
        r#"{ "^Join" = { array = [{ "^Choose" = { from = ["build", "test"] } }, { "^RandomString" = { length = 4, alphabet = "q" } }], sep = "-" } }"#,
    );
    for s in strings(&draw(&t, 100)) {
        assert!(s == "build-qqqq" || s == "test-qqqq", "{s}");
    }
    let a = compile(
        r#"{ "^Join" = { array = { "^Array" = { of = { "^Inc" = {} }, number = { "^Inc" = { start = 2 } } } }, sep = "," } }"#,
    );
    assert_eq!(
        strings(&draw(&a, 2)),
        vec!["0,1".to_string(), "2,3,4".to_string()]
    );
    assert_eq!(
        one(r#"{ "^Join" = { array = ["a", "b"] } }"#),
        Bson::String("ab".into())
    );
}

#[test]
fn format_string_conversions() {
    let cases = [
        (r#""%s-%d""#, r#"["id", 42]"#, "id-42"),
        (r#""%04d%s""#, r#"[7, "b"]"#, "0007b"),
        (r#""%5d|%-5d|%+d""#, "[42, 42, 42]", "   42|42   |+42"),
        (
            r#""%x %X %#x %o %08x""#,
            "[255, 255, 255, 8, 48879]",
            "ff FF 0xff 10 0000beef",
        ),
        (
            r#""%.2f %8.3f %e""#,
            "[3.14159, 2.5, 1500.0]",
            "3.14    2.500 1.500000e+03",
        ),
        (
            r#""%g %g %g""#,
            "[0.0001, 100000.0, 1e20]",
            "0.0001 100000 1e+20",
        ),
        (r#""%.3s|%5s|%c""#, r#"["abcdef", "ab", 65]"#, "abc|   ab|A"),
        (r#""100%% %d""#, "[-5]", "100% -5"),
        (r#""%03d.%2.d""#, "[-1, 0]", "-01.  "),
        (r#""%d""#, "[2.9]", "2"),
    ];
    for (format, args, want) in cases {
        let t = compile(&format!(
            r#"{{ "^FormatString" = {{ format = {format}, withArgs = {args} }} }}"#
        ));
        assert_eq!(
            t.constant(),
            Some(&Bson::String(want.into())),
            "{format} {args}"
        );
    }
    let t = compile(
        r#"{ "^FormatString" = { format = "user-%03d", withArgs = [{ "^Inc" = { start = 8 } }] } }"#,
    );
    assert_eq!(
        strings(&draw(&t, 3)),
        vec!["user-008", "user-009", "user-010"]
    );
}

#[test]
fn verbatim_is_not_interpreted() {
    let c = compile(
        r#"{ "^Verbatim" = { "^a" = { "^RandomInt" = { min = 1, max = 2 } }, n = { "$numberLong" = "5" } } }"#,
    );
    assert_eq!(
        c.constant(),
        Some(&Bson::Document(doc! {
            "^a": { "^RandomInt": { "min": 1, "max": 2 } },
            "n": 5_i64,
        }))
    );
    assert_eq!(compile(r#"{ "^Null" = {} }"#).constant(), Some(&Bson::Null));
}

// ---- ^Key, ^Field, ^Bind, ^Step ----

#[test]
fn key_and_field_ask_the_lookup_and_are_null_without() {
    let t =
        compile(r#"{ _id = { "^Key" = {} }, city = { "^Field" = { path = "address.city" } } }"#);
    assert!(t.uses_key());
    assert_eq!(t.field_paths(), vec!["address.city".to_string()]);
    let mut lookup = Fixed {
        keys: vec![Bson::Int64(1), Bson::Int64(2)],
        ..Default::default()
    };
    lookup
        .fields
        .insert("address.city".into(), Bson::String("Lyon".into()));
    let v = draw_with(&t, 1000, &mut lookup, 3);
    let mut seen = std::collections::HashSet::new();
    for b in v {
        let Bson::Document(d) = b else { panic!() };
        assert_eq!(d.get_str("city").unwrap(), "Lyon");
        seen.insert(d.get_i64("_id").unwrap());
    }
    assert_eq!(seen.len(), 2);
    assert_eq!(
        draw(&t, 1)[0],
        Bson::Document(doc! { "_id": Bson::Null, "city": Bson::Null })
    );
    let plain = compile(r#"{ a = { "^RandomInt" = { min = 1, max = 2 } } }"#);
    assert!(!plain.uses_key());
    assert!(plain.field_paths().is_empty());
}

#[test]
fn bind_and_step_ask_the_lookup() {
    let t = compile(
        r#"{ a = { "^Bind" = "amount" }, b = { "^Step" = { index = 0, path = "customer" } }, c = { "^Bind" = "amount" } }"#,
    );
    assert_eq!(t.bind_names(), vec!["amount".to_string()]);
    assert_eq!(t.step_refs(), vec![(0, "customer".to_string())]);
    let mut lookup = Fixed::default();
    lookup.binds.insert("amount".into(), Bson::Int64(7));
    lookup
        .steps
        .insert((0, "customer".into()), Bson::String("c1".into()));
    assert_eq!(
        draw_with(&t, 1, &mut lookup, 1)[0],
        Bson::Document(doc! { "a": 7_i64, "b": "c1", "c": 7_i64 })
    );
    assert_eq!(
        draw(&t, 1)[0],
        Bson::Document(doc! { "a": Bson::Null, "b": Bson::Null, "c": Bson::Null })
    );
}

// ---- Extended JSON, literals, documents ----

fn extjson_cases() -> Vec<(&'static str, Bson)> {
    let oid = ObjectId::parse_str("5f1e6a3b9d1e8a2b3c4d5e6f").unwrap();
    let uuid_bytes = vec![
        0x3b, 0x24, 0x11, 0x01, 0xe2, 0xbb, 0x42, 0x55, 0x8c, 0xaf, 0x41, 0x36, 0xc5, 0x66, 0xa9,
        0x62,
    ];
    vec![
        (
            r#"{"$oid": "5f1e6a3b9d1e8a2b3c4d5e6f"}"#,
            Bson::ObjectId(oid),
        ),
        (
            r#"{"$date": {"$numberLong": "1706702400000"}}"#,
            Bson::DateTime(DateTime::from_millis(NOW)),
        ),
        (
            r#"{"$date": "2024-01-31T12:00:00Z"}"#,
            Bson::DateTime(DateTime::from_millis(NOW)),
        ),
        (r#"{"$numberLong": "42"}"#, Bson::Int64(42)),
        (r#"{"$numberInt": "-7"}"#, Bson::Int32(-7)),
        (r#"{"$numberDouble": "1.5"}"#, Bson::Double(1.5)),
        (
            r#"{"$numberDouble": "-Infinity"}"#,
            Bson::Double(f64::NEG_INFINITY),
        ),
        (
            r#"{"$numberDecimal": "9.99"}"#,
            Bson::Decimal128("9.99".parse::<Decimal128>().unwrap()),
        ),
        (
            r#"{"$binary": {"base64": "AQID", "subType": "00"}}"#,
            Bson::Binary(mongodb::bson::Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![1, 2, 3],
            }),
        ),
        (
            r#"{"$binary": {"base64": "OyQRAeK7QlWMr0E2xWapYg==", "subType": "04"}}"#,
            Bson::Binary(mongodb::bson::Binary {
                subtype: BinarySubtype::Uuid,
                bytes: uuid_bytes.clone(),
            }),
        ),
        (
            r#"{"$uuid": "3b241101-e2bb-4255-8caf-4136c566a962"}"#,
            Bson::Binary(mongodb::bson::Binary {
                subtype: BinarySubtype::Uuid,
                bytes: uuid_bytes,
            }),
        ),
        (
            r#"{"$regularExpression": {"pattern": "^ab", "options": "i"}}"#,
            Bson::RegularExpression(mongodb::bson::Regex {
                pattern: "^ab".into(),
                options: "i".into(),
            }),
        ),
        (
            r#"{"$timestamp": {"t": 1706702400, "i": 3}}"#,
            Bson::Timestamp(mongodb::bson::Timestamp {
                time: 1_706_702_400,
                increment: 3,
            }),
        ),
        (r#"{"$minKey": 1}"#, Bson::MinKey),
        (r#"{"$maxKey": 1}"#, Bson::MaxKey),
        (r#"{"$symbol": "sym"}"#, Bson::Symbol("sym".into())),
        (
            r#"{"$code": "function() { return 1; }"}"#,
            Bson::JavaScriptCode("function() { return 1; }".into()),
        ),
        (
            r#"{"$code": "f()", "$scope": {"x": 1}}"#,
            Bson::JavaScriptCodeWithScope(mongodb::bson::JavaScriptCodeWithScope {
                code: "f()".into(),
                scope: doc! { "x": 1 },
            }),
        ),
        // Relaxed numbers: 32 bits when they fit, else 64; a fraction is a double.
        ("5", Bson::Int32(5)),
        ("10000000000", Bson::Int64(10_000_000_000)),
        ("1.5", Bson::Double(1.5)),
    ]
}

#[test]
fn extended_json_wrappers_from_json_text() {
    for (text, want) in extjson_cases() {
        let t = json(&format!(r#"{{"v": {text}}}"#));
        assert_eq!(
            t.constant(),
            Some(&Bson::Document(doc! { "v": want })),
            "{text}"
        );
    }
}

#[test]
fn extended_json_wrappers_from_toml_tables() {
    for (text, want) in extjson_cases() {
        // The same JSON is valid TOML inline-table text once ':' becomes '='.
        let toml_text = text.replace("\": ", "\" = ");
        let t = compile(&format!("{{ v = {toml_text} }}"));
        assert_eq!(
            t.constant(),
            Some(&Bson::Document(doc! { "v": want })),
            "{toml_text}"
        );
    }
    // TOML nan is a double.
    match compile("nan").constant() {
        Some(Bson::Double(f)) => assert!(f.is_nan()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn query_operators_are_plain_keys() {
    let t = compile(
        r#"{ n = { "$gte" = 1, "$in" = [1, 2] }, name = { "$regex" = "^a", "$options" = "i" }, "$or" = [{ a = 1 }] }"#,
    );
    assert_eq!(
        t.constant(),
        Some(&Bson::Document(doc! {
            "n": { "$gte": 1, "$in": [1, 2] },
            "name": { "$regex": "^a", "$options": "i" },
            "$or": [{ "a": 1 }],
        }))
    );
    assert!(t.makes_document());
}

#[test]
fn toml_datetimes_are_bson_dates() {
    assert_eq!(
        compile("2024-01-31T12:00:00Z").constant(),
        Some(&Bson::DateTime(DateTime::from_millis(NOW)))
    );
    assert_eq!(
        compile("2024-01-31T13:00:00.5+01:00").constant(),
        Some(&Bson::DateTime(DateTime::from_millis(NOW + 500)))
    );
    assert_eq!(
        compile("2024-01-31").constant(),
        Some(&Bson::DateTime(DateTime::from_millis(NOW - 12 * 3_600_000)))
    );
    let e = compile_err("{ at = 12:00:00 }");
    assert_eq!(e.key, "v.at");
    assert!(e.problem.contains("without a date"), "{}", e.problem);
}

#[test]
fn literals_and_key_order() {
    let t = compile(r#"{ z = 1, a = "s", m = true, big = 10000000000, f = 2.5, arr = [1, "x"] }"#);
    let Some(Bson::Document(d)) = t.constant() else {
        panic!()
    };
    assert_eq!(
        d.keys().collect::<Vec<_>>(),
        vec!["z", "a", "m", "big", "f", "arr"]
    );
    assert_eq!(d.get("z"), Some(&Bson::Int32(1)));
    assert_eq!(d.get("big"), Some(&Bson::Int64(10_000_000_000)));
    let j = json(r#"{"z": 1, "a": null, "m": {"y": 1, "b": 2}}"#);
    let Some(Bson::Document(d)) = j.constant() else {
        panic!()
    };
    assert_eq!(d.keys().collect::<Vec<_>>(), vec!["z", "a", "m"]);
    assert_eq!(
        d.get_document("m").unwrap().keys().collect::<Vec<_>>(),
        vec!["y", "b"]
    );
    // A TOML string is a string literal for compile, even when it looks like JSON.
    assert_eq!(
        compile(r#""{\"a\": 1}""#).constant(),
        Some(&Bson::String("{\"a\": 1}".into()))
    );
}

#[test]
fn nested_generators_keep_their_place() {
    let t = compile(
        r#"{ a = [1, { b = { "^RandomInt" = { min = 3, max = 3 } }, c = "x" }], d = { e = { "^Choose" = { from = [{ "^Join" = { array = ["p", { "^RandomString" = { length = 1, alphabet = "q" } }] } }] } } } }"#,
    );
    assert!(t.constant().is_none());
    assert!(t.makes_document());
    let mut rng = SmallRng::seed_from_u64(1);
    let mut state = UserState::default();
    let mut cx = Cx {
        rng: &mut rng,
        lookup: &mut NoLookup,
        now_ms: NOW,
        user: 0,
        state: &mut state,
    };
    assert_eq!(
        t.generate_doc(&mut cx),
        Some(doc! { "a": [1, { "b": 3_i64, "c": "x" }], "d": { "e": "pq" } })
    );
    assert_eq!(
        compile(r#"{ "^RandomInt" = { min = 1, max = 1 } }"#).generate_doc(&mut cx),
        None
    );
}

#[test]
fn compile_arg_reads_json_text_with_generators() {
    let v = toml::Value::String(
        r#"{"status": "open", "n": {"$gte": {"^RandomInt": {"min": 1, "max": 5}}}, "at": {"$date": "2024-01-31T12:00:00Z"}}"#.into(),
    );
    let t = Template::compile_arg(&v, "group[0].find.filter").unwrap();
    assert!(t.constant().is_none());
    let mut seen = std::collections::HashSet::new();
    for b in draw(&t, 1000) {
        let Bson::Document(d) = b else { panic!() };
        assert_eq!(d.keys().collect::<Vec<_>>(), vec!["status", "n", "at"]);
        assert_eq!(d.get_str("status").unwrap(), "open");
        assert_eq!(d.get_datetime("at").unwrap().timestamp_millis(), NOW);
        let n = d.get_document("n").unwrap().get_i64("$gte").unwrap();
        assert!((1..=5).contains(&n));
        seen.insert(n);
    }
    assert_eq!(seen.len(), 5);
    // A table goes as compile does.
    let t = Template::compile_arg(&value(r#"{ a = "{}" }"#), "k").unwrap();
    assert_eq!(t.constant(), Some(&Bson::Document(doc! { "a": "{}" })));
}

#[test]
fn same_seed_same_values() {
    let t = compile(
        r#"{ a = { "^RandomInt" = { min = 0, max = 1000000 } }, b = { "^RandomString" = { length = 8 } }, c = { "^RandomDouble" = {} } }"#,
    );
    assert_eq!(
        draw_with(&t, 50, &mut NoLookup, 9),
        draw_with(&t, 50, &mut NoLookup, 9)
    );
    assert_ne!(
        draw_with(&t, 50, &mut NoLookup, 9),
        draw_with(&t, 50, &mut NoLookup, 10)
    );
}

#[test]
fn templates_are_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Template>();
    fn sent<T: Send>() {}
    sent::<UserState>();
}

// ---- errors ----

#[test]
fn unknown_generator_says_did_you_mean() {
    let v = value(r#"{ created = { "$gte" = { "^RandomInteger" = { min = 1, max = 2 } } } }"#);
    let e = Template::compile(&v, "group[0].find.filter").unwrap_err();
    assert_eq!(e.key, "group[0].find.filter.created.$gte.^RandomInteger");
    assert_eq!(
        e.problem,
        "`^RandomInteger` is not a generator (did you mean `^RandomInt`?)"
    );
    for name in super::compile::GENERATOR_NAMES {
        assert!(e.expected.contains(name), "{name} in {}", e.expected);
    }
    let e = compile_err(r#"{ "^Nonsense" = {} }"#);
    assert_eq!(e.problem, "`^Nonsense` is not a generator");
    let e = compile_err(r#"{ "^uuid" = {} }"#);
    assert!(e.problem.contains("did you mean `^UUID`"), "{}", e.problem);
}

#[test]
fn bad_duration_is_located() {
    let v = value(r#"{ created = { "$gte" = { "^Now" = { minus = "an hour" } } } }"#);
    let e = Template::compile(&v, "group[0].find.filter").unwrap_err();
    assert_eq!(e.key, "group[0].find.filter.created.$gte.^Now.minus");
    assert!(
        e.problem.starts_with("`an hour` is not a duration"),
        "{}",
        e.problem
    );
    assert!(e.expected.contains("\"1h\""), "{}", e.expected);
    let e = compile_err(r#"{ "^Now" = { plus = 5 } }"#);
    assert_eq!(e.key, "v.^Now.plus");
    assert!(e.problem.contains("not a string"), "{}", e.problem);
}

#[test]
fn unknown_and_missing_arguments() {
    let e = compile_err(r#"{ "^RandomInt" = { min = 1, maxx = 5 } }"#);
    assert_eq!(e.key, "v.^RandomInt.maxx");
    assert_eq!(
        e.problem,
        "`maxx` is not an argument of ^RandomInt (did you mean `max`?)"
    );
    assert!(
        e.expected.contains("distribution, min, max"),
        "{}",
        e.expected
    );
    let e = compile_err(r#"{ "^RandomInt" = { min = 1 } }"#);
    assert_eq!(e.key, "v.^RandomInt");
    assert_eq!(e.problem, "^RandomInt needs `max`");
    let e =
        compile_err(r#"{ "^RandomInt" = { distribution = "binomial", t = 5, p = 0.5, min = 1 } }"#);
    assert_eq!(e.key, "v.^RandomInt.min");
    assert!(e.expected.contains("distribution, t, p"), "{}", e.expected);
    let e = compile_err(r#"{ "^RandomInt" = { distribution = "binomal", t = 5, p = 0.5 } }"#);
    assert_eq!(e.key, "v.^RandomInt.distribution");
    assert!(
        e.problem.contains("did you mean `binomial`"),
        "{}",
        e.problem
    );
    let e = compile_err(r#"{ "^Key" = { path = "x" } }"#);
    assert_eq!(e.key, "v.^Key.path");
    assert!(
        e.expected.starts_with("^Key takes no argument"),
        "{}",
        e.expected
    );
    let e = compile_err(r#"{ "^Choose" = { from = [1], weight = [1] } }"#);
    assert!(
        e.problem.contains("did you mean `weights`"),
        "{}",
        e.problem
    );
    let e = compile_err(r#"{ "^RandomString" = 5 }"#);
    assert_eq!(e.key, "v.^RandomString");
    assert!(
        e.problem.contains("takes a table of arguments"),
        "{}",
        e.problem
    );
}

/// Compiles each `(source, key, problem)` case and checks that it is refused at `key`, with a
/// problem that contains `problem` and an expected form.
fn assert_refused(cases: &[(&str, &str, &str)]) {
    for &(src, key, problem) in cases {
        let e = compile_err(src);
        assert_eq!(e.key, key, "{src}");
        assert!(e.problem.contains(problem), "{src}: {}", e.problem);
        assert!(!e.expected.is_empty(), "{src}");
    }
}

/// Bounds the wrong way round, or of the wrong type.
#[test]
fn wrong_number_bounds_are_refused() {
    assert_refused(&[
        (
            r#"{ "^RandomInt" = { min = 5, max = 1 } }"#,
            "v.^RandomInt.min",
            "min (5) is greater than max (1)",
        ),
        (
            r#"{ "^RandomInt" = { min = 1.5, max = 3 } }"#,
            "v.^RandomInt.min",
            "not an integer",
        ),
        (
            r#"{ "^RandomDouble" = { min = 5, max = 1 } }"#,
            "v.^RandomDouble.min",
            "greater than max",
        ),
        (
            r#"{ "^RandomInt" = { min = { "^RandomInt" = { distribution = "binomial", t = 1, p = 0.5 } }, max = "x" } }"#,
            "v.^RandomInt.max",
            "is a string",
        ),
    ]);
}

/// A distribution's parameters out of their range.
#[test]
fn wrong_distribution_parameters_are_refused() {
    assert_refused(&[
        (
            r#"{ "^RandomInt" = { distribution = "binomial", t = 10, p = 1.5 } }"#,
            "v.^RandomInt.p",
            "not from 0 to 1",
        ),
        (
            r#"{ "^RandomInt" = { distribution = "geometric", p = 0 } }"#,
            "v.^RandomInt.p",
            "above 0",
        ),
        (
            r#"{ "^RandomInt" = { distribution = "poisson", mean = -1 } }"#,
            "v.^RandomInt.mean",
            "not above 0",
        ),
        (
            r#"{ "^RandomInt" = { distribution = "binomial", t = -1, p = 0.5 } }"#,
            "v.^RandomInt.t",
            "negative",
        ),
    ]);
}

/// Lengths, alphabets and array sizes that cannot be made.
#[test]
fn wrong_string_and_array_sizes_are_refused() {
    assert_refused(&[
        (
            r#"{ "^RandomString" = { length = -1 } }"#,
            "v.^RandomString.length",
            "negative (-1)",
        ),
        (
            r#"{ "^RandomString" = { length = "ten" } }"#,
            "v.^RandomString.length",
            "is a string, not an integer",
        ),
        (
            r#"{ "^RandomString" = { length = { "^RandomString" = { length = 2 } } } }"#,
            "v.^RandomString.length",
            "a generator of a string, not of an integer",
        ),
        (
            r#"{ "^RandomString" = { length = 3, alphabet = "" } }"#,
            "v.^RandomString.alphabet",
            "empty",
        ),
        (
            r#"{ "^Array" = { of = 1, number = 99999999999 } }"#,
            "v.^Array.number",
            "16 MiB",
        ),
    ]);
}

/// `^Choose`'s values and weights that do not match or cannot be drawn.
#[test]
fn wrong_choices_are_refused() {
    assert_refused(&[
        (
            r#"{ "^Choose" = { from = [1, 2, 3], weights = [1, 2] } }"#,
            "v.^Choose.weights",
            "2 weights for 3 values",
        ),
        (
            r#"{ "^Choose" = { from = [1], weights = [-1] } }"#,
            "v.^Choose.weights[0]",
            "negative",
        ),
        (
            r#"{ "^Choose" = { from = [1, 2], weights = [0, 0] } }"#,
            "v.^Choose.weights",
            "every weight is 0",
        ),
        (
            r#"{ "^Choose" = { from = [] } }"#,
            "v.^Choose.from",
            "empty",
        ),
    ]);
}

/// ObjectIds and UUIDs that are not of their form.
#[test]
fn wrong_ids_are_refused() {
    assert_refused(&[
        (r#"{ "^ObjectId" = "xyz" }"#, "v.^ObjectId", "24 hex digits"),
        (
            r#"{ "^ObjectId" = { "^RandomInt" = { min = 1, max = 2 } } }"#,
            "v.^ObjectId",
            "not of a string",
        ),
        (
            r#"{ "^UUID" = { hex = "12" } }"#,
            "v.^UUID.hex",
            "32 hex digits",
        ),
    ]);
}

/// Dates that are not dates, or bounds the wrong way round.
#[test]
fn wrong_dates_are_refused() {
    assert_refused(&[
        (
            r#"{ "^RandomDate" = { min = "now", max = "-1d" } }"#,
            "v.^RandomDate.min",
            "later than max",
        ),
        (
            r#"{ "^RandomDate" = { min = "2015-13-01" } }"#,
            "v.^RandomDate.min",
            "`2015-13-01` is not a date",
        ),
    ]);
}

/// `^Inc`'s and `^FormatString`'s arguments that do not fit.
#[test]
fn wrong_counters_and_formats_are_refused() {
    assert_refused(&[
        (
            r#"{ "^Inc" = { step = { "^RandomInt" = { min = 1, max = 2 } } } }"#,
            "v.^Inc.step",
            "written as a value",
        ),
        (
            r#"{ "^Inc" = { scope = "global", multiplier = 5 } }"#,
            "v.^Inc.multiplier",
            "global",
        ),
        (
            r#"{ "^Inc" = { scope = "thread" } }"#,
            "v.^Inc.scope",
            "not a scope",
        ),
        (
            r#"{ "^FormatString" = { format = "%d-%d", withArgs = [1] } }"#,
            "v.^FormatString.withArgs",
            "2 conversion(s) but withArgs has 1",
        ),
        (
            r#"{ "^FormatString" = { format = "%q" } }"#,
            "v.^FormatString.format",
            "not a conversion",
        ),
    ]);
}

/// References without what they name, and generators in the wrong place.
#[test]
fn wrong_references_and_shapes_are_refused() {
    assert_refused(&[
        (r#"{ "^Field" = { path = "" } }"#, "v.^Field.path", "empty"),
        (r#"{ "^Bind" = {} }"#, "v.^Bind", "name of a bound value"),
        (
            r#"{ "^Step" = { path = "a" } }"#,
            "v.^Step",
            "needs `index`",
        ),
        (
            r#"{ "^Object" = { withNEntries = 2, andValues = 1 } }"#,
            "v.^Object",
            "needs `havingKeys`",
        ),
        (
            r#"{ a = { "^RandomInt" = { min = 1, max = 2 }, b = 1 } }"#,
            "v.a.^RandomInt",
            "sits beside other keys (b)",
        ),
    ]);
}

#[test]
fn invalid_extended_json_gives_bsons_message() {
    let e = compile_err(r#"{ a = [{ "$numberLong" = 5 }] }"#);
    assert_eq!(e.key, "v.a[0]");
    assert!(
        e.problem
            .starts_with("invalid Extended JSON `$numberLong` value: "),
        "{}",
        e.problem
    );
    assert!(e.problem.contains("invalid type"), "{}", e.problem);
    assert!(
        e.expected.contains(r#""$numberLong": "42""#),
        "{}",
        e.expected
    );
    let e = json_err(r#"{"a": {"$oid": "nothex"}}"#);
    assert_eq!(e.key, "v.a");
    assert!(e.problem.contains("$oid"), "{}", e.problem);
    let e = json_err(r#"{"a": {"$date": "2024-01-31", "x": 1}}"#);
    assert_eq!(e.key, "v.a");
    let e = compile_err(r#"{ d = { "$date" = { "^Now" = {} } } }"#);
    assert_eq!(e.key, "v.d.$date.^Now");
    assert!(e.problem.contains("generator inside"), "{}", e.problem);
}

#[test]
fn json_text_errors_name_line_and_column() {
    let v = toml::Value::String("{\"a\": 1,\n \"b\": }".into());
    let e = Template::compile_arg(&v, "group[1].find.filter").unwrap_err();
    assert_eq!(e.key, "group[1].find.filter");
    assert!(
        e.problem.starts_with("the string is not valid JSON: "),
        "{}",
        e.problem
    );
    assert!(e.problem.contains("line 2 column"), "{}", e.problem);
    // An error inside a generator in JSON text has its path inside the JSON.
    let e = json_err(r#"{"a": [0, {"^Now": {"minus": "soon"}}]}"#);
    assert_eq!(e.key, "v.a[1].^Now.minus");
    let e = json_err(r#"{"a": {"^RandomInt": {"min": 1, "max": 0}}}"#);
    assert_eq!(e.key, "v.a.^RandomInt.min");
}

#[test]
fn nul_in_a_key_is_refused() {
    let e = compile_err(r#"{ "a\u0000b" = 1 }"#);
    assert_eq!(e.key, "v.a\0b");
    assert!(e.problem.contains("NUL"), "{}", e.problem);
    let e = json_err(r#"{"x": {"bad\u0000": 1}}"#);
    assert!(e.problem.contains("NUL"), "{}", e.problem);
    let e = compile_err(r#"{ "^Verbatim" = { "k\u0000" = 1 } }"#);
    assert!(e.problem.contains("NUL"), "{}", e.problem);
}

// ---- dates, durations, text of values ----

#[test]
fn iso_dates_and_relative_times_parse_exactly() {
    use super::time::{parse_duration_ms, parse_iso, parse_when, When};
    let cases = [
        ("1970-01-01", 0),
        ("2024-01-31T12:00:00Z", NOW),
        ("2024-01-31 12:00:00", NOW),
        ("2024-01-31T12:00", NOW),
        ("2024-01-31T12:00:00.123456Z", NOW + 123),
        ("2024-01-31T12:00:00.5", NOW + 500),
        ("2024-01-31T14:00:00+02:00", NOW),
        ("2024-01-31T14:00:00+0200", NOW),
        ("2024-01-31T10:00:00-02", NOW),
        ("2000-02-29", 951_782_400_000),
        ("1969-12-31T23:59:59Z", -1000),
    ];
    for (s, want) in cases {
        assert_eq!(parse_iso(s), Some(want), "{s}");
    }
    for bad in [
        "2023-02-29",
        "2024-1-31",
        "2024-01-31T25:00:00",
        "2024-01-31X",
        "2024-01-31T12:00:00+2",
        "yesterday",
    ] {
        assert_eq!(parse_iso(bad), None, "{bad}");
    }
    assert_eq!(parse_when("now"), Ok(When::FromNow(0)));
    assert_eq!(parse_when("-30d"), Ok(When::FromNow(-30 * 86_400_000)));
    assert_eq!(parse_when("now + 1h"), Ok(When::FromNow(3_600_000)));
    assert_eq!(parse_when("2024-01-31T12:00:00Z"), Ok(When::At(NOW)));
    assert!(parse_when("now*2").is_err());
    assert_eq!(parse_duration_ms("250ms"), Ok(250));
    assert_eq!(parse_duration_ms("1w"), Ok(7 * 86_400_000));
    assert!(parse_duration_ms("-1h").is_err());
}

#[test]
fn default_date_range_reaches_2150() {
    let d = millis(&draw(&compile(r#"{ "^RandomDate" = {} }"#), N));
    let max_default = 5_680_281_600_000; // 2150-01-01T00:00:00Z
    assert!(d.iter().all(|&m| (0..=max_default).contains(&m)));
    assert!(d.iter().any(|&m| m > max_default - max_default / 100));
    assert!(d.iter().any(|&m| m < max_default / 100));
}

#[test]
fn joined_text_of_each_bson_type() {
    let t = json(
        r#"{"^Join": {"array": [{"$oid": "5f1e6a3b9d1e8a2b3c4d5e6f"}, {"$date": "2024-01-31T12:00:00Z"}, true, null, 2.5, {"$numberLong": "9"}], "sep": "|"}}"#,
    );
    assert_eq!(
        t.constant(),
        Some(&Bson::String(
            "5f1e6a3b9d1e8a2b3c4d5e6f|2024-01-31T12:00:00Z|true|null|2.5|9".into()
        ))
    );
}

#[test]
fn what_a_template_makes() {
    assert!(!compile(r#"{ "^RandomInt" = { min = 1, max = 2 } }"#).makes_document());
    assert!(!compile(r#"{ "^Key" = {} }"#).makes_document());
    assert!(
        compile(r#"{ "^Object" = { withNEntries = 1, havingKeys = "k", andValues = 1 } }"#)
            .makes_document()
    );
    assert!(
        compile(r#"{ "^Choose" = { from = [{ a = 1 }, { b = { "^Inc" = {} } }] } }"#)
            .makes_document()
    );
    assert!(!compile(r#"{ "^Choose" = { from = [{ a = 1 }, 2] } }"#).makes_document());
    assert_eq!(
        Template::from_bson(Bson::Int32(3)).constant(),
        Some(&Bson::Int32(3))
    );
}

#[test]
fn every_example_of_the_reference_compiles() {
    let doc = include_str!("../../../docs/workload-generators.md");
    // The dataset the examples name, where a workload's directory would have it.
    let dir = dataset_dir("names.txt", "James\nMary\n");
    let options = CompileOptions {
        genny: false,
        base_dir: Some(dir.path().to_path_buf()),
    };
    let mut blocks = 0;
    let mut rest = doc;
    while let Some(start) = rest.find("```toml\n") {
        let body = &rest[start + 8..];
        let end = body.find("```").expect("closed block");
        let table: toml::Table =
            toml::from_str(&body[..end]).unwrap_or_else(|e| panic!("{}: {e}", &body[..end]));
        // A document template's form (`by_rank_of`) is a document generator's, read as one.
        if table
            .values()
            .any(|v| v.as_table().is_some_and(|t| t.contains_key("by_rank_of")))
        {
            if let Err(e) = crate::workload::document::DocGen::from_table(&table) {
                panic!("{}: {e:?}", &body[..end]);
            }
            blocks += 1;
            rest = &body[end + 3..];
            continue;
        }
        for (k, v) in &table {
            let t = if v.is_str() {
                Template::compile_arg(v, k)
            } else {
                Template::compile_with(v, k, &options)
            };
            if let Err(e) = t {
                panic!("{k}: {e:?}");
            }
        }
        blocks += 1;
        rest = &body[end + 3..];
    }
    assert!(blocks >= 20, "{blocks} examples");
}

// ---- genny's corpus ----

/// A YAML value of a genny workload as TOML: null as `{ "^Null" = {} }`, `^Parameter` as its
/// `Default` (a stand-in for the preprocessor).
fn yaml_to_toml(v: &serde_yaml::Value) -> toml::Value {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => toml::Value::Table(
            [("^Null".to_string(), toml::Value::Table(toml::Table::new()))]
                .into_iter()
                .collect(),
        ),
        Y::Bool(b) => toml::Value::Boolean(*b),
        Y::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        // YAML 1.1's `2_000_000` (genny's preprocessor reads its workloads as YAML 1.1).
        Y::String(s) if s.contains('_') && s.replace('_', "").parse::<i64>().is_ok() => {
            toml::Value::Integer(s.replace('_', "").parse().unwrap_or(0))
        }
        Y::String(s) => toml::Value::String(s.clone()),
        Y::Sequence(items) => toml::Value::Array(items.iter().map(yaml_to_toml).collect()),
        Y::Mapping(m) => {
            if let Some(p) = m.get("^Parameter") {
                return yaml_to_toml(p.get("Default").unwrap_or(&Y::Null));
            }
            let mut t = toml::Table::new();
            for (k, v) in m {
                let k = match k {
                    Y::String(s) => s.clone(),
                    other => serde_yaml::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                t.insert(k, yaml_to_toml(v));
            }
            toml::Value::Table(t)
        }
        Y::Tagged(t) => yaml_to_toml(&t.value),
    }
}

/// The generators of the workload (one-key tables whose key starts with `^`, not those of the
/// preprocessor), outermost only, with their paths.
fn genny_generators(v: &serde_yaml::Value, path: &str, out: &mut Vec<(String, serde_yaml::Value)>) {
    use serde_yaml::Value as Y;
    const PREPROCESSOR: &[&str] = &[
        "^Parameter",
        "^NumExpr",
        "^FlattenOnce",
        "^PreprocessorFormatString",
        "^ClientURI",
    ];
    match v {
        Y::Mapping(m) => {
            if m.len() == 1 {
                if let Some((Y::String(k), _)) = m.iter().next() {
                    if k.starts_with('^') && !PREPROCESSOR.contains(&k.as_str()) {
                        out.push((path.to_string(), v.clone()));
                        return;
                    }
                }
            }
            for (k, x) in m {
                let k = k.as_str().unwrap_or("?");
                genny_generators(x, &format!("{path}.{k}"), out);
            }
        }
        Y::Sequence(items) => {
            for (i, x) in items.iter().enumerate() {
                genny_generators(x, &format!("{path}[{i}]"), out);
            }
        }
        Y::Tagged(t) => genny_generators(&t.value, path, out),
        _ => {}
    }
}

/// Every generator of genny's own workloads compiles as a genny workload's (run with
/// `--ignored` where genny's workloads are copied: `../shared/reference/genny`).
#[test]
#[ignore]
fn genny_corpus_generators_compile() {
    let root = std::path::Path::new("../shared/reference/genny/src/workloads");
    assert!(root.is_dir(), "genny's workloads at {}", root.display());
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "yml") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut compiled, mut skipped, mut failed) = (0, 0, Vec::new());
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        let Ok(doc) = serde_yaml::from_str::<serde_yaml::Value>(&text) else {
            continue;
        };
        let mut gens = Vec::new();
        genny_generators(&doc, "", &mut gens);
        let options = CompileOptions {
            genny: true,
            base_dir: f.parent().map(|p| p.to_path_buf()),
        };
        for (path, g) in gens {
            let v = yaml_to_toml(&g);
            // Arguments the preprocessor computes are left out.
            if serde_yaml::to_string(&g)
                .unwrap_or_default()
                .contains("^NumExpr")
            {
                continue;
            }
            match Template::compile_with(&v, &path, &options) {
                Ok(t) => {
                    compiled += 1;
                    let mut state = UserState::with_actor(1);
                    for _ in 0..3 {
                        gen_as(&t, 0, &mut state);
                    }
                }
                // Files genny's copy here lacks; an actor template's parameters stand in by their
                // defaults (`-1` where each use gives its own).
                Err(e)
                    if e.problem.contains("was not found")
                        || path.starts_with(".ActorTemplates") =>
                {
                    skipped += 1
                }
                Err(e) => failed.push(format!("{}{path}: {}: {}", f.display(), e.key, e.problem)),
            }
        }
    }
    failed.dedup();
    assert!(compiled > 50_000, "{compiled} compiled");
    assert!(skipped < 100, "{skipped} skipped");
    assert!(
        failed.is_empty(),
        "{compiled} compiled, {} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

// ---- genny's generators and argument forms ----

fn genny() -> CompileOptions {
    CompileOptions {
        genny: true,
        base_dir: None,
    }
}

fn compile_opts(src: &str, o: &CompileOptions) -> Template {
    Template::compile_with(&value(src), "v", o).unwrap_or_else(|e| panic!("{src}: {e:?}"))
}

fn compile_opts_err(src: &str, o: &CompileOptions) -> GenError {
    match Template::compile_with(&value(src), "v", o) {
        Ok(t) => panic!("{src} compiled: {t:?}"),
        Err(e) => e,
    }
}

/// `n` values for one user (its state kept), from a seeded stream.
fn draw_user(t: &Template, n: usize, user: u32, state: &mut UserState, seed: u64) -> Vec<Bson> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut cx = Cx {
                rng: &mut rng,
                lookup: &mut NoLookup,
                now_ms: NOW,
                user,
                state: &mut *state,
            };
            t.generate(&mut cx)
        })
        .collect()
}

#[test]
fn random_int_negative_binomial_zipfian_and_generated_trials() {
    // Failures before the k-th success: mean k(1-p)/p.
    let nb = ints(&draw(
        &compile(r#"{ "^RandomInt" = { distribution = "negative_binomial", k = 10, p = 0.5 } }"#),
        N,
    ));
    assert!(nb.iter().all(|&x| x >= 0));
    assert!((mean_i(&nb) - 10.0).abs() < 0.3, "{}", mean_i(&nb));
    let z = ints(&draw(
        &compile(r#"{ "^RandomInt" = { distribution = "zipfian", alpha = 1.0, n = 100 } }"#),
        N,
    ));
    assert!(z.iter().all(|&x| (1..=100).contains(&x)));
    // P(1) = 1 / H(100) = 0.193; P(2) half of it.
    let ones =
        crate::num::real_len(z.iter().filter(|&&x| x == 1).count()) / crate::num::real_len(N);
    let twos =
        crate::num::real_len(z.iter().filter(|&&x| x == 2).count()) / crate::num::real_len(N);
    assert!((ones - 0.193).abs() < 0.02, "{ones}");
    assert!((twos - 0.0965).abs() < 0.015, "{twos}");
    let b = ints(&draw(
        &compile(
            r#"{ "^RandomInt" = { distribution = "binomial", t = { "^Choose" = { from = [10, 20] } }, p = 0.5 } }"#,
        ),
        N,
    ));
    assert!(b.iter().all(|&x| (0..=20).contains(&x)));
    assert!((mean_i(&b) - 7.5).abs() < 0.2, "{}", mean_i(&b));
    // A whole number written with a fraction (YAML's 1e4) is an integer.
    let w = ints(&draw(
        &compile(r#"{ "^RandomInt" = { min = 1e4, max = 1e4 } }"#),
        3,
    ));
    assert_eq!(w, vec![10_000; 3]);
}

#[test]
fn random_double_has_every_distribution_of_genny() {
    let m = |src: &str| {
        let d = doubles(&draw(
            &compile(&format!(r#"{{ "^RandomDouble" = {src} }}"#)),
            4 * N,
        ));
        assert!(d.iter().all(|x| x.is_finite()), "{src}");
        mean(&d)
    };
    let near = |got: f64, want: f64, tol: f64, what: &str| {
        assert!((got - want).abs() < tol, "{what}: {got}, not {want}");
    };
    // Each distribution's mean: the arguments, the mean wanted, the tolerance.
    for (args, want, tol) in [
        (
            r#"{ distribution = "gamma", alpha = 2, beta = 3 }"#,
            6.0,
            0.15,
        ),
        // Weibull shape a = 1 is the exponential of scale b.
        (r#"{ distribution = "weibull", a = 1, b = 2 }"#, 2.0, 0.06),
        // Extreme value: a + b * Euler's constant.
        (
            r#"{ distribution = "extreme_value", a = 1, b = 2 }"#,
            1.0 + 2.0 * 0.5772,
            0.06,
        ),
        (r#"{ distribution = "beta", alpha = 3 }"#, 0.75, 0.01),
        (
            r#"{ distribution = "laplace", mean = 5, beta = 1 }"#,
            5.0,
            0.05,
        ),
        (
            r#"{ distribution = "lognormal", m = 0, s = 0.5 }"#,
            (0.125f64).exp(),
            0.02,
        ),
        (r#"{ distribution = "chi_squared", n = 4 }"#, 4.0, 0.1),
        (
            r#"{ distribution = "non_central_chi_squared", k = 3, lambda = 2 }"#,
            5.0,
            0.12,
        ),
        // k < 1.
        (
            r#"{ distribution = "non_central_chi_squared", k = 0.5, lambda = 2 }"#,
            2.5,
            0.1,
        ),
        (r#"{ distribution = "student_t", n = 10 }"#, 0.0, 0.05),
        (
            r#"{ distribution = "fisher_f", m = 5, n = 10 }"#,
            1.25,
            0.05,
        ),
    ] {
        near(m(args), want, tol, args);
    }
    // Cauchy has no mean: its median.
    let mut c = doubles(&draw(
        &compile(r#"{ "^RandomDouble" = { distribution = "cauchy", median = 3, sigma = 1 } }"#),
        N,
    ));
    c.sort_by(f64::total_cmp);
    near(c[N / 2], 3.0, 0.05, "cauchy");
    // A parameter may be generated.
    near(
        m(r#"{ distribution = "normal", mean = { "^Choose" = { from = [0, 10] } }, sigma = 0 }"#),
        5.0,
        0.2,
        "normal of a generated mean",
    );
    assert_refused(&[
        (
            r#"{ "^RandomDouble" = { distribution = "gamma", alpha = 0 } }"#,
            "v.^RandomDouble.alpha",
            "must be above 0",
        ),
        (
            r#"{ "^RandomDouble" = { distribution = "weibull", alpha = 1 } }"#,
            "v.^RandomDouble.alpha",
            "not an argument of ^RandomDouble",
        ),
        (
            r#"{ "^RandomDouble" = { distribution = "gama" } }"#,
            "v.^RandomDouble.distribution",
            "did you mean `gamma`",
        ),
    ]);
}

#[test]
fn fast_random_string_draws_as_genny_does() {
    let s = strings(&draw(
        &compile(r#"{ "^FastRandomString" = { length = 23 } }"#),
        N,
    ));
    assert!(s.iter().all(|s| s.len() == 23));
    // Six bits masked with 0x2f: the alphabet's 0th to 15th and 32nd to 47th characters only.
    let alphabet: Vec<char> = DEFAULT_ALPHABET.chars().collect();
    let allowed: std::collections::HashSet<char> = alphabet[0..16]
        .iter()
        .chain(&alphabet[32..48])
        .copied()
        .collect();
    let seen: std::collections::HashSet<char> = s.iter().flat_map(|s| s.chars()).collect();
    assert_eq!(seen, allowed);
    // A short alphabet is taken modulo its length.
    let ab = strings(&draw(
        &compile(r#"{ "^FastRandomString" = { length = 8, alphabet = "ab" } }"#),
        100,
    ));
    assert!(ab
        .iter()
        .all(|s| s.len() == 8 && s.chars().all(|c| c == 'a' || c == 'b')));
    assert!(ab.iter().any(|s| s.contains('a')) && ab.iter().any(|s| s.contains('b')));
}

#[test]
fn choose_deterministic_takes_the_values_in_turn_per_user() {
    let t = compile(
        r#"{ "^Array" = { of = { "^Choose" = { from = [1, 2, 3], deterministic = true } }, number = 5 } }"#,
    );
    assert_eq!(
        draw(&t, 1)[0],
        Bson::Array([1, 2, 3, 1, 2].into_iter().map(Bson::Int32).collect())
    );
    let c = compile(r#"{ "^Choose" = { from = ["a", "b"], deterministic = true } }"#);
    let (mut a, mut b) = (UserState::default(), UserState::default());
    assert_eq!(strings(&draw_user(&c, 3, 0, &mut a, 1)), ["a", "b", "a"]);
    assert_eq!(strings(&draw_user(&c, 1, 1, &mut b, 2)), ["a"]);
    assert_eq!(strings(&draw_user(&c, 1, 0, &mut a, 3)), ["b"]);
    let e =
        compile_err(r#"{ "^Choose" = { from = [1, 2], weights = [1, 1], deterministic = true } }"#);
    assert_eq!(e.key, "v.^Choose.weights");
}

#[test]
fn inc_of_genny_starts_at_one_and_takes_a_generated_start() {
    let t = compile_opts(r#"{ "^Inc" = {} }"#, &genny());
    assert_eq!(ints(&draw(&t, 3)), vec![1, 2, 3]);
    // genny ignores what it does not know (a misspelt multiplier in its own workloads).
    let t = compile_opts(
        r#"{ "^Inc" = { start = 10, multipler = 100, end = 20 } }"#,
        &genny(),
    );
    assert_eq!(ints(&draw(&t, 2)), vec![10, 11]);
    let e = compile_err(r#"{ "^Inc" = { start = 10, multipler = 100 } }"#);
    assert!(
        e.problem.contains("did you mean `multiplier`"),
        "{}",
        e.problem
    );
    // A generated start is drawn once per user.
    let t = compile(
        r#"{ "^Inc" = { start = { "^RandomInt" = { min = 100, max = 999 } }, step = 5 } }"#,
    );
    let v = ints(&draw(&t, 4));
    assert!((100..=999).contains(&v[0]));
    assert_eq!(v, vec![v[0], v[0] + 5, v[0] + 10, v[0] + 15]);
    // The actor's number spreads the counters: genny's actor id when the run gives one.
    let t = compile(r#"{ "^Inc" = { start = 1, multiplier = 1000 } }"#);
    let mut s = UserState::with_actor(7);
    assert_eq!(ints(&draw_user(&t, 2, 0, &mut s, 1)), vec![7001, 7002]);
}

#[test]
fn actor_id_is_the_runs_or_the_users_number() {
    let t = compile(r#"[{ "^ActorId" = {} }, { "^ActorIdString" = {} }]"#);
    let mut s = UserState::with_actor(12);
    assert_eq!(
        draw_user(&t, 1, 3, &mut s, 1)[0],
        Bson::Array(vec![Bson::Int64(12), Bson::String("12".into())])
    );
    let mut s = UserState::default();
    assert_eq!(
        draw_user(&t, 1, 3, &mut s, 1)[0],
        Bson::Array(vec![Bson::Int64(3), Bson::String("3".into())])
    );
}

#[test]
fn date_and_inc_date() {
    let d = |src: &str| match compile(src).constant() {
        Some(Bson::DateTime(d)) => d.timestamp_millis(),
        other => panic!("{src}: {other:?}"),
    };
    assert_eq!(d(r#"{ "^Date" = "2015-01-01" }"#), 1_420_070_400_000);
    assert_eq!(
        d(r#"{ "^Date" = "2022-01-03T00:00:00Z" }"#),
        1_641_168_000_000
    );
    assert_eq!(
        d(r#"{ "^Date" = "2016-01-18T01:49:23" }"#),
        1_453_081_763_000
    );
    assert_eq!(d(r#"{ "^Date" = 86400000 }"#), 86_400_000);
    // genny reads a string of digits as milliseconds.
    assert_eq!(d(r#"{ "^Date" = "1000" }"#), 1000);
    assert_eq!(d(r#"{ "^Date" = 2015-01-01 }"#), 1_420_070_400_000);
    let g = compile(r#"{ "^Date" = { "^Choose" = { from = ["1970-01-02", 0] } } }"#);
    let seen: std::collections::HashSet<i64> = millis(&draw(&g, 100)).into_iter().collect();
    assert_eq!(seen, [0, 86_400_000].into_iter().collect());

    let t = compile(
        r#"{ "^IncDate" = { start = "2022-01-01T00:00:00Z", step = 60000, multiplier = 3600000 } }"#,
    );
    let start = 1_640_995_200_000;
    let (mut a, mut b) = (UserState::default(), UserState::with_actor(2));
    assert_eq!(
        millis(&draw_user(&t, 3, 0, &mut a, 1)),
        vec![start, start + 60_000, start + 120_000]
    );
    assert_eq!(
        millis(&draw_user(&t, 2, 5, &mut b, 1)),
        vec![start + 7_200_000, start + 7_260_000]
    );
    // Defaults: from the epoch, 1 ms apart.
    assert_eq!(
        millis(&draw(&compile(r#"{ "^IncDate" = {} }"#), 3)),
        vec![0, 1, 2]
    );
    assert_refused(&[(r#"{ "^Date" = "2022-13-01" }"#, "v.^Date", "not a date")]);
}

#[test]
fn random_date_of_genny_leaves_out_max() {
    let t = compile_opts(
        r#"{ "^RandomDate" = { min = "2015-01-01T00:00:00.000Z", max = "2015-01-01T00:00:00.002Z" } }"#,
        &genny(),
    );
    let seen: std::collections::HashSet<i64> = millis(&draw(&t, 200)).into_iter().collect();
    assert_eq!(
        seen,
        [1_420_070_400_000, 1_420_070_400_001].into_iter().collect()
    );
    let own = compile(
        r#"{ "^RandomDate" = { min = "2015-01-01T00:00:00.000Z", max = "2015-01-01T00:00:00.002Z" } }"#,
    );
    let seen: std::collections::HashSet<i64> = millis(&draw(&own, 200)).into_iter().collect();
    assert_eq!(seen.len(), 3);
    let e = compile_opts_err(
        r#"{ "^RandomDate" = { min = "2015-01-01", max = "2015-01-01" } }"#,
        &genny(),
    );
    assert!(e.problem.contains("later than max"), "{}", e.problem);
}

#[test]
fn repeat_cycle_and_fixed_are_per_user_and_seeded() {
    let r =
        compile(r#"{ "^Repeat" = { count = 3, fromGenerator = { "^Inc" = { start = 1000 } } } }"#);
    assert_eq!(
        ints(&draw(&r, 7)),
        vec![1000, 1000, 1000, 1001, 1001, 1001, 1002]
    );
    let r = compile(
        r#"{ "^Repeat" = { count = 2, fromGenerator = { "^RandomInt" = { min = 0, max = 1000000000 } } } }"#,
    );
    let v = ints(&draw(&r, 6));
    assert!(
        v[0] == v[1] && v[2] == v[3] && v[4] == v[5] && v[1] != v[2],
        "{v:?}"
    );
    assert_eq!(draw_with(&r, 6, &mut NoLookup, 7), draw(&r, 6));

    let c = compile(
        r#"{ "^Cycle" = { ofLength = 3, fromGenerator = { "^RandomString" = { length = 12 } } } }"#,
    );
    let s = strings(&draw(&c, 7));
    assert_eq!(s[0..3], s[3..6]);
    assert_eq!(s[6], s[0]);
    assert!(s[0] != s[1] && s[1] != s[2]);
    assert_eq!(draw(&c, 7), draw(&c, 7));
    // Each user makes its own values, at its first.
    let mut other = UserState::default();
    let t = strings(&draw_user(&c, 3, 1, &mut other, 99));
    assert_ne!(t, s[0..3]);
    let c = compile(
        r#"{ "^Cycle" = { ofLength = 2, fromGenerator = { "^IncDate" = { start = 1000, step = 10 } } } }"#,
    );
    assert_eq!(millis(&draw(&c, 5)), vec![1000, 1010, 1000, 1010, 1000]);

    let f = compile(
        r#"{ "^FixedGeneratedValue" = { fromGenerator = { "^Array" = { of = { "^RandomInt" = { min = 0, max = 1000000 } }, number = 4 } } } }"#,
    );
    let v = draw(&f, 5);
    assert!(v.iter().all(|x| x == &v[0]));
    assert_refused(&[
        (
            r#"{ "^Cycle" = { ofLength = 0, fromGenerator = 1 } }"#,
            "v.^Cycle.ofLength",
            "at least 1",
        ),
        (
            r#"{ "^Repeat" = { count = 0, fromGenerator = 1 } }"#,
            "v.^Repeat.count",
            "at least 1",
        ),
        (
            r#"{ "^Repeat" = { count = 2 } }"#,
            "v.^Repeat",
            "needs `fromGenerator`",
        ),
    ]);
}

/// A directory holding `src/workloads/datasets/<name>` with `text`.
fn dataset_dir(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let datasets = dir.path().join("src/workloads/datasets");
    std::fs::create_dir_all(&datasets).expect("created");
    std::fs::write(datasets.join(name), text).expect("written");
    dir
}

#[test]
fn choose_from_dataset_random_and_sequential() {
    let dir = dataset_dir("colors-test.txt", "red\r\n\ngreen\nblue\n");
    let o = CompileOptions {
        genny: true,
        base_dir: Some(dir.path().join("src/workloads/docs")),
    };
    // genny's path (relative to where genny runs), found from the workload's directory.
    let t = compile_opts(
        r#"{ "^ChooseFromDataset" = { path = "./src/genny/src/workloads/datasets/colors-test.txt" } }"#,
        &o,
    );
    let seen: std::collections::HashSet<String> = strings(&draw(&t, 200)).into_iter().collect();
    assert_eq!(
        seen,
        ["red", "green", "blue"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    let s = compile_opts(
        r#"{ "^ChooseFromDataset" = { path = "./src/genny/src/workloads/datasets/colors-test.txt", sequential = true, startFromLine = 1 } }"#,
        &o,
    );
    let (mut a, mut b) = (UserState::default(), UserState::default());
    assert_eq!(
        strings(&draw_user(&s, 4, 0, &mut a, 1)),
        ["green", "blue", "red", "green"]
    );
    assert_eq!(strings(&draw_user(&s, 1, 1, &mut b, 1)), ["green"]);
    // The path as written, from the base directory.
    let o2 = CompileOptions {
        genny: false,
        base_dir: Some(dir.path().to_path_buf()),
    };
    compile_opts(
        r#"{ "^ChooseFromDataset" = { path = "src/workloads/datasets/colors-test.txt" } }"#,
        &o2,
    );
    let e = compile_opts_err(
        r#"{ "^ChooseFromDataset" = { path = "./src/genny/src/workloads/datasets/colors-test.txt", sequential = true, startFromLine = 3 } }"#,
        &o,
    );
    assert_eq!(e.key, "v.^ChooseFromDataset.startFromLine");
    assert!(e.problem.contains("3 line(s)"), "{}", e.problem);
    let e = compile_opts_err(
        r#"{ "^ChooseFromDataset" = { path = "./no/such/dataset-xyz.txt" } }"#,
        &o,
    );
    assert_eq!(e.key, "v.^ChooseFromDataset.path");
    assert!(
        e.problem
            .contains("`./no/such/dataset-xyz.txt` was not found")
            && e.problem.contains("src/workloads/datasets/"),
        "{}",
        e.problem
    );
    let empty = dataset_dir("empty-test.txt", "\n\n");
    let e = Template::compile_with(
        &value(r#"{ "^ChooseFromDataset" = { path = "src/workloads/datasets/empty-test.txt" } }"#),
        "v",
        &CompileOptions {
            genny: false,
            base_dir: Some(empty.path().to_path_buf()),
        },
    )
    .expect_err("an empty dataset");
    assert!(e.problem.contains("no line"), "{}", e.problem);
}

#[test]
fn convert_to_numbers_as_genny_does() {
    let c = |src: &str| compile(src).constant().cloned().unwrap_or(Bson::Null);
    assert_eq!(
        c(r#"{ "^ConvertToInt" = { from = "42" } }"#),
        Bson::Int64(42)
    );
    assert_eq!(c(r#"{ "^ConvertToInt" = { from = 7 } }"#), Bson::Int64(7));
    assert_eq!(
        c(r#"{ "^ConvertToInt" = { from = "12.9" } }"#),
        Bson::Int64(12)
    );
    assert_eq!(
        c(r#"{ "^ConvertToInt32" = { from = "-5" } }"#),
        Bson::Int32(-5)
    );
    assert_eq!(
        c(r#"{ "^ConvertToDouble" = { from = "2.5e1" } }"#),
        Bson::Double(25.0)
    );
    assert_eq!(
        c(r#"{ "^ConvertToDecimal" = { from = 1.25 } }"#),
        Bson::Decimal128("1.25".parse().expect("a decimal"))
    );
    // Generated values: a string read, a number cast; a double becomes a decimal as
    // std::to_string writes it (six places).
    let g = compile(
        r#"[{ "^ConvertToInt32" = { from = { "^RandomString" = { length = 3, alphabet = "7" } } } }, { "^ConvertToInt" = { from = { "^RandomDouble" = { min = 2.5, max = 2.5 } } } }, { "^ConvertToDecimal" = { from = { "^RandomDouble" = { min = 0.1, max = 0.1 } } } }, { "^ConvertToDouble" = { from = { "^Inc" = { start = 3 } } } }, { "^ConvertToInt32" = { from = { "^Choose" = { from = ["x"] } } } }]"#,
    );
    assert_eq!(
        draw(&g, 1)[0],
        Bson::Array(vec![
            Bson::Int32(777),
            Bson::Int64(2),
            Bson::Decimal128("0.100000".parse().expect("a decimal")),
            Bson::Double(3.0),
            Bson::Null,
        ])
    );
    assert_refused(&[
        (
            r#"{ "^ConvertToInt" = { from = "abc" } }"#,
            "v.^ConvertToInt.from",
            "`abc` cannot be made into a 64-bit integer",
        ),
        (
            r#"{ "^ConvertToInt32" = { from = 3000000000 } }"#,
            "v.^ConvertToInt32.from",
            "32-bit",
        ),
        (
            r#"{ "^ConvertToDouble" = { from = [1] } }"#,
            "v.^ConvertToDouble.from",
            "not a number or a string",
        ),
    ]);
}

#[test]
fn concat_arrays() {
    assert_eq!(
        compile(r#"{ "^Concat" = { arrays = [[1, 1], [2, 3, 5]] } }"#).constant(),
        Some(&Bson::Array(
            [1, 1, 2, 3, 5].into_iter().map(Bson::Int32).collect()
        ))
    );
    let t = compile(
        r#"{ "^Concat" = { arrays = [{ "^Array" = { of = { "^Inc" = {} }, number = 2 } }, [7]] } }"#,
    );
    assert_eq!(
        draw(&t, 1)[0],
        Bson::Array(vec![Bson::Int64(0), Bson::Int64(1), Bson::Int32(7)])
    );
    assert_refused(&[(
        r#"{ "^Concat" = { arrays = [[1], "x"] } }"#,
        "v.^Concat.arrays[1]",
        "not an array",
    )]);
}

#[test]
fn array_distinct_gives_different_values_or_gives_up() {
    let t = compile(
        r#"{ "^Array" = { of = { "^RandomInt" = { min = 0, max = 30 } }, number = 20, distinct = true } }"#,
    );
    for v in draw(&t, 50) {
        let Bson::Array(items) = v else { panic!() };
        let set: std::collections::HashSet<i64> = ints(&items).into_iter().collect();
        assert_eq!((items.len(), set.len()), (20, 20));
    }
    // Four values cannot make ten: it gives up after 100 repeats in a row, as genny does.
    let t = compile(
        r#"{ "^Array" = { of = { "^RandomInt" = { min = 0, max = 3 } }, number = 10, distinct = true } }"#,
    );
    let Bson::Array(items) = &draw(&t, 1)[0] else {
        panic!()
    };
    assert_eq!(items.len(), 4);
    // Int32 1 and Int64 1 are different BSON values.
    let t = compile(
        r#"{ "^Array" = { of = { "^Choose" = { from = [1, { "^Inc" = { start = 1 } }], deterministic = true } }, number = 2, distinct = true } }"#,
    );
    assert_eq!(
        draw(&t, 1)[0],
        Bson::Array(vec![Bson::Int32(1), Bson::Int64(1)])
    );
}

#[test]
fn time_spec_ip_and_now_timestamp() {
    let ms = |src: &str| match draw(&compile(src), 1).remove(0) {
        Bson::Double(f) => f,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        ms(r#"{ "^TimeSpec" = { value = 2, unit = "seconds" } }"#),
        2000.0
    );
    assert_eq!(
        ms(r#"{ "^TimeSpec" = { value = 1.5, unit = "minute" } }"#),
        90_000.0
    );
    assert_eq!(
        ms(r#"{ "^TimeSpec" = { value = 250, unit = "microseconds" } }"#),
        0.25
    );
    assert_eq!(
        ms(r#"{ "^TimeSpec" = { value = 1, unit = "hours" } }"#),
        3_600_000.0
    );
    let r = doubles(&draw(
        &compile(
            r#"{ "^TimeSpec" = { value = { "^RandomDouble" = { min = 0, max = 15 } }, unit = "seconds" } }"#,
        ),
        100,
    ));
    assert!(r.iter().all(|x| (0.0..15_000.0).contains(x)));
    assert_refused(&[
        (
            r#"{ "^TimeSpec" = { value = 1, unit = "sec" } }"#,
            "v.^TimeSpec.unit",
            "not a unit of time",
        ),
        (
            r#"{ "^TimeSpec" = { unit = "seconds" } }"#,
            "v.^TimeSpec",
            "needs `value`",
        ),
    ]);

    let ips = strings(&draw(&compile(r#"{ "^IP" = {} }"#), N));
    for ip in &ips {
        let octets: Vec<u32> = ip
            .split('.')
            .map(|o| o.parse().expect("a number"))
            .collect();
        assert_eq!(octets.len(), 4, "{ip}");
        assert!(octets[0] < 128 && octets.iter().all(|&o| o < 256), "{ip}");
    }
    assert!(ips.iter().any(|ip| ip.starts_with("127.")));

    assert_eq!(
        one(r#"{ "^NowTimestamp" = {} }"#),
        Bson::Timestamp(mongodb::bson::Timestamp {
            time: u32::try_from(NOW / 1000).unwrap(),
            increment: 1
        })
    );
}

#[test]
fn two_d_walk_moves_and_starts_again() {
    let t = compile(
        r#"{ "^TwoDWalk" = { docsPerSeries = 4, minX = -50, maxX = 50, minY = -30, maxY = 30, distPerDoc = 0.5 } }"#,
    );
    let points: Vec<(f64, f64)> = draw(&t, 8)
        .into_iter()
        .map(|p| match p {
            Bson::Array(xy) => {
                let d = doubles(&xy);
                (d[0], d[1])
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let step = |a: (f64, f64), b: (f64, f64)| ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
    for i in [1, 2, 3, 5, 6, 7] {
        assert!((step(points[i - 1], points[i]) - 0.5).abs() < 1e-9, "{i}");
    }
    // A new object every 4 values, somewhere else.
    assert!(step(points[3], points[4]) > 0.5 + 1e-9);
    assert!(points.iter().all(|p| p.0.abs() < 51.0 && p.1.abs() < 31.0));
}

#[test]
fn bin_data_is_made_once_per_user() {
    let t = compile(r#"{ "^BinData" = {} }"#);
    let v = draw(&t, 3);
    let Bson::Binary(b) = &v[0] else { panic!() };
    assert_eq!((b.bytes.len(), b.subtype), (32, BinarySubtype::Generic));
    assert!(v.iter().all(|x| x == &v[0]));
    let Bson::Binary(s) = one(r#"{ "^BinDataSensitive" = { numBytes = 8 } }"#) else {
        panic!()
    };
    assert_eq!(
        (s.bytes.len(), s.subtype),
        (8, BinarySubtype::UserDefined(8))
    );
}

#[test]
fn frequency_maps_give_each_string_its_count() {
    let t = compile(r#"{ "^TakeRandomStringFromFrequencyMap" = { from = { a = 3, b = 2 } } }"#);
    let v = draw(&t, 6);
    let count = |s: &str| v.iter().filter(|x| **x == Bson::String(s.into())).count();
    assert_eq!((count("a"), count("b")), (3, 2));
    assert_eq!(v[5], Bson::Null);
    // The singleton: one map for every user and every template of the same id.
    let one_map = r#"{ "^TakeRandomStringFromFrequencyMapSingleton" = { id = "test-shared-map", from = { x = 2 } } }"#;
    let (t1, t2) = (compile(one_map), compile(one_map));
    let (mut a, mut b) = (UserState::default(), UserState::default());
    assert_eq!(draw_user(&t1, 1, 0, &mut a, 1)[0], Bson::String("x".into()));
    assert_eq!(draw_user(&t2, 1, 1, &mut b, 1)[0], Bson::String("x".into()));
    assert_eq!(draw_user(&t1, 1, 0, &mut a, 1)[0], Bson::Null);
}

#[test]
fn format_string_takes_boosts_forms() {
    let cases = [
        (r#""%|07d|""#, "[42]", "0000042"),
        (r#""%|5|-%|-4|.""#, r#"[7, "ab"]"#, "    7-ab  ."),
        (r#""%2% %1%""#, r#"["a", "b"]"#, "b a"),
        (r#""%2$s-%1$03d""#, r#"[5, "x"]"#, "x-005"),
        (r#""%1%%1%""#, "[1.5]", "1.51.5"),
    ];
    for (format, args, want) in cases {
        let t = compile(&format!(
            r#"{{ "^FormatString" = {{ format = {format}, withArgs = {args} }} }}"#
        ));
        assert_eq!(
            t.constant(),
            Some(&Bson::String(want.into())),
            "{format} {args}"
        );
    }
    assert_refused(&[
        (
            r#"{ "^FormatString" = { format = "%3%", withArgs = [1] } }"#,
            "v.^FormatString.withArgs",
            "3 conversion(s) but withArgs has 1",
        ),
        (
            r#"{ "^FormatString" = { format = "%|05d", withArgs = [1] } }"#,
            "v.^FormatString.format",
            "no closing `|`",
        ),
    ]);
}

#[test]
fn uuid_takes_genny_subtype() {
    let t =
        compile(r#"{ "^UUID" = { hex = "3b241101-e2bb-4255-8caf-4136c566a962", subType = 4 } }"#);
    assert!(matches!(
        t.constant(),
        Some(Bson::Binary(b)) if b.subtype == BinarySubtype::Uuid
    ));
    assert_refused(&[(
        r#"{ "^UUID" = { hex = "3b241101-e2bb-4255-8caf-4136c566a962", subType = 3 } }"#,
        "v.^UUID.subType",
        "subtype 4",
    )]);
}

#[test]
fn genny_ignores_arguments_it_does_not_know() {
    let t = compile_opts(
        r#"{ "^RandomInt" = { min = 1, max = 1, comment = "x" } }"#,
        &genny(),
    );
    assert_eq!(ints(&draw(&t, 1)), vec![1]);
    compile_err(r#"{ "^RandomInt" = { min = 1, max = 1, comment = "x" } }"#);
}
