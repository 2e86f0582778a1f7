//! A scripted replica set on loopback, for the live tests of the per-member sampler: no set of
//! several members can run here, so N ports (one per member) answer the driver's topology and
//! monitoring commands (`hello`, `isMaster`, `serverStatus`, `replSetGetStatus`) from a script
//! the test changes while it runs, and pass every other command to the one real server, whose
//! reply goes back unchanged. A write sent to a member that is not the primary of the moment is
//! refused as a real secondary refuses it. Blocking std TCP, a thread per connection, frames
//! read by their 4-byte little-endian length, as in `proxy.rs`.
//!
//! ```ignore
//! let set = ScriptedSet::start(3, "rs0", common::proxy::port_of(&server.uri));
//! // ... start the tool with set.uri() ...
//! set.change(|s| {
//!     s.primary = Some(1);
//!     s.members[2].lag_s = 30.0;
//!     s.members[0].ops_per_s = [100.0, 0.0, 0.0, 0.0, 0.0, 10.0];
//! });
//! assert!(set.answered(2).0 > 0);
//! ```
//!
//! A sharded cluster is scripted sets behind a `ScriptedRouter`: one more port that answers as
//! a `mongos` (`hello` with `msg: "isdbgrid"`, `listShards` naming each set's members,
//! `serverStatus`, and `find` on `config.changelog` from the chunk migrations the test records)
//! and passes every other command to the real server, so the workload runs through it.
//!
//! ```ignore
//! let port = common::proxy::port_of(&server.uri);
//! let (a, b) = (ScriptedSet::start(3, "rsA", port), ScriptedSet::start(3, "rsB", port));
//! let router = ScriptedRouter::start(vec![("shA".into(), &a), ("shB".into(), &b)], port);
//! // ... start the tool with router.uri() ...
//! let at_ms = router.add_migration("db.orders", "shA", "shB");
//! ```
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime, Document, Timestamp};

/// The opcode of a legacy reply (to an OP_QUERY).
const OP_REPLY: i32 = 1;
/// The opcode of a legacy query: the old drivers' handshake.
const OP_QUERY: i32 = 2004;
/// The opcode of every modern request and reply.
const OP_MSG: i32 = 2013;
/// OP_MSG flag: a CRC-32C checksum ends the message.
const CHECKSUM_PRESENT: u32 = 1 << 0;
/// OP_MSG flag: the sender expects no reply.
const MORE_TO_COME: u32 = 1 << 1;
/// The largest frame a connection reads; a longer one closes it (as a malformed frame does).
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// The keys of `opcounters` and `opcountersRepl`, in the order of the script's rate arrays.
const OPCOUNTER_KEYS: [&str; 6] = ["insert", "query", "update", "delete", "getmore", "command"];
/// The commands a member that is not the primary refuses rather than forwards.
const WRITE_COMMANDS: [&str; 4] = ["insert", "update", "delete", "findAndModify"];

/// What the test says about one member; changed through `ScriptedSet::change`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemberScript {
    /// In the set's config: false is a removed member (its hello says it has no valid config,
    /// the others' host lists and `replSetGetStatus` omit it).
    pub present: bool,
    /// Unreachable: every connection is closed at once, the open ones included (at once on the
    /// change, else on their next message); the others report it `(not reachable/healthy)`.
    pub down: bool,
    /// How many seconds its optime is behind now. The primary's optime is now whatever this is.
    pub lag_s: f64,
    /// The rates `opcounters` grow at: insert, query, update, delete, getmore, command.
    pub ops_per_s: [f64; 6],
    /// The rates `opcountersRepl` grow at, in the same order.
    pub repl_per_s: [f64; 6],
    /// `replSetGetStatus` is answered Unauthorized (code 13), as for a user without the
    /// clusterMonitor role.
    pub refuse_status: bool,
}

impl MemberScript {
    /// A member in the config, reachable, without lag, whose counters stand still.
    fn new() -> MemberScript {
        MemberScript {
            present: true,
            down: false,
            lag_s: 0.0,
            ops_per_s: [0.0; 6],
            repl_per_s: [0.0; 6],
            refuse_status: false,
        }
    }
}

/// The script shared by the members' threads and the test. `primary` and `members` are the
/// test's to change (inside `ScriptedSet::change`); the rest follows from them.
#[derive(Debug)]
pub(crate) struct SetState {
    /// The member that is primary now, or none (an index past the members or a removed member
    /// counts as none).
    pub primary: Option<usize>,
    /// One script per member, in the order of `ScriptedSet::hosts` (keep its length).
    pub members: Vec<MemberScript>,
    /// The election term: bumped each time a member becomes primary.
    term: i64,
    /// The config's version: bumped each time a member's `present` changes.
    set_version: i32,
    /// When the current primary was elected.
    elected_at: DateTime,
    /// The instant the counts below were integrated to.
    counted_at: Instant,
    /// Per member, the `opcounters` reached at `counted_at` (fractional).
    ops: Vec<[f64; 6]>,
    /// Per member, the `opcountersRepl` reached at `counted_at`.
    repl: Vec<[f64; 6]>,
    /// The majority commit point (ms since the epoch): it never goes back, and stands still
    /// while no majority of the members is reachable.
    commit_ms: i64,
}

impl SetState {
    /// `n` members, member 0 primary in term 1.
    fn new(n: usize) -> SetState {
        let now = DateTime::now();
        SetState {
            primary: Some(0),
            members: vec![MemberScript::new(); n],
            term: 1,
            set_version: 1,
            elected_at: now,
            counted_at: Instant::now(),
            ops: vec![[0.0; 6]; n],
            repl: vec![[0.0; 6]; n],
            commit_ms: now.timestamp_millis(),
        }
    }

    /// The election term now.
    pub(crate) fn term(&self) -> i64 {
        self.term
    }

    /// The config's version now.
    pub(crate) fn set_version(&self) -> i32 {
        self.set_version
    }

    /// Whether member `i` is in the config.
    fn present(&self, i: usize) -> bool {
        self.members.get(i).is_some_and(|m| m.present)
    }

    /// Whether member `i` is unreachable.
    fn down(&self, i: usize) -> bool {
        self.members.get(i).is_some_and(|m| m.down)
    }

