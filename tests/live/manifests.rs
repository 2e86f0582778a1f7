//! The Kubernetes files of `deploy/kubernetes/`, checked offline (no cluster): every manifest
//! passes the Kubernetes API schemas in strict mode (unknown fields are errors), and the parts
//! Job agrees with itself and with the merge Job: `completionMode: Indexed`, `completions` ==
//! `parallelism` == the N of `--parts`, a `--start-at` and a `--seed`, every `$(VAR)` an env var of
//! the container, one run directory per part on the shared ReadWriteMany claim, and a merge that
//! reads exactly those directories. A last test breaks copies of the files to show both checks
//! bite.
//!
//! The schemas come with the Python package `kubernetes-validate` (which brings PyYAML, used by
//! the consistency check); scripts/test.sh installs it. Without it these tests fail, never skip;
//! MONGO_STRESS_SKIP_K8S_VALIDATE=1 skips them explicitly.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kubernetes version whose schemas the manifests are validated against: the newest that
/// kubernetes-validate 1.37 bundles (it bundles 1.25 to 1.37; the manifests use nothing newer
/// than Indexed Jobs, GA in 1.24).
const K8S_VERSION: &str = "1.37.0";

/// Checks that the parts Job, the merge Job, the Secret and the claim agree; prints one line
/// per problem and exits 1. Argument: the directory of the manifests.
const CONSISTENCY: &str = r##"
import fnmatch, glob, os, posixpath, re, shlex, sys
import yaml

problems = []
docs = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.y*ml"))):
    with open(path) as f:
        docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d]

def named(kind, name):
    return [d for _, d in docs if d.get("kind") == kind and d.get("metadata", {}).get("name") == name]

def pod(job):
    return job.get("spec", {}).get("template", {}).get("spec", {})

def container(job):
    cs = pod(job).get("containers") or [{}]
    if len(cs) != 1:
        problems.append("%s: expected one container, found %d" % (job["metadata"]["name"], len(cs)))
    return cs[0]

