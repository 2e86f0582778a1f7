#!/usr/bin/env python3
"""Merging many parts: run by scripts/bench.sh (mode `merge`, and in `all`); see there.

Generates PARTS synthetic parts of one run (examples/synth_parts.rs: GROUPS insert groups,
SECONDS long, 1 s intervals, RATE operations per group per part per second), then times
`mongo-stress merge` over them under /usr/bin/time and prints its wall time and peak RSS against
the targets (10 s, 500 MB), and checks the merged count against what was generated."""
import glob
import json
import os
import subprocess
import sys
import tempfile

PARTS = int(os.environ.get("PARTS", "100"))
SECONDS = int(os.environ.get("SECONDS_", "3600"))
GROUPS = int(os.environ.get("GROUPS", "4"))
RATE = int(os.environ.get("RATE", "200"))
TOOL = "target/release/mongo-stress"
SYNTH = "target/release/examples/synth_parts"

work = tempfile.mkdtemp(prefix="mongo-stress-merge-bench-")
try:
    subprocess.run([SYNTH, work, str(PARTS), str(SECONDS), str(GROUPS), str(RATE)], check=True)
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(work, "part-*", "*")))
    lines = sum(1 for l in open(os.path.join(work, "part-0", "latency.hlog")) if l[:1] not in "#\"")
    print(f"{PARTS} parts x {GROUPS} groups x {SECONDS} s, 1 s intervals: "
          f"{lines * PARTS:,} interval histograms, {size / 2**20:.0f} MB on disk")
    parts = sorted(glob.glob(os.path.join(work, "part-*")))
    tfile = os.path.join(work, "time")
    out = os.path.join(work, "merged")
    subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", tfile, TOOL, "merge", *parts, "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    wall, rss = open(tfile).read().split()[-2:]
    wall, rss = float(wall), int(rss) / 1024
    total = [r for r in json.load(open(os.path.join(out, "summary.json")))["runs"][0]["rows"]
             if r["label"] == "TOTAL"][0]["samples"]
    expected = PARTS * GROUPS * SECONDS * RATE
    assert total == expected, f"merged {total} samples, generated {expected}"
    merged_lines = sum(1 for l in open(os.path.join(out, "latency.hlog")) if l[:1] not in "#\"")
    print(f"merge: {wall:.1f} s wall ({wall / 10:.2f} of the 10 s target), "
          f"peak RSS {rss:.0f} MB ({rss / 500:.2f} of the 500 MB target); "
          f"{total:,} samples merged exactly, {merged_lines:,} merged interval histograms")
finally:
    subprocess.run(["rm", "-rf", work])
