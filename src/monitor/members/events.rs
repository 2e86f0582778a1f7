//! The topology's events: a primary change, a member's state change, a member added or removed,
//! and a sharded cluster's chunk migrations from config.changelog.

use super::*;

impl Members {
    /// A set whose primary is not the one last seen: a primary change. While a set has none,
    /// the next primary's event is from the last one there was (its detail says how long there
    /// was none). A primary that did not answer while the others still name it is still the
    /// primary.
    pub(super) fn primary_changes(
        &mut self,
        reads: &[Read],
        views: &BTreeMap<Option<String>, SetStatus>,
        after: u64,
        events: &mut Vec<TopologyEvent>,
    ) {
        let shards: Vec<Option<String>> = self.primaries.keys().cloned().collect();
        for shard in shards {
            let mine: Vec<(&Member, &Read)> = self
                .members
                .iter()
                .zip(reads)
                .filter(|(m, _)| m.shard == shard)
                .collect();
            if !mine.iter().any(|(_, r)| r.hello.is_some()) {
                // Nobody of the set answered: nothing is known of its primary.
                continue;
            }
            let (primary, elected) = match views.get(&shard).and_then(SetStatus::primary) {
                Some(p) => (Some(p.name.clone()), p.election_ms),
                None => (
                    mine.iter()
                        .find(|(_, r)| r.hello.as_ref().is_some_and(|h| h.writable_primary))
                        .map(|(m, _)| m.host.clone()),
                    None,
                ),
            };
            let before = self.primaries.get(&shard).cloned().flatten();
            if before == primary {
                continue;
            }
            if let (None, Some(b)) = (&primary, &before) {
                let silent = mine.iter().any(|(m, r)| &m.host == b && r.hello.is_none());
                let named = mine
                    .iter()
                    .any(|(_, r)| r.hello.as_ref().and_then(|h| h.primary.as_ref()) == Some(b));
                if silent && named {
                    continue;
                }
            }
            // The election's own time, when it falls in the second this was seen in.
            let time = elected
                .and_then(|e| u64::try_from(e).ok())
                .filter(|e| *e > self.last_ms && *e <= after)
                .unwrap_or(after);
            let set = shard
                .as_ref()
                .map_or(String::new(), |s| format!("shard {s}: "));
            let (from, detail) = match (&before, &primary) {
                (Some(b), Some(p)) => (Some(b.clone()), format!("{set}primary {b} → {p}")),
                (Some(b), None) => {
                    self.lost.insert(shard.clone(), (b.clone(), time));
                    (Some(b.clone()), format!("{set}primary {b} → none"))
                }
                (None, Some(p)) => match self.lost.remove(&shard) {
                    Some((last, at)) => (
                        Some(last.clone()),
                        format!(
                            "{set}primary {last} → {p} (none for {:.2}s)",
                            crate::num::real(time.saturating_sub(at)) / 1000.0
                        ),
                    ),
                    None => (None, format!("{set}primary none → {p}")),
                },
                (None, None) => continue,
            };
            let mut e = TopologyEvent::new(
                TopologyKind::PrimaryChange,
                time,
                shard.clone(),
                None,
                from,
                primary.clone(),
                detail,
            );
            e.seen_ms = after;
            events.push(e);
            self.primaries.insert(shard, primary);
        }
    }

