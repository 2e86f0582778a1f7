//! The classes of a failed operation: the summary counts failures per class.

/// Broad class of a failed operation; the summary counts failures per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(into = "&'static str")]
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
    ServerError,
    Other,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 9] = [
        ErrorClass::Timeout,
        ErrorClass::Network,
        ErrorClass::ServerSelection,
        ErrorClass::NotPrimary,
        ErrorClass::DuplicateKey,
        ErrorClass::WriteConflict,
        ErrorClass::WriteConcern,
        ErrorClass::ServerError,
        ErrorClass::Other,
    ];

    /// Its bit in a set of classes.
    pub fn bit(self) -> u16 {
        1 << (self as u16)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Network => "network",
            ErrorClass::ServerSelection => "server_selection",
            ErrorClass::NotPrimary => "not_primary",
            ErrorClass::DuplicateKey => "duplicate_key",
            ErrorClass::WriteConflict => "write_conflict",
            ErrorClass::WriteConcern => "write_concern",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Other => "other",
        }
    }
}

impl From<ErrorClass> for &'static str {
    fn from(c: ErrorClass) -> Self {
        c.as_str()
    }
}
