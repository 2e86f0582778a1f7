//! The resource summary: per stage of a run (a single-operation unit, or all groups of a mixed
//! run), the average and peak of what the sampler saw, beside the client-side throughput, in the
//! shape of the 2016 experiment's summary.

use serde::{Deserialize, Serialize};

use crate::metrics::Label;
use crate::monitor::row::host_column;
use crate::monitor::{HostRow, ResourceRow};

/// When one stage ran, in epoch milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageSpan {
    pub(crate) label: Label,
    /// When the stage began.
    pub(crate) began_ms: u64,
    /// When what the summary counts began: after the stage's warm-ups (else `began_ms`).
    pub(crate) start_ms: u64,
    pub(crate) end_ms: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AvgPeak {
    pub(crate) avg: Option<f64>,
    pub(crate) peak: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ResourceSummary {
    pub(crate) run: u32,
    pub(crate) label: Label,
    /// Sampler rows that fell inside the stage.
    pub(crate) seconds: usize,
    /// Of them, those with a serverStatus answer (within its timeout): the rest are missed.
    #[serde(default)]
    pub(crate) status_seconds: usize,
    pub(crate) client_ops_s: f64,
    pub(crate) server_ops_s: AvgPeak,
    pub(crate) server_cpu_pct: AvgPeak,
    pub(crate) iops: AvgPeak,
    pub(crate) disk_write_kbs: AvgPeak,
    pub(crate) client_cpu_pct: AvgPeak,
    pub(crate) client_rss_mb: AvgPeak,
    /// Where the server CPU figure came from: `local /proc`, `<exporter> at HOST`,
    /// `serverStatus`, or `node_exporter at HOST (whole host)`.
    #[serde(default)]
    pub(crate) cpu_source: Option<String>,
    /// Where IOPS and disk KB/s came from: `local /proc` or `node_exporter at HOST`.
    #[serde(default)]
    pub(crate) disk_source: Option<String>,
    /// The load generator's time waiting to run, ms per second over its threads (schedstat),
    /// and how late its 100 ms heartbeat woke (average of averages / worst).
    #[serde(default)]
    pub(crate) client_wait_ms: AvgPeak,
    #[serde(default)]
    pub(crate) client_lag_ms: AvgPeak,
    /// The server's own average time per read and per write (serverStatus opLatencies), in
    /// microseconds: beside the client's latency, what the network and the client add.
    #[serde(default)]
    pub(crate) server_reads_us: AvgPeak,
    #[serde(default)]
    pub(crate) server_writes_us: AvgPeak,
    /// Set when the load generator, not the server, may have been the limit.
    pub(crate) warning: Option<String>,
    /// Set when the kernel or the runtime say the load generator was starved of CPU.
    #[serde(default)]
    pub(crate) starved: Option<String>,
    /// Some sampled second lay at least half inside the stage, so averages and peaks mean
    /// something; false for a stage too short to sample.
    #[serde(skip)]
    pub(crate) measurable: bool,
    /// Stretches of the stage in which a series sampled in the rest of it was not (the server
    /// process gone, serverStatus unanswered): the averages above cover the other seconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) gaps: Vec<SampleGap>,
}

/// A stretch of a stage without a series' samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SampleGap {
    /// `server process` (its CPU, memory and disk) or `serverStatus`.
    pub(crate) series: String,
    /// From the start of the first interval without it to the end of the last, milliseconds
    /// since the Unix epoch.
    pub(crate) from_ms: u64,
    pub(crate) to_ms: u64,
}

/// The stretches of `rows` (in time order) without `f`, in a stage where some row has it.
fn gaps_of(
    series: &str,
    rows: &[(f64, &ResourceRow)],
    f: impl Fn(&ResourceRow) -> bool,
) -> Vec<SampleGap> {
    if !rows.iter().any(|(_, r)| f(r)) {
        return Vec::new();
    }
    let mut out: Vec<SampleGap> = Vec::new();
    let mut open: Option<SampleGap> = None;
    for (_, r) in rows {
        if f(r) {
            out.extend(open.take());
        } else {
            let from = r.time_ms.saturating_sub(r.interval_ms);
            let gap = open.get_or_insert(SampleGap {
                series: series.to_string(),
                from_ms: from,
                to_ms: r.time_ms,
            });
            gap.to_ms = r.time_ms;
        }
    }
    out.extend(open);
    out
}

