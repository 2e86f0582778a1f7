//! Connecting to the target: URI parsing (a bad one is a usage error), a ping within the
//! server-selection timeout (no answer is exit 3, its cause in words with the fix: `cause`), the
//! server's version, and password redaction.

use std::time::Duration;

use mongodb::bson::doc;
use mongodb::options::{ClientOptions, Tls};
use mongodb::Client;

use crate::error::Error;
use crate::redact::redact;

mod cause;
mod probe;
use cause::{unreachable, Asked};

/// Server selection and connect timeout unless the URI sets its own.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// A listener's server selection (`listeners`), unless the URI says.
const LISTENER_SELECTION_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) struct Connected {
    pub(crate) client: Client,
    /// e.g. `MongoDB 7.0.12` or `secantusd-rs 0.5.3-beta.196 (MongoDB 7.0 wire)`.
    pub(crate) server_version: String,
}

/// Parses a connection string; a bad one is a usage error that never shows the password.
pub(crate) async fn parse(uri: &str) -> Result<ClientOptions, Error> {
    let shown = redact(uri);
    ClientOptions::parse(uri).await.map_err(|e| {
        let problem = driver_words(&redact(&e.to_string()));
        let srv_lookup = uri.starts_with("mongodb+srv://")
            && matches!(e.kind.as_ref(), mongodb::error::ErrorKind::DnsResolve { .. });
        let fix = if srv_lookup {
            // The form is right; the name's SRV record could not be read.
            "mongodb+srv:// reads the hosts from the DNS SRV record _mongodb._tcp.<host>: check the host name (as the Atlas or cluster console gives it) and that this machine's DNS resolves it (dig SRV _mongodb._tcp.<host>); or list the hosts yourself: mongodb://host1:27017,host2:27017/?replicaSet=NAME&tls=true"
        } else if problem.to_lowercase().contains("tlsallowinvalidhostnames") {
            // The driver's TLS here is rustls, which cannot skip only the name check.
            "this build's TLS (rustls) cannot skip only the host name check: connect with a host name the server's certificate names, or, for a test server only, use tlsAllowInvalidCertificates=true"
        } else {
            "use the form mongodb://host:port/ (see https://www.mongodb.com/docs/manual/reference/connection-string/)"
        };
        Error::Usage(format!(
            "not a usable MongoDB connection string: {shown}\n  problem: {problem}\n  fix: {fix}"
        ))
    })
}

/// A client the driver refuses to build from valid options (a TLS file that cannot be read).
fn bad_options(shown: &str, e: &mongodb::error::Error) -> Error {
    let problem = driver_words(&redact(&e.to_string()));
    let fix = if problem.contains("PEM") || problem.contains("certificate") {
        "tlsCAFile and tlsCertificateKeyFile must name readable PEM files (the CA's certificate; this client's certificate and key)"
    } else {
        "check the options of the connection string (see https://www.mongodb.com/docs/manual/reference/connection-string/)"
    };
    Error::Usage(format!(
        "bad client options in {shown}: {problem}\n  fix: {fix}"
    ))
}

/// The driver's message without its `Kind: ` and its trailing `, labels: {...}, source: ...`.
fn driver_words(message: &str) -> String {
    let m = message.strip_prefix("Kind: ").unwrap_or(message);
    let m = m.split(", labels: {").next().unwrap_or(m);
    m.trim().to_string()
}

/// Connections of the resource sampler's own client, apart from the workload's pool.
const MONITOR_POOL: u32 = 2;
/// How long the sampler's client waits to select the server or to connect.
const MONITOR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The resource sampler's own client, like mongostat's: a pool of its own, so its serverStatus
/// never queues behind the virtual users for a connection, and short timeouts of its own.
pub(crate) async fn monitor(uri: &str) -> Result<Client, Error> {
    let shown = redact(uri);
    let mut opts = parse(uri).await?;
    opts.app_name = Some("mongo-stress monitor".into());
    opts.max_pool_size = Some(MONITOR_POOL);
    opts.min_pool_size = Some(1);
    opts.server_selection_timeout = Some(MONITOR_TIMEOUT);
    opts.connect_timeout = Some(MONITOR_TIMEOUT);
    Client::with_options(opts).map_err(|e| bad_options(&shown, &e))
}

/// The options of the listeners' clients (watch groups): each listener has a client of its
/// own, apart from the writers' pool, whose command events show its stream's resumes (the
/// driver resumes a broken stream by itself, and marks none of its commands as whose).
pub(crate) async fn listeners(uri: &str) -> Result<mongodb::options::ClientOptions, Error> {
    let mut opts = parse(uri).await?;
    opts.app_name = Some("mongo-stress listener".into());
    opts.max_pool_size = Some(2);
    // Short, so that a stream the driver tries to resume against a server that is gone gives
    // up soon and the listener's own tries (every 200 ms, bounded by the run's end) take over:
    // a run ends at its end whatever the server does.
    opts.server_selection_timeout
        .get_or_insert(LISTENER_SELECTION_TIMEOUT);
    opts.connect_timeout.get_or_insert(DEFAULT_TIMEOUT);
    Ok(opts)
}

