//! Profiles: finding one (a path or a bundled name), parsing it, and turning every parse problem
//! into a `ProfileError` that names file, line, column, key, value and the expected form.

pub mod bundled;
pub(crate) mod locate;
pub(crate) mod model;

use std::path::Path;

use super::limits;
use crate::error::{Error, ProfileError};
pub use model::{Group, OpKind, Profile, UpdateTarget};

/// A parsed profile with the text it came from, kept so later checks can point into it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// A path as given, or `bundled:NAME`.
    pub(crate) origin: String,
    /// The name used for the run directory: the profile's `name`, else the file stem.
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) profile: Profile,
    /// A genny workload: how it was read (its profile is `text`, made from it).
    pub(crate) genny: Option<crate::plan::genny::Read>,
    /// The values' spans in `text`, read the first time an error is located.
    spans: std::sync::OnceLock<locate::Spans>,
}

impl Loaded {
    /// An error about the value at `key` (a dotted path such as `group[0].threads`).
    pub(crate) fn error_at(
        &self,
        key: &str,
        problem: impl Into<String>,
        expected: impl Into<String>,
    ) -> ProfileError {
        let span = self
            .spans
            .get_or_init(|| locate::Spans::of(&self.text))
            .get(key);
        let (line, column) = span
            .as_ref()
            .map_or((1, 1), |s| locate::line_col(&self.text, s.start));
        ProfileError {
            file: self.origin.clone(),
            line,
            column,
            // Shown to people: a control character in a key is written escaped.
            key: if key.contains(char::is_control) {
                key.escape_debug().to_string()
            } else {
                key.to_string()
            },
            // A whole table (`group[0]`) has no one value worth quoting.
            value: span
                .filter(|_| !key.ends_with(']'))
                .map(|s| excerpt(&self.text[s])),
            problem: problem.into(),
            expected: expected.into(),
        }
    }
}

/// Finds a profile by path or bundled name and parses it.
pub fn load(spec: &str) -> Result<Loaded, Error> {
    load_with(spec, &crate::plan::genny::GennyArgs::default())
}

/// The same, with what the command line says of a genny workload (`-p`, `-o`, `--smoke`): a
/// `.yml` file is one, read as genny reads it.
pub(crate) fn load_with(
    spec: &str,
    genny: &crate::plan::genny::GennyArgs,
) -> Result<Loaded, Error> {
    let path = Path::new(spec);
    if path.is_file() && crate::plan::genny::is_workload(path) {
        let read = crate::plan::genny::read(path, genny)
            .map_err(|u| Error::Usage(format!("{}\n  fix: {}", u.line, u.fix.words())))?;
        let stem = path
            .file_stem()
            .map_or("genny".into(), |s| s.to_string_lossy().into_owned());
        let mut loaded = parse(&format!("{spec} (as a profile)"), &read.toml, &stem)?;
        loaded.genny = Some(read);
        return Ok(loaded);
    }
    if genny.any() {
        return Err(Error::Usage(format!(
            "-p, -o and --smoke are for genny workloads (.yml), and {spec} is not one\n  fix: leave them out, or give a genny workload"
        )));
    }
    let (origin, text, stem) = if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!(
                "cannot read profile {spec}: {e}\n  fix: check the path and its permissions"
            ))
        })?;
        let stem = path
            .file_stem()
            .map_or("profile".into(), |s| s.to_string_lossy().into_owned());
        (spec.to_string(), text, stem)
    } else if let Some(text) = bundled::get(spec) {
        (
            format!("bundled:{spec}"),
            text.to_string(),
            spec.to_string(),
        )
    } else {
        let names: Vec<&str> = bundled::ALL.iter().map(|b| b.name).collect();
        // The file the user most likely meant: `blog` for ./blog.toml, a bundled name misspelt.
        let file = Path::new(&format!("{spec}.toml"))
            .is_file()
            .then(|| format!("{spec}.toml"))
            .or_else(|| file_beside(spec));
        let near = names
            .iter()
            .map(|n| (strsim::jaro_winkler(n, spec), *n))
            .filter(|(score, _)| *score > 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| n);
        let meant = match (file, near) {
            (Some(f), _) => format!("\n  did you mean the file {f}? A profile file is named by its path, .toml included"),
            (None, Some(n)) => format!("\n  did you mean the bundled profile {n}?"),
            (None, None) => String::new(),
        };
        return Err(Error::Usage(format!(
            "no profile file or bundled profile named '{spec}'{meant}\n  fix: give a path to a .toml file, or one of: {}",
            names.join(", ")
        )));
    };
    parse(&origin, &text, &stem).map_err(Error::from)
}

