//! Command-line types (clap derive), one field per flag. No I/O and no environment reads
//! here: `config` turns these into a validated `Config`. The bottom layer: it imports
//! nothing of the crate, so the small value enums flags parse into live here.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "agent",
    version,
    about = "A non-interactive coding agent for CI and scripts"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a task to completion and print the answer (or the transcript with --json).
    Run(Box<RunArgs>),
    /// List the enabled tools and the exact `tools` array sent to the API.
    Tools(ToolsArgs),
    /// Run many tasks (JSON lines), each in its own copy of its workspace.
    Batch(BatchArgs),
    /// Render a transcript as a Markdown summary (or GitHub Actions outputs).
    Summary(SummaryArgs),
    /// Answer `@agent` on a GitHub issue or pull request (in a workflow): every `run` flag,
    /// plus the trigger, the gate, a progress comment, a pushed branch or a review.
    Github(Box<GithubArgs>),
    /// Answer `@agent` on a GitLab issue or merge request (in a pipeline): every `run`
    /// flag, plus the trigger, the gate, a progress note, a pushed branch or a review.
    Gitlab(Box<GitlabArgs>),
    /// List the Agent Skills a run here would load, and why any found were skipped.
    Skills(SkillsArgs),
    /// Convert a transcript into another format (`atif`: Harbor's trajectories).
    Export(ExportArgs),
    /// Speak the Agent Client Protocol on stdin/stdout: editors, orchestrators and Harbor
    /// drive sessions, each prompt an `agent run` with the flags after `--`.
    Acp(AcpArgs),
}

/// Which API the model is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// An OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, Ollama).
    Openai,
    /// Claude on Amazon Bedrock (SigV4 or a Bedrock API key).
    Bedrock,
    /// Claude on Google Vertex AI (Application Default Credentials).
    Vertex,
    /// Claude in Microsoft Foundry (a Foundry key or an Entra ID token).
    Foundry,
    /// OpenAI's Responses API (`/responses`: OpenAI, Azure OpenAI, gateways).
    OpenaiResponses,
}

impl ProviderKind {
    /// The name used on the command line and in cassette headers.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
            ProviderKind::Bedrock => "bedrock",
            ProviderKind::Vertex => "vertex",
            ProviderKind::Foundry => "foundry",
            ProviderKind::OpenaiResponses => "openai-responses",
        }
    }

    /// Whether the API is Anthropic's Messages API, directly or hosted by a cloud (so
    /// thinking budgets, betas and cache breakpoints apply).
    pub(crate) fn speaks_messages(self) -> bool {
        !matches!(self, ProviderKind::Openai | ProviderKind::OpenaiResponses)
    }
}

/// What `--on-deny` asks for when a call is denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum OnDeny {
    /// The model gets the denial as an error result and the run goes on.
    #[default]
    Feedback,
    /// The run ends with status `denied` (exit 5).
    Fail,
}

/// `agent acp`'s flags; the run flags of every prompt come after `--`.
#[derive(Debug, Clone, Args)]
pub(crate) struct AcpArgs {
    /// What is asked of the client (session/request_permission): ask, rules or allow-all.
    ///
    /// `ask` (default): each call that can change something and that no allow rule names,
    /// and each call an `ask` rule names. `rules`: only calls an `ask` rule names. `allow-all`:
    /// nothing (an `ask` rule's calls run); deny rules still deny.
    #[arg(long, value_enum, default_value_t = AcpPermissions::Ask, value_name = "MODE")]
    pub acp_permissions: AcpPermissions,
    /// How long a permission request waits for the client; unanswered, it is denied.
    #[arg(long, value_parser = parse_duration, default_value = "10m", value_name = "DURATION")]
    pub acp_permission_timeout: Duration,
    /// How long a file read or write through the client (fs/read_text_file,
    /// fs/write_text_file) waits for its answer; unanswered, the tool call fails.
    #[arg(long, value_parser = parse_duration, default_value = "1m", value_name = "DURATION")]
    pub acp_fs_timeout: Duration,
    /// Also write each prompt's --jsonl event stream to FILE (appended, all sessions).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Where sessions are kept (default: $XDG_STATE_HOME/agent/acp, else
    /// ~/.local/state/agent/acp).
    #[arg(long, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
    /// `agent run` flags given to every prompt (after `--`): `-- --full-auto -m MODEL`.
    #[arg(last = true, value_name = "RUN FLAGS")]
    pub run_flags: Vec<String>,
}

/// `--acp-permissions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AcpPermissions {
    /// Only the calls an `ask` rule names go to the client.
    Rules,
    /// Also each call that can change something and that no allow rule names.
    Ask,
    /// Nothing goes to the client: an `ask` rule's calls run.
    AllowAll,
}

impl AcpPermissions {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AcpPermissions::Rules => "rules",
            AcpPermissions::Ask => "ask",
            AcpPermissions::AllowAll => "allow-all",
        }
    }
}

