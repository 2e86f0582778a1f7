#!/usr/bin/env python3
"""Reproduces every quoted command output in README.md and docs/*.md with the binary.

    scripts/check-docs.py [BINARY]          check every marked block (default binary:
                                            $MONGO_STRESS_BIN, else target/release/mongo-stress)
    scripts/check-docs.py --list            list every output block: checked (with its command)
                                            or not (with the reason), and run nothing
    scripts/check-docs.py --only README.md:597 [--show] [--reuse DIR]
                                            check the blocks whose file:line contains the text;
                                            --show prints what the command printed, --reuse
                                            keeps it in DIR and reads it from there next time
                                            (for editing a quote)

The convention. A fenced block that quotes what a command prints is marked by an HTML comment
right before it (blank lines between are allowed):

    <!-- output of: mongo-stress compare results/before results/after
         setup: mongo-stress run insert --repeat 2 --duration 2s --out results/before
         setup: mongo-stress run insert --repeat 2 --duration 2s --out results/after
         exit: 0,4
         note: 2 runs of 2 s a side instead of 3 of 5 s -->

The command runs in a fresh temporary directory (so results/ goes there) through bash, with
`mongo-stress` on PATH meaning the binary under test, $REPO the repository, no MONGODB_URI (the
embedded server starts by itself), stdout and stderr read as one stream. Further lines of the
comment, each `key: value`:

    output of: CMD   another command; the outputs are read one after the other
    setup: CMD       run first, in the same directory, its output ignored (repeatable); it must
                     exit 0, 1, 4 or 5 (something ran)
    exit: N[,N...]   the exit codes the (last) command may end with (default 0)
    shape: lines     (default) each quoted line, normalised, equals an actual line
    shape: columns   each quoted line of columns (words two spaces apart or more) has its words
                     among an actual line's, in order, with the same first word: for tables
                     quoted with columns trimmed (other lines as `lines`)
    file: PATH       compare with this file (relative to the directory) instead of the console
    artefact: PATH   run nothing: compare with this file of the repository, kept by a live test
                     that ran the command (`output of:` then names the test); skipped, and said
                     so, when the file is absent (scripts/test.sh runs the live tests first)
    env: NAME=VALUE  set for every command of the block (repeatable)
    tries: N         run it up to N times until the quote matches: for an output that depends on
                     timing (a kill that loses no write this time)
    note: TEXT       what differs from the command quoted (shortened, fewer loops, ...)

A block that quotes an output the checker cannot reproduce here (a remote deployment, a proxy of
the live tests, minutes of load) is marked `<!-- not checked: REASON -->` instead; --list prints
the reasons. A block without a language (or `text`, `console`, `output`) must carry one of the
two marks; `sh`, `toml`, `json` blocks are commands, profiles and files, not outputs.

The comparison is of shape. Both texts are normalised: URLs, dates, paths, numbers (-> #) and
durations (-> <dur>) masked, lists as long as the run made (`transactions x retries: ...`,
`lost _ids ...`) one item, compare's verdicts and a gate's pass or FAILED masked, runs of dashes
and of spaces made one. The quote's lines (blank lines left out) must then be found in the
actual output (blank lines left out too) as they follow one another there: a `...` line says
that lines are left out, and only there may the output have lines the quote lacks. A quote is
an excerpt (it may begin and end anywhere) unless it begins with `$ command`: the lines after
that line (up to a `...`) are the first ones that command printed (one `$` line per `output
of:`). A failure prints the doc's file:line, the command, the first quoted line not found and
the actual lines nearest to it, and the script exits 1.
"""
from __future__ import annotations

import argparse
import difflib
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md"] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "docs", "*.md")))
OUTPUT_LANGS = {"", "text", "console", "output"}
TIMEOUT_S = 90
SETUP_OK = {0, 1, 4, 5}


@dataclass
class Marker:
    commands: list[str] = field(default_factory=list)
    setups: list[str] = field(default_factory=list)
    exits: set[int] = field(default_factory=lambda: {0})
    shape: str = "lines"
    file: str | None = None
    artefact: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""
    tries: int = 1


@dataclass
class Block:
    path: str
    line: int  # 1-based line of the opening fence
    lang: str
    body: list[tuple[int, str]]  # (1-based line, text)
    marker: Marker | None
    reason: str | None  # `not checked: REASON`
    error: str | None = None  # a malformed mark


