//! The page's endpoint: axum (`crate::serve`) on the tool's runtime; each event stream a body
//! that sends the history, then each new event as it comes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::events::{Ask, Setting};
use super::{lock, Page};
use crate::error::Error;

/// Most pages watching at once.
pub(super) const MAX_VIEWERS: usize = 16;
/// Largest request body read.
const MAX_BODY: usize = 1024;
/// A comment down each stream this often, so a proxy or a browser keeps it open.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The endpoint of the page, until closed.
pub struct Endpoint {
    served: crate::serve::Served,
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
    pub fn close(self) {
        self.served.close();
    }
}

pub(super) fn serve(page: &Page) -> Result<Endpoint, Error> {
    let addr = page.inner.opts.addr;
    let router = axum::Router::new()
        .fallback(answer)
        .with_state(page.clone());
    let served = crate::serve::serve(addr, router, "live-page").map_err(|e| {
        Error::Usage(format!(
            "--live {addr}: cannot listen there ({e})\n  fix: choose a free port (e.g. --live 127.0.0.1:8090), or leave out the address for any free one"
        ))
    })?;
    let addr = served.addr;
    let _ = page.inner.bound.set(addr);
    Ok(Endpoint { served, addr })
}

fn with_body(status: StatusCode, ctype: &str, body: Body) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, ctype)
        .header(header::CACHE_CONTROL, "no-store")
        .body(body)
        .unwrap_or_default()
}

fn reply(status: u16, body: &Value) -> Response {
    with_body(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "application/json",
        Body::from(format!("{body}\n")),
    )
}

fn refuse(status: u16, why: &str) -> Response {
    reply(status, &json!({ "error": why }))
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

/// Every request: who may ask it, then what it asks.
async fn answer(
    State(page): State<Page>,
    ConnectInfo(from): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    let url = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), ToString::to_string);
    let path = req.uri().path().to_string();
    let headers = req.headers().clone();
    if let Err(why) = page.same_site(&headers) {
        return refuse(403, &why);
    }
    if !page.allowed(&headers, &url) {
        return refuse(
            401,
            "this page needs its token: open it with ?token=T, or send Authorization: Bearer T (T as given to --live-token)",
        );
    }
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/") => {
            let body = crate::report::html::render_live(&json!({
                "live": true,
                "control": page.inner.opts.control,
                "token_needed": page.inner.opts.token.is_some(),
            }));
            with_body(StatusCode::OK, "text/html; charset=utf-8", Body::from(body))
        }
        (Method::GET, "/events") => page.stream(),
        (Method::GET, "/api/run") => {
            let st = lock(&page.inner.state);
            let body = json!({
                "running": st.run.is_some(),
                "ended": st.ended,
                "totals": st.totals,
                "changes": st.changes,
            });
            drop(st);
            reply(200, &body)
        }
        (Method::POST, p) if p == "/api/stop" || p.starts_with("/api/groups/") => {
            if !page.inner.opts.control {
                return refuse(
                    403,
                    "control is off: start the run with --live-control to change or stop it from here",
                );
            }
            let who = who(&headers, from);
            if p == "/api/stop" {
                errln!(
                    "live: stop asked ({who}): finishing operations in flight, then the summary"
                );
                page.inner.stop.cancel();
                return reply(
                    202,
                    &json!({ "message": "stopping: operations in flight finish, then the summary (exit 130)" }),
                );
            }
            let name = percent_decode(&p["/api/groups/".len()..]).into_owned();
            let length = headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
            let ask = match read_ask(req.into_body(), length).await {
                Ok(a) => a,
                Err(why) => return refuse(400, &why),
            };
            match page.ask(&name, ask, who) {
                Ok((status, words)) => reply(status, &json!({ "message": words })),
                Err((status, why)) => refuse(status, &why),
            }
        }
        (_, "/" | "/events" | "/api/run" | "/api/stop") => refuse(405, "not with this method"),
        _ => refuse(
            404,
            "not here: the page is at /, its events at /events, the totals at /api/run",
        ),
    }
}

