//! A `SKILL.md`'s front matter, parsed and checked against the Agent Skills specification
//! leniently, as the client-implementation guide's "Lenient validation" advises: a
//! cosmetic violation is a warning and the skill loads; a skill that cannot be used (no
//! description, no or unparseable front matter, bytes that are not UTF-8) is an `Err`
//! saying why. Pure, on bytes; never panics.

use std::collections::BTreeMap;

use serde_yaml::Value;

/// The front matter must end within this many bytes of the file's start: discovery reads no
/// more of a file, so a 10 MB `SKILL.md` costs the catalog 64 KiB.
pub(crate) const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;
/// The specification's limits.
pub(crate) const MAX_NAME_CHARS: usize = 64;
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;
pub(crate) const MAX_COMPATIBILITY_CHARS: usize = 500;

/// What a skill says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) license: Option<String>,
    pub(crate) compatibility: Option<String>,
    pub(crate) metadata: BTreeMap<String, String>,
    /// `allowed-tools` (experimental in the specification), split on blanks.
    pub(crate) allowed_tools: Vec<String>,
    /// Claude Code's `disable-model-invocation: true`: kept out of the catalog, still a
    /// prompt command.
    pub(crate) hidden: bool,
}

/// A usable skill's front matter and the cosmetic violations found in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) meta: FrontMatter,
    pub(crate) warnings: Vec<String>,
}

/// The front matter of a file's first bytes (`head`, at most `MAX_FRONT_MATTER_BYTES` read)
/// as text, and the offset of the body after its closing `---` line.
pub(crate) fn split(head: &[u8]) -> Result<(&str, usize), String> {
    let start = if head.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let rest = &head[start..];
    let first_end = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| "no front matter (the file does not start with a `---` line)".to_string())?;
    if trim_line(&rest[..first_end]) != b"---" {
        return Err("no front matter (the file does not start with a `---` line)".into());
    }
    let yaml_start = start + first_end + 1;
    let mut pos = yaml_start;
    while pos < head.len() {
        let end = head[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len(), |i| pos + i);
        if trim_line(&head[pos..end]) == b"---" {
            let yaml = std::str::from_utf8(&head[yaml_start..pos]).map_err(|e| {
                format!(
                    "the front matter is not UTF-8 (byte {})",
                    yaml_start + e.valid_up_to()
                )
            })?;
            return Ok((yaml, (end + 1).min(head.len())));
        }
        if end == head.len() {
            break;
        }
        pos = end + 1;
    }
    Err(format!(
        "the front matter is not closed by a `---` line within its first {} KiB",
        MAX_FRONT_MATTER_BYTES / 1024
    ))
}

/// A line without its `\r` and trailing blanks.
fn trim_line(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    &line[..end]
}

/// The front matter's fields, checked; `folder` is the skill directory's name.
pub(crate) fn front_matter(yaml: &str, folder: &str) -> Result<Parsed, String> {
    let value = match serde_yaml::from_str::<Value>(yaml) {
        Ok(v) => v,
        // The guide's fallback: skills written for other clients often carry unquoted
        // values with a colon (`description: Use when: …`), which YAML refuses.
        Err(e) => serde_yaml::from_str::<Value>(&quote_plain_values(yaml))
            .map_err(|_| format!("the front matter is not YAML ({e})"))?,
    };
    let map = match value {
        Value::Mapping(m) => m,
        Value::Null => return Err("the front matter is empty: no description".into()),
        _ => return Err("the front matter is not a mapping of fields".into()),
    };
    let mut warnings = Vec::new();
    let mut meta = FrontMatter::default();
    let mut name = None;
    let mut description = None;
    for (k, v) in &map {
        let Some(key) = k.as_str() else {
            warnings.push("a field name is not a string: ignored".into());
            continue;
        };
        match key {
            "name" => name = scalar(key, v, &mut warnings),
            "description" => description = scalar(key, v, &mut warnings),
            "license" => meta.license = scalar(key, v, &mut warnings),
            "compatibility" => meta.compatibility = scalar(key, v, &mut warnings),
            "metadata" => meta.metadata = metadata(v, &mut warnings),
            "allowed-tools" => meta.allowed_tools = allowed_tools(v, &mut warnings),
            "disable-model-invocation" => meta.hidden = v.as_bool() == Some(true),
            other => warnings.push(format!(
                "field `{}` is not in the specification (ignored)",
                crate::util::text::ellipsis(other, 40)
            )),
        }
    }
    let description = description.unwrap_or_default();
    if description.trim().is_empty() {
        return Err("no description (a skill without one cannot be offered to the model)".into());
    }
    meta.description = description.trim().to_string();
    let n = meta.description.chars().count();
    if n > MAX_DESCRIPTION_CHARS {
        warnings.push(format!(
            "description is {n} characters, over the specification's {MAX_DESCRIPTION_CHARS} (cut in the catalog)"
        ));
    }
    if let Some(c) = &meta.compatibility {
        let n = c.chars().count();
        if n > MAX_COMPATIBILITY_CHARS {
            warnings.push(format!(
                "compatibility is {n} characters, over the specification's {MAX_COMPATIBILITY_CHARS}"
            ));
        }
    }
    meta.name = match name {
        Some(n) if !n.trim().is_empty() => n.trim().to_string(),
        _ => {
            warnings.push(format!("no name: the folder's name `{folder}` is used"));
            folder.to_string()
        }
    };
    warnings.extend(name_problems(&meta.name, folder));
    Ok(Parsed { meta, warnings })
}

