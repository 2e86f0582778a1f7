//! Wall-clock microseconds for sample times, read from the monotonic (tokio) clock: one origin
//! for the run, so the samples' times, the recorder's intervals and the error-rate window are on
//! one clock, which a step of the wall clock during the run does not move.

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
            origin_epoch_us: u64::try_from(since.as_micros()).unwrap_or(u64::MAX),
        }
    }

    /// Now, on this clock.
    pub fn now_us(&self) -> u64 {
        self.epoch_us(Instant::now())
    }

    pub(crate) fn epoch_us(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.origin).as_micros();
        self.origin_epoch_us + u64::try_from(since).unwrap_or(u64::MAX)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
