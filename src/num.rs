//! Numbers from one type to another where a cast alone would not say what happens at the edges:
//! counts and microseconds as doubles (exact below 2^53), and doubles back as whole counts
//! (rounded, saturating). Every module uses these, so they import nothing of the crate.
//!
//! Owns: those conversions and why each is safe. Never: units, formatting, or what a number means.

/// A count or a number of microseconds as a double, for averages, rates and milliseconds: exact
/// below 2^53 (285 years of microseconds), the nearest double beyond, which is all a rate needs.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn real(n: u64) -> f64 {
    n as f64
}

/// A signed count, size or number of microseconds as a double (see `real`).
#[allow(clippy::cast_precision_loss)]
pub(crate) fn real_signed(n: i64) -> f64 {
    n as f64
}

/// A length as a double (see `real`).
pub(crate) fn real_len(n: usize) -> f64 {
    real(u64::try_from(n).unwrap_or(u64::MAX))
}

/// A signed number read back as a double (an offset, a number of intervals): rounded to the
/// nearest whole one, 0 when not a number, saturating at `i64`'s ends.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn whole_signed(x: f64) -> i64 {
    // `as` from a float saturates (and maps NaN to 0).
    x.round() as i64
}

/// A count or size as a signed 64-bit integer (TOML's and BSON's integers): saturating at
/// `i64::MAX`, which no count here reaches.
pub(crate) fn signed<T: TryInto<i64>>(n: T) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// A double as a length or an index: rounded to the nearest whole one, 0 below 0 or when not a
/// number, saturating (see `whole`).
pub(crate) fn whole_len(x: f64) -> usize {
    usize::try_from(whole(x)).unwrap_or(usize::MAX)
}

/// A non-negative number of microseconds (or a count) read back as a double: rounded to the
/// nearest whole one, 0 below 0 or when not a number, `u64::MAX` beyond it.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub(crate) fn whole(x: f64) -> u64 {
    // `as` from a float saturates (and maps NaN to 0), which is what is said above.
    x.round() as u64
}