    /// Members a set's primary (or, with none, any member) names that are not sampled yet are
    /// added; members the primary no longer names are removed. A member outside any set (a
    /// standalone shard) names none and keeps its place.
    pub(super) fn membership(
        &mut self,
        reads: &[Read],
        after: u64,
        events: &mut Vec<TopologyEvent>,
    ) {
        let mut named: BTreeMap<Option<String>, (bool, Vec<String>)> = BTreeMap::new();
        for (m, r) in self.members.iter().zip(reads) {
            let Some(h) = r.hello.as_ref().filter(|h| h.set_name.is_some()) else {
                continue;
            };
            let entry = named.entry(m.shard.clone()).or_default();
            if h.writable_primary {
                *entry = (true, h.members().cloned().collect());
            } else if !entry.0 {
                for host in h.members() {
                    if !entry.1.contains(host) {
                        entry.1.push(host.clone());
                    }
                }
            }
        }
        for (shard, (from_primary, hosts)) in named {
            if from_primary {
                let gone: Vec<usize> = self
                    .members
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.shard == shard && !hosts.contains(&m.host))
                    .map(|(i, _)| i)
                    .collect();
                for i in gone.into_iter().rev() {
                    let m = self.members.remove(i);
                    if let Some(t) = m.oplog_task {
                        t.abort();
                    }
                    events.push(TopologyEvent::new(
                        TopologyKind::MemberRemoved,
                        after,
                        shard.clone(),
                        Some(m.host.clone()),
                        None,
                        None,
                        format!("{} left the set", m.host),
                    ));
                }
            }
            for host in hosts {
                if self
                    .members
                    .iter()
                    .any(|m| m.shard == shard && m.host == host)
                {
                    continue;
                }
                match self.add(shard.clone(), &host) {
                    Ok(()) => events.push(TopologyEvent::new(
                        TopologyKind::MemberAdded,
                        after,
                        shard.clone(),
                        Some(host.clone()),
                        None,
                        None,
                        format!("{host} joined the set"),
                    )),
                    Err(e) => self.warn_once(format!("members: {e}; it is not sampled")),
                }
            }
        }
    }

    /// The chunk migrations among a changelog reading (a refusal is one warning).
    pub(super) fn migrations(
        &mut self,
        read: Option<mongodb::error::Result<Vec<Document>>>,
        after: u64,
    ) -> Vec<TopologyEvent> {
        let entries = match read {
            Some(Ok(e)) => e,
            Some(Err(e)) => {
                let w = refusal(
                    "the mongos",
                    "find on config.changelog",
                    &words(&e),
                    code_name(&e).as_deref(),
                );
                self.warn_once(w);
                return Vec::new();
            }
            None => return Vec::new(),
        };
        entries
            .iter()
            .filter_map(parse::migration)
            .map(|mig| {
                self.changelog_after_ms = self.changelog_after_ms.max(mig.time_ms);
                let mut e = TopologyEvent::new(
                    TopologyKind::Migration,
                    u64::try_from(mig.time_ms).unwrap_or(0),
                    None,
                    None,
                    mig.from.clone(),
                    mig.to.clone(),
                    format!(
                        "chunk of {} moved {} → {}",
                        mig.ns,
                        mig.from.as_deref().unwrap_or("?"),
                        mig.to.as_deref().unwrap_or("?")
                    ),
                );
                e.seen_ms = after;
                e
            })
            .collect()
    }
}

/// A cluster's chunk migrations committed after `after_ms` (`config.changelog`, through the
/// mongos), within the second's time limit; none for a replica set, or when it did not answer.
pub(super) async fn changelog(
    router: Option<Client>,
    after_ms: i64,
) -> Option<mongodb::error::Result<Vec<Document>>> {
    let router = router?;
    let find = async {
        let mut cursor = router
            .database("config")
            .collection::<Document>("changelog")
            .find(doc! {
                "what": parse::MIGRATION_COMMIT,
                "time": { "$gt": mongodb::bson::DateTime::from_millis(after_ms) },
            })
            .sort(doc! { "time": 1 })
            .limit(1000)
            .await?;
        let mut out = Vec::new();
        while cursor.advance().await? {
            out.push(Document::try_from(cursor.current())?);
        }
        Ok(out)
    };
    tokio::time::timeout(READ_TIMEOUT, find).await.ok()
}

impl TopologyEvent {
    pub(super) fn new(
        kind: TopologyKind,
        time_ms: u64,
        shard: Option<String>,
        member: Option<String>,
        from: Option<String>,
        to: Option<String>,
        detail: String,
    ) -> TopologyEvent {
        TopologyEvent {
            kind,
            time_ms,
            seen_ms: time_ms,
            shard,
            member,
            from,
            to,
            detail,
            offset_secs: 0.0,
            unavailable: None,
            election_secs: None,
        }
    }
}
