//! Every class of bad input the tool is known to meet: each must be refused before any load with
//! the documented exit code and one message that names the place and the fix, never a panic.
//!
//! docs/reliability.md's table under "Bad input" is the list: each of its rows must be a case
//! here, each case a row, in the same order, with the exit code and the first line of the message
//! as the tool prints it now, so the docs and the tool cannot drift apart unnoticed.
//! `BAD_INPUT_UPDATE_DOCS=1 cargo test --test fast bad_input` rewrites that table from what the tool
//! printed; `BAD_INPUT_TABLE=path` writes it to a file of its own.
//!
//! Nearly every case is refused before the tool looks for a server, so the first test needs none
//! (it is in `scripts/test.sh --fast`). The few refused only after the server is reached (the
//! JTL file is created once the server's URI is known) run in a live test of their own, against a
//! real server.

use crate::common;

use std::path::Path;

use common::{bin, TestServer};

const DOCS: &str = "docs/reliability.md";
const TABLE_HEADER: &str = "| # | input | exit | message (first line) |";

const DOC: &str = "[document]\ncity = { choice = [\"a\", \"b\"] }\n";
const INS: &str = "[[group]]\nname = \"g\"\nop = \"insert\"\n";
/// A collection with a document template, and a group of one operation on it (its table next).
const COLL: &str = "[[collection]]\nname = \"o\"\n[collection.document]\nstatus = \"open\"\n";
const OWN: &str = "[[group]]\nname = \"g\"\nthreads = 1\nloops = 1\n";

/// A profile of the collection, with `doc` added to its document, and the group's `op` table.
fn own(desc: &'static str, doc: &str, op: &str) -> Input {
    Input::Profile(desc, format!("{COLL}{doc}{OWN}{op}"))
}

