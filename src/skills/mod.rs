//! Agent Skills (the agentskills/agentskills specification): folders holding a `SKILL.md`
//! (YAML front matter, then instructions) and the files those use. This module finds and
//! checks them (`discover`, `parse`), and words what the model sees: the catalog in the
//! system prompt, a skill's loaded content (`activation`) and a `/name args` prompt
//! command. Pure but for reading the skills' own files; nothing here logs.

mod discover;
pub(crate) mod github;
pub(crate) mod parse;

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[cfg(test)]
pub(crate) use discover::MAX_DIRS_PER_ROOT;
pub(crate) use discover::{SKILL_FOLDERS, Sources, discover};
use parse::FrontMatter;

use crate::model::protocol::{ContentBlock, Message};
use crate::util::text;

/// The catalog in the system prompt stops giving descriptions past this many characters:
/// about 4,000 tokens, 2% of a 200k-token window (codex's share), re-sent every turn. Not
/// codex's 8,000-character fallback: the 17 skills of anthropics/skills alone take 8,853.
pub(crate) const MAX_CATALOG_CHARS: usize = 16_000;
/// Past the descriptions, further skills are listed by name only, up to this much more.
const MAX_CATALOG_NAMES_CHARS: usize = 2_000;
/// A skill's body longer than this (characters) is cut when loaded, with a note saying
/// where the rest is (the guide recommends under 5,000 tokens).
pub(crate) const MAX_BODY_CHARS: usize = 60_000;
/// Bytes of a `SKILL.md` read when it is loaded: a larger file is cut.
const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;
/// Files of a skill's directory listed when it is loaded (they are not read).
const MAX_RESOURCES: usize = 100;
/// How deep that listing goes.
const MAX_RESOURCE_DEPTH: usize = 4;
/// How a loaded skill's content starts: clearing keeps a tool result that starts so, and
/// compaction keeps it verbatim (`kept_skill_contents`).
pub(crate) const SKILL_CONTENT_OPEN: &str = "<skill_content name=\"";

/// Where a skill was found.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scope {
    /// `--skill DIR`.
    Flag,
    /// `.agents/skills/` or `.claude/skills/` in the workspace or a parent up to the git root.
    #[default]
    Project,
    /// `~/.agents/skills/` or `~/.claude/skills/`.
    User,
}

impl Scope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Flag => "--skill",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// One `SKILL.md` found: the transcript's `skills` entry and `agent skills --json`'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SkillRecord {
    /// The skill's name (its folder's when the file could not be read).
    pub(crate) name: String,
    /// The `SKILL.md`, as found.
    pub(crate) path: String,
    pub(crate) scope: Scope,
    /// Why it was not loaded (unusable, shadowed by a skill of the same name, untrusted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<String>,
    /// The specification's rules it breaks, cosmetically (it loaded all the same).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
    /// The turn at which the model (turn ≥ 1) or a prompt command (turn 0) loaded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) activated_turn: Option<u32>,
}

/// A loaded skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    pub(crate) meta: FrontMatter,
    /// Canonical directory.
    pub(crate) dir: PathBuf,
    /// Canonical `SKILL.md`.
    pub(crate) file: PathBuf,
    /// The `SKILL.md` as found (for people).
    pub(crate) shown: PathBuf,
    pub(crate) scope: Scope,
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Discovered {
    /// The loaded skills, in precedence order, names unique.
    pub(crate) skills: Vec<Skill>,
    /// Every `SKILL.md` found, loaded or not, in the order looked at.
    pub(crate) records: Vec<SkillRecord>,
    /// Each violation, skip and scan limit, naming the file.
    pub(crate) warnings: Vec<String>,
}

impl Discovered {
    pub(crate) fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.meta.name == name)
    }

    /// The loaded skills' names, for messages.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.meta.name.as_str()).collect()
    }

    /// The skills' directories outside `roots` (the workspace, `--add-dir`s): the file
    /// tools may read there, never write.
    pub(crate) fn read_only_dirs(&self, roots: &[&Path]) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .skills
            .iter()
            .filter(|s| !roots.iter().any(|r| s.dir.starts_with(r)))
            .map(|s| s.dir.clone())
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }
}

