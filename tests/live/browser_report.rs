//! report.html in a real browser: a real run of the bundled `crud-mixed` profile (shortened), its report opened
//! from disk in headless Chromium with the network shut off; no script error, every chart drawn
//! with the run's data (the points each chart records against the interval log), the page's
//! summary table equal to summary.tsv. The screenshot is kept in target/test-artefacts/. Also:
//! `report` on an interrupted run, and refusing a broken run directory without writing anything.
//!
//! The browser is `chromium-headless-shell` or `chromium` (scripts/test.sh installs Debian's
//! chromium-headless-shell), or MONGO_STRESS_BROWSER; MONGO_STRESS_SKIP_BROWSER=1 skips the
//! browser part explicitly. Without one, the test fails.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

pub(crate) fn browser() -> Option<PathBuf> {
    if std::env::var("MONGO_STRESS_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("MONGO_STRESS_SKIP_BROWSER=1: skipping the browser part");
        return None;
    }
    if let Ok(b) = std::env::var("MONGO_STRESS_BROWSER") {
        return Some(PathBuf::from(b));
    }
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"] {
        let found = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join(name))
            .find(|p| p.is_file());
        if found.is_some() {
            return found;
        }
    }
    panic!(
        "no headless Chromium found: run scripts/test.sh (installs chromium-headless-shell), set MONGO_STRESS_BROWSER, or set MONGO_STRESS_SKIP_BROWSER=1 to skip"
    );
}

/// Chromium's flags for no network: a dead proxy and no name resolution (`resolver`: the host
/// rules, `MAP * ~NOTFOUND` and what they leave out), and no background traffic.
pub(crate) fn offline(resolver: &str) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--proxy-server=socks5://127.0.0.1:9",
        "--window-size=1300,4200",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain(std::iter::once(format!("--host-resolver-rules={resolver}")))
    .collect()
}