def invocation(c):
    """The words of the program the container runs: the image's entrypoint (mongo-stress) and args,
    or the first mongo-stress command of a `sh -c` script, with "$@" replaced by args."""
    cmd, args = c.get("command") or [], c.get("args") or []
    if len(cmd) >= 3 and cmd[0].endswith("sh") and cmd[1] == "-c":
        lex = shlex.shlex(cmd[2], posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        # The first command of the script that runs mongo-stress (a trap may come first).
        segments, words = [], []
        for w in lex:
            if w in (";", "&&", "||", "|", "&"):
                segments.append(words)
                words = []
                continue
            words += args if w == "$@" else [w]
        segments.append(words)
        return next((s for s in segments if s[:1] == ["mongo-stress"]), segments[0])
    return (cmd or ["mongo-stress"]) + args

def option(words, name):
    if name not in words or words.index(name) + 1 >= len(words):
        return None
    return words[words.index(name) + 1]

def place(job, c, path):
    """(claim, path inside the claim) of a path in a container, through its longest volume mount."""
    mounts = [m for m in c.get("volumeMounts", [])
              if path == m["mountPath"] or path.startswith(m["mountPath"].rstrip("/") + "/")]
    if not mounts:
        problems.append("%s: %s is on no volume mount" % (job["metadata"]["name"], path))
        return None
    m = max(mounts, key=lambda m: len(m["mountPath"]))
    vol = [v for v in pod(job).get("volumes", []) if v["name"] == m["name"]]
    claim = vol[0].get("persistentVolumeClaim", {}).get("claimName") if vol else None
    if not claim:
        problems.append("%s: %s is on volume %s, not a PersistentVolumeClaim: the parts and the merge would not share it" % (job["metadata"]["name"], path, m["name"]))
        return None
    rel = posixpath.normpath(posixpath.join(m.get("subPath", ""), posixpath.relpath(path, m["mountPath"])))
    return claim, rel

jobs = [d for _, d in docs if d.get("kind") == "Job"]
parts = [j for j in jobs if "--parts" in invocation(container(j))]
merges = [j for j in jobs if invocation(container(j))[1:2] == ["merge"]]
if len(parts) != 1 or len(merges) != 1:
    sys.exit("expected one parts Job (run --parts) and one merge Job, found %d and %d" % (len(parts), len(merges)))
pj, mj = parts[0], merges[0]
pname, mname = pj["metadata"]["name"], mj["metadata"]["name"]
pc, mc = container(pj), container(mj)
words = invocation(pc)
spec = pj["spec"]

if words[1:2] != ["run"]:
    problems.append("%s: runs %s, not `mongo-stress run`" % (pname, words))
if spec.get("completionMode") != "Indexed":
    problems.append("%s: completionMode is %r, not Indexed (JOB_COMPLETION_INDEX is set only in an Indexed Job)" % (pname, spec.get("completionMode")))
n = option(words, "--parts")
if not (n or "").isdigit():
    problems.append("%s: --parts %r is not a number" % (pname, n))
    n = None
else:
    n = int(n)
    if spec.get("completions") != n or spec.get("parallelism") != n:
        problems.append("%s: completions (%s), parallelism (%s) and --parts (%s) must be the same N" % (pname, spec.get("completions"), spec.get("parallelism"), n))
if spec.get("backoffLimit") != 0:
    problems.append("%s: backoffLimit is %r: a retried part would start late and a retried part 0 would redo the setup; set 0" % (pname, spec.get("backoffLimit")))
for j in (pj, mj):
    if pod(j).get("restartPolicy") != "Never":
        problems.append("%s: restartPolicy must be Never" % j["metadata"]["name"])
if pc.get("image") != mc.get("image"):
    problems.append("%s and %s run different images: %s, %s" % (pname, mname, pc.get("image"), mc.get("image")))

env = {e["name"]: e for e in pc.get("env", [])}
start = option(words, "--start-at")
if start is None:
    problems.append("%s: no --start-at: the parts would not begin together" % pname)
if option(words, "--seed") is None:
    problems.append("%s: no --seed: each part would draw its own, and merge refuses parts of different seeds" % pname)
for w in (pc.get("command") or []) + (pc.get("args") or []):
    for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", w):
        if var not in env and var != "JOB_COMPLETION_INDEX":
            problems.append("%s: $(%s) is not an env var of the container: Kubernetes would pass it literally" % (pname, var))
ix = env.get("JOB_COMPLETION_INDEX")
if ix and "job-completion-index" not in str(ix.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")):
    problems.append("%s: JOB_COMPLETION_INDEX must come from the job-completion-index annotation" % pname)
uri = env.get("MONGODB_URI", {}).get("valueFrom", {}).get("secretKeyRef")
if "--uri" in words or not uri:
    problems.append("%s: the URI must come from a Secret as env MONGODB_URI, not from args" % pname)
elif not any(uri["key"] in {**s.get("data", {}), **s.get("stringData", {})} for s in named("Secret", uri["name"])):
    problems.append("%s: Secret %s with key %s is not among the manifests" % (pname, uri["name"], uri["key"]))

out = option(words, "--out")
if not out or "$(JOB_COMPLETION_INDEX)" not in out:
    problems.append("%s: --out %r must contain $(JOB_COMPLETION_INDEX): one run directory per part" % (pname, out))
else:
    mwords = invocation(mc)
    mout = option(mwords, "--out")
    inputs = mwords[2:mwords.index("--out")] if "--out" in mwords else mwords[2:]
    inputs = [w for w in inputs if not w.startswith("--")]
    written = [place(pj, pc, out.replace("$(JOB_COMPLETION_INDEX)", str(i))) for i in range(n or 1)]
    read = [place(mj, mc, w) for w in inputs]
    for i, w in enumerate(written):
        if w and not any(r and r[0] == w[0] and fnmatch.fnmatchcase(w[1], r[1]) for r in read):
            problems.append("%s: reads %s (%s), which does not include part %d's %s on claim %s" % (mname, inputs, ", ".join("claim %s" % r[0] for r in read if r) or "no claim", i, w[1], w[0]))
    if mout is None:
        problems.append("%s: merge has no --out" % mname)
    else:
        m = place(mj, mc, mout)
        if m and any(r and r[0] == m[0] and fnmatch.fnmatchcase(m[1], r[1]) for r in read):
            problems.append("%s: its --out %s matches its own inputs %s" % (mname, mout, inputs))
    for claim in {w[0] for w in written if w}:
        pvcs = named("PersistentVolumeClaim", claim)
        if not pvcs:
            problems.append("PersistentVolumeClaim %s is not among the manifests" % claim)
        elif "ReadWriteMany" not in pvcs[0]["spec"].get("accessModes", []):
            problems.append("PersistentVolumeClaim %s must be ReadWriteMany: parts on several nodes write to it" % claim)

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
"##;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes")
}

/// The YAML files of a directory, sorted.
fn manifests(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no YAML files in {}", dir.display());
    files
}

