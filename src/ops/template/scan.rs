//! `scan`: genny's CollectionScanner (`src/cast_core/src/CollectionScanner.cpp`,
//! `collectionScan` and `countScan`): each database's collections, as given or as
//! `listCollections` names them at each scan (sent outside the transaction, which cannot list
//! them), sorted and skipped as `collectionsFromNameList` does, each read in turn to its
//! cursor's end; the scan stops once exactly `documents` were read or `bytes` reached (the
//! cursor closed there); a collection that fails (dropped under the scan) is counted and the
//! next read, and the scan ends with the first such error; `megabytes` takes a token of the
//! run's one limiter per megabyte read; `hold` keeps the transaction open until that long
//! after the scan began, asleep or (`continuous`) scanning again.

use std::collections::HashMap;
use std::sync::Mutex;

use mongodb::bson::Timestamp;
use std::time::{Duration, Instant};

use super::*;
use crate::workload::command::{Scan, ScanOrder};

/// The run's one limiter of megabytes scanned (genny's "CollectionScanner" rate limiter,
/// shared by every scanner, made by the first scan that asks for it).
#[derive(Default)]
pub(crate) struct ScanRate(Mutex<Option<Gcra>>);

/// A token bucket by its theoretical arrival time: `n` tokens a `per`, in bursts of `n`.
struct Gcra {
    every: Duration,
    burst: Duration,
    next: Instant,
}

