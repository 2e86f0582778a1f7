//! The invariants of `[[collection]] invariant = { sum, min }`, read from the server: the sum of
//! a field over the collection, its lowest value and how many documents fall below the bound,
//! before the load and after it (the bank-transfer check: money is neither made nor lost, and
//! no balance goes negative).
//!
//! Owns: reading the invariants. Never: judges them (that is `summary::InvariantResult`).

use mongodb::bson::{doc, Bson, Document};

use crate::plan::RunPlan;

/// One collection's reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub(crate) collection: String,
    pub(crate) field: String,
    pub(crate) sum: f64,
    pub(crate) lowest: Option<f64>,
    /// Documents whose field is below `min`.
    pub(crate) below: u64,
    pub(crate) documents: u64,
    pub(crate) min: Option<f64>,
}

/// The first document of an aggregation's cursor.
async fn next(cursor: &mut mongodb::Cursor<Document>) -> mongodb::error::Result<Option<Document>> {
    if cursor.advance().await? {
        Ok(Some(Document::try_from(cursor.current())?))
    } else {
        Ok(None)
    }
}

/// A count the server summed (`$sum: 1`): a whole number from 0, else 0.
fn count(n: Option<f64>) -> u64 {
    match n {
        // Whole, not negative, below 2^64: the cast is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(n) if n.fract() == 0.0 && (0.0..1.8e19).contains(&n) => n as u64,
        _ => 0,
    }
}

fn number(b: Option<&Bson>) -> Option<f64> {
    match b? {
        Bson::Int32(n) => Some(f64::from(*n)),
        // A sum beyond 2^53 is rounded to the nearest double, as the server's own $sum of
        // doubles would be.
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

/// Each collection's invariant, read now; a collection that cannot be read is left out with
/// the reason in the error list.
pub(crate) async fn read(plan: &RunPlan, client: &mongodb::Client) -> (Vec<Reading>, Vec<String>) {
    let db = client.database(&plan.target.database);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for c in &plan.collections {
        let Some(inv) = &c.invariant else { continue };
        let field = format!("${}", inv.field);
        let min = inv.min.unwrap_or(f64::NEG_INFINITY);
        let below = if min.is_finite() {
            doc! { "$sum": { "$cond": [{ "$lt": [&field, min] }, 1, 0] } }
        } else {
            doc! { "$sum": 0 }
        };
        let pipeline = vec![doc! { "$group": {
            "_id": Bson::Null,
            "sum": { "$sum": &field },
            "lowest": { "$min": &field },
            "below": below,
            "documents": { "$sum": 1 },
        } }];
        let coll = db.collection::<Document>(&c.name);
        let first = async {
            let mut cursor = coll.aggregate(pipeline).await?;
            next(&mut cursor).await
        }
        .await;
        match first {
            Ok(d) => {
                let d = d.unwrap_or_default();
                out.push(Reading {
                    collection: c.name.clone(),
                    field: inv.field.clone(),
                    sum: number(d.get("sum")).unwrap_or(0.0),
                    lowest: number(d.get("lowest")),
                    below: count(number(d.get("below"))),
                    documents: count(number(d.get("documents"))),
                    min: inv.min,
                })
            }
            Err(e) => errors.push(format!(
                "cannot check the invariant of {}: {}",
                c.name,
                crate::driver_error::said(&e)
            )),
        }
    }
    (out, errors)
}
