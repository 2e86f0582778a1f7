//! `^PreprocessorFormatString`'s formatting: genny computes `format % tuple(withArgs)` in Python,
//! so this is Python's printf-style `%` with Python's `str()` and `repr()` of YAML values.
//!
//! Conversions `s r a d i u x X o c e E f F g G %`, flags `- + space # 0`, a width and a
//! precision (digits or `*`). `%(name)s` needs a mapping, which a tuple never is, so it is an
//! error, as in Python.

use serde_yaml::Value;

/// `format % tuple(args)`, or Python's complaint.
pub(super) fn percent_format(format: &str, args: &[Value]) -> Result<String, String> {
    let chars: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut next = 0;
    let mut take = |what: &str| -> Result<&Value, String> {
        let arg = args
            .get(next)
            .ok_or_else(|| format!("not enough arguments for format string ({what})"))?;
        next += 1;
        Ok(arg)
    };
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        if chars.get(i) == Some(&'(') {
            return Err("format requires a mapping (`%(name)s`), and withArgs is a list".into());
        }
        let mut spec = Spec::default();
        while let Some(&c) = chars.get(i) {
            match c {
                '-' => spec.left = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alternate = true,
                '0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        if chars.get(i) == Some(&'*') {
            i += 1;
            let width = star(take("the `*` width")?)?;
            if width < 0 {
                spec.left = true;
            }
            spec.width = usize::try_from(width.unsigned_abs()).unwrap_or(usize::MAX);
        } else {
            spec.width = digits(&chars, &mut i)?;
        }
        if chars.get(i) == Some(&'.') {
            i += 1;
            if chars.get(i) == Some(&'*') {
                i += 1;
                spec.precision =
                    Some(usize::try_from(star(take("the `*` precision")?)?.max(0)).unwrap_or(0));
            } else {
                spec.precision = Some(digits(&chars, &mut i)?);
            }
        }
        while matches!(chars.get(i), Some('h' | 'l' | 'L')) {
            i += 1;
        }
        let Some(&conversion) = chars.get(i) else {
            return Err("incomplete format".into());
        };
        i += 1;
        if conversion == '%' {
            out.push('%');
            continue;
        }
        let arg = take("the format has more `%` than withArgs has values")?;
        out.push_str(&convert(conversion, &spec, arg)?);
    }
    if next < args.len() {
        return Err(format!(
            "not all arguments converted during string formatting ({} values, {next} used)",
            args.len()
        ));
    }
    Ok(out)
}

#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

fn digits(chars: &[char], i: &mut usize) -> Result<usize, String> {
    let mut n: usize = 0;
    while let Some(d) = chars.get(*i).and_then(|c| c.to_digit(10)) {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(usize::try_from(d).unwrap_or(0)))
            .filter(|n| *n <= 10_000)
            .ok_or("a width or precision too large")?;
        *i += 1;
    }
    Ok(n)
}

fn star(arg: &Value) -> Result<i64, String> {
    match arg {
        Value::Number(n) if n.is_i64() => n
            .as_i64()
            .filter(|n| n.unsigned_abs() <= 10_000)
            .ok_or_else(|| "a `*` width or precision too large".into()),
        other => Err(format!("* wants int, not {}", type_name(other))),
    }
}

fn convert(conversion: char, spec: &Spec, arg: &Value) -> Result<String, String> {
    match conversion {
        's' | 'r' | 'a' => {
            let mut text = if conversion == 's' {
                py_str(arg)
            } else {
                py_repr(arg)
            };
            if let Some(p) = spec.precision {
                text = text.chars().take(p).collect();
            }
            Ok(pad(spec, "", &text, false))
        }
        'd' | 'i' | 'u' => {
            let n = integer(arg, conversion, true)?;
            let mut body = n.unsigned_abs().to_string();
            if let Some(p) = spec.precision {
                body = format!("{body:0>p$}");
            }
            Ok(pad(spec, sign(spec, n < 0), &body, true))
        }
        'x' | 'X' | 'o' => {
            let n = integer(arg, conversion, false)?;
            let magnitude = n.unsigned_abs();
            let (mut body, prefix) = match conversion {
                'x' => (format!("{magnitude:x}"), "0x"),
                'X' => (format!("{magnitude:X}"), "0X"),
                _ => (format!("{magnitude:o}"), "0o"),
            };
            if let Some(p) = spec.precision {
                body = format!("{body:0>p$}");
            }
            let mut lead = sign(spec, n < 0).to_string();
            if spec.alternate {
                lead.push_str(prefix);
            }
            Ok(pad(spec, &lead, &body, true))
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            let x = match arg {
                Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                Value::Bool(b) => f64::from(u8::from(*b)),
                other => {
                    return Err(format!(
                        "must be real number, not {} (`%{conversion}`)",
                        type_name(other)
                    ))
                }
            };
            let body = float_format(
                x.abs(),
                conversion,
                spec.precision.unwrap_or(6),
                spec.alternate,
            );
            let negative = x.is_sign_negative() && !x.is_nan();
            Ok(pad(spec, sign(spec, negative), &body, x.is_finite()))
        }
        'c' => {
            let c = match arg {
                Value::String(s) if s.chars().count() == 1 => s.clone(),
                Value::Number(n) => n
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .and_then(char::from_u32)
                    .map(String::from)
                    .ok_or("%c arg not in range(0x110000)")?,
                _ => return Err("%c requires int or char".into()),
            };
            Ok(pad(spec, "", &c, false))
        }
        other => Err(format!("unsupported format character `{other}`")),
    }
}

