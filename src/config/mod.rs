//! Turns the command line and the environment into one validated, immutable `Config`.
//! Every bad input is an `Error::Usage` (exit 2) naming the flag or variable to fix,
//! raised here, before any request is made.

pub(crate) mod cli;
mod prompt;
pub(crate) mod settings;
mod system_prompt;
mod tool_flags;

pub(crate) use tool_flags::tool_selection;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;

use crate::config::cli::{CiArgs, ProviderKind, RequestArgs, RunArgs, SecurityArgs};
use crate::config::cli::{OnDeny, SandboxMode};
use crate::config::settings::{SettingsFiles, SettingsSources};
use crate::error::Error;
use crate::model::provider::http::Gateway;
use crate::policy::Settings;
use crate::process::sandbox::{self, SandboxSpec};
use crate::record::resume::{self, Resumed};
use crate::run::budget::{Budget, Prices};
use crate::run::structured::{self, OutputSchema};
use crate::run::verify::VerifySpec;
use crate::tools::registry::{Registry, ToolSelection};
use crate::util::output::Verbosity;

/// A current Claude Sonnet model id.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// Where `--provider openai` goes without `--base-url` / `OPENAI_BASE_URL`.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Everything `agent run` needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub prompt: String,
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// Canonical `--add-dir` directories: the file tools' other roots.
    pub add_dirs: Vec<PathBuf>,
    pub json: bool,
    pub output_file: Option<PathBuf>,
    pub verbosity: Verbosity,
    /// Which API `model` is reached through (a cassette's header decides on replay).
    pub provider: ProviderKind,
    pub model: String,
    /// `--fallback-model`: asked once `model`'s retries end overloaded (never `model`).
    pub fallback_model: Option<String>,
    pub max_tokens: u32,
    pub base_url: String,
    /// Empty with `--replay`, which needs no key, and with an OpenAI-compatible server
    /// that takes none.
    pub api_key: String,
    pub system_prompt: String,
    pub max_turns: u32,
    pub timeout: Option<Duration>,
    pub max_retries: u32,
    pub idle_timeout: Duration,
    /// `--tool-choice` and the other request options.
    pub request: RequestArgs,
    /// `ANTHROPIC_AUTH_TOKEN`, `--header` and `ANTHROPIC_CUSTOM_HEADERS`.
    pub gateway: Gateway,
    pub tools: ToolSelection,
    pub replay: Option<PathBuf>,
    pub record: Option<PathBuf>,
    /// The context window and its clearing.
    pub context: crate::run::context::ContextSettings,
    /// `--jsonl`: events on stdout instead of the text or the JSON document.
    pub jsonl: bool,
    pub verify: Option<VerifySpec>,
    pub budget: Budget,
    pub prices: Prices,
    /// Permission rules and hooks from the settings files.
    pub settings: Settings,
    pub on_deny: OnDeny,
    /// The Bash sandbox, checked against the kernel.
    pub sandbox: SandboxSpec,
    /// Secret-looking variables kept for Bash and hooks (`--keep-env`).
    pub keep_env: Vec<String>,
    /// Warnings found while reading the command line, logged once logging is set up.
    pub warnings: Vec<String>,
    /// `--keep-spill`: the saved outputs outlive the run (they always do with `-o`).
    pub keep_spill: bool,
    /// MCP servers and their flags.
    pub mcp: crate::mcp::McpSettings,
    /// `--output-schema`: the final answer is a value valid against it.
    pub output_schema: Option<OutputSchema>,
    /// Corrections after an answer that does not match (`--max-schema-retries`).
    pub max_schema_retries: u32,
    /// `--resume` / `--continue`: the conversation to go on with, the new prompt (if
    /// any) already appended. `prompt` is then the new prompt, or empty.
    pub resume: Option<Resumed>,
}