/// False when MONGO_STRESS_SKIP_K8S_VALIDATE=1; panics when python3 or kubernetes-validate is
/// missing.
pub(crate) fn validator_present() -> bool {
    if std::env::var("MONGO_STRESS_SKIP_K8S_VALIDATE").as_deref() == Ok("1") {
        eprintln!("MONGO_STRESS_SKIP_K8S_VALIDATE=1: skipping the Kubernetes manifest checks");
        return false;
    }
    let out = Command::new("python3")
        .args(["-c", "import kubernetes_validate, yaml"])
        .output()
        .unwrap_or_else(|e| panic!("python3 does not start ({e}): the manifest checks need it"));
    assert!(
        out.status.success(),
        "kubernetes-validate is not installed: run scripts/test.sh (installs it), or `python3 -m pip install kubernetes-validate`, or set MONGO_STRESS_SKIP_K8S_VALIDATE=1 to skip\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// Strict schema validation of the files: Err(its output) when it rejects one, or when it could
/// not check a document (its WARN for a kind it has no schema for still exits 0).
pub(crate) fn validate(files: &[PathBuf]) -> Result<String, String> {
    let out = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict", "-k", K8S_VERSION])
        .args(files)
        .output()
        .expect("python3 starts");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let unchecked = text
        .lines()
        .any(|l| l.starts_with("ERROR") || l.starts_with("WARN") || l.starts_with("FATAL"));
    let silent = files.iter().find(|f| {
        !text.lines().any(|l| {
            l.starts_with("INFO ") && l.contains(&*f.to_string_lossy()) && l.contains(" passed ")
        })
    });
    if !out.status.success() || unchecked {
        return Err(text);
    }
    match silent {
        Some(f) => Err(format!(
            "{} was not validated (no document in it?)\n{text}",
            f.display()
        )),
        None => Ok(text),
    }
}

/// The consistency check of the directory: Err(the problems) when the files disagree.
fn consistency(dir: &Path) -> Result<(), String> {
    let out = Command::new("python3")
        .args(["-c", CONSISTENCY])
        .arg(dir)
        .output()
        .expect("python3 starts");
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn every_manifest_passes_the_kubernetes_schemas_strictly() {
    let _turn = crate::common::shared();
    if !validator_present() {
        return;
    }
    let files = manifests(&deploy_dir());
    if let Err(text) = validate(&files) {
        panic!("kubernetes-validate --strict -k {K8S_VERSION} rejected deploy/kubernetes:\n{text}");
    }
}

#[test]
fn parts_job_and_merge_job_agree() {
    let _turn = crate::common::shared();
    if !validator_present() {
        return;
    }
    if let Err(problems) = consistency(&deploy_dir()) {
        panic!("deploy/kubernetes is inconsistent:\n{problems}");
    }
}

/// A copy of deploy/kubernetes with one replacement in one file (which must occur).
fn broken_copy(name: &str, file: &str, from: &str, to: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("manifests-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the copy");
    for f in manifests(&deploy_dir()) {
        let mut text = std::fs::read_to_string(&f).expect("read a manifest");
        if f.file_name().is_some_and(|n| n == file) {
            assert!(text.contains(from), "{file} no longer contains {from:?}");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(dir.join(f.file_name().expect("a name")), text).expect("write the copy");
    }
    dir
}

#[test]
fn broken_copies_are_rejected() {
    let _turn = crate::common::shared();
    if !validator_present() {
        return;
    }
    // A misspelt field: only strict validation sees it.
    let dir = broken_copy("misspelt", "parts-job.yaml", "parallelism:", "paralellism:");
    let text = validate(&manifests(&dir)).expect_err("a misspelt field must be rejected");
    assert!(text.contains("'paralellism' was unexpected"), "{text}");
    // A kind the schemas do not know: kubernetes-validate only warns, the test must not pass it.
    let dir = broken_copy("kind", "secret.yaml", "kind: Secret", "kind: Secrett");
    let text = validate(&manifests(&dir)).expect_err("an unknown kind must be rejected");
    assert!(text.contains("Secrett"), "{text}");
    // Valid YAML for Kubernetes, but N disagrees.
    let dir = broken_copy("n", "parts-job.yaml", "completions: 3", "completions: 4");
    validate(&manifests(&dir)).expect("schema-valid");
    let problems = consistency(&dir).expect_err("completions 4 with --parts 3 must be rejected");
    assert!(
        problems.contains("completions (4), parallelism (3) and --parts (3)"),
        "{problems}"
    );
    // The merge reads another run's directory.
    let dir = broken_copy(
        "merge",
        "merge-job.yaml",
        "/results/run-1/part-*",
        "/results/run-2/part-*",
    );
    let problems = consistency(&dir).expect_err("a merge of other directories must be rejected");
    assert!(
        problems.contains("does not include part 0's run-1/part-0"),
        "{problems}"
    );
}