# ---------------------------------------------------------------------------------------------
# Reading the docs


FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


def parse_comment(text: str) -> tuple[Marker | None, str | None, str | None]:
    """(marker, reason, error) of an HTML comment's inside."""
    text = text.strip()
    if text.startswith("not checked:"):
        return None, " ".join(text[len("not checked:"):].split()), None
    if not text.startswith("output of:"):
        return None, None, None
    m = Marker()
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw:
            continue
        key, sep, value = raw.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            return None, None, f"marker line `{raw}` is not `key: value`"
        if key == "output of":
            m.commands.append(value)
        elif key == "setup":
            m.setups.append(value)
        elif key == "exit":
            try:
                m.exits = {int(v) for v in value.replace(" ", "").split(",")}
            except ValueError:
                return None, None, f"exit `{value}` is not a list of numbers"
        elif key == "shape":
            if value not in ("lines", "columns"):
                return None, None, f"shape `{value}` is not lines or columns"
            m.shape = value
        elif key == "file":
            m.file = value
        elif key == "artefact":
            m.artefact = value
        elif key == "env":
            name, eq, val = value.partition("=")
            if not eq:
                return None, None, f"env `{value}` is not NAME=VALUE"
            m.env[name.strip()] = val.strip()
        elif key == "tries":
            if not value.isdigit() or int(value) < 1:
                return None, None, f"tries `{value}` is not a number from 1"
            m.tries = int(value)
        elif key == "note":
            m.note = (m.note + " " + value).strip()
        else:
            return None, None, f"unknown marker key `{key}`"
    return m, None, None


def read_blocks(path: str) -> list[Block]:
    lines = open(os.path.join(REPO, path), encoding="utf-8").read().split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i + 1
        while j < len(lines) and not (
            lines[j].strip().startswith(fence[0] * len(fence)) and lines[j].strip().strip(fence[0]) == ""
        ):
            j += 1
        body = []
        for k in range(i + 1, min(j, len(lines))):
            text = lines[k]
            if text.startswith(indent):
                text = text[len(indent):]
            body.append((k + 1, text))
        # The mark: an HTML comment ending on the closest non-blank line above the fence.
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = reason = error = None
        if k >= 0 and lines[k].rstrip().endswith("-->"):
            end = k
            while k >= 0 and "<!--" not in lines[k]:
                k -= 1
            if k >= 0:
                inside = "\n".join(lines[k:end + 1])
                inside = inside[inside.index("<!--") + 4: inside.rindex("-->")]
                marker, reason, error = parse_comment(inside)
        blocks.append(Block(path, i + 1, lang, body, marker, reason, error))
        i = j + 1
    return blocks


def is_output_block(b: Block) -> bool:
    return b.marker is not None or b.reason is not None or b.error is not None or b.lang in OUTPUT_LANGS


# ---------------------------------------------------------------------------------------------
# Normalising


URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s,;)`'\"]+")
DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{8}-\d{6}\b"
)
# A path: absolute, or words joined by `/` (run directories, profiles; also `ops/s`, masked
# alike on both sides).
PATH = re.compile(r"(?<![\w/:.~+-])(?:~?/|\.{1,2}/|[A-Za-z_][\w.-]*/)[\w.@+*-]*(?:/[\w.@+*-]*)*")
NUMBER = re.compile(r"(?<![\w])[+-]?\d+(?:[.,]\d+)*(?:[eE][+-]?\d+)?")
DURATION = re.compile(r"#\s?(?:ms|us|µs|s|m|h|d)\b(?:\s?#\s?(?:ms|us|µs|s|m|h|d)\b)*")
# Lists whose length is the run's: `transactions x retries: 15382 x 0, 1030 x 1, ... at most 31`,
# `lost _ids 16382, 16383, ... and 144 more (audit.tsv)`.
LISTS = [
    (re.compile(r"# x #(?:, # x #)*(?:, \.\.\. at most #)?"), "# x #, …"),
    (re.compile(r"_ids #(?:, #)*(?: and # more \(audit\.tsv\))?"), "_ids #, …"),
]
# compare's verdicts and a gate's outcome: the run's, as its numbers are.
VERDICT = re.compile(r"\b(?:faster|slower|same within noise|higher|lower|same within uncertainty)\b")
GATE = re.compile(r"^(gate .*): (?:pass|FAILED) \(")
DASHES = re.compile(r"-{3,}")
LESS_THAN_NUMBER = re.compile(r"(^|\s)<#")
SPACES = re.compile(r"\s+")


def normalise(line: str, tmp: str | None = None) -> str:
    if tmp:
        line = line.replace(os.path.realpath(tmp), "/tmpdir").replace(tmp, "/tmpdir")
    line = URL.sub("<url>", line)
    line = DATE.sub("<date>", line)
    line = PATH.sub("<path>", line)
    line = NUMBER.sub("#", line)
    # a p-value below the shown precision prints as "<0.0001": still a number of the run
    line = LESS_THAN_NUMBER.sub(r"\1#", line)
    line = DURATION.sub("<dur>", line)
    for pattern, one in LISTS:
        line = pattern.sub(one, line)
    line = VERDICT.sub("<verdict>", line)
    line = GATE.sub(r"\1: <outcome> (", line.strip())
    line = DASHES.sub("---", line)
    return SPACES.sub(" ", line).strip()


def segments(b: Block) -> list[tuple[int | None, list[tuple[int, str, str]]]]:
    """The lines a block asserts, as runs of lines that follow one another in the output:
    (the command whose output the run must begin, or None; [(doc line, raw, normalised)])."""
    segs: list[tuple[int | None, list[tuple[int, str, str]]]] = []
    cur: list[tuple[int, str, str]] = []
    anchor = pending = None
    commands = 0
    for n, raw in b.body:
        s = raw.strip()
        if not s:
            continue
        if s in ("...", "…") or s.startswith("$ "):
            if cur:
                segs.append((anchor, cur))
            cur, anchor, pending = [], None, None
            if s.startswith("$ "):
                pending = commands
                commands += 1
            continue
        if not cur:
            anchor, pending = pending, None
        cur.append((n, raw, normalise(raw)))
    if cur:
        segs.append((anchor, cur))
    return segs


WORDS = re.compile(r"[^\s;,]+|[;,]")


def matches(shape: str, raw: str, quoted: str, actual: str) -> bool:
    if shape == "columns" and re.search(r"\S  +\S", raw.strip()):  # a line of columns
        q, a = WORDS.findall(quoted), WORDS.findall(actual)
        if not q or not a or q[0] != a[0]:
            return False
        it = iter(a)
        return all(word in it for word in q)
    return quoted == actual


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Ran:
    tmp: str
    output: str
    code: int
    seconds: float
    failure: str | None  # a setup that failed, a timeout
    starts: list[int] = field(default_factory=lambda: [0])  # each command's first output line
    tmp_then: str | None = None  # the directory of a run kept by --reuse


def run_shell(cmd: str, cwd: str, env: dict[str, str]) -> tuple[str, int]:
    p = subprocess.Popen(
        ["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        out, _ = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return out.decode("utf-8", "replace") + f"\n[check-docs: killed after {TIMEOUT_S} s]\n", -9
    return out.decode("utf-8", "replace"), p.returncode


def execute(m: Marker, binary: str, shim: str) -> Ran:
    tmp = tempfile.mkdtemp(prefix="check-docs-")
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI" and not k.startswith("MONGO_STRESS_")
           or k in ("MONGO_STRESS_SERVER_BIN",)}
    env["PATH"] = shim + os.pathsep + env.get("PATH", "")
    env["REPO"] = REPO
    env.pop("COLUMNS", None)
    env.update(m.env)
    start = time.monotonic()
    for s in m.setups:
        out, code = run_shell(s, tmp, env)
        if code not in SETUP_OK:
            return Ran(tmp, out, code, time.monotonic() - start,
                       f"setup `{s}` exited {code}:\n" + indent_text(out, 20))
    output, code, starts = "", 0, []
    for c in m.commands:
        out, code = run_shell(c, tmp, env)
        if out and not out.endswith("\n"):
            out += "\n"
        starts.append(output.count("\n"))
        output += out
    failure = None
    if m.file:
        starts = [0]
        try:
            output = open(os.path.join(tmp, m.file), encoding="utf-8", errors="replace").read()
        except OSError as e:
            failure = f"cannot read {m.file}: {e}"
    return Ran(tmp, output, code, time.monotonic() - start, failure, starts)


def indent_text(text: str, limit: int) -> str:
    lines = text.rstrip("\n").split("\n")
    shown = lines[-limit:]
    more = f"    ... ({len(lines) - limit} lines before)\n" if len(lines) > limit else ""
    return more + "".join(f"    | {l}\n" for l in shown)


def check(b: Block, ran: Ran) -> str | None:
    """None when the block's shape is in the output, else what is wrong."""
    m = b.marker
    assert m is not None
    if ran.failure:
        return ran.failure
    if ran.code not in m.exits:
        return (f"exited {ran.code}, expected {' or '.join(map(str, sorted(m.exits)))}:\n"
                + indent_text(ran.output, 25))
    actual_raw = ran.output.rstrip("\n").split("\n")
    # The output's non-blank lines: (line number from 0, normalised), and where each command's
    # output begins among them.
    act: list[tuple[int, str]] = []
    starts: list[int] = []
    for k, raw in enumerate(actual_raw):
        while len(starts) < len(ran.starts) and ran.starts[len(starts)] <= k:
            starts.append(len(act))
        norm = normalise(raw, ran.tmp_then or ran.tmp)
        if norm:
            act.append((k, norm))
    starts += [len(act)] * (len(ran.starts) - len(starts))
    segs = segments(b)
    if sum(1 for _, raw in b.body if raw.strip().startswith("$ ")) != len(starts):
        segs = [(None, seg) for _, seg in segs]  # `$` lines that name no command of the mark
    pos = 0
    for anchor, seg in segs:
        tries = [starts[anchor]] if anchor is not None else range(pos, len(act))
        best_len, best_at = -1, pos
        for at in tries:
            k = 0
            while k < len(seg) and at + k < len(act) and matches(m.shape, seg[k][1], seg[k][2], act[at + k][1]):
                k += 1
            if k == len(seg):
                pos = at + k
                break
            if k > best_len:
                best_len, best_at = k, at
        else:
            n, raw, norm = seg[max(best_len, 0)]
            if best_len > 0 or anchor is not None:
                near = range(max(best_at + best_len - 1, 0), min(best_at + best_len + 2, len(act)))
                where = ("where it should follow the line before it" if best_len > 0 else
                         "the output's first lines: the quote begins right after its `$` line, so "
                         "the output must too (a `...` line there says lines are left out)")
            else:
                near = sorted(sorted(range(pos, len(act)),
                                     key=lambda k: difflib.SequenceMatcher(None, norm, act[k][1]).ratio(),
                                     reverse=True)[:3])
                where = "the nearest" + (f" after the output's line {act[pos - 1][0] + 1}, the last matched"
                                         if pos else "")
            msg = (f"{b.path}:{n}: quoted line not found in the output (shape {m.shape}):\n"
                   f"    quoted:     {raw.strip()}\n"
                   f"    normalised: {norm}\n"
                   f"  actual lines, {where}:\n")
            for k in near:
                msg += f"    {act[k][0] + 1:4}: {actual_raw[act[k][0]].rstrip()}\n"
                msg += f"          {act[k][1]}\n"
            return msg
    return None


# ---------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", nargs="?", help="the mongo-stress binary (default: $MONGO_STRESS_BIN, "
                    "else target/release/mongo-stress)")
    ap.add_argument("--list", action="store_true", help="list the output blocks and their marks; run nothing")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="only the blocks whose FILE:LINE contains TEXT (repeatable)")
    ap.add_argument("--show", action="store_true", help="print each command's output")
    ap.add_argument("--reuse", metavar="DIR", help="keep each command's output in DIR and use it again "
                    "instead of running the command (for editing a quote; not for CI)")
    args = ap.parse_args()

    blocks = [b for p in DOCS for b in read_blocks(p) if is_output_block(b)]
    problems = [f"{b.path}:{b.line}: {b.error}" for b in blocks if b.error]
    problems += [f"{b.path}:{b.line}: a block without a language and without a mark: mark it "
                 f"`<!-- output of: COMMAND -->`, `<!-- not checked: REASON -->`, or give it a language"
                 for b in blocks if not b.error and b.marker is None and b.reason is None]
    checked = [b for b in blocks if b.marker]
    unchecked = [b for b in blocks if b.reason]

    if args.list:
        for b in checked:
            m = b.marker
            extra = f"  [{m.note}]" if m.note else ""
            extra += f"  (from {m.artefact})" if m.artefact else ""
            print(f"checked      {b.path}:{b.line}: {' ; '.join(m.commands)}{extra}")
        for b in unchecked:
            print(f"not checked  {b.path}:{b.line}: {b.reason}")
        for p in problems:
            print(f"UNMARKED     {p}")
        print(f"{len(checked)} blocks checked, {len(unchecked)} not checked, {len(problems)} unmarked")
        return 1 if problems else 0

    binary = args.binary or os.environ.get("MONGO_STRESS_BIN") or os.path.join(REPO, "target/release/mongo-stress")
    binary = os.path.abspath(binary)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"check-docs: no binary at {binary} (give its path, or set MONGO_STRESS_BIN)", file=sys.stderr)
        return 2
    shim = tempfile.mkdtemp(prefix="check-docs-bin-")
    os.symlink(binary, os.path.join(shim, "mongo-stress"))

    if args.only:
        checked = [b for b in checked if any(o in f"{b.path}:{b.line}" for o in args.only)]
    cache: dict[tuple, Ran] = {}
    failures = skipped = 0
    start = time.monotonic()
    try:
        for b in checked:
            m = b.marker
            if m.artefact:
                kept = os.path.join(REPO, m.artefact)
                if not os.path.isfile(kept):
                    skipped += 1
                    print(f"skip {b.path}:{b.line}: {m.artefact} is absent (kept by `{m.commands[0]}`)")
                    continue
                ran = Ran(tempfile.mkdtemp(prefix="check-docs-"), open(kept, encoding="utf-8", errors="replace").read(), 0, 0.0, None)
                cache[("artefact", m.artefact, b.line)] = ran
                wrong = check(b, ran)
                failures += bool(wrong)
                print(f"{'FAIL' if wrong else 'ok  '} {b.path}:{b.line}: {m.artefact} (kept by `{m.commands[0]}`)")
                if wrong:
                    print("  " + wrong.rstrip("\n").replace("\n", "\n  "))
                continue
            key = (tuple(m.setups), tuple(m.commands), tuple(sorted(m.env.items())))
            fresh = key not in cache
            if fresh:
                saved = None
                if args.reuse:
                    os.makedirs(args.reuse, exist_ok=True)
                    saved = os.path.join(args.reuse, hashlib.sha1(repr(key).encode()).hexdigest() + ".json")
                if saved and os.path.isfile(saved):
                    d = json.load(open(saved))
                    cache[key] = Ran(tempfile.mkdtemp(prefix="check-docs-"), d["output"], d["code"], 0.0,
                                     d["failure"], d["starts"])
                    cache[key].tmp_then = d["tmp"]
                else:
                    cache[key] = execute(m, binary, shim)
                    if saved:
                        r = cache[key]
                        json.dump({"output": r.output, "code": r.code, "failure": r.failure,
                                   "starts": r.starts, "tmp": r.tmp}, open(saved, "w"))
            ran = cache[key]
            if args.show:
                print(f"---- {b.path}:{b.line}: {' ; '.join(m.commands)} (exit {ran.code})")
                print(ran.output.rstrip("\n"))
                print("----")
            took = f"{ran.seconds:.1f} s" if fresh else "output above"
            wrong = check(b, ran)
            tried = 1
            while wrong and fresh and tried < m.tries:
                tried += 1
                shutil.rmtree(ran.tmp, ignore_errors=True)
                print(f"again {b.path}:{b.line} (try {tried} of {m.tries}): {wrong.splitlines()[0]}")
                ran = cache[key] = execute(m, binary, shim)
                took = f"{ran.seconds:.1f} s, try {tried}"
                wrong = check(b, ran)
            if wrong:
                failures += 1
                print(f"FAIL {b.path}:{b.line}: {' ; '.join(m.commands)} ({took})")
                print("  " + wrong.rstrip("\n").replace("\n", "\n  "))
            else:
                print(f"ok   {b.path}:{b.line}: {' ; '.join(m.commands)} ({took})")
            sys.stdout.flush()
    finally:
        for ran in cache.values():
            shutil.rmtree(ran.tmp, ignore_errors=True)
        shutil.rmtree(shim, ignore_errors=True)
    for p in problems:
        print(f"UNMARKED {p}")
    print(f"check-docs: {len(checked) - failures - skipped} of {len(checked)} quoted outputs reproduced, "
          f"{failures} failed, {skipped} skipped (no artefact), {len(problems)} unmarked; "
          f"{len(unchecked)} not checked (--list says why); "
          f"{time.monotonic() - start:.0f} s")
    return 1 if failures or problems else 0


if __name__ == "__main__":
    sys.exit(main())
