//! Turns the command line and the environment into one validated, immutable `Config`.
//! Every bad input is an `Error::Usage` (exit 2) naming the flag or variable to fix,
//! raised here, before any request is made.
//!
//! `Config` is a few parts, cut by who reads them: `provider` (the provider factory and
//! the request), `tools` (registry, tool context, policy gate, MCP), `session` (the
//! loop), `ci` (`CiRun`, the deadline) and `output` (logging, stdout, `-o`). Each part
//! is built once by its own `from_args` in its own file and read through accessors
//! (ripgrep's `lowargs.rs` → `hiargs.rs`: private fields, built once, read-only), so a
//! new flag touches `cli.rs`, one part and its consumer.

pub(crate) mod ci;
pub(crate) mod cli;
mod command_env;
mod env;
pub(crate) mod images;
mod network;
pub(crate) mod output;
mod prompt;
pub(crate) mod provider;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod skills;
pub(crate) mod system_prompt;
mod tool_flags;
pub(crate) mod tools;

pub(crate) use env::{Env, ProcessEnv};
pub(crate) use tool_flags::tool_selection;

use std::path::{Path, PathBuf};

use crate::config::ci::CiConfig;
use crate::config::cli::RunArgs;
use crate::config::output::OutputConfig;
use crate::config::provider::ProviderConfig;
use crate::config::session::SessionConfig;
use crate::config::settings::{SettingsFiles, SettingsSources};
use crate::config::skills::SkillsConfig;
use crate::config::tools::ToolConfig;
use crate::error::Error;

/// Everything `agent run` needs, validated.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// Canonical workspace root.
    workspace: PathBuf,
    /// Warnings found while reading the command line, logged once logging is set up.
    warnings: Vec<String>,
    provider: ProviderConfig,
    tools: ToolConfig,
    session: SessionConfig,
    ci: CiConfig,
    output: OutputConfig,
    skills: SkillsConfig,
}

impl Config {
    /// The workspace and the resumed transcript come first (the new prompt is appended
    /// to it), then the tool names (a bad `--allowed-tools` is reported before stdin is
    /// read, as it always was), the task, each part's flag checks, and one builder per
    /// part.
    pub(crate) fn from_args(args: &RunArgs, env: &dyn Env) -> Result<Config, Error> {
        let (workspace, mut resume) = session::resumed_session(args)?;
        let mut selection = tool_selection(&args.tools)?;
        let (mut prompt, stdin_warning) = prompt::task(args, resume.as_mut())?;
        let mut warnings: Vec<String> = stdin_warning.into_iter().collect();
        // The plain numbers first: a wrong one is named before a missing key or file.
        SessionConfig::check_flags(args)?;
        ProviderConfig::check_flags(args)?;
        ToolConfig::check_flags(args)?;
        CiConfig::check_flags(args)?;
        let output = OutputConfig::from_args(args, env, &mut warnings)?;
        let provider = ProviderConfig::from_args(args, env, resume.as_ref(), &mut warnings)?;
        // Read once: policy takes `permissions` and `hooks`, the budget `prices`.
        let files = SettingsFiles::read(&SettingsSources {
            workspace: &workspace,
            files: &args.security.settings,
            no_project_settings: args.security.no_project_settings,
        })?;
        if args.tools.edit_tool.is_none() {
            selection.patch_edits =
                tools::patch_edits_by_default(provider.kind(), provider.model());
        }
        let tools = ToolConfig::from_args(args, selection, &workspace, &files, env)?;
        let skills =
            SkillsConfig::from_args(&args.skills, &workspace, env, &mut prompt, &mut warnings)?;
        let catalog = skills.catalog(tools.selection());
        if let Some((_, n)) = &catalog
            && *n > 0
        {
            warnings.push(format!(
                "skills: the catalog is capped at {} characters: {n} skills are listed by name only or not at all",
                crate::skills::MAX_CATALOG_CHARS
            ));
        }
        let catalog = catalog.map(|(c, _)| c);
        let session = SessionConfig::from_args(
            args,
            prompt,
            resume,
            &workspace,
            tools.add_dirs(),
            catalog.as_deref(),
        )?;
        let ci = CiConfig::from_args(args, &files, &provider)?;
        Ok(Config {
            workspace,
            warnings,
            provider,
            tools,
            session,
            ci,
            output,
            skills,
        })
    }

    /// Canonical workspace root.
    pub(crate) fn workspace(&self) -> &Path {
        &self.workspace
    }
    /// Logged once logging is set up.
    pub(crate) fn warnings(&self) -> &[String] {
        &self.warnings
    }
    pub(crate) fn provider(&self) -> &ProviderConfig {
        &self.provider
    }
    pub(crate) fn tools(&self) -> &ToolConfig {
        &self.tools
    }
    pub(crate) fn session(&self) -> &SessionConfig {
        &self.session
    }
    pub(crate) fn ci(&self) -> &CiConfig {
        &self.ci
    }
    pub(crate) fn output(&self) -> &OutputConfig {
        &self.output
    }
    pub(crate) fn skills(&self) -> &SkillsConfig {
        &self.skills
    }

    /// A sub-agent's settings: the run's, with its own system prompt, task and turn
    /// limit, and none of the parent's final-answer checks (`--verify`,
    /// `--output-schema`), resumed conversation or deadline.
    pub(crate) fn for_subagent(
        &self,
        system_prompt: String,
        prompt: String,
        max_turns: u32,
    ) -> Config {
        let mut c = self.clone();
        c.session.system_prompt = system_prompt;
        c.session.prompt = prompt;
        c.session.max_turns = max_turns;
        c.session.output_schema = None;
        c.session.resume = None;
        c.session.images.attached = Vec::new();
        c.ci.verify = None;
        c.ci.timeout = None;
        c
    }

    /// The one hand-built `Config`, for tests: workspace `dir`, prompt "task", model "m"
    /// on an unreachable Anthropic URL (no key, no retries), 10 turns, the default
    /// read-only tools, `--json`, quiet, no CI features.
    #[cfg(test)]
    pub(crate) fn for_test(dir: &Path) -> Config {
        use std::time::Duration;
        Config {
            workspace: dir.to_path_buf(),
            warnings: Vec::new(),
            provider: ProviderConfig {
                kind: cli::ProviderKind::Anthropic,
                model: "m".into(),
                fallback_model: None,
                max_tokens: 100,
                base_url: "http://127.0.0.1:9".into(),
                api_key: String::new(),
                max_retries: 0,
                idle_timeout: Duration::from_secs(5),
                request: Default::default(),
                gateway: Default::default(),
                replay: None,
                record: None,
                region: None,
                project: None,
            },
            tools: ToolConfig {
                selection: Default::default(),
                add_dirs: Vec::new(),
                settings: Default::default(),
                on_deny: Default::default(),
                permission_prompt: Default::default(),
                client_files: (false, false),
                sandbox: Default::default(),
                command_env: Default::default(),
                mcp: Default::default(),
            },
            session: SessionConfig {
                prompt: "task".into(),
                system_prompt: "sys".into(),
                max_turns: 10,
                context: Default::default(),
                output_schema: None,
                max_schema_retries: 3,
                resume: None,
                subagent_max_turns: 20,
                images: Default::default(),
            },
            ci: CiConfig::default(),
            output: OutputConfig {
                json: true,
                jsonl: false,
                partial_messages: false,
                output_file: None,
                trajectory_file: None,
                verbosity: crate::util::output::Verbosity::Quiet,
                keep_spill: false,
                otel: Default::default(),
            },
            skills: Default::default(),
        }
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
