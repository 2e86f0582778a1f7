//! The sample log and the resource sampler, checked against independent witnesses: the summary's
//! `# Samples`, JMeter's header, the server's opcounters and its process's CPU and disk.

use crate::common;

use common::*;

const JMETER_HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn samples_tsv_and_the_jtl_have_one_line_per_sample_of_the_summary() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("samples");
    let groups = "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 3\nloops = 40\n\
                  [[group]]\nname = \"fnd\"\nop = \"find\"\nthreads = 2\nloops = 30\nfilter = [\"city\"]\n";
    let path = profile(dir.path(), &db, "drop = true\npreload = 100", groups);
    let out = dir.path().join("run");
    let jtl = dir.path().join("run.jtl");
    let (summary, _, _) = server.run_ok(
        path.to_str().unwrap(),
        &out,
        &["--jtl", jtl.to_str().unwrap()],
    );

    let samples = lines(&out.join("samples.tsv"));
    assert_eq!(
        samples[0],
        "start_us\telapsed_us\tgroup\tthread\tok\terror\tsent_bytes\treceived_bytes\tintended_us\tlatency_us\tphase\top"
    );
    assert_eq!(
        (samples.len() - 1) as u64,
        row(&summary, "TOTAL")["samples"].as_u64().unwrap()
    );
    assert_eq!(
        samples
            .iter()
            .filter(|l| l.split('\t').nth(2) == Some("ins"))
            .count(),
        120
    );
    assert_eq!(
        samples
            .iter()
            .filter(|l| l.split('\t').nth(2) == Some("fnd"))
            .count(),
        60
    );
    assert!(samples[1..]
        .iter()
        .all(|l| l.split('\t').count() == 12 && l.split('\t').nth(4) == Some("1")));

    let jtl = lines(&jtl);
    assert_eq!(jtl[0], JMETER_HEADER);
    assert_eq!(jtl.len(), samples.len());
    let first: Vec<&str> = jtl[1].split(',').collect();
    assert_eq!(first.len(), 17);
    assert_eq!(first[7], "true");
    // The same operation in both files: JTL time stamps are the TSV's microseconds in milliseconds.
    let tsv_first: Vec<&str> = samples[1].split('\t').collect();
    assert_eq!(
        first[0].parse::<u64>().unwrap(),
        tsv_first[0].parse::<u64>().unwrap() / 1000
    );
}

#[test]
fn no_samples_writes_no_sample_log() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = profile(
        dir.path(),
        &unique_db("nosamples"),
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 1\nloops = 5\n",
    );
    let out = dir.path().join("run");
    server.run_ok(path.to_str().unwrap(), &out, &["--no-samples"]);
    assert!(!out.join("samples.tsv").exists());
    assert!(out.join("summary.tsv").exists());
}

fn column(header: &str, name: &str) -> usize {
    header
        .split('\t')
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {header}"))
}

#[test]
fn an_insert_run_shows_server_cpu_disk_writes_and_an_insert_rate_matching_the_client() {
    let Some(server) = TestServer::start_alone() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = unique_db("resources");
    let path = profile(
        dir.path(),
        &db,
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 20\nduration = \"6s\"\n",
    );
    let out = dir.path().join("run");
    let (summary, _, _) = server.run_ok(path.to_str().unwrap(), &out, &[]);

    let rows = lines(&out.join("resources.tsv"));
    let h = &rows[0];
    let (cpu, write, inserts) = (
        column(h, "server_cpu_pct"),
        column(h, "disk_write_kbs"),
        column(h, "insert_s"),
    );
    let cells: Vec<Vec<f64>> = rows[1..]
        .iter()
        .map(|l| {
            l.split('\t')
                .map(|c| c.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    assert!(cells.len() >= 5, "one row per second: {rows:?}");
    // The test started the server itself, so the tool found it by its port and sampled its process.
    assert!(cells.iter().any(|c| c[cpu] > 0.0), "server CPU: {rows:?}");
    assert!(
        cells.iter().any(|c| c[write] > 0.0),
        "server disk writes: {rows:?}"
    );

    // Server-side inserts per second over the run against the client's throughput.
    let client = row(&summary, "ins")["throughput"].as_f64().unwrap();
    let res = &summary["resources"][0];
    assert_eq!(res["label"], "ins");
    let server_rate = res["server_ops_s"]["avg"].as_f64().unwrap();
    assert!(
        (server_rate - client).abs() <= client * 0.10,
        "server {server_rate}/s vs client {client}/s"
    );
    let per_second: f64 = cells
        .iter()
        .filter(|c| c[inserts] > 0.0)
        .map(|c| c[inserts])
        .sum();
    let samples = row(&summary, "ins")["samples"].as_f64().unwrap();
    assert!(
        (per_second - samples).abs() <= samples * 0.10,
        "sum of insert_s {per_second} vs {samples} samples"
    );

    let rs = lines(&out.join("resources-summary.tsv"));
    assert!(rs[0].starts_with("Run\tLabel\tSeconds\tClient ops/s\tServer ops/s avg"));
    assert_eq!(rs.len(), 2);
}

#[test]
fn a_server_killed_mid_run_leaves_a_sample_log_matching_the_summary() {
    if skip_live() {
        return;
    }
    let _turn = common::alone();
    // Our own server, so it can be killed.
    let server =
        mongo_stress::server::EmbeddedServer::start(None, &[], None).expect("a server to start");
    let dir = tempfile::tempdir().unwrap();
    let path = profile(
        dir.path(),
        &unique_db("sample_log_killed"),
        "drop = true",
        "[[group]]\nname = \"ins\"\nop = \"insert\"\nthreads = 4\nduration = \"4s\"\n",
    );
    let out = dir.path().join("run");
    let uri = format!("{}&serverSelectionTimeoutMS=1500", server.uri());
    let started = std::time::Instant::now();
    let child = spawn_run(&path, &uri, &out);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    server.stop();
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Done, but with failed operations: exit 1.
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    // Its 4 s, plus one server-selection timeout (1.5 s) for the operations in flight, plus
    // connecting and setup.
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    let summary = read_json(&out.join("summary.json"));
    let ins = row(&summary, "ins");
    assert!(ins["errors"].as_u64().unwrap() > 0, "{ins}");
    let samples = lines(&out.join("samples.tsv"));
    assert_eq!((samples.len() - 1) as u64, ins["samples"].as_u64().unwrap());
    let failed = samples[1..]
        .iter()
        .filter(|l| l.split('\t').nth(4) == Some("0"))
        .count() as u64;
    assert_eq!(failed, ins["errors"].as_u64().unwrap());
}
