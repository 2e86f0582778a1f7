//! `^ConvertToInt`, `^ConvertToInt32`, `^ConvertToDouble` and `^ConvertToDecimal`: a number or
//! a string made into the type, as genny makes it (a string read as C++'s `stol`, `stoi`,
//! `stod` read it, a number cast as C++ casts it, a double written as `std::to_string` writes it
//! before it becomes a Decimal128).

use std::str::FromStr;

use mongodb::bson::{Bson, Decimal128};

/// The type a `^ConvertTo*` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum To {
    Int,
    Int32,
    Double,
    Decimal,
}

impl To {
    pub(super) fn name(self) -> &'static str {
        match self {
            To::Int => "^ConvertToInt",
            To::Int32 => "^ConvertToInt32",
            To::Double => "^ConvertToDouble",
            To::Decimal => "^ConvertToDecimal",
        }
    }
}

/// `value` made into `to`; None when it cannot be (a string that is not a number of the type,
/// or a value that is neither a number nor a string).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "genny's ^ConvertToInt and ^ConvertToInt32 are C++'s casts (saturating here)"
)]
pub(super) fn convert(to: To, value: &Bson) -> Option<Bson> {
    match value {
        Bson::String(s) => from_str(to, s),
        Bson::Int32(i) => from_int(to, i64::from(*i)),
        Bson::Int64(i) => from_int(to, *i),
        Bson::Double(f) => Some(match to {
            // C++'s casts: out of range, Rust's saturate where C++'s are undefined.
            To::Int => Bson::Int64(*f as i64),
            To::Int32 => Bson::Int32(*f as i32),
            To::Double => Bson::Double(*f),
            To::Decimal => Bson::Decimal128(decimal(&to_string(*f))?),
        }),
        _ => None,
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "genny's ^ConvertToInt32 is C++'s cast: the low 32 bits"
)]
fn from_int(to: To, i: i64) -> Option<Bson> {
    Some(match to {
        To::Int => Bson::Int64(i),
        To::Int32 => Bson::Int32(i as i32),
        To::Double => Bson::Double(crate::num::real_signed(i)),
        To::Decimal => Bson::Decimal128(decimal(&i.to_string())?),
    })
}

/// A string made into `to`: `stol` (to Int), `stoi` (Int32), `stod` (Double), the whole string
/// as a Decimal128.
pub(super) fn from_str(to: To, s: &str) -> Option<Bson> {
    match to {
        To::Int => stol(s).map(Bson::Int64),
        To::Int32 => stol(s).and_then(|i| i32::try_from(i).ok()).map(Bson::Int32),
        To::Double => stod(s).map(Bson::Double),
        To::Decimal => decimal(s).map(Bson::Decimal128),
    }
}

fn decimal(s: &str) -> Option<Decimal128> {
    Decimal128::from_str(s.trim()).ok()
}

/// C++'s `std::to_string` of a double: `%f`, six digits after the point.
fn to_string(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{f:.6}")
    }
}

/// C's `isspace`.
fn space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// `std::stol`: leading white space, an optional sign, decimal digits, and whatever follows
/// ignored; None without a digit or out of range.
fn stol(s: &str) -> Option<i64> {
    let t = s.trim_start_matches(space);
    let b = t.as_bytes();
    let mut end = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits_from = end;
    while b.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    if end == digits_from {
        return None;
    }
    t[..end].parse().ok()
}

/// `std::stod`: leading white space, then the longest prefix that is a decimal number
/// (`-1.5e3`, `.5`, `7.`) or `inf`, `infinity`, `nan`; None without one or out of range.
fn stod(s: &str) -> Option<f64> {
    let t = s.trim_start_matches(space);
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let rest = t[i..].to_ascii_lowercase();
    for word in ["infinity", "inf", "nan"] {
        if rest.starts_with(word) {
            return t[..i + word.len()].parse().ok();
        }
    }
    let mut digits = 0;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
        digits += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let from = j;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > from {
            i = j;
        }
    }
    let f: f64 = t[..i].parse().ok()?;
    // stod refuses a value out of the range of a double.
    f.is_finite().then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_read_as_cpp_reads_them() {
        assert_eq!(stol(" 42abc"), Some(42));
        assert_eq!(stol("-7.9"), Some(-7));
        assert_eq!(stol("+3"), Some(3));
        assert_eq!(stol("abc"), None);
        assert_eq!(stol("-"), None);
        assert_eq!(stol("99999999999999999999"), None);
        assert_eq!(stod("  1.5e3x"), Some(1500.0));
        assert_eq!(stod(".5"), Some(0.5));
        assert_eq!(stod("7."), Some(7.0));
        assert_eq!(stod("2e"), Some(2.0));
        assert_eq!(stod("-inf"), Some(f64::NEG_INFINITY));
        assert!(stod("nan").is_some_and(f64::is_nan));
        assert_eq!(stod("e5"), None);
        assert_eq!(stod("1e999"), None);
        assert_eq!(from_str(To::Int32, "3000000000"), None);
        assert_eq!(from_str(To::Int32, "-12"), Some(Bson::Int32(-12)));
        assert_eq!(to_string(0.1), "0.100000");
        assert_eq!(to_string(-2.0), "-2.000000");
    }
}
