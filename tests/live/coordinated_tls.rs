//! A coordinated run over HTTPS: the coordinator given a certificate (`--tls-cert`,
//! `--tls-key`, made here by `openssl` as a CA and a server certificate it signs), the parts
//! trusting that CA (`--tls-ca`). Witnesses: the server's documents, the parts' own summaries;
//! and a part without the CA refused by name, the token in no output.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use mongodb::bson::doc;

const TOKEN: &str = "tls-test-token-0123456789abcdef";

/// A CA, and a certificate for 127.0.0.1 it signs: (ca.pem, cert.pem, key.pem) in `dir`.
fn certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs (Debian's openssl package)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=mongo-stress test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "key.pem",
        "-out",
        "req.pem",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "req.pem",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

#[test]
fn parts_join_an_https_coordinator_by_its_ca_and_a_part_without_it_is_refused_by_name() {
    let Some(server) = TestServer::start() else {
        return common::skipped("MONGO_STRESS_SKIP_LIVE");
    };
    let tmp = tempfile::tempdir().unwrap();
    certificates(tmp.path());
    let db = unique_db("coordinated_tls");
    let groups = "[[group]]\nname = \"insert\"\nop = \"insert\"\nthreads = 2\nrate = 100\nduration = \"3s\"\n";
    let profile = common::profile(tmp.path(), &db, "drop = true", groups);
    let port = free_port();
    let out = tmp.path().join("coordinated");
    let coord = Command::new(bin_path())
        .args(["run", profile.to_str().unwrap(), "--uri", &server.uri])
        .args([
            "--parts",
            "2",
            "--coordinator",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--tls-cert")
        .arg(tmp.path().join("cert.pem"))
        .arg("--tls-key")
        .arg(tmp.path().join("key.pem"))
        .args(["--quiet", "--out"])
        .arg(&out)
        .env("MONGO_STRESS_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = format!("https://127.0.0.1:{port}");
    let part = |i: u32, ca: bool| {
        let mut c = Command::new(bin_path());
        c.args([
            "part",
            "--join",
            &url,
            "--token",
            TOKEN,
            "--quiet",
            "--join-wait",
            "20s",
        ])
        .args(["--index", &i.to_string(), "--out"])
        .arg(tmp.path().join(format!("part-{i}")));
        if ca {
            c.arg("--tls-ca").arg(tmp.path().join("ca.pem"));
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Without the CA: refused by name, before it joins.
    let refused = part(0, false).wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("is not trusted here") && said.contains("--tls-ca"),
        "{said}"
    );
    let parts: Vec<_> = (0..2).map(|i| part(i, true)).collect();
    let coord = coord.wait_with_output().unwrap();
    let coord_said = format!(
        "{}{}",
        String::from_utf8_lossy(&coord.stdout),
        String::from_utf8_lossy(&coord.stderr)
    );
    assert_eq!(coord.status.code(), Some(0), "{coord_said}");
    assert!(
        coord_said.contains(&format!("part --join {url}")),
        "{coord_said}"
    );
    let mut sum = 0;
    for (i, p) in parts.into_iter().enumerate() {
        let o = p.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.status.code(), Some(0), "part {i}: {text}");
        assert!(!text.contains(TOKEN), "part {i} printed the token");
        let s = read_json(&tmp.path().join(format!("part-{i}/summary.json")));
        sum += row(&s, "insert")["samples"].as_u64().unwrap();
    }
    assert!(
        !coord_said.contains(TOKEN),
        "the coordinator printed the token"
    );
    // Nor any file of the parts' or the merged run (their run.json keeps the command line).
    let mut files = vec![tmp.path().to_path_buf()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if let Ok(text) = std::fs::read_to_string(&p) {
            assert!(!text.contains(TOKEN), "{} holds the token", p.display());
        }
    }
    let merged = read_json(&out.join("summary.json"));
    let inserts = row(&merged, "insert")["samples"].as_u64().unwrap();
    assert_eq!(inserts, sum);
    assert!(inserts >= 250, "{inserts}");
    assert_eq!(server.count(&db, "cities", doc! {}), inserts);
}