/// Time-weighted average over the seconds of each row's interval inside the stage (so a rate's
/// average is the count over the stage divided by its length), and the peak over the same rows,
/// so a peak is never below its average; nothing when no row is at least half a second inside
/// the stage (too short to say anything about).
fn avg_peak(rows: &[(f64, &ResourceRow)], f: impl Fn(&ResourceRow) -> Option<f64>) -> AvgPeak {
    let (mut sum, mut weight, mut peak, mut measurable) = (0.0, 0.0, None::<f64>, false);
    for (overlap, r) in rows {
        let Some(v) = f(r) else { continue };
        sum += v * overlap;
        weight += overlap;
        peak = Some(peak.map_or(v, |p| p.max(v)));
        measurable |= *overlap >= 0.5;
    }
    match peak {
        Some(peak) if weight > 0.0 && measurable => AvgPeak {
            avg: Some(sum / weight),
            peak: Some(peak),
        },
        _ => AvgPeak::default(),
    }
}

/// Rows whose interval overlaps the span, with the seconds of it inside the span.
fn overlapping<'a>(rows: &'a [ResourceRow], s: &StageSpan) -> Vec<(f64, &'a ResourceRow)> {
    rows.iter()
        .filter_map(|r| {
            let from = r.time_ms.saturating_sub(r.interval_ms);
            let inside = r.time_ms.min(s.end_ms).saturating_sub(from.max(s.start_ms));
            (inside > 0).then(|| (crate::num::real(inside) / 1000.0, r))
        })
        .collect()
}

/// A quantity with the sources it may come from, best first: the first that has values in the
/// stage gives its average, peak and name.
type Candidate<'a> = (String, Box<dyn Fn(&ResourceRow) -> Option<f64> + 'a>);

fn first_source(
    rows: &[(f64, &ResourceRow)],
    candidates: Vec<Candidate>,
) -> (AvgPeak, Option<String>) {
    candidates
        .into_iter()
        .find_map(|(name, f)| {
            let ap = avg_peak(rows, f);
            ap.avg.is_some().then_some((ap, Some(name)))
        })
        .unwrap_or_default()
}

/// The server CPU's sources: this machine's /proc for the server process, an exporter's
/// mongod process (named by what answered, from the first row it answered in), serverStatus
/// `extra_info`, then a server host's whole CPU.
fn cpu_candidates<'a>(rows: &[(f64, &ResourceRow)], hosts: &'a [HostRow]) -> Vec<Candidate<'a>> {
    let mongod = host_column("mongod_cpu_pct");
    let node = host_column("node_cpu_pct");
    let mut c: Vec<Candidate> = vec![("local /proc".into(), Box::new(|r| r.server_cpu_pct))];
    for (i, h) in hosts.iter().enumerate() {
        let kind = rows
            .iter()
            .filter_map(|(_, r)| r.hosts.get(i))
            .find(|h| h.values[mongod].is_some())
            .map_or(h.kind, |h| h.kind);
        c.push((
            format!("{kind} at {}", h.host),
            Box::new(move |r| r.hosts.get(i)?.values[mongod]),
        ));
    }
    c.push(("serverStatus".into(), Box::new(|r| r.status.cpu_pct)));
    for (i, h) in hosts.iter().enumerate() {
        c.push((
            format!("node_exporter at {} (whole host)", h.host),
            Box::new(move |r| r.hosts.get(i)?.values[node]),
        ));
    }
    c
}

/// A disk quantity's sources: this machine's /proc, then each server host's node_exporter.
fn disk_candidates<'a>(
    hosts: &'a [HostRow],
    local: fn(&ResourceRow) -> Option<f64>,
    remote: &'a [&'static str],
) -> Vec<Candidate<'a>> {
    let cols: Vec<usize> = remote.iter().map(|n| host_column(n)).collect();
    let mut c: Vec<Candidate> = vec![("local /proc".into(), Box::new(local))];
    for (i, h) in hosts.iter().enumerate() {
        let cols = cols.clone();
        c.push((
            format!("node_exporter at {}", h.host),
            Box::new(move |r| {
                let h = r.hosts.get(i)?;
                cols.iter().map(|&k| h.values[k]).sum::<Option<f64>>()
            }),
        ));
    }
    c
}

