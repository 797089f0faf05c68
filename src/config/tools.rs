//! The tools part of `Config`: which tools are enabled, where the file tools may go
//! (`--add-dir`), the permission rules and hooks, the Bash sandbox, the child
//! environment and the MCP servers. Read where the run's registry, `ToolContext`,
//! `PolicyGate` and MCP servers are built (`commands::run`).

use std::path::{Path, PathBuf};

use crate::config::cli::{OnDeny, ProviderKind, RunArgs, SandboxMode, SecurityArgs};
use crate::config::env::Env;
use crate::config::settings::SettingsFiles;
use crate::error::Error;
use crate::mcp::McpSettings;
use crate::policy::Settings;
use crate::process::sandbox::{self, SandboxSpec};
use crate::tools::registry::{Registry, ToolSelection};

/// Whether a run offers apply_patch instead of WriteFile and EditFile when
/// `--edit-tool` is not given: for GPT and o-series models (`gpt-…`, `o1`, `o3`,
/// `o4-mini`, `codex-…`, also behind a gateway's `vendor/` prefix) on either OpenAI
/// provider, which are trained on its patch format.
pub(super) fn patch_edits_by_default(kind: ProviderKind, model: &str) -> bool {
    if !matches!(kind, ProviderKind::Openai | ProviderKind::OpenaiResponses) {
        return false;
    }
    let model = model.to_ascii_lowercase();
    let name = model.rsplit('/').next().unwrap_or(&model);
    let o_series = name.starts_with('o') && name[1..].starts_with(|c: char| c.is_ascii_digit());
    name.starts_with("gpt-") || name.starts_with("gpt5") || o_series || name.contains("codex")
}
/// The highest `--max-background`: each background command holds two threads and a
/// process tree for the whole run; more than this is a runaway, not a plan.
const MAX_BACKGROUND: usize = 32;

/// What the model may call, and under which rules, validated.
#[derive(Debug, Clone)]
pub(crate) struct ToolConfig {
    /// The enabled tools, with `--bash-timeout` (the one place it lives).
    pub(super) selection: ToolSelection,
    /// Canonical `--add-dir` directories: the file tools' other roots.
    pub(super) add_dirs: Vec<PathBuf>,
    /// Permission rules and hooks from the settings files and the tool flags.
    pub(super) settings: Settings,
    pub(super) on_deny: OnDeny,
    /// `--permission-prompt` and `--ask-by-default`.
    pub(super) permission_prompt: (crate::config::cli::PermissionPrompt, bool),
    /// `--client-files`: (read, write) through the client.
    pub(super) client_files: (bool, bool),
    /// The Bash sandbox, checked against the kernel.
    pub(super) sandbox: SandboxSpec,
    /// How the commands' environment is built (`--command-env`, `--command-env-pass`,
    /// `--keep-env`, `commandEnv`).
    pub(super) command_env: crate::util::secrets::EnvPolicy,
    /// MCP servers and their flags.
    pub(super) mcp: McpSettings,
}

impl ToolConfig {
    /// The checks of this part's plain flags, before anything is read.
    pub(super) fn check_flags(args: &RunArgs) -> Result<(), Error> {
        if args.bash_timeout.is_zero() {
            return Err(Error::Usage("--bash-timeout must be longer than 0s".into()));
        }
        if args.security.permission_prompt == crate::config::cli::PermissionPrompt::Stdin {
            if !args.ci.jsonl {
                return Err(Error::Usage(
                    "--permission-prompt stdin needs --jsonl (the requests are its events)".into(),
                ));
            }
            if args.prompt.as_deref() == Some("-") || args.stdin_context {
                return Err(Error::Usage(
                    "--permission-prompt stdin reads the answers from stdin: give the task as \
                     PROMPT or --prompt-file"
                        .into(),
                ));
            }
        }
        if !args.security.client_files.is_empty() {
            if !args.ci.jsonl {
                return Err(Error::Usage(
                    "--client-files needs --jsonl (the requests go out among its events)".into(),
                ));
            }
            if args.prompt.as_deref() == Some("-") || args.stdin_context {
                return Err(Error::Usage(
                    "--client-files reads the answers from stdin: give the task as PROMPT or \
                     --prompt-file"
                        .into(),
                ));
            }
        }
        if args.security.ask_by_default
            && args.security.permission_prompt != crate::config::cli::PermissionPrompt::Stdin
        {
            return Err(Error::Usage(
                "--ask-by-default needs --permission-prompt stdin".into(),
            ));
        }
        if args.max_background > MAX_BACKGROUND {
            return Err(Error::Usage(format!(
                "--max-background must be at most {MAX_BACKGROUND}, got {}",
                args.max_background
            )));
        }
        Ok(())
    }

