//! `deploy/kubernetes/coordinated/`, checked offline (no cluster): the kustomization is built as
//! kustomize builds it for the only features it uses (its `labels` on each resource's metadata,
//! and `replacements` that copy a whole field, with `create`, or into the piece of a string
//! between delimiters, selecting list items by a field's value or their own; any other key is
//! refused, so the build below cannot drift from kustomize's); where kubectl is installed, its
//! own kustomize must build the same;
//! every built manifest passes the Kubernetes API schemas strictly (`kubernetes-validate`, as
//! in `manifests.rs`); and the files agree: the coordinator's `--parts N` is the parts Job's
//! `parallelism` and `completions`, the parts join the Service that selects the coordinator's
//! pod on the port it listens on, both read the token from one Secret key and never from their
//! args, the URI only the coordinator's, and the run directories are on the shared claim, one
//! per part, apart from the merged run.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::manifests::{validate, validator_present};

const CHECK: &str = r##"
import copy, os, re, shlex, sys
import yaml

dir = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else None
problems = []

def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]

# The build: kustomize's, for the features this kustomization uses, and nothing else.
k = load(os.path.join(dir, "kustomization.yaml"))[0]
unknown = set(k) - {"apiVersion", "kind", "labels", "resources", "replacements"}
if unknown:
    sys.exit("kustomization.yaml uses %s, which this check does not build: extend it first" % sorted(unknown))
built = []
for r in k.get("resources", []):
    built += load(os.path.join(dir, r))
for l in k.get("labels", []):
    if set(l) - {"pairs"}:
        sys.exit("labels with %s are not built here" % sorted(set(l) - {"pairs"}))
    for d in built:
        d.setdefault("metadata", {}).setdefault("labels", {}).update(l["pairs"])

def select(sel):
    if set(sel) - {"kind", "name"}:
        sys.exit("a selector with %s is not built here" % sorted(set(sel) - {"kind", "name"}))
    return [d for d in built if all(d.get(f) == v if f != "name" else d["metadata"]["name"] == v
                                     for f, v in sel.items())]

for r in k.get("replacements", []):
    src = r["source"]
    if set(src) - {"kind", "name", "fieldPath"}:
        sys.exit("a replacement source with %s is not built here" % sorted(set(src) - {"kind", "name", "fieldPath"}))
    found = select({f: src[f] for f in ("kind", "name") if f in src})
    if len(found) != 1:
        sys.exit("replacement source %s selects %d resources" % (src, len(found)))
    value = found[0]
    for part in src["fieldPath"].split("."):
        value = value[part]
    for t in r["targets"]:
        opts = t.get("options", {})
        if set(t) - {"select", "fieldPaths", "options"} or set(opts) - {"create", "delimiter", "index"}:
            sys.exit("a replacement target with %s is not built here" % t)
        for d in select(t["select"]):
            for fp in t["fieldPaths"]:
                node, parts = d, fp.split(".")
                def key(node, part):
                    # A list's item by a field's value (`[name=x]`) or by its own (`[=x]`).
                    m = re.fullmatch(r"\[([^=]*)=(.*)\]", part)
                    if not m:
                        if part not in node and not opts.get("create"):
                            # kustomize 5 refuses a target field that is not there.
                            sys.exit("replacement target %s of %s is not there" % (fp, d["metadata"]["name"]))
                        return part
                    f, v = m.groups()
                    hits = [i for i, x in enumerate(node if isinstance(node, list) else [])
                            if (x == v if f == "" else isinstance(x, dict) and str(x.get(f)) == v)]
                    if len(hits) != 1:
                        sys.exit("replacement target %s of %s is not there" % (fp, d["metadata"]["name"]))
                    return hits[0]
                for part in parts[:-1]:
                    k = key(node, part)
                    node = node[k] if isinstance(node, list) else node.setdefault(k, {})
                k = key(node, parts[-1])
                if "delimiter" in opts:
                    # The value as the text between two delimiters of a string.
                    pieces = node[k].split(opts["delimiter"])
                    if not 0 <= opts.get("index", 0) < len(pieces):
                        sys.exit("replacement target %s of %s has no piece %s" % (fp, d["metadata"]["name"], opts.get("index", 0)))
                    pieces[opts.get("index", 0)] = str(value)
                    node[k] = opts["delimiter"].join(pieces)
                else:
                    node[k] = copy.deepcopy(value)

