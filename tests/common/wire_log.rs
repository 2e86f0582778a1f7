//! A loopback proxy in front of the real server that logs every OP_MSG command and its reply:
//! the witness of what the tool asked the server and what the server answered, read off the
//! wire rather than from the tool's own counters. It parses the message frames and their BSON
//! sections only; OP_COMPRESSED and other opcodes are passed on and counted as unparsed.

#![allow(dead_code)]
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mongodb::bson::{Bson, Document};

const OP_MSG: i32 = 2013;

/// One command as sent, with the server's reply once it came.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The command's name: the body's first key (`insert`, `find`, `explain`, ...).
    pub command: String,
    /// The body's first value: the collection's name for CRUD commands.
    pub target: Bson,
    /// The body's `$db`.
    pub db: String,
    /// The body (kind-0 section) without the document sequences.
    pub body: Document,
    /// The documents of each kind-1 section, by its identifier (`documents`, `updates`, ...).
    pub sequences: HashMap<String, Vec<Document>>,
    pub reply: Option<Document>,
}

impl Exchange {
    /// The documents of `name`, whether sent in a document sequence or in the body's array.
    pub(crate) fn documents(&self, name: &str) -> Vec<Document> {
        let mut docs = self.sequences.get(name).cloned().unwrap_or_default();
        if let Ok(a) = self.body.get_array(name) {
            docs.extend(a.iter().filter_map(|b| b.as_document().cloned()));
        }
        docs
    }

    /// A reply's integer field (`n`, `nModified`), 0 when absent.
    pub(crate) fn reply_int(&self, key: &str) -> i64 {
        match self.reply.as_ref().and_then(|r| r.get(key)) {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            Some(Bson::Double(n)) => *n as i64,
            _ => 0,
        }
    }

    /// The length of a reply's array field (`upserted`, `writeErrors`), 0 when absent.
    pub(crate) fn reply_len(&self, key: &str) -> usize {
        self.reply
            .as_ref()
            .and_then(|r| r.get_array(key).ok())
            .map_or(0, |a| a.len())
    }

    /// `cursor.firstBatch` of a find or aggregate reply.
    pub(crate) fn first_batch(&self) -> Option<Vec<Document>> {
        let batch = self
            .reply
            .as_ref()?
            .get_document("cursor")
            .ok()?
            .get_array("firstBatch")
            .ok()?;
        Some(
            batch
                .iter()
                .filter_map(|b| b.as_document().cloned())
                .collect(),
        )
    }

    /// `cursor.id` of a find or aggregate reply (0: the cursor is exhausted).
    pub(crate) fn cursor_id(&self) -> Option<i64> {
        self.reply
            .as_ref()?
            .get_document("cursor")
            .ok()?
            .get_i64("id")
            .ok()
    }

    pub(crate) fn ok(&self) -> bool {
        matches!(
            self.reply.as_ref().and_then(|r| r.get("ok")),
            Some(Bson::Double(x)) if *x == 1.0
        ) || matches!(
            self.reply.as_ref().and_then(|r| r.get("ok")),
            Some(Bson::Int32(1)) | Some(Bson::Int64(1))
        )
    }
}

#[derive(Default)]
struct Log {
    exchanges: Vec<Exchange>,
    /// (connection, requestID) to the index of its exchange, until the reply comes.
    pending: HashMap<(u64, i32), usize>,
}

/// The proxy: connect the tool to `port`.
pub(crate) struct WireLog {
    pub port: u16,
    log: Arc<Mutex<Log>>,
    /// Frames that are not OP_MSG (or could not be parsed): passed on, not logged.
    pub unparsed: Arc<AtomicU64>,
}

impl WireLog {
    /// A URI for the tool that goes through the proxy.
    pub(crate) fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port)
    }

    /// Every exchange so far, in the order the requests were sent.
    pub(crate) fn all(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().exchanges.clone()
    }

    /// The exchanges of command `command` on collection `coll` of database `db`.
    pub(crate) fn commands(&self, db: &str, command: &str, coll: &str) -> Vec<Exchange> {
        self.all()
            .into_iter()
            .filter(|e| e.db == db && e.command == command && e.target.as_str() == Some(coll))
            .collect()
    }

    /// The exchanges that name database `db`, whatever the command.
    pub(crate) fn on_db(&self, db: &str) -> Vec<Exchange> {
        self.all().into_iter().filter(|e| e.db == db).collect()
    }
}