/// The environment as config sees it: injectable so tests need not mutate the process env.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Config {
    pub fn from_args(args: &RunArgs, env: &dyn Env) -> Result<Config, Error> {
        let (workspace, mut resume) = resumed_session(args)?;
        let mut tools = tool_selection(&args.tools)?;
        tools.bash_timeout = args.bash_timeout;
        let (prompt, stdin_warning) = match &mut resume {
            None => prompt::read_prompt(args)?,
            Some(r) => {
                let prompt = prompt::read_resume_prompt(args)?;
                resume::append_prompt(&mut r.messages, prompt.as_deref())
                    .map_err(|e| Error::Usage(format!("--resume {}: {e}", r.path.display())))?;
                (prompt.unwrap_or_default(), None)
            }
        };
        if args.max_turns == 0 {
            return Err(Error::Usage("--max-turns must be at least 1".into()));
        }
        if args.max_tokens == 0 {
            return Err(Error::Usage("--max-tokens must be at least 1".into()));
        }
        if args.bash_timeout.is_zero() {
            return Err(Error::Usage("--bash-timeout must be longer than 0s".into()));
        }
        if args.timeout.is_some_and(|t| t.is_zero()) {
            return Err(Error::Usage("--timeout must be longer than 0s".into()));
        }
        if args.idle_timeout.is_zero() {
            return Err(Error::Usage("--idle-timeout must be longer than 0s".into()));
        }
        if args.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(Error::Usage("-m/--model is empty: name a model".into()));
        }
        if let Some(out) = &args.output {
            check_output_file(out)?;
        }
        let provider = provider_kind(args, env)?;
        let api_key = match provider {
            ProviderKind::Anthropic => anthropic_key(args, env)?,
            // Optional: local servers (vLLM, llama.cpp, Ollama) take no key.
            ProviderKind::Openai => env.var("OPENAI_API_KEY").unwrap_or_default(),
        };
        let auth_token = match provider {
            ProviderKind::Anthropic => env.var("ANTHROPIC_AUTH_TOKEN"),
            ProviderKind::Openai => None,
        };
        let custom = env.var("ANTHROPIC_CUSTOM_HEADERS");
        let gateway = Gateway::new(auth_token, &args.request.headers, custom.as_deref())
            .map_err(Error::Usage)?;
        let (base_var, default_base) = match provider {
            ProviderKind::Anthropic => ("ANTHROPIC_BASE_URL", DEFAULT_BASE_URL),
            ProviderKind::Openai => ("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL),
        };
        let base_url = args
            .base_url
            .clone()
            .or_else(|| env.var(base_var))
            .unwrap_or_else(|| default_base.to_string());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Error::Usage(format!(
                "--base-url / {base_var} must start with http:// or https://, got {base_url:?}"
            )));
        }
        // A resumed run keeps its model unless -m says otherwise.
        let resumed_model = resume.as_ref().and_then(|r| r.model.clone());
        let model_resumed = args.model.is_none() && resumed_model.is_some();
        let model = match args
            .model
            .clone()
            .or(resumed_model)
            .or_else(|| env.var("AGENT_MODEL"))
        {
            Some(m) => m,
            // No default fits every OpenAI-compatible server: each serves its own models.
            None if provider == ProviderKind::Openai && args.replay.is_none() => {
                return Err(Error::Usage(
                    "--provider openai needs a model: pass -m/--model MODEL or set \
                     AGENT_MODEL (the name your server serves, e.g. qwen2.5-coder:7b)"
                        .into(),
                ));
            }
            None => DEFAULT_MODEL.to_string(),
        };
        let mut warnings: Vec<String> = stdin_warning.into_iter().collect();
        let fallback_model = match fallback_model(args.fallback_model.as_deref(), &model) {
            // A transcript that fell back reports the fallback as its model: the resumed
            // run goes on with it, as the first run would have.
            Err(_)
                if model_resumed
                    && args.fallback_model.as_deref().map(str::trim) == Some(&model) =>
            {
                warnings.push(format!(
                    "the resumed transcript already ran on the --fallback-model {model}; \
                     it goes on with it (-m names another model)"
                ));
                None
            }
            other => other?,
        };
        let add_dirs = extra_dirs(&args.security.add_dir)?;
        let mut system_prompt = system_prompt::system_prompt(
            &workspace,
            &add_dirs,
            args.system.as_deref(),
            args.append_system_prompt.as_deref(),
        )?;
        let output_schema = match &args.session.output_schema {
            Some(arg) => Some(OutputSchema::from_arg(arg).map_err(Error::Usage)?),
            None => None,
        };
        if output_schema.is_some() {
            system_prompt.push_str(structured::SYSTEM_PROMPT_NOTE);
        }
        let settings_files = SettingsFiles::read(&SettingsSources {
            workspace: &workspace,
            files: &args.security.settings,
            no_project_settings: args.security.no_project_settings,
        })?;
        let known = Registry::builtin(&ToolSelection::default()).known();
        let mut settings = Settings::from_files(&settings_files, &known)?;
        settings.add_rules("--allowed-tools", true, &tools.allow_rules, &known)?;
        settings.add_rules("--disallowed-tools", false, &tools.deny_rules, &known)?;
        let sandbox = sandbox_spec(&args.security, &add_dirs, env)?;
        let mcp = crate::mcp::McpSettings::from_args(
            &args.mcp,
            &workspace,
            args.security.no_project_settings,
            args.tools.full_auto,
            &|name| env.var(name),
        )
        .map_err(Error::Usage)?;
        let (verify, budget, prices) = ci_settings(&args.ci, &settings_files, &model)?;
        let request = request_options(&args.request, provider, &model)?;
        if let Some(fallback) = &fallback_model
            && args.ci.max_cost_usd.is_some()
            && prices.lookup(fallback).is_none()
        {
            return Err(Error::Usage(format!(
                "--max-cost-usd: no price is known for the --fallback-model {fallback:?}; add \
                 it under \"prices\" in the settings file"
            )));
        }
        let verbosity = if args.quiet {
            Verbosity::Quiet
        } else if args.verbose {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        };
        Ok(Config {
            prompt,
            workspace,
            add_dirs,
            json: args.json,
            output_file: args.output.clone(),
            verbosity,
            provider,
            model,
            fallback_model,
            max_tokens: args.max_tokens,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            system_prompt,
            max_turns: args.max_turns,
            timeout: args.timeout,
            max_retries: args.max_retries,
            idle_timeout: args.idle_timeout,
            request,
            gateway,
            tools,
            replay: args.replay.clone(),
            record: args.record.clone(),
            jsonl: args.ci.jsonl,
            verify,
            budget,
            prices,
            settings,
            on_deny: args.security.on_deny,
            sandbox,
            keep_env: args.security.keep_env.clone(),
            warnings,
            keep_spill: args.keep_spill,
            mcp,
            context: crate::run::context::ContextSettings::from_args(&args.context)
                .map_err(Error::Usage)?,
            output_schema,
            max_schema_retries: args.session.max_schema_retries,
            resume,
        })
    }
}