if out:
    for i, d in enumerate(built):
        with open(os.path.join(out, "%02d-%s-%s.yaml" % (i, d["kind"].lower(), d["metadata"]["name"])), "w") as f:
            yaml.safe_dump(d, f, sort_keys=False)
    sys.exit(0)

# The checks, on what was built, with the Secrets and the claim the README has you create.
others = load(os.path.join(dir, "token-secret.yaml"))
for f in ("secret.yaml", "results-pvc.yaml"):
    others += load(os.path.join(dir, "..", f))
every = built + others

def named(kind, name):
    return [d for d in every if d.get("kind") == kind and d["metadata"]["name"] == name]

def pod(job):
    return job["spec"]["template"]["spec"]

def container(job):
    return pod(job)["containers"][0]

def words(c):
    cmd, args = c.get("command") or [], c.get("args") or []
    if len(cmd) >= 3 and cmd[1] == "-c":
        lex = shlex.shlex(cmd[2], posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        seg, cur = [], []
        for w in lex:
            if w in (";", "&&", "||", "|", "&"):
                seg.append(cur)
                cur = []
                continue
            cur += args if w == "$@" else [w]
        seg.append(cur)
        return next((s for s in seg if s[:1] == ["mongo-stress"]), seg[0])
    return (cmd or ["mongo-stress"]) + args

def option(ws, name):
    for i, w in enumerate(ws):
        if w == name:
            return ws[i + 1] if i + 1 < len(ws) else None
        if w.startswith(name + "="):
            return w[len(name) + 1:]
    return None

def secret_env(job, var):
    env = {e["name"]: e for e in container(job).get("env", [])}
    ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef")
    if not ref:
        problems.append("%s: %s must come from a Secret" % (job["metadata"]["name"], var))
        return None
    if not any(ref["key"] in {**s.get("data", {}), **s.get("stringData", {})} for s in named("Secret", ref["name"])):
        problems.append("%s: Secret %s with key %s is not among the manifests" % (job["metadata"]["name"], ref["name"], ref["key"]))
    return (ref["name"], ref["key"])

def claim_path(job, path):
    c = container(job)
    mounts = [m for m in c.get("volumeMounts", []) if path.startswith(m["mountPath"].rstrip("/") + "/")]
    if not mounts:
        problems.append("%s: %s is on no volume mount" % (job["metadata"]["name"], path))
        return None
    m = max(mounts, key=lambda m: len(m["mountPath"]))
    vol = [v for v in pod(job)["volumes"] if v["name"] == m["name"]]
    claim = vol[0].get("persistentVolumeClaim", {}).get("claimName") if vol else None
    if not claim:
        problems.append("%s: %s is not on a PersistentVolumeClaim" % (job["metadata"]["name"], path))
        return None
    return claim, os.path.relpath(path, m["mountPath"])

jobs = [d for d in built if d["kind"] == "Job"]
coords = [j for j in jobs if "--coordinator" in words(container(j))]
parts = [j for j in jobs if words(container(j))[1:2] == ["part"]]
services = [d for d in built if d["kind"] == "Service"]
if len(coords) != 1 or len(parts) != 1 or len(services) != 1:
    sys.exit("expected one coordinator Job, one parts Job and one Service, found %d, %d and %d" % (len(coords), len(parts), len(services)))
cj, pj, svc = coords[0], parts[0], services[0]
cw, pw = words(container(cj)), words(container(pj))
cname, pname = cj["metadata"]["name"], pj["metadata"]["name"]
if cw[1:2] not in (["run"], ["sweep"], ["capacity"]):
    problems.append("%s: runs %s, not run, sweep or capacity" % (cname, cw[1:2]))
n = option(cw, "--parts")
spec = pj["spec"]
if not (n or "").isdigit():
    problems.append("%s: --parts %r is not a number" % (cname, n))
elif spec.get("completions") != int(n) or spec.get("parallelism") != int(n):
    problems.append("%s: completions (%s) and parallelism (%s) must be the coordinator's --parts (%s)" % (pname, spec.get("completions"), spec.get("parallelism"), n))
if spec.get("completionMode") != "Indexed":
    problems.append("%s: completionMode must be Indexed (each part's index is JOB_COMPLETION_INDEX)" % pname)
for j in (cj, pj):
    if j["spec"].get("backoffLimit") != 0 or pod(j).get("restartPolicy") != "Never":
        problems.append("%s: backoffLimit 0 and restartPolicy Never (a retried pod would not be part of the run)" % j["metadata"]["name"])
    if "--token" in words(container(j)):
        problems.append("%s: the token must come from a Secret, never from args" % j["metadata"]["name"])
if container(cj).get("image") != container(pj).get("image"):
    problems.append("the coordinator and the parts run different images (a part of another version is refused)")
if secret_env(cj, "MONGO_STRESS_TOKEN") != secret_env(pj, "MONGO_STRESS_TOKEN"):
    problems.append("the coordinator and the parts read the token from different Secrets")
if "--uri" in cw or secret_env(cj, "MONGODB_URI") is None:
    problems.append("%s: the URI must come from a Secret as env MONGODB_URI" % cname)
listen = option(cw, "--coordinator") or ""
port = listen.rsplit(":", 1)[-1]
if not listen.startswith("0.0.0.0:") or not port.isdigit():
    problems.append("%s: --coordinator %r must listen on every address of the pod (0.0.0.0:PORT)" % (cname, listen))
labels = cj["spec"]["template"]["metadata"].get("labels", {})
if any(labels.get(k) != v for k, v in svc["spec"].get("selector", {}).items()) or not svc["spec"].get("selector"):
    problems.append("Service %s does not select the coordinator's pod" % svc["metadata"]["name"])
cports = {p.get("name"): p["containerPort"] for p in container(cj).get("ports", [])}
sport = next((p for p in svc["spec"]["ports"] if cports.get(p.get("targetPort"), p.get("targetPort")) == int(port or 0)), None)
if not sport:
    problems.append("Service %s has no port to the coordinator's %s" % (svc["metadata"]["name"], port))
join = option(pw, "--join")
want = "http://%s:%s" % (svc["metadata"]["name"], sport["port"] if sport else "?")
if join != want:
    problems.append("%s: --join %s, but the coordinator is %s" % (pname, join, want))
if option(pw, "--join-wait") is None:
    problems.append("%s: no --join-wait: a part whose pod starts before the coordinator's would fail" % pname)
pout, cout = option(pw, "--out") or "", option(cw, "--out") or ""
if "$(JOB_COMPLETION_INDEX)" not in pout:
    problems.append("%s: --out %r must contain $(JOB_COMPLETION_INDEX): one run directory per part" % (pname, pout))
merged = claim_path(cj, cout)
for i in range(int(n) if (n or "").isdigit() else 1):
    w = claim_path(pj, pout.replace("$(JOB_COMPLETION_INDEX)", str(i)))
    if w and merged and w[0] == merged[0] and (w[1] + "/").startswith(merged[1] + "/"):
        problems.append("part %d's %s is inside the merged run's %s, which must hold nothing else" % (i, w[1], merged[1]))
for claim in {c[0] for c in [merged] if c}:
    pvcs = named("PersistentVolumeClaim", claim)
    if not pvcs or "ReadWriteMany" not in pvcs[0]["spec"].get("accessModes", []):
        problems.append("PersistentVolumeClaim %s must be among the manifests and ReadWriteMany" % claim)
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
"##;

fn coordinated_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/coordinated")
}

