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

/// Redaction over a stream that arrives in pieces: a secret split across two pieces is
/// still caught, because the last (longest secret − 1) bytes are held back until the
/// next piece (or `finish`) shows whether they begin a secret. What it returns is safe
/// to cut anywhere.
pub(crate) struct StreamRedactor {
    secrets: Vec<String>,
    /// Bytes held back: one less than the longest secret.
    hold: usize,
    pending: String,
}

impl StreamRedactor {
    pub(crate) fn new(secrets: &[String]) -> Self {
        let secrets: Vec<String> = secrets
            .iter()
            .filter(|s| s.len() >= MIN_REDACT_LEN)
            .cloned()
            .collect();
        // A secret may also appear JSON-escaped, which is longer.
        let longest = secrets
            .iter()
            .map(|s| {
                s.len()
                    .max(serde_json::to_string(s).map_or(0, |q| q.len() - 2))
            })
            .max()
            .unwrap_or(1);
        let hold = longest - 1;
        StreamRedactor {
            secrets,
            hold,
            pending: String::new(),
        }
    }

    /// Takes the next piece; returns the redacted text that can no longer change.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        if self.secrets.is_empty() {
            return piece.to_string();
        }
        self.pending.push_str(piece);
        if self.pending.len() <= self.hold {
            return String::new();
        }
        let redacted = redact(&self.pending, &self.secrets);
        let mut keep_from = redacted.len() - self.hold.min(redacted.len());
        while !redacted.is_char_boundary(keep_from) {
            keep_from -= 1;
        }
        self.pending = redacted[keep_from..].to_string();
        redacted[..keep_from].to_string()
    }

    /// The rest, redacted.
    pub(crate) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        redact(&rest, &self.secrets)
    }
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
    fn stream_redaction_catches_a_secret_split_at_every_offset() {
        let secret = "ghp_0123456789abcdefghij".to_string();
        let text = format!("before {secret} between {secret}é after");
        for a in 0..=text.len() {
            for b in a..=text.len() {
                if !(text.is_char_boundary(a) && text.is_char_boundary(b)) {
                    continue;
                }
                let mut r = StreamRedactor::new(std::slice::from_ref(&secret));
                let mut out = r.push(&text[..a]);
                out += &r.push(&text[a..b]);
                out += &r.push(&text[b..]);
                out += &r.finish();
                assert_eq!(
                    out, "before [REDACTED] between [REDACTED]é after",
                    "split at {a}, {b}"
                );
            }
        }
    }

    #[test]
    fn stream_redaction_without_secrets_passes_text_through() {
        let mut r = StreamRedactor::new(&["short".to_string()]);
        assert_eq!(r.push("abc"), "abc");
        assert_eq!(r.finish(), "");
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
