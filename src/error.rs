//! The error type that reaches `main`, and the exit code each kind maps to (the product
//! contract's list, README's "Exit codes": 0 done, 1 done with errors or a part of the tool
//! failed, 2 usage or profile error, 3 server unreachable, 4 a threshold or comparison gate
//! failed, 5 the audit found acknowledged data lost, 130 interrupted).

use std::path::PathBuf;

/// Exit codes of the `mongo-stress` binary.
pub mod exit {
    pub(crate) const OK: i32 = 0;
    pub const ERRORS: i32 = 1;
    pub(crate) const USAGE: i32 = 2;
    pub(crate) const SERVER: i32 = 3;
    pub(crate) const THRESHOLD: i32 = 4;
    /// The audit found acknowledged data lost (before 1 and 4).
    pub(crate) const DATA_LOST: i32 = 5;
    pub(crate) const INTERRUPTED: i32 = 130;
}

/// A profile problem, located in its file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{column}: {}{problem}\n  expected: {expected}", self.place())]
pub struct ProfileError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// Dotted key path, e.g. `group[1].threads`; empty for the whole file.
    pub(crate) key: String,
    /// The offending text as written in the file, if any.
    pub(crate) value: Option<String>,
    pub problem: String,
    pub expected: String,
}

impl ProfileError {
    /// `key = value: `, `key: `, or nothing when the problem is not at a key.
    fn place(&self) -> String {
        match (&self.value, self.key.is_empty()) {
            (Some(v), false) => format!("{} = {v}: ", self.key),
            (None, false) => format!("{}: ", self.key),
            (Some(v), true) => format!("{v}: "),
            (None, true) => String::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Profile(#[from] Box<ProfileError>),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Server(String),
    #[error("cannot write {}: {source}\n  fix: choose a writable path (--out, --jtl, --tsv, --json), or free disk space", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<ProfileError> for Error {
    fn from(e: ProfileError) -> Self {
        Error::Profile(Box::new(e))
    }
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Profile(_) | Error::Usage(_) => exit::USAGE,
            Error::Server(_) => exit::SERVER,
            Error::Output { .. } | Error::Other(_) => exit::ERRORS,
        }
    }
}
