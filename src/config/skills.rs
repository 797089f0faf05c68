//! The skills part of `Config`: the skills a run loads (discovered once, from the flags,
//! the workspace and the home directory), the catalog for the system prompt, and the task
//! a `/name args` prompt command becomes. A bad `--skill` directory, an unknown command
//! or (with `--strict-skills`) any violation is `Error::Usage`, exit 2.

use std::path::Path;
use std::sync::Arc;

use crate::config::cli::SkillArgs;
use crate::config::env::Env;
use crate::error::Error;
use crate::skills::{self, Discovered, Sources};

/// The tool that loads a skill (`tools::skill`), named here for the catalog's check.
const SKILL_TOOL: &str = "Skill";

/// The run's skills, validated.
#[derive(Debug, Clone, Default)]
pub(crate) struct SkillsConfig {
    pub(super) discovered: Arc<Discovered>,
    /// The skill a prompt command loaded before the first turn.
    pub(super) commanded: Option<String>,
    /// `--skill-allowed-tools`.
    pub(super) narrow_tools: bool,
}

impl SkillsConfig {
    /// Discovery from the flags (`agent skills` shows the same).
    pub(crate) fn discover(
        args: &SkillArgs,
        workspace: &Path,
        env: &dyn Env,
    ) -> Result<Discovered, Error> {
        for dir in &args.skill {
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "--skill {}: not a directory",
                    dir.display()
                )));
            }
        }
        let d = skills::discover(&Sources {
            workspace: workspace.to_path_buf(),
            home: env.var("HOME").map(Into::into),
            extra: args.skill.clone(),
            project: !args.no_skills,
            user: !args.no_skills && !args.no_user_skills,
            untrusted_changes: args.untrusted_changes.clone(),
        });
        if args.strict_skills && !d.warnings.is_empty() {
            return Err(Error::Usage(format!(
                "--strict-skills: {} problem(s) with the skills found:\n  {}",
                d.warnings.len(),
                d.warnings.join("\n  ")
            )));
        }
        Ok(d)
    }

    /// The run's skills; `prompt` becomes the loaded skill and its arguments when it is a
    /// prompt command (or `args.command`, `agent github`'s, prepends the skill to it).
    pub(super) fn from_args(
        args: &SkillArgs,
        workspace: &Path,
        env: &dyn Env,
        prompt: &mut String,
        warnings: &mut Vec<String>,
    ) -> Result<Self, Error> {
        let discovered = Self::discover(args, workspace, env)?;
        warnings.extend(discovered.warnings.iter().map(|w| format!("skills: {w}")));
        let mut commanded = None;
        let command = match &args.command {
            Some((name, rest)) => Some((name.clone(), rest.clone(), true)),
            None => {
                skills::prompt_command(prompt).map(|(n, a)| (n.to_string(), a.to_string(), false))
            }
        };
        if let Some((name, rest, embedded)) = command {
            let Some(skill) = discovered.get(&name) else {
                let found = discovered.names();
                return Err(Error::Usage(format!(
                    "unknown prompt command /{name}: {}",
                    if found.is_empty() {
                        "no skills were found (docs/guide/skills.md says where they are looked for)"
                            .to_string()
                    } else {
                        format!("the skills found are /{}", found.join(", /"))
                    }
                )));
            };
            let content = skills::activation(skill, Some(rest.as_str()))
                .map_err(|e| Error::Usage(format!("prompt command /{name}: {e}")))?;
            *prompt = if embedded {
                format!("{content}\n\n{prompt}")
            } else {
                content
            };
            commanded = Some(name);
        }
        Ok(SkillsConfig {
            discovered: Arc::new(discovered),
            commanded,
            narrow_tools: args.skill_allowed_tools,
        })
    }

    /// The catalog for the system prompt: none without skills, or when the Skill tool is
    /// not offered (`--disallowed-tools Skill`, an `--allowed-tools` without it).
    pub(super) fn catalog(
        &self,
        selection: &crate::tools::registry::ToolSelection,
    ) -> Option<(String, usize)> {
        if !self.offered(selection) {
            return None;
        }
        skills::catalog(&self.discovered.skills)
    }

    /// Whether the Skill tool is offered: skills were found and the tool flags leave it on.
    pub(crate) fn offered(&self, selection: &crate::tools::registry::ToolSelection) -> bool {
        !self.discovered.skills.is_empty()
            && !selection.disallowed.iter().any(|d| d == SKILL_TOOL)
            && selection
                .allowed
                .as_ref()
                .is_none_or(|a| a.iter().any(|t| t == SKILL_TOOL))
    }

    /// What discovery found.
    pub(crate) fn discovered(&self) -> &Arc<Discovered> {
        &self.discovered
    }
    /// The skill a prompt command loaded before the first turn.
    pub(crate) fn commanded(&self) -> Option<&str> {
        self.commanded.as_deref()
    }
    /// `--skill-allowed-tools`.
    pub(crate) fn narrow_tools(&self) -> bool {
        self.narrow_tools
    }
}
