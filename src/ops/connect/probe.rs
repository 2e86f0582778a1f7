//! Whether what listens on a port speaks MongoDB's wire protocol at all: a `hello` sent as
//! OP_MSG, and the first bytes of the reply read. An HTTP server answers `HTTP/1.1 400 ...`,
//! which the driver takes for a message of a gigabyte and waits out its timeout on; the first
//! bytes say at once that the port is not MongoDB's.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the probe waits to connect, and then for the first bytes.
const WAIT: Duration = Duration::from_secs(2);

/// OP_MSG's opcode, and the legacy OP_REPLY's a server may answer with.
const OP_MSG: i32 = 2013;
const OP_REPLY: i32 = 1;

/// What answers at `host:port` when it is not MongoDB, in words; None when it is, when
/// nothing answers in time, or when it cannot be told (the driver's own error says more).
pub(super) async fn not_mongodb(host: &str, port: u16) -> Option<String> {
    let mut stream = tokio::time::timeout(WAIT, tokio::net::TcpStream::connect((host, port)))
        .await
        .ok()?
        .ok()?;
    stream.write_all(&hello()).await.ok()?;
    let mut first = [0u8; 64];
    let n = tokio::time::timeout(WAIT, stream.read(&mut first))
        .await
        .ok()?
        .ok()?;
    judge(&first[..n])
}

/// A `hello` to `admin`, as OP_MSG. Its comment ends in an empty line, so that an HTTP server,
/// which reads a request up to one, answers at once (400) instead of waiting for the rest.
fn hello() -> Vec<u8> {
    let body = mongodb::bson::to_vec(&mongodb::bson::doc! {
        "hello": 1,
        "comment": "mongo-stress probe\r\n\r\n",
        "$db": "admin",
    })
    .expect("a small document encodes");
    let length = 16 + 4 + 1 + body.len();
    let mut m = Vec::with_capacity(length);
    let length = i32::try_from(length).expect("a hello of a few dozen bytes");
    m.extend_from_slice(&length.to_le_bytes());
    m.extend_from_slice(&1i32.to_le_bytes()); // requestID
    m.extend_from_slice(&0i32.to_le_bytes()); // responseTo
    m.extend_from_slice(&OP_MSG.to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes()); // flagBits
    m.push(0); // section kind 0: the body
    m.extend_from_slice(&body);
    m
}

/// The reply's first bytes: a MongoDB message header (a plausible length, an answer's opcode),
/// an HTTP status line, or something else.
fn judge(first: &[u8]) -> Option<String> {
    if first.is_empty() {
        return None;
    }
    if first.starts_with(b"HTTP/") {
        let line = String::from_utf8_lossy(first);
        let status = line.lines().next().unwrap_or("").trim();
        return Some(format!(
            "an HTTP server answers on that port, not MongoDB (it replied `{status}`)"
        ));
    }
    // A web server that took the request for HTTP/0.9 answers with its page alone.
    let text = String::from_utf8_lossy(first)
        .trim_start()
        .to_ascii_lowercase();
    if text.starts_with("<!doctype html") || text.starts_with("<html") {
        return Some(
            "an HTTP server answers on that port, not MongoDB (it replied with an HTML page)"
                .into(),
        );
    }
    if first.len() >= 16 {
        let word =
            |i: usize| i32::from_le_bytes([first[i], first[i + 1], first[i + 2], first[i + 3]]);
        let (length, opcode) = (word(0), word(12));
        if (16..=48_000_000).contains(&length) && (opcode == OP_MSG || opcode == OP_REPLY) {
            return None;
        }
    } else {
        // A short first read may be the start of a real reply.
        return None;
    }
    let shown: String = first
        .iter()
        .take(24)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    Some(format!(
        "something that is not MongoDB answers on that port (its first bytes: `{shown}`)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_other_protocols_are_told_from_a_mongodb_reply() {
        let http = judge(b"HTTP/1.0 400 Bad Request\r\nServer: x\r\n\r\n").unwrap();
        assert!(
            http.contains("an HTTP server") && http.contains("400 Bad Request"),
            "{http}"
        );
        let page = judge(b"<!DOCTYPE HTML>\n<html lang=\"en\">").unwrap();
        assert!(
            page.contains("an HTTP server") && page.contains("HTML page"),
            "{page}"
        );
        let ssh = judge(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n").unwrap();
        assert!(
            ssh.contains("not MongoDB") && ssh.contains("SSH-2.0"),
            "{ssh}"
        );
        let mut reply = Vec::new();
        reply.extend_from_slice(&300i32.to_le_bytes());
        reply.extend_from_slice(&7i32.to_le_bytes());
        reply.extend_from_slice(&1i32.to_le_bytes());
        reply.extend_from_slice(&OP_MSG.to_le_bytes());
        reply.extend_from_slice(&[0; 8]);
        assert_eq!(judge(&reply), None);
        assert_eq!(judge(b""), None);
        assert_eq!(
            hello().len(),
            usize::try_from(i32::from_le_bytes(hello()[..4].try_into().unwrap())).unwrap()
        );
    }
}
