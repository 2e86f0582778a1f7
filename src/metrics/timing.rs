//! One latency distribution (an HdrHistogram of microseconds with its exact sum, min and max),
//! and histograms written and read back as text (the HdrHistogram V2 compressed base64 form).

use super::real;

use hdrhistogram::serialization::Serializer;
use hdrhistogram::Histogram;

/// Highest latency the histograms track exactly: one hour. Longer ones are clamped to it.
const MAX_TRACKABLE_US: u64 = 3_600_000_000;

/// One latency distribution: histogram plus exact sum, min and max.
#[derive(Debug, Clone)]
pub struct Timing {
    pub(crate) hist: Histogram<u64>,
    pub(crate) sum_us: u128,
    pub(crate) min_us: u64,
    pub(crate) max_us: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Self::with(new_histogram())
    }
}

impl Timing {
    /// An empty timing around `hist`, emptied first (a histogram used again).
    pub(crate) fn with(mut hist: Histogram<u64>) -> Self {
        if !hist.is_empty() {
            hist.reset();
        }
        Self {
            hist,
            sum_us: 0,
            min_us: u64::MAX,
            max_us: 0,
        }
    }
}

/// A fresh histogram with the bounds every latency histogram of the tool shares, so any two
/// can be added: 1 us to one hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3).expect("static histogram bounds are valid")
}

/// A histogram as HdrHistogram's compressed V2 encoding (deflate) in base64: the form of the
/// interval log's payloads, readable by every HdrHistogram implementation.
pub fn encode(h: &Histogram<u64>) -> String {
    use base64::Engine;
    let mut bytes = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The inverse of `encode`.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("not an HdrHistogram V2 payload: {e:?}"))
}

impl Timing {
    pub(super) fn record(&mut self, us: u64) {
        self.hist.saturating_record(us.clamp(1, MAX_TRACKABLE_US));
        self.sum_us += u128::from(us);
        self.min_us = self.min_us.min(us);
        self.max_us = self.max_us.max(us);
    }

    pub(crate) fn merge(&mut self, o: &Timing) {
        self.hist.add(&o.hist).expect("histograms share bounds");
        self.sum_us += o.sum_us;
        self.min_us = self.min_us.min(o.min_us);
        self.max_us = self.max_us.max(o.max_us);
    }

    /// Milliseconds at quantile `q` (0 when empty).
    pub(crate) fn quantile_ms(&self, q: f64) -> f64 {
        quantile_ms(&self.hist, q)
    }

    pub(crate) fn average_ms(&self) -> f64 {
        let n = self.hist.len();
        if n == 0 {
            0.0
        } else {
            real(u64::try_from(self.sum_us).unwrap_or(u64::MAX)) / real(n) / 1000.0
        }
    }
}

/// Milliseconds at quantile `q` of a histogram of microseconds (0 when empty): the one place a
/// percentile is read (the summary's rows, `compare`, the interval log read back).
pub(crate) fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        real(h.value_at_quantile(q)) / 1000.0
    }
}