/// `--permission-prompt`: who answers an `ask` rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum PermissionPrompt {
    /// Nobody: the call is denied, saying it needed approval.
    #[default]
    Deny,
    /// A `permission.requested` event on the --jsonl stream, answered on stdin.
    Stdin,
}

/// `--client-files`: what goes through the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ClientFileOp {
    /// A file's text is read through the client.
    Read,
    /// A file's text is written through the client (nothing on disk).
    Write,
}

/// `--sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum SandboxMode {
    /// No confinement.
    #[default]
    Off,
    /// Writes only in the workspace, the temp directory and each --writable DIR.
    WorkspaceWrite,
    /// No writes at all.
    ReadOnly,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 90s, 2m, 1h30m)"))
}

/// `agent run --help` sections, in the order they are shown; the config parts fall
/// the same way (input and context: `session`; output; model: `provider`; tools,
/// sandbox and MCP: `tools`; CI and budgets: `ci`).
pub(crate) mod heading {
    pub(crate) const INPUT: &str = "Input";
    pub(crate) const OUTPUT: &str = "Output";
    pub(crate) const MODEL: &str = "Model and provider";
    pub(crate) const TOOLS: &str = "Tools and permissions";
    pub(crate) const SANDBOX: &str = "Sandbox";
    pub(crate) const CI: &str = "CI and budgets";
    pub(crate) const MCP: &str = "MCP";
    pub(crate) const CONTEXT: &str = "Context and sessions";
    /// Agent Skills (docs/guide/skills.md).
    pub(crate) const SKILLS: &str = "Skills";
    pub(crate) const IMAGES: &str = "Images";
    /// `agent github`'s own flags (after the `run` sections).
    pub(crate) const GITHUB: &str = "GitHub";
    /// `agent gitlab`'s own flags (after the `run` sections).
    pub(crate) const GITLAB: &str = "GitLab";
    /// All of them, in order.
    #[cfg(test)]
    pub(crate) const ALL: &[&str] = &[
        INPUT, OUTPUT, MODEL, TOOLS, SANDBOX, CI, MCP, CONTEXT, SKILLS, IMAGES,
    ];
}

/// Which tools are enabled (SPEC §6). Shared by `run` and `tools`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::TOOLS)]
pub(crate) struct ToolArgs {
    /// Enable the file-writing tools (WriteFile, EditFile).
    #[arg(long)]
    pub allow_write: bool,
    /// Enable the Bash tool.
    #[arg(long)]
    pub allow_bash: bool,
    /// Enable every tool (--allow-write --allow-bash).
    #[arg(long)]
    pub full_auto: bool,
    /// Enable exactly these tools (comma-separated names or rules).
    ///
    /// A rule such as `Bash(git status)`, `Bash(cargo test:*)` or `EditFile(src/**)`
    /// enables its tool and allows only the calls it matches, as an allow rule in the
    /// settings does.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub allowed_tools: Option<Vec<String>>,
    /// Disable these tools (comma-separated names or rules).
    ///
    /// A named tool is disabled whatever enabled it. A rule such as `Bash(rm:*)` denies
    /// the calls it matches, as a deny rule in the settings does.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub disallowed_tools: Vec<String>,
    /// How files are edited: apply_patch, or WriteFile and EditFile.
    ///
    /// Default: apply-patch for GPT and o-series models on the OpenAI providers (they are
    /// trained on its patch format), edit-file otherwise.
    #[arg(long, value_enum, value_name = "TOOL")]
    pub edit_tool: Option<EditTool>,
}

/// `--edit-tool`: which editing tools a run offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EditTool {
    /// apply_patch, codex's patch format (instead of WriteFile and EditFile).
    ApplyPatch,
    /// WriteFile and EditFile.
    EditFile,
}

