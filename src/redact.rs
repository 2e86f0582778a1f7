//! Hiding passwords: every connection string the tool prints or stores goes through `redact`.

/// Replaces the password of every `scheme://user:password@` in `text` with `****`.
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(['/', '?', ' ', '"', '\'']).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..colon]);
                        out.push_str(":****");
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The options whose value is a secret, hidden in a command line as it is recorded.
const SECRET_OPTIONS: [&str; 2] = ["--live-token", "--token"];

/// A command line as the tool records it (run.json, the report, the live page): passwords in
/// connection strings and the values of secret options (`--live-token T`, `--live-token=T`)
/// replaced with `****`.
pub(crate) fn command_line(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut hide_next = false;
    for a in args {
        if std::mem::take(&mut hide_next) {
            out.push("****".into());
            continue;
        }
        if let Some(flag) = SECRET_OPTIONS
            .iter()
            .find(|f| a.starts_with(&format!("{f}=")))
        {
            out.push(format!("{flag}=****"));
            continue;
        }
        hide_next = SECRET_OPTIONS.contains(&a.as_str());
        out.push(redact(&a));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_secret_options_value_is_hidden_in_a_command_line() {
        let line = |a: &[&str]| super::command_line(a.iter().map(|s| s.to_string())).join(" ");
        assert_eq!(
            line(&[
                "run",
                "p",
                "--live-token",
                "abc12345",
                "--uri",
                "mongodb://u:pw@h/"
            ]),
            "run p --live-token **** --uri mongodb://u:****@h/"
        );
        assert_eq!(
            line(&["--live-token=abc12345", "--live"]),
            "--live-token=**** --live"
        );
    }

    #[test]
    fn passwords_are_replaced_and_everything_else_kept() {
        assert_eq!(
            redact("mongodb://bob:s3cr%40t@db1:27017,db2/app?tls=true"),
            "mongodb://bob:****@db1:27017,db2/app?tls=true"
        );
        assert_eq!(
            redact("mongodb+srv://bob:pw@cluster.example.net"),
            "mongodb+srv://bob:****@cluster.example.net"
        );
        assert_eq!(
            redact("mongodb://127.0.0.1:27017"),
            "mongodb://127.0.0.1:27017"
        );
        assert_eq!(redact("mongodb://bob@h/"), "mongodb://bob@h/");
        assert_eq!(
            redact("--uri=mongodb://a:b@h other mongodb://c:d@k"),
            "--uri=mongodb://a:****@h other mongodb://c:****@k"
        );
    }

    #[test]
    fn a_password_containing_an_at_sign_is_still_hidden() {
        assert_eq!(redact("mongodb://u:p@ss@h:1/"), "mongodb://u:****@h:1/");
    }
}