/// Chromium with no network at all.
fn chromium(browser: &Path, profile_dir: &Path, extra: &[&str], page: &Path) -> Vec<u8> {
    let out = Command::new(browser)
        .args(offline("MAP * ~NOTFOUND"))
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("the browser starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The page's DOM once its scripts ran, after checking they finished without an error.
pub(crate) fn drawn(browser: &Path, profile_dir: &Path, page: &Path) -> String {
    let dom = String::from_utf8(chromium(
        browser,
        profile_dir,
        &["--dump-dom", "--virtual-time-budget=5000"],
        page,
    ))
    .unwrap();
    let body = dom
        .split("<body")
        .nth(1)
        .unwrap()
        .split('>')
        .next()
        .unwrap();
    assert!(
        body.contains("data-ready=\"1\""),
        "the page did not finish: {body}"
    );
    assert!(
        !body.contains("data-errors"),
        "the page raised a script error: {dom}"
    );
    dom
}

/// Interval lines per tag in the run's latency.hlog.
fn intervals_per_tag(hlog: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read(hlog).unwrap();
    let mut n = BTreeMap::new();
    for e in IntervalLogIterator::new(&text) {
        if let LogEntry::Interval(h) = e.unwrap() {
            *n.entry(h.tag().unwrap().as_str().to_string()).or_insert(0) += 1;
        }
    }
    n
}

/// The points a chart recorded, by its data-chart name.
pub(crate) fn points(dom: &str, chart: &str) -> usize {
    let at = dom
        .find(&format!("data-chart=\"{chart}\""))
        .unwrap_or_else(|| panic!("no chart {chart}"));
    let rest = &dom[at..dom[at..].find('>').map_or(dom.len(), |i| at + i)];
    rest.split("data-points=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("chart {chart} recorded no points: {rest}"))
}

/// The text of a table's cells, rows joined by newlines and cells by tabs, as in a TSV file.
pub(crate) fn table_as_tsv(dom: &str, id: &str) -> String {
    let start = dom.find(&format!("<table id=\"{id}\"")).expect("the table");
    let table = &dom[start..start + dom[start..].find("</table>").unwrap()];
    let unescape = |s: &str| {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    };
    let mut rows = Vec::new();
    for row in table.split("<tr>").skip(1) {
        let mut cells = Vec::new();
        let mut rest = row;
        // A cell opens with `<td` or `<th` then a space or `>` (not <thead>, <tbody>).
        while let Some(i) = (0..rest.len()).find(|&i| {
            (rest[i..].starts_with("<td") || rest[i..].starts_with("<th"))
                && matches!(rest.as_bytes().get(i + 3), Some(b' ') | Some(b'>'))
        }) {
            let cell = &rest[i..];
            let open = cell.find('>').unwrap();
            let close = cell.find("</t").unwrap();
            cells.push(unescape(&cell[open + 1..close]));
            rest = &cell[close + 3..];
        }
        rows.push(cells.join("\t"));
    }
    rows.join("\n")
}

#[test]
fn the_report_of_a_real_run_draws_every_chart_from_its_data_in_a_browser() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // A bundled profile, shortened: long enough for lines over time and a warm-up mark.
    let (summary, _, _) = server.run_ok(
        "crud-mixed",
        &out,
        &[
            "--seed",
            "7",
            "--duration",
            "8s",
            "--threads",
            "20",
            "--warmup",
            "2s",
        ],
    );
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).expect("run writes report.html");
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "the page loads nothing from a network"
    );
    let Some(browser) = browser() else { return };

    let profile = dir.path().join("browser-profile");
    let dom = drawn(&browser, &profile, &page);

    // Every chart drew the run's data: points against the interval log's lines.
    let lines = intervals_per_tag(&out.join("latency.hlog"));
    let groups: Vec<String> = summary["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect();
    let of = |tag: String| lines.get(&tag).copied().unwrap_or(0);
    let group_lines: usize = groups.iter().map(|g| of(g.clone())).sum();
    let warm_lines: usize = groups.iter().map(|g| of(format!("warmup:{g}"))).sum();
    assert!(group_lines > 0 && warm_lines > 0, "{lines:?}");
    assert_eq!(
        points(&dom, "throughput"),
        group_lines + warm_lines,
        "the warm-up is drawn too"
    );
    for g in &groups {
        let drawn = of(g.clone()) + of(format!("warmup:{g}"));
        assert_eq!(points(&dom, &format!("latency:{g}")), 4 * drawn, "{g}");
    }
    assert!(points(&dom, "spectrum") > 10 * (groups.len() + 1));
    assert!(points(&dom, "users") >= group_lines);
    assert!(
        points(&dom, "resources:cpu") > 0,
        "the sampler's CPU readings"
    );

    // The summary table in the page is summary.tsv.
    let tsv = std::fs::read_to_string(out.join("summary.tsv")).unwrap();
    assert_eq!(table_as_tsv(&dom, "summary-table"), tsv.trim_end());

    // A screenshot, kept as a test artefact (docs/report.png is one of these).
    let artefacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artefacts");
    std::fs::create_dir_all(&artefacts).unwrap();
    let shot = artefacts.join("report.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        &browser,
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--virtual-time-budget=5000",
        ],
        &page,
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "{} bytes",
        png.len()
    );

    // --repeat: each run of a group is its own line; nothing is lost between them.
    let repeated = dir.path().join("repeated");
    let (summary, _, _) = server.run_ok(
        "smoke",
        &repeated,
        &[
            "--repeat",
            "2",
            "--seed",
            "7",
            "--threshold",
            "TOTAL.error_pct<100",
        ],
    );
    assert_eq!(summary["runs"].as_array().unwrap().len(), 2);
    let dom = drawn(&browser, &profile, &repeated.join("report.html"));
    let lines = intervals_per_tag(&repeated.join("latency.hlog"));
    let group_lines: usize = groups.iter().filter_map(|g| lines.get(g)).sum();
    assert_eq!(points(&dom, "throughput"), group_lines);
    assert!(dom.contains("insert (run 2)"), "a line per run");
    assert!(dom.contains("spread-table"), "the spread over the runs");
    // The thresholds table, drawn, one row per run, and the exit code the run exited with.
    let table = table_as_tsv(&dom, "thresholds-table");
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows[0], "Run\tThreshold\tValue\tResult", "{table}");
    assert_eq!(rows.len(), 3, "{table}");
    for (run, row) in rows[1..].iter().enumerate() {
        assert!(
            row.starts_with(&format!("{}\tTOTAL.error_pct < 100\t", run + 1))
                && row.ends_with("\tpass"),
            "{row}"
        );
    }
    assert!(dom.contains("data-exit=\"0\""), "the page says exit 0");
}

