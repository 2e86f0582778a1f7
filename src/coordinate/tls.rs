//! HTTPS for a coordinator given a certificate (`--tls-cert`, `--tls-key`), and the roots a part
//! trusts it by (`--tls-ca`, else the public web's). rustls with its ring provider, the one the
//! driver already brings; the routes are axum's on a listener that finishes each handshake.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

use crate::error::Error;

/// A handshake that takes longer is dropped (it would hold up the next part's).
const HANDSHAKE: Duration = Duration::from_secs(5);

fn unreadable(flag: &str, path: &Path, what: &str) -> Error {
    Error::Usage(format!(
        "{flag} {}: {what}\n  fix: give a PEM file{}",
        path.display(),
        if flag == "--tls-key" {
            " with the certificate's private key (PKCS#8, PKCS#1 or SEC1)"
        } else {
            " with the certificate, then any intermediates"
        }
    ))
}

/// The coordinator's TLS: its certificate chain and key, as PEM files.
pub(crate) fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, Error> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| unreadable("--tls-cert", cert, &e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| unreadable("--tls-cert", cert, &e.to_string()))?;
    if chain.is_empty() {
        return Err(unreadable("--tls-cert", cert, "it holds no certificate"));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| unreadable("--tls-key", key, &e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Other(e.into()))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            Error::Usage(format!(
                "--tls-cert {} and --tls-key {} do not make a certificate rustls can serve: {e}\n  fix: the key must be the certificate's own",
                cert.display(),
                key.display()
            ))
        })?;
    Ok(Arc::new(config))
}

/// The connections whose TLS handshake is done: each accepted connection's handshake runs in a
/// task of its own (a slow one holds up no other), one that fails or takes over `HANDSHAKE`
/// is dropped.
pub(crate) struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(tokio_rustls::server::TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    pub(crate) fn new(
        tcp: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (tx, ready) = tokio::sync::mpsc::channel(64);
        let accepting = tokio::spawn(async move {
            loop {
                let Ok((stream, addr)) = tcp.accept().await else {
                    // As axum's own listener: a full table of descriptors clears in a moment.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await
                    {
                        let _ = tx.send((tls, addr)).await;
                    }
                });
            }
        });
        Ok(TlsListener {
            ready,
            local,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(ready) => ready,
            // The accepting task never ends while the listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The roots a part trusts its coordinator by: the CA in `ca` (PEM), else the public web's.
pub(crate) fn root_certs(ca: Option<&Path>) -> Result<ureq::tls::RootCerts, Error> {
    let Some(ca) = ca else {
        return Ok(ureq::tls::RootCerts::WebPki);
    };
    let bad = |what: String| {
        Error::Usage(format!(
            "--tls-ca {}: {what}\n  fix: give the PEM file of the CA that signed the coordinator's certificate (for a self-signed one, the certificate itself)",
            ca.display()
        ))
    };
    let pem = std::fs::read(ca).map_err(|e| bad(e.to_string()))?;
    let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => Some(Ok(c)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("it holds no certificate".into()));
    }
    Ok(ureq::tls::RootCerts::new_with_certs(&certs))
}
