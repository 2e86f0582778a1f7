//! `^NumExpr`'s arithmetic: genny hands `withExpression` to numexpr with `andValues` as its
//! variables; this evaluates the same expressions with Python's rules for integers and floats.
//!
//! Numbers (`3`, `2.5`, `1e6`, `0x1F`, `1_000`), `True`/`False`, variables, parentheses,
//! `+ - * / // % **`, unary `+ -`, the comparisons `< <= > >= == !=`, and numexpr's functions
//! (`abs`, `sqrt`, `exp`, `log`, `floor`, `where`, ...). As in Python: `/` always gives a float,
//! `//` and `%` floor (the remainder takes the divisor's sign), `**` of integers is an integer
//! unless the exponent is negative, `-a**2` is `-(a**2)`, and mixing a float in gives a float.
//! Where Python would fail (a division by zero, a complex result) or grow an integer past 64 bits,
//! this is an error rather than numexpr's wrapped or infinite value.

use std::collections::HashMap;

/// A value of an expression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            // Python's float(int): exact below 2^53, rounded to nearest above, as `as` does.
            #[allow(clippy::cast_precision_loss)]
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
            Num::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// Its integer, when it is one (a bool counts, as in Python).
    fn as_int(self) -> Option<i64> {
        match self {
            Num::Int(i) => Some(i),
            Num::Bool(b) => Some(i64::from(b)),
            Num::Float(_) => None,
        }
    }
}

/// `expr` evaluated with `vars`; the error says what is wrong in a few words.
pub(super) fn evaluate(expr: &str, vars: &HashMap<String, Num>) -> Result<Num, String> {
    let tokens = tokenize(expr)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        vars,
        depth: 0,
    };
    let value = parser.comparison()?;
    match parser.tokens.get(parser.at) {
        None => Ok(value),
        Some(token) => Err(format!("unexpected `{}`", token.text())),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(Num),
    Name(String),
    Op(&'static str),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Num(Num::Int(i)) => i.to_string(),
            Token::Num(Num::Float(f)) => f.to_string(),
            Token::Num(Num::Bool(b)) => if *b { "True" } else { "False" }.to_string(),
            Token::Name(name) => name.clone(),
            Token::Op(op) => (*op).to_string(),
        }
    }
}

const OPERATORS: [&str; 17] = [
    "**", "//", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "(", ")", ",", "<", ">", "~",
];

fn tokenize(expr: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '_'
                    || chars[i] == '.'
                    || ((chars[i] == '+' || chars[i] == '-')
                        && matches!(chars[i - 1], 'e' | 'E')
                        && !chars[start..i].iter().any(|c| matches!(c, 'x' | 'X'))))
            {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            tokens.push(Token::Num(number(&text)?));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            tokens.push(match name.as_str() {
                "True" => Token::Num(Num::Bool(true)),
                "False" => Token::Num(Num::Bool(false)),
                _ => Token::Name(name),
            });
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            match OPERATORS.iter().find(|op| rest.starts_with(**op)) {
                Some(&"~") => return Err("`~` is not supported".into()),
                Some(op) => {
                    tokens.push(Token::Op(op));
                    i += op.len();
                }
                None => return Err(format!("unexpected `{c}`")),
            }
        }
    }
    Ok(tokens)
}

/// A Python number literal.
fn number(text: &str) -> Result<Num, String> {
    let bad = || format!("`{text}` is not a number");
    if text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return Err(bad());
    }
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let lower = clean.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = lower.strip_prefix(prefix) {
            return i64::from_str_radix(digits, radix)
                .map(Num::Int)
                .map_err(|_| bad());
        }
    }
    if clean.bytes().all(|b| b.is_ascii_digit()) {
        if clean.len() > 1 && clean.starts_with('0') && clean.bytes().any(|b| b != b'0') {
            return Err(format!(
                "`{text}`: leading zeros in an integer are not allowed (Python)"
            ));
        }
        return clean
            .parse::<i64>()
            .map(Num::Int)
            .map_err(|_| format!("`{text}` is larger than a 64-bit integer"));
    }
    let float_chars = clean
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if float_chars {
        if let Ok(f) = clean.parse::<f64>() {
            return Ok(Num::Float(f));
        }
    }
    Err(bad())
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    vars: &'a HashMap<String, Num>,
    depth: usize,
}

