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
pub(crate) mod output;
mod prompt;
pub(crate) mod provider;
pub(crate) mod session;
pub(crate) mod settings;
mod system_prompt;
mod tool_flags;
pub(crate) mod tools;

pub(crate) use tool_flags::tool_selection;

use std::path::{Path, PathBuf};

use crate::config::ci::CiConfig;
use crate::config::cli::RunArgs;
use crate::config::output::OutputConfig;
use crate::config::provider::ProviderConfig;
use crate::config::session::SessionConfig;
use crate::config::settings::{SettingsFiles, SettingsSources};
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
}

/// The environment as config sees it: injectable so tests need not mutate the process env.
pub(crate) trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

pub(crate) struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Config {
    /// The workspace and the resumed transcript come first (the new prompt is appended
    /// to it), then the tool names (a bad `--allowed-tools` is reported before stdin is
    /// read, as it always was), the task, each part's flag checks, and one builder per
    /// part.
    pub(crate) fn from_args(args: &RunArgs, env: &dyn Env) -> Result<Config, Error> {
        let (workspace, mut resume) = session::resumed_session(args)?;
        let selection = tool_selection(&args.tools)?;
        let (prompt, stdin_warning) = prompt::task(args, resume.as_mut())?;
        let mut warnings: Vec<String> = stdin_warning.into_iter().collect();
        // The plain numbers first: a wrong one is named before a missing key or file.
        SessionConfig::check_flags(args)?;
        ProviderConfig::check_flags(args)?;
        ToolConfig::check_flags(args)?;
        CiConfig::check_flags(args)?;
        let output = OutputConfig::from_args(args)?;
        let provider = ProviderConfig::from_args(args, env, resume.as_ref(), &mut warnings)?;
        // Read once: policy takes `permissions` and `hooks`, the budget `prices`.
        let files = SettingsFiles::read(&SettingsSources {
            workspace: &workspace,
            files: &args.security.settings,
            no_project_settings: args.security.no_project_settings,
        })?;
        let tools = ToolConfig::from_args(args, selection, &workspace, &files, env)?;
        let session = SessionConfig::from_args(args, prompt, resume, &workspace, tools.add_dirs())?;
        let ci = CiConfig::from_args(args, &files, &provider)?;
        Ok(Config {
            workspace,
            warnings,
            provider,
            tools,
            session,
            ci,
            output,
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
            },
            tools: ToolConfig {
                selection: Default::default(),
                add_dirs: Vec::new(),
                settings: Default::default(),
                on_deny: Default::default(),
                sandbox: Default::default(),
                keep_env: Vec::new(),
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
            },
            ci: CiConfig::default(),
            output: OutputConfig {
                json: true,
                jsonl: false,
                output_file: None,
                verbosity: crate::util::output::Verbosity::Quiet,
                keep_spill: false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::cli::{OnDeny, ProviderKind, SandboxMode};
    use crate::process::sandbox;
    use clap::Parser;

    struct FakeEnv(Vec<(&'static str, &'static str)>);
    impl Env for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn parse(args: &[&str]) -> RunArgs {
        let mut v = vec!["agent", "run"];
        v.extend_from_slice(args);
        match crate::config::cli::Cli::try_parse_from(v).unwrap().command {
            crate::config::cli::Command::Run(r) => *r,
            _ => unreachable!(),
        }
    }

    #[test]
    fn thinking_flags_add_the_interleaved_beta_only_where_it_applies() {
        let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]);
        let betas = |args: &[&str]| {
            Config::from_args(&parse(args), &env)
                .unwrap()
                .provider()
                .request()
                .betas
                .clone()
        };
        let interleaved = crate::model::provider::anthropic::INTERLEAVED_THINKING_BETA.to_string();
        assert_eq!(
            betas(&["hi", "--effort", "low"]),
            std::slice::from_ref(&interleaved)
        );
        assert_eq!(
            betas(&["hi", "--thinking-budget", "2048", "--betas", "x-1"]),
            ["x-1".to_string(), interleaved]
        );
        assert!(betas(&["hi"]).is_empty());
        assert!(betas(&["hi", "--effort", "high", "-m", "claude-3-7-sonnet-latest"]).is_empty());
        let openai = FakeEnv(vec![("AGENT_PROVIDER", "openai"), ("AGENT_MODEL", "qwen")]);
        let c = Config::from_args(&parse(&["hi", "--effort", "medium"]), &openai).unwrap();
        assert!(c.provider().request().betas.is_empty());
        assert_eq!(
            c.provider().request().effort,
            Some(crate::config::cli::Effort::Medium)
        );
    }

    /// A plain bad number is named before what the environment or the files lack.
    #[test]
    fn flag_checks_come_before_the_key_and_the_files() {
        for (args, needle) in [
            (vec!["hi", "--max-turns", "0"], "--max-turns"),
            (vec!["hi", "--max-tokens", "0"], "--max-tokens"),
            (vec!["hi", "--bash-timeout", "0s"], "--bash-timeout"),
            (vec!["hi", "--timeout", "0s"], "--timeout"),
            (vec!["hi", "--idle-timeout", "0s"], "--idle-timeout"),
        ] {
            let mut args = args;
            args.extend(["--settings", "/no/such/settings.json"]);
            let e = Config::from_args(&parse(&args), &FakeEnv(vec![])).unwrap_err();
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn missing_key_names_the_variable() {
        let e = Config::from_args(&parse(&["hi"]), &FakeEnv(vec![])).unwrap_err();
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn fallback_model_must_name_another_model() {
        let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "k"), ("AGENT_MODEL", "m-env")]);
        let c = Config::from_args(&parse(&["hi", "--fallback-model", " other "]), &env).unwrap();
        assert_eq!(c.provider().fallback_model(), Some("other"));
        let c = Config::from_args(&parse(&["hi"]), &env).unwrap();
        assert_eq!(c.provider().fallback_model(), None);
        for (args, says) in [
            (vec!["hi", "--fallback-model", " "], "is empty"),
            (
                vec!["hi", "--fallback-model", "m-env"],
                "the run's model too",
            ),
            (
                vec!["hi", "-m", "a", "--fallback-model", "a"],
                "the run's model too",
            ),
        ] {
            let e = Config::from_args(&parse(&args), &env).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            let e = e.to_string();
            assert!(e.contains("--fallback-model") && e.contains(says), "{e}");
        }
        // A cost limit must be computable on the fallback too.
        let e = Config::from_args(
            &parse(&[
                "hi",
                "-m",
                "claude-sonnet-4-5",
                "--fallback-model",
                "no-such-price",
                "--max-cost-usd",
                "1",
            ]),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--fallback-model") && e.contains("price"), "{e}");
    }

    #[test]
    fn env_and_flags() {
        let env = FakeEnv(vec![
            ("ANTHROPIC_API_KEY", "k"),
            ("AGENT_MODEL", "m-env"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ]);
        let c = Config::from_args(&parse(&["hi", "--full-auto"]), &env).unwrap();
        assert_eq!(c.provider().model(), "m-env");
        assert_eq!(c.provider().base_url(), "http://127.0.0.1:9");
        assert!(c.tools().selection().allow_bash && c.tools().selection().allow_write);
        let c = Config::from_args(
            &parse(&["hi", "-m", "m-flag", "--base-url", "https://x"]),
            &env,
        )
        .unwrap();
        assert_eq!(c.provider().model(), "m-flag");
        assert_eq!(c.provider().base_url(), "https://x");
    }

    #[test]
    fn rejects_bad_values() {
        let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]);
        for (args, needle) in [
            (vec!["hi", "--max-turns", "0"], "--max-turns"),
            (vec!["hi", "--allowed-tools", "Nope"], "--allowed-tools"),
            (vec!["hi", "--disallowed-tools", "X"], "--disallowed-tools"),
            (vec!["  "], "empty"),
            (vec!["hi", "-C", "/definitely/not/here"], "--cwd"),
            (vec!["hi", "--base-url", "ftp://x"], "--base-url"),
            (vec!["hi", "--verify", " "], "--verify"),
            (
                vec!["hi", "--verify", "true", "--max-verify", "0"],
                "--max-verify",
            ),
            (vec!["hi", "--max-tool-calls", "0"], "--max-tool-calls"),
            (vec!["hi", "--max-cost-usd=-1"], "--max-cost-usd"),
            (vec!["hi", "--max-cost-usd", "NaN"], "--max-cost-usd"),
            (
                vec!["hi", "-m", "my-model", "--max-cost-usd", "1"],
                "\"prices\"",
            ),
            (
                vec!["hi", "--settings", "/no/such/settings.json"],
                "settings.json",
            ),
        ] {
            let e = Config::from_args(&parse(&args), &env).unwrap_err();
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn sandbox_flags_are_validated_against_the_kernel() {
        let no_ll = FakeEnv(vec![
            ("ANTHROPIC_API_KEY", "k"),
            (sandbox::TEST_ABI_ENV, "0"),
        ]);
        let new_ll = FakeEnv(vec![
            ("ANTHROPIC_API_KEY", "k"),
            (sandbox::TEST_ABI_ENV, "7"),
        ]);
        for (args, needle) in [
            (vec!["hi", "--writable", "/tmp"], "--writable only applies"),
            (
                vec![
                    "hi",
                    "--sandbox",
                    "workspace-write",
                    "--writable",
                    "/no/such/dir",
                ],
                "--writable /no/such/dir",
            ),
            (vec!["hi", "--sandbox", "read-only"], "no Landlock support"),
            (vec!["hi", "--no-network"], "--no-network needs"),
        ] {
            let env = if needle.contains("Landlock") || needle.contains("network") {
                &no_ll
            } else {
                &new_ll
            };
            let e = Config::from_args(&parse(&args), env).unwrap_err();
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
        let c = Config::from_args(
            &parse(&[
                "hi",
                "--sandbox",
                "workspace-write",
                "--writable",
                "/tmp",
                "--no-network",
            ]),
            &new_ll,
        )
        .unwrap();
        assert_eq!(c.tools().sandbox().mode, SandboxMode::WorkspaceWrite);
        assert!(c.tools().sandbox().no_network);
        assert_eq!(
            c.tools().sandbox().writable,
            vec![PathBuf::from("/tmp").canonicalize().unwrap()]
        );
        // --add-dir directories are writable for Bash under workspace-write only, and
        // the system prompt names them.
        let extra = tempfile::tempdir().unwrap();
        let extra_s = extra.path().to_str().unwrap();
        let canon = extra.path().canonicalize().unwrap();
        let c = Config::from_args(
            &parse(&["hi", "--sandbox", "workspace-write", "--add-dir", extra_s]),
            &new_ll,
        )
        .unwrap();
        assert_eq!(c.tools().sandbox().writable, vec![canon.clone()]);
        assert_eq!(c.tools().add_dirs(), vec![canon.clone()]);
        assert!(
            c.session()
                .system_prompt()
                .contains(&format!("by absolute path: {}.", canon.display())),
            "{}",
            c.session().system_prompt()
        );
        let c = Config::from_args(
            &parse(&["hi", "--sandbox", "read-only", "--add-dir", extra_s]),
            &new_ll,
        )
        .unwrap();
        assert!(c.tools().sandbox().writable.is_empty());
        let e =
            Config::from_args(&parse(&["hi", "--add-dir", "/no/such/dir"]), &new_ll).unwrap_err();
        assert!(e.to_string().contains("--add-dir /no/such/dir"), "{e}");
        assert_eq!(e.exit_code(), 2);
        // Off needs nothing from the kernel.
        assert!(Config::from_args(&parse(&["hi"]), &no_ll).is_ok());
        let c = Config::from_args(
            &parse(&["hi", "--on-deny", "fail", "--keep-env", "GH_TOKEN"]),
            &no_ll,
        )
        .unwrap();
        assert_eq!(c.tools().on_deny(), OnDeny::Fail);
        assert_eq!(c.tools().keep_env(), vec!["GH_TOKEN".to_string()]);
    }

    #[test]
    fn openai_provider_key_base_url_and_model() {
        let env = FakeEnv(vec![("AGENT_PROVIDER", "OpenAI"), ("AGENT_MODEL", "qwen")]);
        let c = Config::from_args(&parse(&["hi"]), &env).unwrap();
        assert_eq!(c.provider().kind(), ProviderKind::Openai);
        assert_eq!(
            c.provider().api_key(),
            "",
            "the key is optional for local servers"
        );
        assert_eq!(c.provider().base_url(), "https://api.openai.com/v1");
        assert_eq!(c.provider().model(), "qwen");
        let env = FakeEnv(vec![
            ("OPENAI_API_KEY", "sk-o"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"),
            ("ANTHROPIC_BASE_URL", "http://wrong"),
            ("ANTHROPIC_API_KEY", "sk-a"),
        ]);
        let c =
            Config::from_args(&parse(&["hi", "--provider", "openai", "-m", "x"]), &env).unwrap();
        assert_eq!(
            (c.provider().api_key(), c.provider().base_url()),
            ("sk-o", "http://127.0.0.1:8000/v1")
        );
        // The flag beats the environment, and anthropic stays the default.
        let env = FakeEnv(vec![
            ("AGENT_PROVIDER", "openai"),
            ("ANTHROPIC_API_KEY", "k"),
        ]);
        let c = Config::from_args(&parse(&["hi", "--provider", "anthropic"]), &env).unwrap();
        assert_eq!(c.provider().kind(), ProviderKind::Anthropic);
        let c = Config::from_args(&parse(&["hi"]), &FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]));
        assert_eq!(c.unwrap().provider().kind(), ProviderKind::Anthropic);
    }

    #[test]
    fn openai_usage_errors_name_what_to_fix() {
        let no_model = Config::from_args(&parse(&["hi", "--provider", "openai"]), &FakeEnv(vec![]));
        let e = no_model.unwrap_err();
        assert!(
            e.to_string().contains("--model") && e.to_string().contains("AGENT_MODEL"),
            "{e}"
        );
        assert_eq!(e.exit_code(), 2);
        let env = FakeEnv(vec![("AGENT_PROVIDER", "gemini")]);
        let e = Config::from_args(&parse(&["hi"]), &env).unwrap_err();
        assert!(e.to_string().contains("AGENT_PROVIDER"), "{e}");
        let env = FakeEnv(vec![("OPENAI_BASE_URL", "localhost:11434")]);
        let e = Config::from_args(&parse(&["hi", "--provider", "openai", "-m", "m"]), &env)
            .unwrap_err();
        assert!(e.to_string().contains("OPENAI_BASE_URL"), "{e}");
        // Replay needs neither key nor model.
        let c = Config::from_args(
            &parse(&["hi", "--provider", "openai", "--replay", "x.jsonl"]),
            &FakeEnv(vec![]),
        );
        assert!(c.is_ok());
    }
}
