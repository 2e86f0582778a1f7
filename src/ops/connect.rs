//! Connecting to the target: URI parsing (a bad one is a usage error), a ping within the
//! server-selection timeout (no answer is exit 3), the server's version, and password redaction.

use std::time::Duration;

use mongodb::bson::doc;
use mongodb::options::ClientOptions;
use mongodb::Client;

use crate::error::Error;
use crate::redact::redact;

/// Server selection and connect timeout unless the URI sets its own.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Connected {
    pub client: Client,
    /// e.g. `MongoDB 7.0.12` or `secantusd-rs 0.5.3-beta.196 (MongoDB 7.0 wire)`.
    pub server_version: String,
}

/// Parses a connection string; a bad one is a usage error that never shows the password.
pub async fn parse(uri: &str) -> Result<ClientOptions, Error> {
    let shown = redact(uri);
    ClientOptions::parse(uri).await.map_err(|e| {
        Error::Usage(format!(
            "not a usable MongoDB connection string: {shown}\n  problem: {}\n  fix: use the form mongodb://host:port/ (see https://www.mongodb.com/docs/manual/reference/connection-string/)",
            redact(&e.to_string())
        ))
    })
}

/// Connections of the resource sampler's own client, apart from the workload's pool.
const MONITOR_POOL: u32 = 2;
/// How long the sampler's client waits to select the server or to connect.
const MONITOR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The resource sampler's own client, like mongostat's: a pool of its own, so its serverStatus
/// never queues behind the virtual users for a connection, and short timeouts of its own.
pub async fn monitor(uri: &str) -> Result<Client, Error> {
    let shown = redact(uri);
    let mut opts = parse(uri).await?;
    opts.app_name = Some("mongo-stress monitor".into());
    opts.max_pool_size = Some(MONITOR_POOL);
    opts.min_pool_size = Some(1);
    opts.server_selection_timeout = Some(MONITOR_TIMEOUT);
    opts.connect_timeout = Some(MONITOR_TIMEOUT);
    Client::with_options(opts)
        .map_err(|e| Error::Usage(format!("bad client options in {shown}: {e}")))
}

pub async fn connect(uri: &str, pool_size: u32) -> Result<Connected, Error> {
    let shown = redact(uri);
    let mut opts = parse(uri).await?;
    opts.app_name.get_or_insert_with(|| "mongo-stress".into());
    opts.server_selection_timeout.get_or_insert(DEFAULT_TIMEOUT);
    opts.connect_timeout.get_or_insert(DEFAULT_TIMEOUT);
    opts.max_pool_size = Some(pool_size);
    let timeout = opts.server_selection_timeout.unwrap_or(DEFAULT_TIMEOUT);
    let client = Client::with_options(opts)
        .map_err(|e| Error::Usage(format!("bad client options in {shown}: {e}")))?;
    let admin = client.database("admin");
    if let Err(e) = admin.run_command(doc! { "ping": 1 }).await {
        return Err(Error::Server(format!(
            "cannot reach the server at {shown} within {}: {}\n  fix: check that the server runs and the host and port are right, or leave out --uri to use the embedded server",
            humantime::format_duration(timeout),
            why_unreachable(&redact(&e.to_string()))
        )));
    }
    let info = admin.run_command(doc! { "buildInfo": 1 }).await.ok();
    let server_version = info
        .as_ref()
        .and_then(|i| i.get_str("version").ok())
        .map_or_else(
            || "unknown".into(),
            |v| format!("MongoDB wire, version {v}"),
        );
    Ok(Connected {
        client,
        server_version,
    })
}

/// The cause inside the driver's server-selection report, in a few words.
fn why_unreachable(message: &str) -> String {
    let known = [
        (
            "Connection refused",
            "connection refused: nothing listens on that host and port",
        ),
        ("failed to lookup address", "the host name does not resolve"),
        (
            "Name or service not known",
            "the host name does not resolve",
        ),
        (
            "Authentication failed",
            "authentication failed: check the user name and password",
        ),
        ("timed out", "no answer in time"),
        ("tls", "the TLS handshake failed"),
    ];
    known
        .iter()
        .find(|(pattern, _)| message.contains(pattern))
        .map_or_else(|| first_line(message), |(_, why)| why.to_string())
}

fn first_line(s: &str) -> String {
    let s = s.lines().next().unwrap_or("");
    if s.len() > 400 {
        let cut = (0..=400)
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        format!("{}...", &s[..cut])
    } else {
        s.to_string()
    }
}
