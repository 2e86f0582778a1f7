#!/usr/bin/env python3
"""What a long capture costs: a 10-minute capture at 1,000 operations/s is 600,000 operations.
Writes that many slow-operation lines in MongoDB's 4.4+ JSON log format (a chat's reads by
author and room, unread counts, inserts, each with its session fields, 64 connections), then
times `mongo-stress capture --from-log` over them under /usr/bin/time and prints its wall time
and peak RSS against the target (200 MB). A profiler capture holds the same operations in
memory (its source reads `system.profile` into the same `Observed` entries), so the log's
figure stands for both.

    scripts/bench-capture.py [OPERATIONS] [BINARY]   (defaults: 600000, target/release/mongo-stress)"""
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import uuid

N = int(sys.argv[1]) if len(sys.argv) > 1 else 600_000
TOOL = sys.argv[2] if len(sys.argv) > 2 else "target/release/mongo-stress"
TARGET_MB = 200


def write_log(path, n):
    r = random.Random(1)
    t0 = datetime.datetime(2024, 3, 1, 10, 0, 0, tzinfo=datetime.timezone.utc)
    sessions = [str(uuid.UUID(int=r.getrandbits(128))) for _ in range(64)]
    stamp = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    with open(path, "w") as out:
        for i in range(n):
            t = t0 + datetime.timedelta(milliseconds=i)
            common = {"lsid": {"id": {"$uuid": sessions[i % 64]}},
                      "$clusterTime": {"clusterTime": {"$timestamp": {"t": 1709287200 + i // 1000, "i": 1}}},
                      "$db": "chat"}
            author = "u%05d" % int(2000 * r.random() ** 3)
            room = {"$oid": "%024x" % r.randrange(200)}
            k = i % 10
            if k < 4:
                since = {"$date": stamp(t - datetime.timedelta(hours=12)) + "Z"}
                cmd = {"find": "messages", "filter": {"author": author, "created": {"$gte": since}}}
                extra = {"planSummary": "IXSCAN { author: 1, created: -1 }", "keysExamined": 40, "docsExamined": 40, "nreturned": 40}
            elif k < 7:
                cmd = {"aggregate": "messages", "pipeline": [{"$match": {"room_id": room, "read": False}},
                       {"$group": {"_id": 1, "n": {"$sum": 1}}}], "cursor": {}}
                extra = {"planSummary": "IXSCAN { room_id: 1, created: -1 }", "keysExamined": 500, "docsExamined": 500, "nreturned": 1}
            elif k < 9:
                cmd = {"find": "messages", "filter": {"room_id": room}, "sort": {"created": -1}, "limit": 20}
                extra = {"planSummary": "IXSCAN { room_id: 1, created: -1 }", "keysExamined": 20, "docsExamined": 20, "nreturned": 20}
            else:
                cmd = {"insert": "messages", "ordered": True}
                extra = {"ninserted": 1}
            line = {"t": {"$date": stamp(t) + "+00:00"}, "s": "I", "c": "COMMAND", "id": 51803,
                    "ctx": "conn%d" % (i % 64), "msg": "Slow query",
                    "attr": {"type": "command", "ns": "chat.messages", "appName": "chat",
                             "command": {**cmd, **common}, **extra, "durationMillis": 1 + i % 7}}
            out.write(json.dumps(line, separators=(",", ":")) + "\n")


work = tempfile.mkdtemp(prefix="mongo-stress-capture-bench-")
log = os.path.join(work, "mongod.log")
write_log(log, N)
size = os.path.getsize(log)
tfile = os.path.join(work, "time")
done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", tfile, TOOL, "capture", "--from-log", log,
                       "--no-check", "--out", os.path.join(work, "cap")],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if done.returncode != 0:
    sys.exit(f"capture failed ({done.returncode}): {done.stderr}")
wall, rss = open(tfile).read().split()[-2:]
rss_mb = int(rss) / 1024
print(f"capture --from-log of {N:,} operations ({size / 2**20:.0f} MB of log): "
      f"{float(wall):.1f} s, peak RSS {rss_mb:.0f} MB = {rss_mb / TARGET_MB:.2f} x the {TARGET_MB} MB target "
      f"({rss_mb * 1024 * 1024 / N:.0f} bytes per operation)")
subprocess.run(["rm", "-rf", work])