const MAX_NESTING: usize = 64;

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Op(op)) => Some(op),
            _ => None,
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        match self.tokens.get(self.at) {
            Some(Token::Op(found)) if *found == op => {
                self.at += 1;
                Ok(())
            }
            Some(token) => Err(format!("expected `{op}`, found `{}`", token.text())),
            None => Err(format!("expected `{op}` at the end")),
        }
    }

    fn comparison(&mut self) -> Result<Num, String> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(format!("nested deeper than {MAX_NESTING} levels"));
        }
        let left = self.sum()?;
        let result = match self.peek_op() {
            Some(op @ ("<" | "<=" | ">" | ">=" | "==" | "!=")) => {
                self.at += 1;
                let right = self.sum()?;
                if matches!(self.peek_op(), Some("<" | "<=" | ">" | ">=" | "==" | "!=")) {
                    return Err("chained comparisons are not supported".into());
                }
                Ok(Num::Bool(compare(op, left, right)))
            }
            _ => Ok(left),
        };
        self.depth -= 1;
        result
    }

    fn sum(&mut self) -> Result<Num, String> {
        let mut value = self.term()?;
        while let Some(op @ ("+" | "-")) = self.peek_op() {
            self.at += 1;
            let right = self.term()?;
            value = arithmetic(op, value, right)?;
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<Num, String> {
        let mut value = self.unary()?;
        while let Some(op @ ("*" | "/" | "//" | "%")) = self.peek_op() {
            self.at += 1;
            let right = self.unary()?;
            value = arithmetic(op, value, right)?;
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<Num, String> {
        match self.peek_op() {
            Some(op @ ("+" | "-")) => {
                self.at += 1;
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(format!("nested deeper than {MAX_NESTING} levels"));
                }
                let value = self.unary()?;
                self.depth -= 1;
                if op == "+" {
                    Ok(match value {
                        Num::Bool(b) => Num::Int(i64::from(b)),
                        other => other,
                    })
                } else {
                    match value {
                        Num::Float(f) => Ok(Num::Float(-f)),
                        other => other
                            .as_int()
                            .and_then(i64::checked_neg)
                            .map(Num::Int)
                            .ok_or_else(overflow),
                    }
                }
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<Num, String> {
        let base = self.atom()?;
        if self.peek_op() == Some("**") {
            self.at += 1;
            // Right-associative, and the exponent may be negated: `2**-1`, `2**3**2`.
            let exponent = self.unary()?;
            return arithmetic("**", base, exponent);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Num, String> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| "the expression ends too soon".to_string())?;
        self.at += 1;
        match token {
            Token::Num(n) => Ok(n),
            Token::Op("(") => {
                let value = self.comparison()?;
                self.expect(")")?;
                Ok(value)
            }
            Token::Name(name) => {
                if self.peek_op() == Some("(") {
                    self.at += 1;
                    let mut args = Vec::new();
                    if self.peek_op() != Some(")") {
                        loop {
                            args.push(self.comparison()?);
                            if self.peek_op() == Some(",") {
                                self.at += 1;
                            } else {
                                break;
                            }
                        }
                    }
                    self.expect(")")?;
                    call(&name, &args)
                } else {
                    self.vars
                        .get(&name)
                        .copied()
                        .ok_or_else(|| format!("`{name}` is not in `andValues`"))
                }
            }
            Token::Op(op) => Err(format!("unexpected `{op}`")),
        }
    }
}

fn overflow() -> String {
    "the integer result does not fit in 64 bits".into()
}

fn compare(op: &str, left: Num, right: Num) -> bool {
    if let (Some(a), Some(b)) = (left.as_int(), right.as_int()) {
        return match op {
            "<" => a < b,
            "<=" => a <= b,
            ">" => a > b,
            ">=" => a >= b,
            "==" => a == b,
            _ => a != b,
        };
    }
    let (a, b) = (left.as_f64(), right.as_f64());
    match op {
        "<" => a < b,
        "<=" => a <= b,
        ">" => a > b,
        ">=" => a >= b,
        "==" => a == b,
        _ => a != b,
    }
}

fn arithmetic(op: &str, left: Num, right: Num) -> Result<Num, String> {
    if let (Some(a), Some(b)) = (left.as_int(), right.as_int()) {
        return int_arithmetic(op, a, b);
    }
    float_arithmetic(op, left.as_f64(), right.as_f64())
}

fn int_arithmetic(op: &str, a: i64, b: i64) -> Result<Num, String> {
    let int = |r: Option<i64>| r.map(Num::Int).ok_or_else(overflow);
    match op {
        "+" => int(a.checked_add(b)),
        "-" => int(a.checked_sub(b)),
        "*" => int(a.checked_mul(b)),
        "/" => {
            if b == 0 {
                return Err("division by zero".into());
            }
            #[allow(clippy::cast_precision_loss)]
            Ok(Num::Float(a as f64 / b as f64))
        }
        "//" => {
            if b == 0 {
                return Err("integer division by zero".into());
            }
            let q = a.checked_div(b).ok_or_else(overflow)?;
            let floor = if a % b != 0 && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            };
            Ok(Num::Int(floor))
        }
        "%" => {
            if b == 0 {
                return Err("integer modulo by zero".into());
            }
            let r = a.checked_rem(b).unwrap_or(0);
            Ok(Num::Int(if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            }))
        }
        "**" => {
            if b < 0 {
                if a == 0 {
                    return Err("0 cannot be raised to a negative power".into());
                }
                #[allow(clippy::cast_precision_loss)]
                return float_arithmetic("**", a as f64, b as f64);
            }
            match u32::try_from(b) {
                Ok(e) => int(a.checked_pow(e)),
                Err(_) => match a {
                    0 | 1 => Ok(Num::Int(a)),
                    -1 => Ok(Num::Int(if b % 2 == 0 { 1 } else { -1 })),
                    _ => Err(overflow()),
                },
            }
        }
        _ => Err(format!("`{op}` is not an arithmetic operator")),
    }
}

fn float_arithmetic(op: &str, a: f64, b: f64) -> Result<Num, String> {
    let value = match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" => {
            if b == 0.0 {
                return Err("float division by zero".into());
            }
            a / b
        }
        "//" | "%" => {
            if b == 0.0 {
                return Err(format!(
                    "float {} by zero",
                    if op == "%" {
                        "modulo"
                    } else {
                        "floor division"
                    }
                ));
            }
            // CPython's float_divmod.
            let mut m = a % b;
            let mut div = (a - m) / b;
            if m != 0.0 {
                if (b < 0.0) != (m < 0.0) {
                    m += b;
                    div -= 1.0;
                }
            } else {
                m = 0.0_f64.copysign(b);
            }
            if op == "%" {
                m
            } else if div != 0.0 {
                let mut floor = div.floor();
                if div - floor > 0.5 {
                    floor += 1.0;
                }
                floor
            } else {
                0.0_f64.copysign(a / b)
            }
        }
        "**" => {
            if a == 0.0 && b < 0.0 {
                return Err("0.0 cannot be raised to a negative power".into());
            }
            if a < 0.0 && b.is_finite() && b.fract() != 0.0 {
                return Err("a negative number to a fractional power is a complex number".into());
            }
            let r = a.powf(b);
            if r.is_infinite() && a.is_finite() && b.is_finite() {
                return Err("the result is too large for a float".into());
            }
            r
        }
        _ => return Err(format!("`{op}` is not an arithmetic operator")),
    };
    Ok(Num::Float(value))
}

/// numexpr's functions: these give a float, but `abs` keeps an integer and `where` gives
/// whichever of its two values it picks.
fn call(name: &str, args: &[Num]) -> Result<Num, String> {
    let want = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "`{name}` takes {n} argument(s), not {}",
                args.len()
            ))
        }
    };
    let unary: Option<fn(f64) -> f64> = match name {
        "sqrt" => Some(f64::sqrt),
        "exp" => Some(f64::exp),
        "expm1" => Some(f64::exp_m1),
        "log" => Some(f64::ln),
        "log10" => Some(f64::log10),
        "log1p" => Some(f64::ln_1p),
        "sin" => Some(f64::sin),
        "cos" => Some(f64::cos),
        "tan" => Some(f64::tan),
        "arcsin" => Some(f64::asin),
        "arccos" => Some(f64::acos),
        "arctan" => Some(f64::atan),
        "sinh" => Some(f64::sinh),
        "cosh" => Some(f64::cosh),
        "tanh" => Some(f64::tanh),
        "arcsinh" => Some(f64::asinh),
        "arccosh" => Some(f64::acosh),
        "arctanh" => Some(f64::atanh),
        "floor" => Some(f64::floor),
        "ceil" => Some(f64::ceil),
        _ => None,
    };
    if let Some(f) = unary {
        want(1)?;
        return Ok(Num::Float(f(args[0].as_f64())));
    }
    match name {
        "abs" => {
            want(1)?;
            match args[0] {
                Num::Float(f) => Ok(Num::Float(f.abs())),
                other => other
                    .as_int()
                    .and_then(i64::checked_abs)
                    .map(Num::Int)
                    .ok_or_else(overflow),
            }
        }
        "arctan2" => {
            want(2)?;
            Ok(Num::Float(args[0].as_f64().atan2(args[1].as_f64())))
        }
        "fmod" => {
            want(2)?;
            Ok(Num::Float(args[0].as_f64() % args[1].as_f64()))
        }
        "where" => {
            want(3)?;
            let condition = match args[0] {
                Num::Bool(b) => b,
                Num::Int(i) => i != 0,
                Num::Float(f) => f != 0.0,
            };
            Ok(if condition { args[1] } else { args[2] })
        }
        _ => Err(format!("`{name}` is not a function numexpr has")),
    }
}
