use super::*;

#[test]
fn filters_draw_their_choices_by_the_key_distribution() {
    use crate::workload::distribution::{Chooser, KeyDist};
    let mut t = toml::Table::new();
    let names: Vec<toml::Value> = (0..10)
        .map(|i| toml::Value::from(format!("c{i}")))
        .collect();
    let mut choice = toml::Table::new();
    choice.insert("choice".into(), toml::Value::Array(names));
    t.insert("city".into(), toml::Value::Table(choice));
    let gen = DocGen::from_table(&t).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(4);
    let mut hot = Chooser::new(KeyDist::Hotspot, Default::default());
    let first_two = (0..10_000)
        .filter(|_| {
            let f = gen.generate_filter(&[0], &mut hot, &mut rng);
            ["c0", "c1"].contains(&f.get_str("city").unwrap())
        })
        .count();
    // Hotspot: 20 % of the choices (the first two) take 80 % of the filters.
    assert!((7_800..8_200).contains(&first_two), "{first_two}");
}
use rand::SeedableRng;

fn gen(text: &str) -> Result<DocGen, GenError> {
    let t: toml::Table = toml::from_str(text).unwrap();
    DocGen::from_table(&t)
}

const CITIES: &str = r#"
    city = { choice = ["a", "b", "c"] }
    loc = { x = { float = [1.0, 2.0] }, y = { int = [5, 5] } }
    pop = { paired_with = "city", choice = [1, 2, 3] }
    state = "GD"
"#;

#[test]
fn paired_values_follow_their_choice_field() {
    let g = gen(CITIES).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for _ in 0..200 {
        let d = g.generate(&mut rng);
        let city = d.get_str("city").unwrap();
        let pop = d.get_i64("pop").unwrap();
        assert_eq!(
            pop,
            match city {
                "a" => 1,
                "b" => 2,
                _ => 3,
            }
        );
        let loc = d.get_document("loc").unwrap();
        let x = loc.get_f64("x").unwrap();
        assert!((1.0..2.0).contains(&x));
        assert_eq!(loc.get_i64("y").unwrap(), 5);
        assert_eq!(d.get_str("state").unwrap(), "GD");
    }
    let keys: Vec<_> = g.generate(&mut rng).keys().cloned().collect();
    assert_eq!(keys, ["city", "loc", "pop", "state"]);
}

#[test]
fn selected_fields_keep_pairing_and_nothing_else() {
    let g = gen(CITIES).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let only = [g.field_index("pop").unwrap()];
    let d = g.generate_fields(&only, &mut rng);
    assert_eq!(d.len(), 1);
    assert!([1, 2, 3].contains(&d.get_i64("pop").unwrap()));
}

#[test]
fn every_choice_is_drawn() {
    let g = gen(CITIES).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let seen: std::collections::HashSet<String> = (0..300)
        .map(|_| g.generate(&mut rng).get_str("city").unwrap().to_string())
        .collect();
    assert_eq!(seen.len(), 3);
}

#[test]
fn pairing_with_a_missing_or_mismatched_field_is_an_error() {
    let e = gen("pop = { paired_with = \"town\", choice = [1] }").unwrap_err();
    assert_eq!(e.key, "document.pop.paired_with");
    let e = gen("city = { choice = [\"a\"] }\npop = { paired_with = \"city\", choice = [1, 2] }")
        .unwrap_err();
    assert!(e.problem.contains("2 values"), "{}", e.problem);
}

#[test]
fn an_inverted_range_is_an_error() {
    let e = gen("n = { int = [5, 1] }").unwrap_err();
    assert_eq!(e.key, "document.n.int");
}

#[test]
fn a_nul_in_a_nested_key_or_a_string_is_refused_with_its_path() {
    let e = gen("tags = [{ \"a\\u0000b\" = 1 }]").unwrap_err();
    assert_eq!(e.key, "document.tags[0].a\0b");
    assert!(e.problem.contains("a\\0b"), "{}", e.problem);
    let e = gen("city = { choice = [\"ok\", \"x\\u0000\"] }").unwrap_err();
    assert_eq!(e.key, "document.city.choice[1]");
    assert!(e.problem.contains("NUL"), "{}", e.problem);
}

