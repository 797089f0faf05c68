//! `agent`: a synchronous, non-interactive coding agent for CI and scripts.
//!
//! The module list follows DESIGN.md: `cli` → `config` → `agent` loop (provider, turn
//! accumulator, scheduler, dispatch, tools) → `transcript` → `output`. This file wires
//! them together and owns the ways out of a run (normal end, signal, deadline), each of
//! which writes the transcript exactly once.
#![deny(clippy::print_stdout)]

pub mod agent;
pub(crate) mod batch;
pub(crate) mod budget;
pub(crate) mod changes;
pub(crate) mod ci;
pub mod cli;
pub mod config;
pub mod confine;
pub mod dispatch;
pub mod error;
pub(crate) mod events;
pub mod output;
pub mod policy;
pub(crate) mod process;
pub mod protocol;
pub(crate) mod provider;
pub mod scheduler;
pub(crate) mod secrets;
pub(crate) mod shell_words;
pub(crate) mod summary;
pub mod tools;
pub mod transcript;
pub(crate) mod turn;
pub(crate) mod verify;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde_json::json;

use crate::agent::{Agent, lock};
use crate::cli::{Cli, Command, ProviderKind, RunArgs, ToolsArgs};
use crate::config::{Config, ProcessEnv};
use crate::error::Error;
use crate::policy::PolicyGate;
use crate::provider::Provider;
use crate::provider::anthropic::{AnthropicConfig, AnthropicProvider, Recorder};
use crate::provider::cassette::{CassetteWriter, ReplayProvider};
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::tools::ToolContext;
use crate::tools::registry::Registry;
use crate::transcript::{ErrorInfo, RunRecord, Status};

/// Parses the arguments and runs the command.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print(); // help and version go to stdout, usage errors to stderr
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
    };
    match cli.command {
        Command::Run(args) => run_command(&args),
        Command::Tools(args) => tools_command(&args),
        Command::Batch(args) => batch::batch_command(&args),
        Command::Summary(args) => summary::summary_command(&args),
    }
}

/// Reports an error found before the run starts and gives its exit code.
fn usage_failure(e: &Error) -> ExitCode {
    output::error(&e.to_string());
    ExitCode::from(e.exit_code())
}

fn tools_command(args: &ToolsArgs) -> ExitCode {
    let selection = match config::tool_selection(&args.tools) {
        Ok(s) => s,
        Err(e) => return usage_failure(&e),
    };
    let registry = Registry::builtin(&selection);
    let empty = json!({});
    let tools: Vec<_> = registry
        .enabled()
        .iter()
        .map(|t| {
            json!({"name": t.name(), "description": t.description(),
                   "input_schema": t.input_schema(), "read_only": t.is_read_only(),
                   "destructive": t.is_destructive(),
                   "concurrency_safe": t.is_concurrency_safe(&empty),
                   "category": t.category().as_str()})
        })
        .collect();
    let api = provider::anthropic::api_tools(&registry.to_api_format());
    if args.json {
        let doc = json!({"tools": tools, "api_tools": api});
        output::print_stdout(&serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        let mut s = String::from("Enabled tools:\n");
        for t in registry.enabled() {
            let flags = [
                (t.is_read_only(), "read-only"),
                (t.is_destructive(), "destructive"),
                (t.is_concurrency_safe(&empty), "concurrency-safe"),
            ];
            let flags: Vec<_> = flags
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, n)| *n)
                .collect();
            s.push_str(&format!(
                "  {:<10} {:<7} {}\n",
                t.name(),
                t.category().as_str(),
                flags.join(", ")
            ));
        }
        s.push_str("\nThe `tools` array sent to the API:\n");
        s.push_str(&serde_json::to_string_pretty(&api).unwrap_or_default());
        output::print_stdout(&s);
    }
    ExitCode::SUCCESS
}

/// Writes the transcript exactly once, from whichever way out comes first.
struct Finisher {
    record: Arc<Mutex<RunRecord>>,
    json: bool,
    output_file: Option<PathBuf>,
    done: Mutex<bool>,
    /// `--jsonl`: `run.finished` carries the transcript instead of stdout's document.
    events: Arc<events::Events>,
    /// The workspace scan taken at the start, for `files_changed`.
    baseline: Option<changes::Baseline>,
    /// Tells the agent loop to stop once a way out has been taken.
    cancelled: Arc<AtomicBool>,
    /// Calls still running when the run ends are listed as unfinished.
    in_flight: Arc<transcript::InFlight>,
}

impl Finisher {
    /// Rewrites the `-o` file with the run so far (status `running`).
    fn checkpoint(&self) {
        // Held while writing, so that a checkpoint can never land after the final write.
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if *done {
            return;
        }
        if let Some(path) = &self.output_file {
            let doc = output::redact(&lock(&self.record).to_json(Status::Running, None));
            if let Err(e) = output::write_file_atomic(path, doc.as_bytes()) {
                output::warn(&format!("cannot write -o {}: {e}", path.display()));
            }
        }
    }

