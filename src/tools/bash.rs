//! The Bash tool (SPEC §4): runs one shell command in the workspace root through the
//! shared child-process runner (`crate::process`), and turns its outcome into the
//! `<output>…</output>\n<exit_code>N</exit_code>` result the model reads. Process
//! handling (group, timeout, truncation, spill) lives in `process`; this file owns the
//! model-facing contract: input, description, result text and metadata.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool};
use crate::process::{self, CommandOutput, CommandSpec, OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS};

/// Longest timeout the model may ask for, in seconds: 10 minutes (SPEC §4), long enough
/// for a full build or test suite, short enough that a hung command cannot stall CI. A
/// larger `--bash-timeout` raises it to that default.
const MAX_TIMEOUT_SECS: u64 = 600;
/// `--bash-timeout`'s default: 2 minutes, the peers' default, since CI builds are slow.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

const DESCRIPTION: &str = "\
Runs a shell command with `bash -c` in the workspace root and returns its output and exit code.

Use it for builds, tests, linters, git, package managers and running programs. Do not use it to \
read, list, search or edit files: use ReadFile (not cat/head/tail), Glob (not find/ls -R), Grep \
(not grep/rg) and EditFile/WriteFile (not sed -i, echo >, heredocs). Those tools are faster and \
their output is made for you.

Constraints:
- Non-interactive: stdin is closed and there is no terminal. Anything that prompts, pages or \
opens an editor fails or ends at once, so pass flags like `--yes`, `-y`, `--no-edit`, \
`git --no-pager`.
- Every call starts a fresh shell in the workspace root: `cd`, exported variables and functions \
do not carry over to the next call. Chain steps in one command (`cd sub && make`).
- Timeout: {DEFAULT} unless you set `timeout` in seconds (1 to {MAX}). On timeout the command and every process it started are killed, and you get the output so \
far as an error. Give long builds and test suites a larger timeout instead of retrying.
- Processes a command leaves behind (`cmd &`) are killed when it finishes. To keep a server or \
watcher running for later calls, set `run_in_background: true`: the call returns at once with an \
id (bash_1, ...) and the pid; read its output with BashOutput and stop it with KillBash. At most \
{MAX_BG} run at once, `timeout` does not apply to them, and every one still running is killed \
when the run ends. Wait for a server with a bounded loop in the next command (`for i in $(seq \
50); do curl -s localhost:8000 && break; sleep 0.1; done`).
- stdout and stderr are merged in the order they were written. Output over 10,000 characters \
keeps the first 2,000 and the last 8,000 characters, with a marker saying how much was cut and \
the path of a file holding the full output (read it with ReadFile). Prefer commands with \
focused output (run one test, `-q`, `| tail -n 50`).
- Secrets (API keys, tokens, passwords) are removed from the environment.

Returns `<output>...</output>` then `<exit_code>N</exit_code>`. A non-zero exit code is a normal \
result for you to read (for example failing tests), not a tool failure.";

/// The Bash tool's input. Its schema is `input_schema` below; a test keeps them in step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashInput {
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    run_in_background: Option<bool>,
}

fn check(input: &BashInput, max_secs: u64) -> Result<(), ToolError> {
    if input.command.trim().is_empty() {
        return Err(ToolError::failed(
            "`command` is empty: give the shell command to run",
        ));
    }
    if input.command.contains('\0') {
        return Err(ToolError::failed(
            "`command` contains a NUL byte, which a shell cannot run",
        ));
    }
    if let Some(t) = input.timeout
        && !(1..=max_secs).contains(&t)
    {
        return Err(ToolError::failed(format!(
            "`timeout` must be between 1 and {max_secs} seconds, got {t}"
        )));
    }
    Ok(())
}

/// The tool, told the run's default timeout (`--bash-timeout`): the one place it lives,
/// applied when a call sets none and stated in the description and schema.
pub(crate) struct Bash {
    default_timeout: Duration,
    max_secs: u64,
    description: String,
}

impl Bash {
    /// States `--max-background` in the description (the run's `Jobs` enforces it).
    pub(crate) fn with_max_background(mut self, max: usize) -> Self {
        self.description = DESCRIPTION
            .replace("{DEFAULT}", &describe_default(self.default_timeout))
            .replace("{MAX}", &self.max_secs.to_string())
            .replace("{MAX_BG}", &max.to_string());
        self
    }
}

impl Bash {
    pub(crate) fn new(default_timeout: Duration) -> Self {
        let max_secs = MAX_TIMEOUT_SECS.max(default_timeout.as_secs_f64().ceil() as u64);
        Bash {
            default_timeout,
            max_secs,
            description: String::new(),
        }
        .with_max_background(super::background::DEFAULT_MAX_BACKGROUND)
    }
}

impl Default for Bash {
    fn default() -> Self {
        Bash::new(DEFAULT_TIMEOUT)
    }
}

