//! Why a first connection failed, from the driver's message (a server-selection timeout carries
//! each server's last failure inside its topology dump), in words and with the fix: nothing
//! listening, a host name that does not resolve, no answer, a failed login, and each way TLS
//! fails (a certificate not trusted, for another name, expired; TLS asked of a plain server, or
//! not asked of a TLS one).

use std::time::Duration;

/// What the connection string asked for, which changes what a failure means.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Asked {
    /// `tls=true` (or `mongodb+srv://`, which implies it).
    pub(crate) tls: bool,
    /// `tlsCAFile=...`.
    pub(crate) ca_file: bool,
}

/// Why a first connection failed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cause {
    Authentication,
    /// The server's certificate chain does not lead to a CA this client trusts (self-signed,
    /// or a private CA not named).
    UntrustedCertificate {
        /// A self-signed certificate made as a CA (`CA:TRUE`, `openssl req -x509`'s default):
        /// refused as a server's own even when `tlsCAFile` names it.
        ca_as_own: bool,
    },
    /// That, although `tlsCAFile` names the certificate.
    CaAsServerCertificate,
    /// Valid, but for other names (those it names, when the message says).
    WrongHostName(Vec<String>),
    /// No subjectAltName at all (the CN is not used).
    NoHostNames,
    CertificateExpired,
    ClientCertificateRequired,
    /// TLS was asked for, and what came back was not TLS.
    NotTls,
    /// The server hung up without a word.
    Closed,
    /// The TLS handshake failed for a reason not named above.
    Tls,
    Refused,
    NoSuchHost,
    /// Nothing came back in time.
    NoAnswer,
}

impl Cause {
    /// The cause the driver's message shows, the most specific first (a server-selection
    /// timeout carries each server's last failure inside its topology dump).
    fn of(message: &str, asked: Asked) -> Option<Cause> {
        let lower = message.to_lowercase();
        let has = |patterns: &[&str]| patterns.iter().any(|p| lower.contains(&p.to_lowercase()));
        let cause = if has(&["Authentication failed"]) {
            Cause::Authentication
        } else if has(&["CaUsedAsEndEntity"]) {
            if asked.ca_file {
                Cause::CaAsServerCertificate
            } else {
                Cause::UntrustedCertificate { ca_as_own: true }
            }
        } else if has(&[
            "UnknownIssuer",
            "self signed certificate",
            "unable to get local issuer",
        ]) {
            Cause::UntrustedCertificate { ca_as_own: false }
        } else if has(&["not valid for any names"]) {
            Cause::NoHostNames
        } else if has(&["NotValidForName", "not valid for name", "hostname mismatch"]) {
            Cause::WrongHostName(valid_names(message))
        } else if has(&["certificate: Expired", "certificate expired", "NotValidYet"]) {
            Cause::CertificateExpired
        } else if has(&["CertificateRequired"]) {
            Cause::ClientCertificateRequired
        } else if has(&[
            "received corrupt message",
            "InvalidContentType",
            "wrong version number",
        ]) {
            Cause::NotTls
        } else if has(&[
            "unexpected end of file",
            "tls handshake eof",
            "close_notify",
            "Connection reset by peer",
        ]) {
            Cause::Closed
        } else if has(&[
            "invalid peer certificate",
            "handshake",
            "AlertReceived",
            "tls",
        ]) {
            Cause::Tls
        } else if has(&["Connection refused"]) {
            Cause::Refused
        } else if has(&["failed to lookup address", "Name or service not known"]) {
            Cause::NoSuchHost
        } else if has(&["timed out"])
            || (has(&["Server selection timeout"]) && !message.contains("Error:"))
        {
            Cause::NoAnswer
        } else {
            return None;
        };
        Some(cause)
    }

