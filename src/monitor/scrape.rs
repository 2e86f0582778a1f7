//! `--server-metrics`: one Prometheus exporter endpoint on a server host, fetched once a
//! second on the blocking pool with a 500 ms limit, so a slow, down or garbled endpoint costs
//! its own columns (`-`) and one warning, never an operation or another source's reading.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::node::{self, Reading};
use super::row::HostRow;

/// Longest wait for one page; past it the host's columns of that second stay empty.
pub(crate) const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);

/// Largest page read (node_exporter's is about 100 to 300 KB).
const MAX_PAGE: u64 = 8 << 20;

/// One endpoint and what it said last.
pub(crate) struct Scraper {
    url: String,
    /// host:port, the suffix of its columns.
    host: Arc<str>,
    agent: ureq::Agent,
    last: Option<(Instant, Reading)>,
    /// What answered last (`node_exporter` until something did).
    kind: &'static str,
    /// What went wrong first, if anything (redacted), for the one warning and the summary.
    pub(crate) problem: Option<String>,
    /// Seconds asked, and of them those answered.
    pub(crate) asked: u64,
    pub(crate) answered: u64,
}

/// The host:port of a URL (without credentials), for column names and messages: what follows
/// the last `@` (a password may hold `/`, `?` or `#`), up to the path.
pub(crate) fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let after_user = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    after_user
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A metrics URL as it may be shown: whatever precedes the last `@` but the user name is
/// `****`, with or without a scheme (a URL the checks refuse is shown this way too).
pub(crate) fn shown(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}{user}:****@{host}")
        }
        None => url.to_string(),
    }
}

/// A `--server-metrics` value's problem, if it has one: it must be an http(s) URL whose host
/// is plain (a password with `/`, `?`, `#` or `@` must be percent-encoded, or the host would be
/// read from inside it).
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let ok_scheme = url.starts_with("http://") || url.starts_with("https://");
    let parsed = url.parse::<ureq::http::Uri>().ok();
    let authority_host = parsed
        .as_ref()
        .and_then(|u| u.authority())
        .map(|a| match a.port_u16() {
            Some(p) => format!("{}:{p}", a.host()),
            None => a.host().to_string(),
        });
    let host = host_of(url);
    if !ok_scheme || host.is_empty() || authority_host.as_deref() != Some(host.as_str()) {
        return Err(format!(
            "`{}` is not an http(s) URL of a metrics endpoint; give e.g. http://db1:9100/metrics (node_exporter's port and path; percent-encode /, ?, # and @ in a password)",
            shown(url)
        ));
    }
    Ok(())
}

/// Every endpoint's problem: each a URL (`check_url`), no two on the same host:port (their
/// columns would share a name).
pub(crate) fn check_urls(urls: &[String]) -> Result<(), String> {
    for (i, url) in urls.iter().enumerate() {
        check_url(url)?;
        let host = host_of(url);
        if urls[..i].iter().any(|u| host_of(u) == host) {
            return Err(format!(
                "two metrics endpoints on {host}: their resources.tsv columns (...@{host}) would share names; give one per host:port"
            ));
        }
    }
    Ok(())
}

/// `MONGO_STRESS_SERVER_METRICS`: URLs separated by white space, or by commas before the next
/// `http://`/`https://` (a comma inside a password stays in it).
pub(crate) fn split_env(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in value.split_whitespace() {
        let mut start = 0;
        for (i, _) in token.match_indices(',') {
            let next = &token[i + 1..];
            if next.starts_with("http://") || next.starts_with("https://") {
                out.push(token[start..i].to_string());
                start = i + 1;
            }
        }
        out.push(token[start..].to_string());
    }
    out.retain(|u| !u.is_empty());
    out
}