/// A header's value as text, lower-cased.
fn value(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
}

/// Counted while a stream is written, however it ends.
struct Writing(Arc<super::Inner>);

impl Writing {
    fn new(inner: Arc<super::Inner>) -> Writing {
        inner
            .streams
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Writing(inner)
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        self.0
            .streams
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Page {
    /// Without a token, the page answers only what a browser on this machine asks for itself:
    /// the Host a loopback address is reached by (not a name another site had resolve here), and
    /// no request another site's page sent (its Origin). With a token, the token decides.
    fn same_site(&self, headers: &HeaderMap) -> Result<(), String> {
        if self.inner.opts.token.is_some() {
            return Ok(());
        }
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
        let host = value(headers, header::HOST).unwrap_or_default();
        if !ours.contains(&host) {
            return Err(format!(
                "this page answers on {} only (Host was `{host}`); to reach it by another name or address, start the run with --live-token",
                ours[0]
            ));
        }
        match value(headers, header::ORIGIN) {
            Some(o) if o != "null" && !ours.iter().any(|h| o == format!("http://{h}")) => Err(
                format!("a request from another site's page ({o}) is not taken"),
            ),
            _ => Ok(()),
        }
    }

    /// With a token, every request carries it (the header, or the page's `?token=`).
    fn allowed(&self, headers: &HeaderMap, url: &str) -> bool {
        let Some(token) = &self.inner.opts.token else {
            return true;
        };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| t.trim().to_string());
        let given = bearer.or_else(|| query_value(url, "token").map(|t| t.into_owned()));
        given.is_some_and(|g| same(&g, token))
    }

    /// The event stream: the history in one write, said to be over (the page is ready once it
    /// drew it), then each event as it comes, a comment when none came for a while.
    fn stream(&self) -> Response {
        let (history, rx) = match self.subscribe() {
            Ok(s) => s,
            Err(why) => return refuse(503, &why),
        };
        let writing = Writing::new(Arc::clone(&self.inner));
        let mut old: String = history.iter().map(|e| &**e).collect();
        old.push_str("event: replayed\ndata: {}\n\n");
        let first = futures_util::stream::once(async move {
            Ok::<_, std::convert::Infallible>(Bytes::from(old))
        });
        let rest = futures_util::stream::unfold((rx, writing), |(mut rx, w)| async move {
            let chunk = match tokio::time::timeout(KEEPALIVE, rx.recv()).await {
                Ok(Some(e)) => Bytes::from(e.as_bytes().to_vec()),
                Ok(None) => return None,
                Err(_) => Bytes::from_static(b": keep-alive\n\n"),
            };
            Some((Ok(chunk), (rx, w)))
        });
        let mut r = with_body(
            StatusCode::OK,
            "text/event-stream",
            Body::from_stream(futures_util::StreamExt::chain(first, rest)),
        );
        r.headers_mut().insert(
            header::HeaderName::from_static("x-accel-buffering"),
            header::HeaderValue::from_static("no"),
        );
        r
    }
}

/// Who asked: the page's controls or a request of its own, and from where.
fn who(headers: &HeaderMap, from: SocketAddr) -> String {
    let from_page = headers
        .get("x-mongo-stress-from")
        .is_some_and(|v| v.as_bytes() == b"page");
    format!("{} {}", if from_page { "page" } else { "api" }, from.ip())
}

/// `{"rate": R}` or `{"users": N}`: one of the two, a number within the tool's bounds.
async fn read_ask(body: Body, length: Option<usize>) -> Result<Ask, String> {
    if length.is_some_and(|n| n > MAX_BODY) {
        return Err(format!(
            "the body is over {MAX_BODY} bytes; send {{\"rate\": R}} or {{\"users\": N}}"
        ));
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| {
        format!("the body could not be read ({e}); send at most {MAX_BODY} bytes: {{\"rate\": R}} or {{\"users\": N}}")
    })?;
    let body = std::str::from_utf8(&bytes)
        .map_err(|e| format!("the body could not be read as UTF-8 text: {e}"))?;
    parse_ask(body)
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
