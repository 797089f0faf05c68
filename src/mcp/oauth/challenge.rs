//! A `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1): the
//! parameters an MCP server puts in its 401 and 403 answers. Pure.

/// What a challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// RFC 9728: where the protected resource's metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes the request needs.
    pub scope: Option<Vec<String>>,
    /// `invalid_token`, `insufficient_scope`, …
    pub error: Option<String>,
}

impl Challenge {
    /// Parses the header's value; anything unreadable is left out.
    pub(crate) fn parse(header: &str) -> Challenge {
        let mut c = Challenge::default();
        // The Bearer challenge's parameters (a header may list other schemes first).
        let lower = header.to_ascii_lowercase();
        let start = lower.find("bearer").map_or(0, |i| i + "bearer".len());
        for (k, v) in params(&header[start..]) {
            match k.to_ascii_lowercase().as_str() {
                "resource_metadata" => c.resource_metadata = Some(v),
                "scope" => {
                    c.scope = Some(v.split_whitespace().map(str::to_string).collect());
                }
                "error" => c.error = Some(v),
                _ => {}
            }
        }
        c
    }

    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// `k=v` and `k="v, with \"quotes\""` pairs separated by commas.
fn params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let key: String = chars
            .by_ref()
            .take_while(|c| *c != '=')
            .collect::<String>()
            .trim()
            .to_string();
        if key.is_empty() {
            return out;
        }
        // A key with a space in it is the next scheme's name plus its first key.
        let key = key.rsplit(' ').next().unwrap_or("").to_string();
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value = value.trim().to_string();
        }
        out.push((key, value));
    }
}

#[cfg(test)]
#[path = "challenge_tests.rs"]
mod tests;
