//! Driver errors as the summary counts them: a class and a one-line message without passwords.

use mongodb::error::{ErrorKind, WriteFailure};

use crate::metrics::{ErrorClass, OpError};

/// The server's codes for "not the primary (any more)": NotWritablePrimary, NotPrimaryNoSecondaryOk,
/// NotPrimaryOrSecondary, PrimarySteppedDown, InterruptedDueToReplStateChange.
const NOT_PRIMARY: [i32; 5] = [10107, 13435, 13436, 189, 11602];

/// Maps a driver error to a class and a one-line message.
pub fn classify(e: &mongodb::error::Error) -> OpError {
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
    let mut message = crate::redact::redact(&e.to_string()).replace(['\n', '\t'], " ");
    if message.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|i| message.is_char_boundary(*i))
            .unwrap_or(0);
        message.truncate(cut);
        message.push_str("...");
    }
    OpError { class, message }
}