    /// The primary, if it is a member in the config.
    fn primary_now(&self) -> Option<usize> {
        self.primary.filter(|&p| self.present(p))
    }

    /// Whether member `i` is the primary now.
    fn is_primary(&self, i: usize) -> bool {
        self.primary_now() == Some(i)
    }

    /// Member `i`'s optime in ms since the epoch: now on the primary, `lag_s` behind elsewhere.
    fn optime_ms(&self, i: usize, now_ms: i64) -> i64 {
        let lag_s = match self.members.get(i) {
            Some(m) if !self.is_primary(i) && m.lag_s > 0.0 => m.lag_s,
            _ => 0.0,
        };
        now_ms - (lag_s * 1000.0).round() as i64
    }

    /// The majority commit point at `now_ms`: the optime a majority of the members in the
    /// config have reached, counting only the reachable ones; kept where it was when fewer
    /// than a majority are reachable, and never moved back.
    fn commit_ms(&mut self, now_ms: i64) -> i64 {
        let n = (0..self.members.len()).filter(|&i| self.present(i)).count();
        let majority = n / 2 + 1;
        let mut reached: Vec<i64> = (0..self.members.len())
            .filter(|&i| self.present(i) && !self.down(i))
            .map(|i| self.optime_ms(i, now_ms))
            .collect();
        reached.sort_unstable_by(|a, b| b.cmp(a));
        if let Some(&at) = reached.get(majority - 1) {
            self.commit_ms = self.commit_ms.max(at);
        }
        self.commit_ms
    }

    /// Adds to the counts what the rates gave since `counted_at`, so a rate changed from now
    /// on leaves the counts reached so far as they are.
    fn integrate(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.counted_at).as_secs_f64();
        let n = self.members.len();
        self.ops.resize(n.max(self.ops.len()), [0.0; 6]);
        self.repl.resize(n.max(self.repl.len()), [0.0; 6]);
        for (i, m) in self.members.iter().enumerate() {
            for k in 0..6 {
                self.ops[i][k] += m.ops_per_s[k].max(0.0) * dt;
                self.repl[i][k] += m.repl_per_s[k].max(0.0) * dt;
            }
        }
        self.counted_at = now;
    }

    /// Member `i`'s `opcounters` and `opcountersRepl` at `now` (whole counts).
    fn counters(&self, i: usize, now: Instant) -> ([i64; 6], [i64; 6]) {
        let dt = now.saturating_duration_since(self.counted_at).as_secs_f64();
        let mut ops = [0i64; 6];
        let mut repl = [0i64; 6];
        if let Some(m) = self.members.get(i) {
            for k in 0..6 {
                let base_ops = self.ops.get(i).map_or(0.0, |c| c[k]);
                let base_repl = self.repl.get(i).map_or(0.0, |c| c[k]);
                ops[k] = (base_ops + m.ops_per_s[k].max(0.0) * dt).floor() as i64;
                repl[k] = (base_repl + m.repl_per_s[k].max(0.0) * dt).floor() as i64;
            }
        }
        (ops, repl)
    }
}

/// What one port's connections did (a member's, or the router's), for `serverStatus` and
/// `answered`.
#[derive(Default)]
struct PortStats {
    /// Connections open now.
    current: AtomicI64,
    /// Connections accepted and served since the start.
    total_created: AtomicU64,
    /// Bytes read from clients.
    bytes_in: AtomicU64,
    /// Bytes written to clients.
    bytes_out: AtomicU64,
    /// Messages read from clients.
    requests: AtomicU64,
    /// `serverStatus` commands answered.
    status_answered: AtomicU64,
    /// `replSetGetStatus` commands answered (refusals included).
    rs_status_answered: AtomicU64,
    /// The last connection id given (the hello's `connectionId`).
    last_connection_id: AtomicI64,
    /// The connections open now, by id, so a member going down can close them.
    open: Mutex<HashMap<i64, TcpStream>>,
}

impl PortStats {
    /// Closes every open connection of this port (their threads then end).
    fn close_all(&self) {
        for s in lock(&self.open).values() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// serverStatus's `connections`: open now, a fixed 800 more available, accepted since the
    /// start.
    fn connections(&self) -> Document {
        doc! {
            "current": self.current.load(Ordering::SeqCst) as i32,
            "available": 800i32,
            "totalCreated": self.total_created.load(Ordering::SeqCst) as i32,
        }
    }

    /// serverStatus's `network`: bytes read and written, messages read (Int64, as servers
    /// send them).
    fn network(&self) -> Document {
        let count = |c: &AtomicU64| Bson::Int64(c.load(Ordering::SeqCst) as i64);
        doc! {
            "bytesIn": count(&self.bytes_in),
            "bytesOut": count(&self.bytes_out),
            "numRequests": count(&self.requests),
        }
    }
}

/// One loopback port of a scripted deployment, as its accept loop and its connections' threads
/// see it: a member of a `ScriptedSet` or a `ScriptedRouter`.
trait Endpoint: Send + Sync + 'static {
    /// Its connections' counts.
    fn stats(&self) -> &PortStats;
    /// The deployment was dropped: the listener and every connection end.
    fn closed(&self) -> bool;
    /// Unreachable now: a new connection is closed at once, an open one at its next message.
    fn down(&self) -> bool;
    /// The reply to one message read on connection `connection_id`, None when none is to be
    /// sent (moreToCome); Err closes the connection (a malformed message, an opcode not
    /// handled, the real server unreachable). `upstream` is the connection's own to the real
    /// server, opened on first use.
    fn answer(
        &self,
        connection_id: i64,
        msg: &[u8],
        upstream: &mut Option<TcpStream>,
    ) -> Result<Option<Vec<u8>>, ()>;
}

/// Member `member` of a scripted set, as an endpoint.
struct MemberPort {
    shared: Arc<Shared>,
    member: usize,
}

impl Endpoint for MemberPort {
    fn stats(&self) -> &PortStats {
        &self.shared.members[self.member]
    }

    fn closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    fn down(&self) -> bool {
        lock(&self.shared.state).down(self.member)
    }

    fn answer(
        &self,
        connection_id: i64,
        msg: &[u8],
        upstream: &mut Option<TcpStream>,
    ) -> Result<Option<Vec<u8>>, ()> {
        respond(&self.shared, self.member, connection_id, msg, upstream)
    }
}

