//! `assert`: two commands sent in turn, the first batch of the second's cursor compared with
//! the first's by genny's AssertiveActor's rules (`src/cast_core/src/AssertiveActor.cpp`,
//! `equalBSONArrays`, `equalBSONDocs`, `equal`): arrays of equal length, element by element in
//! order; documents field by field both ways, the ignored fields skipped; numbers (double,
//! int32, int64) equal when they differ by less than 0.001, whatever their types; values of
//! two other types unequal; anything else by value. Only the first batch is compared (genny
//! sends no getMore), so the commands' `cursor.batchSize` must hold the whole result.

use mongodb::bson::{Bson, Document};

use super::{bytes, Outcome, Result, Session};

use crate::driver_error::ReplyRefused;

fn failed(why: String) -> mongodb::error::Error {
    mongodb::error::Error::custom(ReplyRefused(why))
}

/// Sends `expected`, then `actual`, to the step's database; their first batches must agree.
pub(super) async fn assert(
    on: &super::On<'_>,
    ignore: &[String],
    expected: Document,
    actual: Document,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    out.sent = on.size(&expected) + on.size(&actual);
    let db = on.client.database(&on.coll.namespace().db);
    let expected_reply = send!(session, db.run_command(expected))?;
    let actual_reply = send!(session, db.run_command(actual))?;
    if on.measure {
        out.received = bytes(&expected_reply) + bytes(&actual_reply);
    }
    let (want, got) = (
        first_batch(&expected_reply, "expected")?,
        first_batch(&actual_reply, "actual")?,
    );
    out.returned = u64::try_from(got.len()).unwrap_or(u64::MAX);
    out.matched = true;
    match arrays(ignore, want, got) {
        None => Ok(()),
        Some(why) => Err(failed(format!(
            "assertion failed: results were unequal: {why}"
        ))),
    }
}

/// The reply's `cursor.firstBatch`.
fn first_batch<'a>(
    reply: &'a Document,
    which: &str,
) -> std::result::Result<&'a [Bson], mongodb::error::Error> {
    reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .map(Vec::as_slice)
        .ok_or_else(|| {
            failed(format!(
                "assertion failed: the {which} command's reply has no cursor.firstBatch (a command that returns a cursor, such as aggregate or find, is compared)"
            ))
        })
}

/// Where two arrays differ, in words; None when they agree.
pub(crate) fn arrays(ignore: &[String], expected: &[Bson], actual: &[Bson]) -> Option<String> {
    if expected.len() != actual.len() {
        return Some(format!(
            "arrays differ in length: expected {} but found {}",
            expected.len(),
            actual.len()
        ));
    }
    expected
        .iter()
        .zip(actual)
        .enumerate()
        .find_map(|(i, (e, a))| values(ignore, e, a).map(|why| format!("at index {i}: {why}")))
}

fn documents(ignore: &[String], expected: &Document, actual: &Document) -> Option<String> {
    let skip = |k: &str| ignore.iter().any(|i| i == k);
    for (k, a) in actual.iter().filter(|(k, _)| !skip(k)) {
        match expected.get(k) {
            None => return Some(format!("field `{k}` found but not expected")),
            Some(e) => {
                if let Some(why) = values(ignore, e, a) {
                    return Some(format!("in field `{k}`: {why}"));
                }
            }
        }
    }
    expected
        .keys()
        .find(|k| !skip(k) && !actual.contains_key(k.as_str()))
        .map(|k| format!("field `{k}` expected but not found"))
}

fn number(b: &Bson) -> Option<f64> {
    match b {
        Bson::Double(d) => Some(*d),
        Bson::Int32(i) => Some(f64::from(*i)),
        // genny converts an int64 to a double as well.
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(i) => Some(*i as f64),
        _ => None,
    }
}

fn values(ignore: &[String], expected: &Bson, actual: &Bson) -> Option<String> {
    if let (Some(e), Some(a)) = (number(expected), number(actual)) {
        // genny's `std::abs(e - a) < 0.001`: a NaN is equal to nothing.
        let close = (e - a).abs() < 0.001;
        return (!close).then(|| format!("expected {e} but found {a}"));
    }
    match (expected, actual) {
        (Bson::Array(e), Bson::Array(a)) => arrays(ignore, e, a),
        (Bson::Document(e), Bson::Document(a)) => documents(ignore, e, a),
        (e, a) if e.element_type() != a.element_type() => Some(format!(
            "types differ: expected {:?} but found {:?}",
            e.element_type(),
            a.element_type()
        )),
        (e, a) => (e != a).then(|| format!("expected {e} but found {a}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::bson;

    fn ids() -> Vec<String> {
        vec!["_id".into(), "num".into()]
    }

    fn batch(b: Bson) -> Vec<Bson> {
        match b {
            Bson::Array(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn numbers_of_any_type_agree_within_a_thousandth_and_ignored_fields_are_skipped() {
        let e = batch(bson!([{ "_id": 1, "num": 1, "revenue": 10.0, "n": 3_i64 }]));
        let a = batch(bson!([{ "_id": 9, "num": 7, "revenue": 10.0004, "n": 3 }]));
        assert_eq!(arrays(&ids(), &e, &a), None);
        let a = batch(bson!([{ "_id": 9, "revenue": 10.002, "n": 3 }]));
        let why = arrays(&ids(), &e, &a).unwrap();
        assert!(
            why.contains("index 0") && why.contains("`revenue`"),
            "{why}"
        );
    }

    #[test]
    fn order_length_types_and_missing_fields_are_differences() {
        let e = batch(bson!([{ "k": "a" }, { "k": "b" }]));
        assert!(arrays(&ids(), &e, &batch(bson!([{ "k": "b" }, { "k": "a" }]))).is_some());
        assert!(arrays(&ids(), &e, &batch(bson!([{ "k": "a" }])))
            .unwrap()
            .contains("length"));
        let why = arrays(&ids(), &e, &batch(bson!([{ "k": 1 }, { "k": "b" }]))).unwrap();
        assert!(why.contains("types differ"), "{why}");
        let why = arrays(
            &ids(),
            &e,
            &batch(bson!([{ "k": "a", "x": 1 }, { "k": "b" }])),
        )
        .unwrap();
        assert!(why.contains("`x` found but not expected"), "{why}");
        let why = arrays(&ids(), &e, &batch(bson!([{}, { "k": "b" }]))).unwrap();
        assert!(why.contains("`k` expected but not found"), "{why}");
        // Field order within a document does not matter; nested arrays and documents recurse.
        let e = batch(bson!([{ "a": 1, "b": { "c": [1, 2] } }]));
        let a = batch(bson!([{ "b": { "c": [1.0, 2.0] }, "a": 1 }]));
        assert_eq!(arrays(&ids(), &e, &a), None);
        // A NaN equals nothing, itself included (genny's `abs(e - a) < 0.001` is false).
        let nan = batch(bson!([{ "x": f64::NAN }]));
        assert!(arrays(&ids(), &nan, &nan).is_some());
    }
}
