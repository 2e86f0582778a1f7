//! A watch group's verdict on delivery (`listen::Book`'s counts per listener, and their sum),
//! as summary.json, the console and `report` read it.

use serde::{Deserialize, Serialize};

/// One watch group over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    pub(crate) group: String,
    /// What its streams saw (`collection shop.orders`, `database shop`, `the whole deployment`).
    pub(crate) scope: String,
    pub(crate) listeners: u32,
    /// The writes of this run each listener's scope and filter admit, summed over listeners;
    /// None when the filter cannot be read for the tool's own writes (`not_judged`).
    pub(crate) expected: Option<u64>,
    /// Of those, the events the listeners were sent (each write once per listener).
    pub(crate) delivered: u64,
    pub(crate) missing: u64,
    pub(crate) duplicated: u64,
    pub(crate) out_of_order: u64,
    /// Events received after the writers had stopped (in the drain).
    pub(crate) late: u64,
    /// Events of changes this run did not make (their lag from `wallTime`).
    pub(crate) other: u64,
    pub(crate) events: u64,
    /// Why delivery is not judged (a filter the tool cannot read for its own writes): then
    /// `expected` is None and `missing` is not counted (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_judged: Option<String>,
    /// Listeners whose stream could not go on (`ChangeStreamHistoryLost`, or it could not be
    /// opened again).
    pub(crate) failed_listeners: u32,
    /// Missing writes a stream went past: history lost, whether the server said so
    /// (`ChangeStreamHistoryLost`) or not (an open stream that skips what the oplog dropped).
    pub(crate) skipped: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) resumes: Vec<Resume>,
    pub(crate) per_listener: Vec<ListenerResult>,
}

/// One listener's counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ListenerResult {
    /// From 1.
    pub(crate) listener: u32,
    /// None when its filter cannot be read for the tool's own writes.
    pub(crate) expected: Option<u64>,
    pub(crate) delivered: u64,
    pub(crate) missing: u64,
    /// Of the missing, those acknowledged before a write it was sent: its stream went past
    /// them (history lost: the oplog no longer held them when it got there).
    pub(crate) skipped: u64,
    pub(crate) duplicated: u64,
    pub(crate) out_of_order: u64,
    pub(crate) late: u64,
    pub(crate) other: u64,
    pub(crate) events: u64,
    pub(crate) resumes: u32,
    /// Why its stream ended before the run (the server's words), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failed: Option<String>,
}

/// A stream that broke and was opened again from its last token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Resume {
    pub(crate) listener: u32,
    /// When it broke, milliseconds since the Unix epoch.
    pub(crate) at_ms: u64,
    /// From the break until the stream was open again.
    pub(crate) took_ms: u64,
    /// The error that broke it.
    pub(crate) error: String,
    /// Events sent again after it (already seen: counted as duplicated).
    pub(crate) replayed: u64,
    /// The listener's missing writes acknowledged before it broke, and after.
    #[serde(default)]
    pub(crate) missing_before: u64,
    #[serde(default)]
    pub(crate) missing_after: u64,
}

impl StreamResult {
    /// The listeners' counts summed.
    pub(crate) fn of(
        group: String,
        scope: String,
        per_listener: Vec<ListenerResult>,
        resumes: Vec<Resume>,
        not_judged: Option<String>,
    ) -> StreamResult {
        let sum = |f: fn(&ListenerResult) -> u64| per_listener.iter().map(f).sum::<u64>();
        let failed: Vec<&ListenerResult> =
            per_listener.iter().filter(|l| l.failed.is_some()).collect();
        StreamResult {
            group,
            scope,
            listeners: u32::try_from(per_listener.len()).unwrap_or(u32::MAX),
            expected: if not_judged.is_some() {
                None
            } else {
                Some(per_listener.iter().filter_map(|l| l.expected).sum())
            },
            delivered: sum(|l| l.delivered),
            missing: if not_judged.is_some() {
                0
            } else {
                sum(|l| l.missing)
            },
            duplicated: sum(|l| l.duplicated),
            out_of_order: sum(|l| l.out_of_order),
            late: sum(|l| l.late),
            other: sum(|l| l.other),
            events: sum(|l| l.events),
            failed_listeners: u32::try_from(failed.len()).unwrap_or(u32::MAX),
            skipped: if not_judged.is_some() {
                0
            } else {
                sum(|l| l.skipped)
            },
            not_judged,
            resumes,
            per_listener,
        }
    }