/// What the members' threads share with the test.
struct Shared {
    hosts: Vec<String>,
    set_name: String,
    upstream_port: u16,
    started: Instant,
    state: Mutex<SetState>,
    members: Vec<PortStats>,
    /// Set when the set is dropped: listeners and connections end.
    closed: AtomicBool,
}

/// A scripted replica set of `hosts.len()` members on loopback (see the module's comment).
/// Dropping it closes its ports and connections.
pub(crate) struct ScriptedSet {
    /// The members' addresses, `127.0.0.1:PORT`, member `i` at `hosts[i]`.
    pub hosts: Vec<String>,
    /// The set's name (`setName`, `replicaSet=`).
    pub set_name: String,
    shared: Arc<Shared>,
}

impl ScriptedSet {
    /// Starts n members (member 0 primary, all present, zero lag, zero rates) passing data
    /// commands to the real server on `upstream_port`.
    pub(crate) fn start(n: usize, set_name: &str, upstream_port: u16) -> ScriptedSet {
        assert!(n > 0, "a replica set has a member at least");
        let listeners: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a loopback port"))
            .collect();
        let hosts: Vec<String> = listeners
            .iter()
            .map(|l| {
                format!(
                    "127.0.0.1:{}",
                    l.local_addr().expect("local address").port()
                )
            })
            .collect();
        let shared = Arc::new(Shared {
            hosts: hosts.clone(),
            set_name: set_name.to_string(),
            upstream_port,
            started: Instant::now(),
            state: Mutex::new(SetState::new(n)),
            members: (0..n).map(|_| PortStats::default()).collect(),
            closed: AtomicBool::new(false),
        });
        for (member, listener) in listeners.into_iter().enumerate() {
            let port = Arc::new(MemberPort {
                shared: Arc::clone(&shared),
                member,
            });
            let name = format!("replset-member-{member}");
            std::thread::spawn(move || accept_loop(port, listener, name));
        }
        ScriptedSet {
            hosts,
            set_name: set_name.to_string(),
            shared,
        }
    }

    /// mongodb://h0,h1,h2/?replicaSet=NAME&heartbeatFrequencyMS=500
    pub(crate) fn uri(&self) -> String {
        format!(
            "mongodb://{}/?replicaSet={}&heartbeatFrequencyMS=500",
            self.hosts.join(","),
            self.set_name
        )
    }

    /// Changes the script; returns the closure's value. The counters stay continuous: the
    /// counts reached under the old rates are kept and the new rates count from now. A new
    /// primary (one that was not primary just before) bumps the term and so the `electionId`;
    /// a change of any member's `present` bumps `setVersion`; a member made `down` has its
    /// open connections closed at once.
    pub(crate) fn change<R>(&self, f: impl FnOnce(&mut SetState) -> R) -> R {
        let mut state = lock(&self.shared.state);
        state.integrate(Instant::now());
        let primary_before = state.primary_now();
        let present_before: Vec<bool> = state.members.iter().map(|m| m.present).collect();
        let down_before: Vec<bool> = state.members.iter().map(|m| m.down).collect();
        let value = f(&mut state);
        // Sizes the counts to the members, should the closure have changed their number.
        state.integrate(Instant::now());
        let present_after: Vec<bool> = state.members.iter().map(|m| m.present).collect();
        if present_after != present_before {
            state.set_version += 1;
        }
        if state.primary_now().is_some() && state.primary_now() != primary_before {
            state.term += 1;
            state.elected_at = DateTime::now();
        }
        let gone_down: Vec<usize> = (0..state.members.len())
            .filter(|&i| state.down(i) && !down_before.get(i).copied().unwrap_or(false))
            .collect();
        drop(state);
        for i in gone_down {
            if let Some(stats) = self.shared.members.get(i) {
                stats.close_all();
            }
        }
        value
    }

    /// How many serverStatus and replSetGetStatus commands each member answered (for the test
    /// to see each member was sampled); a refused `replSetGetStatus` counts as answered.
    pub(crate) fn answered(&self, member: usize) -> (u64, u64) {
        let stats = &self.shared.members[member];
        (
            stats.status_answered.load(Ordering::SeqCst),
            stats.rs_status_answered.load(Ordering::SeqCst),
        )
    }
}

impl Drop for ScriptedSet {
    /// Ends the listeners (woken by a connection of our own) and closes every connection.
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        for stats in &self.shared.members {
            stats.close_all();
        }
        for host in &self.hosts {
            if let Ok(addr) = host.parse::<std::net::SocketAddr>() {
                let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
            }
        }
    }
}

/// Locks a mutex, taking it over if a test's closure panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Accepts an endpoint's connections until its deployment is dropped, each served on a thread
/// of its own named `name`; an endpoint that is down closes each at once.
fn accept_loop<E: Endpoint>(endpoint: Arc<E>, listener: TcpListener, name: String) {
    for client in listener.incoming() {
        if endpoint.closed() {
            return;
        }
        let Ok(client) = client else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if endpoint.down() {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let endpoint = Arc::clone(&endpoint);
        let _ = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || serve(&*endpoint, client));
    }
}

/// A connection's place in its port's counts, given back when it ends.
struct Registration<'a> {
    stats: &'a PortStats,
    id: i64,
}