    /// Ends the run: kills running tools, writes `-o`, prints stdout and the summary.
    /// Returns the exit code, or None when another thread is already finishing.
    fn finish(&self, status: Status, error: Option<&ErrorInfo>) -> Option<u8> {
        {
            let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
            if *done {
                return None;
            }
            *done = true;
        }
        self.cancelled.store(true, Ordering::SeqCst);
        // Before the kill: a killed call would otherwise finish and leave the list.
        self.in_flight.settle(&mut lock(&self.record));
        process::kill_all_running();
        let orphans = process::kill_orphans();
        if orphans > 0 {
            output::warn(&format!(
                "killed {orphans} process(es) that tool commands left running in the background"
            ));
        }
        output::progress_done();
        if let Some(b) = &self.baseline {
            b.apply(&mut lock(&self.record));
        }

        let (doc, line, text, summary) = {
            let r = lock(&self.record);
            let summary = format!(
                "{} · {} turns · {} tool calls · {} in / {} out tokens · {:.1}s",
                status.as_str(),
                r.num_turns,
                r.tool_calls.len(),
                r.usage.input_tokens
                    + r.usage.cache_read_input_tokens
                    + r.usage.cache_creation_input_tokens,
                r.usage.output_tokens,
                r.started.elapsed().as_secs_f64()
            );
            let line = self.events.enabled().then(|| r.to_json_line(status, error));
            (
                output::redact(&r.to_json(status, error)),
                line,
                output::redact(&r.final_text()),
                summary,
            )
        };
        // A transcript or answer that could not be delivered is a failure, never exit 0.
        let mut delivered = true;
        if let Some(path) = &self.output_file
            && let Err(e) = output::write_file_atomic(path, doc.as_bytes())
        {
            output::error(&format!("cannot write -o {}: {e}", path.display()));
            delivered = false;
        }
        if let Some(e) = error {
            output::error(&e.message);
        }
        if let Some(line) = line {
            // The events writer redacts every line it prints.
            self.events.finish(
                json!({"status": status.as_str(), "exit_code": status.exit_code()}),
                &line,
            );
        } else if self.json {
            delivered &= output::print_stdout(&doc);
        } else if status == Status::Success {
            delivered &= output::print_stdout(&text);
        }
        output::info(&summary);
        match status.exit_code() {
            0 if !delivered => Some(1),
            code => Some(code),
        }
    }

    /// For the signal and deadline threads: finish and exit, or wait for the thread that
    /// is already finishing to exit the process.
    fn finish_and_exit(&self, status: Status, error: ErrorInfo) -> ! {
        if let Some(code) = self.finish(status, Some(&error)) {
            std::process::exit(i32::from(code));
        }
        loop {
            std::thread::park();
        }
    }
}

fn run_command(args: &RunArgs) -> ExitCode {
    // From the first moment: a signal before the run is set up still exits 130.
    watch_signals();
    process::adopt_orphans();
    let config = match Config::from_args(args, &ProcessEnv) {
        Ok(c) => c,
        Err(e) => return usage_failure(&e),
    };
    let mut secrets = crate::secrets::secret_values();
    secrets.push(config.api_key.clone());
    output::init(config.verbosity, secrets);

    let sandbox = match crate::confine::Confinement::build(&config.sandbox, &config.workspace) {
        Ok(s) => s,
        Err(e) => {
            output::error(&e);
            return ExitCode::from(Error::Usage(e).exit_code());
        }
    };
    if let Some(s) = &sandbox {
        output::debug(s.summary());
    }
    let registry = Registry::builtin(&config.tools);
    let mut provider = match make_provider(&config, &registry) {
        Ok(p) => p,
        Err(e) => return usage_failure(&e),
    };
    let ctx = ToolContext {
        workspace: config.workspace.clone(),
        spill_dir: spill_dir(),
        bash_timeout: config.bash_timeout,
        child_env: Arc::new(crate::secrets::scrubbed_env(
            std::env::vars(),
            &config.keep_env,
        )),
        sandbox,
    };
    let gate = PolicyGate::new(config.settings.clone(), &ctx, config.on_deny);
    let record = Arc::new(Mutex::new(RunRecord::new(
        &config.model,
        config.workspace.clone(),
        registry
            .enabled_names()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    )));
    let events = Arc::new(if config.jsonl {
        events::Events::stdout(lock(&record).started)
    } else {
        events::Events::disabled()
    });
    let ci = ci::CiRun::new(&config, events.clone());
    // The run's own files are not changes the run made to the workspace.
    let own_files = [&config.output_file, &config.record]
        .into_iter()
        .flatten()
        .map(|p| absolute(p))
        .collect();
    let finisher = Arc::new(Finisher {
        record: record.clone(),
        json: config.json,
        output_file: config.output_file.clone(),
        done: Mutex::new(false),
        events,
        // The file tools report their own changes; only commands (Bash, hooks, --verify)
        // can change files behind their back, so only then is the workspace scanned.
        baseline: commands_may_write(&config, &registry)
            .then(|| changes::Baseline::take(&config.workspace, own_files)),
        cancelled: Arc::new(AtomicBool::new(false)),
        in_flight: ci.in_flight.clone(),
    });
    let _ = FINISHER.set(finisher.clone());
    if let Some(limit) = config.timeout {
        let f = finisher.clone();
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            let msg = format!(
                "the run exceeded --timeout {}",
                humantime::format_duration(limit)
            );
            f.finish_and_exit(Status::Timeout, ErrorInfo::new("timeout", msg));
        });
    }
    finisher.checkpoint();

    let checkpoint = || finisher.checkpoint();
    let outcome = Agent {
        config: &config,
        registry: &registry,
        ctx: &ctx,
        gate: &gate,
        record: &record,
        checkpoint: &checkpoint,
        ci: &ci,
        cancelled: &finisher.cancelled,
    }
    .run(provider.as_mut());
    let diff_stat = changes::git_diff_stat(&ctx);
    lock(&record).git_diff_stat = diff_stat;
    match finisher.finish(outcome.status, outcome.error.as_ref()) {
        Some(code) => ExitCode::from(code),
        None => loop {
            std::thread::park(); // a signal or the deadline is finishing the run
        },
    }
}

