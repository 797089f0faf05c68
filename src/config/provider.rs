//! The model part of `Config`: which API, which model (and its fallback), the key, the
//! base URL, the request options, retries and cassettes. Read by the provider factory
//! (`commands::run::make_provider`) and, for each request, by the loop.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;

use crate::config::cli::{ProviderKind, RequestArgs, RunArgs};
use crate::config::env::Env;
use crate::error::Error;
use crate::model::provider::http::Gateway;
use crate::record::resume::Resumed;

/// A current Claude Sonnet model id.
const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Where `--provider openai` goes without `--base-url` / `OPENAI_BASE_URL`.
const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The model and how it is reached, validated.
#[derive(Debug, Clone)]
pub(crate) struct ProviderConfig {
    /// Which API `model` is reached through (a cassette's header decides on replay).
    pub(super) kind: ProviderKind,
    pub(super) model: String,
    /// `--fallback-model`: asked once `model`'s retries end overloaded (never `model`).
    pub(super) fallback_model: Option<String>,
    pub(super) max_tokens: u32,
    /// Without a trailing `/`.
    pub(super) base_url: String,
    /// Empty with `--replay`, which needs no key, and with an OpenAI-compatible server
    /// that takes none.
    pub(super) api_key: String,
    pub(super) max_retries: u32,
    pub(super) idle_timeout: Duration,
    /// `--tool-choice` and the other request options.
    pub(super) request: RequestArgs,
    /// `ANTHROPIC_AUTH_TOKEN`, `--header` and `ANTHROPIC_CUSTOM_HEADERS`.
    pub(super) gateway: Gateway,
    pub(super) replay: Option<PathBuf>,
    pub(super) record: Option<PathBuf>,
    /// The cloud region (Bedrock: `AWS_REGION`, else `AWS_DEFAULT_REGION`; Vertex AI:
    /// `CLOUD_ML_REGION`).
    pub(super) region: Option<String>,
    /// Vertex AI's project (`ANTHROPIC_VERTEX_PROJECT_ID`; else the credentials').
    pub(super) project: Option<String>,
}

impl ProviderConfig {
    /// The checks of this part's plain flags, before anything is read.
    pub(super) fn check_flags(args: &RunArgs) -> Result<(), Error> {
        if args.max_tokens == 0 {
            return Err(Error::Usage("--max-tokens must be at least 1".into()));
        }
        if args.idle_timeout.is_zero() {
            return Err(Error::Usage("--idle-timeout must be longer than 0s".into()));
        }
        if args.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(Error::Usage("-m/--model is empty: name a model".into()));
        }
        Ok(())
    }

    /// After `check_flags`. A resumed run keeps the transcript's model unless `-m` names another; a warning
    /// (the fallback the transcript already ran on) goes to `warnings`.
    pub(super) fn from_args(
        args: &RunArgs,
        env: &dyn Env,
        resume: Option<&Resumed>,
        warnings: &mut Vec<String>,
    ) -> Result<Self, Error> {
        let kind = provider_kind(args, env)?;
        let region = region(args, env, kind)?;
        let (api_key, gateway, base_url) = endpoint(args, env, kind, region.as_deref())?;
        let resumed_model = resume.and_then(|r| r.model.clone());
        let model_resumed = args.model.is_none() && resumed_model.is_some();
        let model = model(args, env, kind, resumed_model)?;
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
        let request = request_options(&args.request, kind, &model)?;
        Ok(ProviderConfig {
            kind,
            model,
            fallback_model,
            max_tokens: args.max_tokens,
            base_url,
            api_key,
            max_retries: args.max_retries,
            idle_timeout: args.idle_timeout,
            request,
            gateway,
            replay: args.replay.clone(),
            record: args.record.clone(),
            region,
            project: env
                .var("ANTHROPIC_VERTEX_PROJECT_ID")
                .filter(|p| !p.trim().is_empty()),
        })
    }

    /// The cloud region, for the providers that have one.
    pub(crate) fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// Vertex AI's project, when configured.
    pub(crate) fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    pub(crate) fn kind(&self) -> ProviderKind {
        self.kind
    }
    pub(crate) fn model(&self) -> &str {
        &self.model
    }
    pub(crate) fn fallback_model(&self) -> Option<&str> {
        self.fallback_model.as_deref()
    }
    pub(crate) fn max_tokens(&self) -> u32 {
        self.max_tokens
    }
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }
    pub(crate) fn api_key(&self) -> &str {
        &self.api_key
    }
    pub(crate) fn max_retries(&self) -> u32 {
        self.max_retries
    }
    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }
    pub(crate) fn request(&self) -> &RequestArgs {
        &self.request
    }
    pub(crate) fn gateway(&self) -> &Gateway {
        &self.gateway
    }
    pub(crate) fn replay(&self) -> Option<&Path> {
        self.replay.as_deref()
    }
    pub(crate) fn record(&self) -> Option<&Path> {
        self.record.as_deref()
    }
}

