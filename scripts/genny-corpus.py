#!/usr/bin/env python3
"""genny's workloads as a test of the tool: every workload of the copy in
../shared/reference/genny validated, and smoke-run (`run --smoke`, every phase once) against
the embedded server, one table row each.

    python3 scripts/genny-corpus.py                 # print the table
    python3 scripts/genny-corpus.py --write         # write it into docs/genny.md
    python3 scripts/genny-corpus.py --check         # fail if docs/genny.md says otherwise
    python3 scripts/genny-corpus.py --validate-only # no smoke runs (seconds, not minutes)

A workload that needs a sharded cluster, encryption, Atlas stream processing or mongosync is
validated but not run here (the embedded server is one replica-set member). Exits 1 when the
genny copy is missing (it says where it looked), or with --check when a row differs.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- corpus: begin (scripts/genny-corpus.py --write) -->"
END = "<!-- corpus: end -->"
# What the embedded server cannot be, by the workload's folder.
NOT_HERE = {
    "sharding": "needs a sharded cluster",
    "encrypted": "needs encryption (a key vault and libmongocrypt)",
    "streams": "needs Atlas stream processing",
    "c2c": "needs mongosync (cluster-to-cluster)",
}
SMOKE_TIMEOUT = 120
VALIDATE_TIMEOUT = 600


def workloads(genny):
    base = os.path.join(genny, "src", "workloads")
    out = []
    for d, _, files in os.walk(base):
        if os.path.relpath(d, base).split(os.sep)[0] == "datasets":
            continue
        for f in files:
            if f.endswith((".yml", ".yaml")):
                out.append(os.path.relpath(os.path.join(d, f), base))
    return base, sorted(out)


def one_line(text, path):
    """The first line of an error, without the file's own path."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("error: "):
            line = line[len("error: "):]
        if not line or line.startswith("fix:") or line.startswith("note:"):
            continue
        line = line.replace(path + " (as a profile)", "the workload as a profile")
        line = line.replace(path + ": ", "").replace(path, "")
        # The directory the tool ran in (its own messages name it), the same on every machine.
        for here in {os.getcwd(), os.path.realpath(os.getcwd())}:
            line = line.replace(here, ".")
        # Paths into the copy, the same on every machine.
        line = re.sub(r"[^\s`'\"(]*shared/reference/genny", "genny", line)
        return line.replace("|", "\\|")
    return "(no message)"