/// The argument of `%d` (a float truncated, as `int()` does) or of `%x`/`%o` (an integer only).
fn integer(arg: &Value, conversion: char, floats: bool) -> Result<i64, String> {
    match arg {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Ok(i);
            }
            let f = n.as_f64().unwrap_or(f64::NAN);
            if !floats || n.is_u64() {
                return Err(format!(
                    "%{conversion} format: an integer is required, not float"
                ));
            }
            if !f.is_finite() {
                return Err(format!("cannot convert float {} to integer", py_float(f)));
            }
            let t = f.trunc();
            if t.abs() >= 9.2e18 {
                return Err("the number is too large for %d".into());
            }
            #[allow(clippy::cast_possible_truncation)]
            Ok(t as i64)
        }
        Value::Bool(b) => Ok(i64::from(*b)),
        other => Err(format!(
            "%{conversion} format: a real number is required, not {}",
            type_name(other)
        )),
    }
}

fn sign(spec: &Spec, negative: bool) -> &'static str {
    if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    }
}

/// `lead` (sign, prefix) and `body` padded to the width: spaces before, or after with `-`, or
/// zeros between the lead and the body with `0` (numbers only).
fn pad(spec: &Spec, lead: &str, body: &str, numeric: bool) -> String {
    let len = lead.chars().count() + body.chars().count();
    if len >= spec.width {
        return format!("{lead}{body}");
    }
    let fill = spec.width - len;
    if spec.left {
        format!("{lead}{body}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        format!("{lead}{}{body}", "0".repeat(fill))
    } else {
        format!("{}{lead}{body}", " ".repeat(fill))
    }
}

/// `x` (not negative) as `%e`, `%f` or `%g` with `precision`, as Python writes it.
fn float_format(x: f64, conversion: char, precision: usize, alternate: bool) -> String {
    let upper = conversion.is_ascii_uppercase();
    if !x.is_finite() {
        let text = if x.is_nan() { "nan" } else { "inf" };
        return if upper {
            text.to_uppercase()
        } else {
            text.to_string()
        };
    }
    let text = match conversion.to_ascii_lowercase() {
        'f' => {
            let mut text = format!("{x:.precision$}");
            if alternate && precision == 0 {
                text.push('.');
            }
            text
        }
        'e' => {
            let mut text = exponent_form(x, precision);
            if alternate && precision == 0 {
                text = text.replacen('e', ".e", 1);
            }
            text
        }
        _ => {
            let p = precision.max(1);
            let exponent = decimal_exponent(x, p - 1);
            let mut text = if (-4..i64::try_from(p).unwrap_or(i64::MAX)).contains(&exponent) {
                let decimals =
                    usize::try_from(i64::try_from(p).unwrap_or(0) - 1 - exponent).unwrap_or(0);
                format!("{x:.decimals$}")
            } else {
                exponent_form(x, p - 1)
            };
            if !alternate {
                text = strip_zeros(&text);
            } else if !text.contains('.') {
                text = match text.find('e') {
                    Some(at) => format!("{}.{}", &text[..at], &text[at..]),
                    None => format!("{text}."),
                };
            }
            text
        }
    };
    if upper {
        text.to_uppercase()
    } else {
        text
    }
}

/// `1.500000e+03`: Rust's `{:e}` with Python's exponent (a sign and at least two digits).
fn exponent_form(x: f64, precision: usize) -> String {
    let text = format!("{x:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

/// The exponent `x` has when written with `precision` decimals in exponent form.
fn decimal_exponent(x: f64, precision: usize) -> i64 {
    let text = format!("{x:.precision$e}");
    text.split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0)
}

/// `%g` without `#`: no trailing zeros, and no trailing point.
fn strip_zeros(text: &str) -> String {
    let (mantissa, exponent) = match text.find('e') {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    format!("{mantissa}{exponent}")
}

/// Python's `str()` of the value PyYAML would have made.
pub(super) fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr()` of the value PyYAML would have made.
pub(super) fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            (None, None) => py_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => py_string_repr(s),
        Value::Sequence(items) => {
            let items: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Mapping(mapping) => {
            let pairs: Vec<String> = mapping
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
        Value::Tagged(tagged) => py_repr(&tagged.value),
    }
}

/// Python's `repr()` of a float: the shortest digits that read back the same, fixed between
/// 1e-4 and 1e16, else with an exponent (`1e+16`, `1.5e-05`).
pub(super) fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let shortest = format!("{x:e}");
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let fixed = format!("{x}");
        if fixed.contains('.') {
            fixed
        } else {
            format!("{fixed}.0")
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    }
}

fn py_string_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if u32::from(c) < 0x20 || u32::from(c) == 0x7f => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's name for the type of the value PyYAML would have made.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "dict",
        Value::Tagged(_) => "tagged value",
    }
}
