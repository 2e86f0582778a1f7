//! Wall-clock microseconds for sample times, read from the monotonic (tokio) clock.

use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
    origin_epoch_us: u64,
}

impl Clock {
    pub fn new() -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            origin: Instant::now(),
            origin_epoch_us: since.as_micros() as u64,
        }
    }

    pub fn epoch_us(&self, at: Instant) -> u64 {
        self.origin_epoch_us + at.saturating_duration_since(self.origin).as_micros() as u64
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
