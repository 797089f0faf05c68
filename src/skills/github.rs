//! `agent github`'s skills, set on the run's flags before it starts: no user scope (a
//! runner's home is not a user's), on a pull request the skills its head branch adds or
//! changes left out (untrusted, as its AGENTS.md is: only the base branch's skills load),
//! and a comment's prompt command (`@agent /review …`).

use serde_json::Value;

use crate::config::cli::SkillArgs;

/// Files a page of `GET /pulls/{n}/files` holds (`per_page=100`): a full page may not be
/// the whole list.
const FILES_PAGE: usize = 100;

/// Sets `args` for a run answering `said` (the comment), `files` being the pull request's
/// changed files (`filename` each) when `is_pull`.
pub(crate) fn prepare(
    args: &mut SkillArgs,
    is_pull: bool,
    files: &[Value],
    said: Option<&str>,
    phrase: &str,
) {
    args.no_user_skills = true;
    if is_pull {
        args.untrusted_changes = Some(untrusted_changes(files));
    }
    if let Some((name, rest)) = said.and_then(|b| super::command_after_phrase(b, phrase)) {
        args.command = Some((name.to_string(), rest.to_string()));
    }
}

/// The changed files; when the list may be cut, both skill folders as a whole (every
/// project skill is then untrusted: fail closed).
fn untrusted_changes(files: &[Value]) -> Vec<String> {
    let mut changed: Vec<String> = files
        .iter()
        .filter_map(|f| f["filename"].as_str().map(String::from))
        .collect();
    if files.len() >= FILES_PAGE {
        changed.extend(super::SKILL_FOLDERS.iter().map(|f| format!("{f}/")));
    }
    changed
}

#[cfg(test)]
#[path = "github_tests.rs"]
mod tests;
