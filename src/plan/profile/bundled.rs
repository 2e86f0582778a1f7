//! Profiles compiled into the binary, so `mongo-stress run insert` works from any directory.
//! The files live in `profiles/`; `tests/profiles.rs` checks every one of them validates.

pub struct Bundled {
    pub name: &'static str,
    pub(crate) summary: &'static str,
    pub text: &'static str,
}

macro_rules! bundled {
    ($($name:literal => $summary:literal),* $(,)?) => {
        pub const ALL: &[Bundled] = &[$(Bundled {
            name: $name,
            summary: $summary,
            text: include_str!(concat!("../../../profiles/", $name, ".toml")),
        }),*];
    };
}

bundled! {
    "smoke" => "a few seconds of all four operations; a first try",
    "insert" => "insert-only stress: 100 threads for 30 s",
    "find" => "find-only stress on 10,000 preloaded documents, indexed on city: 100 threads for 30 s",
    "update" => "update-only stress: $set on random existing documents, 100 threads for 30 s",
    "remove" => "remove-only stress: find one by city, delete it by _id; 50 threads x 200 loops",
    "crud-mixed" => "insert, find, update and remove groups at once: 4 x 50 threads for 20 s",
    "jmeter-2016" => "the 2016 reference experiment's sizes: 1000-thread units one after another, then the mixed run",
    "jmeter-2016-groovy" => "what the 2016 experiment's four Groovy samplers really sent, at its sizes: an acknowledged insert, a count of the whole collection, w:0 updates by a 2016 ObjectId, find one Zhongshan then delete it at w:0",
    "ycsb-a" => "YCSB A, update heavy: 50 % get / 50 % update, zipfian; 100,000 documents loaded first",
    "ycsb-b" => "YCSB B, read mostly: 95 % get / 5 % update, zipfian; 100,000 documents loaded first",
    "ycsb-c" => "YCSB C, read only: 100 % get, zipfian; 100,000 documents loaded first",
    "ycsb-d" => "YCSB D, read latest: 95 % get / 5 % insert, latest; 100,000 documents loaded first",
    "ycsb-e" => "YCSB E, short ranges: 95 % scan (up to 100) / 5 % insert, zipfian; 100,000 loaded first",
    "ycsb-f" => "YCSB F, read-modify-write: 50 % get / 50 % rmw, zipfian; 100,000 documents loaded first",
    "transfer" => "the bank test: transfers between accounts in transactions, then the check that no money was made or lost",
    "kill-under-load" => "the write audit: inserts, $inc counters and reads while the embedded server is killed and started again; what it kept of the acknowledged writes",
    "orders" => "your own workload, by example: a range query with sort and limit, an aggregation, batched inserts, an upsert, on two collections",
    "group-scan" => "server-bound: an unindexed $group over 20,000 orders, for `sweep` on one machine beside the server",
    "change-streams" => "200 inserts/s for 20 s while 15 listeners each hold a change stream with a $match: every event's lag, and whether any went missing",
}

pub fn get(name: &str) -> Option<&'static str> {
    ALL.iter().find(|b| b.name == name).map(|b| b.text)
}
