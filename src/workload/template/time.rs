//! Dates and durations of the generator language: ISO dates (`2015-01-01`,
//! `2015-01-01T00:00:00.250+05:30`), dates relative to the operation's time (`now`, `-30d`,
//! `now+1h`), TOML datetimes, and durations (`90s`, `30m`, `1h`, `2d`, `1h 30m`).

/// A point in time: milliseconds since the epoch, or an offset from the operation's `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    At(i64),
    FromNow(i64),
}

impl When {
    pub(super) fn resolve(self, now_ms: i64) -> i64 {
        match self {
            When::At(ms) => ms,
            When::FromNow(d) => now_ms.saturating_add(d),
        }
    }
}

pub(super) const DURATION_FORM: &str =
    "a duration such as \"90s\", \"30m\", \"1h\", \"2d\" or \"1h 30m\"";
pub(super) const DATE_FORM: &str = "an ISO date (\"2024-01-31\", \"2024-01-31T12:00:00Z\", \
     \"2024-01-31T12:00:00.5+05:30\"), \"now\", or a time relative to now (\"-30d\", \"+1h\", \
     \"now-2h\"), a string of digits (milliseconds since the epoch), or a TOML datetime \
     (2024-01-31T12:00:00Z)";

/// Milliseconds of a duration such as `1h`, `30m`, `2d`, `1h 30m`, `250ms`.
pub(super) fn parse_duration_ms(s: &str) -> Result<i64, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration ({e})"))?;
    i64::try_from(d.as_millis()).map_err(|_| format!("`{s}` is too long a duration"))
}

/// `now`, `now-30d`, `-30d`, `+1h`, an ISO date, or digits (milliseconds since the epoch).
pub(super) fn parse_when(s: &str) -> Result<When, String> {
    let t = s.trim();
    let rel = |rest: &str| -> Result<When, String> {
        let rest = rest.trim();
        if rest.is_empty() {
            return Ok(When::FromNow(0));
        }
        let (sign, dur) = match rest.as_bytes()[0] {
            b'-' => (-1, &rest[1..]),
            b'+' => (1, &rest[1..]),
            _ => return Err(format!("`{s}` is not a date")),
        };
        let ms = parse_duration_ms(dur).map_err(|e| format!("`{s}` is not a date: {e}"))?;
        Ok(When::FromNow(sign * ms))
    };
    if let Some(rest) = t.strip_prefix("now") {
        return rel(rest);
    }
    if t.starts_with('-') || t.starts_with('+') {
        return rel(t);
    }
    if let Some(ms) = parse_iso(t) {
        return Ok(When::At(ms));
    }
    // genny reads a string of digits as milliseconds since the epoch.
    if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
        if let Ok(ms) = t.parse() {
            return Ok(When::At(ms));
        }
    }
    Err(format!("`{s}` is not a date"))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(super) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

fn civil_ms(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32, ms: u32) -> Option<i64> {
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60
    {
        return None;
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60 + s.min(59));
    Some(secs * 1000 + i64::from(ms))
}

/// `YYYY-MM-DD`, optionally followed by `T` (or a space) and `HH:MM[:SS[.fff]]`, optionally
/// followed by `Z` or an offset `±HH:MM` / `±HHMM` / `±HH`; no offset is UTC.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a fraction of a second of at most three digits"
)]
pub(super) fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let y = i64::from(num(0, 4)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let (mo, d) = (num(5, 2)?, num(8, 2)?);
    let mut i = 10;
    let (mut h, mut mi, mut sec, mut ms) = (0, 0, 0, 0);
    if matches!(b.get(i), Some(b'T' | b't' | b' ')) {
        h = num(i + 1, 2)?;
        if b.get(i + 3) != Some(&b':') {
            return None;
        }
        mi = num(i + 4, 2)?;
        i += 6;
        if b.get(i) == Some(&b':') {
            sec = num(i + 1, 2)?;
            i += 3;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                let digits = &s[start..i.min(start + 3)];
                ms = digits.parse::<u32>().ok()? * 10u32.pow(3 - digits.len() as u32);
            }
        }
    }
    let offset_min: i64 = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&c @ (b'+' | b'-')) => {
            let oh = i64::from(num(i + 1, 2)?);
            let om = match b.len() - (i + 3) {
                0 => 0,
                3 if b[i + 3] == b':' => i64::from(num(i + 4, 2)?),
                2 => i64::from(num(i + 3, 2)?),
                _ => return None,
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let m = oh * 60 + om;
            if c == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return None,
    };
    Some(civil_ms(y, mo, d, h, mi, sec, ms)? - offset_min * 60_000)
}

/// A TOML datetime as milliseconds since the epoch: a local date-time or a date is UTC; a time
/// alone is not a date.
pub(super) fn toml_datetime_ms(dt: &toml::value::Datetime) -> Option<i64> {
    let date = dt.date?;
    let (h, mi, s, ns) = dt
        .time
        .map_or((0, 0, 0, 0), |t| (t.hour, t.minute, t.second, t.nanosecond));
    let ms = civil_ms(
        i64::from(date.year),
        u32::from(date.month),
        u32::from(date.day),
        u32::from(h),
        u32::from(mi),
        u32::from(s),
        ns / 1_000_000,
    )?;
    let offset = match dt.offset {
        Some(toml::value::Offset::Custom { minutes }) => i64::from(minutes),
        _ => 0,
    };
    Some(ms - offset * 60_000)
}
