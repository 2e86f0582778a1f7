//! One measured operation, as a worker hands it to the collector.

/// Broad class of a failed operation; the summary counts failures per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Timeout,
    Network,
    ServerSelection,
    DuplicateKey,
    WriteConflict,
    ServerError,
    Other,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Network => "network",
            ErrorClass::ServerSelection => "server_selection",
            ErrorClass::DuplicateKey => "duplicate_key",
            ErrorClass::WriteConflict => "write_conflict",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Other => "other",
        }
    }
}

#[derive(Debug, Clone)]
pub struct OpError {
    pub class: ErrorClass,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Sample {
    /// `GroupPlan::index`.
    pub group: u16,
    /// Virtual user number within the group, from 1 as in JMeter's thread names.
    pub thread: u32,
    /// Start, microseconds since the Unix epoch.
    pub start_us: u64,
    pub elapsed_us: u64,
    /// BSON payload bytes sent (document, filter, update).
    pub sent: u32,
    /// BSON payload bytes received (documents returned).
    pub received: u32,
    /// The operation found or wrote at least one document (always true for a successful insert).
    pub matched: bool,
    /// An update modified, or a remove deleted, at least one document.
    pub modified: bool,
    pub error: Option<Box<OpError>>,
}

impl Sample {
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    pub fn end_us(&self) -> u64 {
        self.start_us + self.elapsed_us
    }
}
