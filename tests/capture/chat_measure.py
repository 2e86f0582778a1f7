# The work per call of the chat's reads, measured with pymongo alone on both sides: the
# application's own reads (argv[4], as chat_app.py recorded them) on the source database
# (argv[2]), and the replay's reads (its database's system.profile, the profiler on while the
# captured profile ran) on the replay database (argv[3]). Each read is sent again and explained
# (executionStats): documents returned, documents and keys examined, and counted (a count's
# value, or the documents entering the pipeline's $group). Writes the means per kind (argv[5]).
import sys, json, datetime, concurrent.futures
from pymongo import MongoClient, DESCENDING
from bson import json_util
uri, src, rep, app_json, out = sys.argv[1:6]
client = MongoClient(uri)
MOST = 2000
# A read whose figures hardly vary (a limit, a scan of the whole collection) needs few calls.
FEW = {"trending": 20, "room": 100, "rooms_in": 60, "user": 60, "room_title": 40}

FINDS = {"room": ("messages", {"created": -1}, 20), "author": ("messages", None, 0),
         "rooms_in": ("messages", {"created": -1}, 50), "user": ("users", None, 1),
         "room_title": ("rooms", None, 1)}
GROUPS = {"unread": {"_id": 1, "n": {"$sum": 1}}, "trending": {"_id": "$room_id", "n": {"$sum": 1}}}

def execution_stats(d):
    if isinstance(d, dict):
        if isinstance(d.get("executionStats"), dict):
            return d["executionStats"]
        d = list(d.values())
    if isinstance(d, list):
        for v in d:
            s = execution_stats(v)
            if s is not None:
                return s
    return None

def minute(v):
    """A filter's dates to the minute: reads of the same values within a minute are one read,
    measured once (a minute moves a 12-hour window's edge by 0.14 %; the skewed reads ask for
    the same values again and again)."""
    if isinstance(v, dict):
        return {k: minute(x) for k, x in v.items()}
    if isinstance(v, list):
        return [minute(x) for x in v]
    if isinstance(v, datetime.datetime):
        return v.replace(second=0, microsecond=0)
    return v

def measure_once(db, kind, q):
    m = {}
    if kind in FINDS:
        coll, sort, limit = FINDS[kind]
        cmd = {"find": coll, "filter": q}
        if sort:
            cmd["sort"] = sort
        if limit:
            cmd["limit"] = limit
    else:
        pipeline = [{"$match": q}, {"$group": GROUPS[kind]}]
        if kind == "trending":
            pipeline += [{"$sort": {"n": -1}}, {"$limit": 10}]
        cmd = {"aggregate": "messages", "pipeline": pipeline, "cursor": {}}
        m["returned"] = len(list(db.messages.aggregate(pipeline)))
        m["counted"] = db.messages.count_documents(q)
    s = execution_stats(db.command("explain", cmd, verbosity="executionStats")) or {}
    if kind in FINDS:
        # explain ran the find to its end: what it returned, the limit applied
        m["returned"] = s.get("nReturned")
    m["docs_examined"] = s.get("totalDocsExamined")
    m["keys_examined"] = s.get("totalKeysExamined")
    return m

def kind_of(entry):
    """A replay's profiled command: its kind and filter, or None."""
    cmd = entry.get("command", {})
    coll = entry.get("ns", ".").split(".", 1)[1]
    if "find" in cmd:
        f = cmd.get("filter", {})
        # (the tool's own setup reads by _id's type are not the application's)
        if coll == "users":
            return ("user", f) if "name" in f else None
        if coll == "rooms":
            return ("room_title", f) if not isinstance(f.get("_id", {}), dict) else None
        if "author" in f:
            return "author", f
        rid = f.get("room_id")
        if isinstance(rid, dict) and "$in" in rid:
            return "rooms_in", f
        if rid is not None:
            return "room", f
    if "aggregate" in cmd and coll == "messages":
        p = cmd.get("pipeline", [])
        match = p[0].get("$match", {}) if p else {}
        group = next((s["$group"] for s in p if "$group" in s), None)
        if group is None:
            return None
        if group.get("_id") == "$room_id":
            return "trending", match
        if "read" in match:
            return "unread", match
    return None

def means(rows):
    keys = ["returned", "docs_examined", "keys_examined", "counted"]
    return {"calls": len(rows), **{k: (sum(r[k] for r in rows) / len(rows)
            if rows and all(r.get(k) is not None for r in rows) else None) for k in keys}}

def measured(db, calls):
    """Each call's figures (the first of each kind, as many as its kind needs), each distinct
    read measured once, four at a time."""
    count, kept = {}, []
    for c in calls:
        count[c[0]] = count.get(c[0], 0) + 1
        if count[c[0]] <= FEW.get(c[0], MOST):
            kept.append(c)
    calls = kept
    keys = [(kind, json_util.dumps(minute(q))) for kind, q in calls]
    todo = {k: c for k, c in zip(keys, calls)}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        done = dict(zip(todo, pool.map(lambda c: measure_once(db, c[0], c[1]), todo.values())))
    return [(c[0], done[k]) for k, c in zip(keys, calls)]

def by_kind(rows):
    out = {}
    for kind, m in rows:
        if len(out.setdefault(kind, [])) < FEW.get(kind, MOST):
            out[kind].append(m)
    return out

source = by_kind(measured(client[src], [(op["kind"], op["q"]) for op in json_util.loads(open(app_json).read())]))
# The profiler off first: the measuring's own reads are not the replay's.
client[rep].command("profile", 0)
replay_calls = [k for k in map(kind_of, client[rep]["system.profile"].find({}).sort("ts", 1)) if k]
replay = by_kind(measured(client[rep], replay_calls))
json.dump({k: {"source": means(source.get(k, [])), "replay": means(replay.get(k, []))}
           for k in sorted(set(source) | set(replay))}, open(out, "w"), indent=1)