/// A client of `opts`, a bad one named without its password.
pub(crate) fn client_of(opts: mongodb::options::ClientOptions) -> Result<Client, Error> {
    Client::with_options(opts).map_err(|e| bad_options("the connection string", &e))
}

/// A server that requires authentication and was given no user is said now, before anything is
/// explained, preloaded or run, not at the setup's first write. (Any signed-in user passes this
/// probe, which lists only the collections it may see: a user without the rights the setup
/// needs is refused there, with the server's words. Other refusals of the probe, a server
/// without `listCollections`' options, are left to the run.)
pub(crate) async fn authorized(client: &Client, uri: &str, database: &str) -> Result<(), Error> {
    // On `admin`, so that nothing but the run's own commands reaches the target database.
    let probe = client
        .database("admin")
        .run_command(doc! { "listCollections": 1, "nameOnly": true, "authorizedCollections": true })
        .await;
    let Err(e) = probe else { return Ok(()) };
    match crate::driver_error::server_code(&e) {
        Some(code) if code.0 == 13 || code.0 == 18 => Err(Error::Server(format!(
            "the server at {} refuses this connection: {}\n  fix: give a user with access to database `{database}` in the URI, e.g. mongodb://USER:PASSWORD@host:port/?authSource=admin",
            redact(uri),
            crate::driver_error::said(&e)
        ))),
        _ => Ok(()),
    }
}

/// Connects with a pool of `pool_size`; `warm` has the driver fill all of it from the start (in
/// the background, a few connections a second), not as bursts need them (open loop: memory and
/// connections flat once it is full).
pub(crate) async fn connect(uri: &str, pool_size: u32, warm: bool) -> Result<Connected, Error> {
    let shown = redact(uri);
    let mut opts = parse(uri).await?;
    opts.app_name.get_or_insert_with(|| "mongo-stress".into());
    opts.server_selection_timeout.get_or_insert(DEFAULT_TIMEOUT);
    opts.connect_timeout.get_or_insert(DEFAULT_TIMEOUT);
    opts.max_pool_size = Some(pool_size);
    if warm {
        opts.min_pool_size = Some(pool_size);
    }
    let timeout = opts.server_selection_timeout.unwrap_or(DEFAULT_TIMEOUT);
    let asked = Asked {
        tls: matches!(opts.tls, Some(Tls::Enabled(_))),
        ca_file: matches!(&opts.tls, Some(Tls::Enabled(t)) if t.ca_file_path.is_some()),
    };
    // Plain TCP to one named host: what answers there is probed beside the ping, so a port
    // where something else listens (a web console) is named at once, not after the timeout.
    let first = match opts.hosts.first() {
        Some(mongodb::options::ServerAddress::Tcp { host, port }) if !asked.tls => {
            Some((host.clone(), port.unwrap_or(27017)))
        }
        _ => None,
    };
    let client = Client::with_options(opts).map_err(|e| bad_options(&shown, &e))?;
    let admin = client.database("admin");
    let ping = admin.run_command(doc! { "ping": 1 });
    let probe = async {
        match &first {
            Some((host, port)) => probe::not_mongodb(host, *port).await,
            None => None,
        }
    };
    let pinged = tokio::select! {
        pinged = ping => pinged,
        Some(what) = probe => return Err(Error::Server(format!(
            "cannot connect to the server at {shown}: {what}\n  fix: point --uri at the MongoDB port (27017 unless the server was told otherwise); a web console's or an exporter's port is not it"
        ))),
    };
    if let Err(e) = pinged {
        return Err(Error::Server(unreachable(
            &shown,
            timeout,
            asked,
            &redact(&e.to_string()),
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

/// The documents a collection holds, from the server's metadata count; None when it cannot be
/// read within 5 s (a server that went away does not hold the caller for the driver's 30 s
/// server selection).
pub(crate) async fn document_count(
    client: &Client,
    database: &str,
    collection: &str,
) -> Option<u64> {
    let coll = client
        .database(database)
        .collection::<mongodb::bson::Document>(collection);
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        coll.estimated_document_count(),
    )
    .await
    .ok()?
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_words_lose_kind_and_labels() {
        assert_eq!(
            driver_words("Kind: Unable to parse PEM-encoded root certificate from /x.pem: I/O error: No such file or directory (os error 2), labels: {}, source: None, server response: None"),
            "Unable to parse PEM-encoded root certificate from /x.pem: I/O error: No such file or directory (os error 2)"
        );
    }
}
