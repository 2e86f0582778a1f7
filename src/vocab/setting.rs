//! What a change made while a run goes sets of a group (`--live-control`): its rate or its
//! users. Written as `rate` and `users` (summary.json's `changes[].setting`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Setting {
    /// Operations per second (open loop).
    Rate,
    /// Virtual users (closed loop).
    Users,
}

impl Setting {
    /// `rate`, `users`.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Setting::Rate => "rate",
            Setting::Users => "users",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_written_and_read_as_its_word() {
        for s in [Setting::Rate, Setting::Users] {
            let text = serde_json::to_string(&s).unwrap();
            assert_eq!(text, format!("\"{}\"", s.word()));
            assert_eq!(serde_json::from_str::<Setting>(&text).unwrap(), s);
        }
        assert!(serde_json::from_str::<Setting>("\"speed\"").is_err());
    }
}