/// `agent run`'s flags. Declared in the order of the `--help` sections (clap shows a
/// section where its first flag is declared); the groups are flattened below.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The task. `-` (or no PROMPT with stdin not a terminal) reads it from stdin.
    pub prompt: Option<String>,
    /// Read the task from FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "prompt", help_heading = heading::INPUT)]
    pub prompt_file: Option<PathBuf>,
    /// Append stdin to the task as a <stdin> block.
    ///
    /// Stdin is read to the end: `git diff | agent run --stdin-context "review this"`.
    #[arg(long, help_heading = heading::INPUT)]
    pub stdin_context: bool,
    /// Workspace root (default: the current directory).
    ///
    /// File tools are confined to it.
    #[arg(short = 'C', long = "cwd", value_name = "DIR", help_heading = heading::INPUT)]
    pub cwd: Option<PathBuf>,
    /// Replace the built-in system prompt (TEXT, or @FILE).
    #[arg(long, value_name = "TEXT|@FILE", help_heading = heading::INPUT)]
    pub system: Option<String>,
    /// Append to the system prompt (TEXT, or @FILE).
    #[arg(long, value_name = "TEXT|@FILE", help_heading = heading::INPUT)]
    pub append_system_prompt: Option<String>,
    /// Not a flag: set by `agent github` for a pull request, the project instructions
    /// (file name, text) to use instead of the workspace's AGENTS.md or CLAUDE.md, which
    /// is the head branch's there: `Some(None)` means none.
    #[arg(skip)]
    pub project_instructions: Option<Option<(String, String)>>,
    /// Print exactly one JSON transcript on stdout instead of the final text.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub json: bool,
    /// Also write the transcript to FILE.
    ///
    /// Always: on success, failure, timeout, signal.
    #[arg(short = 'o', long = "output", value_name = "FILE", help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// Also write the run as an ATIF trajectory (Harbor's format) to FILE.
    ///
    /// Made from the transcript, on every way out as -o is (docs/guide/harbor.md).
    #[arg(long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub trajectory: Option<PathBuf>,
    /// Silence stderr except errors.
    #[arg(short, long, conflicts_with = "verbose", help_heading = heading::OUTPUT)]
    pub quiet: bool,
    /// Log each request and tool call to stderr.
    #[arg(short, long, help_heading = heading::OUTPUT)]
    pub verbose: bool,
    /// Keep the directory of saved outputs after the run.
    ///
    /// The saved outputs are full command output and oversized results; with -o the
    /// directory is always kept, beside the transcript.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub keep_spill: bool,
    /// API to use [env: AGENT_PROVIDER] (default anthropic).
    #[arg(long, value_enum, value_name = "PROVIDER", help_heading = heading::MODEL)]
    pub provider: Option<ProviderKind>,
    /// Model id [env: AGENT_MODEL] (required with --provider openai).
    #[arg(short, long, help_heading = heading::MODEL)]
    pub model: Option<String>,
    /// The model to ask when the model stays overloaded.
    ///
    /// When the model is still overloaded after --max-retries, the request goes to this
    /// model instead; it answers for the rest of the run.
    #[arg(long, value_name = "ID", help_heading = heading::MODEL)]
    pub fallback_model: Option<String>,
    /// Maximum output tokens per response.
    #[arg(long, default_value_t = 8192, value_name = "N", help_heading = heading::MODEL)]
    pub max_tokens: u32,
    /// API base URL [env: ANTHROPIC_BASE_URL or OPENAI_BASE_URL].
    ///
    /// OPENAI_BASE_URL with --provider openai. Default https://api.anthropic.com, or
    /// https://api.openai.com/v1.
    #[arg(long, value_name = "URL", help_heading = heading::MODEL)]
    pub base_url: Option<String>,
    /// Retries of a failed API call.
    #[arg(long, default_value_t = 4, value_name = "N", help_heading = heading::MODEL)]
    pub max_retries: u32,
    /// A response stream silent this long counts as dropped (and is retried).
    #[arg(long, value_parser = parse_duration, default_value = "300s", value_name = "DURATION",
          help_heading = heading::MODEL)]
    pub idle_timeout: Duration,
    /// Answer from a recorded cassette instead of the network (no key needed).
    #[arg(long, value_name = "CASSETTE", conflicts_with = "record", help_heading = heading::MODEL)]
    pub replay: Option<PathBuf>,
    /// Record this run's model responses into a cassette (JSON lines).
    #[arg(long, value_name = "CASSETTE", help_heading = heading::MODEL)]
    pub record: Option<PathBuf>,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    /// Default timeout of one Bash command.
    ///
    /// The model may ask for up to 10 minutes, or up to this default when it is longer.
    #[arg(long, value_parser = parse_duration, default_value = "2m", value_name = "DURATION",
          help_heading = heading::TOOLS)]
    pub bash_timeout: Duration,
    /// At most N background commands (Bash `run_in_background`) at once; 0: none.
    ///
    /// Every one still running is killed when the run ends, whichever way it ends.
    #[arg(long, default_value_t = 4, value_name = "N", help_heading = heading::TOOLS)]
    pub max_background: usize,
    /// Enable WebFetch for these hosts (comma list; *.example.com covers subdomains; * all).
    ///
    /// Loopback and private addresses are fetched only when named literally (127.0.0.1).
    #[arg(long, value_name = "DOMAINS", help_heading = heading::TOOLS)]
    pub allow_web: Option<String>,
    #[command(flatten)]
    pub security: SecurityArgs,
    /// Maximum number of model requests.
    #[arg(long, default_value_t = 50, value_name = "N", help_heading = heading::CI)]
    pub max_turns: u32,
    /// Turns one Task sub-agent may take (within what is left of --max-turns).
    #[arg(long, default_value_t = 20, value_name = "N", help_heading = heading::CI)]
    pub subagent_max_turns: u32,
    /// Time limit for the whole run (e.g. 90s, 10m); exit 124 when it expires.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", help_heading = heading::CI)]
    pub timeout: Option<Duration>,
    #[command(flatten)]
    pub ci: CiArgs,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub skills: SkillArgs,
    #[command(flatten)]
    pub images: ImageArgs,
}