/// The key, the gateway headers and the base URL (checked, without a trailing `/`).
fn endpoint(
    args: &RunArgs,
    env: &dyn Env,
    kind: ProviderKind,
    region: Option<&str>,
) -> Result<(String, Gateway, String), Error> {
    let api_key = match kind {
        ProviderKind::Anthropic => anthropic_key(args, env)?,
        // Optional: local servers (vLLM, llama.cpp, Ollama) take no key.
        ProviderKind::Openai | ProviderKind::OpenaiResponses => {
            env.var("OPENAI_API_KEY").unwrap_or_default()
        }
        // The clouds' credentials are their wires' own (`commands::run::make_provider`).
        ProviderKind::Bedrock | ProviderKind::Vertex => String::new(),
        ProviderKind::Foundry => foundry_key(args, env)?,
    };
    let auth_token = match kind {
        ProviderKind::Anthropic => env.var("ANTHROPIC_AUTH_TOKEN"),
        // An Entra ID token obtained beforehand (`az account get-access-token`).
        ProviderKind::Foundry => env.var("ANTHROPIC_FOUNDRY_AUTH_TOKEN"),
        ProviderKind::Openai
        | ProviderKind::OpenaiResponses
        | ProviderKind::Bedrock
        | ProviderKind::Vertex => None,
    };
    let custom = env.var("ANTHROPIC_CUSTOM_HEADERS");
    let gateway =
        Gateway::new(auth_token, &args.request.headers, custom.as_deref()).map_err(Error::Usage)?;
    let (base_var, default_base) = match kind {
        ProviderKind::Anthropic => ("ANTHROPIC_BASE_URL", DEFAULT_BASE_URL.to_string()),
        ProviderKind::Openai | ProviderKind::OpenaiResponses => {
            ("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL.to_string())
        }
        ProviderKind::Bedrock => (
            "ANTHROPIC_BEDROCK_BASE_URL",
            format!(
                "https://bedrock-runtime.{}.amazonaws.com",
                region.unwrap_or("us-east-1")
            ),
        ),
        ProviderKind::Vertex => (
            "ANTHROPIC_VERTEX_BASE_URL",
            crate::model::provider::vertex::base_url(region.unwrap_or("global")),
        ),
        ProviderKind::Foundry => (
            "ANTHROPIC_FOUNDRY_BASE_URL",
            match env
                .var("ANTHROPIC_FOUNDRY_RESOURCE")
                .filter(|r| !r.trim().is_empty())
            {
                Some(resource) => crate::model::provider::foundry::base_url(resource.trim()),
                None if args.base_url.is_none()
                    && env.var("ANTHROPIC_FOUNDRY_BASE_URL").is_none()
                    && args.replay.is_none() =>
                {
                    return Err(Error::Usage(
                        "--provider foundry needs its endpoint: set ANTHROPIC_FOUNDRY_RESOURCE \
                         (the resource name) or ANTHROPIC_FOUNDRY_BASE_URL"
                            .into(),
                    ));
                }
                None => String::from("https://foundry.invalid"),
            },
        ),
    };
    let base_url = args
        .base_url
        .clone()
        .or_else(|| env.var(base_var))
        .unwrap_or(default_base);
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(Error::Usage(format!(
            "--base-url / {base_var} must start with http:// or https://, got {base_url:?}"
        )));
    }
    Ok((api_key, gateway, base_url.trim_end_matches('/').to_string()))
}

/// `-m`, else the resumed transcript's model, else `AGENT_MODEL`, else the default
/// (Anthropic only).
fn model(
    args: &RunArgs,
    env: &dyn Env,
    kind: ProviderKind,
    resumed_model: Option<String>,
) -> Result<String, Error> {
    match args
        .model
        .clone()
        .or(resumed_model)
        .or_else(|| env.var("AGENT_MODEL"))
    {
        Some(m) => Ok(m),
        // No default fits every OpenAI-compatible server: each serves its own models.
        None if kind == ProviderKind::Openai && args.replay.is_none() => Err(Error::Usage(
            "--provider openai needs a model: pass -m/--model MODEL or set \
             AGENT_MODEL (the name your server serves, e.g. qwen2.5-coder:7b)"
                .into(),
        )),
        None if kind == ProviderKind::Bedrock => {
            Ok(crate::model::provider::bedrock::DEFAULT_BEDROCK_MODEL.to_string())
        }
        None if kind == ProviderKind::Vertex => {
            Ok(crate::model::provider::vertex::DEFAULT_VERTEX_MODEL.to_string())
        }
        None if kind == ProviderKind::OpenaiResponses && args.replay.is_none() => {
            Err(Error::Usage(
                "--provider openai-responses needs a model: pass -m/--model MODEL or set \
                 AGENT_MODEL (e.g. gpt-5-codex, or an Azure OpenAI deployment name)"
                    .into(),
            ))
        }
        None => Ok(DEFAULT_MODEL.to_string()),
    }
}

