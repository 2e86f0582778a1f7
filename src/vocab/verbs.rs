//! The one list of the verbs a profile's operation tables name, as mongosh and the drivers
//! spell them: `workload::command::Verb` and the profile's tables (`plan::profile::model`) are
//! both generated from it, so a verb is named once.

/// Calls `$then!` with every verb in the order profiles list them, in brackets, each as
/// `(Variant, table_field, "driverName")`, followed by the tokens after `;`.
macro_rules! verbs {
    ($then:ident; $($rest:tt)*) => {
        $then! {
            [
                (InsertOne, insert_one, "insertOne"),
                (InsertMany, insert_many, "insertMany"),
                (Find, find, "find"),
                (FindOne, find_one, "findOne"),
                (Aggregate, aggregate, "aggregate"),
                (CountDocuments, count_documents, "countDocuments"),
                (EstimatedDocumentCount, estimated_document_count, "estimatedDocumentCount"),
                (Distinct, distinct, "distinct"),
                (UpdateOne, update_one, "updateOne"),
                (UpdateMany, update_many, "updateMany"),
                (ReplaceOne, replace_one, "replaceOne"),
                (DeleteOne, delete_one, "deleteOne"),
                (DeleteMany, delete_many, "deleteMany"),
                (FindOneAndUpdate, find_one_and_update, "findOneAndUpdate"),
                (FindOneAndReplace, find_one_and_replace, "findOneAndReplace"),
                (FindOneAndDelete, find_one_and_delete, "findOneAndDelete"),
                (BulkWrite, bulk_write, "bulkWrite"),
                (Command, command, "command"),
                (Assert, assert, "assert"),
                (Scan, scan, "scan"),
                (InsertSample, insert_sample, "insertSample"),
                (ClusterTime, cluster_time, "clusterTime"),
                (Nop, nop, "nop"),
            ]
            $($rest)*
        }
    };
}
pub(crate) use verbs;
