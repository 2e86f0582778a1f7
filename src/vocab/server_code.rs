//! The server's error codes a load test meets: their names, and whether a code says the server
//! could not serve (down, stepping down, shutting down, interrupted, out of time, overloaded) or
//! refused the request as written (an application error: the server answered, and is up).
//!
//! Names and categories are MongoDB's own, from `src/mongo/base/error_codes.yml` (mongodb/mongo,
//! read 2026-12-02): the codes in its NetworkError, ShutdownError, NotPrimaryError, Interruption,
//! ExceededTimeLimitError, RetriableError, WriteConcernError, StaleShardVersionError and
//! SystemOverloadedError categories that a client can be sent are the unavailable ones (the
//! InternalOnly ones never reach a client), with the three named at `CODES`; every other code
//! the server returns is a refusal. A failure the server labels retryable or transient is
//! unavailability whatever its code (`ops::classify`).

/// Code, name, and whether it says the server could not serve: MongoDB's categories above, and
/// three it leaves uncategorised that mean the same to a load test: FailedToSatisfyReadPreference
/// (no member could serve the read preference: a mongos while a shard elects),
/// TemporarilyUnavailable (the storage engine's cache under pressure) and OutOfDiskSpace.
const CODES: &[(i32, &str, bool)] = &[
    (1, "InternalError", false),
    (2, "BadValue", false),
    (4, "NoSuchKey", false),
    (6, "HostUnreachable", true),
    (7, "HostNotFound", true),
    (9, "FailedToParse", false),
    (11, "UserNotFound", false),
    (13, "Unauthorized", false),
    (14, "TypeMismatch", false),
    (15, "Overflow", false),
    (16, "InvalidLength", false),
    (17, "ProtocolError", false),
    (18, "AuthenticationFailed", false),
    (20, "IllegalOperation", false),
    (22, "InvalidBSON", false),
    (24, "LockTimeout", true),
    (26, "NamespaceNotFound", false),
    (27, "IndexNotFound", false),
    (28, "PathNotViable", false),
    (30, "InvalidPath", false),
    (40, "ConflictingUpdateOperators", false),
    (43, "CursorNotFound", false),
    (46, "LockBusy", false),
    (48, "NamespaceExists", false),
    (50, "MaxTimeMSExpired", true),
    (52, "DollarPrefixedFieldName", false),
    (53, "InvalidIdField", false),
    (54, "NotSingleValueField", false),
    (56, "EmptyFieldName", false),
    (57, "DottedFieldName", false),
    (59, "CommandNotFound", false),
    (61, "ShardKeyNotFound", false),
    (64, "WriteConcernTimeout", true),
    (66, "ImmutableField", false),
    (67, "CannotCreateIndex", false),
    (68, "IndexAlreadyExists", false),
    (72, "InvalidOptions", false),
    (73, "InvalidNamespace", false),
    (75, "WriteConcernLegacyOK", true),
    (79, "UnknownReplWriteConcern", true),
    (85, "IndexOptionsConflict", false),
    (86, "IndexKeySpecsConflict", false),
    (89, "NetworkTimeout", true),
    (91, "ShutdownInProgress", true),
    (96, "OperationFailed", false),
    (100, "UnsatisfiableWriteConcern", true),
    (112, "WriteConflict", false),
    (115, "CommandNotSupported", false),
    (116, "DocTooLargeForCapped", false),
    (121, "DocumentValidationFailure", false),
    (125, "CommandFailed", false),
    (133, "FailedToSatisfyReadPreference", true),
    (134, "ReadConcernMajorityNotAvailableYet", true),
    (136, "CappedPositionLost", false),
    (146, "ExceededMemoryLimit", false),
    (150, "StaleEpoch", true),
    (166, "CommandNotSupportedOnView", false),
    (168, "InvalidPipelineOperator", false),
    (175, "QueryPlanKilled", false),
    (189, "PrimarySteppedDown", true),
    (202, "NetworkInterfaceExceededTimeLimit", true),
    (206, "NoSuchSession", false),
    (225, "TransactionTooOld", false),
    (237, "CursorKilled", true),
    (241, "ConversionFailure", false),
    (244, "NOT_YET_AVAILABLE_TransactionAborted", false),
    (251, "NoSuchTransaction", false),
    (256, "TransactionCommitted", false),
    (257, "TransactionTooLarge", false),
    (262, "ExceededTimeLimit", true),
    (263, "OperationNotSupportedInTransaction", false),
    (279, "ClientDisconnect", true),
    (281, "TransactionCoordinatorSteppingDown", true),
    (282, "TransactionCoordinatorReachedAbortDecision", true),
    (290, "TransactionExceededLifetimeLimitSeconds", true),
    (292, "QueryExceededMemoryLimitNoDiskUseAllowed", false),
    (355, "InterruptedDueToStorageChange", true),
    (358, "InternalTransactionNotSupported", true),
    (365, "TemporarilyUnavailable", true),
    (402, "ResourceExhausted", true),
    (406, "MigrationBlockingOperationCoordinatorCleaningUp", true),
    (407, "PooledConnectionAcquisitionExceededTimeLimit", true),
    (412, "UpdatesStillPending", true),
    (433, "AdmissionQueueOverflow", true),
    (449, "RateLimitExceeded", true),
    (450, "PooledConnectionAcquisitionRejected", true),
    (453, "InterruptedDueToReshardingCriticalSection", true),
    (462, "IngressRequestRateLimitExceeded", true),
    (9001, "SocketException", true),
    (10107, "NotWritablePrimary", true),
    (10334, "BSONObjectTooLarge", false),
    (11000, "DuplicateKey", false),
    (11600, "InterruptedAtShutdown", true),
    (11601, "Interrupted", true),
    (11602, "InterruptedDueToReplStateChange", true),
    (13297, "DatabaseDifferCase", false),
    (13388, "StaleConfig", true),
    (13435, "NotPrimaryNoSecondaryOk", true),
    (13436, "NotPrimaryOrSecondary", true),
    (14031, "OutOfDiskSpace", true),
    (46841, "ClientMarkedKilled", true),
    (50915, "BackupCursorOpenConflictWithCheckpoint", true),
    (91331, "RetriableRemoteCommandFailure", true),
    (10045600, "InterruptedDueToFCVChange", true),
];

