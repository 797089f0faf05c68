//! A pull (merge) request's project instructions (AGENTS.md, CLAUDE.md) come from its base
//! branch, read through the API: the workspace is checked out at the head, which anyone
//! who can open a pull request writes, so the head's file is not the project's word. When
//! the head's file differs from the base's, the model sees it in the prompt inside the
//! untrusted-data fences, with a note saying it is the pull request's proposal
//! (`context::prompt`), never in the system prompt.

use super::Forge;
use crate::config::system_prompt::{MAX_PROJECT_INSTRUCTIONS_BYTES, PROJECT_INSTRUCTION_FILES};

/// The base branch's instructions (first found of the files, cut at the cap), `None` when
/// it has none. `Err`: the API failed (the run then gets none, never the head's).
pub(crate) fn from_base(
    forge: &dyn Forge,
    base_ref: &str,
) -> Result<Option<(String, String)>, String> {
    for name in PROJECT_INSTRUCTION_FILES {
        match forge.file_on(base_ref, name) {
            Ok(Some(text)) => return Ok(Some((name.to_string(), cap(&text)))),
            Ok(None) => continue,
            Err(e) => return Err(e.message),
        }
    }
    Ok(None)
}

/// The text cut at the cap (on a character boundary).
fn cap(text: &str) -> String {
    let bytes = text.as_bytes();
    let cut = &bytes[..bytes.len().min(MAX_PROJECT_INSTRUCTIONS_BYTES)];
    String::from_utf8_lossy(cut).into_owned()
}

/// For a pull request: the instructions the run uses (the base's; none when the API
/// fails, with a warning) and the head's file when it differs, for the fenced note.
/// Not a pull request: the workspace's, as `agent run` reads them.
pub(crate) type ForPull = (Option<Option<(String, String)>>, Option<(String, String)>);

pub(crate) fn for_pull(
    forge: &dyn Forge,
    pull: Option<&super::event::PullRefs>,
    workspace: &std::path::Path,
) -> ForPull {
    let Some(pull) = pull else {
        return (None, None);
    };
    let base = from_base(forge, &pull.base_ref).unwrap_or_else(|e| {
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
