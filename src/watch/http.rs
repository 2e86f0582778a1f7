//! The page's endpoint: tiny_http on a thread of its own; each event stream a thread that writes
//! the history, then each new event as it comes, flushed at once.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::events::{Ask, Setting};
use super::{lock, Page};
use crate::error::Error;

/// Most pages watching at once.
pub(super) const MAX_VIEWERS: usize = 16;
/// Largest request body read (tiny_http has read one this long before the request is handed
/// over, so no client can hold the endpoint by sending it slowly).
const MAX_BODY: u64 = 1024;
/// A comment down each stream this often, so a proxy or a browser keeps it open.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The endpoint of the page, until closed.
pub struct Endpoint {
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub addr: SocketAddr,
}

impl Endpoint {
    /// The page's URL as printed: with `?token=` when one is needed, never the token itself.
    pub(crate) fn url(&self, token: bool) -> String {
        format!(
            "http://{}/{}",
            self.addr,
            if token {
                "?token=<your --live-token>"
            } else {
                ""
            }
        )
    }

    /// Stops answering. Streams still being written end on their own (their queues were closed
    /// by `Page::end`); the command does not wait for a page.
    pub fn close(mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let deadline = std::time::Instant::now() + Duration::from_secs(1);
            while !t.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

pub(super) fn serve(page: &Page) -> Result<Endpoint, Error> {
    let addr = page.inner.opts.addr;
    let server = tiny_http::Server::http(addr).map_err(|e| {
        Error::Usage(format!(
            "--live {addr}: cannot listen there ({e})\n  fix: choose a free port (e.g. --live 127.0.0.1:8090), or leave out the address for any free one"
        ))
    })?;
    let addr = server.server_addr().to_ip().unwrap_or(addr);
    let _ = page.inner.bound.set(addr);
    let server = Arc::new(server);
    let (srv, page) = (Arc::clone(&server), page.clone());
    let thread = std::thread::Builder::new()
        .name("live-page".into())
        .spawn(move || {
            for req in srv.incoming_requests() {
                page.answer(req);
            }
        })
        .map_err(|e| Error::Other(e.into()))?;
    Ok(Endpoint {
        server,
        thread: Some(thread),
        addr,
    })
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}

fn reply(req: tiny_http::Request, status: u16, body: &Value) {
    let r = tiny_http::Response::from_string(format!("{body}\n"))
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json"))
        .with_header(header("Cache-Control", "no-store"));
    let _ = req.respond(r);
}

fn refuse(req: tiny_http::Request, status: u16, why: &str) {
    reply(req, status, &json!({ "error": why }));
}

/// Equal without telling how much of it matched by the time taken.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A query's `name=` value, percent-decoded.
fn query_value<'a>(url: &'a str, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> std::borrow::Cow<'_, str> {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy()
}

impl Page {
    fn answer(&self, mut req: tiny_http::Request) {
        let url = req.url().to_string();
        let path = url.split('?').next().unwrap_or("").to_string();
        if let Err(why) = self.same_site(&req) {
            return refuse(req, 403, &why);
        }
        if !self.allowed(&req, &url) {
            return refuse(
                req,
                401,
                "this page needs its token: open it with ?token=T, or send Authorization: Bearer T (T as given to --live-token)",
            );
        }
        let method = req.method().clone();
        match (method, path.as_str()) {
            (tiny_http::Method::Get, "/") => {
                let body = crate::report::html::render_live(&json!({
                    "live": true,
                    "control": self.inner.opts.control,
                    "token_needed": self.inner.opts.token.is_some(),
                }));
                let r = tiny_http::Response::from_string(body)
                    .with_header(header("Content-Type", "text/html; charset=utf-8"))
                    .with_header(header("Cache-Control", "no-store"));
                // Written on a thread of its own: a client that reads it slowly holds no
                // other request (a stop among them) behind it.
                let _ = std::thread::Builder::new()
                    .name("live-page-get".into())
                    .spawn(move || {
                        let _ = req.respond(r);
                    });
            }
            (tiny_http::Method::Get, "/events") => self.stream(req),
            (tiny_http::Method::Get, "/api/run") => {
                let st = lock(&self.inner.state);
                let body = json!({
                    "running": st.run.is_some(),
                    "ended": st.ended,
                    "totals": st.totals,
                    "changes": st.changes,
                });
                drop(st);
                reply(req, 200, &body);
            }
            (tiny_http::Method::Post, p) if p == "/api/stop" || p.starts_with("/api/groups/") => {
                if !self.inner.opts.control {
                    return refuse(
                        req,
                        403,
                        "control is off: start the run with --live-control to change or stop it from here",
                    );
                }
                let who = who(&req);
                if p == "/api/stop" {
                    errln!("live: stop asked ({who}): finishing operations in flight, then the summary");
                    self.inner.stop.cancel();
                    return reply(
                        req,
                        202,
                        &json!({ "message": "stopping: operations in flight finish, then the summary (exit 130)" }),
                    );
                }
                let name = percent_decode(&p["/api/groups/".len()..]).into_owned();
                let ask = match read_ask(&mut req) {
                    Ok(a) => a,
                    Err(why) => return refuse(req, 400, &why),
                };
                match self.ask(&name, ask, who) {
                    Ok((status, words)) => reply(req, status, &json!({ "message": words })),
                    Err((status, why)) => refuse(req, status, &why),
                }
            }
            (_, "/" | "/events" | "/api/run" | "/api/stop") => {
                refuse(req, 405, "not with this method")
            }
            _ => refuse(
                req,
                404,
                "not here: the page is at /, its events at /events, the totals at /api/run",
            ),
        }
    }