def validate(binary, path):
    # A debug build (CI's) reads a workload of thousands of groups in about a minute.
    try:
        p = subprocess.run([binary, "validate", path], capture_output=True, text=True,
                           timeout=VALIDATE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, f"validate did not end within {VALIDATE_TIMEOUT} s"
    if p.returncode == 0:
        m = re.findall(r"^stage ", p.stdout, re.M)
        g = re.findall(r"^  group ", p.stdout, re.M)
        return True, f"valid: {len(m)} stage(s), {len(g)} group(s)"
    return False, "refused: " + one_line(p.stderr, path)


def first_message(v):
    """The first error message in summary.json's error_messages (whatever its nesting)."""
    if isinstance(v, dict):
        if isinstance(v.get("message"), str):
            return v["message"]
        for x in v.values():
            m = first_message(x)
            if m:
                return m
    elif isinstance(v, list):
        for x in v:
            m = first_message(x)
            if m:
                return m
    elif isinstance(v, str):
        return v
    return ""


def smoke(binary, path):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run")
        try:
            p = subprocess.run(
                [binary, "run", path, "--smoke", "--quiet", "--no-samples", "--out", out],
                capture_output=True, text=True, timeout=SMOKE_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return f"did not end within {SMOKE_TIMEOUT} s"
        summary = os.path.join(out, "summary.json")
        if p.returncode == 0 and "nothing to run: every phase" in p.stderr:
            return "ran: nothing to send (every phase `Nop`); it ends at once, as genny's does"
        if not os.path.exists(summary):
            return f"failed (exit {p.returncode}): " + one_line(p.stderr, path)
        s = json.load(open(summary))
        run = s["runs"][0]
        total = next((r for r in run["rows"] if r["label"] == "TOTAL"), run["rows"][-1])
        ops, errors = total["samples"], total["errors"]
        if errors == 0:
            return f"ran: {ops} operations"
        first = first_message(run.get("error_messages")) or first_message(run.get("error_kinds"))
        first = re.sub(r"\s+", " ", first)[:160].replace("|", "\\|")
        return f"refused by the server: {errors} of {ops} operations: {first}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genny", default=os.path.join(ROOT, "..", "shared", "reference", "genny"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mongo-stress"))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--validate-only", action="store_true")
    ap.add_argument("--changed", action="store_true",
                    help="with --write: run --smoke only for workloads whose validate cell differs "
                         "from docs/genny.md's (or that are not in it); keep the other rows' smoke cells")
    args = ap.parse_args()
    if args.changed and (not args.write or args.validate_only):
        print("genny-corpus: --changed goes with --write (and without --validate-only)", file=sys.stderr)
        return 2
    if not os.path.isdir(os.path.join(args.genny, "src", "workloads")):
        print(f"genny-corpus: genny's workloads are not at {args.genny}/src/workloads; "
              "this check needs ../shared/reference/genny beside the project", file=sys.stderr)
        return 1
    base, files = workloads(args.genny)
    doc = os.path.join(ROOT, "docs", "genny.md")
    kept = {}
    if args.changed:
        text = open(doc).read()
        for l in text[text.index(BEGIN) + len(BEGIN):text.index(END)].splitlines():
            if l.startswith("| `"):
                cells = [c.strip() for c in l.split("|")]
                kept[cells[1].strip("`")] = (cells[2], cells[3])
    rows = []
    began = time.time()
    for rel in files:
        path = os.path.join(base, rel)
        ok, said = validate(args.bin, path)
        folder = rel.split(os.sep)[0]
        if not ok:
            ran = "-"
        elif folder in NOT_HERE:
            ran = "not run here: " + NOT_HERE[folder]
        elif args.validate_only:
            ran = "(not run: --validate-only)"
        elif rel in kept and kept[rel][0] == said:
            ran = kept[rel][1]
        else:
            ran = smoke(args.bin, path)
        rows.append((rel, said, ran))
        print(f"{rel}\t{said}\t{ran}", file=sys.stderr)
    valid = sum(1 for r in rows if r[1].startswith("valid"))
    ran = sum(1 for r in rows if r[2].startswith("ran"))
    server = sum(1 for r in rows if r[2].startswith("refused by the server"))
    head = f"{len(rows)} workloads: {valid} validate, {len(rows) - valid} are refused by the tool"
    if args.validate_only:
        head += " (written with --validate-only: the smoke runs are not in this table)."
    else:
        head += (f"; of those that validate, {ran} ran every phase once (`--smoke`) against the "
                 f"embedded server, {server} ran with some operations refused by the server.")
    lines = [
        head,
        "",
        "| workload | validate | `run --smoke` on the embedded server |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{r[0]}` | {r[1]} | {r[2]} |" for r in rows]
    table = "\n".join(lines)
    print(f"genny-corpus: {len(rows)} workloads, {valid} valid, {ran} ran, {server} with server refusals, "
          f"{time.time() - began:.0f} s", file=sys.stderr)
    if args.write or args.check:
        text = open(doc).read()
        i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
        if args.check:
            old = text[i:j].strip().splitlines()
            new = table.splitlines()
            # The validate column is exact; the smoke column's kind (ran, refused, failed).
            kind = lambda s: s.split(":")[0]
            olds = {l.split("|")[1].strip(): l for l in old if l.startswith("| `")}
            bad = []
            for l in new:
                if not l.startswith("| `"):
                    continue
                name = l.split("|")[1].strip()
                was = olds.get(name)
                if was is None:
                    bad.append(f"{name}: not in docs/genny.md")
                    continue
                a, b = was.split("|"), l.split("|")
                if a[2].strip() != b[2].strip():
                    bad.append(f"{name}: validate says `{b[2].strip()}`, docs/genny.md `{a[2].strip()}`")
                elif not args.validate_only and kind(a[3].strip()) != kind(b[3].strip()):
                    bad.append(f"{name}: --smoke `{b[3].strip()}`, docs/genny.md `{a[3].strip()}`")
            for b in bad:
                print("genny-corpus: " + b, file=sys.stderr)
            if bad:
                print(f"genny-corpus: {len(bad)} rows differ from docs/genny.md; "
                      "fix: python3 scripts/genny-corpus.py --write", file=sys.stderr)
                return 1
            print("genny-corpus: docs/genny.md agrees", file=sys.stderr)
            return 0
        with open(doc, "w") as f:
            f.write(text[:i] + "\n" + table + "\n" + text[j:])
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