/// The fault bands a chart drew, by its data-chart name.
fn bands(dom: &str, chart: &str) -> usize {
    let at = dom
        .find(&format!("data-chart=\"{chart}\""))
        .unwrap_or_else(|| panic!("no chart {chart}"));
    let rest = &dom[at..dom[at..].find('>').map_or(dom.len(), |i| at + i)];
    rest.split("data-bands=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("chart {chart} recorded no bands: {rest}"))
}

#[test]
fn a_fault_is_a_band_on_every_time_chart_and_its_account_is_on_the_page() {
    if common::skip_live() {
        return;
    }
    let _turn = common::shared();
    // A pause needs the embedded server: the tool starts its own.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    bin()
        .args([
            "run",
            "smoke",
            "--duration",
            "4s",
            "--fault",
            "pause@1s+1s",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(0);
    let Some(browser) = browser() else { return };
    let dom = drawn(
        &browser,
        &dir.path().join("browser-profile"),
        &out.join("report.html"),
    );
    for chart in ["throughput", "users", "resources:cpu"] {
        assert_eq!(bands(&dom, chart), 1, "{chart}");
    }
    let at = dom.find("id=\"outage\"").expect("the faults' account");
    assert!(
        dom[at..].contains("fault pause@1s+1s at +1."),
        "{}",
        &dom[at..at + 400]
    );
}

#[test]
fn report_rebuilds_the_page_of_an_interrupted_run_and_refuses_a_broken_directory() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("report");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"60s\"\n";
    let path = profile(dir.path(), &db, "drop = true", groups);
    let out = dir.path().join("run");
    let mut child = spawn_run(&path, &server.uri, &out);
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    std::fs::remove_file(out.join("report.html")).expect("the interrupted run wrote a report");

    let rebuilt = bin().arg("report").arg(&out).output().unwrap();
    assert_eq!(rebuilt.status.code(), Some(0), "{rebuilt:?}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let samples = read_json(&out.join("summary.json"))["runs"][0]["rows"][0]["samples"]
        .as_u64()
        .unwrap();
    assert!(samples > 0);
    assert!(
        html.contains(&format!("ins\\t{samples}\\t")),
        "the page holds the completed rows"
    );
    assert!(
        html.contains("\"exit_code\":130"),
        "the page says the run was interrupted"
    );

    // Without the interval log (or the sampler), the run still ends well with a report of its
    // tables.
    let bare = dir.path().join("bare");
    server.run_ok(
        path.to_str().unwrap(),
        &bare,
        &["--duration", "1s", "--no-interval-log", "--no-resources"],
    );
    assert!(!bare.join("latency.hlog").exists());
    let html = std::fs::read_to_string(bare.join("report.html")).unwrap();
    assert!(
        html.contains("\"intervals\":{}"),
        "no curves without the log"
    );
    assert!(html.contains("\"exit_code\":0"), "a clean run says 0");

    // A failed threshold: exit 4, and the page says 4 and lists the threshold that failed.
    let judged = dir.path().join("judged");
    let run = bin()
        .args(["run", path.to_str().unwrap(), "--uri", &server.uri, "--out"])
        .arg(&judged)
        .args(["--duration", "1s", "--no-resources", "--quiet"])
        .args([
            "--threshold",
            "TOTAL.p99<1us",
            "--threshold",
            "TOTAL.error_pct<50",
        ])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(4), "{run:?}");
    let html = std::fs::read_to_string(judged.join("report.html")).unwrap();
    assert!(html.contains("\"exit_code\":4"), "the page says 4");
    assert!(
        // Inside the page's <script>, `<` is written \u003c.
        html.contains("\"threshold\":\"TOTAL.p99 \\u003c 1us\"")
            && html.contains("\"verdict\":\"FAIL\""),
        "the page lists the failed threshold"
    );

    // A directory where an optional file should be is an error naming it, not "not sampled".
    let holed = dir.path().join("holed");
    std::fs::create_dir_all(&holed).unwrap();
    for f in ["summary.json", "summary.tsv", "run.json", "latency.hlog"] {
        std::fs::copy(out.join(f), holed.join(f)).unwrap();
    }
    std::fs::create_dir(holed.join("resources.tsv")).unwrap();
    for cmd in [vec!["report"], vec!["compare", out.to_str().unwrap()]] {
        let refused = bin().args(&cmd).arg(&holed).output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{cmd:?}: {refused:?}");
        let err = String::from_utf8_lossy(&refused.stderr);
        assert!(
            err.contains("resources.tsv cannot be read"),
            "{cmd:?}: {err}"
        );
    }

    // Broken directories: exit 2, a message naming the file, and no page written.
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    for f in ["summary.json", "summary.tsv", "run.json", "latency.hlog"] {
        std::fs::copy(out.join(f), broken.join(f)).unwrap();
    }
    let hlog = std::fs::read_to_string(broken.join("latency.hlog")).unwrap();
    std::fs::write(broken.join("latency.hlog"), &hlog[..hlog.len() - 10]).unwrap();
    let refused = bin().arg("report").arg(&broken).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("latency.hlog") && err.contains("truncated"),
        "{err}"
    );
    std::fs::write(broken.join("latency.hlog"), &hlog).unwrap();
    let tsv = std::fs::read_to_string(broken.join("summary.tsv")).unwrap();
    std::fs::write(broken.join("summary.tsv"), &tsv[..tsv.len() - 3]).unwrap();
    let refused = bin().arg("report").arg(&broken).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("summary.tsv is cut off"));
    std::fs::remove_file(broken.join("summary.json")).unwrap();
    let refused = bin().arg("report").arg(&broken).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("summary.json"));
    assert!(
        !broken.join("report.html").exists(),
        "no half-written report"
    );
}

