//! Secret handling: which environment variables child processes never see, and the
//! redaction of known secret values from anything the run writes (transcript, logs,
//! cassettes).

/// Suffixes of variable names treated as secrets (SPEC §6).
const SECRET_SUFFIXES: &[&str] = &["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Variables removed regardless of suffix.
const SECRET_NAMES: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// Whether a variable name denotes a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// The environment for child processes: `vars` minus secrets, except the names in `keep`.
pub(crate) fn scrubbed_env(
    vars: impl Iterator<Item = (String, String)>,
    keep: &[String],
) -> Vec<(String, String)> {
    vars.filter(|(k, _)| !is_secret_name(k) || keep.iter().any(|kk| kk == k))
        .collect()
}

/// Secret values shorter than this are not redacted: they would garble ordinary text.
const MIN_REDACT_LEN: usize = 8;

/// Replaces every occurrence of each secret value with `[REDACTED]`, both as it is and
/// as it appears inside a JSON string (a value with `"`, `\\` or a newline is escaped
/// there). Longer values go first, so a secret that contains another is not half-left.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut patterns: Vec<String> = Vec::new();
    for s in secrets.iter().filter(|s| s.len() >= MIN_REDACT_LEN) {
        patterns.push(s.clone());
        let quoted = serde_json::to_string(s).unwrap_or_default();
        if let Some(escaped) = quoted.get(1..quoted.len().saturating_sub(1))
            && escaped != s.as_str()
        {
            patterns.push(escaped.to_string());
        }
    }
    patterns.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    patterns.dedup();
    let mut out = text.to_string();
    for p in &patterns {
        if out.contains(p.as_str()) {
            out = out.replace(p.as_str(), "[REDACTED]");
        }
    }
    out
}

/// The values of the secret variables in this process's environment.
pub(crate) fn secret_values() -> Vec<String> {
    std::env::vars()
        .filter(|(k, v)| is_secret_name(k) && v.len() >= MIN_REDACT_LEN)
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_secret_name("ANTHROPIC_API_KEY"));
        assert!(is_secret_name("FOO_API_KEY"));
        assert!(is_secret_name("github_token"));
        assert!(is_secret_name("DB_PASSWORD"));
        assert!(is_secret_name("AWS_SECRET"));
        assert!(!is_secret_name("PATH"));
        assert!(!is_secret_name("TOKENIZER"));
    }

    #[test]
    fn scrub_keeps_named() {
        let vars = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("FOO_API_KEY".to_string(), "x".to_string()),
            ("GH_TOKEN".to_string(), "y".to_string()),
        ];
        let out = scrubbed_env(vars.into_iter(), &["GH_TOKEN".to_string()]);
        let names: Vec<_> = out.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, vec!["PATH", "GH_TOKEN"]);
    }

    #[test]
    fn redacts_json_escaped_forms_and_longest_first() {
        let secret = "pa\"ss\\word\nline2".to_string();
        let json = serde_json::to_string(&format!("x {secret} y")).unwrap();
        assert_eq!(
            redact(&json, std::slice::from_ref(&secret)),
            "\"x [REDACTED] y\""
        );
        assert_eq!(
            redact(&format!("x {secret} y"), &[secret]),
            "x [REDACTED] y"
        );
        let short = "commonprefix".to_string();
        let long = "commonprefix-and-more-secret".to_string();
        assert_eq!(
            redact(&format!("a {long} b {short}"), &[short, long]),
            "a [REDACTED] b [REDACTED]"
        );
    }

    #[test]
    fn redacts_long_values_only() {
        let s = redact(
            "key=sk-ant-12345678 and ab",
            &["sk-ant-12345678".into(), "ab".into()],
        );
        assert_eq!(s, "key=[REDACTED] and ab");
    }
}