/// `agent skills`.
#[derive(Debug, Args)]
pub(crate) struct SkillsArgs {
    /// Print JSON: every skill found (loaded or skipped, and why) and every warning.
    #[arg(long)]
    pub json: bool,
    /// The workspace a run would use (default: the current directory).
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub skills: SkillArgs,
}

/// Agent Skills: where they are looked for and how strictly they are read
/// (docs/guide/skills.md). Shared by `run` and `skills`.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::SKILLS)]
pub(crate) struct SkillArgs {
    /// Also load the skill in DIR, or every skill in the folder DIR (repeatable).
    ///
    /// Looked at before the project's and the user's skills: on a name clash it wins.
    #[arg(long = "skill", value_name = "DIR")]
    pub skill: Vec<PathBuf>,
    /// Load no skills from the project or the user's home (--skill still loads).
    #[arg(long)]
    pub no_skills: bool,
    /// Load the project's skills only, not ~/.agents/skills or ~/.claude/skills.
    ///
    /// The default of `agent github`, and of the tasks of `agent batch`.
    #[arg(long)]
    pub no_user_skills: bool,
    /// Any skill that breaks a rule of the specification is an error (exit 2).
    #[arg(long)]
    pub strict_skills: bool,
    /// While a skill that lists `allowed-tools` is active, refuse every other tool.
    ///
    /// The list only narrows: it never enables a tool or allows a call the permission
    /// rules refuse. Without this flag `allowed-tools` is recorded and ignored.
    #[arg(long)]
    pub skill_allowed_tools: bool,
    /// Not a flag: set by `agent github` for a pull request, the files its head branch
    /// changes; a project skill holding one is untrusted and not loaded.
    #[arg(skip)]
    pub untrusted_changes: Option<Vec<String>>,
    /// Not a flag: set by `agent github` when the comment is a prompt command (`@agent
    /// /review …`): the skill to load before the task, and its arguments.
    #[arg(skip)]
    pub command: Option<(String, String)>,
}

/// Images and PDFs: attached to the task, and how the transcript keeps them.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::IMAGES)]
pub(crate) struct ImageArgs {
    /// Attach an image (PNG, JPEG, GIF, WebP) or a PDF to the task (repeatable).
    ///
    /// The type comes from the file's content. An image over 2000 pixels a side or
    /// 3.75 MB is downscaled; a PDF over 20 MB or 100 pages is refused (exit 2).
    #[arg(short = 'i', long = "image", value_name = "FILE")]
    pub images: Vec<PathBuf>,
    /// How the transcript keeps an image read from a file: a reference (path, SHA-256,
    /// size, pixels) or the bytes.
    ///
    /// `--resume` reads a referenced file again and fails when it is gone or changed.
    #[arg(long, value_enum, default_value = "reference", value_name = "HOW")]
    pub transcript_images: TranscriptImages,
    /// The model takes no images: a tool's image becomes an error result it can act on.
    ///
    /// Without it, a request the server refuses for its images is retried once this way.
    #[arg(long)]
    pub no_images: bool,
}

/// `--transcript-images`: what the transcript holds of an image read from a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum TranscriptImages {
    /// The file's path, SHA-256, media type, size and pixels.
    #[default]
    Reference,
    /// The base64 bytes, as sent.
    Inline,
}

/// MCP servers as tool sources (shared by `run` and `tools`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::MCP)]
pub(crate) struct McpArgs {
    /// Start the MCP servers of FILE (repeatable).
    ///
    /// FILE has Claude Code's `{"mcpServers": …}` shape. Read after the workspace's
    /// .mcp.json; a later server of the same name wins.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,
    /// Enable the MCP tools that are not read-only (also enabled by --full-auto).
    #[arg(long)]
    pub allow_mcp: bool,
    /// A server that fails to start ends the run (exit 2) instead of a warning.
    #[arg(long)]
    pub strict_mcp: bool,
    /// Bound of one MCP call (a tool call, a tools/list page).
    #[arg(long, value_parser = parse_duration, default_value = "30s", value_name = "DURATION")]
    pub mcp_timeout: Duration,
    /// Bound of a server's start-up (spawn, initialize, tools/list).
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub mcp_startup_timeout: Duration,
    /// Keep HTTP servers' OAuth tokens in FILE (mode 0600) between runs.
    ///
    /// Without it no token is written to disk.
    #[arg(long = "mcp-token-cache", value_name = "FILE")]
    pub mcp_token_cache: Option<PathBuf>,
    /// Declare elicitation and answer servers' requests: decline, or accept with each
    /// field's default (declined unless every required field has one).
    #[arg(long = "mcp-elicitation", value_enum, value_name = "MODE")]
    pub mcp_elicitation: Option<McpElicitation>,
}

/// `--mcp-elicitation`: how a server's `elicitation/create` is answered, nobody being
/// there to fill in its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum McpElicitation {
    /// Decline every request.
    Decline,
    /// Accept with the schema's defaults when every required field has one; else decline.
    Defaults,
}

