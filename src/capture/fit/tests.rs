use super::*;

fn s(v: &str) -> Bson {
    Bson::String(v.into())
}

#[test]
fn few_strings_become_placeholders_with_their_frequencies_unless_kept() {
    let vals: Vec<Bson> = ["open", "open", "open", "paid", "paid", "shipped"]
        .map(s)
        .to_vec();
    let g = field("order.status", &vals, false, 0);
    assert_eq!(
        g.to_string(),
        r#"{ "^Choose" = { from = ["status-1", "status-2", "status-3"], weights = [3, 2, 1] } }"#
    );
    let g = field("status", &vals, true, 0);
    assert!(
        g.to_string()
            .contains(r#"from = ["open", "paid", "shipped"]"#),
        "{g}"
    );
}

#[test]
fn many_distinct_strings_become_random_strings_of_the_observed_lengths() {
    let vals: Vec<Bson> = (0..50)
        .map(|i| s(&"x".repeat(5 + i % 4)))
        .chain((0..50).map(|i| s(&format!("id{i:04}"))))
        .collect();
    let g = field("email", &vals, false, 0);
    assert_eq!(
        g.to_string(),
        r#"{ "^RandomString" = { length = { "^RandomInt" = { min = 5, max = 8 } } } }"#
    );
}

#[test]
fn a_selecting_field_of_many_values_keeps_their_number_not_their_text() {
    // 150 authors, each of 4 of 600 posts; finds by author returned 4 per call.
    let vals: Vec<Bson> = (0..300).map(|i| s(&format!("author{}", i % 150))).collect();
    let sel = Selecting {
        source_docs: Some(600),
        replay_docs: 600,
        returned_per_value: Some(4.0),
        sampled: &[],
    };
    assert_eq!(cardinality(150, &sel), 150);
    let g = selecting("author", &vals, &sel, false).unwrap().to_string();
    // Every value seen: listed with their frequencies, as placeholders.
    assert!(
        g.starts_with(r#"{ "^Choose" = { from = ["author-1", "author-2""#),
        "{g}"
    );
    assert_eq!(g.matches("author-").count(), 150, "{g}");
    let kept = selecting("author", &vals, &sel, true).unwrap().to_string();
    assert!(
        kept.contains(r#""author0""#) && !kept.contains("author-1"),
        "{kept}"
    );
    // Only 50 of them seen, the finds saying there are 150: 150 placeholders drawn alike.
    let few: Vec<Bson> = (0..100).map(|i| s(&format!("author{}", i % 50))).collect();
    let g = selecting("author", &few, &sel, false).unwrap().to_string();
    assert_eq!(
        g,
        r#"{ "^FormatString" = { format = "author-%d", withArgs = [{ "^RandomInt" = { min = 1, max = 150 } }] } }"#
    );
    // A preload capped at a tenth of the source: a tenth of the values, so that each still
    // selects 4 documents.
    let capped = Selecting {
        source_docs: Some(6000),
        replay_docs: 600,
        returned_per_value: Some(4.0),
        sampled: &[],
    };
    assert!(selecting("author", &few, &capped, false)
        .unwrap()
        .to_string()
        .contains("max = 150"));
    // All 300 seen, the preload a tenth of the source's 1,200: 30 values drawn, not the
    // 300 listed (each would select a tenth of what it did).
    let many: Vec<Bson> = (0..600).map(|i| s(&format!("author{}", i % 300))).collect();
    let tenth = Selecting {
        source_docs: Some(1200),
        replay_docs: 120,
        returned_per_value: Some(4.0),
        sampled: &[],
    };
    assert!(selecting("author", &many, &tenth, false)
        .unwrap()
        .to_string()
        .contains(r#""^FormatString" = { format = "author-%d", withArgs = [{ "^RandomInt" = { min = 1, max = 30 } }] }"#));
    // Few values that repeat, all of them seen: the plain fit's ^Choose.
    let status: Vec<Bson> = (0..60).map(|i| s(["a", "b", "c"][i % 3])).collect();
    assert!(selecting("status", &status, &Selecting::default(), false).is_none());
    // Numbers are the plain fit's.
    assert!(selecting("n", &[Bson::Int32(1)], &Selecting::default(), false).is_none());
}

#[test]
fn chao1_counts_the_values_a_sample_did_not_see() {
    // A unique field: every sampled value once, so there are as many as documents.
    let unique: Vec<Bson> = (0..200).map(|i| s(&format!("u{i}"))).collect();
    let sel = Selecting {
        source_docs: Some(5000),
        replay_docs: 5000,
        returned_per_value: None,
        sampled: &unique,
    };
    assert_eq!(cardinality(200, &sel), 5000);
    // 100 values each sampled twice: no value unseen.
    let twice: Vec<Bson> = (0..200).map(|i| s(&format!("v{}", i % 100))).collect();
    let sel = Selecting {
        sampled: &twice,
        ..sel
    };
    assert_eq!(cardinality(100, &sel), 100);
}

#[test]
fn without_documents_values_and_dates_still_select() {
    // No count, no sample (a log without --uri): the preload over what a value returned.
    let sel = Selecting {
        source_docs: None,
        replay_docs: 1000,
        returned_per_value: Some(8.0),
        sampled: &[],
    };
    assert_eq!(cardinality(2, &sel), 125);
    // Dates only seen as a bound an hour back: documents from two hours back to now.
    let now = 10_000_000_000;
    let d = |ms| Bson::DateTime(mongodb::bson::DateTime::from_millis(ms));
    assert_eq!(
        synthetic_dates(&[d(now - 3_600_000), d(now - 3_590_000)], now)
            .unwrap()
            .to_string(),
        r#"{ "^RandomDate" = { min = "-7200s", max = "now" } }"#
    );
    assert!(synthetic_dates(&[Bson::Int32(1)], now).is_none());
}

#[test]
fn references_are_values_found_among_another_collections_ids() {
    use mongodb::bson::oid::ObjectId;
    let posts: Vec<ObjectId> = (0..50).map(|_| ObjectId::new()).collect();
    // 20 of the 50 posts' _ids known (a sample of them).
    let known: std::collections::HashSet<String> = posts[..20]
        .iter()
        .map(|o| Bson::ObjectId(*o).to_string())
        .collect();
    let refs: Vec<Bson> = posts[10..40].iter().map(|o| Bson::ObjectId(*o)).collect();
    let r: Vec<&Bson> = refs.iter().collect();
    assert!(references(&r, &known, 50));
    let strangers: Vec<Bson> = (0..30).map(|_| Bson::ObjectId(ObjectId::new())).collect();
    let r: Vec<&Bson> = strangers.iter().collect();
    assert!(!references(&r, &known, 50));
    // Integers: all known, most found.
    let ids: std::collections::HashSet<String> =
        (0..200).map(|i| Bson::Int32(i).to_string()).collect();
    let refs: Vec<Bson> = (0..40).map(|i| Bson::Int32(i * 5)).collect();
    let r: Vec<&Bson> = refs.iter().collect();
    assert!(references(&r, &ids, 200));
    let far: Vec<Bson> = (0..40).map(|i| Bson::Int32(1000 + i)).collect();
    let r: Vec<&Bson> = far.iter().chain(refs[..2].iter()).collect();
    assert!(!references(&r, &ids, 200));
    assert_eq!(
        reference(600).to_string(),
        r#"{ "^RandomInt" = { min = 0, max = 599 } }"#
    );
}

#[test]
fn numbers_give_their_range_and_dates_a_window() {
    let g = field(
        "n",
        &[Bson::Int32(3), Bson::Int64(10), Bson::Int32(7)],
        false,
        0,
    );
    assert_eq!(g.to_string(), r#"{ "^RandomInt" = { min = 3, max = 10 } }"#);
    let g = field("p", &[Bson::Double(1.5), Bson::Double(2.0)], false, 0);
    assert_eq!(
        g.to_string(),
        r#"{ "^RandomDouble" = { min = 1.5, max = 2.0 } }"#
    );
    let now = 1_000_000_000;
    let d = |ms| Bson::DateTime(mongodb::bson::DateTime::from_millis(ms));
    let g = field("created", &[d(now - 3_600_000), d(now)], false, now);
    assert_eq!(
        g.to_string(),
        r#"{ "^RandomDate" = { min = "-3600s", max = "now" } }"#
    );
}

#[test]
fn a_query_date_a_steady_offset_before_its_operation_is_now_minus_it() {
    assert_eq!(
        query_date(&[-3_600_000, -3_600_200, -3_599_900]).to_string(),
        r#"{ "^Now" = { minus = "3600s" } }"#
    );
    assert_eq!(
        query_date(&[-86_400_000, -1000]).to_string(),
        r#"{ "^RandomDate" = { min = "-86400s", max = "-1s" } }"#
    );
}

#[test]
fn parameters_take_the_usual_value() {
    let v: Vec<Bson> = [20, 20, 20, 20, 50].map(Bson::Int32).to_vec();
    assert_eq!(param(&v, false).to_string(), "20");
    let v: Vec<Bson> = [1, 2, 3, 4, 5].map(Bson::Int32).to_vec();
    assert_eq!(
        param(&v, false).to_string(),
        r#"{ "^RandomInt" = { min = 1, max = 5 } }"#
    );
    assert_eq!(param(&v, true).to_string(), "1");
}

#[test]
fn skew_is_a_tenth_of_the_keys_taking_half_the_hits() {
    let mut hits: HashMap<String, u64> = (0..100).map(|i| (i.to_string(), 1)).collect();
    assert!(!skewed(&hits));
    for i in 0..10 {
        hits.insert(i.to_string(), 20);
    }
    assert!(skewed(&hits));
}

/// A field's data as the source's sample gives it: each value with its documents.
fn data(pairs: &[(&str, u64)], whole: bool) -> crate::capture::FieldData {
    crate::capture::FieldData {
        read: pairs.iter().map(|p| p.1).sum(),
        counts: pairs.iter().map(|(v, n)| (s(v), *n)).collect(),
        whole,
        distinct: None,
        dated: Default::default(),
    }
}

#[test]
fn the_documents_and_the_reads_draw_the_same_ranks_by_their_own_frequencies() {
    // Documents: a 5, b 3, c 1 (every document read). Reads: c 10 times, a once, and twice a
    // value no document holds.
    let r = Ranking {
        data: Some(data(&[("a", 5), ("b", 3), ("c", 1)], true)),
        pooled: vec![(s("c"), 10), (s("a"), 1), (s("zz"), 2)],
        k: 3,
        leaf: "author".into(),
        form: Form::Placeholder { keep: false },
    };
    let fit = r.fit("every document read");
    assert_eq!(
        fit.data.unwrap().to_string(),
        r#"{ "^Choose" = { from = ["author-1", "author-2", "author-3"], weights = [5, 3, 1] } }"#
    );
    // The rarest document value is the most asked for: its rank, 3, is drawn 10 times in 13.
    assert_eq!(
        fit.access.to_string(),
        r#"{ "^Choose" = { from = ["author-3", "author-1", "author-absent"], weights = [10, 1, 2] } }"#
    );
    assert!(
        fit.note
            .contains("documents: 3 distinct values (every document read)"),
        "{}",
        fit.note
    );
    // One read's own values, over the same ranks.
    assert_eq!(r.access(&[(s("b"), 4)]).to_string(), r#""author-2""#);
    // Kept values write the values, and references the preloaded _ids by rank.
    let kept = Ranking {
        form: Form::Placeholder { keep: true },
        ..r.clone()
    };
    assert!(kept
        .fit("")
        .data
        .unwrap()
        .to_string()
        .contains(r#"from = ["a", "b", "c"]"#));
    let ids = Ranking {
        form: Form::Ids,
        k: 10,
        ..r.clone()
    };
    let fit = ids.fit("");
    assert_eq!(
        fit.data.unwrap().to_string(),
        r#"{ "^Choose" = { from = [0, 1, 2], weights = [5, 3, 1] } }"#
    );
    assert!(
        fit.access.to_string().contains("from = [2, 0, -1]"),
        "{}",
        fit.access
    );
}

#[test]
fn values_beyond_the_sample_are_a_tail_drawn_uniformly() {
    // A sample (not every document) of 3 values; the source has 50: ranks 4 .. 50 are a tail
    // weighted by the values read once (Good-Turing), and a read of an unseen value draws it.
    let r = Ranking {
        data: Some(data(&[("a", 5), ("b", 3), ("c", 1)], false)),
        pooled: vec![(s("a"), 3), (s("unseen"), 1)],
        k: 50,
        leaf: "author".into(),
        form: Form::Placeholder { keep: false },
    };
    let fit = r.fit("");
    assert_eq!(
        fit.data.unwrap().to_string(),
        r#"{ "^Choose" = { from = ["author-1", "author-2", "author-3", { "^FormatString" = { format = "author-%d", withArgs = [{ "^RandomInt" = { min = 4, max = 50 } }] } }], weights = [5, 3, 1, 1] } }"#
    );
    assert_eq!(
        fit.access.to_string(),
        r#"{ "^Choose" = { from = ["author-1", { "^FormatString" = { format = "author-%d", withArgs = [{ "^RandomInt" = { min = 4, max = 50 } }] } }], weights = [3, 1] } }"#
    );
}

#[test]
fn chao1_counts_a_skewed_fields_values_from_a_sample_within_a_fifth() {
    use rand::distr::{weighted::WeightedIndex, Distribution};
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    // 2,000 authors, one message each and 18,000 more by Zipf's law (s = 1); 10,000 read.
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let weights: Vec<f64> = (1..=2000_u32).map(|k| 1.0 / f64::from(k)).collect();
    let zipf = WeightedIndex::new(&weights).unwrap();
    let mut docs: Vec<usize> = (0..2000).collect();
    docs.extend((0..18_000).map(|_| zipf.sample(&mut rng)));
    docs.shuffle(&mut rng);
    docs.truncate(10_000);
    let mut counts: HashMap<usize, u64> = HashMap::new();
    for d in docs {
        *counts.entry(d).or_default() += 1;
    }
    let sample = crate::capture::FieldData {
        read: 10_000,
        counts: counts
            .into_iter()
            .map(|(v, n)| (Bson::String(format!("u{v}")), n))
            .collect(),
        whole: false,
        distinct: None,
        dated: Default::default(),
    };
    let (k, how) = data_cardinality(&sample, Some(20_000));
    assert!(sample.counts.len() < 1800, "the sample alone sees too few");
    assert!(k.abs_diff(2000) <= 400, "{k} ({how})");
}

#[test]
fn a_zipf_exponent_is_read_back_from_its_frequencies() {
    let counts: Vec<u64> = (1..=200_u32)
        .map(|k| crate::num::whole(100_000.0 / f64::from(k)))
        .collect();
    let (s, err) = zipf(&counts).unwrap();
    assert!((s - 1.0).abs() < 0.01, "{s}");
    assert!(err < 0.01, "{err}");
    assert!(zipf(&[3, 2]).is_none());
}
