//! Driver errors as the summary counts them: a class and a one-line message without passwords.

use mongodb::error::{ErrorKind, WriteFailure};

use crate::metrics::{ErrorClass, OpError};

/// The server's codes for "not the primary (any more)": NotWritablePrimary, NotPrimaryNoSecondaryOk,
/// NotPrimaryOrSecondary, PrimarySteppedDown, InterruptedDueToReplStateChange.
const NOT_PRIMARY: [i32; 5] = [10107, 13435, 13436, 189, 11602];

/// Maps a driver error to a class, keeping the error for its message (made into text by the
/// recorder, not by the virtual user).
pub fn classify(e: mongodb::error::Error) -> OpError {
    let class = {
        match e.kind.as_ref() {
            ErrorKind::Io(io)
                if matches!(
                    io.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                ) =>
            {
                ErrorClass::Timeout
            }
            ErrorKind::Io(_) | ErrorKind::ConnectionPoolCleared { .. } => ErrorClass::Network,
            ErrorKind::ServerSelection { .. } => ErrorClass::ServerSelection,
            ErrorKind::Write(WriteFailure::WriteError(w)) if w.code == 11000 => {
                ErrorClass::DuplicateKey
            }
            ErrorKind::Write(WriteFailure::WriteConcernError(_)) => ErrorClass::WriteConcern,
            ErrorKind::Command(c) if c.code == 112 => ErrorClass::WriteConflict,
            ErrorKind::Command(c) if NOT_PRIMARY.contains(&c.code) => ErrorClass::NotPrimary,
            ErrorKind::Write(WriteFailure::WriteError(w)) if NOT_PRIMARY.contains(&w.code) => {
                ErrorClass::NotPrimary
            }
            ErrorKind::Command(c) if c.code == 50 => ErrorClass::Timeout,
            ErrorKind::Write(_)
            | ErrorKind::Command(_)
            | ErrorKind::InsertMany(_)
            | ErrorKind::BulkWrite(_) => ErrorClass::ServerError,
            _ => ErrorClass::Other,
        }
    };
    OpError {
        class,
        message: crate::metrics::sample::ErrorText::Caught(std::sync::Arc::new(e)),
    }
}
