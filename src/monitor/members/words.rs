//! A member's refusals and errors in the user's words: the command, the server's code name and
//! its first line.

/// A driver error in the user's words, any password taken out.
pub(super) fn words(e: &mongodb::error::Error) -> String {
    crate::redact::redact(&crate::driver_error::describe(e))
}

/// The command the oplog window is read with, as its warning names it.
pub(super) const OPLOG_FIND: &str = "find on local.oplog.rs";

pub(super) fn code_name(e: &mongodb::error::Error) -> Option<String> {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code_name.clone()),
        _ => None,
    }
}

/// The warning for a member's failed command: the role it needs when it was refused, else
/// what went wrong.
pub(super) fn refusal(host: &str, command: &str, error: &str, code: Option<&str>) -> String {
    match code {
        Some("Unauthorized") if command == OPLOG_FIND => format!(
            "members: {host} refused {command} (not authorized): grant the user the read role on the local database to see its oplog window; that cell shows - (said once)"
        ),
        Some("Unauthorized") => format!(
            "members: {host} refused {command} (not authorized): grant the user the clusterMonitor role to see {}; those cells show - (said once)",
            match command {
                "replSetGetStatus" => "each member's state and lag",
                "serverStatus" => "its operations, connections and network",
                _ => "it",
            }
        ),
        _ if command == "hello" => format!(
            "members: {host} does not answer ({}); its cells show - while it does not (said once)",
            first_line(error)
        ),
        _ => format!(
            "members: {command} failed on {host} ({}); those cells show - (said once)",
            first_line(error)
        ),
    }
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