/// The specification's rules for `name`, each broken one said.
pub(crate) fn name_problems(name: &str, folder: &str) -> Vec<String> {
    let mut p = Vec::new();
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        p.push(format!(
            "name is {n} characters, over the specification's {MAX_NAME_CHARS}"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        p.push(format!(
            "name `{}` has characters other than a-z, 0-9 and `-`",
            crate::util::text::ellipsis(name, 80)
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        p.push("name starts or ends with a hyphen".into());
    }
    if name.contains("--") {
        p.push("name has consecutive hyphens".into());
    }
    if name != folder {
        p.push(format!(
            "name `{}` differs from its folder `{folder}`",
            crate::util::text::ellipsis(name, 80)
        ));
    }
    p
}

/// A field that should be a string: numbers and booleans are taken as written (with a
/// warning), anything else is ignored.
fn scalar(key: &str, v: &Value, warnings: &mut Vec<String>) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => {
            warnings.push(format!("{key} is not a string"));
            Some(n.to_string())
        }
        Value::Bool(b) => {
            warnings.push(format!("{key} is not a string"));
            Some(b.to_string())
        }
        Value::Null => None,
        _ => {
            warnings.push(format!("{key} is not a string (ignored)"));
            None
        }
    }
}

fn metadata(v: &Value, warnings: &mut Vec<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Value::Mapping(m) = v else {
        if !v.is_null() {
            warnings.push("metadata is not a mapping (ignored)".into());
        }
        return out;
    };
    for (k, v) in m {
        let mut sink = Vec::new();
        match (k.as_str(), scalar("metadata value", v, &mut sink)) {
            (Some(k), Some(v)) => {
                out.insert(k.to_string(), v);
            }
            _ => warnings.push("metadata holds a value that is not a string (ignored)".into()),
        }
    }
    out
}

/// `allowed-tools`: a blank-separated string per the specification; a list (as some
/// clients write it) is taken with a warning.
fn allowed_tools(v: &Value, warnings: &mut Vec<String>) -> Vec<String> {
    match v {
        Value::String(s) => s.split_whitespace().map(String::from).collect(),
        Value::Sequence(items) => {
            warnings.push("allowed-tools is a list, not a blank-separated string".into());
            items
                .iter()
                .filter_map(|i| i.as_str().map(String::from))
                .collect()
        }
        Value::Null => Vec::new(),
        _ => {
            warnings.push("allowed-tools is not a string (ignored)".into());
            Vec::new()
        }
    }
}

/// Top-level `key: value` lines whose plain value holds `: ` or ` #` (which YAML reads as
/// a nested mapping or a comment) get the value single-quoted.
fn quote_plain_values(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 64);
    for line in yaml.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let ending = &line[body.len()..];
        let quoted = body
            .split_once(": ")
            .filter(|(k, _)| {
                !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            })
            .and_then(|(k, v)| {
                let v = v.trim();
                let plain =
                    !v.is_empty() && !v.starts_with(['"', '\'', '|', '>', '[', '{', '&', '*', '!']);
                (plain && (v.contains(": ") || v.ends_with(':') || v.contains(" #")))
                    .then(|| format!("{k}: '{}'", v.replace('\'', "''")))
            });
        match quoted {
            Some(q) => {
                out.push_str(&q);
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
