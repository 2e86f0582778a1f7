//! The classes of a failed operation: the summary counts failures per class.

/// Broad class of a failed operation; the summary counts failures per class.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(into = "&'static str", try_from = "String")]
pub enum ErrorClass {
    Timeout,
    Network,
    ServerSelection,
    /// The server is not (or no longer) the primary: a step-down, a failover.
    NotPrimary,
    DuplicateKey,
    WriteConflict,
    /// The write was done, but its write concern was not met (a w:majority timeout).
    WriteConcern,
    /// The server refused the request as written (an application error: BadValue,
    /// TypeMismatch, DocumentValidationFailure, ...): it answered, so it was up.
    Rejected,
    /// The server could not serve (shutting down, interrupted, out of time, overloaded).
    ServerError,
    Other,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 10] = [
        ErrorClass::Timeout,
        ErrorClass::Network,
        ErrorClass::ServerSelection,
        ErrorClass::NotPrimary,
        ErrorClass::DuplicateKey,
        ErrorClass::WriteConflict,
        ErrorClass::WriteConcern,
        ErrorClass::Rejected,
        ErrorClass::ServerError,
        ErrorClass::Other,
    ];

    /// Its bit in a set of classes.
    pub(crate) fn bit(self) -> u16 {
        1 << (self as u16)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Network => "network",
            ErrorClass::ServerSelection => "server_selection",
            ErrorClass::NotPrimary => "not_primary",
            ErrorClass::DuplicateKey => "duplicate_key",
            ErrorClass::WriteConflict => "write_conflict",
            ErrorClass::WriteConcern => "write_concern",
            ErrorClass::Rejected => "rejected",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Other => "other",
        }
    }
}

impl ErrorClass {
    /// A failure of this class says the deployment could not serve: it counts toward an
    /// unavailability window. A duplicate key, a write conflict or a refusal is an answer (the
    /// server was up and said no), and an error of the tool's own side (`Other`) says nothing
    /// of the server either way: neither counts.
    pub(crate) fn unavailable(self) -> bool {
        match self {
            ErrorClass::Timeout
            | ErrorClass::Network
            | ErrorClass::ServerSelection
            | ErrorClass::NotPrimary
            | ErrorClass::WriteConcern
            | ErrorClass::ServerError => true,
            ErrorClass::DuplicateKey
            | ErrorClass::WriteConflict
            | ErrorClass::Rejected
            | ErrorClass::Other => false,
        }
    }

    /// A failure of this class is the server's answer (it was reached and replied).
    pub(crate) fn answered(self) -> bool {
        matches!(
            self,
            ErrorClass::DuplicateKey | ErrorClass::WriteConflict | ErrorClass::Rejected
        )
    }
}

impl From<ErrorClass> for &'static str {
    fn from(c: ErrorClass) -> Self {
        c.as_str()
    }
}

impl TryFrom<String> for ErrorClass {
    type Error = String;

    /// Its word, as `as_str` writes it.
    fn try_from(s: String) -> Result<Self, String> {
        ErrorClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not a class of failure"))
    }
}