impl Scraper {
    pub(crate) fn new(url: &str) -> Scraper {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(SCRAPE_TIMEOUT))
            .http_status_as_error(true)
            .build()
            .into();
        Scraper {
            url: url.to_string(),
            host: host_of(url).into(),
            agent,
            last: None,
            kind: "node_exporter",
            problem: None,
            asked: 0,
            answered: 0,
        }
    }

    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// The endpoint as it may be shown (password hidden).
    pub(crate) fn shown(&self) -> String {
        shown(&self.url)
    }

    /// Fetches and parses one page (blocking, at most `SCRAPE_TIMEOUT`); the row of the
    /// interval since the last good page. The first failure is kept in `problem` and returned
    /// as `Err` once, for the one warning; later ones only leave the columns empty. Only
    /// `counted` pages count as seconds asked and answered (not the primer's).
    pub(crate) fn scrape(&mut self, counted: bool) -> (HostRow, Option<String>) {
        self.asked += u64::from(counted);
        let mut row = HostRow {
            host: Arc::clone(&self.host),
            kind: self.kind,
            values: Default::default(),
        };
        let started = Instant::now();
        let page = self
            .agent
            .get(&self.url)
            .call()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => format!(
                    "no answer within {} ms (the limit of one reading)",
                    SCRAPE_TIMEOUT.as_millis()
                ),
                e => e.to_string(),
            })
            .and_then(|mut r| {
                r.body_mut()
                    .with_config()
                    .limit(MAX_PAGE)
                    .read_to_string()
                    .map_err(|e| e.to_string())
            })
            .and_then(|text| {
                // Parsing counts against the same limit: a page that came at the last moment
                // is not parsed.
                if started.elapsed() > SCRAPE_TIMEOUT {
                    return Err(format!(
                        "no answer within {} ms (the limit of one reading)",
                        SCRAPE_TIMEOUT.as_millis()
                    ));
                }
                node::parse(&text)
            });
        let now = Instant::now();
        match page {
            Ok(reading) => {
                self.answered += u64::from(counted);
                // Rates only over one interval: after a miss the counters start again.
                let before = self
                    .last
                    .as_ref()
                    .filter(|(t, _)| now.duration_since(*t) < Duration::from_secs(3));
                let secs = before.map_or(1.0, |(t, _)| now.duration_since(*t).as_secs_f64());
                row.values = node::rates(before.map(|(_, r)| r), &reading, secs.max(1e-3));
                row.kind = reading.kind;
                self.kind = reading.kind;
                self.last = Some((now, reading));
                (row, None)
            }
            Err(e) => {
                self.last = None;
                let first = self.problem.is_none();
                // The error may quote the URL.
                let problem = crate::redact::redact(&e.replace(&self.url, &shown(&self.url)));
                if first {
                    self.problem = Some(problem.clone());
                }
                (row, first.then_some(problem))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_urls() {
        assert_eq!(host_of("http://db1:9100/metrics"), "db1:9100");
        assert_eq!(host_of("https://u:p@db1:9100/metrics"), "db1:9100");
        assert_eq!(host_of("http://u:p#x@db1:9100/metrics"), "db1:9100");
        assert!(check_url("http://db1:9100/metrics").is_ok());
        assert!(check_url("https://u:p%23x@db1/metrics").is_ok());
        for bad in [
            "db1:9100",
            "ftp://db1/",
            "http://",
            "http://u:secret@ bad host/",
            "u:secret@db1:9100/metrics",
            "http://u:sec#ret@db1:9100/metrics",
            "http://u:sec/ret@db1:9100/metrics",
        ] {
            let e = check_url(bad).unwrap_err();
            assert!(e.contains("http://db1:9100/metrics"), "{e}");
            assert!(!e.contains("secret") && !e.contains("ret@"), "{bad}: {e}");
        }
        assert_eq!(shown("http://u:a,b@db1/m"), "http://u:****@db1/m");
        assert_eq!(shown("u:pw@db1/m"), "u:****@db1/m");
        assert_eq!(shown("http://db1/m"), "http://db1/m");
    }

    #[test]
    fn endpoints_are_one_per_host_and_the_environment_splits_between_urls() {
        let two = |a: &str, b: &str| check_urls(&[a.to_string(), b.to_string()]);
        assert!(two("http://db1:9100/metrics", "http://db2:9100/metrics").is_ok());
        let e = two("http://db1:9100/metrics", "http://db1:9100/other").unwrap_err();
        assert!(e.contains("two metrics endpoints on db1:9100"), "{e}");
        assert_eq!(
            split_env("http://u:a,b@db1:9100/m,https://db2:9100/m http://db3/m"),
            [
                "http://u:a,b@db1:9100/m",
                "https://db2:9100/m",
                "http://db3/m"
            ]
        );
        assert!(split_env("  ").is_empty());
    }
}