/// A server error code, as the server returned it (`code`, and `codeName` when it sent one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerCode(pub i32);

impl ServerCode {
    /// MongoDB's name for the code, when it is one a load test meets.
    pub(crate) fn name(self) -> Option<&'static str> {
        CODES
            .iter()
            .find(|(c, ..)| *c == self.0)
            .map(|(_, n, _)| *n)
    }

    /// MongoDB's NotPrimaryError category: the server is not (or no longer) the primary.
    pub(crate) fn not_primary(self) -> bool {
        matches!(self.0, 10107 | 13435 | 13436 | 189 | 11602)
    }

    /// The server could not serve (MongoDB's availability categories); false for a refusal of
    /// the request as written, and for a code outside the table (the server answered it).
    pub(crate) fn unavailable(self) -> bool {
        CODES.iter().any(|(c, _, u)| *c == self.0 && *u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_once_and_sorted() {
        assert!(CODES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(ServerCode(2).name(), Some("BadValue"));
        assert_eq!(ServerCode(121).name(), Some("DocumentValidationFailure"));
        assert_eq!(ServerCode(123_456).name(), None);
    }

    #[test]
    fn application_errors_are_never_unavailability() {
        for code in [2, 11000, 121, 14, 52, 123_456] {
            assert!(!ServerCode(code).unavailable(), "{code}");
        }
        for code in [
            91, 11600, 10107, 189, 11602, 50, 9001, 133, 450, 14031, 10_045_600,
        ] {
            assert!(ServerCode(code).unavailable(), "{code}");
        }
    }
}