/// `--thinking-budget` and `--effort`, checked against the provider and `--tool-choice`.
/// With Anthropic thinking on a model that interleaves it, the requests also carry the
/// interleaved-thinking beta (so the model thinks after each tool result too).
fn request_options(
    args: &RequestArgs,
    provider: ProviderKind,
    model: &str,
) -> Result<RequestArgs, Error> {
    use crate::model::provider::anthropic::{self, MIN_THINKING_BUDGET};
    if let Some(budget) = args.thinking_budget {
        if provider == ProviderKind::Openai {
            return Err(Error::Usage(
                "--thinking-budget is for the Anthropic API; with --provider openai use \
                 --effort low|medium|high (sent as reasoning_effort)"
                    .into(),
            ));
        }
        if budget < MIN_THINKING_BUDGET {
            return Err(Error::Usage(format!(
                "--thinking-budget must be at least {MIN_THINKING_BUDGET} (the API's \
                 minimum), got {budget}"
            )));
        }
    }
    let mut request = args.clone();
    if provider == ProviderKind::Anthropic && anthropic::thinking_budget(args).is_some() {
        let flag = if args.thinking_budget.is_some() {
            "--thinking-budget"
        } else {
            "--effort"
        };
        if args.tool_choice == Some(crate::config::cli::ToolChoice::Required) {
            return Err(Error::Usage(format!(
                "--tool-choice required cannot be used with {flag}: with thinking on, the \
                 Anthropic API takes only tool_choice auto or none"
            )));
        }
        if anthropic::interleaves_thinking(model) {
            request
                .betas
                .push(anthropic::INTERLEAVED_THINKING_BETA.to_string());
        }
    }
    Ok(request)
}

