//! The Skill tool (Claude Code's name and input, `{skill, args?}`): loads an Agent Skill's
//! instructions, the body of its `SKILL.md`, with its directory and the list of its files
//! (`skills::activation`). Read-only and concurrency-safe. It is offered only when the run
//! found skills (`agent run` swaps in the run's set); a skill already loaded in the run's
//! conversation is not loaded twice, and each first load is told to the observer (the
//! transcript's `skills`, the `skill.activated` event).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Category, SubjectKind, ToolContext, ToolError, ToolResult, Traits, TypedTool};
use crate::skills::{self, Discovered};
use crate::util::sync::Locked;

/// The tool's name (Claude Code's).
pub(crate) const NAME: &str = "Skill";

const DESCRIPTION: &str = "\
Loads a skill: its full instructions, its directory and the list of its files. The skills \
available are listed in the system prompt under \"Skills\". When the task matches a skill's \
description, load it before doing the work, then follow its instructions. Read the files it \
names with ReadFile (by absolute path, under the skill directory it gives). A skill stays \
loaded for the whole run: never load one twice.";

/// Skill's input (Claude Code's shape).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SkillInput {
    /// The skill's name.
    skill: String,
    /// Arguments for the skill (`$ARGUMENTS` in its body).
    #[serde(default)]
    args: Option<String>,
}

type Observer = Box<dyn Fn(&str) + Send + Sync>;

/// The tool, holding the run's skills and which of them were loaded.
#[derive(Default)]
pub(crate) struct Skill {
    skills: Arc<Discovered>,
    loaded: Mutex<BTreeSet<String>>,
    observer: OnceLock<Observer>,
}

impl Skill {
    pub(crate) fn new(skills: Arc<Discovered>) -> Self {
        Skill {
            skills,
            ..Skill::default()
        }
    }

    /// Who hears of each skill's first load (`agent run`: the record, the event). Once.
    pub(crate) fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    /// A prompt command loaded `name` before the first turn: not loaded again, told.
    pub(crate) fn loaded_by_command(&self, name: &str) {
        self.first_load(name);
    }

    /// Marks `name` loaded; true (and the observer told) the first time.
    fn first_load(&self, name: &str) -> bool {
        let first = self.loaded.locked().insert(name.to_string());
        if first && let Some(o) = self.observer.get() {
            o(name);
        }
        first
    }
}

/// Claude Code's tool names, as `allowed-tools` lists written for it use them, and ours.
const CLAUDE_NAMES: &[(&str, &str)] = &[
    ("Read", "ReadFile"),
    ("Write", "WriteFile"),
    ("Edit", "EditFile"),
    ("MultiEdit", "EditFile"),
    ("LS", "Glob"),
];

impl Skill {
    /// `--skill-allowed-tools`: while loaded skills list `allowed-tools`, why a call of
    /// `tool` is refused (`None`: allowed). The union of their lists, by tool name (a
    /// rule's specifier, `Bash(git:*)`, is not matched: the permission rules still judge
    /// the call), plus Skill itself.
    pub(crate) fn narrowed(&self, tool: &str) -> Option<String> {
        if tool == NAME {
            return None;
        }
        let loaded = self.loaded.locked();
        let mut who = Vec::new();
        let mut allowed = BTreeSet::new();
        for s in loaded.iter().filter_map(|n| self.skills.get(n)) {
            if s.meta.allowed_tools.is_empty() {
                continue;
            }
            who.push(s.meta.name.as_str());
            for t in &s.meta.allowed_tools {
                let base = t.split('(').next().unwrap_or(t).trim();
                let ours = CLAUDE_NAMES
                    .iter()
                    .find(|(c, _)| *c == base)
                    .map_or(base, |(_, o)| *o);
                allowed.insert(ours.to_string());
            }
        }
        if who.is_empty() || allowed.contains(tool) {
            return None;
        }
        Some(format!(
            "refused: the loaded skill(s) {} allow only these tools (allowed-tools, with \
             --skill-allowed-tools): {}",
            who.join(", "),
            allowed.into_iter().collect::<Vec<_>>().join(", ")
        ))
    }
}

impl TypedTool for Skill {
    type Input = SkillInput;
    /// Reads the skill's own files only: on when there are skills, parallel, rules name
    /// the tool only.
    const TRAITS: Traits = Traits {
        subject_kind: SubjectKind::Nothing,
        category: Category::Skill,
        ..Traits::FILE_READ
    };

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "description": "The skill's name, as the system prompt lists it (e.g. \"pdf\")."},
                "args": {"type": "string", "description": "Optional arguments for the skill."}
            },
            "required": ["skill"],
            "additionalProperties": false
        })
    }

    /// Never spilled: a skill's body is cut by `skills::activation` itself, saying where
    /// the rest is, and a spilled skill would be a skill not loaded.
    fn max_result_chars(&self) -> Option<usize> {
        None
    }

    fn execute(&self, ctx: &ToolContext, input: &SkillInput) -> Result<ToolResult, ToolError> {
        let name = input.skill.trim().trim_start_matches('/');
        let Some(skill) = self.skills.get(name) else {
            let names = self.skills.names();
            return Err(ToolError::failed(format!(
                "unknown skill {name:?}; the skills are: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        // A sub-agent (no `subagents` of its own) has a conversation of its own: it gets
        // the skill whether or not the run's conversation has it.
        let in_main = ctx.subagents.is_some();
        if in_main && self.loaded.locked().contains(name) {
            let mut text = format!(
                "The skill {name} is already loaded earlier in this conversation: follow its \
                 instructions there."
            );
            if let Some(a) = input.args.as_deref().filter(|a| !a.trim().is_empty()) {
                text.push_str(&format!("\n\nARGUMENTS: {a}"));
            }
            return Ok(ToolResult::ok(text).with_meta("skill", name));
        }
        let content =
            skills::activation(skill, input.args.as_deref()).map_err(ToolError::Failed)?;
        self.first_load(name);
        Ok(ToolResult::ok(content)
            .with_meta("skill", name)
            .with_meta("path", skill.shown.display().to_string()))
    }
}

#[cfg(test)]
#[path = "skill_tests.rs"]
mod tests;
