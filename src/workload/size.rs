//! BSON sizes counted, not encoded: the bytes a filter or update takes on the wire, for the
//! samples' `sent` column, without serializing it a second time beside the driver.

use mongodb::bson::{Bson, Document};

/// The bytes of `d` encoded as BSON (what `RawDocumentBuf::from_document` would make).
pub(crate) fn document(d: &Document) -> usize {
    4 + d.iter().map(|(k, v)| element(k.len(), v)).sum::<usize>() + 1
}

/// One element: type byte, key and its NUL, value.
fn element(key_len: usize, v: &Bson) -> usize {
    1 + key_len + 1 + value(v)
}

fn string(s: &str) -> usize {
    4 + s.len() + 1
}

/// The bytes of a value inside a document (without its type byte and key).
pub(crate) fn value(v: &Bson) -> usize {
    match v {
        Bson::Double(_) | Bson::Int64(_) | Bson::DateTime(_) | Bson::Timestamp(_) => 8,
        Bson::Int32(_) => 4,
        Bson::Boolean(_) => 1,
        Bson::Null | Bson::Undefined | Bson::MaxKey | Bson::MinKey => 0,
        Bson::String(s) | Bson::JavaScriptCode(s) | Bson::Symbol(s) => string(s),
        Bson::Document(d) => document(d),
        Bson::Array(a) => {
            // An array is a document keyed "0", "1", ...
            4 + a
                .iter()
                .enumerate()
                .map(|(i, v)| element(decimal_digits(i), v))
                .sum::<usize>()
                + 1
        }
        Bson::ObjectId(_) => 12,
        Bson::Decimal128(_) => 16,
        Bson::RegularExpression(r) => r.pattern.len() + 1 + r.options.len() + 1,
        Bson::JavaScriptCodeWithScope(c) => 4 + string(&c.code) + document(&c.scope),
        Bson::Binary(b) => {
            // The old binary subtype 2 repeats the length inside.
            let old = matches!(b.subtype, mongodb::bson::spec::BinarySubtype::BinaryOld);
            4 + 1 + if old { 4 } else { 0 } + b.bytes.len()
        }
        Bson::DbPointer(_) => {
            // Its namespace is not readable from outside the bson crate: count it encoded.
            mongodb::bson::to_vec(&mongodb::bson::doc! { "": v.clone() })
                .map_or(0, |e| e.len() - 4 - 1 - 1 - 1)
        }
    }
}

fn decimal_digits(mut i: usize) -> usize {
    let mut n = 1;
    while i >= 10 {
        i /= 10;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, Regex, Timestamp};

    #[test]
    fn counted_sizes_equal_encoded_sizes_for_every_type() {
        let long: Vec<Bson> = (0..123).map(Bson::Int32).collect();
        let docs = [
            doc! {},
            doc! { "_id": 7_i64 },
            doc! { "city": "Guangzhou", "pop": 18827000_i32, "loc": { "x": 1.5, "y": 2.5 } },
            doc! { "$inc": { "views": 1 }, "$set": { "s": "ünïcödé", "n": Bson::Null } },
            doc! { "_id": { "$gte": 5_i64 }, "a": [1, "two", [3.0, { "four": 4 }]], "long": long },
            doc! {
                "oid": ObjectId::new(),
                "t": true,
                "d": mongodb::bson::DateTime::from_millis(1),
                "ts": Timestamp { time: 1, increment: 2 },
                "re": Regex { pattern: "^a.*".into(), options: "i".into() },
                "bin": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
                "old": Binary { subtype: BinarySubtype::BinaryOld, bytes: vec![1, 2, 3] },
                "dec": Bson::Decimal128(mongodb::bson::Decimal128::from_bytes([0; 16])),
                "js": Bson::JavaScriptCode("f()".into()),
                "jss": Bson::JavaScriptCodeWithScope(mongodb::bson::JavaScriptCodeWithScope {
                    code: "g()".into(),
                    scope: doc! { "x": 1 },
                }),
                "sym": Bson::Symbol("s".into()),
                "u": Bson::Undefined,
                "max": Bson::MaxKey,
                "min": Bson::MinKey,
            },
        ];
        for d in &docs {
            let encoded = mongodb::bson::to_vec(d).unwrap().len();
            assert_eq!(document(d), encoded, "{d}");
        }
    }
}