/// `--fallback-model`, checked against the run's model: an empty id, or the model
/// itself (which would only repeat the retries that just failed), is a usage error.
fn fallback_model(arg: Option<&str>, model: &str) -> Result<Option<String>, Error> {
    let Some(fallback) = arg else {
        return Ok(None);
    };
    let fallback = fallback.trim();
    if fallback.is_empty() {
        return Err(Error::Usage(
            "--fallback-model is empty: name the model to use when the model is overloaded".into(),
        ));
    }
    if fallback == model {
        return Err(Error::Usage(format!(
            "--fallback-model {fallback:?} is the run's model too: name a different model"
        )));
    }
    Ok(Some(fallback.to_string()))
}

/// `--resume FILE` / `--continue`: the transcript to go on with, and the workspace: `-C`,
/// else the transcript's own (with `--continue`, the one whose index names it).
fn resumed_session(args: &RunArgs) -> Result<(PathBuf, Option<Resumed>), Error> {
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

/// `--verify`, the budgets and the price table (SPEC §9), validated.
fn ci_settings(
    ci: &CiArgs,
    settings: &SettingsFiles,
    model: &str,
) -> Result<(Option<VerifySpec>, Budget, Prices), Error> {
    let verify = match &ci.verify {
        Some(c) if c.trim().is_empty() => {
            return Err(Error::Usage("--verify: the command is empty".into()));
        }
        Some(c) => Some(VerifySpec {
            command: c.clone(),
            max_rounds: ci.max_verify,
            timeout: ci.verify_timeout,
        }),
        None => None,
    };
    if ci.max_verify == 0 {
        return Err(Error::Usage("--max-verify must be at least 1".into()));
    }
    if ci.verify_timeout.is_zero() {
        return Err(Error::Usage(
            "--verify-timeout must be longer than 0s".into(),
        ));
    }
    if ci.max_tool_calls == Some(0) {
        return Err(Error::Usage("--max-tool-calls must be at least 1".into()));
    }
    if let Some(x) = ci.max_cost_usd
        && !(x.is_finite() && x > 0.0)
    {
        return Err(Error::Usage(format!(
            "--max-cost-usd must be a positive number of dollars, got {x}"
        )));
    }
    let prices = crate::run::budget::load_prices(settings)?;
    if ci.max_cost_usd.is_some() && prices.lookup(model).is_none() {
        return Err(Error::Usage(format!(
            "--max-cost-usd: no price is known for the model {model:?}; add it under \"prices\" \
             in the settings file ({{\"prices\": {{\"{model}\": {{\"input\": 3, \"output\": 15}}}}}}, \
             USD per million tokens)"
        )));
    }
    Ok((
        verify,
        Budget {
            max_tool_calls: ci.max_tool_calls,
            max_cost_usd: ci.max_cost_usd,
        },
        prices,
    ))
}

/// `--sandbox`, `--writable`, `--no-network`, validated, and refused when the kernel
/// cannot enforce them (never silently downgraded).
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

/// The Bash sandbox; under `workspace-write` the `--add-dir` directories are writable too.
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
    };
    if !spec.is_off() {
        let abi = sandbox::kernel_abi(env.var(sandbox::TEST_ABI_ENV).as_deref());
        spec.check_kernel(abi).map_err(Error::Usage)?;
    }
    Ok(spec)
}

/// `--provider`, else `AGENT_PROVIDER`, else anthropic.
fn provider_kind(args: &RunArgs, env: &dyn Env) -> Result<ProviderKind, Error> {
    if let Some(p) = args.provider {
        return Ok(p);
    }
    match env.var("AGENT_PROVIDER") {
        Some(v) => ProviderKind::from_str(v.trim(), true).map_err(|_| {
            Error::Usage(format!(
                "AGENT_PROVIDER must be `anthropic` or `openai`, got {v:?}"
            ))
        }),
        None => Ok(ProviderKind::Anthropic),
    }
}

