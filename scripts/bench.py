#!/usr/bin/env python3
"""Is the load generator the bottleneck? Run by scripts/bench.sh; see there."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
DURATION = sys.argv[2] if len(sys.argv) > 2 else "10s"
# Which parts to run: all by default; `parity` the throughput of insert, find and the template
# profile against the bare driver; `instructions` the callgrind counts; `genny` a genny CrudActor insertOne against the same TOML insert (callgrind); `users` RSS with 10^4 to
# 10^6 virtual users; `template` only the template profile against the bare driver;
# `costs` runs only the costs of the sample log, the sampler
# and the interval log; `hlog` only the interval log's; `monitor` only the cost of
# --server-metrics (a real node_exporter, and an endpoint that never answers); `live` only the
# cost of --metrics-listen (scraped every second) and --metrics-push.
PARTS = sys.argv[3] if len(sys.argv) > 3 else "all"
# MONGO_STRESS_BENCH_TOOL: another build of the tool to measure (an earlier commit's, for a
# before-and-after), against the same bare driver.
TOOL = os.environ.get("MONGO_STRESS_BENCH_TOOL", "target/release/mongo-stress")
DRIVER = "target/release/examples/driver"
SERVER = os.environ.get("MONGO_STRESS_SERVER_BIN") or subprocess.run(
    ["sh", "-c", "command -v secantusd-rs"], capture_output=True, text=True).stdout.strip()

work = tempfile.mkdtemp(prefix="mongo-stress-bench-")
log = open(os.path.join(work, "server.log"), "w")
server = subprocess.Popen([SERVER, "--host", "127.0.0.1", "--port", "0", "--storage-path",
                           os.path.join(work, "data"), "--log-level", "WARNING"], stdout=log, stderr=log)
runs = 0


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (stdout, cpu seconds, peak RSS MB)."""
    tfile = os.path.join(work, "time")
    out = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", tfile] + cmd,
                         capture_output=True, text=True, check=True).stdout
    user, system, rss = open(tfile).read().split()[-3:]
    return out, float(user) + float(system), int(rss) / 1024


def tool(profile, threads, *extra):
    global runs
    runs += 1
    out_dir = os.path.join(work, f"run-{runs}")
    _, cpu, rss = timed([TOOL, "run", profile, "--uri", uri, "--threads", str(threads), "--duration",
                         DURATION, "--quiet", "--out", out_dir, *extra])
    total = [r for r in json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
             if r["label"] == "TOTAL"][0]
    return total["samples"], total["throughput"], cpu, rss


# The bare driver's workload for each profile the tool runs here.
WORKLOAD = {"insert": "insert", "find": "find", "scripts/bench-template.toml": "template"}


def base(profile, threads):
    # The bundled insert and find profiles ramp their users up over 2 s; the template's does not.
    ramp = "ramp=0s" if profile.endswith(".toml") else "ramp=2s"
    out, cpu, rss = timed([DRIVER, WORKLOAD[profile], uri, str(threads), DURATION, ramp])
    ops, _secs, rate = out.split()
    return int(ops), float(rate), cpu, rss


def callgrind(cmd):
    """Runs cmd (the tool or the driver) under callgrind: (instructions, wall seconds,
    operations it did)."""
    t0 = time.monotonic()
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                       capture_output=True, text=True, check=True)
    secs = time.monotonic() - t0
    if cmd[0] == TOOL:
        out_dir = cmd[cmd.index("--out") + 1]
        ops = [r for r in json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
               if r["label"] == "TOTAL"][0]["samples"]
    else:
        ops = int(r.stdout.split()[0])
    return int(re.search(r"Collected : (\d+)", r.stderr).group(1)), secs, ops


def tool_cmd(profile, threads, length, *extra):
    global runs
    runs += 1
    how = ["--duration", length] if length.endswith("s") else ["--loops", length]
    return [TOOL, "run", profile, "--uri", uri, "--threads", str(threads), *how, "--quiet",
            "--seed", "1", "--no-resources", "--out", os.path.join(work, f"run-{runs}"), *extra]