impl<'a> Registration<'a> {
    /// Counts the connection as open and keeps a handle to it for `close_all`.
    fn new(stats: &'a PortStats, client: &TcpStream) -> Registration<'a> {
        let id = stats.last_connection_id.fetch_add(1, Ordering::SeqCst) + 1;
        stats.current.fetch_add(1, Ordering::SeqCst);
        stats.total_created.fetch_add(1, Ordering::SeqCst);
        if let Ok(handle) = client.try_clone() {
            lock(&stats.open).insert(id, handle);
        }
        Registration { stats, id }
    }
}

impl Drop for Registration<'_> {
    /// Counts the connection as closed.
    fn drop(&mut self) {
        lock(&self.stats.open).remove(&self.id);
        self.stats.current.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves one client connection of an endpoint until it closes, a frame is malformed, the
/// endpoint goes down or its deployment is dropped.
fn serve<E: Endpoint>(endpoint: &E, mut client: TcpStream) {
    let stats = endpoint.stats();
    let registration = Registration::new(stats, &client);
    let _ = client.set_nodelay(true);
    let mut upstream: Option<TcpStream> = None;
    while let Some(msg) = read_message(&mut client) {
        stats.bytes_in.fetch_add(msg.len() as u64, Ordering::SeqCst);
        stats.requests.fetch_add(1, Ordering::SeqCst);
        if endpoint.closed() || endpoint.down() {
            break;
        }
        let Ok(reply) = endpoint.answer(registration.id, &msg, &mut upstream) else {
            break;
        };
        if let Some(reply) = reply {
            if client.write_all(&reply).is_err() {
                break;
            }
            stats
                .bytes_out
                .fetch_add(reply.len() as u64, Ordering::SeqCst);
        }
    }
    if let Some(up) = upstream {
        let _ = up.shutdown(Shutdown::Both);
    }
    let _ = client.shutdown(Shutdown::Both);
}

/// One wire message: its 4-byte little-endian length, then the rest; None when the stream
/// ends or the length cannot be a message's (shorter than a header, longer than `MAX_FRAME`).
fn read_message(from: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    from.read_exact(&mut len).ok()?;
    let n = i32::from_le_bytes(len);
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| (16..=MAX_FRAME).contains(&n))?;
    let mut msg = len.to_vec();
    msg.resize(n, 0);
    from.read_exact(&mut msg[4..]).ok()?;
    Some(msg)
}

/// The little-endian i32 at `at`, if the bytes are there.
fn i32_at(bytes: &[u8], at: usize) -> Option<i32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The BSON document that starts at `at`: its bytes, by its own length, checked to fit and to
/// end in a zero byte.
fn document_at(bytes: &[u8], at: usize) -> Option<&[u8]> {
    let len = usize::try_from(i32_at(bytes, at)?)
        .ok()
        .filter(|&n| n >= 5)?;
    let doc = bytes.get(at..at.checked_add(len)?)?;
    (doc[len - 1] == 0).then_some(doc)
}

/// A document's first element: its type byte, its key, and where its value starts.
fn first_element(doc: &[u8]) -> Option<(u8, &str, usize)> {
    let kind = *doc.get(4)?;
    if kind == 0 {
        return None;
    }
    let key_len = doc.get(5..)?.iter().position(|&b| b == 0)?;
    let key = std::str::from_utf8(&doc[5..5 + key_len]).ok()?;
    Some((kind, key, 5 + key_len + 1))
}

/// A request read off a connection: what the responder needs of it.
struct Request<'a> {
    /// OP_MSG or OP_QUERY.
    op_code: i32,
    /// The header's requestID, the reply's responseTo.
    request_id: i32,
    /// OP_MSG's moreToCome: no reply is expected.
    more_to_come: bool,
    /// The command document's bytes (an OP_QUERY's `$query` unwrapped).
    command: &'a [u8],
    /// The command's name: the document's first key.
    name: &'a str,
}

