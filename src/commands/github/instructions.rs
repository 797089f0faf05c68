//! A pull request's project instructions (AGENTS.md, CLAUDE.md) come from its base
//! branch, read through the API: the workspace is checked out at the head, which anyone
//! who can open a pull request writes, so the head's file is not the project's word. When
//! the head's file differs from the base's, the model sees it in the prompt inside the
//! untrusted-data fences, with a note saying it is the pull request's proposal
//! (`context::prompt`), never in the system prompt.

use base64::Engine;
use serde_json::Value;

use super::api::Api;
use crate::config::system_prompt::{MAX_PROJECT_INSTRUCTIONS_BYTES, PROJECT_INSTRUCTION_FILES};

/// The base branch's instructions (first found of the files, cut at the cap), `None` when
/// it has none. `Err`: the API failed (the run then gets none, never the head's).
pub(crate) fn from_base(
    api: &Api,
    repo: &str,
    base_ref: &str,
) -> Result<Option<(String, String)>, String> {
    for name in PROJECT_INSTRUCTION_FILES {
        let path = format!("{repo}/contents/{name}?ref={}", query_value(base_ref));
        match api.get(&path) {
            Ok(file) => return Ok(decode(&file).map(|text| (name.to_string(), text))),
            Err(e) if e.status == Some(404) => continue,
            Err(e) => return Err(e.message),
        }
    }
    Ok(None)
}

/// A `GET /contents/{path}` answer's text (`encoding: base64`), cut at the cap.
fn decode(file: &Value) -> Option<String> {
    if file["type"] != "file" || file["encoding"] != "base64" {
        return None;
    }
    let b64: String = file["content"]
        .as_str()?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let cut = &bytes[..bytes.len().min(MAX_PROJECT_INSTRUCTIONS_BYTES)];
    Some(String::from_utf8_lossy(cut).into_owned())
}

/// A branch name as a query value: `%`, `&`, `#`, `+` and blanks escaped.
fn query_value(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        match b {
            b'%' | b'&' | b'#' | b'+' | b'=' | b'?' | b' ' => out.push_str(&format!("%{b:02X}")),
            _ => out.push(b as char),
        }
    }
    out
}

/// For a pull request: the instructions the run uses (the base's; none when the API
/// fails, with a warning) and the head's file when it differs, for the fenced note.
/// Not a pull request: the workspace's, as `agent run` reads them.
pub(crate) type ForPull = (Option<Option<(String, String)>>, Option<(String, String)>);

pub(crate) fn for_pull(
    api: &Api,
    repo: &str,
    pull: Option<&super::event::PullRefs>,
    workspace: &std::path::Path,
) -> ForPull {
    let Some(pull) = pull else {
        return (None, None);
    };
    let base = from_base(api, repo, &pull.base_ref).unwrap_or_else(|e| {
        crate::util::output::warn(&format!(
            "cannot read the project instructions of the base branch {}: {e}; the run has \
             none (the head branch's are not used)",
            pull.base_ref
        ));
        None
    });
    let head = head_if_different(workspace, base.as_ref());
    (Some(base), head)
}

/// The head's file, when it is not the base's: (name, text) for the fenced note.
pub(crate) fn head_if_different(
    workspace: &std::path::Path,
    base: Option<&(String, String)>,
) -> Option<(String, String)> {
    let head = crate::config::system_prompt::project_instructions(workspace)?;
    match base {
        Some((name, text)) if *name == head.0 && text.trim_end() == head.1.trim_end() => None,
        _ => Some(head),
    }
}

#[cfg(test)]
#[path = "instructions_tests.rs"]
mod tests;