/// A .toml file beside the one named whose name is close to it (`my-profle.toml` for
/// `my-profile.toml`), as the path to give.
fn file_beside(spec: &str) -> Option<String> {
    let path = Path::new(spec);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let typed = path.file_name()?.to_string_lossy().into_owned();
    let typed = typed.strip_suffix(".toml").unwrap_or(&typed).to_string();
    std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".toml")?.to_string();
            let score = strsim::jaro_winkler(&stem, &typed);
            (score > 0.85 && e.path().is_file()).then_some((score, name))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| {
            path.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or(name.clone(), |d| d.join(&name).display().to_string())
        })
}

/// Parses profile text; `origin` names it in errors.
pub fn parse(origin: &str, text: &str, stem: &str) -> Result<Loaded, ProfileError> {
    let profile: Profile = toml::from_str(text).map_err(|e| from_toml(origin, text, &e))?;
    let name = profile.name.clone().unwrap_or_else(|| stem.to_string());
    Ok(Loaded {
        origin: origin.to_string(),
        name,
        text: text.to_string(),
        profile,
        genny: None,
        spans: std::sync::OnceLock::new(),
    })
}

fn excerpt(s: &str) -> String {
    let s = s.trim();
    let first = s.lines().next().unwrap_or("");
    if first.chars().count() > 60 || first.len() < s.len() {
        format!("{}...", first.chars().take(60).collect::<String>())
    } else {
        first.to_string()
    }
}

fn from_toml(origin: &str, text: &str, err: &toml::de::Error) -> ProfileError {
    let span = err.span().unwrap_or(0..0);
    let (line, column) = locate::line_col(text, span.start);
    let located = locate::key_at(text, span.start);
    let message = err.message().trim().to_string();
    let key = located.as_ref().map(|(k, _)| k.clone()).unwrap_or_default();
    let leaf_owned = key.clone();
    let leaf = leaf_owned
        .rsplit('.')
        .next()
        .unwrap_or("")
        .split('[')
        .next()
        .unwrap_or("");
    let value = if span.is_empty() {
        None
    } else {
        Some(excerpt(&text[span.clone()]))
    };

    if let Some(rest) = message.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or("");
        let allowed: Vec<&str> = rest.split('`').skip(2).step_by(2).collect();
        let suggestion = allowed
            .iter()
            .map(|a| (strsim::jaro_winkler(a, field), *a))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, a)| format!(" (did you mean `{a}`?)"))
            .unwrap_or_default();
        return ProfileError {
            file: origin.to_string(),
            line,
            column,
            key,
            value: None,
            problem: format!("unknown key `{field}`{suggestion}"),
            expected: format!("one of: {}", allowed.join(", ")),
        };
    }
    // A MongoDB operator or a field path as a bare key (`$gte = 5`, `a.b` where `.` was not
    // meant): TOML keys with `$` must be quoted.
    if message.starts_with("invalid unquoted key") {
        let rest = &text[span.start.min(text.len())..];
        let bare: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, '=' | ',' | '}' | ']'))
            .collect();
        if bare.starts_with('$') || bare.contains('$') {
            return ProfileError {
                file: origin.to_string(),
                line,
                column,
                key,
                value: Some(bare.clone()),
                problem: format!("`{bare}` is a key with a `$`, which TOML takes only in quotes"),
                expected: format!("the key quoted: \"{bare}\" = ..., e.g. {{ \"$gte\" = 5 }}"),
            };
        }
    }
    if message.contains("recursion") {
        return ProfileError {
            file: origin.to_string(),
            line,
            column,
            key,
            value: None,
            problem: format!("tables and arrays nest deeper than a profile can hold ({message})"),
            expected: format!(
                "fewer levels of nested tables and arrays (the server itself accepts at most {})",
                limits::MAX_NESTING
            ),
        };
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or("");
        return ProfileError {
            file: origin.to_string(),
            line,
            column,
            key,
            value: None,
            problem: format!("missing required key `{field}`"),
            expected: expected_for(field),
        };
    }
    ProfileError {
        file: origin.to_string(),
        line,
        column,
        key,
        value,
        problem: message,
        expected: expected_for(leaf),
    }
}