impl<'a> Request<'a> {
    /// Parses an OP_MSG or OP_QUERY; None for any other opcode or a malformed message.
    fn parse(msg: &'a [u8]) -> Option<Request<'a>> {
        let request_id = i32_at(msg, 4)?;
        let op_code = i32_at(msg, 12)?;
        let (command, more_to_come) = match op_code {
            OP_MSG => {
                let flags = i32_at(msg, 16)? as u32;
                let end = if flags & CHECKSUM_PRESENT != 0 {
                    msg.len().checked_sub(4)?
                } else {
                    msg.len()
                };
                (op_msg_body(msg.get(..end)?)?, flags & MORE_TO_COME != 0)
            }
            OP_QUERY => (op_query_command(msg)?, false),
            _ => return None,
        };
        let (_, name, _) = first_element(command)?;
        Some(Request {
            op_code,
            request_id,
            more_to_come,
            command,
            name,
        })
    }

    /// The command as a document.
    fn document(&self) -> Option<Document> {
        Document::from_reader(&mut &self.command[..]).ok()
    }

    /// Whether a hello asks `helloOk: true` (the driver says `hello` from then on, if the reply
    /// says `helloOk` too); None when the command is no document.
    fn asks_hello_ok(&self) -> Option<bool> {
        let command = self.document()?;
        Some(matches!(command.get("helloOk"), Some(Bson::Boolean(true))))
    }

    /// The reply to this request carrying `doc`: an OP_MSG to an OP_MSG, an OP_REPLY to an
    /// OP_QUERY.
    fn reply(&self, doc: &Document) -> Option<Vec<u8>> {
        let mut body = Vec::new();
        doc.to_writer(&mut body).ok()?;
        let mut prefix = Vec::new();
        let op_code = if self.op_code == OP_MSG {
            prefix.extend_from_slice(&0u32.to_le_bytes()); // flagBits
            prefix.push(0); // section kind 0
            OP_MSG
        } else {
            prefix.extend_from_slice(&0i32.to_le_bytes()); // responseFlags
            prefix.extend_from_slice(&0i64.to_le_bytes()); // cursorID
            prefix.extend_from_slice(&0i32.to_le_bytes()); // startingFrom
            prefix.extend_from_slice(&1i32.to_le_bytes()); // numberReturned
            OP_REPLY
        };
        let len = i32::try_from(16 + prefix.len() + body.len()).ok()?;
        static NEXT_ID: AtomicI32 = AtomicI32::new(1);
        let mut out = Vec::with_capacity(len as usize);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&NEXT_ID.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        out.extend_from_slice(&self.request_id.to_le_bytes());
        out.extend_from_slice(&op_code.to_le_bytes());
        out.extend_from_slice(&prefix);
        out.extend_from_slice(&body);
        Some(out)
    }
}

/// An OP_MSG's body: the one kind-0 section's document, the sections (kind 0, and kind 1
/// document sequences, skipped) checked to fill the message exactly.
fn op_msg_body(msg: &[u8]) -> Option<&[u8]> {
    let mut at = 20;
    let mut body = None;
    while at < msg.len() {
        let kind = msg[at];
        at += 1;
        match kind {
            0 if body.is_none() => {
                let doc = document_at(msg, at)?;
                at += doc.len();
                body = Some(doc);
            }
            1 => {
                let size = usize::try_from(i32_at(msg, at)?).ok().filter(|&s| s >= 4)?;
                at = at.checked_add(size).filter(|&end| end <= msg.len())?;
            }
            _ => return None,
        }
    }
    body
}

/// An OP_QUERY's command: its query document (after flags, fullCollectionName, numberToSkip
/// and numberToReturn), or the document its `$query` (or `query`) wraps.
fn op_query_command(msg: &[u8]) -> Option<&[u8]> {
    let name_len = msg.get(20..)?.iter().position(|&b| b == 0)?;
    let query = document_at(msg, 20 + name_len + 1 + 8)?;
    match first_element(query)? {
        (3, "$query" | "query", value) => document_at(query, value),
        _ => Some(query),
    }
}

/// Member `member`'s reply to one request (see `Endpoint::answer`).
fn respond(
    shared: &Shared,
    member: usize,
    connection_id: i64,
    msg: &[u8],
    upstream: &mut Option<TcpStream>,
) -> Result<Option<Vec<u8>>, ()> {
    let request = Request::parse(msg).ok_or(())?;
    let stats = &shared.members[member];
    let answer = match request.name {
        "hello" | "isMaster" | "ismaster" => {
            let hello_ok = request.asks_hello_ok().ok_or(())?;
            Some(shared.hello(member, connection_id, request.name, hello_ok))
        }
        "serverStatus" => {
            stats.status_answered.fetch_add(1, Ordering::SeqCst);
            Some(shared.server_status(member))
        }
        "replSetGetStatus" => {
            stats.rs_status_answered.fetch_add(1, Ordering::SeqCst);
            Some(shared.repl_set_get_status(member))
        }
        name if WRITE_COMMANDS.contains(&name) && !lock(&shared.state).is_primary(member) => {
            Some(doc! {
                "ok": 0.0,
                "errmsg": "not primary",
                "code": 10107,
                "codeName": "NotWritablePrimary",
            })
        }
        _ => None,
    };
    answer_or_forward(&request, msg, answer, shared.upstream_port, upstream)
}

/// Sends `answer` back to the sender of `request` (nothing under moreToCome), or, when there
/// is none, relays the message `msg` to the real server on `upstream_port` (`forward`).
fn answer_or_forward(
    request: &Request<'_>,
    msg: &[u8],
    answer: Option<Document>,
    upstream_port: u16,
    upstream: &mut Option<TcpStream>,
) -> Result<Option<Vec<u8>>, ()> {
    match answer {
        Some(_) if request.more_to_come => Ok(None),
        Some(doc) => request.reply(&doc).map(Some).ok_or(()),
        None => forward(upstream_port, msg, request.more_to_come, upstream),
    }
}

/// Sends `msg` unchanged to the real server on this connection's own upstream connection
/// (opened on first use) and returns its reply unchanged; none when moreToCome says none comes.
fn forward(
    port: u16,
    msg: &[u8],
    more_to_come: bool,
    upstream: &mut Option<TcpStream>,
) -> Result<Option<Vec<u8>>, ()> {
    if upstream.is_none() {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(drop)?;
        let _ = stream.set_nodelay(true);
        *upstream = Some(stream);
    }
    let Some(up) = upstream.as_mut() else {
        return Err(());
    };
    up.write_all(msg).map_err(drop)?;
    if more_to_come {
        return Ok(None);
    }
    read_message(up).map(Some).ok_or(())
}

/// An optime document: `ts` the whole second of `ms` (increment 1), `t` the term.
fn optime(ms: i64, term: i64) -> Document {
    doc! { "ts": timestamp(ms), "t": term }
}

/// The Timestamp of the whole second `ms` falls in, increment 1.
fn timestamp(ms: i64) -> Timestamp {
    Timestamp {
        time: u32::try_from(ms.max(0) / 1000).unwrap_or(u32::MAX),
        increment: 1,
    }
}

/// The electionId of `term`, as real servers make it: 0x7fffffff, then the term big-endian,
/// so that a later term's is greater.
fn election_id(term: i64) -> ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
    bytes[4..].copy_from_slice(&term.to_be_bytes());
    ObjectId::from_bytes(bytes)
}

/// The key a hello spelled `spelling` gets its primary (writable) flag under from real servers:
/// `isWritablePrimary` to `hello`, `ismaster` to `isMaster` / `ismaster`.
fn primary_key(spelling: &str) -> &'static str {
    if spelling == "hello" {
        "isWritablePrimary"
    } else {
        "ismaster"
    }
}

/// The fields of a hello after the role's own, as a 6.0 server sends them: its limits, its
/// clock, the sessions' timeout (`sessions`; a member without a config has none), the
/// connection's id and the wire versions.
fn server_fields(d: &mut Document, now: DateTime, connection_id: i64, sessions: bool) {
    d.insert("maxBsonObjectSize", 16_777_216i32);
    d.insert("maxMessageSizeBytes", 48_000_000i32);
    d.insert("maxWriteBatchSize", 100_000i32);
    d.insert("localTime", now);
    if sessions {
        d.insert("logicalSessionTimeoutMinutes", 30i32);
    }
    d.insert("connectionId", connection_id as i32);
    d.insert("minWireVersion", 0i32);
    d.insert("maxWireVersion", 17i32);
}

/// `{insert, query, update, delete, getmore, command}` of whole counts, as Int64.
fn counters_doc(counts: [i64; 6]) -> Document {
    OPCOUNTER_KEYS
        .iter()
        .zip(counts)
        .map(|(k, n)| (k.to_string(), Bson::Int64(n)))
        .collect()
}

impl Shared {
    /// Seconds since the set started.
    fn uptime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Member `i`'s address.
    fn host(&self, i: usize) -> String {
        self.hosts.get(i).cloned().unwrap_or_default()
    }

    /// The addresses of the members in the config, in member order.
    fn present_hosts(&self, state: &SetState) -> Vec<String> {
        (0..self.hosts.len())
            .filter(|&i| state.present(i))
            .map(|i| self.host(i))
            .collect()
    }