/// The Anthropic key: required, except with `--replay`.
fn anthropic_key(args: &RunArgs, env: &dyn Env) -> Result<String, Error> {
    let token = env.var("ANTHROPIC_AUTH_TOKEN").filter(|t| !t.is_empty());
    match (env.var("ANTHROPIC_API_KEY"), &args.replay) {
        (Some(k), _) => Ok(k),
        // A gateway's bearer token stands in for the key (`Gateway::auth_token`).
        (None, _) if token.is_some() => Ok(String::new()),
        (None, Some(_)) => Ok(String::new()),
        (None, None) => Err(Error::Usage(
            "ANTHROPIC_API_KEY is not set: export your Anthropic API key in \
             ANTHROPIC_API_KEY (or use --replay CASSETTE to run offline, or --provider \
             openai for an OpenAI-compatible server)"
                .into(),
        )),
    }
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

/// `-o FILE` must be writable at the end of the run, whatever happens: a missing parent
/// directory or a directory in its place is a usage error now, not a lost transcript.
fn check_output_file(path: &Path) -> Result<(), Error> {
    let shown = path.display();
    if path.is_dir() {
        return Err(Error::Usage(format!(
            "-o/--output {shown}: is a directory, not a file"
        )));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::Usage(format!(
            "-o/--output {shown}: the directory {} does not exist",
            parent.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let betas = |args: &[&str]| Config::from_args(&parse(args), &env).unwrap().request.betas;
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
        assert!(c.request.betas.is_empty());
        assert_eq!(c.request.effort, Some(crate::config::cli::Effort::Medium));
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
        assert_eq!(c.fallback_model.as_deref(), Some("other"));
        let c = Config::from_args(&parse(&["hi"]), &env).unwrap();
        assert_eq!(c.fallback_model, None);
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
        assert_eq!(c.model, "m-env");
        assert_eq!(c.base_url, "http://127.0.0.1:9");
        assert!(c.tools.allow_bash && c.tools.allow_write);
        let c = Config::from_args(
            &parse(&["hi", "-m", "m-flag", "--base-url", "https://x"]),
            &env,
        )
        .unwrap();
        assert_eq!(c.model, "m-flag");
        assert_eq!(c.base_url, "https://x");
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
        assert_eq!(c.sandbox.mode, SandboxMode::WorkspaceWrite);
        assert!(c.sandbox.no_network);
        assert_eq!(
            c.sandbox.writable,
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
        assert_eq!(c.sandbox.writable, vec![canon.clone()]);
        assert_eq!(c.add_dirs, vec![canon.clone()]);
        assert!(
            c.system_prompt
                .contains(&format!("by absolute path: {}.", canon.display())),
            "{}",
            c.system_prompt
        );
        let c = Config::from_args(
            &parse(&["hi", "--sandbox", "read-only", "--add-dir", extra_s]),
            &new_ll,
        )
        .unwrap();
        assert!(c.sandbox.writable.is_empty());
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
        assert_eq!(c.on_deny, OnDeny::Fail);
        assert_eq!(c.keep_env, vec!["GH_TOKEN".to_string()]);
    }

    #[test]
    fn openai_provider_key_base_url_and_model() {
        let env = FakeEnv(vec![("AGENT_PROVIDER", "OpenAI"), ("AGENT_MODEL", "qwen")]);
        let c = Config::from_args(&parse(&["hi"]), &env).unwrap();
        assert_eq!(c.provider, ProviderKind::Openai);
        assert_eq!(c.api_key, "", "the key is optional for local servers");
        assert_eq!(c.base_url, "https://api.openai.com/v1");
        assert_eq!(c.model, "qwen");
        let env = FakeEnv(vec![
            ("OPENAI_API_KEY", "sk-o"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"),
            ("ANTHROPIC_BASE_URL", "http://wrong"),
            ("ANTHROPIC_API_KEY", "sk-a"),
        ]);
        let c =
            Config::from_args(&parse(&["hi", "--provider", "openai", "-m", "x"]), &env).unwrap();
        assert_eq!(
            (c.api_key.as_str(), c.base_url.as_str()),
            ("sk-o", "http://127.0.0.1:8000/v1")
        );
        // The flag beats the environment, and anthropic stays the default.
        let env = FakeEnv(vec![
            ("AGENT_PROVIDER", "openai"),
            ("ANTHROPIC_API_KEY", "k"),
        ]);
        let c = Config::from_args(&parse(&["hi", "--provider", "anthropic"]), &env).unwrap();
        assert_eq!(c.provider, ProviderKind::Anthropic);
        let c = Config::from_args(&parse(&["hi"]), &FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]));
        assert_eq!(c.unwrap().provider, ProviderKind::Anthropic);
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