/// A sweep of a bundled profile on the embedded server runs to its stop reason, every step's
/// run directory is complete, and sweep.html draws its four charts from the steps, lists the
/// steps as sweep.tsv does (their first columns) and links each step's report.
#[test]
fn a_sweep_of_a_bundled_profile_draws_its_page_in_a_browser() {
    let _turn = common::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let done = bin()
        .args([
            "sweep",
            "find",
            "--threads",
            "1,2,3,4,5,6",
            "--step",
            "1s",
            "--warmup",
            "0s",
            "--seed",
            "7",
            "--out",
        ])
        .arg(&out)
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(stdout.contains("stopped: "), "{stdout}");
    let json = read_json(&out.join("sweep.json"));
    let steps = json["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{stdout}");
    for s in steps {
        let d = Path::new(s["dir"].as_str().unwrap());
        for f in [
            "run.json",
            "summary.json",
            "summary.tsv",
            "report.html",
            "latency.hlog",
            "samples.tsv",
            "resources.tsv",
        ] {
            assert!(d.join(f).is_file(), "{} lacks {f}", d.display());
        }
    }
    // history reads a sweep's steps when asked: each step another plan, so a series of its own.
    let refused = bin().arg("history").arg(&out).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--steps"));
    let h = bin()
        .arg("history")
        .arg(&out)
        .args([
            "--steps",
            "--metric",
            "throughput",
            "--label",
            "TOTAL",
            "--out",
        ])
        .arg(dir.path().join("history"))
        .output()
        .unwrap();
    assert_eq!(
        h.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&h.stderr)
    );
    let said = String::from_utf8_lossy(&h.stdout).to_string();
    let h = read_json(&dir.path().join("history/history.json"));
    assert_eq!(
        h["runs"].as_array().unwrap().len(),
        steps.len(),
        "{stdout}\n{said}"
    );
    let series = h["series"].as_array().unwrap();
    assert_eq!(series.len(), steps.len(), "{stdout}\n{said}");
    assert!(
        series
            .iter()
            .all(|s| s["runs"].as_array().unwrap().len() == 1),
        "{stdout}\n{said}"
    );

    let Some(browser) = browser() else { return };
    let dom = drawn(
        &browser,
        &dir.path().join("browser-profile"),
        &out.join("sweep.html"),
    );
    assert_eq!(points(&dom, "latency"), 2 * steps.len(), "{stdout}");
    assert_eq!(
        points(&dom, "latency-throughput"),
        2 * steps.len(),
        "{stdout}"
    );
    assert!(points(&dom, "throughput") >= steps.len(), "{stdout}");
    let table = table_as_tsv(&dom, "sweep-table");
    let tsv = std::fs::read_to_string(out.join("sweep.tsv")).unwrap();
    assert_eq!(table.lines().count(), tsv.lines().count());
    for (shown, written) in table.lines().zip(tsv.lines()).skip(1) {
        let first = |l: &str| l.split('\t').take(5).collect::<Vec<_>>().join("\t");
        assert_eq!(first(shown), first(written));
    }
    assert_eq!(
        dom.matches("href=\"steps/").count(),
        steps.len(),
        "a link per step"
    );

    // The sweep compared with a moved copy of itself: its steps are found under the copy, it
    // differs in nothing, and the page draws both sides.
    let copy = dir.path().join("moved");
    copy_dir(&out, &copy);
    std::fs::remove_dir_all(&out).unwrap();
    let page = dir.path().join("compare.html");
    let compared = bin()
        .arg("compare")
        .arg(&copy)
        .arg(&copy)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&compared.stdout);
    assert_eq!(
        compared.status.code(),
        Some(0),
        "{console}{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    assert!(!console.contains("could not be read"), "{console}");
    assert!(console.contains("same within noise"), "{console}");
    for s in steps {
        for metric in ["throughput", "p99"] {
            let row = format!("{} {metric}", s["threads"]);
            let line = console
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .find(|l| l.starts_with(&row))
                .unwrap_or_else(|| panic!("no row {row}: {console}"));
            // Same within noise, or not judged where a 1 s step has too few intervals.
            assert!(
                line.ends_with("+0.0% same within noise") || line.ends_with("+0.0% -"),
                "{line}"
            );
        }
    }
    let dom = drawn(&browser, &dir.path().join("browser-profile"), &page);
    assert_eq!(points(&dom, "latency"), 2 * steps.len());
    assert!(points(&dom, "throughput") >= 2 * steps.len());
    let table = table_as_tsv(&dom, "compare-table");
    assert_eq!(table.lines().count(), 1 + 5 + 2 * steps.len(), "{table}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