    /// What happened, in a few words.
    fn why(&self, asked: Asked) -> String {
        match self {
            Cause::Authentication => "authentication failed: check the user name and password".into(),
            Cause::UntrustedCertificate { ca_as_own: false } => "the server's TLS certificate is not trusted: it is self-signed, or signed by a CA this machine does not know".into(),
            Cause::UntrustedCertificate { ca_as_own: true } => "the server's TLS certificate is not trusted: it is self-signed (a CA certificate serving as the server's own)".into(),
            Cause::CaAsServerCertificate => "the server's TLS certificate is a CA certificate serving as the server's own (self-signed with CA:TRUE), which TLS refuses even when tlsCAFile names it".into(),
            Cause::WrongHostName(names) if !names.is_empty() => format!(
                "the server's TLS certificate is for {}, not for the host in the URI",
                names.join(", ")
            ),
            Cause::WrongHostName(_) => "the server's TLS certificate is for another host name than the one in the URI".into(),
            Cause::NoHostNames => "the server's TLS certificate names no host (it has no subjectAltName, and its CN does not count)".into(),
            Cause::CertificateExpired => "the server's TLS certificate has expired or is not valid yet (or this machine's clock is wrong)".into(),
            Cause::ClientCertificateRequired => "the server asks for a client certificate and none was given".into(),
            Cause::NotTls => "the TLS handshake failed: the server answered, but not in TLS (received corrupt message)".into(),
            Cause::Closed if asked.tls => "the server closed the connection during the TLS handshake".into(),
            Cause::Closed => "the server closed the connection without answering".into(),
            Cause::Tls => "the TLS handshake failed".into(),
            Cause::Refused => "connection refused: nothing listens on that host and port".into(),
            Cause::NoSuchHost => "the host name does not resolve".into(),
            Cause::NoAnswer if asked.tls => "no answer in time (with tls=true, a server that takes only plain connections does not answer either)".into(),
            Cause::NoAnswer => "no answer in time".into(),
        }
    }

    /// What to do about it.
    fn fix(&self, asked: Asked) -> String {
        const TEST_ONLY: &str =
            "for a test server only, tlsAllowInvalidCertificates=true skips the check";
        const HOST_AND_PORT: &str = "check that the server runs and the host and port are right, or leave out --uri to use the embedded server";
        match self {
            Cause::Authentication => "check the user name and password, and authSource=DB when the user is defined in a database other than admin".into(),
            Cause::UntrustedCertificate { ca_as_own: false } => format!("name the CA that signed the server's certificate: add tlsCAFile=/path/to/ca.pem to the URI ({TEST_ONLY})"),
            Cause::UntrustedCertificate { ca_as_own: true } => format!("name the CA that signed it: add tlsCAFile=/path/to/ca.pem to the URI, with a server certificate that CA signed (a self-signed CA certificate is refused even when named); {TEST_ONLY}"),
            Cause::CaAsServerCertificate => format!("give the server a certificate signed by that CA (not the CA itself) and keep tlsCAFile=/path/to/ca.pem; {TEST_ONLY}"),
            Cause::WrongHostName(names) => {
                let host = names.first().map_or("a host name the certificate names", String::as_str);
                format!("connect to {host} in the URI, or have a certificate issued for this host (this build's TLS cannot skip only the name check, so tlsAllowInvalidHostnames is refused; {TEST_ONLY})")
            }
            Cause::NoHostNames => format!("reissue the certificate with the server's name in subjectAltName (openssl ... -addext subjectAltName=DNS:localhost,IP:127.0.0.1); {TEST_ONLY}"),
            Cause::CertificateExpired => format!("renew the server's certificate, or check the clock; {TEST_ONLY}"),
            Cause::ClientCertificateRequired => "name this client's certificate and key: add tlsCertificateKeyFile=/path/to/client.pem to the URI".into(),
            Cause::NotTls => "leave out tls=true (or set tls=false) if the server takes plain connections, or point the URI at the server's TLS port".into(),
            Cause::Closed if asked.tls => "check that the server takes TLS on that port (else leave out tls=true), and that it accepts this client (tlsCertificateKeyFile=/path/to/client.pem if it wants a client certificate)".into(),
            Cause::Closed => "if the server takes only TLS connections, add tls=true (and tlsCAFile=/path/to/ca.pem for a private CA); else check the host and port".into(),
            Cause::Tls => format!("check the URI's TLS options: tlsCAFile=/path/to/ca.pem names a private CA; {TEST_ONLY}"),
            Cause::NoAnswer if asked.tls => format!("leave out tls=true if the server takes plain connections; else {HOST_AND_PORT}"),
            Cause::Refused | Cause::NoSuchHost | Cause::NoAnswer => HOST_AND_PORT.into(),
        }
    }

