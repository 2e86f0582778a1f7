#!/usr/bin/env python3
"""Run by scripts/bench-report.sh; see there."""
import os
import re
import subprocess
import sys
import tempfile
import time

BROWSER = sys.argv[1]
TOOL = os.path.abspath("target/release/mongo-stress")
SECONDS = 3600
work = tempfile.mkdtemp(prefix="mongo-stress-report-bench-")
run = os.path.join(work, "run")
groups = "".join(
    f'[[group]]\nname = "g{i}"\nop = "insert"\nthreads = 2\nduration = "4s"\n' for i in range(10))
profile = os.path.join(work, "ten.toml")
open(profile, "w").write('name = "ten"\n[setup]\ndrop = true\n[document]\n'
                         'city = { choice = ["a", "b"] }\npop = { int = [1, 100] }\n' + groups)
subprocess.run([TOOL, "run", profile, "--quiet", "--out", run], check=True, capture_output=True)

# Stretch the interval log: per tag, the real line of the second interval repeated each second.
lines = open(os.path.join(run, "latency.hlog")).read().splitlines()
header = [l for l in lines if l.startswith("#[") and not l.startswith("#[Activity") or l.startswith('"')]
per_tag, activity = {}, None
for l in lines:
    m = re.match(r"Tag=([^,]+),([\d.]+),([\d.]+),([\d.]+),(.*)", l)
    if m and m.group(1) not in per_tag and float(m.group(2)) >= 1.0:
        per_tag[m.group(1)] = m
    if l.startswith("#[Activity") and activity is None and "g9=" in l:
        activity = l.split(": ", 1)[1]
out = header[:]
for t in range(SECONDS):
    for tag, m in per_tag.items():
        out.append(f"Tag={tag},{t:.3f},1.000,{m.group(4)},{m.group(5)}")
    out.append(f"#[Activity {t:.3f} 1.000: {activity}")
open(os.path.join(run, "latency.hlog"), "w").write("\n".join(out) + "\n")
# And resources.tsv to one row a second for the hour.
res = open(os.path.join(run, "resources.tsv")).read().splitlines()
first = int(res[1].split("\t")[0])
rows = [res[0]] + [str(first + 1000 * t) + "\t" + res[1 + t % (len(res) - 1)].split("\t", 1)[1]
                   for t in range(SECONDS)]
open(os.path.join(run, "resources.tsv"), "w").write("\n".join(rows) + "\n")

t0 = time.monotonic()
subprocess.run([TOOL, "report", run], check=True, capture_output=True)
report_s = time.monotonic() - t0
size = os.path.getsize(os.path.join(run, "report.html"))
t0 = time.monotonic()
dom = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update", "--disable-sync",
                      f"--user-data-dir={work}/profile", "--window-size=1300,4000", "--dump-dom",
                      "file://" + os.path.join(run, "report.html")],
                     check=True, capture_output=True, text=True).stdout
browser_s = time.monotonic() - t0
render = re.search(r'data-render-ms="(\d+)"', dom)
errors = "data-errors" in dom
print(f"one hour, 10 groups, 1 s intervals: {len(per_tag)} series x {SECONDS} intervals in latency.hlog")
print(f"report.html: {size / 1e6:.1f} MB (target < 10 MB)")
print(f"mongo-stress report: {report_s:.2f} s (target < 5 s; < 1 s keeps the end of a run within 1 s)")
print(f"Chromium: charts drawn {int(render.group(1)) / 1000 if render else float('nan'):.2f} s after navigation "
      f"(target < 2 s); whole browser run {browser_s:.2f} s; script errors: {'yes' if errors else 'none'}")
subprocess.run(["rm", "-rf", work])