#[test]
fn a_dollar_key_is_refused_at_any_depth() {
    let e = gen("a = { b = [{ \"$where\" = 1 }] }").unwrap_err();
    assert_eq!(e.key, "document.a.b[0].$where");
}

#[test]
fn nesting_beyond_the_servers_limit_is_refused() {
    // Built in code: the TOML parser refuses such depth itself ("recursion limit"), so
    // this check guards tables that reach the generator some other way.
    let deep = |levels: usize| {
        let mut t = toml::Table::new();
        t.insert("x".into(), toml::Value::Integer(1));
        for _ in 1..levels {
            let mut outer = toml::Table::new();
            outer.insert("l".into(), toml::Value::Table(t));
            t = outer;
        }
        t
    };
    assert!(DocGen::from_table(&deep(MAX_NESTING)).is_ok());
    let e = DocGen::from_table(&deep(MAX_NESTING + 1)).unwrap_err();
    assert!(e.problem.contains("at most 100"), "{}", e.problem);
}

#[test]
fn a_document_that_can_exceed_16_mib_is_refused_and_one_that_fits_is_not() {
    let big = "x".repeat(MAX_DOCUMENT_BYTES / 2);
    let fits = format!("a = {{ choice = [\"{big}\", \"y\"] }}");
    assert!(gen(&fits).is_ok());
    let e = gen(&format!("{fits}\nb = \"{big}\"\n")).unwrap_err();
    assert_eq!(e.key, "document");
    assert!(e.problem.contains("16 MiB"), "{}", e.problem);
}

#[test]
fn the_size_bound_is_exact_for_literal_documents() {
    let g = gen(CITIES_LITERAL).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut d = Document::new();
    d.insert("_id", 1_i64);
    g.fill(&mut d, None, &mut rng);
    let real = mongodb::bson::to_vec(&d).unwrap().len();
    assert_eq!(real, ID_ELEMENT_BYTES + g.max_bytes());
}