/// Waits to run at least twice as long as the tool ran (and 100 ms a second), or runtime timers
/// 20 ms late on average, distort latency; so does a cgroup throttling it 100 ms a second.
/// Measured on 2 cores with the server on the same host: unstarved, 20 users inserting, wait
/// 630 ms/s against 1400 ms/s run, lag 2.5 ms; pinned to a core a busy process holds, wait
/// 1100 ms/s against 18, lag 300 to 1000 ms.
///
/// `busy` is set when the server on this machine kept it busy (machine %, of %, server %): then
/// the wait is the price of sharing the host with the server, and the message says so.
fn starved(rows: &[(f64, &ResourceRow)], busy: Option<(f64, f64, f64)>) -> Option<String> {
    let wait = avg_peak(rows, |r| r.health.wait_ms).avg?;
    let run = avg_peak(rows, |r| r.health.run_ms).avg.unwrap_or(0.0);
    let lag = avg_peak(rows, |r| r.health.lag_avg_ms);
    let worst = avg_peak(rows, |r| r.health.lag_max_ms).peak.unwrap_or(0.0);
    let throttled = avg_peak(rows, |r| r.health.throttled_ms).avg.unwrap_or(0.0);
    let lag_avg = lag.avg.unwrap_or(0.0);
    let waited = wait >= 100.0 && wait >= 2.0 * run;
    if !(waited || lag_avg >= 20.0 || throttled >= 100.0) {
        return None;
    }
    let measured = format!(
        "its threads waited {wait:.0} ms per second to run and ran {run:.0} ms (/proc/self/task/*/schedstat); its 100 ms heartbeat woke {lag_avg:.1} ms late on average, {worst:.0} ms at worst"
    );
    if let Some((host, capacity, server)) = busy.filter(|_| throttled < 100.0) {
        return Some(format!(
            "the load generator waited for CPU on a machine the server kept busy ({host:.0}% of {capacity:.0}%, the server {server:.0}%): {measured}: latencies include that wait. For server numbers run the tool on another host"
        ));
    }
    let mut what = format!("the load generator was starved of CPU: {measured}");
    if throttled > 0.0 {
        what.push_str(&format!(
            "; its cgroup throttled it {throttled:.0} ms per second (cpu.stat)"
        ));
    }
    what.push_str(": latencies include that wait. Give the tool more CPU (no pinning to a busy core, a higher CPU limit or none), fewer users, or another host");
    Some(what)
}

/// The CPUs the load generator may use (its affinity or quota) and those of its machine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cores {
    pub(crate) tool: usize,
    pub(crate) machine: usize,
}