/// One wire message: its 4-byte little-endian length, then the rest.
fn read_message(from: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len).ok()?;
    let n = u32::from_le_bytes(len) as usize;
    let mut msg = len.to_vec();
    msg.resize(n.max(4), 0);
    from.read_exact(&mut msg[4..]).ok()?;
    Some(msg)
}

fn i32_at(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// An OP_MSG's requestID, responseTo, body and document sequences.
type Parsed = (i32, i32, Document, HashMap<String, Vec<Document>>);

fn parse_op_msg(msg: &[u8]) -> Option<Parsed> {
    if i32_at(msg, 12)? != OP_MSG {
        return None;
    }
    let (request_id, response_to) = (i32_at(msg, 4)?, i32_at(msg, 8)?);
    let flags = u32::from_le_bytes(msg.get(16..20)?.try_into().ok()?);
    // checksumPresent: the last 4 bytes are a CRC-32C, not a section.
    let end = if flags & 1 != 0 {
        msg.len().checked_sub(4)?
    } else {
        msg.len()
    };
    let mut at = 20;
    let mut body = None;
    let mut sequences: HashMap<String, Vec<Document>> = HashMap::new();
    while at < end {
        let kind = *msg.get(at)?;
        at += 1;
        match kind {
            0 => {
                let len = i32_at(msg, at)? as usize;
                body = Some(Document::from_reader(msg.get(at..at + len)?).ok()?);
                at += len;
            }
            1 => {
                let size = i32_at(msg, at)? as usize;
                let section_end = at + size;
                let mut p = at + 4;
                let nul = msg.get(p..section_end)?.iter().position(|&c| c == 0)?;
                let id = String::from_utf8_lossy(&msg[p..p + nul]).into_owned();
                p += nul + 1;
                let docs = sequences.entry(id).or_default();
                while p < section_end {
                    let len = i32_at(msg, p)? as usize;
                    docs.push(Document::from_reader(msg.get(p..p + len)?).ok()?);
                    p += len;
                }
                at = section_end;
            }
            _ => return None,
        }
    }
    Some((request_id, response_to, body?, sequences))
}

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(0);

/// Starts the proxy in front of the server on `upstream_port`; it runs until the test ends.
pub(crate) fn start(upstream_port: u16) -> WireLog {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Log::default()));
    let unparsed = Arc::new(AtomicU64::new(0));
    let (log_a, unparsed_a) = (Arc::clone(&log), Arc::clone(&unparsed));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
                return;
            };
            let conn = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
            let (mut client_w, mut server_r) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (log_req, unparsed_req) = (Arc::clone(&log_a), Arc::clone(&unparsed_a));
            let (log_rep, unparsed_rep) = (Arc::clone(&log_a), Arc::clone(&unparsed_a));
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut client) {
                    // Logged before it goes on, so it is logged before its reply comes.
                    match parse_op_msg(&msg) {
                        Some((request_id, _, body, sequences)) => {
                            let (command, target) = body
                                .iter()
                                .next()
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .unwrap_or_default();
                            let db = body.get_str("$db").unwrap_or_default().to_string();
                            let mut l = log_req.lock().unwrap();
                            l.exchanges.push(Exchange {
                                command,
                                target,
                                db,
                                body,
                                sequences,
                                reply: None,
                            });
                            let i = l.exchanges.len() - 1;
                            l.pending.insert((conn, request_id), i);
                        }
                        None => {
                            unparsed_req.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if server.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut server_r) {
                    match parse_op_msg(&msg) {
                        Some((_, response_to, body, _)) => {
                            let mut l = log_rep.lock().unwrap();
                            if let Some(i) = l.pending.remove(&(conn, response_to)) {
                                l.exchanges[i].reply = Some(body);
                            }
                        }
                        None => {
                            unparsed_rep.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if client_w.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = client_w.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    WireLog {
        port,
        log,
        unparsed,
    }
}