/// The context window: its size and when old tool results are cleared.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::CONTEXT)]
pub(crate) struct ContextArgs {
    /// The model's context window in tokens (default: from the model's name).
    ///
    /// Needed for an unknown model on an OpenAI-compatible server, else learned from its
    /// first "context length exceeded" error.
    #[arg(long, value_name = "N")]
    pub context_window: Option<u64>,
    /// Clear old tool results (then summarise) once a request used more than this share
    /// of the window (0.5 < FRACTION <= 1), or this many tokens (1000 or more).
    #[arg(long, value_name = "FRACTION|TOKENS")]
    pub compact_at: Option<f64>,
    /// Send the `context-1m` beta header: a 1M-token window on the models that take it.
    #[arg(long)]
    pub context_1m: bool,
    /// When the window fills: clear, summarize or fail (default: clear).
    ///
    /// clear: clear old tool results, and summarise when that is not enough;
    /// summarize: summarise without clearing first; fail: neither, the run ends
    /// context_exceeded at the wall.
    #[arg(long, value_enum, value_name = "STRATEGY", hide_possible_values = true)]
    pub context_strategy: Option<ContextStrategy>,
    /// Add TEXT (or @FILE) to the instructions of the summary request.
    #[arg(long, value_name = "TEXT")]
    pub compact_instructions: Option<String>,
    /// The model that writes the summaries (default: the run's model).
    #[arg(long, value_name = "MODEL")]
    pub compact_model: Option<String>,
}

/// `--context-strategy`: what is done when the conversation fills the context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ContextStrategy {
    /// Clear old tool results; summarise when clearing cannot get under the target.
    #[default]
    Clear,
    /// Summarise the older part of the history (no clearing first).
    Summarize,
    /// Neither: the run ends `context_exceeded` at the wall.
    Fail,
}

impl ContextStrategy {
    /// The name on the command line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ContextStrategy::Clear => "clear",
            ContextStrategy::Summarize => "summarize",
            ContextStrategy::Fail => "fail",
        }
    }
}

/// What shapes each API request beyond the model, the prompt and the messages.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::MODEL)]
pub(crate) struct RequestArgs {
    /// Send `tool_choice` with the tools (default: none sent).
    ///
    /// Some local servers (llama-cpp-python) ignore tools unless it is set.
    #[arg(long, value_enum, value_name = "MODE")]
    pub tool_choice: Option<ToolChoice>,
    /// An extra request header 'Name: value' (repeatable).
    ///
    /// Both providers; also ANTHROPIC_CUSTOM_HEADERS, one per line. For gateways and
    /// proxies.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Anthropic beta features, sent as `anthropic-beta` (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "BETAS")]
    pub betas: Vec<String>,
    /// Anthropic extended thinking with this token budget (at least 1024).
    ///
    /// The request's max_tokens becomes the budget plus --max-tokens.
    #[arg(long, value_name = "N", conflicts_with = "effort")]
    pub thinking_budget: Option<u32>,
    /// How hard the model reasons.
    ///
    /// Anthropic thinking budgets of 4096, 8192 or 16384 tokens; `reasoning_effort` with
    /// --provider openai.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub effort: Option<Effort>,
}

/// `--effort`: the portable reasoning level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Effort {
    Low,
    Medium,
    High,
}

impl Effort {
    /// The name on the command line, which is also OpenAI's `reasoning_effort` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

/// `--tool-choice`: whether the model may, must or must not call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ToolChoice {
    Auto,
    Required,
    None,
}

/// Corrections allowed after the first answer (`--max-schema-retries` default): enough for
/// a model to fix a missed field or a wrong type, few enough to fail fast.
const DEFAULT_MAX_SCHEMA_RETRIES: u32 = 3;

/// Structured output and resuming a conversation (docs/guide/structured-output.md, resume.md).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::CONTEXT)]
pub(crate) struct SessionArgs {
    /// The final answer must be valid against this JSON Schema.
    ///
    /// The schema is a FILE, or inline JSON starting with `{`. The answer is printed as
    /// one line of JSON (exit 6 if never valid).
    #[arg(long, value_name = "FILE|JSON")]
    pub output_schema: Option<String>,
    /// Corrections after an answer that does not match --output-schema.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SCHEMA_RETRIES,
          requires = "output_schema")]
    pub max_schema_retries: u32,
    /// Continue the conversation of TRANSCRIPT.
    ///
    /// TRANSCRIPT is --json output, an -o file or a --jsonl capture; PROMPT, if given, is
    /// added as the next user message.
    #[arg(long, value_name = "TRANSCRIPT", conflicts_with = "continue_")]
    pub resume: Option<PathBuf>,
    /// Resume the newest transcript written with -o in this workspace.
    #[arg(long = "continue")]
    pub continue_: bool,
}

