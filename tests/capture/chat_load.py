# The chat application's data: 2,000 users (a unique index on name), 200 rooms (ObjectId
# _ids), 20,000 messages whose authors and rooms are Zipf-skewed, over the last two days; the 20
# busiest authors' messages all of the last 6 hours (their dates go with their rank).
import sys, random, datetime
from pymongo import MongoClient, ASCENDING, DESCENDING
from bson import ObjectId
uri, db_name = sys.argv[1], sys.argv[2]
db = MongoClient(uri)[db_name]
r = random.Random(11)
now = datetime.datetime.now(datetime.timezone.utc)
AUTHORS, ROOMS, MESSAGES = 2000, 200, 20000
def zipf_weights(n, s):
    return [1.0 / (k + 1) ** s for k in range(n)]
names = ["u%05d" % r.randrange(100000) for _ in range(AUTHORS)]
names = list(dict.fromkeys(names))
while len(names) < AUTHORS:
    n = "u%05d" % r.randrange(100000)
    if n not in names: names.append(n)
db.users.insert_many([{"name": n, "joined": now - datetime.timedelta(days=r.random() * 300)} for n in names])
db.users.create_index("name", unique=True)
rooms = [ObjectId() for _ in range(ROOMS)]
db.rooms.insert_many([{"_id": rid, "title": "room %d" % i} for i, rid in enumerate(rooms)])
aw, rw = zipf_weights(AUTHORS, 1.0), zipf_weights(ROOMS, 0.9)
docs = []
for i in range(MESSAGES):
    # every author has one message at least
    rank = i if i < AUTHORS else r.choices(range(AUTHORS), aw)[0]
    a = names[rank]
    span = 6 * 3600 if rank < 20 else 2 * 86400
    docs.append({"author": a, "room_id": r.choices(rooms, rw)[0],
                 "created": now - datetime.timedelta(seconds=r.random() * span),
                 "read": r.random() < 0.6, "text": "x" * r.randint(20, 200)})
db.messages.insert_many(docs)
db.messages.create_index([("author", ASCENDING), ("created", DESCENDING)])
db.messages.create_index([("room_id", ASCENDING), ("created", DESCENDING)])
