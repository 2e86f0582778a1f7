//! A loopback proxy in front of the real server that holds chosen replies: the fault injection
//! of the open-loop and compare tests. It parses the wire protocol's message frames only.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A proxy that holds the reply to every `every`-th insert for `hold` (never, with 0).
pub(crate) struct Proxy {
    pub port: u16,
    pub inserts: Arc<AtomicU64>,
    pub held: Arc<AtomicU64>,
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

/// An OP_MSG whose body's first key is `insert`: header (16), flags (4), kind 0 (1), the
/// document's length (4), the element's type (1), then its key.
fn is_insert(msg: &[u8]) -> bool {
    msg.len() > 33
        && i32::from_le_bytes([msg[12], msg[13], msg[14], msg[15]]) == 2013
        && msg[20] == 0
        && &msg[26..33] == b"insert\0"
}

pub(crate) fn start_proxy(upstream_port: u16, every: u64, hold: Duration) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let inserts = Arc::new(AtomicU64::new(0));
    let held = Arc::new(AtomicU64::new(0));
    let (count, holds) = (Arc::clone(&inserts), Arc::clone(&held));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
                return;
            };
            let (mut client_w, mut server_r) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let hold_next = Arc::new(AtomicBool::new(false));
            let (hold_set, count, holds) = (
                Arc::clone(&hold_next),
                Arc::clone(&count),
                Arc::clone(&holds),
            );
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut client) {
                    let n = if is_insert(&msg) {
                        count.fetch_add(1, Ordering::SeqCst) + 1
                    } else {
                        0
                    };
                    if n > 0 && every > 0 && n % every == 0 {
                        holds.fetch_add(1, Ordering::SeqCst);
                        // Set before the request goes on, so it is set before its reply comes.
                        hold_set.store(true, Ordering::SeqCst);
                    }
                    if server.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut server_r) {
                    if hold_next.swap(false, Ordering::SeqCst) {
                        std::thread::sleep(hold);
                    }
                    if client_w.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = client_w.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    Proxy {
        port,
        inserts,
        held,
    }
}

pub(crate) fn port_of(uri: &str) -> u16 {
    let host = uri
        .trim_start_matches("mongodb://")
        .split(['/', '?'])
        .next()
        .unwrap();
    host.rsplit(':').next().unwrap().parse().unwrap()
}

/// A loopback proxy that forwards to the server until `cut` is called, then closes every
/// connection and refuses new ones: the server gone away, as the client sees it.
pub(crate) struct Cuttable {
    pub port: u16,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Cuttable {
    pub(crate) fn start(upstream: u16) -> Cuttable {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (up2, open2) = (std::sync::Arc::clone(&up), std::sync::Arc::clone(&open));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if !up2.load(Ordering::SeqCst) {
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                {
                    let mut o = open2.lock().unwrap();
                    o.push(client.try_clone().unwrap());
                    o.push(server.try_clone().unwrap());
                }
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Cuttable { port, up, open }
    }

    pub(crate) fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// A loopback proxy whose replies take the Universal Scalability Law's time: a request that
/// arrives with N requests in flight (itself included) is answered no sooner than
/// R(N) = (1 + sigma (N - 1) + kappa N (N - 1)) / lambda seconds after it arrived, so a closed
/// loop of N users gets X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)). The driver's
/// monitoring (`hello`, `isMaster`, and the replies the server streams to it) passes untimed
/// and uncounted.
pub(crate) struct UslProxy {
    pub port: u16,
}

/// An OP_MSG whose body's first key is one of the monitoring commands.
fn is_monitoring(msg: &[u8]) -> bool {
    let key = |k: &[u8]| msg.len() > 26 + k.len() && &msg[26..26 + k.len()] == k;
    i32::from_le_bytes([msg[12], msg[13], msg[14], msg[15]]) == 2013
        && msg[20] == 0
        && (key(b"hello\0") || key(b"isMaster\0") || key(b"ismaster\0"))
}

pub(crate) fn start_usl_proxy(upstream_port: u16, lambda: f64, sigma: f64, kappa: f64) -> UslProxy {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let in_flight = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream_port)) else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (mut client_w, mut server_r) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            // Per request, in order: when its reply may leave (None: untimed).
            let (due_tx, due_rx) = std::sync::mpsc::channel::<Option<std::time::Instant>>();
            let (count_in, count_out) = (Arc::clone(&in_flight), Arc::clone(&in_flight));
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut client) {
                    let due = (!is_monitoring(&msg)).then(|| {
                        let n = (count_in.fetch_add(1, Ordering::SeqCst) + 1) as f64;
                        let r = (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)) / lambda;
                        std::time::Instant::now() + Duration::from_secs_f64(r)
                    });
                    if due_tx.send(due).is_err() || server.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                while let Some(msg) = read_message(&mut server_r) {
                    // A request's time is queued before the request goes on, so it is here
                    // before its reply. A reply with none queued is one the server streams
                    // (the driver's awaitable `hello`): it goes on at once, never waiting.
                    if let Ok(Some(due)) = due_rx.try_recv() {
                        let now = std::time::Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                        count_out.fetch_sub(1, Ordering::SeqCst);
                    }
                    if client_w.write_all(&msg).is_err() {
                        return;
                    }
                }
                let _ = client_w.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    UslProxy { port }
}