impl ScanRate {
    /// Waits for a token of `n` per `per`.
    async fn take(&self, (n, per): (u32, Duration)) {
        let wait = {
            let mut g = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = Instant::now();
            let gcra = g.get_or_insert_with(|| {
                let every = per / n.max(1);
                Gcra {
                    every,
                    burst: per.saturating_sub(every),
                    next: now,
                }
            });
            let next = gcra.next.max(now);
            let allowed = next.checked_sub(gcra.burst).unwrap_or(now);
            gcra.next = next + gcra.every;
            allowed.saturating_duration_since(now)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The cluster times users kept, by name and user (genny's per-thread `readClusterTime`).
#[derive(Default)]
pub(crate) struct ClusterTimes(Mutex<HashMap<(String, u32), Timestamp>>);

impl ClusterTimes {
    fn get(&self, name: &str, user: u32) -> Option<Timestamp> {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(&(name.to_string(), user)).copied()
    }

    fn keep(&self, name: &str, user: u32, t: Timestamp) {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.insert((name.to_string(), user), t);
    }
}

/// A `ping` to admin in a new session (without causal consistency when `causal` is false):
/// the session's operation time after it.
async fn ping_time(on: &On<'_>, causal: bool) -> mongodb::error::Result<Timestamp> {
    let mut s = on.client.start_session().causal_consistency(causal).await?;
    on.client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .session(&mut s)
        .await?;
    s.operation_time().ok_or_else(|| {
        mongodb::error::Error::custom(crate::driver_error::ReplyRefused(
            "the server's reply to ping has no operationTime: it keeps no cluster time (a replica set member or mongos does)".into(),
        ))
    })
}

/// `clusterTime`: genny's `SelectClusterTimeOnly` iteration (its one-second sleep is the
/// group's `sleep_before`).
pub(super) async fn keep_cluster_time(
    on: &On<'_>,
    name: &str,
    user: u32,
    out: &mut Outcome,
) -> Result {
    let t = ping_time(on, true).await?;
    on.shared.cluster_times.keep(name, user, t);
    out.matched = true;
    Ok(())
}

/// genny's `pointInTimeScan`: per collection a `find` command at read concern snapshot
/// `atClusterTime`, then `getMore`s until the cursor ends, in a session without causal
/// consistency; `documents` and `bytes` checked after each batch (as genny's, `documents`
/// only when a batch ends on it exactly); a failed `find` abandons the database's other
/// collections, a failed `getMore` the collection.
async fn point_in_time(
    on: &On<'_>,
    targets: &[(String, Vec<String>)],
    of: &Scan,
    read: &Built,
    name: &str,
    user: u32,
    all: &mut Tally,
) -> Result {
    let Built::Find { filter, .. } = read else {
        return Ok(());
    };
    let at = match on.shared.cluster_times.get(name, user) {
        Some(t) => t,
        None => ping_time(on, false).await?,
    };
    let mut session = on.client.start_session().causal_consistency(false).await?;
    let concern = doc! { "level": "snapshot", "atClusterTime": at };
    let mut this = Tally::default();
    'dbs: for (db, names) in targets {
        let database = on.client.database(db);
        for coll in names {
            let find = doc! { "find": coll.as_str(), "filter": filter.clone(), "readConcern": concern.clone() };
            let (mut id, ended) =
                match batch(&database, find, "firstBatch", of, &mut this, &mut session).await {
                    Ok(r) => r,
                    Err(e) => {
                        this.first_error.get_or_insert(e);
                        continue 'dbs;
                    }
                };
            if ended {
                break 'dbs;
            }
            while id != 0 {
                let more = doc! { "getMore": id, "collection": coll.as_str() };
                match batch(&database, more, "nextBatch", of, &mut this, &mut session).await {
                    Ok((_, true)) => break 'dbs,
                    Ok((next, false)) => id = next,
                    Err(e) => {
                        this.first_error.get_or_insert(e);
                        break;
                    }
                }
            }
        }
    }
    all.add(this);
    Ok(())
}

/// One command of a point-in-time scan: its batch counted; the cursor's id, and whether a
/// limit ended the scan.
async fn batch(
    database: &mongodb::Database,
    command: Document,
    key: &str,
    of: &Scan,
    this: &mut Tally,
    session: &mut ClientSession,
) -> mongodb::error::Result<(i64, bool)> {
    let reply = database.run_command(command).session(session).await?;
    let cursor = reply.get_document("cursor").ok();
    let docs = cursor.and_then(|c| c.get_array(key).ok());
    let n = docs.map_or(0, Vec::len);
    this.documents += n_docs(n);
    this.bytes += docs.map_or(0, |d| {
        d.iter()
            .filter_map(Bson::as_document)
            .map(|d| u64::from(bytes(d)))
            .sum()
    });
    let id = cursor.and_then(|c| c.get_i64("id").ok()).unwrap_or(0);
    let ended = of.documents == Some(this.documents) || of.bytes.is_some_and(|b| this.bytes >= b);
    Ok((id, ended))
}

/// What one pass over the collections read.
#[derive(Default)]
struct Tally {
    documents: u64,
    bytes: u64,
    megabytes: u64,
    counted: u64,
    first_error: Option<mongodb::error::Error>,
}

pub(super) async fn scan(
    on: &On<'_>,
    of: &Scan,
    read: Built,
    user: u32,
    out: &mut Outcome,
    session: &mut Session<'_>,
) -> Result {
    let began = Instant::now();
    let mut all = Tally::default();
    // Listed once an operation (genny lists once an iteration, however often it scans).
    let targets = targets(on, of).await?;
    loop {
        match &of.at {
            Some(name) => point_in_time(on, &targets, of, &read, name, user, &mut all).await?,
            None => pass(on, &targets, of, &read, &mut all, session).await?,
        }
        match of.hold {
            Some(hold) if began.elapsed() < hold => {
                if of.continuous {
                    continue;
                }
                tokio::time::sleep(hold.saturating_sub(began.elapsed())).await;
            }
            _ => {}
        }
        break;
    }
    out.returned = all.documents;
    out.counted = all.counted;
    out.received = u32::try_from(all.bytes).unwrap_or(u32::MAX);
    // A scan that read nothing (empty collections) is still a whole scan: nothing to abort.
    out.matched = true;
    match all.first_error {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Each database's collections to scan, in order (a point-in-time scan's as listed): the
/// scan's own, or those `listCollections` names.
async fn targets(on: &On<'_>, of: &Scan) -> mongodb::error::Result<Vec<(String, Vec<String>)>> {
    let own = [on.coll.namespace().db];
    let databases: &[String] = if of.databases.is_empty() {
        &own
    } else {
        &of.databases
    };
    let mut out = Vec::with_capacity(databases.len());
    for db in databases {
        let names = match &of.collections {
            Some(names) => names.clone(),
            None => on.client.database(db).list_collection_names().await?,
        };
        let names = if of.at.is_some() {
            names
        } else {
            ordered(names, of.order, of.skip)
        };
        out.push((db.clone(), names));
    }
    Ok(out)
}

/// Collection `name` of `db` with the step's read concern and read preference.
fn handle(on: &On<'_>, db: &str, name: &str) -> Collection<RawDocumentBuf> {
    let options = mongodb::options::CollectionOptions::builder()
        .read_concern(on.coll.read_concern().cloned())
        .selection_criteria(on.coll.selection_criteria().cloned())
        .build();
    on.client
        .database(db)
        .collection_with_options(name, options)
}

/// One scan of every collection (a `continuous` scan makes several).
async fn pass(
    on: &On<'_>,
    targets: &[(String, Vec<String>)],
    of: &Scan,
    read: &Built,
    all: &mut Tally,
    session: &mut Session<'_>,
) -> Result {
    // The limits count over the whole pass, every database's collections.
    let mut this = Tally::default();
    'dbs: for (db, names) in targets {
        for name in names {
            let coll = handle(on, db, name);
            match one(on, of, &coll, read, &mut this, session).await {
                Ok(true) => break 'dbs,
                Ok(false) => {}
                Err(e) => {
                    this.first_error.get_or_insert(e);
                }
            }
        }
    }
    all.add(this);
    Ok(())
}

/// `collectionsFromNameList`: the names sorted (`Forward`: by their bytes, `Reverse`: the
/// other way, `AsListed`: as they are), then the first `skip` left out.
fn ordered(mut names: Vec<String>, order: ScanOrder, skip: usize) -> Vec<String> {
    match order {
        ScanOrder::AsListed => {}
        ScanOrder::Forward => names.sort(),
        ScanOrder::Reverse => names.sort_by(|a, b| b.cmp(a)),
    }
    names.into_iter().skip(skip).collect()
}

/// One collection's read; true when a limit ended the scan.
async fn one(
    on: &On<'_>,
    of: &Scan,
    coll: &Collection<RawDocumentBuf>,
    read: &Built,
    this: &mut Tally,
    session: &mut Session<'_>,
) -> mongodb::error::Result<bool> {
    let cursor = match read {
        Built::Find {
            of: f,
            filter,
            limit,
            ..
        } => open_find(coll, filter.clone(), &f.args, *limit, session).await?,
        Built::Aggregate { of: a, stages } => {
            open_aggregate(coll, a, stages.clone(), session).await?
        }
        Built::Count { of: c, filter } => {
            let mut count = coll.count_documents(filter.clone());
            if let Some(s) = c.skip {
                count = count.skip(s);
            }
            if let Some(l) = c.limit {
                count = count.limit(l);
            }
            if let Some(h) = hint(&c.hint) {
                count = count.hint(h);
            }
            // genny's count scan takes no session.
            this.counted += count.await?;
            return Ok(false);
        }
        _ => return Ok(false),
    };
    match (cursor, session.as_deref_mut()) {
        (Cursor::In(mut c), Some(s)) => {
            while c.advance(s).await? {
                if this.read(of, c.current()) {
                    return Ok(true);
                }
                pace(on, of, this).await;
            }
        }
        (Cursor::In(_), None) => {}
        (Cursor::Out(mut c), _) => {
            while c.advance().await? {
                if this.read(of, c.current()) {
                    return Ok(true);
                }
                pace(on, of, this).await;
            }
        }
    }
    Ok(false)
}

impl Tally {
    /// A pass's counts added to the operation's (its first error kept).
    fn add(&mut self, pass: Tally) {
        self.documents += pass.documents;
        self.bytes += pass.bytes;
        self.counted += pass.counted;
        if self.first_error.is_none() {
            self.first_error = pass.first_error;
        }
    }

    /// Counts one document read; true when it reaches a limit.
    fn read(&mut self, of: &Scan, raw: &mongodb::bson::RawDocument) -> bool {
        self.documents += 1;
        self.bytes += u64::try_from(raw.as_bytes().len()).unwrap_or(u64::MAX);
        of.documents == Some(self.documents) || of.bytes.is_some_and(|b| self.bytes >= b)
    }
}

/// A token of the run's limiter for each whole megabyte read.
async fn pace(on: &On<'_>, of: &Scan, this: &mut Tally) {
    let Some(rate) = of.megabytes else { return };
    while this.bytes >= (this.megabytes + 1) * 1_000_000 {
        on.shared.scan_rate.take(rate).await;
        this.megabytes += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn collections_are_ordered_by_their_bytes_then_skipped_as_genny_does() {
        let listed = names(&["Collection2", "Collection10", "Collection1"]);
        assert_eq!(
            ordered(listed.clone(), ScanOrder::AsListed, 0),
            names(&["Collection2", "Collection10", "Collection1"])
        );
        // Lexicographic, as std::less on std::string: "Collection10" before "Collection2".
        assert_eq!(
            ordered(listed.clone(), ScanOrder::Forward, 1),
            names(&["Collection10", "Collection2"])
        );
        assert_eq!(
            ordered(listed.clone(), ScanOrder::Reverse, 0),
            names(&["Collection2", "Collection10", "Collection1"])
        );
        assert!(ordered(listed, ScanOrder::Forward, 3).is_empty());
    }

    /// `2 per 200ms`: a burst of two at once, then one every 100 ms.
    #[tokio::test]
    async fn the_megabyte_limiter_lets_a_burst_through_then_paces() {
        let rate = ScanRate::default();
        let spec = (2, Duration::from_millis(200));
        let began = Instant::now();
        rate.take(spec).await;
        rate.take(spec).await;
        assert!(
            began.elapsed() < Duration::from_millis(50),
            "{:?}",
            began.elapsed()
        );
        for _ in 0..4 {
            rate.take(spec).await;
        }
        // Tokens 3 to 6 at 100, 200, 300 and 400 ms.
        let took = began.elapsed();
        assert!(took >= Duration::from_millis(390), "{took:?}");
        assert!(took < Duration::from_millis(800), "{took:?}");
    }
}