/// `path` made absolute with its directory resolved (as the canonical workspace is).
fn absolute(path: &std::path::Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (
        abs.parent().and_then(|d| d.canonicalize().ok()),
        abs.file_name(),
    ) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => abs,
    }
}

/// Whether anything but the file tools may change the workspace during the run.
fn commands_may_write(config: &Config, registry: &Registry) -> bool {
    registry.get("Bash").is_some()
        || config.verify.is_some()
        || !config.settings.pre_tool_use.is_empty()
        || !config.settings.post_tool_use.is_empty()
}

/// Where this run saves oversized results and full command output.
fn spill_dir() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Canonical from the start: ReadFile's exception for it is checked on resolved paths.
    let temp = std::env::temp_dir();
    let temp = temp.canonicalize().unwrap_or(temp);
    temp.join(format!("agent-run-{}-{nanos}", std::process::id()))
}

/// The way out that signals take, once the run is set up.
static FINISHER: std::sync::OnceLock<Arc<Finisher>> = std::sync::OnceLock::new();

/// SIGINT and SIGTERM end the run with status `interrupted`, transcript written. A
/// signal that arrives before the run is set up (no transcript exists yet) exits 130 too.
fn watch_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            output::warn(&format!("cannot watch for signals: {e}"));
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            match FINISHER.get() {
                Some(f) => f.finish_and_exit(
                    Status::Interrupted,
                    ErrorInfo::new("interrupted", format!("interrupted by {name}")),
                ),
                None => {
                    output::error(&format!("interrupted by {name} before the run started"));
                    std::process::exit(i32::from(Status::Interrupted.exit_code()));
                }
            }
        }
    });
}

/// The provider of this run: cassette replay, or the Anthropic API or an
/// OpenAI-compatible server (optionally recorded).
fn make_provider(config: &Config, registry: &Registry) -> Result<Box<dyn Provider>, Error> {
    if let Some(path) = &config.replay {
        let replay = ReplayProvider::open(path, &config.workspace).map_err(Error::Usage)?;
        return Ok(Box::new(replay));
    }
    let recorder = match &config.record {
        Some(path) => Some(cassette_recorder(config, registry, path)?),
        None => None,
    };
    if config.provider == ProviderKind::Openai {
        let mut provider = OpenAiProvider::new(OpenAiConfig::from_config(config));
        if let Some(r) = recorder {
            provider.set_recorder(r);
        }
        return Ok(Box::new(provider));
    }
    let mut api = AnthropicConfig::new(config.base_url.clone(), config.api_key.clone());
    api.max_retries = config.max_retries;
    api.idle_timeout = config.idle_timeout;
    let mut provider = AnthropicProvider::new(api);
    if let Some(r) = recorder {
        provider.set_recorder(r);
    }
    Ok(Box::new(provider))
}

/// Appends each successful turn to the `--record` cassette, whose header names the
/// provider; a failing append is warned about once.
fn cassette_recorder(
    config: &Config,
    registry: &Registry,
    path: &std::path::Path,
) -> Result<Recorder, Error> {
    let names: Vec<String> = registry
        .enabled_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut writer = CassetteWriter::create(
        path,
        config.provider.as_str(),
        &config.model,
        &config.workspace,
        &names,
        // The model may echo a secret a tool printed: every known value is redacted.
        crate::secrets::secret_values()
            .into_iter()
            .chain([config.api_key.clone()])
            .collect(),
    )
    .map_err(|e| Error::Usage(format!("--record {}: {e}", path.display())))?;
    let shown = path.display().to_string();
    let mut failed = false;
    Ok(Box::new(move |request, sse| {
        if let Err(e) = writer.append(request, sse)
            && !failed
        {
            output::warn(&format!("cannot append to the cassette {shown}: {e}"));
            failed = true;
        }
    }))
}