    /// The server answered: how long the tool waited says nothing.
    fn answered(&self) -> bool {
        !matches!(self, Cause::Refused | Cause::NoSuchHost | Cause::NoAnswer)
    }
}

/// The names a certificate is valid for, from rustls's `certificate is only valid for
/// DnsName("localhost")` or `IpAddress(..)`.
fn valid_names(message: &str) -> Vec<String> {
    let Some((_, tail)) = message.split_once("only valid for") else {
        return Vec::new();
    };
    let tail = tail.split(['\n', '}']).next().unwrap_or("");
    let mut names = Vec::new();
    for part in tail.split("DnsName(\"").skip(1) {
        if let Some((name, _)) = part.split_once('"') {
            names.push(name.to_string());
        }
    }
    names
}

/// The error of a first ping that failed: the server (`shown`, its password hidden), the cause
/// in words and the fix, from the driver's `message` (already redacted).
pub(super) fn unreachable(shown: &str, timeout: Duration, asked: Asked, message: &str) -> String {
    match Cause::of(message, asked) {
        Some(c) if c.answered() => format!(
            "cannot connect to the server at {shown}: {}\n  fix: {}",
            c.why(asked),
            c.fix(asked)
        ),
        cause => format!(
            "cannot reach the server at {shown} within {}: {}\n  fix: {}",
            humantime::format_duration(timeout),
            cause
                .as_ref()
                .map_or_else(|| first_line(message), |c| c.why(asked)),
            cause.unwrap_or(Cause::Refused).fix(asked)
        ),
    }
}