/// The region of a cloud provider: Bedrock's is `AWS_REGION`, else `AWS_DEFAULT_REGION`,
/// else the `region` of the AWS profile (as the AWS SDKs and `AnthropicBedrock` find
/// it); Vertex AI's `CLOUD_ML_REGION`. Required, except on replay.
fn region(args: &RunArgs, env: &dyn Env, kind: ProviderKind) -> Result<Option<String>, Error> {
    let nonempty = |name: &str| env.var(name).filter(|v| !v.trim().is_empty());
    let profile_region = || {
        let aws: crate::model::provider::bedrock::credentials::AwsEnv = [
            "AWS_PROFILE",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "HOME",
        ]
        .iter()
        .filter_map(|n| Some((n.to_string(), env.var(n)?)))
        .collect();
        crate::model::provider::bedrock::credentials::profile_region(&aws)
    };
    match kind {
        ProviderKind::Bedrock => match nonempty("AWS_REGION")
            .or_else(|| nonempty("AWS_DEFAULT_REGION"))
            .or_else(profile_region)
        {
            Some(r) => Ok(Some(r.trim().to_string())),
            None if args.replay.is_some() => Ok(None),
            None => Err(Error::Usage(
                "--provider bedrock needs a region: set AWS_REGION (or AWS_DEFAULT_REGION), \
                 e.g. us-east-1"
                    .into(),
            )),
        },
        ProviderKind::Vertex => match nonempty("CLOUD_ML_REGION") {
            Some(r) => Ok(Some(r.trim().to_string())),
            None if args.replay.is_some() => Ok(None),
            None => Err(Error::Usage(
                "--provider vertex needs a region: set CLOUD_ML_REGION (e.g. global, us-east5 \
                 or europe-west1)"
                    .into(),
            )),
        },
        ProviderKind::Anthropic
        | ProviderKind::Openai
        | ProviderKind::OpenaiResponses
        | ProviderKind::Foundry => Ok(None),
    }
}

/// Foundry's key (`ANTHROPIC_FOUNDRY_API_KEY`), unless an Entra ID token stands in for
/// it (`ANTHROPIC_FOUNDRY_AUTH_TOKEN`) or the run replays.
fn foundry_key(args: &RunArgs, env: &dyn Env) -> Result<String, Error> {
    let token = env
        .var("ANTHROPIC_FOUNDRY_AUTH_TOKEN")
        .filter(|t| !t.is_empty());
    match env
        .var("ANTHROPIC_FOUNDRY_API_KEY")
        .filter(|k| !k.is_empty())
    {
        Some(k) => Ok(k),
        None if token.is_some() || args.replay.is_some() => Ok(String::new()),
        None => Err(Error::Usage(
            "--provider foundry needs a credential: set ANTHROPIC_FOUNDRY_API_KEY, or \
             ANTHROPIC_FOUNDRY_AUTH_TOKEN to an Entra ID token (az account get-access-token \
             --resource https://cognitiveservices.azure.com)"
                .into(),
        )),
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
        if provider == ProviderKind::OpenaiResponses {
            return Err(Error::Usage(
                "--thinking-budget is for the Anthropic API; with --provider \
                 openai-responses use --effort low|medium|high (sent as reasoning.effort)"
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
    if provider.speaks_messages() && anthropic::thinking_budget(args).is_some() {
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

/// `--provider`, else `AGENT_PROVIDER`, else Claude Code's `CLAUDE_CODE_USE_BEDROCK`,
/// `…_VERTEX`, `…_FOUNDRY` (`1` or `true`, in Claude Code's order), else anthropic.
fn provider_kind(args: &RunArgs, env: &dyn Env) -> Result<ProviderKind, Error> {
    if let Some(p) = args.provider {
        return Ok(p);
    }
    let on = |name: &str| {
        env.var(name)
            .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true"))
    };
    match env.var("AGENT_PROVIDER") {
        Some(v) => ProviderKind::from_str(v.trim(), true).map_err(|_| {
            let known: Vec<&str> = ProviderKind::value_variants()
                .iter()
                .map(|k| k.as_str())
                .collect();
            Error::Usage(format!(
                "AGENT_PROVIDER must be one of {}, got {v:?}",
                known.join(", ")
            ))
        }),
        None if on("CLAUDE_CODE_USE_BEDROCK") => Ok(ProviderKind::Bedrock),
        None if on("CLAUDE_CODE_USE_VERTEX") => Ok(ProviderKind::Vertex),
        None if on("CLAUDE_CODE_USE_FOUNDRY") => Ok(ProviderKind::Foundry),
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
