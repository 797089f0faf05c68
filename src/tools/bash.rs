//! The Bash tool (SPEC §4): runs one shell command in the workspace root through the
//! shared child-process runner (`crate::process`), and turns its outcome into the
//! `<output>…</output>\n<exit_code>N</exit_code>` result the model reads. Process
//! handling (group, timeout, truncation, spill) lives in `process`; this file owns the
//! model-facing contract: input, description, result text and metadata.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Category, Subject, SubjectKind, ToolContext, ToolError, ToolResult, TypedTool};
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
- Background processes (`cmd &`) are killed when the command finishes: you cannot leave a \
server running for a later call; start it, use it and stop it within one command.
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

/// The tool, told the run's default timeout (`--bash-timeout`), which its description
/// and schema state.
pub(crate) struct Bash {
    default_timeout: Duration,
    max_secs: u64,
    description: String,
}

impl Bash {
    pub(crate) fn new(default_timeout: Duration) -> Self {
        let max_secs = MAX_TIMEOUT_SECS.max(default_timeout.as_secs_f64().ceil() as u64);
        let description = DESCRIPTION
            .replace("{DEFAULT}", &describe_default(default_timeout))
            .replace("{MAX}", &max_secs.to_string());
        Bash {
            default_timeout,
            max_secs,
            description,
        }
    }
}

impl Default for Bash {
    fn default() -> Self {
        Bash::new(DEFAULT_TIMEOUT)
    }
}