/// One summary per stage span.
pub(crate) fn summarize(
    run: u32,
    spans: &[StageSpan],
    client_ops_s: impl Fn(&Label) -> f64,
    rows: &[ResourceRow],
    cores: Cores,
) -> Vec<ResourceSummary> {
    spans
        .iter()
        .map(|s| {
            let inside = overlapping(rows, s);
            let hosts = inside.first().map_or(&[][..], |(_, r)| &r.hosts[..]);
            let client_cpu = avg_peak(&inside, |r| r.client_cpu_pct);
            let (server_cpu, cpu_source) = first_source(&inside, cpu_candidates(&inside, hosts));
            let (iops, disk_source) = first_source(
                &inside,
                disk_candidates(hosts, |r| r.iops, &["node_disk_reads_s", "node_disk_writes_s"]),
            );
            let (disk_write_kbs, write_source) = first_source(
                &inside,
                disk_candidates(hosts, |r| r.disk_write_kbs, &["node_disk_write_kbs"]),
            );
            let host = avg_peak(&inside, |r| r.host_cpu_pct);
            let capacity = 100.0 * crate::num::real_len(cores.tool);
            let host_capacity = 100.0 * crate::num::real_len(cores.machine);
            let warning = match (client_cpu.avg, host.avg) {
                (Some(c), _) if c >= 0.9 * capacity => {
                    Some(format!("the load generator used {c:.0}% CPU of {capacity:.0}%: it, not the server, may have set the pace"))
                }
                (Some(c), Some(h)) if h >= 0.9 * host_capacity && c > server_cpu.avg.unwrap_or(0.0) => Some(format!(
                    "the machine was {h:.0}% busy of {host_capacity:.0}% and the load generator used more CPU ({c:.0}%) than the server ({:.0}%): run the tool on another host for server numbers",
                    server_cpu.avg.unwrap_or(0.0)
                )),
                _ => None,
            };
            // The server on this machine kept it busy, and used more CPU than the tool.
            let busy = match (host.avg, server_cpu.avg, client_cpu.avg) {
                (Some(h), Some(sv), c)
                    if h >= 0.9 * host_capacity
                        && cpu_source.as_deref() == Some("local /proc")
                        && sv >= c.unwrap_or(0.0) =>
                {
                    Some((h, host_capacity, sv))
                }
                _ => None,
            };
            ResourceSummary {
                run,
                label: s.label.clone(),
                seconds: inside.len(),
                status_seconds: inside.iter().filter(|(_, r)| r.connections.is_some()).count(),
                client_ops_s: client_ops_s(&s.label),
                server_ops_s: avg_peak(&inside, ResourceRow::server_ops_s),
                server_cpu_pct: server_cpu,
                iops,
                disk_write_kbs,
                client_cpu_pct: client_cpu,
                client_rss_mb: avg_peak(&inside, |r| r.client_rss_mb),
                cpu_source,
                disk_source: match (disk_source, write_source) {
                    (Some(a), Some(b)) if a != b => Some(format!("{a} (IOPS), {b} (KB/s)")),
                    // KB/s from the server process, but no IOPS: say why it is `-`.
                    (None, Some(b)) if b == "local /proc" => Some(format!(
                        "{b} (disk write KB/s; IOPS: - since the server's data directory is on no block device /proc/diskstats counts, such as a tmpfs or overlay; --server-metrics with a node_exporter counts the host's disks)"
                    )),
                    (a, b) => a.or(b),
                },
                client_wait_ms: avg_peak(&inside, |r| r.health.wait_ms),
                client_lag_ms: AvgPeak {
                    avg: avg_peak(&inside, |r| r.health.lag_avg_ms).avg,
                    peak: avg_peak(&inside, |r| r.health.lag_max_ms).peak,
                },
                server_reads_us: avg_peak(&inside, |r| r.status.reads_us),
                server_writes_us: avg_peak(&inside, |r| r.status.writes_us),
                warning,
                starved: starved(&inside, busy),
                measurable: inside.iter().any(|(overlap, _)| *overlap >= 0.5),
                gaps: gaps_of("server process", &inside, |r| r.server_rss_mb.is_some())
                    .into_iter()
                    .chain(gaps_of("serverStatus", &inside, |r| r.connections.is_some()))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: Cores = Cores {
        tool: 2,
        machine: 2,
    };

    fn row(t: u64, cpu: f64, client: f64) -> ResourceRow {
        ResourceRow {
            time_ms: t,
            interval_ms: 1000,
            server_cpu_pct: Some(cpu),
            client_cpu_pct: Some(client),
            host_cpu_pct: Some(cpu + client),
            ops_s: [Some(100.0), Some(10.0), None, None, None, Some(1.0)],
            ..Default::default()
        }
    }

    #[test]
    fn averages_and_peaks_cover_only_the_rows_inside_the_stage() {
        let rows: Vec<ResourceRow> = (0..10)
            .map(|i| row(10_000 + i * 1000, 10.0 * crate::num::real(i), 5.0))
            .collect();
        let spans = [StageSpan {
            began_ms: 0,
            label: "insert".into(),
            start_ms: 12_000,
            end_ms: 15_000,
        }];
        let s = &summarize(1, &spans, |_| 42.0, &rows, TWO)[0];
        // Rows at 13, 14 and 15 s: CPU 30, 40, 50.
        assert_eq!(s.seconds, 3);
        assert_eq!(
            s.server_cpu_pct,
            AvgPeak {
                avg: Some(40.0),
                peak: Some(50.0)
            }
        );
        assert_eq!(
            s.server_ops_s.avg,
            Some(110.0),
            "insert + query, not command"
        );
        assert_eq!(s.client_ops_s, 42.0);
        assert!(s.iops.avg.is_none());
        assert!(s.warning.is_none());
    }

    #[test]
    fn rows_straddling_the_stage_edges_count_for_the_part_inside() {
        // Stage 12.5 s to 14.5 s; rows end at 13, 14, 15 s (CPU 30, 40, 50) and 12 s (20, outside).
        let rows: Vec<ResourceRow> = (0..10)
            .map(|i| row(10_000 + i * 1000, 10.0 * crate::num::real(i), 5.0))
            .collect();
        let spans = [StageSpan {
            began_ms: 0,
            label: "x".into(),
            start_ms: 12_500,
            end_ms: 14_500,
        }];
        let s = &summarize(1, &spans, |_| 0.0, &rows, TWO)[0];
        assert_eq!(s.seconds, 3);
        // (30 * 0.5 + 40 * 1 + 50 * 0.5) / 2 = 40; peaks only from rows at least half inside.
        assert_eq!(
            s.server_cpu_pct,
            AvgPeak {
                avg: Some(40.0),
                peak: Some(50.0)
            }
        );
    }

    #[test]
    fn a_peak_is_never_below_its_average_when_a_boundary_row_is_the_highest() {
        // Measured on jmeter-2016: disk writes shown as `24 / 0`. A stage from 12.6 s to 15 s:
        // the row ending at 13 s (0.4 s inside, 60 KB/s) weighs in the average; the peak must
        // see it too.
        let rows: Vec<ResourceRow> = [(13_000, 60.0), (14_000, 0.0), (15_000, 0.0)]
            .into_iter()
            .map(|(t, w)| ResourceRow {
                time_ms: t,
                interval_ms: 1000,
                disk_write_kbs: Some(w),
                ..Default::default()
            })
            .collect();
        let spans = [StageSpan {
            began_ms: 0,
            label: "find".into(),
            start_ms: 12_600,
            end_ms: 15_000,
        }];
        let s = &summarize(1, &spans, |_| 0.0, &rows, TWO)[0];
        let (avg, peak) = (
            s.disk_write_kbs.avg.unwrap(),
            s.disk_write_kbs.peak.unwrap(),
        );
        assert!((avg - 60.0 * 0.4 / 2.4).abs() < 1e-9, "{avg}");
        assert!(peak >= avg, "peak {peak} below average {avg}");
        assert_eq!(peak, 60.0);
    }

    #[test]
    fn a_stage_shorter_than_half_a_sampled_second_reports_nothing() {
        let rows: Vec<ResourceRow> = (0..3).map(|i| row(1000 + i * 1000, 50.0, 5.0)).collect();
        let spans = [StageSpan {
            began_ms: 0,
            label: "x".into(),
            start_ms: 1100,
            end_ms: 1500,
        }];
        let s = &summarize(1, &spans, |_| 0.0, &rows, TWO)[0];
        assert_eq!(s.server_cpu_pct, AvgPeak::default());
        assert!(s.warning.is_none());
    }

    #[test]
    fn a_starved_load_generator_is_named_and_told_apart_from_sharing_a_busy_host() {
        let spans = [StageSpan {
            began_ms: 0,
            label: "TOTAL".into(),
            start_ms: 0,
            end_ms: 6000,
        }];
        let with = |server: f64, client: f64, wait: f64, run: f64, lag: f64| {
            let rows: Vec<ResourceRow> = (0..5)
                .map(|i| {
                    let mut r = row(1000 + i * 1000, server, client);
                    r.health.wait_ms = Some(wait);
                    r.health.run_ms = Some(run);
                    r.health.lag_avg_ms = Some(lag);
                    r.health.lag_max_ms = Some(lag * 3.0);
                    r
                })
                .collect();
            summarize(1, &spans, |_| 1.0, &rows, TWO)[0].starved.clone()
        };
        // Measured unstarved: waits shorter than twice the run time, timers nearly on time.
        assert_eq!(with(60.0, 100.0, 630.0, 1400.0, 2.5), None);
        // Pinned to a busy core: a starved tool, named so.
        let s = with(10.0, 2.0, 1100.0, 18.0, 300.0).unwrap();
        assert!(s.starts_with("the load generator was starved of CPU: its threads waited 1100 ms per second to run and ran 18 ms"), "{s}");
        assert!(
            s.contains("300.0 ms late on average, 900 ms at worst"),
            "{s}"
        );
        // The server on this host keeps both cores busy: the wait is the shared host's.
        let s = with(186.0, 10.0, 1846.0, 99.0, 13.3).unwrap();
        assert!(
            s.contains("on a machine the server kept busy (196% of 200%, the server 186%)"),
            "{s}"
        );
        assert!(s.ends_with("run the tool on another host"), "{s}");
    }

    #[test]
    fn a_saturated_load_generator_is_flagged() {
        let spans = [StageSpan {
            began_ms: 0,
            label: "TOTAL".into(),
            start_ms: 0,
            end_ms: 6000,
        }];
        let flagged = |server: f64, client: f64| {
            let rows: Vec<ResourceRow> = (0..5)
                .map(|i| row(1000 + i * 1000, server, client))
                .collect();
            summarize(1, &spans, |_| 1.0, &rows, TWO)[0].warning.clone()
        };
        // Alone over 90 % of both cores.
        assert!(flagged(5.0, 185.0)
            .unwrap()
            .contains("load generator used 185%"));
        // A busy machine where the tool takes more than the server.
        assert!(flagged(30.0, 160.0)
            .unwrap()
            .contains("more CPU (160%) than the server (30%)"));
        // A busy machine where the server takes most: the server is the limit, no warning.
        assert_eq!(flagged(150.0, 40.0), None);
    }
}
