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
pub fn server_code(e: &mongodb::error::Error) -> Option<ServerCode> {
    server_error(e).map(|s| ServerCode(s.code))
}

/// What the server said: its code, the name it gave, its message, and how many more write
/// errors a batch had.
pub struct ServerSaid<'a> {
    pub code: i32,
    pub name: Option<&'a str>,
    pub message: &'a str,
    pub more: usize,
    pub write_concern: bool,
}

pub fn server_error(e: &mongodb::error::Error) -> Option<ServerSaid<'_>> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(ServerSaid {
            code: c.code,
            name: Some(c.code_name.as_str()),
            message: &c.message,
            more: 0,
            write_concern: false,
        }),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(ServerSaid {
            code: w.code,
            name: w.code_name.as_deref(),
            message: &w.message,
            more: 0,
            write_concern: false,
        }),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(ServerSaid {
            code: w.code,
            name: Some(w.code_name.as_str()),
            message: &w.message,
            more: 0,
            write_concern: true,
        }),
        ErrorKind::InsertMany(m) => match (&m.write_errors, &m.write_concern_error) {
            (Some(errors), _) if !errors.is_empty() => {
                let first = errors.iter().min_by_key(|w| w.index)?;
                Some(ServerSaid {
                    code: first.code,
                    name: first.code_name.as_deref(),
                    message: &first.message,
                    more: errors.len() - 1,
                    write_concern: false,
                })
            }
            (_, Some(w)) => Some(ServerSaid {
                code: w.code,
                name: Some(w.code_name.as_str()),
                message: &w.message,
                more: 0,
                write_concern: true,
            }),
            _ => None,
        },
        ErrorKind::BulkWrite(b) => match b.write_errors.iter().min_by_key(|(i, _)| **i) {
            Some((_, first)) => Some(ServerSaid {
                code: first.code,
                name: first.code_name.as_deref(),
                message: &first.message,
                more: b.write_errors.len() - 1,
                write_concern: false,
            }),
            None => b.write_concern_errors.first().map(|w| ServerSaid {
                code: w.code,
                name: Some(w.code_name.as_str()),
                message: &w.message,
                more: 0,
                write_concern: true,
            }),
        },
        _ => None,
    }
}

/// A driver error in the user's terms: `code 2 (BadValue): <the server's message>` for what
/// the server returned, else the driver's own sentence for its kind (never its Debug).
pub fn describe(e: &mongodb::error::Error) -> String {
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
        None => e.kind.to_string(),
    }
}

/// `describe`, without passwords: what a user may be shown of a driver error.
pub fn said(e: &mongodb::error::Error) -> String {
    crate::redact::redact(&describe(e))
}
