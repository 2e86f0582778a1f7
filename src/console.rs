//! The console: what the tool prints on stdout and stderr, where a reader that went away
//! (`| head`, quitting `less`) is no failure. Rust ignores SIGPIPE, so a write to a closed pipe
//! returns EPIPE, and `println!`/`eprintln!` panic on it: a run died (exit 101) before writing its
//! files. Every line of the library goes out through `outln!` (stdout) and `errln!` (stderr),
//! which drop what cannot be written; `clippy.toml` refuses the std macros. A writer of a whole
//! table to the console takes `written`.
//!
//! Owns: how a line reaches the console. Never: decides what is printed, or turns a closed
//! console into an error or an exit code (the run's result decides it).

/// A line on stdout; nothing when stdout is closed.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// A line on stderr; nothing when stderr is closed.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// A console's write: a reader that went away is no failure (what it would have read is in the
/// run directory); any other error stays one.
pub(crate) fn written(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_no_failure_and_any_other_error_is_one() {
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(written(Err(closed)).is_ok());
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        assert!(written(Err(full)).is_err());
    }
}
