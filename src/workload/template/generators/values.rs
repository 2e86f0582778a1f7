//! The generators' helpers: counters, cycles, fast strings, distinct draws, walks and frequency
//! maps; and values converted (to numbers, ObjectIds, UUIDs, joined and formatted text).

use super::*;

/// The next value of the user's counter `id`: `base + n * step` for its n-th value (from 0), the
/// base made by `base` at the user's first value.
pub(crate) fn count(
    cx: &mut Cx<'_>,
    id: usize,
    step: i64,
    base: impl FnOnce(&mut Cx<'_>) -> i64,
) -> i64 {
    if let Some(Slot::Count { base, n }) = cx.state.slots.get_mut(&id) {
        let v = base.wrapping_add(n.wrapping_mul(step));
        *n = n.wrapping_add(1);
        return v;
    }
    let b = base(cx);
    cx.state.slots.insert(id, Slot::Count { base: b, n: 1 });
    b
}

pub(crate) fn cycle(g: &CycleGen, cx: &mut Cx<'_>) -> Bson {
    if !matches!(cx.state.slots.get(&g.id), Some(Slot::Cycle { .. })) {
        let values: Vec<Bson> = (0..g.len).map(|_| g.of.generate(cx)).collect();
        cx.state.slots.insert(g.id, Slot::Cycle { values, next: 0 });
    }
    match cx.state.slots.get_mut(&g.id) {
        Some(Slot::Cycle { values, next }) if !values.is_empty() => {
            let v = values[*next].clone();
            *next = (*next + 1) % values.len();
            v
        }
        _ => Bson::Null,
    }
}

/// genny's `^FastRandomString`: each character from six bits of a 64-bit draw (ten characters a
/// draw), the alphabet's `(bits & 0x2f) % len`-th.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "genny's fast string: the low bits of a random word index its alphabet"
)]
pub(crate) fn fast_string(g: &StrGen, n: usize, cx: &mut Cx<'_>) -> String {
    let len = g.chars.len() as u64;
    let mut out = String::with_capacity(n);
    let mut value = cx.rng.next_u64();
    let mut bits = 64;
    for _ in 0..n {
        if bits < 6 {
            value = cx.rng.next_u64();
            bits = 64;
        }
        out.push(g.chars[((value & 0x2f) % len) as usize]);
        value >>= 6;
        bits -= 6;
    }
    out
}

/// The consecutive values of `of` that may be drawn again before `distinct_values` gives up (as
/// genny's does).
pub(super) const DISTINCT_TRIES: u32 = 100;

/// `n` different values of `of`, in the order drawn; fewer when `of` gives a value already
/// drawn more than `DISTINCT_TRIES` times in a row.
pub(crate) fn distinct_values(of: &Node, n: usize, cx: &mut Cx<'_>) -> Vec<Bson> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n.min(1 << 16));
    let mut repeats = 0;
    while out.len() < n {
        let v = of.generate(cx);
        // Equal as BSON: same type and same bytes.
        let key =
            mongodb::bson::to_vec(&mongodb::bson::doc! { "v": v.clone() }).unwrap_or_default();
        if seen.insert(key) {
            out.push(v);
            repeats = 0;
        } else {
            repeats += 1;
            if repeats > DISTINCT_TRIES {
                break;
            }
        }
    }
    out
}

pub(crate) fn walk(g: &WalkGen, cx: &mut Cx<'_>) -> Bson {
    let mut w = match cx.state.slots.remove(&g.id) {
        Some(Slot::Walk(w)) => w,
        _ => Walk::default(),
    };
    if w.n % g.per_series == 0 {
        let mut between = |(lo, hi): (f64, f64)| {
            if lo < hi {
                cx.rng.random_range(lo..hi)
            } else {
                lo
            }
        };
        w.x = between(g.x);
        w.y = between(g.y);
        let dir = cx.rng.random_range(0.0..std::f64::consts::TAU);
        w.vx = g.dist * dir.cos();
        w.vy = g.dist * dir.sin();
    }
    w.n = w.n.wrapping_add(1);
    w.x += w.vx;
    w.y += w.vy;
    let point = Bson::Array(vec![Bson::Double(w.x), Bson::Double(w.y)]);
    cx.state.slots.insert(g.id, Slot::Walk(w));
    point
}

/// A string taken from the map (its count one less, gone at 0), from an entry drawn uniformly;
/// None when the map is empty.
pub(crate) fn take(map: &mut FreqMap, cx: &mut Cx<'_>) -> Option<String> {
    let i = match map.len() {
        0 => return None,
        1 => 0,
        n => cx.rng.random_range(0..n),
    };
    let entry = &mut map[i];
    let s = entry.0.clone();
    entry.1 = entry.1.saturating_sub(1);
    if entry.1 == 0 {
        map.remove(i);
    }
    Some(s)
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "genny's integer of a double: its C++ cast, saturating here"
)]
pub(crate) fn to_i64(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.is_finite() => Some(*f as i64),
        _ => None,
    }
}

pub(crate) fn to_f64(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(crate::num::real_signed(*i)),
        Bson::Double(f) => Some(*f),
        _ => None,
    }
}

/// An ObjectId from 24 hex digits (or an ObjectId); null for anything else.
pub(crate) fn object_id_of(b: Bson) -> Bson {
    match b {
        Bson::ObjectId(o) => Bson::ObjectId(o),
        Bson::String(s) => ObjectId::parse_str(&s).map_or(Bson::Null, Bson::ObjectId),
        _ => Bson::Null,
    }
}

/// A UUID (binary subtype 4) from 32 hex digits, dashes anywhere ignored (or a UUID already);
/// null for anything else.
pub(crate) fn uuid_of(b: Bson) -> Bson {
    match b {
        Bson::Binary(bin) if bin.subtype == BinarySubtype::Uuid => Bson::Binary(bin),
        Bson::String(s) => match parse_uuid_hex(&s) {
            Some(bytes) => Bson::Binary(Binary::from_uuid(mongodb::bson::Uuid::from_bytes(bytes))),
            None => Bson::Null,
        },
        _ => Bson::Null,
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a hex digit is below 16"
)]
pub(crate) fn parse_uuid_hex(s: &str) -> Option<[u8; 16]> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|&c| c != b'-')
        .map(|c| (c as char).to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    if digits.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in digits.chunks(2).enumerate() {
        out[i] = pair[0] << 4 | pair[1];
    }
    Some(out)
}

/// The text of each element of an array (or of the one value), with `sep` between.
pub(crate) fn join(value: &Bson, sep: &str) -> String {
    match value {
        Bson::Array(items) => {
            let mut s = String::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(sep);
                }
                format::push_text(&mut s, item);
            }
            s
        }
        other => format::text(other),
    }
}

pub(crate) fn format_with(pieces: &[Piece], args: &[Bson]) -> String {
    let mut s = String::new();
    let mut next = args.iter();
    for p in pieces {
        match p {
            Piece::Lit(l) => s.push_str(l),
            Piece::Conv(spec) => {
                let arg = match spec.arg {
                    Some(i) => args.get(i),
                    None => next.next(),
                };
                format::write(&mut s, spec, arg.unwrap_or(&Bson::Null));
            }
        }
    }
    s
}