    /// After `check_flags`. `selection` comes from `tool_flags::tool_selection`, checked before the prompt is
    /// read; its rules join the settings files' here.
    pub(super) fn from_args(
        args: &RunArgs,
        mut selection: ToolSelection,
        workspace: &Path,
        files: &SettingsFiles,
        env: &dyn Env,
    ) -> Result<Self, Error> {
        selection.bash_timeout = args.bash_timeout;
        selection.max_background = args.max_background;
        if let Some(list) = &args.allow_web {
            selection.allow_web =
                crate::tools::web_fetch::AllowWeb::parse(list).map_err(Error::Usage)?;
        }
        let add_dirs = extra_dirs(&args.security.add_dir)?;
        let known = Registry::builtin(&ToolSelection::default()).known();
        let mut settings = Settings::from_files(files, &known)?;
        settings.add_rules("--allowed-tools", true, &selection.allow_rules, &known)?;
        settings.add_rules("--disallowed-tools", false, &selection.deny_rules, &known)?;
        settings.deny_opaque |= args.security.deny_opaque;
        let mut sandbox = sandbox_spec(&args.security, &add_dirs, env)?;
        sandbox.egress = super::network::egress_spec(&args.security, files, env)?;
        let mcp = McpSettings::from_args(
            &args.mcp,
            workspace,
            args.security.no_project_settings,
            args.tools.full_auto,
            &|name| env.var(name),
        )
        .map_err(Error::Usage)?;
        Ok(ToolConfig {
            selection,
            add_dirs,
            settings,
            on_deny: args.security.on_deny,
            permission_prompt: (
                args.security.permission_prompt,
                args.security.ask_by_default,
            ),
            client_files: {
                use crate::config::cli::ClientFileOp;
                let on = |op| args.security.client_files.contains(&op);
                (on(ClientFileOp::Read), on(ClientFileOp::Write))
            },
            sandbox,
            command_env: super::command_env::env_policy(&args.security, files)?,
            mcp,
        })
    }

    pub(crate) fn selection(&self) -> &ToolSelection {
        &self.selection
    }
    pub(crate) fn add_dirs(&self) -> &[PathBuf] {
        &self.add_dirs
    }
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }
    pub(crate) fn on_deny(&self) -> OnDeny {
        self.on_deny
    }
    /// `--permission-prompt` and whether `--ask-by-default` is on.
    pub(crate) fn permission_prompt(&self) -> (crate::config::cli::PermissionPrompt, bool) {
        self.permission_prompt
    }
    /// `--client-files`: whether reads, and writes, go through the client.
    pub(crate) fn client_files(&self) -> (bool, bool) {
        self.client_files
    }
    pub(crate) fn sandbox(&self) -> &SandboxSpec {
        &self.sandbox
    }
    pub(crate) fn command_env(&self) -> &crate::util::secrets::EnvPolicy {
        &self.command_env
    }
    pub(crate) fn mcp(&self) -> &McpSettings {
        &self.mcp
    }
}

/// `--add-dir`: each an existing directory, canonical, listed once.
fn extra_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let canon = dir
            .canonicalize()
            .map_err(|e| Error::Usage(format!("--add-dir {}: {e}", dir.display())))?;
        if !canon.is_dir() {
            return Err(Error::Usage(format!(
                "--add-dir {}: not a directory",
                dir.display()
            )));
        }
        if !out.contains(&canon) {
            out.push(canon);
        }
    }
    Ok(out)
}

/// `--sandbox`, `--writable`, `--no-network`, validated, and refused when the kernel
/// cannot enforce them (never silently downgraded). Under `workspace-write` the
/// `--add-dir` directories are writable too.
fn sandbox_spec(
    args: &SecurityArgs,
    add_dirs: &[PathBuf],
    env: &dyn Env,
) -> Result<SandboxSpec, Error> {
    if !args.writable.is_empty() && args.sandbox != SandboxMode::WorkspaceWrite {
        return Err(Error::Usage(
            "--writable only applies with --sandbox workspace-write".into(),
        ));
    }
    let mut writable = Vec::new();
    for dir in &args.writable {
        let canon = dir
            .canonicalize()
            .map_err(|e| Error::Usage(format!("--writable {}: {e}", dir.display())))?;
        if !canon.is_dir() {
            return Err(Error::Usage(format!(
                "--writable {}: not a directory",
                dir.display()
            )));
        }
        writable.push(canon);
    }
    if args.sandbox == SandboxMode::WorkspaceWrite {
        for d in add_dirs {
            if !writable.contains(d) {
                writable.push(d.clone());
            }
        }
    }
    let spec = SandboxSpec {
        mode: args.sandbox,
        writable,
        no_network: args.no_network,
        egress: None,
    };
    if !spec.is_off() {
        let abi = sandbox::kernel_abi(env.var(sandbox::TEST_ABI_ENV).as_deref());
        spec.check_kernel(abi).map_err(Error::Usage)?;
    }
    Ok(spec)
}