    /// Without a token, the page answers only what a browser on this machine asks for itself:
    /// the Host a loopback address is reached by (not a name another site had resolve here), and
    /// no request another site's page sent (its Origin). With a token, the token decides.
    fn same_site(&self, req: &tiny_http::Request) -> Result<(), String> {
        if self.inner.opts.token.is_some() {
            return Ok(());
        }
        let value = |name: &str| {
            req.headers()
                .iter()
                .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
                .map(|h| h.value.as_str().to_ascii_lowercase())
        };
        let bound = self
            .inner
            .bound
            .get()
            .copied()
            .unwrap_or(self.inner.opts.addr);
        let port = bound.port();
        let ours: Vec<String> = std::iter::once(bound.to_string())
            .chain(
                ["localhost", "127.0.0.1", "[::1]"]
                    .iter()
                    .map(|h| format!("{h}:{port}")),
            )
            .collect();
        let host = value("Host").unwrap_or_default();
        if !ours.contains(&host) {
            return Err(format!(
                "this page answers on {} only (Host was `{host}`); to reach it by another name or address, start the run with --live-token",
                ours[0]
            ));
        }
        match value("Origin") {
            Some(o) if o != "null" && !ours.iter().any(|h| o == format!("http://{h}")) => Err(
                format!("a request from another site's page ({o}) is not taken"),
            ),
            _ => Ok(()),
        }
    }

    /// With a token, every request carries it (the header, or the page's `?token=`).
    fn allowed(&self, req: &tiny_http::Request, url: &str) -> bool {
        let Some(token) = &self.inner.opts.token else {
            return true;
        };
        let bearer = req
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
            .map(|t| t.trim().to_string());
        let given = bearer.or_else(|| query_value(url, "token").map(|t| t.into_owned()));
        given.is_some_and(|g| same(&g, token))
    }

