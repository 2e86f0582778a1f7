//! Which of the run's writes a stream admits: its scope, and its pipeline's `$match` stages
//! read on what the run knows of its own writes (`operationType`, `ns`, `documentKey`). A
//! `$match` on anything else (`fullDocument.sku`) cannot be read without the documents: the
//! delivery is then not judged, and says why.

use mongodb::bson::{Bson, Document};

use super::{DocId, Op};
use crate::plan::WatchScope;

/// What a stream lets through of the run's writes.
#[derive(Debug, Clone)]
pub(crate) struct Admits {
    scope: Option<WatchScope>,
    matches: Vec<Document>,
    /// Why the filter cannot be read, when it cannot (the delivery is not judged).
    pub(crate) unknown: Option<String>,
}

impl Admits {
    /// Everything.
    #[cfg(test)]
    pub(crate) fn all() -> Admits {
        Admits {
            scope: None,
            matches: Vec::new(),
            unknown: None,
        }
    }

    pub(crate) fn of(scope: &WatchScope, pipeline: &[Document]) -> Admits {
        let matches: Vec<Document> = pipeline
            .iter()
            .filter_map(|s| s.get_document("$match").ok().cloned())
            .collect();
        let probe = synthetic(Op::Insert, "d", "c", &DocId::Int(0));
        // A stage that reshapes the events may take away what matches them to the writes.
        let reshaped = pipeline
            .iter()
            .filter_map(|s| s.keys().next())
            .find(|k| k.as_str() != "$match")
            .map(|k| format!("the pipeline's `{k}` stage may change what the events carry (their `_id`, `operationType`, `ns`, `documentKey`), which matches them to the writes"));
        let unknown = reshaped.or_else(|| {
            matches
                .iter()
                .find_map(|m| eval(m, &probe).err())
                .map(|why| format!("the pipeline's $match reads {why}, which the tool does not know of its own writes without their documents"))
        });
        Admits {
            scope: Some(scope.clone()),
            matches,
            unknown,
        }
    }

    pub(crate) fn admits(&self, op: Op, database: &str, collection: &str, id: &DocId) -> bool {
        if self
            .scope
            .as_ref()
            .is_some_and(|s| !s.admits(database, collection))
        {
            return false;
        }
        let event = synthetic(op, database, collection, id);
        self.matches.iter().all(|m| eval(m, &event).unwrap_or(true))
    }
}

/// What the run knows of the event its write makes.
fn synthetic(op: Op, database: &str, collection: &str, id: &DocId) -> Document {
    let id = match id {
        DocId::Int(i) => Bson::Int64(*i),
        DocId::Other(json) => serde_json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| Bson::try_from(v).ok())
            .unwrap_or(Bson::Null),
    };
    mongodb::bson::doc! {
        "operationType": op.name(),
        "ns": { "db": database, "coll": collection },
        "documentKey": { "_id": id },
    }
}

/// Does `filter` match `event`; Err naming the first field or operator it cannot read.
fn eval(filter: &Document, event: &Document) -> Result<bool, String> {
    let mut all = true;
    for (k, cond) in filter {
        let ok = match k.as_str() {
            "$and" | "$or" | "$nor" => {
                let Bson::Array(parts) = cond else {
                    return Err(format!("`{k}` without an array"));
                };
                let mut results = Vec::new();
                for p in parts {
                    let Bson::Document(d) = p else {
                        return Err(format!("`{k}` of something not a document"));
                    };
                    results.push(eval(d, event)?);
                }
                match k.as_str() {
                    "$and" => results.iter().all(|r| *r),
                    "$or" => results.iter().any(|r| *r),
                    _ => !results.iter().any(|r| *r),
                }
            }
            op if op.starts_with('$') => return Err(format!("`{op}`")),
            path => {
                let known = [
                    "operationType",
                    "ns",
                    "ns.db",
                    "ns.coll",
                    "documentKey",
                    "documentKey._id",
                ];
                if !known.contains(&path) {
                    return Err(format!("`{path}`"));
                }
                let value = lookup(event, path);
                field(value.as_ref(), cond)?
            }
        };
        all &= ok;
    }
    Ok(all)
}

