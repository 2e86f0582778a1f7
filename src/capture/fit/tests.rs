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