#[test]
fn a_raw_document_is_the_document_fill_makes_with_the_same_draws() {
    let g = gen(r#"
        city = { choice = ["Guangzhou", "Shenzhen", "Dongguan"] }
        pop = { paired_with = "city", choice = [1, 2, 3] }
        loc = { x = { float = [1.0, 2.0] }, y = { int = [1, 9] }, tag = "t" }
        state = "GD"
        n = { "^RandomInt" = { min = 1, max = 100 } }
    "#)
    .unwrap();
    for seed in 0..50 {
        let mut a = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut b = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut d = Document::new();
        d.insert("_id", 7_i64);
        g.fill(&mut d, None, &mut a);
        let raw = g.raw_with_id(7, &mut b);
        assert_eq!(Document::try_from(raw.as_ref()).unwrap(), d, "seed {seed}");
        assert_eq!(d.get_i64("pop").unwrap(), {
            let c = d.get_str("city").unwrap();
            ["Guangzhou", "Shenzhen", "Dongguan"]
                .iter()
                .position(|x| *x == c)
                .map(|i| i64::try_from(i).unwrap())
                .unwrap()
                + 1
        });
    }
}

#[test]
fn a_template_with_its_own_id_keeps_it_in_a_raw_document() {
    let g = gen("_id = { int = [5, 5] }
city = \"a\"\n")
    .unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let raw = g.raw_with_id(99, &mut rng);
    let ids: Vec<_> = raw
        .iter()
        .filter_map(|e| e.ok())
        .filter(|(k, _)| *k == "_id")
        .collect();
    assert_eq!(ids.len(), 1, "one _id");
    assert_eq!(raw.get_i64("_id").unwrap(), 5);
}

const CITIES_LITERAL: &str = r#"
    city = "a"
    loc = { x = 1.5, y = [1, 2, { z = "q" }] }
    ok = true
    n = { int = [1, 2] }
"#;

#[test]
fn id_gives_each_document_its_own_key_space_id_and_null_elsewhere() {
    // A field under a unique index made from the document's own _id never repeats.
    let g = gen(
        r#"name = { "^FormatString" = { format = "name-%d", withArgs = [{ "^Id" = {} }] } }
n = { "^Id" = {} }
"#,
    )
    .unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    for id in [0, 7, 123_456] {
        let raw = g.raw_with_id(id, &mut rng);
        assert_eq!(raw.get_str("name").unwrap(), format!("name-{id}"));
        assert_eq!(raw.get_i64("n").unwrap(), id);
    }
    // Outside a document the key space numbers, there is no _id to give.
    assert_eq!(crate::workload::template::own_id(), None);
}

/// `by_rank_of`: a field drawn by the index its sibling `^Choose` drew, wherever the two stand
/// in the table, in a whole document, a raw one and `^Field`'s fresh values alike.
#[test]
fn a_field_by_rank_follows_the_index_its_sibling_drew() {
    let g = gen(r#"
        a_when = { by_rank_of = "who", ranks = [1, 3], then = ["first", "second or third", { "^Choose" = { from = ["late", "later"] } }] }
        who = { "^Choose" = { from = ["x", "y", "z", "w"], weights = [1, 1, 1, 1] } }
    "#)
    .unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    let mut seen = std::collections::BTreeSet::new();
    for n in 0..400 {
        let d = if n % 2 == 0 {
            g.generate(&mut rng)
        } else {
            let raw = g.raw_with_id(n, &mut rng);
            mongodb::bson::Document::try_from(raw.as_ref()).unwrap()
        };
        let (who, when) = (d.get_str("who").unwrap(), d.get_str("a_when").unwrap());
        let want: &[&str] = match who {
            "x" => &["first"],
            "y" | "z" => &["second or third"],
            _ => &["late", "later"],
        };
        assert!(want.contains(&when), "{who} -> {when}");
        seen.insert(who.to_string());
    }
    assert_eq!(seen.len(), 4, "every value drawn");
    // The sibling's own draws are as without the ranked field (the same seed, the same values).
    let alone =
        gen(r#"who = { "^Choose" = { from = ["x", "y", "z", "w"], weights = [1, 1, 1, 1] } }"#)
            .unwrap();
    let (mut r1, mut r2) = (
        rand::rngs::SmallRng::seed_from_u64(3),
        rand::rngs::SmallRng::seed_from_u64(3),
    );
    let with: Vec<String> = (0..20)
        .map(|_| {
            g.generate_fields(&[1], &mut r1)
                .get_str("who")
                .unwrap()
                .to_string()
        })
        .collect();
    let without: Vec<String> = (0..20)
        .map(|_| alone.generate(&mut r2).get_str("who").unwrap().to_string())
        .collect();
    assert_eq!(with, without);
}

#[test]
fn a_field_by_rank_of_a_field_that_is_no_choice_is_refused_with_the_form() {
    let e = gen(r#"
        when = { by_rank_of = "who", ranks = [1], then = [1, 2] }
        who = "x"
    "#)
    .unwrap_err();
    assert_eq!(e.key, "document.when.by_rank_of");
    assert!(
        e.problem.contains("`who` is not a `^Choose` field"),
        "{}",
        e.problem
    );
    let e = gen(r#"
        when = { by_rank_of = "who", ranks = [1, 5], then = [1, 2] }
        who = { "^Choose" = { from = ["x", "y"] } }
    "#)
    .unwrap_err();
    assert_eq!(e.key, "document.when.then");
    assert!(e.problem.contains("2 values for 2 ranks"), "{}", e.problem);
    let e = gen(r#"
        when = { by_rank_of = "who", ranks = [5, 5], then = [1, 2, 3] }
        who = { "^Choose" = { from = ["x", "y"] } }
    "#)
    .unwrap_err();
    assert_eq!(e.key, "document.when.ranks");
}

#[test]
fn a_field_by_rank_of_a_sibling_beyond_the_64th_field_is_read() {
    // Captured templates keep the source's fields, however many.
    let mut text: String = (0..70).map(|i| format!("f{i:02} = {i}\n")).collect();
    text.push_str("who = { \"^Choose\" = { from = [\"x\", \"y\"] } }\n");
    text.push_str("when = { by_rank_of = \"who\", ranks = [1], then = [\"first\", \"second\"] }\n");
    let g = gen(&text).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2);
    for _ in 0..50 {
        let d = g.generate(&mut rng);
        let want = if d.get_str("who").unwrap() == "x" {
            "first"
        } else {
            "second"
        };
        assert_eq!(d.get_str("when").unwrap(), want);
    }
}