    /// The replica-set fields of member `member`'s hello (and of its serverStatus `repl`):
    /// hosts, setName, setVersion, the primary flag under each key of `primary_keys`,
    /// secondary, primary, me, electionId (on the primary), lastWrite. For a member not in the
    /// config: no set at all, and `isreplicaset` with the info real servers give.
    fn repl_fields(
        &self,
        state: &mut SetState,
        member: usize,
        primary_keys: &[&str],
        now_ms: i64,
    ) -> Document {
        let mut d = Document::new();
        if !state.present(member) {
            for key in primary_keys {
                d.insert(*key, false);
            }
            d.insert("secondary", false);
            d.insert("isreplicaset", true);
            d.insert("info", "Does not have a valid replica set config");
            return d;
        }
        let is_primary = state.is_primary(member);
        d.insert("hosts", self.present_hosts(state));
        d.insert("setName", self.set_name.clone());
        d.insert("setVersion", state.set_version);
        for key in primary_keys {
            d.insert(*key, is_primary);
        }
        d.insert("secondary", !is_primary);
        if let Some(p) = state.primary_now() {
            d.insert("primary", self.host(p));
        }
        d.insert("me", self.host(member));
        if is_primary {
            d.insert("electionId", election_id(state.term));
        }
        let mine = state.optime_ms(member, now_ms);
        let commit = state.commit_ms(now_ms);
        d.insert(
            "lastWrite",
            doc! {
                "opTime": optime(mine, state.term),
                "lastWriteDate": DateTime::from_millis(mine),
                "majorityOpTime": optime(commit, state.term),
                "majorityWriteDate": DateTime::from_millis(commit),
            },
        );
        d
    }

    /// Member `member`'s reply to `hello` / `isMaster` / `ismaster` (the primary flag under the
    /// key that spelling gets from real servers: `isWritablePrimary` to hello, `ismaster` to
    /// the others). No `topologyVersion`, so the driver polls rather than streams.
    fn hello(&self, member: usize, connection_id: i64, spelling: &str, hello_ok: bool) -> Document {
        let mut state = lock(&self.state);
        let now = DateTime::now();
        let present = state.present(member);
        let key = primary_key(spelling);
        let mut d = self.repl_fields(&mut state, member, &[key], now.timestamp_millis());
        drop(state);
        server_fields(&mut d, now, connection_id, present);
        d.insert("readOnly", false);
        if hello_ok {
            d.insert("helloOk", true);
        }
        d.insert("ok", 1.0);
        d
    }

    /// Member `member`'s serverStatus: its scripted counters, its real connections and bytes,
    /// and its view of the set under `repl`.
    fn server_status(&self, member: usize) -> Document {
        let stats = &self.members[member];
        let mut state = lock(&self.state);
        let now = DateTime::now();
        let (ops, repl_ops) = state.counters(member, Instant::now());
        let repl = self.repl_fields(
            &mut state,
            member,
            &["ismaster", "isWritablePrimary"],
            now.timestamp_millis(),
        );
        drop(state);
        let uptime = self.uptime();
        doc! {
            "host": self.host(member),
            "version": "6.0.0",
            "process": "mongod",
            "pid": 4242i64 + member as i64,
            "uptime": uptime,
            "uptimeMillis": (uptime * 1000.0) as i64,
            "uptimeEstimate": uptime as i64,
            "localTime": now,
            "opcounters": counters_doc(ops),
            "opcountersRepl": counters_doc(repl_ops),
            "connections": stats.connections(),
            "network": stats.network(),
            "repl": repl,
            "ok": 1.0,
        }
    }

    /// Member `member`'s replSetGetStatus: refused when its script says so or it is not in the
    /// config, else the set as every member sees it, with `self` and the optimes its own.
    fn repl_set_get_status(&self, member: usize) -> Document {
        let mut state = lock(&self.state);
        if !state.present(member) {
            return doc! {
                "ok": 0.0,
                "errmsg": "Our replica set config is invalid or we are not a member of it",
                "code": 93,
                "codeName": "InvalidReplicaSetConfig",
            };
        }
        if state.members[member].refuse_status {
            return doc! {
                "ok": 0.0,
                "errmsg": "not authorized on admin to execute command { replSetGetStatus: 1, $db: \"admin\" }",
                "code": 13,
                "codeName": "Unauthorized",
            };
        }
        let now = DateTime::now();
        let now_ms = now.timestamp_millis();
        let term = state.term;
        let commit = state.commit_ms(now_ms);
        let mine = state.optime_ms(member, now_ms);
        let primary = state.primary_now();
        let uptime = self.uptime() as i32;
        let present: Vec<usize> = (0..self.hosts.len())
            .filter(|&i| state.present(i))
            .collect();
        let majority = (present.len() / 2 + 1) as i32;
        // A secondary syncs from the primary when there is a reachable one, else from none.
        let sync_source = |i: usize| match primary {
            Some(p) if p != i && !state.down(p) => (self.host(p), p as i32),
            _ => (String::new(), -1),
        };
        let members: Vec<Bson> = present
            .iter()
            .map(|&i| {
                let name = self.host(i);
                if i != member && state.down(i) {
                    return Bson::Document(doc! {
                        "_id": i as i32,
                        "name": name.clone(),
                        "health": 0.0,
                        "state": 8,
                        "stateStr": "(not reachable/healthy)",
                        "uptime": 0,
                        "optime": { "ts": Timestamp { time: 0, increment: 0 }, "t": -1i64 },
                        "optimeDurable": { "ts": Timestamp { time: 0, increment: 0 }, "t": -1i64 },
                        "optimeDate": DateTime::from_millis(0),
                        "optimeDurableDate": DateTime::from_millis(0),
                        "lastAppliedWallTime": DateTime::from_millis(0),
                        "lastDurableWallTime": DateTime::from_millis(0),
                        "lastHeartbeat": now,
                        "lastHeartbeatRecv": DateTime::from_millis(0),
                        "pingMs": 0i64,
                        "lastHeartbeatMessage": format!("Error connecting to {name} :: caused by :: Connection refused"),
                        "syncSourceHost": "",
                        "syncSourceId": -1,
                        "infoMessage": "",
                        "configVersion": -1,
                        "configTerm": -1i64,
                    });
                }
                let at = state.optime_ms(i, now_ms);
                let is_primary = primary == Some(i);
                let (source, source_id) = sync_source(i);
                let mut m = doc! {
                    "_id": i as i32,
                    "name": name,
                    "health": 1.0,
                    "state": if is_primary { 1 } else { 2 },
                    "stateStr": if is_primary { "PRIMARY" } else { "SECONDARY" },
                    "uptime": uptime,
                    "optime": optime(at, term),
                };
                if i != member {
                    m.insert("optimeDurable", optime(at, term));
                }
                m.insert("optimeDate", DateTime::from_millis(at));
                if i != member {
                    m.insert("optimeDurableDate", DateTime::from_millis(at));
                }
                m.insert("lastAppliedWallTime", DateTime::from_millis(at));
                m.insert("lastDurableWallTime", DateTime::from_millis(at));
                if i != member {
                    m.insert("lastHeartbeat", now);
                    m.insert("lastHeartbeatRecv", now);
                    m.insert("pingMs", 0i64);
                    m.insert("lastHeartbeatMessage", "");
                }
                m.insert("syncSourceHost", source);
                m.insert("syncSourceId", source_id);
                m.insert("infoMessage", "");
                if is_primary {
                    let elected = state.elected_at.timestamp_millis();
                    m.insert("electionTime", timestamp(elected));
                    m.insert("electionDate", DateTime::from_millis(elected));
                }
                m.insert("configVersion", state.set_version);
                m.insert("configTerm", term);
                if i == member {
                    m.insert("self", true);
                    m.insert("lastHeartbeatMessage", "");
                }
                Bson::Document(m)
            })
            .collect();
        let (source, source_id) = sync_source(member);
        doc! {
            "set": self.set_name.clone(),
            "date": now,
            "myState": if primary == Some(member) { 1 } else { 2 },
            "term": term,
            "syncSourceHost": source,
            "syncSourceId": source_id,
            "heartbeatIntervalMillis": 2000i64,
            "majorityVoteCount": majority,
            "writeMajorityCount": majority,
            "optimes": {
                "lastCommittedOpTime": optime(commit, term),
                "lastCommittedWallTime": DateTime::from_millis(commit),
                "readConcernMajorityOpTime": optime(commit, term),
                "readConcernMajorityWallTime": DateTime::from_millis(commit),
                "appliedOpTime": optime(mine, term),
                "durableOpTime": optime(mine, term),
                "lastAppliedWallTime": DateTime::from_millis(mine),
                "lastDurableWallTime": DateTime::from_millis(mine),
            },
            "members": members,
            "ok": 1.0,
        }
    }
}