    /// Events went missing or came twice, or a listener's stream could not go on.
    pub(crate) fn failed(&self) -> bool {
        self.missing > 0 || self.duplicated > 0 || self.failed_listeners > 0
    }

    /// The console's and the warnings' words for what went wrong, if anything did.
    pub(crate) fn trouble(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.failed_listeners > 0 {
            let why = self
                .per_listener
                .iter()
                .find_map(|l| l.failed.clone())
                .unwrap_or_default();
            parts.push(format!(
                "{} of {} listeners stopped: {why}",
                self.failed_listeners, self.listeners
            ));
        }
        if self.skipped > 0 {
            parts.push(format!(
                "history lost: the streams went past {} acknowledged writes without delivering them (the oplog no longer held them); no lag is reported for those",
                self.skipped
            ));
        }
        if self.missing > self.skipped {
            parts.push(format!(
                "{} events still missing when the drain ended (the listeners were behind)",
                self.missing - self.skipped
            ));
        }
        if self.duplicated > 0 {
            parts.push(format!("{} events delivered twice", self.duplicated));
        }
        (!parts.is_empty()).then(|| format!("watch group `{}`: {}", self.group, parts.join("; ")))
    }
}

/// One line of `changes.tsv`: an event, or a write a listener never saw.
#[derive(Debug, Clone)]
pub struct ChangeLine {
    pub(crate) listener: u32,
    pub(crate) kind: String,
    pub(crate) collection: String,
    pub(crate) id: String,
    pub(crate) ack_us: Option<u64>,
    pub(crate) received_us: Option<u64>,
    pub(crate) lag_us: Option<u64>,
    /// `ack`, `wallTime`, `duplicate`; for a write never seen: `skipped` (its stream went past
    /// it) or `missing` (still ahead of the listener when it stopped).
    pub(crate) what: &'static str,
}

/// `changes.tsv`'s header.
pub(crate) const CHANGES_HEADER: &str =
    "listener\toperation\tcollection\tid\tack_us\treceived_us\tlag_us\twhat";

impl ChangeLine {
    pub(crate) fn tsv(&self) -> String {
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.listener,
            self.kind,
            self.collection,
            self.id.replace(['\t', '\n'], " "),
            opt(self.ack_us),
            opt(self.received_us),
            opt(self.lag_us),
            self.what
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener(n: u32, expected: u64, delivered: u64, skipped: u64) -> ListenerResult {
        ListenerResult {
            listener: n,
            expected: Some(expected),
            delivered,
            missing: expected - delivered,
            skipped,
            ..ListenerResult::default()
        }
    }

    #[test]
    fn a_groups_counts_are_its_listeners_summed_and_its_trouble_is_said_in_words() {
        let all = StreamResult::of(
            "l".into(),
            "collection a.b".into(),
            vec![listener(1, 10, 10, 0), listener(2, 10, 10, 0)],
            Vec::new(),
            None,
        );
        assert_eq!(
            (all.expected, all.delivered, all.missing),
            (Some(20), 20, 0)
        );
        assert!(!all.failed() && all.trouble().is_none());
        let lost = StreamResult::of(
            "l".into(),
            "collection a.b".into(),
            vec![listener(1, 10, 4, 5), listener(2, 10, 10, 0)],
            Vec::new(),
            None,
        );
        assert_eq!((lost.missing, lost.skipped), (6, 5));
        assert!(lost.failed());
        let t = lost.trouble().unwrap();
        assert!(
            t.contains("history lost")
                && t.contains("past 5")
                && t.contains("1 events still missing"),
            "{t}"
        );
        // A filter the tool cannot read: nothing counted as missing, nothing failed for it.
        let unread = StreamResult::of(
            "l".into(),
            "collection a.b".into(),
            vec![listener(1, 10, 4, 0)],
            Vec::new(),
            Some("the pipeline's $match reads `fullDocument.x`".into()),
        );
        assert_eq!((unread.expected, unread.missing), (None, 0));
        assert!(!unread.failed());
    }
}