enum Input {
    /// A profile file's text (after the document and group header when `grouped`).
    Profile(&'static str, String),
    /// Command-line arguments after `mongo-stress`.
    Args(&'static str, Vec<String>),
    /// Command-line arguments refused only once a server is reached: `--uri` of a real one is
    /// added, so these run in the live test.
    Live(&'static str, Vec<String>),
}

impl Input {
    /// The profile with its collection dropped first (no documents left for `^Key`).
    fn with_drop(self) -> Input {
        match self {
            Input::Profile(d, text) => Input::Profile(
                d,
                text.replacen("name = \"o\"\n", "name = \"o\"\ndrop = true\n", 1),
            ),
            other => other,
        }
    }

    fn desc(&self) -> &'static str {
        match self {
            Input::Profile(d, _) | Input::Args(d, _) | Input::Live(d, _) => d,
        }
    }
}

fn grouped(desc: &'static str, rest: &str) -> Input {
    Input::Profile(desc, format!("{DOC}{INS}{rest}"))
}

fn args(desc: &'static str, a: &[&str]) -> Input {
    Input::Args(desc, a.iter().map(|s| s.to_string()).collect())
}

fn live(desc: &'static str, a: &[&str]) -> Input {
    Input::Live(desc, a.iter().map(|s| s.to_string()).collect())
}

/// The cases, and the closed port the refused connection tries.
fn cases(dir: &Path) -> (Vec<(Input, i32, &'static str)>, u16) {
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("run").to_string_lossy().into_owned();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = format!("mongodb://127.0.0.1:{closed}/?serverSelectionTimeoutMS=1000");
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "shopping list\nmilk\n").unwrap();
    let notes = notes.to_string_lossy().into_owned();
    let paced = dir.join("paced.toml");
    std::fs::write(
        &paced,
        format!("{DOC}{INS}threads = 1\nduration = \"5s\"\nrate = 5000000\n"),
    )
    .unwrap();
    let paced = paced.to_string_lossy().into_owned();
    let misspelt_stage = dir.join("stage.toml");
    std::fs::write(
        &misspelt_stage,
        format!("{COLL}{OWN}[group.aggregate]\npipeline = [ {{ \"$matchh\" = {{ status = \"open\" }} }} ]\n"),
    )
    .unwrap();
    // A profile beside the one a user will mistype.
    std::fs::write(
        dir.join("my-profile.toml"),
        format!("{DOC}{INS}threads = 1\nloops = 1\n"),
    )
    .unwrap();
    // A unique index and a value that repeats: the server refuses the preload.
    let repeats = dir.join("repeats.toml");
    std::fs::write(
        &repeats,
        format!(
            "[target]\ndatabase = \"ms_bad_input_unique\"\n[[collection]]\nname = \"u\"\ndrop = true\npreload = 10\nindexes = [{{ keys = {{ k = 1 }}, unique = true }}]\n[collection.document]\nk = \"same\"\n{OWN}[group.find]\nfilter = {{}}\n"
        ),
    )
    .unwrap();
    let out_of = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let all = vec![
        (grouped("misspelt key", "thredas = 4\nloops = 1\n"), 2, "did you mean `threads`"),
        (Input::Profile("unknown top-level key", format!("colour = 1\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "unknown key `colour`"),
        (grouped("string where a number belongs", "threads = \"ten\"\nloops = 1\n"), 2, "group[0].threads = \"ten\""),
        (grouped("negative thread count", "threads = -5\nloops = 1\n"), 2, "group[0].threads = -5"),
        (grouped("zero threads", "threads = 0\nloops = 1\n"), 2, "0 threads would run nothing"),
        (grouped("too many threads", "threads = 2000000\nloops = 1\n"), 2, "more than the 1000000"),
        (Input::Profile("no thread group", DOC.to_string()), 2, "no thread group"),
        (grouped("group that never stops", "threads = 1\n"), 2, "neither loops nor duration"),
        (grouped("loops and duration both", "threads = 1\nloops = 1\nduration = \"5s\"\n"), 2, "both loops and duration"),
        (grouped("zero loops", "threads = 1\nloops = 0\n"), 2, "0 loops would run nothing"),
        (grouped("loops beyond reach", "threads = 1\nloops = 9000000000000\n"), 2, "would never finish"),
        (grouped("unparsable duration", "threads = 1\nduration = \"soon\"\n"), 2, "`soon` is not a duration"),
        (grouped("duration over a year", "threads = 1\nduration = \"400days\"\n"), 2, "longer than a year"),
        (Input::Profile("unknown operation", format!("{DOC}[[group]]\nname = \"g\"\nop = \"upsert\"\nthreads = 1\nloops = 1\n")), 2, "\"insert\", \"find\""),
        (Input::Profile("mix weights summing to 0", format!("{DOC}[[group]]\nname = \"g\"\nmix = {{ get = 0, update = 0 }}\nset = [\"city\"]\nthreads = 1\nloops = 1\n")), 2, "the weights sum to 0"),
        (Input::Profile("unknown operation in a mix", format!("{DOC}[[group]]\nname = \"g\"\nmix = {{ get = 1, upsert = 1 }}\nthreads = 1\nloops = 1\n")), 2, "group[0].mix.upsert = 1: unknown operation `upsert`"),
        (Input::Profile("negative mix weight", format!("{DOC}[[group]]\nname = \"g\"\nmix = {{ get = -1 }}\nthreads = 1\nloops = 1\n")), 2, "must be a whole number from 0"),
        (Input::Profile("op and mix both", format!("{DOC}[[group]]\nname = \"g\"\nop = \"get\"\nmix = {{ get = 1 }}\nthreads = 1\nloops = 1\n")), 2, "both op and mix are set"),
        (Input::Profile("a group without an operation", format!("{DOC}[[group]]\nname = \"g\"\nthreads = 1\nloops = 1\n")), 2, "has no operation\n  expected: a built-in op = \"insert\""),
        (Input::Profile("a group without an operation among groups of their own", format!("{DOC}[[group]]\nname = \"a\"\nthreads = 1\nloops = 1\n[group.find]\nfilter = {{}}\n[[group]]\nname = \"g\"\nthreads = 1\nloops = 1\n")), 2, "has no operation\n  expected: an operation of its own: a table such as [group.find]"),
        (Input::Profile("a mix the group's settings cannot serve", format!("{DOC}[[group]]\nname = \"g\"\nmix = {{ get = 9, update = 1 }}\nthreads = 1\nloops = 1\n")), 2, "`set` is required"),
        (Input::Profile("a find setting on a mix without find", format!("{DOC}[[group]]\nname = \"g\"\nmix = {{ get = 1 }}\nlimit = 5\nthreads = 1\nloops = 1\n")), 2, "has no meaning for this group's mix"),
        (Input::Profile("unknown key distribution", format!("{DOC}[[group]]\nname = \"g\"\nop = \"get\"\nkeys = \"bell\"\nthreads = 1\nloops = 1\n")), 2, "`bell` is not a key distribution"),
        (Input::Profile("a counter MongoDB refuses", format!("{DOC}[[group]]\nname = \"g\"\nop = \"update\"\ninc = [\"$x\"]\nthreads = 1\nloops = 1\n")), 2, "cannot be a counter field"),
        (grouped("rate steps that do not increase", "threads = 1\nrate = [500, 400]\nstep = \"10s\"\n"), 2, "rate steps must increase"),
        (grouped("rate steps without a step length", "threads = 1\nrate = [500, 1000]\n"), 2, "a list of rates needs `step`"),
        (grouped("a ramp without its length", "threads = 1\nrate = { from = 100, to = 500 }\n"), 2, "a ramp needs from, to"),
        (grouped("a ramp in steps too short to measure", "threads = 1\nrate = { from = 100, to = 500, over = \"5m\" }\nstep = \"1ms\"\n"), 2, "too short to measure"),
        (Input::Profile("a counter on a text field", format!("{DOC}[[group]]\nname = \"g\"\nop = \"update\"\ninc = [\"city\"]\nthreads = 1\nloops = 1\n")), 2, "not a number (int or float)"),
        (Input::Profile("a group name with a colon", format!("{DOC}[[group]]\nname = \"a:get\"\nop = \"insert\"\nthreads = 1\nloops = 1\n")), 2, "no `:` or `@` in a name"),
        (Input::Profile("two groups with one name", format!("{DOC}{INS}threads = 1\nloops = 1\n{INS}threads = 1\nloops = 1\n")), 2, "two groups are named `g`"),
        (Input::Profile("filter on a field the document lacks", format!("{DOC}[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 1\nloops = 1\nfilter = [\"town\"]\n")), 2, "`town` is not a field of [document]"),
        (grouped("find setting on an insert", "threads = 1\nloops = 1\nlimit = 5\n"), 2, "`limit` has no meaning for op = \"insert\""),
        (Input::Profile("paired with a missing field", format!("[document]\npop = {{ paired_with = \"town\", choice = [1] }}\n{INS}threads = 1\nloops = 1\n")), 2, "`town` is not a choice field"),
        (Input::Profile("paired lists of different lengths", format!("{DOC}pop = {{ paired_with = \"city\", choice = [1] }}\n{INS}threads = 1\nloops = 1\n")), 2, "1 values, but `city` has 2 choices"),
        (Input::Profile("inverted int range", format!("[document]\nn = {{ int = [9, 1] }}\n{INS}threads = 1\nloops = 1\n")), 2, "int = [lo, hi] with lo <= hi"),
        (Input::Profile("empty choice list", format!("[document]\nc = {{ choice = [] }}\n{INS}threads = 1\nloops = 1\n")), 2, "choice needs a non-empty list"),
        (Input::Profile("field name MongoDB refuses", format!("[document]\n\"$set\" = 1\n{INS}threads = 1\nloops = 1\n")), 2, "cannot be a MongoDB field name"),
        (Input::Profile("NUL in a nested key", format!("[document]\ntags = [{{ \"a\\u0000b\" = 1 }}]\n{INS}threads = 1\nloops = 1\n")), 2, "document.tags[0].a\\0b"),
        (Input::Profile("NUL in a string", format!("[document]\ncity = \"x\\u0000y\"\n{INS}threads = 1\nloops = 1\n")), 2, "holds a NUL character"),
        (Input::Profile("$ key deep in a literal", format!("[document]\na = {{ b = [{{ \"$where\" = 1 }}] }}\n{INS}threads = 1\nloops = 1\n")), 2, "`$where` cannot be a MongoDB field name"),
        (Input::Profile("nesting beyond the parser's reach", format!("[document]\na = {}1{}\n{INS}threads = 1\nloops = 1\n", "[".repeat(200), "]".repeat(200))), 2, "nest deeper than a profile can hold"),
        (Input::Profile("document over 16 MiB", format!("[document]\na = \"{}\"\n{INS}threads = 1\nloops = 1\n", "x".repeat(17 << 20))), 2, "more than the server's limit of 16777216"),
        (Input::Profile("threshold on an unknown group", format!("{DOC}{INS}threads = 1\nloops = 1\n[thresholds]\n\"find.p99\" = \"< 50ms\"\n")), 2, "`find` is not a group of this profile; thresholds name one of: g, TOTAL"),
        (Input::Profile("threshold without a unit", format!("{DOC}{INS}threads = 1\nloops = 1\n[thresholds]\n\"g.p99\" = \"< 50\"\n")), 2, "needs a unit for a latency"),
        (args("--threshold with an unknown metric", &["run", "smoke", "--threshold", "insert.p9x<1ms"]), 2, "names no metric"),
        (Input::Profile("group named TOTAL", format!("{DOC}[[group]]\nname = \"TOTAL\"\nop = \"insert\"\nthreads = 1\nloops = 1\n")), 2, "`TOTAL` is reserved"),
        (Input::Profile("group names sharing a log tag", format!("{DOC}[[group]]\nname = \"a b\"\nop = \"insert\"\nthreads = 1\nloops = 1\n[[group]]\nname = \"a_b\"\nop = \"insert\"\nthreads = 1\nloops = 1\n")), 2, "would share the tag `a_b`"),
        (Input::Profile("group name with a tab", format!("{DOC}[[group]]\nname = \"in\\tsert\"\nop = \"insert\"\nthreads = 1\nloops = 1\n")), 2, "control character"),
        (Input::Profile("unknown write concern", format!("[target]\nwrite_concern = \"all\"\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "not a write concern"),
        (Input::Profile("unknown read preference", format!("[target]\nread_preference = \"closest\"\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "unknown read preference"),
        (Input::Profile("empty connection pool", format!("[target]\npool_size = 0\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "a pool of 0 connections"),
        (Input::Profile("zero operation timeout", format!("[target]\nop_timeout = \"0s\"\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "must be more than 0"),
        (Input::Profile("server metrics that are not a URL", format!("[target]\nserver_metrics = [\"db1:9100\"]\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "target.server_metrics[0]"),
        (Input::Profile("error threshold over 100 %", format!("stop_on_error_pct = 150\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "not a percentage"),
        (Input::Profile("bad index direction", format!("[setup]\nindexes = [{{ city = 2 }}]\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "not an index direction"),
        (Input::Profile("preload beyond reach", format!("[setup]\npreload = 1000000000000\n{DOC}{INS}threads = 1\nloops = 1\n")), 2, "more than the 100000000 preload"),
        (grouped("zero rate", "threads = 1\nloops = 1\nrate = 0\n"), 2, "cannot be scheduled"),
        (grouped("warm-up as long as the group", "threads = 1\nduration = \"5s\"\nwarmup = \"5s\"\n"), 2, "leaves nothing of group `g`'s 5s to measure"),
        (Input::Profile("broken TOML", "name = \"unclosed\n".to_string()), 2, "fuzz.toml:1:"),
        (Input::Profile("empty file", String::new()), 2, "no thread group"),
        (args("unknown profile name", &["run", "no-such-profile"]), 2, "no profile file or bundled profile named 'no-such-profile'"),
        (args("unparsable --duration", &["run", "smoke", "--duration", "soon"]), 2, "expected a duration such as 30s"),
        (args("--threads 0", &["run", "smoke", "--threads", "0"]), 2, "0 threads would run nothing; expected a whole number of virtual users from 1 to 1000000"),
        (args("negative --rate", &["run", "smoke", "--rate=-1"]), 2, "a number above 0"),
        (args("--loops with --duration", &["run", "smoke", "--loops", "1", "--duration", "1s"]), 2, "cannot be used with"),
        (args("--interval too short", &["run", "smoke", "--interval", "10ms"]), 2, "at least 100ms"),
        (args("URI with a wrong scheme", &["run", "smoke", "--uri", "mongo://bob:hunter2@db1"]), 2, "not a usable MongoDB connection string"),
        (args("--server-metrics not a URL, with a password", &["run", "smoke", "--server-metrics", "ftp://u:hunter2@db1/metrics"]), 2, "`ftp://u:****@db1/metrics` is not an http(s) URL of a metrics endpoint; give e.g. http://db1:9100/metrics (node_exporter's port and path; percent-encode"),
        (args("URI with a bad port", &["run", "smoke", "--uri", "mongodb://db1:notaport"]), 2, "not a usable MongoDB connection string"),
        (args("--out under a file", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--out", &under_file]), 2, "cannot use"),
        (live("unwritable --jtl (a full disk)", &["run", "smoke", "--jtl", "/dev/full", "--out", &dir.join("full").to_string_lossy()]), 2, "No space left on device"),
        (args("--part beyond its count", &["run", "smoke", "--part", "3/3"]), 2, "expected I/N with 0 <= I < N"),
        (args("--parts without JOB_COMPLETION_INDEX", &["run", "smoke", "--parts", "3"]), 2, "JOB_COMPLETION_INDEX, which is not set"),
        (args("a group smaller than the parts", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--threads", "2", "--part", "0/3"]), 2, "fewer than the 3 parts"),
        (args("a part without --uri", &["run", "smoke", "--part", "1/2"]), 2, "each part would start an embedded server of its own"),
        (args("--baseline in a part", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--part", "1/2", "--baseline", "x"]), 2, "merge the parts, then compare"),
        (args("--repeat in parts", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--part", "0/2", "--repeat", "3"]), 2, "cannot be split into parts"),
        (args("--coordinator without --parts", &["run", "smoke", "--coordinator", "127.0.0.1:0"]), 2, "--parts <N>"),
        (args("a coordinator without --uri", &["run", "smoke", "--parts", "2", "--coordinator", "127.0.0.1:0"]), 2, "each part would start an embedded server of its own"),
        (args("a coordinated sweep with --metrics-listen", &["sweep", "smoke", "--uri", "mongodb://127.0.0.1:1", "--parts", "2", "--coordinator", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"]), 2, "sweep runs many steps, each its own run: live metrics are for `mongo-stress run`"),
        (args("a coordinator where it cannot listen", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--parts", "2", "--coordinator", "192.0.2.1:7700", "--out", &dir.join("coord").to_string_lossy()]), 2, "--coordinator 192.0.2.1:7700: cannot listen there"),
        (args("a part without a token", &["part", "--join", "http://127.0.0.1:1"]), 2, "a part needs the coordinator's token"),
        (args("a part joining no URL", &["part", "--join", "coordinator:7700", "--token", "t"]), 2, "is not a coordinator's address"),
        (args("a part joining where no coordinator is", &["part", "--join", "http://127.0.0.1:1", "--token", "t"]), 2, "cannot reach the coordinator at http://127.0.0.1:1"),
        (args("a coordinator's --tls-cert that holds no certificate", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--parts", "2", "--coordinator", "127.0.0.1:0", "--tls-cert", &dir.join("sweep/sweep.json").to_string_lossy(), "--tls-key", &dir.join("sweep/sweep.json").to_string_lossy()]), 2, "sweep/sweep.json: it holds no certificate"),
        (args("--tls-cert without --tls-key", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--parts", "2", "--coordinator", "127.0.0.1:0", "--tls-cert", &dir.join("sweep/sweep.json").to_string_lossy()]), 2, "--tls-key <FILE>"),
        (args("a part's --tls-ca that holds no certificate", &["part", "--join", "https://127.0.0.1:1", "--token", "t", "--tls-ca", &dir.join("sweep/sweep.json").to_string_lossy()]), 2, "sweep/sweep.json: it holds no certificate"),
        (args("sweep --parts without --coordinator", &["sweep", "smoke", "--parts", "3"]), 2, "give --parts N with --coordinator ADDR"),
        (args("a coordinated sweep with fewer users than parts", &["sweep", "smoke", "--uri", "mongodb://127.0.0.1:1", "--parts", "3", "--coordinator", "127.0.0.1:0", "--threads", "2,4"]), 2, "needs at least 3 users per group at each step"),
        (args("a coordinated capacity search that would go on without a part", &["capacity", "smoke", "--slo", "p99 < 10ms", "--uri", "mongodb://127.0.0.1:1", "--parts", "2", "--coordinator", "127.0.0.1:0", "--on-part-loss", "continue"]), 2, "--on-part-loss continue would let a capacity step"),
        (args("sweep --watchers across parts", &["sweep", "change-streams", "--watchers", "0,1", "--uri", "mongodb://127.0.0.1:1", "--parts", "2", "--coordinator", "127.0.0.1:0"]), 2, "sweep --watchers runs on one machine"),
        (args("unparsable --start-at", &["run", "smoke", "--start-at", "noon"]), 2, "expected RFC 3339 with its zone, such as 2026-11-30T12:00:00Z"),
        (args("merge of a missing directory", &["merge", "no-such-part", "--out", "merged"]), 2, "no-such-part is not a usable run directory: no such directory"),
        (args("merge without --out", &["merge", "a", "b"]), 2, "--out <DIR>"),
        (args("capacity with an unparsable SLO", &["capacity", "smoke", "--slo", "p99 soon"]), 2, "--slo p99 soon"),
        (args("capacity of a profile in stages", &["capacity", "jmeter-2016", "--slo", "p99<50ms"]), 2, "has 5 stages"),
        (args("a threshold on a kind of a one-operation group", &["run", "smoke", "--threshold", "insert:get.p99 < 5ms"]), 2, "group `insert` runs one operation, so it has no kind rows; name it `insert`"),
        (args("a threshold on a kind the mix lacks", &["run", "ycsb-b", "--threshold", "run:scan.p99 < 5ms"]), 2, "its kind rows are"),
        (args("capacity with --rate", &["capacity", "smoke", "--slo", "p99<50ms", "--rate", "100"]), 2, "so --rate would be ignored"),
        (args("capacity with --duration", &["capacity", "smoke", "--slo", "p99<50ms", "--duration", "5s"]), 2, "use --step"),
        (args("capacity without an SLO", &["capacity", "smoke"]), 2, "--slo <EXPR>"),
        (args("run with a list of users", &["run", "smoke", "--threads", "1,2,4"]), 2, "a list is for `sweep`"),
        (args("sweep with --rate", &["sweep", "smoke", "--rate", "100"]), 2, "so --rate would be ignored"),
        (args("sweep with users out of range", &["sweep", "smoke", "--threads", "1,0"]), 2, "--threads"),
        (args("sweep of a profile in stages", &["sweep", "jmeter-2016"]), 2, "has 5 stages"),
        (args("sweep with an unparsable SLO", &["sweep", "smoke", "--slo", "p99 soon"]), 2, "--slo p99 soon"),
        (args("compare of a sweep with a run", &["compare", "sweep", "nothing-here"]), 2, "is a sweep and"),
        (args("a run's gate on two sweeps", &["compare", "sweep", "sweep", "--fail-if", "TOTAL.p99 > +10%"]), 2, "no fitted parameter of that name"),
        (own("unknown generator", "n = { \"^RandomInteger\" = { min = 1, max = 9 } }\n", "[group.insertOne]\n"), 2, "did you mean `^RandomInt`"),
        (own("a generator's argument misspelt", "n = { \"^RandomInt\" = { min = 1, maxi = 9 } }\n", "[group.insertOne]\n"), 2, "`maxi`"),
        (own("unknown operation table", "", "[group.fnd]\nfilter = {}\n"), 2, "did you mean `find`"),
        (own("an operation's argument misspelt", "", "[group.find]\nfliter = { status = \"open\" }\n"), 2, "did you mean `filter`"),
        (own("an update without an operator", "", "[group.updateOne]\nfilter = {}\nupdate = { status = \"paid\" }\n"), 2, "`status` is not one"),
        (own("a $ key in a document to insert", "", "[group.insertOne]\ndocument = { \"$status\" = 1 }\n"), 2, "cannot be a field name of a stored document"),
        (own("a generator where the server needs a constant", "", "[group.find]\nsort = { status = { \"^RandomInt\" = { min = 1, max = 2 } } }\n"), 2, "a generator has no meaning here"),
        (own("^Key with no documents to draw", "", "[group.findOne]\nfilter = { _id = { \"^Key\" = {} } }\n").with_drop(), 2, "so it has none"),
        (own("^Field on a path the document lacks", "", "[group.find]\nfilter = { status = { \"^Field\" = { path = \"stats\" } } }\n"), 2, "is not a field of collection `o`'s document template"),
        (own("a group on a collection the profile lacks", "", "collection = \"orders\"\n[group.find]\n"), 2, "`orders` is not a collection of this profile"),
        (own("a step reading a later step's result", "", "[[group.steps]]\nfind = { filter = { _id = { \"^Step\" = { index = 1, path = \"_id\" } } } }\n[[group.steps]]\ndeleteOne = { filter = {} }\n"), 2, "which it does not have yet"),
        (own("a filter of JSON text that does not parse", "", "[group.find]\nfilter = '{\"status\": \"open\",}'\n"), 2, "group[0].find.filter"),
        (live("a pipeline stage the server does not know", &["run", &misspelt_stage.to_string_lossy(), "--out", &dir.join("stage").to_string_lossy()]), 2, "the server refuses aggregate of group `g`"),
        (args("a fault of an unknown kind", &["run", "smoke", "--fault", "crash@4s"]), 2, "`crash` is not a fault"),
        (args("a pause without its length", &["run", "smoke", "--fault", "pause@4s"]), 2, "needs its length"),
        (Input::Profile("faults that overlap", format!("{DOC}{INS}threads = 1\nduration = \"10s\"\n[[fault]]\nkind = \"kill\"\nat = \"2s\"\nrestart_after = \"3s\"\n[[fault]]\nkind = \"pause\"\nat = \"4s\"\nfor = \"1s\"\n")), 2, "one fault at a time"),
        (Input::Profile("a step-down of part of a second", format!("{DOC}{INS}threads = 1\nduration = \"10s\"\n[[fault]]\nkind = \"stepdown\"\nat = \"2s\"\nfor = \"1500ms\"\n")), 2, "whole seconds"),
        (args("a kill of a server the tool did not start", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--fault", "kill@2s+1s"]), 2, "acts on the server's process"),
        (args("server flags for a server the tool did not start", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--server-arg=--sync-on-commit"]), 2, "are for the embedded server"),
        (args("an audit of one part of a run", &["run", "smoke", "--uri", "mongodb://127.0.0.1:1", "--audit", "--part", "1/2"]), 2, "belong to one whole run"),
        (args("a metrics address that is not one", &["run", "smoke", "--metrics-listen", "localhost-9464"]), 2, "is not an address to listen on"),
        (args("a push URL that is not a URL", &["run", "smoke", "--metrics-push", "prometheus:9090/api/v1/write"]), 2, "--metrics-push"),
        (args("a fault after the stages end", &["run", "smoke", "--duration", "3s", "--fault", "kill@50s+1s"]), 2, "it would never be done"),
        (args("a threshold on lost writes without the audit", &["run", "smoke", "--threshold", "TOTAL.lost<1"]), 2, "but the audit is off"),
        (Input::Profile("an aborting threshold known only after the run", format!("{DOC}{INS}threads = 1\nduration = \"2s\"\n[thresholds]\n\"g.unavailable_max\" = {{ limit = \"< 1s\", abort = true }}\n")), 2, "cannot stop the run"),
        (Input::Profile("an audit of a collection a template deletes from", format!("audit = true\n{COLL}{OWN}[group.deleteOne]\nfilter = {{ status = \"open\" }}\n")), 2, "the write audit cannot judge this profile"),
        (args("server refusing connections", &["run", "smoke", "--uri", &refused, "--out", &dir.join("refused").to_string_lossy()]), 3, "cannot reach the server"),
        (args("capture of a file that is not a MongoDB log", &["capture", "--from-log", &notes, "--out", &dir.join("cap1").to_string_lossy()]), 2, "it is not a MongoDB 4.4+ log"),
        (args("capture of a log that is not there", &["capture", "--from-log", "no-such.log", "--out", &dir.join("cap2").to_string_lossy()]), 2, "cannot read the log no-such.log"),
        (args("capture without a source", &["capture"]), 2, "--from-profiler"),
        (args("capture --coverage above 100", &["capture", "--from-log", "x.log", "--coverage", "120"]), 2, "a percentage above 0 and at most 100"),
        (args("capture of the profiler without a database", &["capture", "--from-profiler", "mongodb://127.0.0.1:1"]), 2, "needs the databases to profile"),
        (args("--scale of 0", &["run", "smoke", "--scale", "0"]), 2, "a factor above 0"),
        (args("--scale that is not a number", &["run", "smoke", "--scale", "twice"]), 2, "a factor above 0"),
        (args("--scale of a profile without a rate", &["run", "smoke", "--scale", "2"]), 2, "every group of this profile runs closed loop"),
        (args("--scale beyond the rate's bounds", &["validate", &paced, "--scale", "10"]), 2, "x --scale 10 = 50000000/s"),
        (args("--scale with --rate", &["run", "smoke", "--scale", "2", "--rate", "100"]), 2, "cannot be used with"),
        (args("sweep with --scale", &["sweep", "smoke", "--scale", "2"]), 2, "so --scale would be ignored"),
        (args("--tsv --append to another tool's file", &["run", "smoke", "--tsv", &notes, "--append", "--out", &out_of("appended")]), 2, "has not the header of a file `run --tsv FILE --append` writes"),
        (args("sweep with --tsv --append", &["sweep", "smoke", "--tsv", &out_of("sweep.tsv"), "--append", "--out", &out_of("swept")]), 2, "so --tsv would be ignored"),
        (args("history --out into a directory holding other files", &["history", &out_of("no-such-runs"), "--out", &dir.to_string_lossy()]), 2, "history's files written into it would mix"),
        (Input::Profile("a change-stream stage misspelt", format!("{COLL}{INS}threads = 1\nloops = 1\ncollection = \"o\"\n[[group]]\nname = \"l\"\nthreads = 1\nduration = \"1s\"\nwatch = {{ collection = \"o\", pipeline = [{{ \"$matc\" = {{ operationType = \"insert\" }} }}] }}\n")), 2, "did you mean `$match`?"),
        (Input::Profile("an unquoted $ key", format!("{DOC}[[group]]\nname = \"f\"\nop = \"find\"\nthreads = 1\nloops = 1\nfilter = {{ city = {{ $gte = 5 }} }}\n")), 2, "which TOML takes only in quotes"),
        (args("a profile file's name mistyped", &["validate", "my-profle.toml"]), 2, "did you mean the file my-profile.toml?"),
        (live("a setup the server refuses (a duplicate key)", &["run", &repeats.to_string_lossy(), "--out", &out_of("repeats")]), 2, "the server refused the setup while preloading"),
    ];
    (all, closed)
}

/// A row of docs/reliability.md's table of bad input, or of the table the cases make. `message`
/// is None for a case that the test at hand does not run.
struct Row {
    number: String,
    input: String,
    exit: String,
    message: Option<String>,
}

fn docs_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(DOCS)
}

/// The docs' text and the line range of the table's rows (after its header and separator).
fn docs_table() -> (String, std::ops::Range<usize>) {
    let text = std::fs::read_to_string(docs_path()).expect("docs/reliability.md is readable");
    let lines: Vec<&str> = text.lines().collect();
    let headers: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i] == TABLE_HEADER)
        .collect();
    assert_eq!(
        headers.len(),
        1,
        "{DOCS} must hold the table of bad input once, under the header {TABLE_HEADER:?}"
    );
    let first = headers[0] + 2;
    let end = (first..lines.len())
        .find(|&i| !lines[i].starts_with('|'))
        .unwrap_or(lines.len());
    (text, first..end)
}

fn documented() -> Vec<Row> {
    let (text, rows) = docs_table();
    text.lines()
        .skip(rows.start)
        .take(rows.len())
        .map(|line| {
            let cells: Vec<&str> = line
                .strip_prefix("| ")
                .and_then(|l| l.strip_suffix(" |"))
                .map(|l| l.splitn(4, " | ").collect())
                .unwrap_or_default();
            assert_eq!(
                cells.len(),
                4,
                "{DOCS}: not a row of the bad-input table: {line}"
            );
            Row {
                number: cells[0].to_string(),
                input: cells[1].to_string(),
                exit: cells[2].to_string(),
                message: Some(cells[3].to_string()),
            }
        })
        .collect()
}

/// Runs one case and checks what every refusal must hold; returns the table's message cell: the
/// first `error:` line of stderr, `|` escaped for Markdown, the test's temporary directory as
/// DIR and the closed port as PORT (they change on every run).
fn refuse(
    input: &Input,
    code: i32,
    needle: &str,
    dir: &Path,
    port: u16,
    uri: Option<&str>,
    problems: &mut Vec<String>,
) -> String {
    let desc = input.desc();
    let out = match input {
        Input::Profile(_, text) => {
            std::fs::write(dir.join("fuzz.toml"), text).unwrap();
            bin()
                .current_dir(dir)
                .args(["validate", "fuzz.toml"])
                .output()
                .unwrap()
        }
        Input::Args(_, a) | Input::Live(_, a) => bin()
            .current_dir(dir)
            .args(a)
            .args(uri.map(|u| ["--uri", u]).into_iter().flatten())
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap(),
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() != Some(code) {
        problems.push(format!(
            "{desc}: exit {:?}, expected {code}: {stderr}",
            out.status.code()
        ));
    }
    if !stderr.contains(needle) {
        problems.push(format!("{desc}: expected {needle:?} in:\n{stderr}"));
    }
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        problems.push(format!("{desc}: a panic: {stderr}"));
    }
    if stderr.contains("hunter2") {
        problems.push(format!("{desc}: a password was printed: {stderr}"));
    }
    // Nothing left behind: a refused command's --out was not made (one that held files
    // before, the case of a directory refused for them, is left as it was).
    if let Input::Args(_, a) | Input::Live(_, a) = input {
        let out = a
            .iter()
            .position(|x| x == "--out")
            .and_then(|i| a.get(i + 1))
            .map(Path::new)
            .filter(|o| *o != dir);
        if let Some(o) = out.filter(|o| o.exists()) {
            problems.push(format!("{desc}: refused, but left {} behind", o.display()));
        }
    }
    let mut first = stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or("")
        .replace('|', "\\|")
        .replace(&*dir.to_string_lossy(), "DIR")
        .replace(&format!("127.0.0.1:{port}/"), "127.0.0.1:PORT/");
    if let Some(uri) = uri {
        first = first.replace(uri, "URI");
    }
    format!("`{first}`")
}

fn row(i: usize, input: &Input, code: i32, message: Option<String>) -> Row {
    Row {
        number: (i + 1).to_string(),
        input: input.desc().to_string(),
        exit: code.to_string(),
        message,
    }
}

fn fail_on(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} problems:\n{}\n(after a deliberate change of a message or a case, \
         BAD_INPUT_UPDATE_DOCS=1 cargo test --test fast bad_input rewrites the table in {DOCS}; \
         run it again to see it pass)",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_bad_input_is_refused_with_one_message_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    // A sweep's directory, for the `compare` cases.
    std::fs::create_dir(dir.path().join("sweep")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep/sweep.json"),
        dir.path().join("sweep/sweep.json"),
    )
    .unwrap();
    let (all, port) = cases(dir.path());
    let mut problems = Vec::new();
    let rows: Vec<Row> = all
        .iter()
        .enumerate()
        .map(|(i, (input, code, needle))| {
            let message = match input {
                Input::Live(..) => None,
                _ => Some(refuse(
                    input,
                    *code,
                    needle,
                    dir.path(),
                    port,
                    None,
                    &mut problems,
                )),
            };
            row(i, input, *code, message)
        })
        .collect();
    let docs = documented();
    problems.extend(drift(&docs, &rows, true));

    // The live cases keep the message the docs have.
    let table: Vec<String> = rows
        .iter()
        .map(|r| {
            let message = r.message.clone().or_else(|| {
                docs.iter()
                    .find(|d| d.input == r.input)
                    .and_then(|d| d.message.clone())
            });
            format!(
                "| {} | {} | {} | {} |",
                r.number,
                r.input,
                r.exit,
                message.unwrap_or_default()
            )
        })
        .collect();
    if let Ok(path) = std::env::var("BAD_INPUT_TABLE") {
        let mut text = vec![
            TABLE_HEADER.to_string(),
            "| ---: | --- | ---: | --- |".to_string(),
        ];
        text.extend(table.iter().cloned());
        std::fs::write(path, text.join("\n") + "\n").unwrap();
    }
    if std::env::var("BAD_INPUT_UPDATE_DOCS").as_deref() == Ok("1") {
        let (text, range) = docs_table();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.splice(range, table);
        std::fs::write(docs_path(), lines.join("\n") + "\n").unwrap();
    }
    fail_on(&problems);
}

#[test]
fn bad_input_met_only_once_the_server_is_reached_is_refused_before_any_load() {
    let Some(server) = TestServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (all, port) = cases(dir.path());
    let mut problems = Vec::new();
    let rows: Vec<Row> = all
        .iter()
        .enumerate()
        .filter(|(_, (input, _, _))| matches!(input, Input::Live(..)))
        .map(|(i, (input, code, needle))| {
            let message = refuse(
                input,
                *code,
                needle,
                dir.path(),
                port,
                Some(&server.uri),
                &mut problems,
            );
            row(i, input, *code, Some(message))
        })
        .collect();
    assert!(!rows.is_empty(), "no live case left: remove this test");
    problems.extend(drift(&documented(), &rows, false));
    fail_on(&problems);
}

/// Where the documented table and the cases disagree: for each case, its row's number, exit code
/// and (when it ran) message; when `complete`, also a row without a case and a case without a
/// row.
fn drift(docs: &[Row], tried: &[Row], complete: bool) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, d) in docs.iter().enumerate().filter(|_| complete) {
        if d.number != (i + 1).to_string() {
            problems.push(format!(
                "{DOCS}: row {} `{}` is line {} of the table",
                d.number,
                d.input,
                i + 1
            ));
        }
        if !tried.iter().any(|t| t.input == d.input) {
            problems.push(format!(
                "{DOCS} row {} `{}` is not a case of this test",
                d.number, d.input
            ));
        }
    }
    // One case added or removed renumbers every row after it: the first says where.
    let mut renumbered = Vec::new();
    for t in tried {
        if tried.iter().filter(|o| o.input == t.input).count() > 1 {
            problems.push(format!("two cases are named `{}`", t.input));
        }
        let same: Vec<&Row> = docs.iter().filter(|d| d.input == t.input).collect();
        let Some(d) = same.first() else {
            problems.push(format!(
                "case {} `{}` is not in {DOCS}'s table",
                t.number, t.input
            ));
            continue;
        };
        if same.len() > 1 {
            problems.push(format!("{DOCS} lists `{}` {} times", t.input, same.len()));
        }
        if d.number != t.number {
            renumbered.push(format!(
                "`{}` is row {} in {DOCS} but case {} here",
                t.input, d.number, t.number
            ));
        }
        if d.exit != t.exit {
            problems.push(format!(
                "`{}`: {DOCS} says exit {}, the case expects {}",
                t.input, d.exit, t.exit
            ));
        }
        if let (Some(doc), Some(now)) = (&d.message, &t.message) {
            if doc != now {
                problems.push(format!(
                    "`{}`: {DOCS} says\n    {doc}\n  the tool prints\n    {now}",
                    t.input
                ));
            }
        }
    }
    if let Some(first) = renumbered.first() {
        problems.push(match renumbered.len() {
            1 => first.clone(),
            n => format!("{first} (and {} more cases after it)", n - 1),
        });
    }
    problems
}