/// What a changelog entry's `what` is for a committed chunk migration.
const MIGRATION_COMMIT: &str = "moveChunk.commit";

/// A scripted `mongos` on loopback in front of scripted sets, one per shard (see the module's
/// comment). It answers `hello` / `isMaster` as a 4.4+ mongos does (`msg: "isdbgrid"`, no
/// `topologyVersion`, so the driver polls), `listShards` with each set's members in the config
/// of the moment, `serverStatus` as a router's (no `repl`, counters standing still), and `find`
/// on `config.changelog` from the migrations `add_migration` recorded; every other command,
/// other `find`s included, goes to the real server unchanged. Dropping it closes its port and
/// connections; the sets are the test's and stay.
pub(crate) struct ScriptedRouter {
    /// Its address, `127.0.0.1:PORT`.
    pub host: String,
    shared: Arc<RouterShared>,
}

/// What the router's threads share with the test.
struct RouterShared {
    host: String,
    upstream_port: u16,
    started: Instant,
    /// The shards in `listShards` order: each one's name and the set behind it.
    shards: Vec<(String, Arc<Shared>)>,
    /// The changelog entries recorded, as `find` returns them, oldest first.
    changelog: Mutex<Vec<Document>>,
    /// The commands passed to the real server, by name, and how many of each.
    relayed: Mutex<HashMap<String, u64>>,
    stats: PortStats,
    /// Set when the router is dropped: its listener and connections end.
    closed: AtomicBool,
}

impl ScriptedRouter {
    /// Starts a router over `shards` (each shard's name and its set), passing data commands to
    /// the real server on `upstream_port`.
    pub(crate) fn start(shards: Vec<(String, &ScriptedSet)>, upstream_port: u16) -> ScriptedRouter {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let host = format!(
            "127.0.0.1:{}",
            listener.local_addr().expect("local address").port()
        );
        let shared = Arc::new(RouterShared {
            host: host.clone(),
            upstream_port,
            started: Instant::now(),
            shards: shards
                .into_iter()
                .map(|(name, set)| (name, Arc::clone(&set.shared)))
                .collect(),
            changelog: Mutex::new(Vec::new()),
            relayed: Mutex::new(HashMap::new()),
            stats: PortStats::default(),
            closed: AtomicBool::new(false),
        });
        let endpoint = Arc::clone(&shared);
        std::thread::spawn(move || accept_loop(endpoint, listener, "scripted-mongos".into()));
        ScriptedRouter { host, shared }
    }

    /// mongodb://HOST/
    pub(crate) fn uri(&self) -> String {
        format!("mongodb://{}/", self.host)
    }

    /// Records a chunk of `ns` moved from shard `from` to shard `to`, committed now: the
    /// `moveChunk.commit` entry the config server logs, as its donor's primary writes it.
    /// Returns its `time` (epoch milliseconds).
    ///
    /// No real changelog entry could be found to copy (tests/data/topology/README.md, "Not
    /// found"): the fields are those MongoDB's manual documents for `config.changelog` (`_id`
    /// of host, time and a counter; `server`, `clientAddr`, `time`, `what`, `ns`, `details`),
    /// and `details` holds what a `moveChunk.commit` records (the chunk's bounds, the donor and
    /// recipient shards, the cloning counts).
    pub(crate) fn add_migration(&self, ns: &str, from: &str, to: &str) -> u64 {
        let now = DateTime::now();
        let server = self.shared.donor(from);
        let mut log = lock(&self.shared.changelog);
        let id = format!(
            "{server}-{}-{}",
            now.try_to_rfc3339_string().unwrap_or_default(),
            log.len()
        );
        log.push(doc! {
            "_id": id,
            "server": server,
            "clientAddr": "",
            "time": now,
            "what": MIGRATION_COMMIT,
            "ns": ns,
            "details": {
                "min": { "_id": Bson::MinKey },
                "max": { "_id": 0 },
                "from": from,
                "to": to,
                "counts": {
                    "cloned": 0i64,
                    "clonedBytes": 0i64,
                    "catchup": 0i64,
                    "steady": 0i64,
                },
            },
        });
        u64::try_from(now.timestamp_millis()).unwrap_or(0)
    }

