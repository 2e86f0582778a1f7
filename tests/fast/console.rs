//! What the console says when a connection fails for a reason of TLS, against real TLS peers
//! on loopback (`openssl s_server` with certificates made here by `openssl`), and that `--wide`
//! is an option of the commands that print the summary table. No MongoDB server is needed.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::bin;

const PASSWORD: &str = "s3cretPW";

/// Runs `openssl` with `args` in `dir`; a machine without it fails the test, saying what to
/// install.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "these tests make certificates and serve TLS with the openssl command, which cannot be run ({e})\n\
                 install it: apt-get install openssl (Debian, Ubuntu), dnf install openssl, brew install openssl"
            )
        });
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req -x509`'s own kind of self-signed certificate (it is made as a CA), for
/// `localhost`: `cert.pem` and `key.pem`.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-days",
            "1",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ],
    );
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// A CA (`ca.pem`) and a server certificate it signed for `localhost` only (`leaf.pem`,
/// `leaf.key`), as a private CA issues them.
fn signed_by_a_private_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=test-ca",
            "-days",
            "1",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
        ],
    );
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-out",
            "leaf.pem",
            "-extfile",
            "leaf.ext",
        ],
    );
    (
        dir.join("ca.pem"),
        dir.join("leaf.pem"),
        dir.join("leaf.key"),
    )
}

/// `openssl s_server` on a free loopback port, stopped on drop.
struct TlsPeer {
    child: Child,
    port: u16,
}

impl TlsPeer {
    fn start(cert: &Path, key: &Path) -> TlsPeer {
        // A free port can be taken between the probe and the bind: try a few.
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new("openssl")
                .args(["s_server", "-quiet", "-www", "-accept"])
                .arg(format!("127.0.0.1:{port}"))
                .arg("-cert")
                .arg(cert)
                .arg("-key")
                .arg(key)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("openssl s_server starts (install openssl)");
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return TlsPeer { child, port };
                }
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("openssl s_server did not listen on a loopback port");
    }
}

impl Drop for TlsPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port()
}

/// A plain TCP server that answers anything with an HTTP error, as a web server would: not TLS.
fn plain_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 512];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
        }
    });
    port
}

/// `run smoke` against `host:port` with `options` (a short server-selection timeout added):
/// it must exit 3, never show the password, and never the driver's topology dump; returns
/// stderr.
fn refused_with_3(host: &str, port: u16, options: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let uri =
        format!("mongodb://u:{PASSWORD}@{host}:{port}/?serverSelectionTimeoutMS=2000{options}");
    let out = bin()
        .args(["run", "smoke", "--uri", &uri, "--out"])
        .arg(dir.path().join("out"))
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(60))
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains(PASSWORD) && !stderr.contains(PASSWORD),
        "the password is shown:\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("u:****@"), "{stderr}");
    assert!(
        !stderr.contains("Topology") && !stderr.contains("labels:"),
        "the driver's dump instead of a cause: {stderr}"
    );
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    stderr
}

fn says(stderr: &str, words: &[&str]) {
    for w in words {
        assert!(stderr.contains(w), "expected {w:?} in: {stderr}");
    }
}

#[test]
fn a_self_signed_certificate_exits_3_saying_it_is_not_trusted_and_naming_tls_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let peer = TlsPeer::start(&cert, &key);
    let stderr = refused_with_3("127.0.0.1", peer.port, "&tls=true");
    says(
        &stderr,
        &[
            "cannot connect to the server at",
            "the server's TLS certificate is not trusted",
            "tlsCAFile=/path/to/ca.pem",
            "tlsAllowInvalidCertificates=true",
        ],
    );
    assert!(!stderr.contains("host and port"), "{stderr}");
}

#[test]
fn a_certificate_from_a_ca_not_named_exits_3_naming_tls_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, leaf, key) = signed_by_a_private_ca(dir.path());
    let peer = TlsPeer::start(&leaf, &key);
    let stderr = refused_with_3("127.0.0.1", peer.port, "&tls=true");
    says(
        &stderr,
        &[
            "certificate is not trusted",
            "signed by a CA this machine does not know",
            "tlsCAFile=/path/to/ca.pem",
        ],
    );
}

#[test]
fn a_self_signed_ca_named_as_tls_ca_file_is_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let peer = TlsPeer::start(&cert, &key);
    let stderr = refused_with_3(
        "127.0.0.1",
        peer.port,
        &format!("&tls=true&tlsCAFile={}", cert.display()),
    );
    says(
        &stderr,
        &[
            "a CA certificate serving as the server's own",
            "signed by that CA",
            "tlsAllowInvalidCertificates=true",
        ],
    );
}

#[test]
fn a_certificate_for_another_host_name_names_the_host_it_is_for() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, leaf, key) = signed_by_a_private_ca(dir.path());
    let peer = TlsPeer::start(&leaf, &key);
    let stderr = refused_with_3(
        "127.0.0.1",
        peer.port,
        &format!("&tls=true&tlsCAFile={}", ca.display()),
    );
    says(
        &stderr,
        &[
            "certificate is for localhost, not for the host in the URI",
            "connect to localhost",
            "tlsAllowInvalidHostnames is refused",
        ],
    );
}

#[test]
fn tls_asked_of_a_server_that_answers_in_plain_says_so() {
    let port = plain_server();
    let stderr = refused_with_3("127.0.0.1", port, "&tls=true");
    says(
        &stderr,
        &["not in TLS", "received corrupt message", "tls=false"],
    );
}

#[test]
fn a_plain_connection_to_a_tls_server_suggests_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let peer = TlsPeer::start(&cert, &key);
    let stderr = refused_with_3("127.0.0.1", peer.port, "");
    says(
        &stderr,
        &["closed the connection without answering", "add tls=true"],
    );
}

#[test]
fn a_tls_ca_file_that_cannot_be_read_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ca.pem");
    let uri = format!(
        "mongodb://u:{PASSWORD}@127.0.0.1:{}/?tls=true&tlsCAFile={}",
        free_port(),
        missing.display()
    );
    let out = bin()
        .args(["run", "smoke", "--uri", &uri, "--out"])
        .arg(dir.path().join("out"))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    says(
        &stderr,
        &[
            &missing.display().to_string(),
            "No such file",
            "readable PEM files",
        ],
    );
    assert!(
        !stderr.contains(PASSWORD) && !stderr.contains("labels:"),
        "{stderr}"
    );
}

#[test]
fn tls_allow_invalid_hostnames_is_refused_with_what_to_do_instead() {
    let out = bin()
        .args([
            "run",
            "smoke",
            "--uri",
            "mongodb://127.0.0.1:1/?tls=true&tlsAllowInvalidHostnames=true",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    says(
        &stderr,
        &[
            "cannot skip only the host name check",
            "tlsAllowInvalidCertificates=true",
        ],
    );
}

#[test]
fn wide_is_an_option_of_run_and_merge_but_not_of_capacity() {
    let help = |cmd: &str| {
        let out = bin().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(help("run").contains("--wide"), "{}", help("run"));
    assert!(help("merge").contains("--wide"), "{}", help("merge"));
    assert!(
        !help("capacity").contains("--wide"),
        "capacity prints no summary table"
    );
}