def genny_insert():
    """A genny CrudActor's insertOne against the same insert written as a TOML template: the
    marginal instructions per operation of each (two lengths, so start-up cancels), and their
    ratio (issue 47: within 5 %; issue 59: within 3 %). Same users, same document, same tool."""
    def files(repeat):
        g = os.path.join(work, f"genny-{repeat}.yml")
        with open(g, "w") as f:
            f.write("SchemaVersion: 2018-07-01\nActors:\n"
                    "- Name: Writer\n  Type: CrudActor\n  Threads: 50\n  Database: bench_genny\n"
                    f"  Phases:\n  - Repeat: {repeat}\n    Collection: g\n    Operations:\n"
                    "    - OperationName: insertOne\n"
                    "      OperationCommand: {Document: {a: {^RandomInt: {min: 0, max: 1000000}}, s: x}}\n")
        t = os.path.join(work, f"toml-{repeat}.toml")
        with open(t, "w") as f:
            f.write('name = "toml"\n[target]\ndatabase = "bench_genny"\ncollection = "t"\n'
                    '[[group]]\nname = "Writer"\nthreads = 50\n'
                    f'loops = {repeat}\n'
                    '[[group.steps]]\nname = "insertOne"\n'
                    'insertOne = { document = { a = { "^RandomInt" = { min = 0, max = 1000000 } }, s = "x" } }\n')
        return g, t

    def cmd(profile):
        global runs
        runs += 1
        return [TOOL, "run", profile, "--uri", uri, "--quiet", "--seed", "1", "--no-resources",
                "--out", os.path.join(work, f"run-{runs}")]

    short, long = 100, 300
    ops = (long - short) * 50
    # ROUNDS rounds, the two sides in turn (which goes first alternates), each side's marginal
    # instructions per operation in each round: the ratio is the medians', and the spread of
    # the rounds' own ratios is printed beside it, so one reads whether the rounds can tell 3 %.
    per_op = {"genny": [], "toml": []}
    ratios = []
    for rnd in range(ROUNDS):
        order = ("genny", "toml") if rnd % 2 == 0 else ("toml", "genny")
        this = {}
        for kind in order:
            pick = 0 if kind == "genny" else 1
            r = [callgrind(cmd(files(n)[pick])) for n in (short, long)]
            assert r[1][2] - r[0][2] == ops, f"{kind}: {r[1][2]} - {r[0][2]} operations, not {ops}"
            this[kind] = (r[1][0] - r[0][0]) / ops
            per_op[kind].append(this[kind])
        ratios.append(this["genny"] / this["toml"])
        print(f"  round {rnd + 1}: genny {this['genny']:.0f}, toml {this['toml']:.0f}, ratio {ratios[-1]:.3f}",
              flush=True)
    med = {k: statistics.median(v) for k, v in per_op.items()}
    ratio = med["genny"] / med["toml"]
    print(f"\ngenny CrudActor insertOne against the TOML template's (50 users, {short * 50}/{long * 50} ops, "
          f"{ROUNDS} rounds): {med['genny']:.0f} against {med['toml']:.0f} instructions per operation (medians), "
          f"ratio {ratio:.3f}, the rounds' ratios {min(ratios):.3f} to {max(ratios):.3f} (target within 3 %)",
          flush=True)


def solve(load, trickle):
    """instructions = c x operations + p x seconds, from a difference under load and one at a
    trickle (each: instructions, operations, seconds): (c, p)."""
    (di_l, dn_l, dt_l), (di_t, dn_t, dt_t) = load, trickle
    det = dn_l * dt_t - dn_t * dt_l
    return (di_l * dt_t - di_t * dt_l) / det, (dn_l * di_t - dn_t * di_l) / det


def diff(a, b):
    """Two callgrind runs' difference: (instructions, operations, seconds)."""
    return b[0] - a[0], b[2] - a[2], b[1] - a[1]


