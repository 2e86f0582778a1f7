use super::*;
use mongodb::bson::doc;

fn observed(command: Document) -> Observed {
    Observed {
        op_type: "command".into(),
        command,
        ..Default::default()
    }
}

fn ops(c: Class) -> Vec<Op> {
    match c {
        Class::Ops(v) => v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn literals_become_slots_and_operators_fields_and_sort_stay() {
    let o = observed(doc! {
        "find": "orders",
        "filter": { "status": "open", "created": { "$gte": mongodb::bson::DateTime::from_millis(5) }, "customer": { "$in": [1, 2, 3] } },
        "sort": { "created": -1 },
        "limit": 20,
        "lsid": { "id": 1 },
        "$db": "shop",
    });
    let op = ops(classify(&o, true)).remove(0);
    assert_eq!(op.verb, Verb::Find);
    assert_eq!(
        op.key(),
        r#"find {"filter":{"status":"?string","created":{"$gte":"?date"},"customer":{"$in":"?[number]"}},"sort":{"created":-1},"limit":"?number"}"#
    );
    let fields: Vec<_> = op.slots.iter().map(|s| s.field.clone()).collect();
    assert_eq!(
        fields,
        [
            Some("status".into()),
            Some("created".into()),
            Some("customer".into()),
            None
        ]
    );
    assert_eq!(op.slots[2].kind, SlotKind::List);
    assert_eq!(op.slots[3].kind, SlotKind::Param);
}

#[test]
fn null_stays_and_a_replacement_leaves_its_id_out() {
    let o = observed(doc! { "find": "c", "filter": { "deletedAt": null, "a": 1 } });
    assert_eq!(
        ops(classify(&o, true))[0].key(),
        r#"find {"filter":{"deletedAt":null,"a":"?number"}}"#
    );
    let r = Observed {
        op_type: "update".into(),
        command: doc! { "q": { "_id": 5 }, "u": { "_id": 5, "name": "x" } },
        ..Default::default()
    };
    let op = ops(classify(&r, true)).remove(0);
    assert_eq!(op.verb, Verb::ReplaceOne);
    assert_eq!(
        op.key(),
        r#"replaceOne {"filter":{"_id":"?number"},"replacement":{"name":"?string"}}"#
    );
}

#[test]
fn in_lists_of_any_length_are_one_shape() {
    let a = observed(doc! { "find": "c", "filter": { "a": { "$in": [1] } } });
    let b = observed(doc! { "find": "c", "filter": { "a": { "$in": [1, 2, 3, 4] } } });
    assert_eq!(
        ops(classify(&a, true))[0].key(),
        ops(classify(&b, true))[0].key()
    );
}

#[test]
fn an_update_statement_keeps_its_operators_and_makes_its_amounts_parameters() {
    let o = Observed {
        op_type: "update".into(),
        command: doc! { "q": { "_id": 4 }, "u": { "$inc": { "total": 2 }, "$set": { "seen": "x" } }, "multi": false, "upsert": false },
        ..Default::default()
    };
    let op = ops(classify(&o, true)).remove(0);
    assert_eq!(op.verb, Verb::UpdateOne);
    assert_eq!(
        op.key(),
        r#"updateOne {"filter":{"_id":"?number"},"update":{"$inc":{"total":"?number"},"$set":{"seen":"?string"}}}"#
    );
    assert_eq!(op.slots[1].kind, SlotKind::Param);
    assert_eq!(op.slots[2].field.as_deref(), Some("seen"));
}

#[test]
fn command_lines_of_logged_statements_are_counted_once() {
    let c = observed(doc! { "update": "c", "ordered": true, "$db": "d" });
    assert!(matches!(classify(&c, true), Class::DoubleLogged));
    // A profiler that keeps the statements in the command: each is an operation.
    let c = observed(
        doc! { "update": "c", "updates": [ { "q": { "a": 1 }, "u": { "$set": { "b": 2 } } }, { "q": { "a": 2 }, "u": { "$set": { "b": 3 } }, "multi": true } ] },
    );
    let v = ops(classify(&c, false));
    assert_eq!(
        v.iter().map(|o| o.verb).collect::<Vec<_>>(),
        [Verb::UpdateOne, Verb::UpdateMany]
    );
}

#[test]
fn pipelines_keep_their_expressions_and_slot_their_match() {
    let o = observed(doc! { "aggregate": "orders", "pipeline": [
        { "$match": { "customer": { "$in": [1, 2] } } },
        { "$group": { "_id": "$customer", "n": { "$sum": 1 } } },
        { "$limit": 5 },
    ], "cursor": {} });
    let op = ops(classify(&o, true)).remove(0);
    assert_eq!(
        op.key(),
        r#"aggregate {"pipeline":[{"$match":{"customer":{"$in":"?[number]"}}},{"$group":{"_id":"$customer","n":{"$sum":1}}},{"$limit":"?number"}]}"#
    );
}

#[test]
fn driver_commands_change_streams_and_ddl_are_left_out_by_name() {
    assert!(
        matches!(classify(&observed(doc! { "hello": 1 }), true), Class::Driver(n) if n == "hello")
    );
    assert!(matches!(
        classify(&observed(doc! { "aggregate": "c", "pipeline": [ { "$changeStream": {} } ] }), true),
        Class::Other(n) if n == "changeStream"
    ));
    assert!(
        matches!(classify(&observed(doc! { "createIndexes": "c" }), true), Class::Other(n) if n == "createIndexes")
    );
    assert!(matches!(
        classify(&observed(doc! { "commitTransaction": 1 }), true),
        Class::TransactionControl
    ));
    assert!(matches!(
        classify(
            &observed(doc! { "getMore": 5_i64, "collection": "c" }),
            true
        ),
        Class::GetMore
    ));
}

#[test]
fn find_one_count_and_find_and_modify_map_to_their_driver_calls() {
    let one =
        observed(doc! { "find": "c", "filter": { "_id": 3 }, "limit": 1, "singleBatch": true });
    assert_eq!(ops(classify(&one, true))[0].verb, Verb::FindOne);
    let count = observed(doc! { "count": "c", "query": { "s": { "$in": ["a"] } } });
    assert_eq!(ops(classify(&count, true))[0].verb, Verb::CountDocuments);
    let all = observed(doc! { "count": "c" });
    assert_eq!(
        ops(classify(&all, true))[0].verb,
        Verb::EstimatedDocumentCount
    );
    let fam = observed(
        doc! { "findAndModify": "c", "query": { "s": "open" }, "update": { "$set": { "s": "picked" } }, "new": true },
    );
    let op = ops(classify(&fam, true)).remove(0);
    assert_eq!(op.verb, Verb::FindOneAndUpdate);
    assert_eq!(op.args.get_str("returnDocument").unwrap(), "after");
}