/// "2 minutes", "90 seconds", "1m 30s 500ms": how the description states the default.
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
                }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn is_destructive(&self) -> bool {
        true
    }

    fn category(&self) -> Category {
        Category::Shell
    }

    fn subject_kind(&self) -> SubjectKind {
        SubjectKind::Command
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
        let timeout = input.timeout.map_or(ctx.bash_timeout, Duration::from_secs);
        let mut spec = CommandSpec::new(
            input.command.clone(),
            &ctx.workspace,
            ctx.child_env.clone(),
            timeout,
            &ctx.spill_dir,
        );
        spec.pre_exec = ctx.sandbox.as_ref().map(|s| s.pre_exec());
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

/// "5 seconds" for whole seconds, humantime's "1s 500ms" otherwise.
fn describe(d: Duration) -> String {
    match (d.as_secs(), d.subsec_nanos()) {
        (1, 0) => "1 second".to_string(),
        (s, 0) => format!("{s} seconds"),
        _ => humantime::format_duration(d).to_string(),
    }
}

// The head and tail sizes quoted in DESCRIPTION must follow the runner's constants.
const _: () = assert!(OUTPUT_HEAD_CHARS == 2_000 && OUTPUT_TAIL_CHARS == 8_000);

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use serde::de::{self, Deserializer, Visitor};

    use super::*;
    use crate::tools::parse_input;
    use crate::tools::schema;
    use crate::tools::test_support::ctx;
    use crate::tools::test_support::{check_input, exec};

    fn run_bash(dir: &Path, input: Value) -> ToolResult {
        let c = ctx(dir);
        let tool = Bash::default();
        schema::validate(&tool.input_schema(), &input).unwrap();
        check_input(&tool, &input).unwrap();
        match exec(&tool, &c, &input) {
            Ok(r) => r,
            Err(e) => ToolResult::error(e.message()),
        }
    }

    /// Field names of a `Deserialize` struct, read from serde itself.
    fn struct_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
        struct Introspect<'a>(&'a mut &'static [&'static str]);
        impl<'de> Deserializer<'de> for Introspect<'_> {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                *self.0 = fields;
                Err(de::Error::custom("introspected"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
                enum identifier ignored_any
            }
        }
        let mut fields: &'static [&'static str] = &[];
        let _ = T::deserialize(Introspect(&mut fields));
        fields
    }

    #[test]
    fn schema_and_struct_agree() {
        let schema_v = Bash::default().input_schema();
        let props = schema_v["properties"].as_object().unwrap();
        let mut prop_names: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut fields = struct_fields::<BashInput>().to_vec();
        prop_names.sort();
        fields.sort();
        assert_eq!(prop_names, fields);
        assert!(
            props
                .values()
                .all(|p| p["description"].as_str().is_some_and(|d| !d.is_empty()))
        );
        assert_eq!(schema_v["additionalProperties"], json!(false));

        let full = json!({"command": "true", "timeout": 5});
        schema::validate(&schema_v, &full).unwrap();
        parse_input::<BashInput>(&full).unwrap();
        // Required in the schema = the fields serde cannot do without.
        let mut required: Vec<&str> = schema_v["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut non_optional: Vec<&str> = fields
            .iter()
            .copied()
            .filter(|f| {
                let mut without = full.clone();
                without.as_object_mut().unwrap().remove(*f);
                parse_input::<BashInput>(&without).is_err()
            })
            .collect();
        required.sort();
        non_optional.sort();
        assert_eq!(required, non_optional);
        // Unknown fields are refused by both.
        let extra = json!({"command": "true", "cwd": "/"});
        assert!(schema::validate(&schema_v, &extra).is_err());
        assert!(parse_input::<BashInput>(&extra).is_err());
    }

    #[test]
    fn metadata_flags() {
        assert!(!Bash::default().is_read_only());
        assert!(Bash::default().is_destructive());
        assert!(!Bash::default().is_concurrency_safe());
        assert_eq!(Bash::default().category(), Category::Shell);
    }

    #[test]
    fn validate_input_refuses_bad_input() {
        for (input, needle) in [
            (json!({"command": "  "}), "empty"),
            (json!({"command": "a\u{0}b"}), "NUL"),
            (json!({"command": "ls", "timeout": 0}), "between 1 and 600"),
            (
                json!({"command": "ls", "timeout": 601}),
                "between 1 and 600",
            ),
            (json!({"command": "ls", "timeout": "5"}), "invalid input"),
            (json!({}), "command"),
        ] {
            let e = check_input(&Bash::default(), &input).unwrap_err();
            assert!(e.message().contains(needle), "{input}: {e}");
        }
        assert_eq!(
            check_input(&Bash::default(), &json!({"command": "ls", "timeout": 600})),
            Ok(())
        );
    }

    #[test]
    fn result_format_and_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(dir.path(), json!({"command": "echo hi"}));
        assert!(!r.is_error);
        assert_eq!(r.content, "<output>hi</output>\n<exit_code>0</exit_code>");
        assert_eq!(r.metadata["exit_code"], json!(0));
        assert_eq!(r.metadata["timed_out"], json!(false));
        assert_eq!(r.metadata["output_bytes"], json!(3));
        assert_eq!(r.metadata["full_output_path"], Value::Null);
        assert!(r.metadata["duration_ms"].is_u64());
    }

    #[test]
    fn nonzero_exit_is_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(dir.path(), json!({"command": "echo failing >&2; exit 3"}));
        assert!(!r.is_error);
        assert_eq!(
            r.content,
            "<output>failing</output>\n<exit_code>3</exit_code>"
        );
        assert_eq!(r.metadata["exit_code"], json!(3));
    }

    #[test]
    fn background_sleep_returns_promptly() {
        let dir = tempfile::tempdir().unwrap();
        // A hang would show as timed_out (the test still ends), not as a slow pass.
        let r = run_bash(
            dir.path(),
            json!({"command": "sleep 30 & echo started", "timeout": 600}),
        );
        assert!(!r.is_error, "{}", r.content);
        assert_eq!(
            r.content,
            "<output>started</output>\n<exit_code>0</exit_code>"
        );
    }

    #[test]
    fn timeout_is_an_error_with_the_output_so_far() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(
            dir.path(),
            json!({"command": "echo before; sleep 300", "timeout": 1}),
        );
        assert!(r.is_error);
        assert!(
            r.content.starts_with("<output>before</output>\n"),
            "{}",
            r.content
        );
        assert!(
            r.content.contains("timed out after 1 second"),
            "{}",
            r.content
        );
        assert_eq!(r.metadata["timed_out"], json!(true));
        assert_eq!(r.metadata["exit_code"], Value::Null);
    }

    #[test]
    fn huge_output_is_about_ten_thousand_chars_with_the_full_file_saved() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(
            dir.path(),
            json!({"command": "yes | head -c 100000000", "timeout": 600}),
        );
        assert!(!r.is_error);
        let chars = r.content.chars().count();
        assert!((10_000..10_600).contains(&chars), "{chars}");
        let path = r.metadata["full_output_path"].as_str().unwrap();
        assert!(r.content.contains(path));
        assert_eq!(std::fs::metadata(path).unwrap().len(), 100_000_000);
        assert_eq!(r.metadata["output_bytes"], json!(100_000_000));
        assert_eq!(r.metadata["truncated"], json!(true));
    }

    #[test]
    fn secrets_are_not_in_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path());
        let parent = vec![
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            ("FOO_API_KEY".to_string(), "sk-should-not-leak".to_string()),
            ("VISIBLE".to_string(), "yes".to_string()),
        ];
        c.child_env = Arc::new(crate::secrets::scrubbed_env(parent.into_iter(), &[]));
        let r = exec(&Bash::default(), &c, &json!({"command": "env"})).unwrap();
        assert!(r.content.contains("VISIBLE=yes"), "{}", r.content);
        assert!(!r.content.contains("FOO_API_KEY"), "{}", r.content);
        assert!(!r.content.contains("sk-should-not-leak"));
    }

    #[test]
    fn streams_interleave_in_order_and_stdin_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(
            dir.path(),
            json!({"command": "echo a; echo b >&2; echo c", "timeout": 600}),
        );
        assert_eq!(
            r.content,
            "<output>a\nb\nc</output>\n<exit_code>0</exit_code>"
        );
        // `cat` with stdin closed reads end of file at once; a hang would be a timeout.
        let r = run_bash(dir.path(), json!({"command": "cat", "timeout": 600}));
        assert_eq!(r.content, "<output></output>\n<exit_code>0</exit_code>");
    }

    #[test]
    fn runs_in_the_workspace_root() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(dir.path(), json!({"command": "pwd -P"}));
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            r.content,
            format!(
                "<output>{}</output>\n<exit_code>0</exit_code>",
                root.display()
            )
        );
    }

    #[test]
    fn killed_by_a_signal_reports_the_shell_status() {
        let dir = tempfile::tempdir().unwrap();
        let r = run_bash(dir.path(), json!({"command": "kill -KILL $$"}));
        assert!(!r.is_error);
        assert!(
            r.content.contains("<exit_code>137</exit_code>"),
            "{}",
            r.content
        );
        assert!(r.content.contains("signal 9"), "{}", r.content);
    }

    #[test]
    fn missing_workspace_is_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path());
        c.workspace = dir.path().join("gone");
        let e = exec(&Bash::default(), &c, &json!({"command": "true"})).unwrap_err();
        assert!(matches!(e, ToolError::Fatal(_)), "{e:?}");
    }
}