def part_cost():
    """A coordinated part's instructions per operation against the same part run alone (`run
    --part 0/1`), both under callgrind, the coordinator native beside the part (issue 60: a
    part's per-interval send must add nothing measurable per operation). As `instructions`:
    two lengths under load and two at a trickle, solved for the per-operation and per-second
    costs of each side."""
    import socket

    def free_port():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port

    def linked(*how):
        """The part under callgrind, joined to a native coordinator that runs `how`."""
        global runs
        runs += 1
        port = free_port()
        token = "bench-token-0123456789"
        coord = subprocess.Popen([TOOL, "run", "insert", "--uri", uri, "--threads", "50", *how,
                                  "--seed", "1", "--no-resources", "--parts", "1", "--coordinator",
                                  f"127.0.0.1:{port}", "--quiet", "--out", os.path.join(work, f"coord-{runs}")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "MONGO_STRESS_TOKEN": token})
        try:
            r = callgrind([TOOL, "part", "--join", f"http://127.0.0.1:{port}", "--token", token,
                           "--join-wait", "30s", "--quiet", "--out", os.path.join(work, f"part-{runs}")])
        finally:
            err = coord.communicate(timeout=300)[1]
        assert coord.returncode == 0, err
        return r

    users, (short, long) = 50, (100, 300)
    ops = (long - short) * users
    alone = [callgrind(tool_cmd("insert", users, str(n), "--part", "0/1")) for n in (short, long)]
    part = [linked("--loops", str(n)) for n in (short, long)]
    alone_t = [callgrind(tool_cmd("insert", users, f"{s}s", "--rate", "2", "--part", "0/1")) for s in (10, 30)]
    part_t = [linked("--duration", f"{s}s", "--rate", "2") for s in (10, 30)]
    raw_a, raw_p = (alone[1][0] - alone[0][0]) / ops, (part[1][0] - part[0][0]) / ops
    net_a, ps_a = solve(diff(*alone), diff(*alone_t))
    net_p, ps_p = solve(diff(*part), diff(*part_t))
    print(f"\na coordinated part against the same part alone (insert, {users} users, {short * users}/{long * users} ops; "
          f"instructions per operation):\n  raw: part {raw_p:.0f}, alone {raw_a:.0f}, ratio {raw_p / raw_a:.4f}\n"
          f"  per-second costs apart: part {net_p:.0f}, alone {net_a:.0f}, ratio {net_p / net_a:.4f}; "
          f"per second of run: part {ps_p / 1e6:.2f} M, alone {ps_a / 1e6:.2f} M "
          f"(the link: {(ps_p - ps_a) / 1e6:.2f} M a second)", flush=True)


