//! What the driver's errors say, in the user's terms: for a failure the server returned, its
//! code, MongoDB's name for the code and the server's own message (`code 2 (BadValue): ...`);
//! for any other, the driver's sentence for its kind. Never the driver's `Debug`, which is what
//! its `Display` of a write error prints (`Kind: ... WriteError(WriteError { code: 2, ...`).
//!
//! Owns: that wording, and reading the server's code out of an error. Never: classifies a
//! failure for the summary (`ops::classify`) or decides what a code means (`vocab::ServerCode`).

use mongodb::error::{ErrorKind, WriteFailure};

use crate::vocab::ServerCode;

/// The server's code of a failure it returned (a batch's first write error's).
pub(crate) fn server_code(e: &mongodb::error::Error) -> Option<ServerCode> {
    server_error(e).map(|s| ServerCode(s.code))
}

/// What the server said: its code, the name it gave, its message, and how many more write
/// errors a batch had.
pub(crate) struct ServerSaid<'a> {
    pub(crate) code: i32,
    pub(crate) name: Option<&'a str>,
    pub(crate) message: &'a str,
    pub(crate) more: usize,
    pub(crate) write_concern: bool,
}

impl<'a> ServerSaid<'a> {
    /// A write or command error.
    fn error(code: i32, name: Option<&'a str>, message: &'a str, more: usize) -> Self {
        ServerSaid {
            code,
            name,
            message,
            more,
            write_concern: false,
        }
    }

    /// A write concern not met.
    fn concern(w: &'a mongodb::error::WriteConcernError) -> Self {
        ServerSaid {
            write_concern: true,
            ..Self::error(w.code, Some(w.code_name.as_str()), &w.message, 0)
        }
    }
}

/// What the server returned, when it did (a batch: its first write error, by index).
pub(crate) fn server_error(e: &mongodb::error::Error) -> Option<ServerSaid<'_>> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(ServerSaid::error(
            c.code,
            Some(c.code_name.as_str()),
            &c.message,
            0,
        )),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(ServerSaid::error(
            w.code,
            w.code_name.as_deref(),
            &w.message,
            0,
        )),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(ServerSaid::concern(w)),
        ErrorKind::InsertMany(m) => {
            let errors = m.write_errors.as_deref().unwrap_or_default();
            match errors.iter().min_by_key(|w| w.index) {
                Some(first) => Some(ServerSaid::error(
                    first.code,
                    first.code_name.as_deref(),
                    &first.message,
                    errors.len() - 1,
                )),
                None => m.write_concern_error.as_ref().map(ServerSaid::concern),
            }
        }
        ErrorKind::BulkWrite(b) => match b.write_errors.iter().min_by_key(|(i, _)| **i) {
            Some((_, first)) => Some(ServerSaid::error(
                first.code,
                first.code_name.as_deref(),
                &first.message,
                b.write_errors.len() - 1,
            )),
            None => b.write_concern_errors.first().map(ServerSaid::concern),
        },
        _ => None,
    }
}

/// What the tool itself finds wrong in the server's replies, carried as the driver's custom
/// error; its text is the message: a comparison of two replies that failed, or a reply without
/// a first batch (an `assert` step: genny's `FailedAssertionException`); a sample smaller than
/// asked for (`insertSample`: genny's `InvalidConfigurationException`).
#[derive(Debug)]
pub(crate) struct ReplyRefused(pub(crate) String);

/// A driver error in the user's terms: `code 2 (BadValue): <the server's message>` for what
/// the server returned, else the driver's own sentence for its kind (never its Debug).
pub(crate) fn describe(e: &mongodb::error::Error) -> String {
    match server_error(e) {
        Some(s) => {
            let name = s
                .name
                .filter(|n| !n.is_empty())
                .or_else(|| ServerCode(s.code).name());
            let mut out = match name {
                Some(n) => format!("code {} ({n})", s.code),
                None => format!("code {}", s.code),
            };
            if s.write_concern {
                out.push_str(", write concern not met");
            }
            if !s.message.is_empty() {
                out.push_str(": ");
                out.push_str(s.message);
            }
            if s.more > 0 {
                out.push_str(&format!(" (and {} more write errors in the batch)", s.more));
            }
            out
        }
        // These two print their parts with Debug; without a write error there is no more to say.
        None if matches!(
            e.kind.as_ref(),
            ErrorKind::InsertMany(_) | ErrorKind::BulkWrite(_)
        ) =>
        {
            "the batch failed without a write error from the server".into()
        }
        None => match e.get_custom::<ReplyRefused>() {
            Some(a) => a.0.clone(),
            None => e.kind.to_string(),
        },
    }
}

/// `describe`, without passwords: what a user may be shown of a driver error.
pub(crate) fn said(e: &mongodb::error::Error) -> String {
    crate::redact::redact(&describe(e))
}