    /// The event stream: headers, the history, then each event as it comes.
    fn stream(&self, req: tiny_http::Request) {
        let (history, rx) = match self.subscribe() {
            Ok(s) => s,
            Err(why) => return refuse(req, 503, &why),
        };
        let streams = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("live-viewer".into())
            .spawn(move || {
                // Counted while it writes, however it ends.
                struct Writing(Arc<super::Inner>);
                impl Drop for Writing {
                    fn drop(&mut self) {
                        self.0.streams.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                streams.streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let _writing = Writing(streams);
                let mut w = req.into_writer();
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\nX-Accel-Buffering: no\r\n\r\n";
                if w.write_all(head.as_bytes()).is_err() {
                    return;
                }
                // The history in one write, said to be over (the page is ready once it drew it),
                // then each event as it comes.
                let mut old: String = history.iter().map(|e| &**e).collect();
                old.push_str("event: replayed\ndata: {}\n\n");
                if w.write_all(old.as_bytes()).and_then(|_| w.flush()).is_err() {
                    return;
                }
                loop {
                    let sent = match rx.recv_timeout(KEEPALIVE) {
                        Ok(e) => w.write_all(e.as_bytes()),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => w.write_all(b": keep-alive\n\n"),
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    if sent.and_then(|_| w.flush()).is_err() {
                        break;
                    }
                }
                let _ = w.flush();
            });
        if spawned.is_err() {
            errln!("live: could not start a thread for a viewer");
        }
    }
}

/// Who asked: the page's controls or a request of its own, and from where.
fn who(req: &tiny_http::Request) -> String {
    let from_page = req
        .headers()
        .iter()
        .any(|h| h.field.equiv("X-Mongo-Stress-From") && h.value.as_str() == "page");
    let addr = req
        .remote_addr()
        .map_or_else(|| "?".to_string(), |a| a.ip().to_string());
    format!("{} {addr}", if from_page { "page" } else { "api" })
}

/// `{"rate": R}` or `{"users": N}`: one of the two, a number within the tool's bounds.
fn read_ask(req: &mut tiny_http::Request) -> Result<Ask, String> {
    match req.body_length() {
        Some(n) if n as u64 <= MAX_BODY => {}
        Some(_) => {
            return Err(format!(
                "the body is over {MAX_BODY} bytes; send {{\"rate\": R}} or {{\"users\": N}}"
            ))
        }
        None => return Err(
            "the body needs a Content-Length (not chunked); send {\"rate\": R} or {\"users\": N}"
                .into(),
        ),
    }
    let mut body = String::new();
    use std::io::Read;
    req.as_reader()
        .take(MAX_BODY + 1)
        .read_to_string(&mut body)
        .map_err(|e| format!("the body could not be read as UTF-8 text: {e}"))?;
    if body.len() as u64 > MAX_BODY {
        return Err(format!(
            "the body is over {MAX_BODY} bytes; send {{\"rate\": R}} or {{\"users\": N}}"
        ));
    }
    parse_ask(&body)
}

pub(super) fn parse_ask(body: &str) -> Result<Ask, String> {
    let expected =
        "send {\"rate\": R} (an open-loop group) or {\"users\": N} (a closed-loop group)";
    let v: Value = serde_json::from_str(body)
        .map_err(|e| format!("the body is not JSON ({e}); {expected}"))?;
    let Some(obj) = v.as_object() else {
        return Err(format!("the body is not a JSON object; {expected}"));
    };
    if let Some(k) = obj.keys().find(|k| *k != "rate" && *k != "users") {
        return Err(format!("unknown field `{k}`; {expected}"));
    }
    match (obj.get("rate"), obj.get("users")) {
        (Some(r), None) => {
            let r = r.as_f64().ok_or_else(|| {
                format!("rate must be a number of operations per second, not {r}")
            })?;
            let r = crate::plan::limits::check_rate(r).map_err(|e| format!("rate: {e}"))?;
            Ok(Ask {
                setting: Setting::Rate,
                to: r,
            })
        }
        (None, Some(u)) => {
            let n = u
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("users must be a whole number, not {u}"))?;
            let n = crate::plan::limits::check_threads(n).map_err(|e| format!("users: {e}"))?;
            Ok(Ask {
                setting: Setting::Users,
                to: f64::from(n),
            })
        }
        (Some(_), Some(_)) => Err(format!(
            "both rate and users: a group has one of the two; {expected}"
        )),
        (None, None) => Err(format!("nothing to change; {expected}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_one_number_within_bounds() {
        assert_eq!(
            parse_ask(r#"{"rate": 400}"#),
            Ok(Ask {
                setting: Setting::Rate,
                to: 400.0
            })
        );
        assert_eq!(
            parse_ask(r#"{"users": 50}"#),
            Ok(Ask {
                setting: Setting::Users,
                to: 50.0
            })
        );
        for (bad, says) in [
            ("", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"rate": -5}"#, "rate"),
            (r#"{"rate": 1e12}"#, "rate"),
            (r#"{"rate": "fast"}"#, "must be a number"),
            (r#"{"users": 2.5}"#, "whole number"),
            (r#"{"users": -1}"#, "whole number"),
            (r#"{"users": 0}"#, "users"),
            (r#"{"users": 100000000}"#, "users"),
            (r#"{"rate": 1, "users": 2}"#, "both"),
            (r#"{"rat": 1}"#, "unknown field `rat`"),
            ("{}", "nothing to change"),
        ] {
            let e = parse_ask(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_token_is_read_from_the_query_percent_decoded() {
        assert_eq!(
            query_value("/events?token=a%2Fb%20c+d", "token").as_deref(),
            Some("a/b c+d")
        );
        assert_eq!(query_value("/?x=1&token=t", "token").as_deref(), Some("t"));
        assert_eq!(query_value("/", "token"), None);
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
