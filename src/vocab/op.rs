//! Operation kinds and operation names: the one table of operation names (as profiles,
//! summaries and the sample log write them).

use serde::{Deserialize, Serialize};

/// The operation a group sends, as named in profiles, summaries and the sample log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum OpKind {
    Insert,
    Find,
    Update,
    Remove,
    /// A point read by `_id`.
    Get,
    /// Read-modify-write: find one by `_id`, then update it (timed as one, like YCSB's F).
    Rmw,
    /// A short range scan by `_id`: up to `limit` documents from a chosen one (YCSB's E).
    Scan,
}

impl OpKind {
    pub const ALL: [OpKind; 7] = [
        OpKind::Insert,
        OpKind::Find,
        OpKind::Update,
        OpKind::Remove,
        OpKind::Get,
        OpKind::Rmw,
        OpKind::Scan,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Insert => "insert",
            OpKind::Find => "find",
            OpKind::Update => "update",
            OpKind::Remove => "remove",
            OpKind::Get => "get",
            OpKind::Rmw => "rmw",
            OpKind::Scan => "scan",
        }
    }

    /// The names as a profile error lists them: `"insert", "find", ...`.
    pub(crate) fn listed() -> String {
        let names: Vec<String> = Self::ALL
            .iter()
            .map(|k| format!("\"{}\"", k.name()))
            .collect();
        names.join(", ")
    }
}

impl TryFrom<String> for OpKind {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown operation `{s}`, expected one of {}",
                    Self::listed()
                )
            })
    }
}

impl From<OpKind> for &'static str {
    fn from(k: OpKind) -> Self {
        k.name()
    }
}

impl std::fmt::Display for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a row of a group's operations is called: a built-in kind (`insert`, `get`, ...) or the
/// name of one of the profile's own operations (`[[group.ops]] name = "lookup"`). A name equal
/// to a kind's is that kind, so the text always reads back as the same value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(from = "String", into = "String")]
pub enum OpName {
    Kind(OpKind),
    /// A thin pointer, so a sample carries 8 bytes for it.
    Named(std::sync::Arc<String>),
}

impl OpName {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            OpName::Kind(k) => k.name(),
            OpName::Named(n) => n,
        }
    }
}

impl From<&str> for OpName {
    fn from(s: &str) -> Self {
        OpKind::ALL.into_iter().find(|k| k.name() == s).map_or_else(
            || OpName::Named(std::sync::Arc::new(s.to_string())),
            OpName::Kind,
        )
    }
}

impl From<String> for OpName {
    fn from(s: String) -> Self {
        OpName::from(s.as_str())
    }
}

impl From<OpKind> for OpName {
    fn from(k: OpKind) -> Self {
        OpName::Kind(k)
    }
}

impl From<OpName> for String {
    fn from(n: OpName) -> Self {
        n.as_str().to_string()
    }
}

impl std::fmt::Display for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_one_name() {
        for k in OpKind::ALL {
            assert_eq!(OpKind::try_from(k.name().to_string()), Ok(k));
        }
        assert!(OpKind::try_from("upsert".to_string())
            .unwrap_err()
            .contains("\"insert\", \"find\", \"update\", \"remove\", \"get\", \"rmw\", \"scan\""));
    }
}
