# The chat application's reads and writes, skewed as its data: the busiest authors and rooms
# are asked for most (the same Zipf ranks as the data). Records each read's kind and filter
# (argv[3]: Extended JSON), which tests/capture/chat_measure.py measures again.
import sys, random, datetime
from bson import json_util
from pymongo import MongoClient, DESCENDING
uri, db_name, out = sys.argv[1], sys.argv[2], sys.argv[3]
c = MongoClient(uri, appname="chat")
db = c[db_name]
r = random.Random(5)
names = [u["name"] for u in db.users.find({}, {"name": 1}).sort("_id", 1)]
rooms = [x["_id"] for x in db.rooms.find({}, {"_id": 1}).sort("_id", 1)]
# The same Zipf ranks as the data: activity and attention go together.
aw = [1.0 / (k + 1) for k in range(len(names))]
rw = [1.0 / (k + 1) ** 0.9 for k in range(len(rooms))]
# The reads whose work varies most per call (an author's, a room's unread count) are the most
# frequent, so that both sides' means are measured over hundreds of calls.
mix = (["author"] * 450 + ["unread"] * 450 + ["room"] * 150 + ["rooms_in"] * 80 + ["user"] * 80
       + ["room_title"] * 40 + ["trending"] * 50 + ["post"] * 60 + ["join"] * 15)
r.shuffle(mix)
done = []
for kind in mix:
    now = datetime.datetime.now(datetime.timezone.utc)
    if kind == "room":
        q = {"room_id": r.choices(rooms, rw)[0]}
        n = len(list(db.messages.find(q).sort("created", DESCENDING).limit(20)))
    elif kind == "author":
        q = {"author": r.choices(names, aw)[0], "created": {"$gte": now - datetime.timedelta(hours=12)}}
        n = len(list(db.messages.find(q)))
    elif kind == "rooms_in":
        q = {"room_id": {"$in": r.choices(rooms, rw, k=5)}}
        n = len(list(db.messages.find(q).sort("created", DESCENDING).limit(50)))
    elif kind == "unread":
        q = {"room_id": r.choices(rooms, rw)[0], "read": False}
        n = db.messages.count_documents(q)
    elif kind == "trending":
        # The costly read: the busiest rooms of the last day, over half the messages.
        q = {"created": {"$gte": now - datetime.timedelta(days=1)}}
        n = len(list(db.messages.aggregate([{"$match": q}, {"$group": {"_id": "$room_id", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}, {"$limit": 10}])))
    elif kind == "user":
        q = {"name": r.choices(names, aw)[0]}
        n = 1 if db.users.find_one(q) else 0
    elif kind == "room_title":
        q = {"_id": r.choices(rooms, rw)[0]}
        n = 1 if db.rooms.find_one(q) else 0
    elif kind == "post":
        db.messages.insert_one({"author": r.choices(names, aw)[0], "room_id": r.choices(rooms, rw)[0], "created": now, "read": False, "text": "y" * 40})
        continue
    else:
        db.users.insert_one({"name": "new%06d" % r.randrange(10**6), "joined": now})
        continue
    done.append({"kind": kind, "q": q, "n": n})
open(out, "w").write(json_util.dumps(done))