def instructions():
    """Marginal instructions per operation, tool against the bare driver, with the per-second
    costs apart (see docs/performance.md). Each side runs each workload at two lengths (the
    difference, so start-up cancels) under load, and at a trickle (2 operations a second) for
    10 s and 30 s. Under valgrind a run lasts far longer than natively, so what a side spends
    per second of run (the tool's intervals and interval log, the driver's monitors) would count
    as per-operation cost; the two differences give two equations, instructions = c x operations
    + p x seconds, solved for c (per operation) and p (per second of run)."""
    cases = [
        # name, tool profile, driver workload, users, (loops short, long), open-loop rate
        ("insert", "insert", "insert", 50, (100, 300), None),
        ("find", "find", "find", 50, (40, 120), None),
        ("template", "scripts/bench-template.toml", "template", 50, (100, 300), None),
        ("open loop", "insert", "insert", 50, (60, 180), 400),
    ]
    print(f"\n{'instructions per operation':38} {'tool':>8} {'driver':>8} {'ratio':>6}   "
          f"{'with the per-second costs apart:':>32} {'tool':>8} {'driver':>8} {'ratio':>6}  "
          f"{'per second, M:':>14} {'tool':>6} {'driver':>6}")
    out = {}
    trickle_rate = 2
    for name, profile, workload, users, (short, long), rate in cases:
        extra = ["--rate", str(rate)] if rate else []
        drate = [str(rate)] if rate else []
        ops = (long - short) * users
        t = [callgrind(tool_cmd(profile, users, str(n), *extra)) for n in (short, long)]
        d = [callgrind([DRIVER, workload, uri, str(users), str(n), *drate]) for n in (short, long)]
        tt = [callgrind(tool_cmd(profile, users, f"{s}s", "--rate", str(trickle_rate))) for s in (10, 30)]
        dt = [callgrind([DRIVER, workload, uri, str(users), f"{s}s", str(trickle_rate)]) for s in (10, 30)]
        raw_t, raw_d = (t[1][0] - t[0][0]) / ops, (d[1][0] - d[0][0]) / ops
        net_t, ps_t = solve(diff(*t), diff(*tt))
        net_d, ps_d = solve(diff(*d), diff(*dt))
        out[name] = (raw_t / raw_d, net_t / net_d)
        label = f"{name} ({users} users{f', {rate}/s' if rate else ''}, {short * users}/{long * users} ops)"
        print(f"{label:38} {raw_t:8.0f} {raw_d:8.0f} {raw_t / raw_d:6.3f}   {'':>32} {net_t:8.0f} {net_d:8.0f} "
              f"{net_t / net_d:6.3f}  {'':>14} {ps_t / 1e6:6.2f} {ps_d / 1e6:6.2f}", flush=True)
    # The resource sampler: the tool at a trickle with it on against off, per second.
    on = [callgrind([x for x in tool_cmd("insert", 1, f"{s}s", "--rate", "1") if x != "--no-resources"])
          for s in (10, 30)]
    off = [callgrind(tool_cmd("insert", 1, f"{s}s", "--rate", "1")) for s in (10, 30)]
    per_s = lambda r: (r[1][0] - r[0][0]) / (r[1][1] - r[0][1])
    print(f"the resource sampler: {(per_s(on) - per_s(off)) / 1e6:.2f} M instructions per second of run "
          f"(one operation a second, 10 s and 30 s, with it on against off)")
    print("targets (per-second costs apart): insert and find <= 1.05, the template mix <= 1.10")
    return out