/// "2 minutes", "90 seconds", "1m 31s": how the description states the default.
fn describe_default(d: Duration) -> String {
    let s = d.as_secs();
    match (s, d.subsec_nanos()) {
        (60, 0) => "1 minute".to_string(),
        (s, 0) if s >= 60 && s % 60 == 0 => format!("{} minutes", s / 60),
        _ => describe(d),
    }
}

impl TypedTool for Bash {
    type Input = BashInput;
    const TRAITS: Traits = Traits::SHELL;

    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The shell command to run with `bash -c` in the workspace root."
                },
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_secs,
                    "description": format!(
                        "Timeout in seconds (1 to {}). Default: {}. Raise it for long builds \
                         and test suites.",
                        self.max_secs,
                        describe_default(self.default_timeout)
                    )
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Run the command in the background and return at once with \
                        its id and pid (servers, watchers). Read its output with BashOutput, stop \
                        it with KillBash."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &BashInput) -> Subject {
        Subject::Command(input.command.clone())
    }

    fn validate(&self, input: &BashInput) -> Result<(), ToolError> {
        check(input, self.max_secs)
    }

    fn execute(&self, ctx: &ToolContext, input: &BashInput) -> Result<ToolResult, ToolError> {
        if !ctx.workspace.is_dir() {
            return Err(ToolError::Fatal(format!(
                "the workspace {} no longer exists",
                ctx.workspace.display()
            )));
        }
        let timeout = input
            .timeout
            .map_or(self.default_timeout, Duration::from_secs);
        let mut spec = CommandSpec::new(
            input.command.clone(),
            &ctx.workspace,
            ctx.child_env.clone(),
            timeout,
            &ctx.spill_dir,
        );
        // Confined like any Bash call (namespace tier, proxy environment, Landlock),
        // in the background too.
        if let Some(s) = &ctx.sandbox {
            s.confine(&mut spec);
        }
        if input.run_in_background == Some(true) {
            let job = ctx
                .background
                .start(spec, &input.command)
                .map_err(ToolError::Failed)?;
            return Ok(ToolResult::ok(format!(
                "Started in the background as {} (pid {}). Read its output with BashOutput \
                 {{\"bash_id\": \"{}\"}}; stop it with KillBash.",
                job.id, job.pid, job.id
            ))
            .with_meta("bash_id", job.id.as_str())
            .with_meta("pid", job.pid)
            .with_meta("background", true));
        }
        let out = process::run(&spec).map_err(ToolError::Failed)?;
        Ok(render(&out, timeout, self.max_secs))
    }
}

/// The result the model sees, and the metadata the transcript records.
fn render(out: &CommandOutput, timeout: Duration, max_secs: u64) -> ToolResult {
    let body = out.output.text.trim_end_matches('\n');
    let mut content = format!("<output>{body}</output>\n");
    let is_error = out.timed_out || out.interrupted;
    if out.timed_out {
        content.push_str(&format!(
            "<error>The command timed out after {} and was killed, together with every process \
             it started; the output above is what it printed until then. If it needs longer, \
             retry with a larger `timeout` (at most {max_secs} seconds) or do less in one \
             command.</error>",
            describe(timeout)
        ));
    } else if out.interrupted {
        content
            .push_str("<error>The command was killed because the agent run is stopping.</error>");
    } else {
        if let Some(code) = out.shell_status() {
            content.push_str(&format!("<exit_code>{code}</exit_code>"));
        }
        if let Some(sig) = out.signal {
            content.push_str(&format!("\n(the command was killed by signal {sig})"));
        }
        if out.pipe_left_open {
            content.push_str(
                "\n(a process that detached from the command still held its output open and was \
                 not waited for; output it printed after the command ended is missing)",
            );
        }
    }
    let path = out
        .output
        .full_output_path
        .as_ref()
        .map(|p| p.display().to_string());
    let result = if is_error {
        ToolResult::error(content)
    } else {
        ToolResult::ok(content)
    };
    result
        .with_meta("exit_code", out.exit_code)
        .with_meta("signal", out.signal)
        .with_meta(
            "duration_ms",
            u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX),
        )
        .with_meta("timed_out", out.timed_out)
        .with_meta("interrupted", out.interrupted)
        .with_meta("output_bytes", out.output.total_bytes)
        .with_meta("truncated", out.output.truncated)
        .with_meta("full_output_path", path)
}

/// "5 seconds" for whole seconds, rounded otherwise ("1s 500ms", `util::duration`).
fn describe(d: Duration) -> String {
    match (d.as_secs(), d.subsec_nanos()) {
        (1, 0) => "1 second".to_string(),
        (s, 0) => format!("{s} seconds"),
        _ => crate::util::duration::human(d),
    }
}

// The head and tail sizes quoted in DESCRIPTION must follow the runner's constants.
const _: () = assert!(OUTPUT_HEAD_CHARS == 2_000 && OUTPUT_TAIL_CHARS == 8_000);

#[cfg(test)]
#[path = "bash_tests.rs"]
mod tests;