/// For the Agent Client Protocol's available commands: each loaded skill a prompt command
/// may run, as (name, description).
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the ACP server's available commands call it once it lands"
    )
)]
pub(crate) fn available_commands(d: &Discovered) -> Vec<(String, String)> {
    d.skills
        .iter()
        .map(|s| (s.meta.name.clone(), s.meta.description.clone()))
        .collect()
}

/// The catalog for the system prompt (None without skills the model may load), and how
/// many skills it shortened to a name or left out (past `MAX_CATALOG_CHARS`).
pub(crate) fn catalog(skills: &[Skill]) -> Option<(String, usize)> {
    let shown: Vec<&Skill> = skills.iter().filter(|s| !s.meta.hidden).collect();
    if shown.is_empty() {
        return None;
    }
    let mut out = String::from(
        "# Skills\n\n\
         The following skills provide specialized instructions for specific tasks. When a task \
         matches a skill's description, call the Skill tool with the skill's name to load its \
         full instructions before proceeding. A loaded skill names its directory: read its \
         files there with ReadFile, Grep and Glob by absolute path (they cannot be changed), \
         and run its scripts with Bash when it is enabled.\n\n<available_skills>\n",
    );
    let start = out.len();
    let mut shortened = 0;
    let mut omitted = 0;
    for s in &shown {
        let full = format!(
            "<skill><name>{}</name><description>{}</description></skill>\n",
            escape(&s.meta.name),
            escape(&text::ellipsis(
                &s.meta.description,
                parse::MAX_DESCRIPTION_CHARS
            ))
        );
        let name_only = format!("<skill><name>{}</name></skill>\n", escape(&s.meta.name));
        let used = out.len() - start;
        if shortened == 0 && used + full.len() <= MAX_CATALOG_CHARS {
            out.push_str(&full);
        } else if omitted == 0
            && used + name_only.len() <= MAX_CATALOG_CHARS + MAX_CATALOG_NAMES_CHARS
        {
            out.push_str(&name_only);
            shortened += 1;
        } else {
            omitted += 1;
        }
    }
    out.push_str("</available_skills>");
    if shortened + omitted > 0 {
        out.push_str(&format!(
            "\n{shortened} skills are listed by name only and {omitted} not listed (the catalog's \
             size is capped); the Skill tool loads any of them by name."
        ));
    }
    Some((out, shortened + omitted))
}

/// `<`, `>` and `&` as entities: a description cannot close the catalog's tags.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A task that is a prompt command, `/name args`: the name and the arguments (trimmed).
/// A first word holding another `/` (`/tmp/x is broken`) is a path, not a command.
pub(crate) fn prompt_command(task: &str) -> Option<(&str, &str)> {
    let rest = task.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if name.is_empty() || name.contains('/') {
        return None;
    }
    Some((name, rest[end..].trim()))
}

/// The prompt command of an `agent github` comment: the text after `phrase` (the trigger)
/// when it starts with `/name`.
pub(crate) fn command_after_phrase<'a>(body: &'a str, phrase: &str) -> Option<(&'a str, &'a str)> {
    let at = body.find(phrase)?;
    let (name, args) = prompt_command(&body[at + phrase.len()..])?;
    // The comment's other lines are the thread's, not the command's arguments.
    Some((name, args.lines().next().unwrap_or("").trim()))
}

