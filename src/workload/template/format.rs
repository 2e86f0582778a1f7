//! `^FormatString`'s format: C printf conversions (`%s`, `%d`, `%i`, `%u`, `%x`, `%X`, `%o`,
//! `%c`, `%f`, `%e`, `%g`, `%%`) with flags `-`, `0`, `+`, space, `#`, a width and a precision,
//! and boost's forms that genny's format takes (`%2$d`, `%1%`, `%|06d|`), parsed once at compile.

use mongodb::bson::Bson;

#[derive(Debug, Clone)]
pub(super) enum Piece {
    Lit(String),
    Conv(Spec),
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
    /// The C conversion letter, or `v`: as the value's type makes it (boost's `%1%`, `%|6|`).
    conv: char,
    /// The value's position (from 0), when given (`%2$d`, `%2%`); else the next one.
    pub(super) arg: Option<usize>,
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// The conversions a format may use.
const CONVERSIONS: &str =
    "use %s, %d, %i, %u, %x, %X, %o, %c, %f, %e, %g, %%, or boost's %1% and %|06d|";

/// The pieces of a format, or what is wrong with it. As genny's (boost's format): C printf
/// conversions, positional ones (`%2$d`, `%1%`), and a conversion between bars (`%|06d|`, whose
/// type letter may be left out).
pub(super) fn parse(format: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut chars = format.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        let spec = match chars.peek().map(|&(_, c)| c) {
            Some('%') => {
                chars.next();
                lit.push('%');
                continue;
            }
            Some('|') => {
                chars.next();
                let spec = directive(&mut chars, at, true)?;
                match chars.next() {
                    Some((_, '|')) => spec,
                    _ => {
                        return Err(format!(
                            "the conversion `%|...|` started at byte {at} has no closing `|`"
                        ))
                    }
                }
            }
            _ => directive(&mut chars, at, false)?,
        };
        if !lit.is_empty() {
            pieces.push(Piece::Lit(std::mem::take(&mut lit)));
        }
        pieces.push(Piece::Conv(spec));
    }
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    Ok(pieces)
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a decimal digit is below 10"
)]
fn number(chars: &mut Chars) -> Option<usize> {
    let mut n: Option<usize> = None;
    while let Some(&(_, d)) = chars.peek() {
        match d.to_digit(10) {
            Some(v) => {
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(v as usize));
                chars.next();
            }
            None => break,
        }
    }
    n
}

/// One conversion after its `%` (or `%|`): `[N$]` flags, width, `.precision`, length modifiers
/// and the type letter (which `bracketed` may leave out); or `N%`.
fn directive(chars: &mut Chars, at: usize, bracketed: bool) -> Result<Spec, String> {
    let mut spec = Spec::default();
    let mut width = None;
    if let Some(&(_, '1'..='9')) = chars.peek() {
        let n = number(chars).unwrap_or(0);
        match chars.peek().map(|&(_, c)| c) {
            Some('$') => {
                chars.next();
                spec.arg = Some(n - 1);
            }
            Some('%') if !bracketed => {
                chars.next();
                spec.arg = Some(n - 1);
                spec.conv = 'v';
                return Ok(spec);
            }
            _ => width = Some(n),
        }
    }
    if width.is_none() {
        while let Some(&(_, f)) = chars.peek() {
            match f {
                '-' => spec.left = true,
                '0' => spec.zero = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alt = true,
                _ => break,
            }
            chars.next();
        }
        width = number(chars);
    }
    spec.width = width.unwrap_or(0).min(1 << 16);
    if chars.peek().map(|&(_, c)| c) == Some('.') {
        chars.next();
        spec.precision = Some(number(chars).unwrap_or(0).min(1 << 16));
    }
    // Length modifiers mean nothing here: every integer is 64 bits.
    while let Some(&(_, 'h' | 'l' | 'L' | 'j' | 'z' | 't')) = chars.peek() {
        chars.next();
    }
    match chars.peek().map(|&(_, c)| c) {
        Some(
            conv @ ('s' | 'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c' | 'f' | 'F' | 'e' | 'E' | 'g'
            | 'G'),
        ) => {
            chars.next();
            spec.conv = conv;
            Ok(spec)
        }
        Some('|') if bracketed => {
            spec.conv = 'v';
            Ok(spec)
        }
        Some(other) => Err(format!(
            "`%{other}` at byte {at} is not a conversion ({CONVERSIONS})"
        )),
        None => Err(format!(
            "the format ends inside a conversion started at byte {at}"
        )),
    }
}