try:
    for _ in range(100):
        m = re.search(r"listening on ([0-9.:]+)", open(os.path.join(work, "server.log")).read())
        if m:
            break
        time.sleep(0.1)
    uri = f"mongodb://{m.group(1)}/?directConnection=true"
    version = subprocess.run([SERVER, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"server: {version}, {os.cpu_count()} cores shared with the client; {DURATION} per run, {ROUNDS} rounds")
    if PARTS in ("all", "parity", "parity-find"):
        print(f"\n{'op':7} {'users':>5} {'round':>5}  {'tool/s':>9} {'driver/s':>9} {'ratio':>6}  "
              f"{'tool cpu':>9} {'drv cpu':>9} {'ratio':>6}  {'tool RSS':>8} {'drv RSS':>8}")
        print(f"{'':7} {'':>5} {'':>5}  {'':>9} {'':>9} {'':>6}  {'s/10k op':>9} {'s/10k op':>9} {'':>6}  "
              f"{'MB':>8} {'MB':>8}")
    lines = []
    for op in (("insert", "find") if PARTS in ("all", "parity") else ("find",) if PARTS == "parity-find" else ()):
        for users in (50, 500):
            tput, cpu = [], []
            for rnd in range(1, ROUNDS + 1):
                # Alternate which side goes first, so neither always meets a warmer server.
                if rnd % 2:
                    t = tool(op, users)
                    b = base(op, users)
                else:
                    b = base(op, users)
                    t = tool(op, users)
                tk, bk = t[2] / t[0] * 1e4, b[2] / b[0] * 1e4
                tput.append(t[1] / b[1])
                cpu.append(tk / bk)
                print(f"{op:7} {users:>5} {rnd:>5}  {t[1]:9.1f} {b[1]:9.1f} {tput[-1]:6.3f}  "
                      f"{tk:9.3f} {bk:9.3f} {cpu[-1]:6.3f}  {t[3]:8.1f} {b[3]:8.1f}", flush=True)
            lines.append(f"{op} at {users} users: throughput ratio {statistics.median(tput):.3f} (median; target >= 0.97), "
                         f"CPU per operation ratio {statistics.median(cpu):.3f}")
    print()
    print("\n".join(lines))

    if PARTS in ("all", "template", "parity"):
        # The profile's own operations (scripts/bench-template.toml) against the bare driver
        # sending the same kinds of commands (examples/driver.rs `template`).
        tpl = "scripts/bench-template.toml"
        tput, cpu = [], []
        print(f"\ntemplate profile ({tpl}: findOne by zipfian ^Key 70, insertOne 20, updateOne $inc 10), 50 users:")
        for rnd in range(1, ROUNDS + 1):
            if rnd % 2:
                t = tool(tpl, 50)
                b = base(tpl, 50)
            else:
                b = base(tpl, 50)
                t = tool(tpl, 50)
            tk, bk = t[2] / t[0] * 1e4, b[2] / b[0] * 1e4
            tput.append(t[1] / b[1])
            cpu.append(tk / bk)
            print(f"  round {rnd}: tool {t[1]:9.1f}/s {tk:.3f} CPU s/10k, driver {b[1]:9.1f}/s {bk:.3f} CPU s/10k, "
                  f"throughput ratio {tput[-1]:.3f}, CPU ratio {cpu[-1]:.3f}", flush=True)
        print(f"template profile at 50 users: throughput ratio {statistics.median(tput):.3f} (median; target >= 0.97), "
              f"CPU per operation ratio {statistics.median(cpu):.3f}")

    if PARTS in ("all", "instructions"):
        instructions()

    if PARTS in ("all", "part"):
        part_cost()
    if PARTS in ("all", "genny"):
        genny_insert()

    if PARTS in ("all", "users"):
        # Open loop at 10,000/s with 10^4, 10^5 and 10^6 virtual users, the sample log on: peak
        # RSS, and the run's own counts against the samples and the server's documents.
        print(f"\n{'users':>9} {'peak RSS MB':>11} {'ops/s':>8} {'late':>8} {'missed':>7} {'samples.tsv':>11} "
              f"{'on server':>9}")
        rss_at = {}
        for n in (10_000, 100_000, 1_000_000):
            runs += 1
            out_dir = os.path.join(work, f"run-{runs}")
            _, _, rss = timed([TOOL, "run", "insert", "--uri", uri, "--threads", str(n), "--rate", "10000",
                               "--duration", "20s", "--quiet", "--out", out_dir])
            total = [r for r in json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
                     if r["label"] == "TOTAL"][0]
            lines = sum(1 for _ in open(os.path.join(out_dir, "samples.tsv"))) - 1
            docs = int(subprocess.run([DRIVER, "count", uri, "cities"], capture_output=True, text=True,
                                      check=True).stdout)
            rss_at[n] = rss
            print(f"{n:9,} {rss:11.1f} {total['throughput']:8.1f} {total['late']:8} {total['missed']:7} "
                  f"{lines:11} {docs:9}", flush=True)
        per_user = (rss_at[1_000_000] - rss_at[10_000]) * 1024 * 1024 / 990_000
        print(f"memory per idle user: {per_user:.0f} bytes ((RSS at 10^6 - RSS at 10^4) / 990,000); "
              f"targets: 10^5 users < 150 MB, 10^6 users < 2 GB")

    if PARTS in ("all", "costs"):
        variants = ["full", "no-samples", "no-resources"]
        rates = {v: [] for v in variants}
        cpus = {v: [] for v in variants}
        for rnd in range(ROUNDS):
            # Rotate the order each round: throughput drifts as the server's files grow.
            for variant in variants[rnd % 3:] + variants[:rnd % 3]:
                extra = [] if variant == "full" else [f"--{variant}"]
                ops, rate, cpu, _ = tool("insert", 50, *extra)
                rates[variant].append(rate)
                cpus[variant].append(cpu / ops * 1e4)
        f, s, r = (statistics.mean(rates[k]) for k in variants)
        fc, sc, rc = (statistics.mean(cpus[k]) for k in variants)
        print(f"\nInsert at 50 users, mean of {ROUNDS} (order rotated):")
        print(f"  everything on:        {f:9.1f}/s  {fc:.3f} CPU s per 10k operations")
        print(f"  without sample log:   {s:9.1f}/s  {sc:.3f}")
        print(f"  without the sampler:  {r:9.1f}/s  {rc:.3f}")
        print(f"the sample log costs {100 * (1 - f / s):.1f} % of throughput (target < 5 %) and "
              f"{100 * (fc / sc - 1):.1f} % CPU per operation; the resource sampler {100 * (1 - f / r):.1f} % "
              f"and {100 * (fc / rc - 1):.1f} %")
    if PARTS in ("all", "monitor"):
        # --server-metrics: a real node_exporter on a free port, and an endpoint that accepts and
        # never answers (each second's scrape waits its whole 500 ms limit).
        import socket
        exporter_bin = os.environ.get("MONGO_STRESS_NODE_EXPORTER") or subprocess.run(
            ["sh", "-c", "command -v prometheus-node-exporter || command -v node_exporter"],
            capture_output=True, text=True).stdout.strip()
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
        free.close()
        exporter = subprocess.Popen([exporter_bin, f"--web.listen-address=127.0.0.1:{port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hang = socket.socket()
        hang.bind(("127.0.0.1", 0))
        hang.listen(1000)
        time.sleep(1)
        variants = {
            "no-resources": ["--no-resources"],
            "sampler": [],
            "node_exporter": ["--server-metrics", f"http://127.0.0.1:{port}/metrics"],
            "hanging": ["--server-metrics", f"http://127.0.0.1:{hang.getsockname()[1]}/metrics"],
        }
        names = list(variants)
        got = {v: ([], [], []) for v in names}
        try:
            for rnd in range(ROUNDS):
                for v in names[rnd % 4:] + names[:rnd % 4]:
                    runs += 1
                    out_dir = os.path.join(work, f"run-{runs}")
                    _, cpu, _ = timed([TOOL, "run", "insert", "--uri", uri, "--threads", "50",
                                       "--duration", DURATION, "--quiet", "--no-samples",
                                       "--out", out_dir, *variants[v]])
                    total = [r for r in json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
                             if r["label"] == "TOTAL"][0]
                    got[v][0].append(total["throughput"])
                    got[v][1].append(cpu / total["samples"] * 1e4)
                    got[v][2].append(total["p99_ms"])
                    print(f"  round {rnd + 1} {v:14} {total['throughput']:9.1f}/s  "
                          f"{got[v][1][-1]:.3f} CPU s per 10k operations  p99 {total['p99_ms']:.2f} ms", flush=True)
        finally:
            exporter.terminate()
            exporter.wait()
            hang.close()
        m = {v: tuple(statistics.mean(x) for x in got[v]) for v in names}
        print(f"\nInsert at 50 users ({DURATION}), mean of {ROUNDS} (order rotated):")
        for v in names:
            print(f"  {v:14} {m[v][0]:9.1f}/s  {m[v][1]:.3f} CPU s per 10k operations  p99 {m[v][2]:.2f} ms")
        for v in ("node_exporter", "hanging"):
            print(f"--server-metrics ({v}) against the sampler alone: throughput ratio "
                  f"{m[v][0] / m['sampler'][0]:.3f}, CPU per operation ratio {m[v][1] / m['sampler'][1]:.3f}, "
                  f"p99 ratio {m[v][2] / m['sampler'][2]:.3f}")
    if PARTS in ("all", "live"):
        # Live metrics: /metrics scraped every second (a scraper thread here, as Prometheus would),
        # and remote write to a receiver here that takes each push; against a run without them.
        # Open loop at a rate the server holds, so every variant sends the same operations and the
        # difference in CPU seconds per second of run is the cost.
        import socket
        import threading
        import urllib.request
        from http.server import BaseHTTPRequestHandler, HTTPServer

        class Sink(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        receiver = HTTPServer(("127.0.0.1", 0), Sink)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        mport = free.getsockname()[1]
        free.close()
        scraping = threading.Event()

        def scraper():
            while True:
                scraping.wait()
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=1).read()
                except Exception:
                    pass
                time.sleep(1)

        threading.Thread(target=scraper, daemon=True).start()
        secs = float(DURATION.rstrip("s"))
        variants = {
            "without": [],
            "listen": ["--metrics-listen", f"127.0.0.1:{mport}"],
            "push": ["--metrics-push", f"http://127.0.0.1:{receiver.server_port}/api/v1/write"],
        }
        names = list(variants)
        got = {v: ([], []) for v in names}
        for rnd in range(ROUNDS):
            for v in names[rnd % 3:] + names[:rnd % 3]:
                runs += 1
                out_dir = os.path.join(work, f"run-{runs}")
                if v == "listen":
                    scraping.set()
                _, cpu, _ = timed([TOOL, "run", "crud-mixed", "--uri", uri, "--threads", "10",
                                   "--rate", "200", "--duration", DURATION, "--quiet", "--no-samples",
                                   "--out", out_dir, *variants[v]])
                scraping.clear()
                total = [r for r in json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
                         if r["label"] == "TOTAL"][0]
                got[v][0].append(total["samples"])
                got[v][1].append(cpu)
                print(f"  round {rnd + 1} {v:8} {total['samples']} operations  {cpu:.3f} CPU s", flush=True)
        receiver.shutdown()
        m = {v: tuple(statistics.mean(x) for x in got[v]) for v in names}
        print(f"\ncrud-mixed, 4 groups at 200/s each ({DURATION}), mean of {ROUNDS} (order rotated):")
        for v in names:
            print(f"  {v:8} {m[v][0]:9.0f} operations  {m[v][1]:.3f} CPU s")
        for v in ("listen", "push"):
            extra = (m[v][1] - m["without"][1]) / secs * 1000
            print(f"--metrics-{v}: {extra:+.1f} ms of CPU per second of run (the resource sampler's, "
                  f"to beat: 3.5 ms/s); CPU ratio {m[v][1] / m['without'][1]:.3f}")
        spread = max(max(c) - min(c) for _, c in got.values()) / secs * 1000
        print(f"(whole-process CPU seconds move by up to {spread:.0f} ms per second of run between rounds "
              f"here: the work itself, measured in-process on the thread's CPU clock:)")
        print(subprocess.run(["target/release/examples/exporter_cost"], capture_output=True,
                             text=True, check=True).stdout, end="")
    if PARTS in ("all", "page"):
        # The live page (--live): no page, the page with no viewer, and 5 viewers reading its
        # events (curl -N, as a browser's EventSource does); open loop at a rate the server holds,
        # so every variant sends the same operations and the difference in CPU is the cost.
        import socket
        secs = float(DURATION.rstrip("s"))
        names = ["without", "page", "5 viewers"]
        got = {v: ([], [], []) for v in names}
        for rnd in range(ROUNDS):
            for v in names[rnd % 3:] + names[:rnd % 3]:
                runs += 1
                out_dir = os.path.join(work, f"run-{runs}")
                free = socket.socket()
                free.bind(("127.0.0.1", 0))
                pport = free.getsockname()[1]
                free.close()
                extra = [] if v == "without" else ["--live", f"127.0.0.1:{pport}"]
                tfile = os.path.join(work, "time")
                run = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", tfile, TOOL, "run", "crud-mixed",
                                        "--uri", uri, "--threads", "10", "--rate", "200", "--duration", DURATION,
                                        "--quiet", "--no-samples", "--out", out_dir, *extra],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                viewers = []
                if v == "5 viewers":
                    while True:
                        try:
                            socket.create_connection(("127.0.0.1", pport), timeout=1).close()
                            break
                        except OSError:
                            time.sleep(0.05)
                    viewers = [subprocess.Popen(["curl", "-sN", "-o", "/dev/null", f"http://127.0.0.1:{pport}/events"])
                               for _ in range(5)]
                run.wait()
                for c in viewers:
                    c.wait(timeout=30)
                user, system, _ = open(tfile).read().split()[-3:]
                cpu = float(user) + float(system)
                total = [r for r in json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
                         if r["label"] == "TOTAL"][0]
                got[v][0].append(total["samples"])
                got[v][1].append(cpu)
                got[v][2].append(total["p99_ms"])
                print(f"  round {rnd + 1} {v:9} {total['samples']} operations  {cpu:.3f} CPU s  p99 {total['p99_ms']:.2f} ms",
                      flush=True)
        m = {v: tuple(statistics.mean(x) for x in got[v]) for v in names}
        print(f"\ncrud-mixed, 4 groups at 200/s each ({DURATION}), mean of {ROUNDS} (order rotated):")
        for v in names:
            print(f"  {v:9} {m[v][0]:9.0f} operations  {m[v][1]:.3f} CPU s  p99 {m[v][2]:.2f} ms")
        for v in ("page", "5 viewers"):
            print(f"--live ({v}): {(m[v][1] - m['without'][1]) / secs * 1000:+.1f} ms of CPU per second of run; "
                  f"CPU ratio {m[v][1] / m['without'][1]:.3f}, operations ratio {m[v][0] / m['without'][0]:.3f}")
        # The server's own stalls set this mix's p99 (open loop: from the intended start).
        print("p99 per round: " + "; ".join(f"{v} {min(got[v][2]):.0f} to {max(got[v][2]):.0f} ms" for v in names))
        spread = max(max(c) - min(c) for _, c, _ in got.values()) / secs * 1000
        print(f"(whole-process CPU seconds move by up to {spread:.0f} ms per second of run between rounds "
              f"here: the work itself, measured in-process:)")
        print(subprocess.run(["target/release/examples/live_cost"], capture_output=True,
                             text=True, check=True).stdout, end="")
    if PARTS in ("monitor", "template", "live", "page", "instructions", "genny", "part", "users", "parity", "parity-find"):
        sys.exit(0)
    # The interval log (latency.hlog) at 1 s intervals, 4 groups at once. Open loop at a rate the
    # server holds, so both variants send the same operations and CPU compares like for like
    # (open loop also logs service time: the most series per interval).
    groups = "".join(
        f'[[group]]\nname = "ins{i}"\nop = "insert"\nthreads = 25\nduration = "{DURATION}"\nrate = 1000\n'
        for i in range(4))
    hlog_profile = os.path.join(work, "hlog.toml")
    with open(hlog_profile, "w") as f:
        f.write('name = "hlog"\n[setup]\ndrop = true\n[document]\n'
                'city = { choice = ["Guangzhou", "Shenzhen"] }\npop = { int = [1, 100] }\n' + groups)
    hl = {"with": ([], []), "without": ([], [])}
    for rnd in range(ROUNDS):
        for variant in (("with", "without") if rnd % 2 == 0 else ("without", "with")):
            extra = [] if variant == "with" else ["--no-interval-log"]
            runs += 1
            out_dir = os.path.join(work, f"run-{runs}")
            _, cpu, _ = timed([TOOL, "run", hlog_profile, "--uri", uri, "--quiet", "--no-samples",
                               "--no-resources", "--out", out_dir, *extra])
            rows = json.load(open(os.path.join(out_dir, "summary.json")))["runs"][0]["rows"]
            total = [r for r in rows if r["label"] == "TOTAL"][0]
            hl[variant][0].append(total["samples"])
            hl[variant][1].append(cpu / total["samples"] * 1e4)
            print(f"  round {rnd + 1} {variant:7} latency.hlog: {cpu / total['samples'] * 1e4:.3f} CPU s per 10k operations", flush=True)
    (wo, wc), (no, nc) = ((statistics.mean(a), statistics.mean(b)) for a, b in (hl["with"], hl["without"]))
    print(f"\n4 insert groups x 25 users at 1,000/s each ({DURATION}), mean of {ROUNDS} (order alternated):")
    print(f"  with latency.hlog:    {wo:9.0f} operations  {wc:.3f} CPU s per 10k operations")
    print(f"  without:              {no:9.0f} operations  {nc:.3f}")
    print(f"the interval log costs {100 * (wc / nc - 1):.1f} % CPU per operation (target < 2 %)")
finally:
    server.terminate()
    server.wait()
    subprocess.run(["rm", "-rf", work])