fn python(args: &[&Path]) -> Result<(), String> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(CHECK)
        .args(args)
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

/// The kustomization built into `name`'s directory: one file per resource.
fn built(dir: &Path, name: &str) -> Vec<PathBuf> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("coordinated-{name}"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("create the build's directory");
    python(&[dir, &out]).unwrap_or_else(|e| panic!("the kustomization does not build: {e}"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .expect("read the build")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
}

/// Where kubectl is installed, its own kustomize builds `dir` into the same manifests as
/// `files` (this test's build); without kubectl, this test's build stands alone.
fn same_as_kustomize(dir: &Path, files: &[PathBuf]) {
    let Ok(out) = Command::new("kubectl").arg("kustomize").arg(dir).output() else {
        return;
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let compare = r#"
import sys, yaml
key = lambda d: (d["kind"], d["metadata"]["name"])
theirs = sorted((d for d in yaml.safe_load_all(sys.stdin) if d), key=key)
ours = sorted((yaml.safe_load(open(f)) for f in sys.argv[1:]), key=key)
if theirs != ours:
    sys.exit("kustomize builds:\n%s\nthis test builds:\n%s" % (yaml.safe_dump_all(theirs), yaml.safe_dump_all(ours)))
"#;
    let mut check = Command::new("python3")
        .arg("-c")
        .arg(compare)
        .args(files)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 starts");
    {
        use std::io::Write;
        let mut stdin = check.stdin.take().expect("stdin");
        stdin.write_all(&out.stdout).expect("write the build");
    }
    let done = check.wait_with_output().expect("python3 ends");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// A copy of the directory (and the files of its parent it reads) with `from` replaced by `to`
/// in `file`.
fn broken_copy(name: &str, file: &str, from: &str, to: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("coordinated-broken-{name}"));
    let dir = root.join("coordinated");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&dir).expect("create the copy");
    for f in ["secret.yaml", "results-pvc.yaml"] {
        std::fs::copy(coordinated_dir().join("..").join(f), root.join(f)).expect("copy");
    }
    for e in std::fs::read_dir(coordinated_dir()).expect("read") {
        let f = e.expect("entry").path();
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
fn the_coordinated_form_builds_passes_the_schemas_and_agrees_with_itself() {
    let _turn = crate::common::shared();
    if !validator_present() {
        return;
    }
    let files = built(&coordinated_dir(), "as-is");
    // The coordinator's Job and Service, and the parts' Job.
    assert_eq!(files.len(), 3, "{files:?}");
    let mut every = files.clone();
    every.push(coordinated_dir().join("token-secret.yaml"));
    if let Err(text) = validate(&every) {
        panic!("kubernetes-validate --strict rejected deploy/kubernetes/coordinated:\n{text}");
    }
    let parts = std::fs::read_to_string(
        files
            .iter()
            .find(|f| f.to_string_lossy().contains("mongo-stress-parts"))
            .unwrap(),
    )
    .unwrap();
    assert!(
        parts.contains("completions: 3"),
        "the build sets completions from parallelism:\n{parts}"
    );
    let coordinator = std::fs::read_to_string(
        files
            .iter()
            .find(|f| f.to_string_lossy().contains("job-mongo-stress-coordinator"))
            .unwrap(),
    )
    .unwrap();
    assert!(
        coordinator.contains("- --parts=3"),
        "the build sets the coordinator's --parts from parallelism:\n{coordinator}"
    );
    same_as_kustomize(&coordinated_dir(), &files);
    if let Err(problems) = python(&[&coordinated_dir()]) {
        panic!("deploy/kubernetes/coordinated is inconsistent:\n{problems}");
    }
    // N is in one place: four parts in parallelism are four everywhere.
    let four = broken_copy("four", "parts.yaml", "parallelism: 3", "parallelism: 4");
    let built_four = built(&four, "four");
    let text: String = built_four
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert!(
        text.contains("- --parts=4") && text.contains("completions: 4"),
        "{text}"
    );
    python(&[&four]).unwrap_or_else(|e| panic!("four parts: {e}"));
    // The check bites: N written by hand, the join address, the token's Secret.
    for (name, file, from, to, said) in [
        ("n", "coordinator.yaml", "--parts=N", "--parts=3", "replacement target spec.template.spec.containers.[name=mongo-stress].args.[=--parts=N] of mongo-stress-coordinator is not there"),
        ("join", "parts.yaml", "http://mongo-stress-coordinator:7700", "http://coordinator:7700", "--join http://coordinator:7700, but the coordinator is http://mongo-stress-coordinator:7700"),
        ("token", "parts.yaml", "name: mongo-stress-token", "name: mongo-stress-tokens", "Secret mongo-stress-tokens with key MONGO_STRESS_TOKEN is not among the manifests"),
        ("inside", "parts.yaml", "- /results/run-1/part-", "- /results/run-1/merged/part-", "inside the merged run's"),
    ] {
        let dir = broken_copy(name, file, from, to);
        let problems = python(&[&dir]).expect_err(said);
        assert!(problems.contains(said), "{name}: {problems}");
    }
    // A misspelt field: only strict validation sees it, in the built files too.
    let dir = broken_copy(
        "misspelt",
        "coordinator.yaml",
        "backoffLimit: 0",
        "backofLimit: 0",
    );
    let text = validate(&built(&dir, "misspelt")).expect_err("a misspelt field must be rejected");
    assert!(text.contains("'backofLimit' was unexpected"), "{text}");
}