/// How many values the format takes: one per conversion, or up to the highest position given.
pub(super) fn conversions(pieces: &[Piece]) -> usize {
    let mut in_turn = 0;
    let mut most = 0;
    for p in pieces {
        if let Piece::Conv(spec) = p {
            match spec.arg {
                Some(i) => most = most.max(i + 1),
                None => in_turn += 1,
            }
        }
    }
    most.max(in_turn)
}

/// Text of a generated value for `%s` and `^Join`.
pub(super) fn text(b: &Bson) -> String {
    let mut s = String::new();
    push_text(&mut s, b);
    s
}

pub(super) fn push_text(out: &mut String, b: &Bson) {
    use std::fmt::Write;
    match b {
        Bson::String(s) | Bson::Symbol(s) => out.push_str(s),
        Bson::Int32(i) => {
            let _ = write!(out, "{i}");
        }
        Bson::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Bson::Double(f) => {
            let _ = write!(out, "{f}");
        }
        Bson::Boolean(v) => {
            let _ = write!(out, "{v}");
        }
        Bson::ObjectId(o) => {
            let _ = write!(out, "{}", o.to_hex());
        }
        Bson::DateTime(d) => match d.try_to_rfc3339_string() {
            Ok(s) => out.push_str(&s),
            Err(_) => {
                let _ = write!(out, "{}", d.timestamp_millis());
            }
        },
        Bson::Null => out.push_str("null"),
        Bson::Decimal128(d) => {
            let _ = write!(out, "{d}");
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "printf's %d of a double: truncated as C's, saturating here"
)]
fn as_i64(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.is_finite() => Some(*f as i64),
        Bson::Boolean(v) => Some(i64::from(*v)),
        Bson::DateTime(d) => Some(d.timestamp_millis()),
        Bson::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_f64(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(crate::num::real_signed(*i)),
        Bson::Double(f) => Some(*f),
        Bson::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Writes one conversion of `arg`; a value that is not a number for a numeric conversion is
/// written as `%s` would.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "%x and %o print a negative integer's two's complement bits, as C's do"
)]
pub(super) fn write(out: &mut String, spec: &Spec, arg: &Bson) {
    if spec.conv == 'v' {
        let conv = match arg {
            Bson::Int32(_) | Bson::Int64(_) => 'd',
            Bson::Double(_) => 'g',
            _ => 's',
        };
        return write(out, &Spec { conv, ..*spec }, arg);
    }
    let (sign, body): (&str, String) = match spec.conv {
        's' => {
            let mut s = text(arg);
            if let Some(p) = spec.precision {
                if let Some((i, _)) = s.char_indices().nth(p) {
                    s.truncate(i);
                }
            }
            return pad(out, spec, "", s, false);
        }
        'c' => {
            let s = match as_i64(arg)
                .and_then(|i| u32::try_from(i).ok())
                .and_then(char::from_u32)
            {
                Some(c) => c.to_string(),
                None => text(arg)
                    .chars()
                    .next()
                    .map(String::from)
                    .unwrap_or_default(),
            };
            return pad(out, spec, "", s, false);
        }
        'd' | 'i' => match as_i64(arg) {
            Some(i) => {
                let sign = if i < 0 {
                    "-"
                } else if spec.plus {
                    "+"
                } else if spec.space {
                    " "
                } else {
                    ""
                };
                (sign, digits(i.unsigned_abs().to_string(), spec.precision))
            }
            None => return pad(out, spec, "", text(arg), false),
        },
        'u' | 'x' | 'X' | 'o' => match as_i64(arg) {
            Some(i) => {
                let u = i as u64;
                let s = match spec.conv {
                    'u' => u.to_string(),
                    'x' => format!("{u:x}"),
                    'X' => format!("{u:X}"),
                    _ => format!("{u:o}"),
                };
                let prefix = match (spec.alt && u != 0, spec.conv) {
                    (true, 'x') => "0x",
                    (true, 'X') => "0X",
                    (true, 'o') => "0",
                    _ => "",
                };
                (prefix, digits(s, spec.precision))
            }
            None => return pad(out, spec, "", text(arg), false),
        },
        _ => match as_f64(arg) {
            Some(f) => {
                let sign = if f.is_sign_negative() && !f.is_nan() {
                    "-"
                } else if spec.plus {
                    "+"
                } else if spec.space {
                    " "
                } else {
                    ""
                };
                (sign, float(f.abs(), spec))
            }
            None => return pad(out, spec, "", text(arg), false),
        },
    };
    let numeric =
        spec.precision.is_none() || matches!(spec.conv, 'f' | 'F' | 'e' | 'E' | 'g' | 'G');
    pad(out, spec, sign, body, numeric)
}

/// An integer's digits with at least `precision` of them (precision 0 and value 0: none).
fn digits(s: String, precision: Option<usize>) -> String {
    match precision {
        Some(0) if s == "0" => String::new(),
        Some(p) if s.len() < p => format!("{}{s}", "0".repeat(p - s.len())),
        _ => s,
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "the decimal exponent of a finite double, and a precision the format string wrote"
)]
fn float(f: f64, spec: &Spec) -> String {
    if !f.is_finite() {
        let s = if f.is_nan() { "nan" } else { "inf" };
        return if spec.conv.is_ascii_uppercase() {
            s.to_uppercase()
        } else {
            s.to_string()
        };
    }
    let p = spec.precision.unwrap_or(6);
    let s = match spec.conv {
        'f' | 'F' => format!("{f:.p$}"),
        'e' | 'E' => exp(f, p),
        _ => {
            let p = p.max(1);
            let x = if f == 0.0 {
                0
            } else {
                f.abs().log10().floor() as i64
            };
            let mut s = if x < -4 || x >= p as i64 {
                exp(f, p - 1)
            } else {
                format!("{f:.*}", (p as i64 - 1 - x).max(0) as usize)
            };
            if !spec.alt {
                s = strip_zeros(s);
            }
            s
        }
    };
    if spec.conv.is_ascii_uppercase() {
        s.to_uppercase()
    } else {
        s
    }
}

/// C's `%e`: `1.500000e+00`.
fn exp(f: f64, p: usize) -> String {
    let s = format!("{f:.p$e}");
    let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i64 = e.parse().unwrap_or(0);
    format!(
        "{mantissa}e{}{:02}",
        if e < 0 { '-' } else { '+' },
        e.unsigned_abs()
    )
}

fn strip_zeros(s: String) -> String {
    let (mantissa, e) = match s.find('e') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s.as_str(), ""),
    };
    if !mantissa.contains('.') {
        return s;
    }
    let m = mantissa.trim_end_matches('0').trim_end_matches('.');
    format!("{m}{e}")
}

fn pad(out: &mut String, spec: &Spec, prefix: &str, body: String, numeric: bool) {
    let len = prefix.chars().count() + body.chars().count();
    let fill = spec.width.saturating_sub(len);
    if spec.left {
        out.push_str(prefix);
        out.push_str(&body);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if spec.zero && numeric {
        out.push_str(prefix);
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(&body);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(prefix);
        out.push_str(&body);
    }
}