/// The CI features of SPEC §9: verification, live events, budgets.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::CI)]
pub(crate) struct CiArgs {
    /// After the model stops, run CMD; while it fails, the model fixes it.
    ///
    /// CMD runs in the workspace; while it fails, its output goes back to the model
    /// (exit 4 when it still fails after --max-verify rounds).
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Verification rounds before giving up with status verify_failed.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub max_verify: u32,
    /// Timeout of one --verify run.
    ///
    /// Test suites take longer than one Bash call.
    #[arg(long, value_parser = parse_duration, default_value = "10m", value_name = "DURATION")]
    pub verify_timeout: Duration,
    /// Print events as JSON lines on stdout while the run goes.
    ///
    /// The last event is run.finished.
    #[arg(long, conflicts_with = "json", help_heading = heading::OUTPUT)]
    pub jsonl: bool,
    /// With --jsonl: also an `assistant.delta` event for each piece of text as it streams.
    ///
    /// A piece heard before a `retry` event belongs to an attempt that was dropped; the
    /// turn's text is the `assistant.message` that follows.
    #[arg(long, requires = "jsonl", help_heading = heading::OUTPUT)]
    pub include_partial_messages: bool,
    /// Stop (exit 3) once this many tool calls were made.
    ///
    /// Checked before each request; the status is budget.
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<u32>,
    /// Stop (exit 3) once the run cost this much (USD).
    ///
    /// Checked before each request; the status is budget.
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// OpenTelemetry spans also carry the prompt, answers and tool input and output.
    ///
    /// Redacted like the transcript. Export itself is configured by the standard
    /// OTEL_* variables (docs/guide/opentelemetry.md).
    #[arg(long, help_heading = heading::OUTPUT)]
    pub otel_content: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct BatchArgs {
    #[command(subcommand)]
    pub action: Option<BatchAction>,
    /// The tasks: one JSON object per line, {"id", "prompt", "workspace"?, "args"?,
    /// "setup"?}.
    #[arg(required = true)]
    pub tasks: Option<PathBuf>,
    /// Where the transcripts (<id>.json), logs and summary.json go.
    #[arg(long, value_name = "DIR", required = true)]
    pub out: Option<PathBuf>,
    /// Tasks run at the same time.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub parallel: usize,
    /// Run only shard I of N (1-based): the tasks whose index % N == I - 1. `auto` reads
    /// I and N from the CI engine (GitLab, CircleCI, Buildkite, a Kubernetes Indexed Job).
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// With `--shard auto` in a Kubernetes Indexed Job: the number of shards
    /// [env: AGENT_SHARDS].
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
    /// Skip the tasks whose DIR/<id>.json already holds a final status.
    #[arg(long)]
    pub resume: bool,
    /// With --resume: also re-run the tasks whose status is not success.
    #[arg(long, requires = "resume")]
    pub retry_failed: bool,
    /// Start no task once the batch has spent this much (USD); the rest are not_run
    /// (exit 3).
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// Each task's --timeout, unless its args set one.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub task_timeout: Option<Duration>,
    /// Run each task K times (ids <id>~1 … <id>~K), for pass@k.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub repeat: usize,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BatchAction {
    /// Combine the output directories of several shards into OUT/summary.json.
    Merge(BatchMergeArgs),
    /// Render a batch's summary.json: pass rate, pass@k, cost, tokens, turns, durations.
    Report(BatchReportArgs),
}

#[derive(Debug, Args)]
pub(crate) struct BatchMergeArgs {
    /// The merged directory (summary.json, and every task's transcript and log).
    pub out: PathBuf,
    /// The shards' --out directories.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct BatchReportArgs {
    /// A batch's --out directory (or a merged one).
    pub dir: PathBuf,
    /// Markdown (for $GITHUB_STEP_SUMMARY) or JSON.
    #[arg(long, value_enum, default_value_t = ReportFormat::Md, value_name = "FORMAT")]
    pub format: ReportFormat,
}

/// `agent batch report --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Md,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct SummaryArgs {
    /// A transcript written by `agent run -o FILE` (or --json), a --jsonl capture (its
    /// run.finished event), or `-` to read either from stdin.
    pub transcript: PathBuf,
    /// Print GitHub Actions outputs (status, result, transcript) instead of Markdown.
    #[arg(long)]
    pub github_output: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    #[command(subcommand)]
    pub format: ExportFormat,
}

