//! The system prompt: the built-in rules of an unattended run, the project's AGENTS.md or
//! CLAUDE.md (the workspace's, or the ones `agent github` gives: a pull request's base
//! branch's), or `--system`, then `--append-system-prompt`.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// Project instruction files appended to the system prompt, first found wins.
pub(crate) const PROJECT_INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// A project instruction file larger than this is cut: it is re-sent every turn.
pub(crate) const MAX_PROJECT_INSTRUCTIONS_BYTES: usize = 64 * 1024;

/// `TEXT` or `@FILE`.
pub(super) fn text_or_file(flag: &str, value: &str) -> Result<String, Error> {
    match value.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| Error::Usage(format!("{flag} @{path}: {e}")))
        }
        None => Ok(value.to_string()),
    }
}

/// The built-in system prompt: the rules of a run nobody watches.
fn base_system_prompt(workspace: &Path, add_dirs: &[PathBuf]) -> String {
    let mut p = format!(
        "You are agent, an autonomous coding agent running non-interactively (in CI or a script).\n\
         Nobody will answer questions or confirm anything: never ask; make reasonable decisions \
         and state your assumptions.\n\
         You work in the workspace {ws}. Paths in tool inputs may be absolute (inside the \
         workspace) or relative to it; nothing outside it may be changed.\n\
         Use the dedicated tools for files: ReadFile to read, Glob to find files, Grep to search \
         contents, and the editing tools offered (EditFile and WriteFile, or apply_patch) to change \
         files. Use Bash (when enabled) for running \
         builds, tests and other commands, not for reading, searching or editing files.\n\
         Independent read-only calls (ReadFile, Glob, Grep) may be made together in one response: \
         they run in parallel.\n\
         A tool result marked as an error tells you what went wrong: adjust and go on.\n\
         Verify your work (for example by running the tests) when you can.\n\
         When you are done, end with a short summary of what you did and what is left, if anything.",
        ws = workspace.display()
    );
    if !add_dirs.is_empty() {
        let list: Vec<String> = add_dirs.iter().map(|d| d.display().to_string()).collect();
        p.push_str(&format!(
            "\nThe file tools may also use these directories (--add-dir), by absolute path: {}.",
            list.join(", ")
        ));
    }
    p
}

pub(super) fn system_prompt(
    workspace: &Path,
    add_dirs: &[PathBuf],
    system: Option<&str>,
    append: Option<&str>,
    given: Option<&Option<(String, String)>>,
) -> Result<String, Error> {
    let mut prompt = match system {
        Some(s) => text_or_file("--system", s)?,
        None => {
            let mut p = base_system_prompt(workspace, add_dirs);
            // `agent github` on a pull request gives the base branch's instead.
            let found = match given {
                Some(g) => g.clone(),
                None => project_instructions(workspace),
            };
            if let Some((name, text)) = found {
                p.push_str(&format!(
                    "\n\n# Project instructions ({name})\n\n{}",
                    text.trim_end()
                ));
            }
            p
        }
    };
    if let Some(a) = append {
        let extra = text_or_file("--append-system-prompt", a)?;
        prompt.push_str("\n\n");
        prompt.push_str(&extra);
    }
    Ok(prompt)
}

/// The workspace's AGENTS.md or CLAUDE.md (first found), cut at the cap.
pub(crate) fn project_instructions(workspace: &Path) -> Option<(String, String)> {
    PROJECT_INSTRUCTION_FILES.iter().find_map(|name| {
        let bytes = std::fs::read(workspace.join(name)).ok()?;
        let cut = &bytes[..bytes.len().min(MAX_PROJECT_INSTRUCTIONS_BYTES)];
        Some((name.to_string(), String::from_utf8_lossy(cut).into_owned()))
    })
}

#[cfg(test)]
#[path = "system_prompt_tests.rs"]
mod tests;