/// The accepted form of a key, as shown in error messages; bounds come from `limits`.
pub(crate) fn expected_for(key: &str) -> String {
    match key {
        "threads" => limits::threads_expected(),
        "loops" => limits::loops_expected(),
        "duration" | "ramp_up" | "start_delay" | "op_timeout" | "warmup" => {
            limits::duration_expected()
        }
        "op" => format!("one of {}", crate::workload::OpKind::listed()),
        "mix" => format!("a table of operation kinds and whole-number weights, e.g. mix = {{ get = 95, update = 5 }}; kinds: {}", crate::workload::OpKind::listed()),
        "keys" => format!("one of {}", crate::workload::KeyDist::listed()),
        "rate" => limits::rate_expected(),
        "preload" => limits::preload_expected(),
        "limit" => limits::limit_expected(),
        "pool_size" => limits::pool_size_expected(),
        "stop_on_error_pct" => limits::error_pct_expected(),
        "read_preference" => crate::plan::ReadPref::listed(),
        "write_concern" => format!("1, 0, any w number up to {}, or \"majority\"", limits::MAX_WRITE_NODES),
        "name" => "a string without tabs or other control characters, e.g. name = \"insert\"".into(),
        "description" => "a string".into(),
        "stage" => "a string without tabs or other control characters, e.g. stage = \"mixed\"".into(),
        "count" | "many" | "drop" | "journal" => "true or false".into(),
        "filter" | "set" => "a list of document field names, e.g. filter = [\"city\"]".into(),
        "server_metrics" => "a list of Prometheus exporter URLs on the server hosts, e.g. server_metrics = [\"http://db1:9100/metrics\"]".into(),
        "step" => "the length of each rate step, e.g. step = \"30s\"".into(),
        "inc" => "a list of counter field names to increment by 1, e.g. inc = [\"updates\"]".into(),
        "target" => "\"random\" (one existing document by _id) or \"filter\" (documents matching a generated filter)".into(),
        "indexes" => "a list of index keys, e.g. indexes = [{ city = 1 }, { pop = -1 }]".into(),
        "database" | "collection" => "a non-empty name without '$' or '.' at the ends, e.g. collection = \"cities\"".into(),
        "states" => "[[group.states]], each with a name, [[group.states.steps]] and [[group.states.transitions]] (to, weight, sleep)".into(),
        "after" => "the name of an earlier group of the same stage, e.g. after = \"load\"".into(),
        "initial" => "the weights of the first states, e.g. initial = { browse = 3, buy = 1 }".into(),
        "collections" => "a list of `[[collection]]` names, e.g. collections = [\"a\", \"b\"] (each operation goes to one, drawn uniformly), and no `collection`".into(),
        "group" => "one or more [[group]] tables, each with name, op, threads and loops or duration".into(),
        "document" => "a [document] table of field = generator".into(),
        "target." | "setup" => "a table".into(),
        _ => "see the profile reference in README.md".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ProfileError {
        parse("p.toml", text, "p").unwrap_err()
    }

    const GROUP: &str = "[[group]]\nname = \"ins\"\nop = \"insert\"\n";

    #[test]
    fn a_typo_in_a_key_is_named_with_a_suggestion_and_its_place() {
        let e = err(&format!("{GROUP}thredas = 4\nloops = 1\n"));
        assert_eq!((e.line, e.column), (4, 1));
        assert_eq!(e.key, "group[0].thredas");
        assert!(e.problem.contains("unknown key `thredas`"), "{e}");
        assert!(e.problem.contains("did you mean `threads`"), "{e}");
    }

    #[test]
    fn an_unquoted_dollar_key_is_told_to_be_quoted() {
        let e = err(&format!(
            "{GROUP}threads = 1\nloops = 1\nfilter = {{ a = {{ $gte = 5 }} }}\n"
        ));
        assert!(e.problem.contains("`$gte` is a key with a `$`"), "{e}");
        assert!(e.expected.contains("\"$gte\" = ..."), "{e}");
        assert_eq!(e.line, 6);
    }

    #[test]
    fn a_negative_thread_count_names_key_value_and_expected_form() {
        let e = err(&format!("{GROUP}threads = -5\nloops = 1\n"));
        assert_eq!(e.key, "group[0].threads");
        assert_eq!(e.value.as_deref(), Some("-5"));
        assert_eq!((e.line, e.column), (4, 11));
        assert!(e.expected.contains("from 1 to 1000000"), "{e}");
    }

    #[test]
    fn a_wrong_type_names_the_value() {
        let e = err(&format!("{GROUP}threads = \"ten\"\n"));
        assert_eq!(e.key, "group[0].threads");
        assert_eq!(e.value.as_deref(), Some("\"ten\""));
        assert!(e.problem.contains("string"), "{e}");
    }

    #[test]
    fn an_unknown_operation_lists_the_four() {
        let e = err("[[group]]\nname = \"x\"\nop = \"upsert\"\nthreads = 1\n");
        assert_eq!(e.key, "group[0].op");
        assert!(e.to_string().contains("\"insert\", \"find\""), "{e}");
    }

    #[test]
    fn broken_toml_syntax_is_located() {
        let e = err("name = \"x\nthreads = 1\n");
        assert_eq!(e.line, 1);
        assert_eq!(e.file, "p.toml");
    }
}