/// `agent export FORMAT`.
#[derive(Debug, Subcommand)]
pub(crate) enum ExportFormat {
    /// The transcript as an ATIF trajectory (Agent Trajectory Interchange Format v1.7).
    Atif(ExportAtifArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ExportAtifArgs {
    /// A transcript written by `agent run -o FILE` (a killed run's is read through the
    /// journal beside it) or --json, the journal itself, a --jsonl capture, or `-`.
    pub transcript: PathBuf,
    /// Write the trajectory to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Permission rules, hooks, the Bash sandbox and the child environment (SPEC §6).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::TOOLS)]
pub(crate) struct SecurityArgs {
    /// Read permission rules and hooks from FILE or inline JSON too (repeatable).
    ///
    /// Inline JSON is a value starting with `{`. Read after the project's
    /// .agent/settings.json; lists are concatenated.
    #[arg(long = "settings", value_name = "FILE|JSON")]
    pub settings: Vec<PathBuf>,
    /// Let the file tools use DIR as well as the workspace (repeatable).
    ///
    /// They read (and, with write enabled, write) under DIR with the same confinement;
    /// `--sandbox workspace-write` lets Bash write there too.
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// Ignore the workspace's .agent/settings.json and .mcp.json.
    ///
    /// For untrusted checkouts.
    #[arg(long)]
    pub no_project_settings: bool,
    /// What a denied call does: tell the model, or end the run (exit 5).
    #[arg(long, value_enum, default_value_t = OnDeny::Feedback, value_name = "MODE")]
    pub on_deny: OnDeny,
    /// Refuse Bash commands whose program is known only when they run.
    ///
    /// `$x -f f`, `$(echo rm) f`, `curl … | bash`, `eval "$v"`: no rule can see what
    /// they run. Without this flag only a deny rule for Bash refuses them.
    #[arg(long)]
    pub deny_opaque: bool,
    /// Who answers a call that an `ask` permission rule leaves to a person.
    ///
    /// `deny` (default): nobody, the call is denied. `stdin` (needs --jsonl and the task
    /// not on stdin): a `permission.requested` event, answered by one JSON line on stdin,
    /// `{"id": TOOL_USE_ID, "decision": "allow"|"deny"}`.
    #[arg(long, value_enum, default_value_t = PermissionPrompt::Deny, value_name = "MODE")]
    pub permission_prompt: PermissionPrompt,
    /// Read and/or write the file tools' text through the process driving the run.
    ///
    /// `read`, `write` or `read,write` (needs --jsonl and the task not on stdin). ReadFile,
    /// EditFile, WriteFile and apply_patch then ask for a file's text with a `file.read`
    /// line on stdout and write it with `file.write`, answered by a `file.result` or
    /// `file.error` line on stdin; paths are confined as for the disk. `agent acp` uses it
    /// for an editor's buffers. Grep, Glob and Bash read the disk.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub client_files: Vec<ClientFileOp>,
    /// With --permission-prompt stdin: also ask before every call that can change
    /// something (Bash, the edit tools, MCP tools not read-only) that no rule allows.
    #[arg(long)]
    pub ask_by_default: bool,
    /// Confine Bash commands with Landlock (Linux): where they may write.
    #[arg(long, value_enum, default_value_t = SandboxMode::Off, value_name = "MODE",
          help_heading = heading::SANDBOX)]
    pub sandbox: SandboxMode,
    /// With --sandbox workspace-write: also allow writes under DIR (repeatable).
    #[arg(long, value_name = "DIR", help_heading = heading::SANDBOX)]
    pub writable: Vec<PathBuf>,
    /// Deny Bash commands TCP connect and bind (Landlock ABI 4+).
    #[arg(long, help_heading = heading::SANDBOX)]
    pub no_network: bool,
    /// Let Bash reach only these hosts, through the agent's proxy (repeatable, comma lists).
    ///
    /// `host`, `*.host` (its subdomains) or `host:port`; ports 80 and 443 unless one is
    /// named. Commands run in their own network namespace (Linux user namespaces).
    #[arg(long, value_name = "LIST", help_heading = heading::SANDBOX)]
    pub allow_domain: Vec<String>,
    /// Refuse these hosts even if --allow-domain names them (repeatable, comma lists).
    #[arg(long, value_name = "LIST", help_heading = heading::SANDBOX)]
    pub deny_domain: Vec<String>,
    /// Keep the variable NAME for Bash and hooks even if it looks secret (repeatable).
    #[arg(long, value_name = "NAME")]
    pub keep_env: Vec<String>,
    /// Which variables Bash, hooks and MCP servers get: scrub (default) or allow.
    ///
    /// `scrub` passes the job's environment minus the agent's keys, secret-looking names
    /// (`*_TOKEN`, `*_SECRET*`, `*_PASSWORD`, `*_KEY`, …), URLs with a password and values
    /// equal to the run's secrets, and names each variable removed on stderr. `allow`
    /// passes only PATH, HOME, LANG, LC_*, TERM, TMPDIR, TZ, USER, CI's non-secret
    /// variables (GITHUB_SHA, RUNNER_OS, CI_COMMIT_SHA, …) and --command-env-pass names.
    /// Settings: `commandEnv.mode`. The GitHub Action defaults to allow.
    #[arg(long, value_name = "MODE", overrides_with = "command_env")]
    pub command_env: Option<CommandEnvMode>,
    /// Pass the variable NAME to commands in either --command-env mode (repeatable, comma lists, globs).
    ///
    /// `NODE_OPTIONS`, `JAVA_*`. Settings: `commandEnv.pass`.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub command_env_pass: Vec<String>,
}

/// `--command-env`: how the commands' environment is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CommandEnvMode {
    /// Only a short list of non-secret variables and the passed names.
    Allow,
    /// Everything but the secrets (and secret-looking variables, each named on stderr).
    Scrub,
}

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print JSON: the tools with their metadata and the exact API `tools` array.
    #[arg(long)]
    pub json: bool,
    /// Developer check (hidden): read JSON strings, one Bash command a line, from stdin
    /// and print, a JSON line each, what the permission rules see in it
    /// (`ci/interop/shell_diff` compares that with real shell parsers).
    #[arg(long, hide = true)]
    pub split_commands: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub mcp: McpArgs,
    /// Ignore the current directory's .mcp.json.
    #[arg(long)]
    pub no_project_settings: bool,
}