/// What the model gets when `skill` loads: its body (front matter stripped; `$ARGUMENTS`
/// replaced by `args`, or `args` added after it), its directory and its files, wrapped
/// in `<skill_content>` so that clearing and compaction can keep it. `Err`: the file
/// cannot be read or is not UTF-8.
pub(crate) fn activation(skill: &Skill, args: Option<&str>) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(&skill.file)
        .and_then(|f| {
            use std::io::Read;
            f.take(MAX_SKILL_FILE_BYTES).read_to_end(&mut bytes)
        })
        .map_err(|e| format!("cannot read {}: {e}", skill.file.display()))?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        // Cut inside a character by the read cap: keep what is whole.
        Err(e) if bytes.len() as u64 == MAX_SKILL_FILE_BYTES && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(e) => {
            return Err(format!(
                "{} is not UTF-8 text (byte {}): the skill cannot be loaded",
                skill.file.display(),
                e.valid_up_to()
            ));
        }
    };
    let body_at = parse::split(text.as_bytes()).map(|(_, at)| at).unwrap_or(0);
    let body = text[body_at..].trim();
    let args = args.map(str::trim).filter(|a| !a.is_empty());
    let mut body = match args {
        Some(a) if body.contains("$ARGUMENTS") => body.replace("$ARGUMENTS", a),
        _ => body.to_string(),
    };
    let (_, left) = text::truncate(&body, MAX_BODY_CHARS);
    if left > 0 {
        body = text::marked(
            &body,
            MAX_BODY_CHARS,
            &format!(
                "\n[… {left} more characters: read the rest of {} with ReadFile]",
                skill.file.display()
            ),
        );
    }
    let mut out = format!(
        "{SKILL_CONTENT_OPEN}{}\">\n{body}\n",
        escape(&skill.meta.name)
    );
    out.push_str(&format!(
        "\nSkill directory: {}\nRelative paths in this skill are relative to the skill \
         directory; use absolute paths in tool calls.\n",
        skill.dir.display()
    ));
    let (files, more) = resources(&skill.dir);
    if !files.is_empty() {
        out.push_str("\n<skill_resources>\n");
        for f in files {
            out.push_str(&format!("<file>{}</file>\n", escape(&f)));
        }
        if more {
            out.push_str(&format!(
                "(more files not listed: only the first {MAX_RESOURCES})\n"
            ));
        }
        out.push_str("</skill_resources>\n");
    }
    out.push_str("</skill_content>");
    if let Some(a) = args
        && !text[body_at..].contains("$ARGUMENTS")
    {
        out.push_str(&format!("\n\nARGUMENTS: {a}"));
    }
    Ok(out)
}

/// The files of a skill's directory (relative, sorted, `SKILL.md` left out), and whether
/// there were more than `MAX_RESOURCES`. No symbolic link is followed.
fn resources(dir: &Path) -> (Vec<String>, bool) {
    let mut files = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries.into_iter().rev() {
            let name = e.file_name();
            if name == ".git" || name == "node_modules" {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            if ft.is_dir() && depth + 1 < MAX_RESOURCE_DEPTH {
                stack.push((path, depth + 1));
            } else if ft.is_file() {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                if rel != Path::new("SKILL.md") {
                    files.push(rel.display().to_string());
                }
            }
            if files.len() > MAX_RESOURCES * 4 {
                break;
            }
        }
    }
    files.sort();
    let more = files.len() > MAX_RESOURCES;
    files.truncate(MAX_RESOURCES);
    (files, more)
}

/// For compaction: the loaded skills' contents in `messages` (tool results and prompt
/// commands that start with `<skill_content`), verbatim, oldest first. A summary must
/// keep these as they are: a skill's instructions hold for the whole run.
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "summarising compaction calls it once it lands")
)]
pub(crate) fn kept_skill_contents(messages: &[Message]) -> Vec<String> {
    let mut kept = Vec::new();
    for m in messages {
        for b in &m.content {
            let t = match b {
                ContentBlock::ToolResult { content, .. } => content,
                ContentBlock::Text { text } => text,
                _ => continue,
            };
            if let Some(at) = t.find(SKILL_CONTENT_OPEN)
                && let Some(end) = t[at..].find("</skill_content>")
            {
                kept.push(t[at..at + end + "</skill_content>".len()].to_string());
            }
        }
    }
    kept
}

/// Whether a tool result is a loaded skill's content (clearing keeps it).
pub(crate) fn is_skill_content(content: &str) -> bool {
    content.starts_with(SKILL_CONTENT_OPEN)
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
