//! `--server-metrics`: one Prometheus exporter endpoint on a server host, fetched once a
//! second on the blocking pool with a 500 ms limit, so a slow, down or garbled endpoint costs
//! its own columns (`-`) and one warning, never an operation or another source's reading.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::node::{self, Reading};
use super::row::HostRow;
use crate::redact::redact;

/// Longest wait for one page; past it the host's columns of that second stay empty.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);

/// One endpoint and what it said last.
pub struct Scraper {
    url: String,
    /// host:port, the suffix of its columns.
    host: Arc<str>,
    agent: ureq::Agent,
    last: Option<(Instant, Reading)>,
    /// What went wrong first, if anything (redacted), for the one warning and the summary.
    pub problem: Option<String>,
    /// Seconds asked, and of them those answered.
    pub asked: u64,
    pub answered: u64,
}

/// The host:port of a URL (without credentials), for column names and messages.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, h)| h)
        .to_string()
}

/// A `--server-metrics` value's problem, if it has one: it must be an http(s) URL with a host.
pub fn check_url(url: &str) -> Result<(), String> {
    let ok_scheme = url.starts_with("http://") || url.starts_with("https://");
    if !ok_scheme || host_of(url).is_empty() || url.parse::<ureq::http::Uri>().is_err() {
        return Err(format!(
            "`{}` is not an http(s) URL of a metrics endpoint; give e.g. http://db1:9100/metrics (node_exporter's port and path)",
            redact(url)
        ));
    }
    Ok(())
}

impl Scraper {
    pub fn new(url: &str) -> Scraper {
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
            problem: None,
            asked: 0,
            answered: 0,
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// The endpoint as it may be shown (password hidden).
    pub fn shown(&self) -> String {
        redact(&self.url)
    }

    /// Fetches and parses one page (blocking, at most `SCRAPE_TIMEOUT`); the row of the
    /// interval since the last good page. The first failure is kept in `problem` and returned
    /// as `Err` once, for the one warning; later ones only leave the columns empty. Only
    /// `counted` pages count as seconds asked and answered (not the primer's).
    pub fn scrape(&mut self, counted: bool) -> (HostRow, Option<String>) {
        self.asked += u64::from(counted);
        let mut row = HostRow {
            host: Arc::clone(&self.host),
            kind: "node_exporter",
            values: Default::default(),
        };
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
                    .limit(64 << 20)
                    .read_to_string()
                    .map_err(|e| e.to_string())
            })
            .and_then(|text| node::parse(&text));
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
                self.last = Some((now, reading));
                (row, None)
            }
            Err(e) => {
                self.last = None;
                let first = self.problem.is_none();
                let problem = redact(&e);
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
        assert!(check_url("http://db1:9100/metrics").is_ok());
        for bad in [
            "db1:9100",
            "ftp://db1/",
            "http://",
            "http://u:secret@ bad host/",
        ] {
            let e = check_url(bad).unwrap_err();
            assert!(e.contains("http://db1:9100/metrics"), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }
}