fn lookup(d: &Document, path: &str) -> Option<Bson> {
    let mut parts = path.split('.');
    let mut at = d.get(parts.next()?)?.clone();
    for p in parts {
        at = match at {
            Bson::Document(d) => d.get(p)?.clone(),
            _ => return None,
        };
    }
    Some(at)
}

fn field(value: Option<&Bson>, cond: &Bson) -> Result<bool, String> {
    let ops = match cond {
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => d,
        other => return Ok(value.is_some_and(|v| same(v, other))),
    };
    let mut all = true;
    for (op, arg) in ops {
        let list = || match arg {
            Bson::Array(a) => Ok(a.clone()),
            _ => Err(format!("`{op}` without an array")),
        };
        all &= match op.as_str() {
            "$eq" => value.is_some_and(|v| same(v, arg)),
            "$ne" => !value.is_some_and(|v| same(v, arg)),
            "$in" => value.is_some_and(|v| list().is_ok_and(|l| l.iter().any(|a| same(v, a)))),
            "$nin" => {
                let l = list()?;
                !value.is_some_and(|v| l.iter().any(|a| same(v, a)))
            }
            "$exists" => {
                let wanted = match arg {
                    Bson::Boolean(b) => *b,
                    Bson::Int32(i) => *i != 0,
                    Bson::Int64(i) => *i != 0,
                    Bson::Double(d) => *d != 0.0,
                    _ => true,
                };
                value.is_some() == wanted
            }
            other => return Err(format!("`{other}`")),
        };
    }
    Ok(all)
}

/// Equal as the server compares: numbers by value.
fn same(a: &Bson, b: &Bson) -> bool {
    let num = |x: &Bson| match x {
        Bson::Int32(i) => Some(f64::from(*i)),
        // Whole numbers an `_id` holds; exact below 2^53.
        #[allow(clippy::cast_precision_loss)]
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    fn scope() -> WatchScope {
        WatchScope::Collection {
            database: "shop".into(),
            name: "orders".into(),
        }
    }

    #[test]
    fn a_match_on_the_operation_and_namespace_is_read_and_the_scope_holds() {
        let a = Admits::of(
            &scope(),
            &[doc! { "$match": { "operationType": { "$in": ["insert", "replace"] } } }],
        );
        assert_eq!(a.unknown, None);
        assert!(a.admits(Op::Insert, "shop", "orders", &DocId::Int(1)));
        assert!(!a.admits(Op::Delete, "shop", "orders", &DocId::Int(1)));
        assert!(!a.admits(Op::Insert, "shop", "other", &DocId::Int(1)));
        let b = Admits::of(
            &WatchScope::Database("shop".into()),
            &[
                doc! { "$match": { "$or": [ { "ns.coll": "a" }, { "documentKey._id": { "$ne": 3 } } ] } },
            ],
        );
        assert!(b.admits(Op::Update, "shop", "a", &DocId::Int(3)));
        assert!(!b.admits(Op::Update, "shop", "b", &DocId::Int(3)));
        assert!(b.admits(Op::Update, "shop", "b", &DocId::Int(4)));
    }

    #[test]
    fn a_match_on_the_documents_fields_is_named_as_not_judged() {
        let a = Admits::of(
            &scope(),
            &[doc! { "$match": { "fullDocument.sku": { "$lt": 5 } } }],
        );
        assert!(a.unknown.unwrap().contains("`fullDocument.sku`"));
        let b = Admits::of(
            &scope(),
            &[doc! { "$match": { "operationType": { "$regex": "^ins" } } }],
        );
        assert!(b.unknown.unwrap().contains("`$regex`"));
        // A stage that reshapes the events: not judged either.
        let c = Admits::of(&scope(), &[doc! { "$project": { "fullDocument": 1 } }]);
        assert!(c.unknown.unwrap().contains("`$project`"));
        // `$exists: 1` is true, as the server reads it.
        let d = Admits::of(
            &scope(),
            &[doc! { "$match": { "documentKey._id": { "$exists": 1 } } }],
        );
        assert!(d.admits(Op::Insert, "shop", "orders", &DocId::Int(1)));
    }
}
