//! The conversation part of `Config`: the task, the system prompt, the turn limit, the
//! context window, structured output and the resumed conversation; and the workspace a
//! run (or the run it resumes) works in. Read by the loop (`run::agent`).

use std::path::{Path, PathBuf};

use crate::config::cli::RunArgs;
use crate::config::system_prompt;
use crate::error::Error;
use crate::record::resume::{self, Resumed};
use crate::run::context::ContextSettings;
use crate::run::structured::{self, OutputSchema};

/// What the loop sends and how long it goes on, validated.
#[derive(Debug, Clone)]
pub(crate) struct SessionConfig {
    /// The task; with `resume`, the new prompt (already appended there) or empty.
    pub(super) prompt: String,
    pub(super) system_prompt: String,
    pub(super) max_turns: u32,
    /// The context window and its clearing.
    pub(super) context: ContextSettings,
    /// `--output-schema`: the final answer is a value valid against it.
    pub(super) output_schema: Option<OutputSchema>,
    /// Corrections after an answer that does not match (`--max-schema-retries`).
    pub(super) max_schema_retries: u32,
    /// `--resume` / `--continue`: the conversation to go on with.
    pub(super) resume: Option<Resumed>,
    /// `--subagent-max-turns`: turns one Task sub-agent may take.
    pub(super) subagent_max_turns: u32,
}

impl SessionConfig {
    /// The checks of this part's plain flags, before anything is read.
    pub(super) fn check_flags(args: &RunArgs) -> Result<(), Error> {
        if args.max_turns == 0 {
            return Err(Error::Usage("--max-turns must be at least 1".into()));
        }
        if args.subagent_max_turns == 0 {
            return Err(Error::Usage(
                "--subagent-max-turns must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// After `check_flags`. `prompt` and `resume` were read first (`resumed_session`, `prompt::task`);
    /// `add_dirs` are named in the system prompt.
    pub(super) fn from_args(
        args: &RunArgs,
        prompt: String,
        resume: Option<Resumed>,
        workspace: &Path,
        add_dirs: &[PathBuf],
        skill_catalog: Option<&str>,
    ) -> Result<Self, Error> {
        let mut system_prompt = system_prompt::system_prompt(
            workspace,
            add_dirs,
            args.system.as_deref(),
            args.append_system_prompt.as_deref(),
            args.project_instructions.as_ref(),
        )?;
        let output_schema = match &args.session.output_schema {
            Some(arg) => Some(OutputSchema::from_arg(arg).map_err(Error::Usage)?),
            None => None,
        };
        if output_schema.is_some() {
            system_prompt.push_str(structured::SYSTEM_PROMPT_NOTE);
        }
        // After any `--system`: the skills stay loadable whatever the prompt says.
        if let Some(c) = skill_catalog {
            system_prompt.push_str("\n\n");
            system_prompt.push_str(c);
        }
        Ok(SessionConfig {
            prompt,
            system_prompt,
            max_turns: args.max_turns,
            context: ContextSettings::from_args(&args.context).map_err(Error::Usage)?,
            output_schema,
            max_schema_retries: args.session.max_schema_retries,
            resume,
            subagent_max_turns: args.subagent_max_turns,
        })
    }

    pub(crate) fn subagent_max_turns(&self) -> u32 {
        self.subagent_max_turns
    }

    pub(crate) fn prompt(&self) -> &str {
        &self.prompt
    }
    pub(crate) fn system_prompt(&self) -> &str {
        &self.system_prompt
    }
    pub(crate) fn max_turns(&self) -> u32 {
        self.max_turns
    }
    pub(crate) fn context(&self) -> &ContextSettings {
        &self.context
    }
    pub(crate) fn output_schema(&self) -> Option<&OutputSchema> {
        self.output_schema.as_ref()
    }
    pub(crate) fn max_schema_retries(&self) -> u32 {
        self.max_schema_retries
    }
    pub(crate) fn resume(&self) -> Option<&Resumed> {
        self.resume.as_ref()
    }
}

/// `--resume FILE` / `--continue`: the transcript to go on with, and the workspace: `-C`,
/// else the transcript's own (with `--continue`, the one whose index names it).
pub(super) fn resumed_session(args: &RunArgs) -> Result<(PathBuf, Option<Resumed>), Error> {
    if args.session.continue_ {
        let workspace = workspace_root(args.cwd.as_deref())?;
        let path = resume::latest_in_index(&workspace).map_err(Error::Usage)?;
        let resumed = resume::load(&path).map_err(Error::Usage)?;
        return Ok((workspace, Some(resumed)));
    }
    let Some(path) = &args.session.resume else {
        return Ok((workspace_root(args.cwd.as_deref())?, None));
    };
    let resumed = resume::load(path).map_err(Error::Usage)?;
    let workspace = match (&args.cwd, &resumed.workspace) {
        (None, Some(w)) => w
            .canonicalize()
            .ok()
            .filter(|w| w.is_dir())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--resume {}: the transcript's workspace {} is not a directory here; \
                     pass -C DIR",
                    path.display(),
                    w.display()
                ))
            })?,
        _ => workspace_root(args.cwd.as_deref())?,
    };
    Ok((workspace, Some(resumed)))
}

fn workspace_root(cwd: Option<&Path>) -> Result<PathBuf, Error> {
    let dir = match cwd {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Error::Usage(format!("cannot read the current directory: {e}")))?,
    };
    let canon = dir
        .canonicalize()
        .map_err(|e| Error::Usage(format!("-C/--cwd {}: {e}", dir.display())))?;
    if !canon.is_dir() {
        return Err(Error::Usage(format!(
            "-C/--cwd {}: not a directory",
            dir.display()
        )));
    }
    Ok(canon)
}
