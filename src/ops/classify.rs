//! Driver errors as the summary counts them: a class, the server's code, and a message in the
//! user's terms (the server's code, its name and its own message; never the driver's Debug).

use mongodb::error::ErrorKind;

use crate::metrics::{ErrorClass, OpError};
use crate::vocab::ServerCode;

/// The error labels that say "try again": the deployment could not serve just then.
const UNAVAILABLE_LABELS: [&str; 4] = [
    "RetryableWriteError",
    "TransientTransactionError",
    "RetryableError",
    "SystemOverloadedError",
];

/// Maps a driver error to a class, keeping the error for its message (made into text by the
/// recorder, not by the virtual user).
pub(crate) fn classify(e: mongodb::error::Error) -> OpError {
    let said = crate::driver_error::server_error(&e);
    let code = said.as_ref().map(|s| ServerCode(s.code));
    let class = match e.kind.as_ref() {
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
        _ => match said {
            None => ErrorClass::Other,
            Some(s) if s.write_concern => ErrorClass::WriteConcern,
            Some(s) => match s.code {
                11000 => ErrorClass::DuplicateKey,
                112 => ErrorClass::WriteConflict,
                50 => ErrorClass::Timeout,
                c if ServerCode(c).not_primary() => ErrorClass::NotPrimary,
                c if ServerCode(c).unavailable() => ErrorClass::ServerError,
                // Whatever its code, a failure the server or the driver says to try again (a
                // transaction's NoSuchTransaction after a failover) is the deployment not
                // serving, not the request refused.
                _ if UNAVAILABLE_LABELS.iter().any(|l| e.contains_label(l)) => {
                    ErrorClass::ServerError
                }
                _ => ErrorClass::Rejected,
            },
        },
    };
    OpError {
        class,
        code,
        message: crate::metrics::sample::ErrorText::Caught(std::sync::Arc::new(Described(e))),
    }
}

/// A driver error, shown as `driver_error::describe` words it (made into text by the recorder).
struct Described(mongodb::error::Error);

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::driver_error::describe(&self.0))
    }
}