    /// How many `command`s (by name: `insert`, `find`, ...) the router passed to the real
    /// server so far; the workload's reach the real server only this way.
    pub(crate) fn relayed(&self, command: &str) -> u64 {
        lock(&self.shared.relayed)
            .get(command)
            .copied()
            .unwrap_or(0)
    }

    /// How many `serverStatus` commands the router answered.
    pub(crate) fn status_answered(&self) -> u64 {
        self.shared.stats.status_answered.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedRouter {
    /// Ends the listener (woken by a connection of our own) and closes every connection.
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.stats.close_all();
        if let Ok(addr) = self.host.parse::<std::net::SocketAddr>() {
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
        }
    }
}

impl Endpoint for RouterShared {
    fn stats(&self) -> &PortStats {
        &self.stats
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// A router is never down.
    fn down(&self) -> bool {
        false
    }

    fn answer(
        &self,
        connection_id: i64,
        msg: &[u8],
        upstream: &mut Option<TcpStream>,
    ) -> Result<Option<Vec<u8>>, ()> {
        let request = Request::parse(msg).ok_or(())?;
        let answer = match request.name {
            "hello" | "isMaster" | "ismaster" => {
                let hello_ok = request.asks_hello_ok().ok_or(())?;
                Some(self.hello(connection_id, request.name, hello_ok))
            }
            "listShards" => Some(self.list_shards()),
            "serverStatus" => {
                self.stats.status_answered.fetch_add(1, Ordering::SeqCst);
                Some(self.server_status())
            }
            "find" => self.changelog_find(&request.document().ok_or(())?),
            _ => None,
        };
        if answer.is_none() {
            *lock(&self.relayed)
                .entry(request.name.to_string())
                .or_insert(0) += 1;
        }
        answer_or_forward(&request, msg, answer, self.upstream_port, upstream)
    }
}

impl RouterShared {
    /// The host that logs a migration from shard `name`: its set's primary, else its first
    /// member; empty for a shard the router does not have.
    fn donor(&self, name: &str) -> String {
        let Some((_, set)) = self.shards.iter().find(|(n, _)| n == name) else {
            return String::new();
        };
        let primary = lock(&set.state).primary_now();
        set.host(primary.unwrap_or(0))
    }

    /// The reply to `hello` / `isMaster` / `ismaster`, the fields a real 4.4 mongos sends
    /// (tests/data/topology/mongos-ismaster-4.4.6.txt) with a 6.0 server's wire version: the
    /// writable flag under the key that spelling gets, `msg: "isdbgrid"`, the limits, and no
    /// `topologyVersion`.
    fn hello(&self, connection_id: i64, spelling: &str, hello_ok: bool) -> Document {
        let mut d = Document::new();
        d.insert(primary_key(spelling), true);
        d.insert("msg", "isdbgrid");
        server_fields(&mut d, DateTime::now(), connection_id, true);
        if hello_ok {
            d.insert("helloOk", true);
        }
        d.insert("ok", 1.0);
        d
    }

    /// `listShards`: each shard's name and its set's members in the config of the moment, in a
    /// host string as the config server keeps it (`SETNAME/h1,h2,h3`).
    fn list_shards(&self) -> Document {
        let shards: Vec<Bson> = self
            .shards
            .iter()
            .map(|(name, set)| {
                let hosts = set.present_hosts(&lock(&set.state));
                Bson::Document(doc! {
                    "_id": name.clone(),
                    "host": format!("{}/{}", set.set_name, hosts.join(",")),
                    "state": 1,
                })
            })
            .collect();
        doc! { "shards": shards, "ok": 1.0 }
    }

    /// A router's serverStatus: its own connections and bytes, its counters standing still
    /// (what it routes is counted by the members' scripts), no `repl`.
    fn server_status(&self) -> Document {
        let uptime = self.started.elapsed().as_secs_f64();
        doc! {
            "host": self.host.clone(),
            "version": "6.0.0",
            "process": "mongos",
            "uptime": uptime,
            "localTime": DateTime::now(),
            "opcounters": counters_doc([0; 6]),
            "connections": self.stats.connections(),
            "network": self.stats.network(),
            "ok": 1.0,
        }
    }

    /// The reply to a `find` on `config.changelog`: the recorded entries whose `what` is the
    /// filter's (when it names one) and whose `time` is after its `time.$gt` (when it has one),
    /// oldest first, at most `limit` of them, in one batch (cursor id 0). None for any other
    /// `find`, which goes to the real server.
    fn changelog_find(&self, command: &Document) -> Option<Document> {
        if command.get_str("find") != Ok("changelog") || command.get_str("$db") != Ok("config") {
            return None;
        }
        let filter = command.get_document("filter").ok();
        let what = filter.and_then(|f| f.get_str("what").ok());
        let after = filter
            .and_then(|f| f.get_document("time").ok())
            .and_then(|t| t.get_datetime("$gt").ok())
            .map(|d| d.timestamp_millis());
        let limit = match command.get("limit") {
            Some(Bson::Int32(n)) if *n > 0 => *n as usize,
            Some(Bson::Int64(n)) if *n > 0 => *n as usize,
            Some(Bson::Double(n)) if *n >= 1.0 => *n as usize,
            _ => usize::MAX,
        };
        let mut entries: Vec<Document> = lock(&self.changelog)
            .iter()
            .filter(|e| what.is_none_or(|w| e.get_str("what") == Ok(w)))
            .filter(|e| after.is_none_or(|a| entry_ms(e) > a))
            .cloned()
            .collect();
        entries.sort_by_key(entry_ms);
        entries.truncate(limit);
        Some(doc! {
            "cursor": {
                "firstBatch": entries,
                "id": 0i64,
                "ns": "config.changelog",
            },
            "ok": 1.0,
        })
    }
}

/// A changelog entry's `time` in epoch milliseconds (the earliest possible without one).
fn entry_ms(entry: &Document) -> i64 {
    entry
        .get_datetime("time")
        .map_or(i64::MIN, |d| d.timestamp_millis())
}