/// `agent github`: the run's flags (all of `agent run`'s) and the conversation's.
#[derive(Debug, Args)]
pub(crate) struct GithubArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub github: GithubFlags,
}

/// What starts `agent github`, who may start it, and what it does with the result.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::GITHUB)]
pub(crate) struct GithubFlags {
    /// The word that calls the agent in a comment, a review, or an issue's title or body.
    #[arg(long, default_value = "@agent", value_name = "PHRASE")]
    pub trigger_phrase: String,
    /// Also start when an issue or pull request gets this label.
    #[arg(long, value_name = "NAME")]
    pub label_trigger: Option<String>,
    /// Also start when an issue or pull request is assigned to this user.
    #[arg(long, value_name = "LOGIN")]
    pub assignee_trigger: Option<String>,
    /// Bots whose events are answered (comma-separated logins, `*` for all); other bots
    /// are ignored.
    #[arg(long, value_delimiter = ',', value_name = "LOGINS")]
    pub allowed_bots: Vec<String>,
    /// The instruction: start on any event (workflow_dispatch too) with this task.
    #[arg(long = "prompt", id = "github_prompt", value_name = "TEXT",
          conflicts_with_all = ["prompt", "prompt_file"])]
    pub prompt: Option<String>,
    /// Review the pull request: post one review with inline comments.
    #[arg(long)]
    pub review: bool,
    /// Leave the changes in the workspace: no commit, no push, no pull request.
    #[arg(long)]
    pub no_push: bool,
    /// The identity of the commit the agent pushes.
    #[arg(
        long,
        value_name = "NAME <EMAIL>",
        default_value = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>"
    )]
    pub git_author: String,
    /// Shortest time between two edits of the progress comment.
    #[arg(long, value_parser = parse_duration, default_value = "3s", value_name = "DURATION")]
    pub progress_interval: Duration,
}

/// `agent gitlab`: the run's flags (all of `agent run`'s) and the conversation's.
#[derive(Debug, Args)]
pub(crate) struct GitlabArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub gitlab: GitlabFlags,
}

/// What starts `agent gitlab`, who may start it, and what it does with the result.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::GITLAB)]
pub(crate) struct GitlabFlags {
    /// The word that calls the agent in a note, or an issue's or merge request's title or
    /// description.
    #[arg(long, default_value = "@agent", value_name = "PHRASE")]
    pub trigger_phrase: String,
    /// Also start when an issue or merge request gets this label.
    #[arg(long, value_name = "NAME")]
    pub label_trigger: Option<String>,
    /// Also start when an issue or merge request is assigned to this user.
    #[arg(long, value_name = "USERNAME")]
    pub assignee_trigger: Option<String>,
    /// Bots whose events are answered (comma-separated usernames, `*` for all); other
    /// bots are ignored.
    #[arg(long, value_delimiter = ',', value_name = "USERNAMES")]
    pub allowed_bots: Vec<String>,
    /// The instruction: start on any pipeline (a merge_request_event one too) with this
    /// task.
    #[arg(long = "prompt", id = "gitlab_prompt", value_name = "TEXT",
          conflicts_with_all = ["prompt", "prompt_file"])]
    pub prompt: Option<String>,
    /// Review the merge request: post diff discussions and one summary note.
    #[arg(long)]
    pub review: bool,
    /// Leave the changes in the workspace: no commit, no push, no merge request.
    #[arg(long)]
    pub no_push: bool,
    /// The merge request opened for an issue closes it when merged (`Closes #IID`;
    /// without the flag it only mentions the issue).
    #[arg(long)]
    pub close_issue: bool,
    /// The webhook payload (a note, issue or merge request event) as a file; default: the
    /// pipeline trigger's `TRIGGER_PAYLOAD` variable (a file path or the JSON itself).
    #[arg(long, value_name = "FILE")]
    pub payload: Option<std::path::PathBuf>,
    /// The identity of the commit the agent pushes.
    #[arg(
        long,
        value_name = "NAME <EMAIL>",
        default_value = "agent <agent@users.noreply.gitlab.invalid>"
    )]
    pub git_author: String,
    /// Shortest time between two edits of the progress note.
    #[arg(long, value_parser = parse_duration, default_value = "3s", value_name = "DURATION")]
    pub progress_interval: Duration,
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
