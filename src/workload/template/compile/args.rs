//! A generator's arguments as it reads them: each named, typed and checked once, and every one
//! given and not read refused by name.

use super::*;

/// A generator's table of arguments.
pub(super) struct Args<'a> {
    pub(super) name: &'static str,
    pub(super) at: String,
    pub(super) entries: &'a [(String, V)],
    pub(super) o: &'a CompileOptions,
}

impl<'a> Args<'a> {
    pub(super) fn new(
        name: &'static str,
        arg: &'a V,
        at: &str,
        o: &'a CompileOptions,
    ) -> Result<Args<'a>, GenError> {
        match arg {
            V::Obj(entries) => Ok(Args {
                name,
                at: at.to_string(),
                entries,
                o,
            }),
            other => Err(err(
                at,
                format!("{name} takes a table of arguments, not {}", other.kind()),
                example(name),
            )),
        }
    }

    pub(super) fn path(&self, arg: &str) -> String {
        format!("{}.{arg}", self.at)
    }

    pub(super) fn err(&self, arg: &str, problem: impl Into<String>) -> GenError {
        err(self.path(arg), problem, example(self.name))
    }

    /// Compiles the value `v` of the argument at `path` (below this generator).
    pub(super) fn node(&self, v: &V, path: &str) -> Result<Node, GenError> {
        node(v, path, self.o)
    }

    /// Refuses an argument not in `allowed` (genny ignores one: so does a genny workload's).
    pub(super) fn allow(&self, allowed: &[&str]) -> Result<(), GenError> {
        if self.o.genny {
            return Ok(());
        }
        for (k, _) in self.entries {
            if !allowed.contains(&k.as_str()) {
                let list = if allowed.is_empty() {
                    format!("{} takes no argument", self.name)
                } else {
                    format!(
                        "the arguments of {} here: {}",
                        self.name,
                        allowed.join(", ")
                    )
                };
                return Err(err(
                    self.path(k),
                    format!(
                        "`{k}` is not an argument of {}{}",
                        self.name,
                        hint(k, allowed)
                    ),
                    format!("{list}; e.g. {}", example(self.name)),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn get(&self, arg: &str) -> Option<&'a V> {
        self.entries.iter().find(|(k, _)| k == arg).map(|(_, v)| v)
    }

    pub(super) fn need(&self, arg: &str) -> Result<&'a V, GenError> {
        self.get(arg).ok_or_else(|| {
            err(
                self.at.clone(),
                format!("{} needs `{arg}`", self.name),
                example(self.name),
            )
        })
    }

    /// A value written in place (a generator is refused).
    pub(super) fn constant(&self, v: &V, arg: &str) -> Result<Bson, GenError> {
        match self.node(v, &self.path(arg))? {
            Node::Const(b) => Ok(b),
            _ => Err(self.err(
                arg,
                format!(
                    "`{arg}` of {} must be written as a value, not generated",
                    self.name
                ),
            )),
        }
    }

    /// An integer written as a value (a whole number written with a fraction, `1e4`, is one).
    pub(super) fn int(&self, v: &V, arg: &str) -> Result<i64, GenError> {
        let b = self.constant(v, arg)?;
        whole(&b).ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not an integer", kind(&b))))
    }

    /// The integer argument `arg`, or `default` without it.
    pub(super) fn int_or(&self, arg: &str, default: i64) -> Result<i64, GenError> {
        match self.get(arg) {
            Some(v) => self.int(v, arg),
            None => Ok(default),
        }
    }

    /// The boolean argument `arg`, or false without it.
    pub(super) fn flag(&self, arg: &str) -> Result<bool, GenError> {
        match self.get(arg) {
            None => Ok(false),
            Some(v) => match self.constant(v, arg)? {
                Bson::Boolean(b) => Ok(b),
                b => Err(self.err(arg, format!("`{arg}` is {}, not true or false", kind(&b)))),
            },
        }
    }

    pub(super) fn float(&self, v: &V, arg: &str) -> Result<f64, GenError> {
        let b = self.constant(v, arg)?;
        generators::to_f64(&b)
            .ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not a number", kind(&b))))
    }

    pub(super) fn string(&self, v: &V, arg: &str) -> Result<String, GenError> {
        match self.constant(v, arg)? {
            Bson::String(s) => Ok(s),
            b => Err(self.err(arg, format!("`{arg}` is {}, not a string", kind(&b)))),
        }
    }

    /// A probability: 0 to 1.
    pub(super) fn probability(&self, arg: &str, open_at_zero: bool) -> Result<f64, GenError> {
        let p = self.float(self.need(arg)?, arg)?;
        let ok = if open_at_zero {
            p > 0.0 && p <= 1.0
        } else {
            (0.0..=1.0).contains(&p)
        };
        if !ok {
            let range = if open_at_zero {
                "above 0 and at most 1"
            } else {
                "from 0 to 1"
            };
            return Err(self.err(arg, format!("the probability {arg} = {p} is not {range}")));
        }
        Ok(p)
    }

    /// A generator's template argument that must be able to make one of `types`.
    pub(super) fn template(
        &self,
        v: &V,
        arg: &str,
        types: u16,
        what: &str,
    ) -> Result<Node, GenError> {
        let n = self.node(v, &self.path(arg))?;
        let made = n.types();
        if made & types == 0 {
            let problem = match &n {
                Node::Const(b) => format!("`{arg}` is {}, not {what}", kind(b)),
                _ => format!(
                    "`{arg}` is a generator of {}, not of {what}",
                    ty::describe(made)
                ),
            };
            return Err(self.err(arg, problem));
        }
        Ok(n)
    }

    /// An integer, written or generated.
    pub(super) fn num(&self, arg: &str) -> Result<Num, GenError> {
        let v = self.need(arg)?;
        match self.template(v, arg, ty::NUMBER, "an integer")? {
            Node::Const(b) => match whole(&b) {
                Some(i) => Ok(Num::Const(i)),
                None => Err(self.err(arg, format!("`{arg}` is {}, not an integer", kind(&b)))),
            },
            n => Ok(Num::Gen(Box::new(n))),
        }
    }

    /// A count or size: written from 0 to `MAX_LEN`, or generated (then clamped to it).
    pub(super) fn length(&self, arg: &str) -> Result<Num, GenError> {
        let n = self.num(arg)?;
        if let Num::Const(i) = n {
            if i < 0 {
                return Err(self.err(arg, format!("`{arg}` is negative ({i})")));
            }
            if i > MAX_LEN {
                return Err(self.err(
                    arg,
                    format!("`{arg}` is {i}: more than {MAX_LEN}, which cannot fit in a 16 MiB document"),
                ));
            }
        }
        Ok(n)
    }

    /// A number, written or generated.
    pub(super) fn real(&self, arg: &str, default: f64) -> Result<Real, GenError> {
        let Some(v) = self.get(arg) else {
            return Ok(Real::Const(default));
        };
        match self.template(v, arg, ty::NUMBER, "a number")? {
            Node::Const(b) => generators::to_f64(&b)
                .map(Real::Const)
                .ok_or_else(|| self.err(arg, format!("`{arg}` is {}, not a number", kind(&b)))),
            n => Ok(Real::Gen(Box::new(n))),
        }
    }

    /// The string argument `arg` (or `default`), one of `options`.
    pub(super) fn choice(
        &self,
        arg: &str,
        options: &[&str],
        default: &str,
    ) -> Result<String, GenError> {
        let Some(v) = self.get(arg) else {
            return Ok(default.to_string());
        };
        let s = self.string(v, arg)?;
        if !options.contains(&s.as_str()) {
            return Err(err(
                self.path(arg),
                format!("`{s}` is not a {arg} of {}{}", self.name, hint(&s, options)),
                format!("one of {}; e.g. {}", options.join(", "), example(self.name)),
            ));
        }
        Ok(s)
    }
}

/// A value's type, as a message names it.
pub(super) fn kind(b: &Bson) -> String {
    ty::describe(ty::of(b))
}

/// An integer, or a double that is a whole number within the range of one.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "a whole double below 9.2e18, inside i64"
)]
pub(super) fn whole(b: &Bson) -> Option<i64> {
    match b {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(*f as i64),
        _ => None,
    }
}