/// The message's first line, in the driver's words only (its `Kind: ` and its trailing
/// `, labels: {...}, source: ...` left out).
fn first_line(s: &str) -> String {
    let s = s.lines().next().unwrap_or("");
    let s = s.strip_prefix("Kind: ").unwrap_or(s);
    let s = s.split(", labels: {").next().unwrap_or(s).trim();
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

#[cfg(test)]
mod tests {
    use super::*;

    const TLS: Asked = Asked {
        tls: true,
        ca_file: false,
    };
    const TLS_CA: Asked = Asked {
        tls: true,
        ca_file: true,
    };
    const PLAIN: Asked = Asked {
        tls: false,
        ca_file: false,
    };

    /// What the driver (3.x, rustls) says, as seen against real peers: the cause of each
    /// server's last failure inside a server-selection timeout's topology dump.
    fn dump(error: &str) -> String {
        format!("Kind: Server selection timeout: No available servers. Topology: {{ Type: Unknown, Servers: [ {{ Address: 127.0.0.1:40000, Type: Unknown, Error: Kind: I/O error: {error}, labels: {{\"RetryableError\"}}, source: None, server response: None }} ] }}, labels: {{}}, source: None, server response: None")
    }

    fn message(asked: Asked, driver: &str) -> String {
        unreachable(
            "mongodb://u:****@127.0.0.1:40000/?tls=true",
            Duration::from_secs(2),
            asked,
            driver,
        )
    }

    #[test]
    fn an_untrusted_certificate_names_tls_ca_file_not_host_and_port() {
        for error in [
            "invalid peer certificate: UnknownIssuer",
            "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))",
        ] {
            let m = message(TLS, &dump(error));
            assert!(m.contains("certificate is not trusted"), "{m}");
            assert!(m.contains("tlsCAFile=/path/to/ca.pem"), "{m}");
            assert!(m.contains("tlsAllowInvalidCertificates=true"), "{m}");
            assert!(
                !m.contains("host and port") && !m.contains("Topology"),
                "{m}"
            );
            assert!(
                m.starts_with("cannot connect to the server at mongodb://u:****@"),
                "{m}"
            );
        }
    }

    #[test]
    fn a_self_signed_ca_named_by_tls_ca_file_is_told_apart() {
        let m = message(
            TLS_CA,
            &dump("invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))"),
        );
        assert!(m.contains("refuses even when tlsCAFile names it"), "{m}");
        assert!(m.contains("signed by that CA"), "{m}");
    }

    #[test]
    fn a_certificate_for_another_name_names_the_one_it_is_for() {
        let m = message(TLS_CA, &dump("invalid peer certificate: certificate not valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\")"));
        assert!(m.contains("certificate is for localhost"), "{m}");
        assert!(m.contains("connect to localhost"), "{m}");
        assert!(m.contains("tlsAllowInvalidHostnames is refused"), "{m}");
        let m = message(TLS_CA, &dump("invalid peer certificate: certificate not valid for name \"127.0.0.1\"; certificate is not valid for any names (according to its subjectAltName extension)"));
        assert!(m.contains("names no host"), "{m}");
        assert!(m.contains("subjectAltName=DNS:"), "{m}");
    }

    #[test]
    fn each_other_tls_failure_has_its_own_fix() {
        for (driver, words, fix) in [
            (
                "received corrupt message of type InvalidContentType",
                "not in TLS",
                "tls=false",
            ),
            ("invalid peer certificate: Expired", "expired", "renew"),
            (
                "received fatal alert: CertificateRequired",
                "client certificate",
                "tlsCertificateKeyFile=",
            ),
            (
                "tls handshake eof",
                "closed the connection during the TLS handshake",
                "takes TLS on that port",
            ),
        ] {
            let m = message(TLS, &dump(driver));
            assert!(m.contains(words), "{driver}: {m}");
            assert!(m.contains(fix), "{driver}: {m}");
            assert!(!m.contains("Topology"), "{driver}: {m}");
        }
    }

    #[test]
    fn tls_asked_of_a_silent_plain_server_suggests_leaving_it_out() {
        let silent = "Kind: Server selection timeout: No available servers. Topology: { Type: Unknown, Servers: [ { Address: 127.0.0.1:40000, Type: Unknown } ] }, labels: {}, source: None, server response: None";
        let m = message(TLS, silent);
        assert!(m.starts_with("cannot reach the server at"), "{m}");
        assert!(m.contains("within 2s: no answer in time"), "{m}");
        assert!(m.contains("leave out tls=true"), "{m}");
        let m = message(PLAIN, silent);
        assert!(m.contains("within 2s: no answer in time\n"), "{m}");
        assert!(!m.contains("leave out tls"), "{m}");
    }

    #[test]
    fn a_plain_client_hung_up_on_suggests_tls() {
        let m = message(PLAIN, &dump("unexpected end of file"));
        assert!(m.contains("closed the connection without answering"), "{m}");
        assert!(m.contains("add tls=true"), "{m}");
    }

    #[test]
    fn the_messages_that_already_read_well_stay() {
        let m = message(PLAIN, &dump("Connection refused (os error 111)"));
        assert!(m.starts_with("cannot reach the server at"), "{m}");
        assert!(
            m.contains("within 2s: connection refused: nothing listens on that host and port"),
            "{m}"
        );
        assert!(m.contains("host and port are right"), "{m}");
        let m = message(PLAIN, "Kind: SCRAM failure: Authentication failed., labels: {}, source: Some(Error { kind: Command(CommandError { code: 18, code_name: \"AuthenticationFailed\" }) })");
        assert!(
            m.contains("authentication failed: check the user name and password"),
            "{m}"
        );
        assert!(m.contains("authSource"), "{m}");
        let m = message(
            PLAIN,
            &dump("failed to lookup address information: Name or service not known"),
        );
        assert!(m.contains("the host name does not resolve"), "{m}");
    }

    #[test]
    fn an_unknown_cause_shows_the_first_line_of_the_driver_message() {
        let m = message(PLAIN, "something new\nand more");
        assert!(
            m.contains("within 2s: something new\n  fix: check that the server runs"),
            "{m}"
        );
        let m = message(
            PLAIN,
            "Kind: something newer, labels: {}, source: None, server response: None",
        );
        assert!(m.contains("within 2s: something newer\n"), "{m}");
    }
}
