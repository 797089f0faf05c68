//! `--output-schema`: the run's final answer is a JSON value checked against a JSON Schema
//! (draft 2020-12 by default; draft-07 and the others `jsonschema` knows via `$schema`).
//! This file owns loading and compiling the schema, the `StructuredOutput` tool the model
//! answers with (offered by every provider alike), the violation message it gets back, and
//! the count of answers against `--max-schema-retries`.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::model::protocol::Message;
use crate::model::turn::PendingCall;
use crate::tools::{
    Category, PreparedCall, Subject, SubjectKind, Tool, ToolContext, ToolError, ToolResult,
};

/// The tool the model finishes with; its `input_schema` is the user's schema.
pub(crate) const TOOL_NAME: &str = "StructuredOutput";

/// Violations listed in one error result; more are counted, not listed (a wrong array of
/// 1,000 items must not flood the context).
const MAX_LISTED_VIOLATIONS: usize = 20;

/// A schema given on the command line larger than this is refused: it is sent with every
/// request (as the tool's input_schema).
const MAX_SCHEMA_BYTES: usize = 256 * 1024;

/// Told to the model in the system prompt when `--output-schema` is given.
pub(crate) const SYSTEM_PROMPT_NOTE: &str = "\n\n# Final answer\nThis run needs a structured \
final answer. When the task is done, finish by calling the StructuredOutput tool exactly once, \
with your answer as its input: a JSON value that matches the tool's input schema. Do not \
write the answer as text; the run ends when the StructuredOutput call is accepted, and \
nothing written after it is read. If the call is rejected, the error lists what does not \
match: call StructuredOutput again with a corrected answer.";

const TOOL_DESCRIPTION: &str = "Give the final answer of the run as structured data. Call \
this once, when the task is done, as your last action: its input is the answer, and it must \
match this tool's input schema exactly (required fields, types, allowed values). The run \
ends when the answer is accepted. If it does not match, the error result lists each failing \
path; correct those and call it again. Use the other tools for the work itself, never this \
one.";

/// A compiled `--output-schema`. Cheap to clone (the validator is shared).
#[derive(Clone)]
pub(crate) struct OutputSchema {
    schema: Value,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// `--output-schema FILE|JSON`: inline JSON when the argument starts with `{`, else a
    /// file. The error names the flag and says what is wrong.
    pub(crate) fn from_arg(arg: &str) -> Result<Self, String> {
        let (text, source) = if arg.trim_start().starts_with('{') {
            (arg.to_string(), "the inline schema".to_string())
        } else {
            let path = Path::new(arg);
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("--output-schema {arg}: {e}"))?;
            (text, arg.to_string())
        };
        if text.len() > MAX_SCHEMA_BYTES {
            return Err(format!(
                "--output-schema {source}: the schema has {} bytes, more than the \
                 {MAX_SCHEMA_BYTES} allowed (it is sent with every request)",
                text.len()
            ));
        }
        let schema: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--output-schema {source}: not valid JSON: {e}"))?;
        Self::compile(schema).map_err(|e| format!("--output-schema {source}: {e}"))
    }

    /// Checks the schema against its draft's meta-schema and compiles it.
    pub(crate) fn compile(schema: Value) -> Result<Self, String> {
        let Some(obj) = schema.as_object() else {
            return Err("the schema must be a JSON object".into());
        };
        // Every provider takes tool inputs as objects, so the answer is one.
        if obj.get("type") != Some(&Value::String("object".into())) {
            return Err(
                "the schema's root must have \"type\": \"object\" (the answer is \
                 the input of a tool call; put other values in a property)"
                    .into(),
            );
        }
        if let Some(uri) = obj.get("$schema") {
            let known = uri.as_str().is_some_and(|u| {
                jsonschema::Draft::from_schema_uri(u) != jsonschema::Draft::Unknown
            });
            if !known {
                return Err(format!(
                    "unknown $schema {uri}: use draft 2020-12 \
                     (https://json-schema.org/draft/2020-12/schema) or draft-07 \
                     (http://json-schema.org/draft-07/schema#)"
                ));
            }
        }
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("invalid JSON Schema: {}", describe(&e)))?;
        Ok(OutputSchema {
            schema,
            validator: Arc::new(validator),
        })
    }

    /// The `input_schema` of the StructuredOutput tool: the schema without its `$schema`
    /// (the APIs take a plain schema object; the draft only matters to our validator).
    pub(crate) fn tool_input_schema(&self) -> Value {
        let mut s = self.schema.clone();
        if let Some(o) = s.as_object_mut() {
            o.remove("$schema");
        }
        s
    }

    /// Each violation as `path: message`, in the validator's order.
    pub(crate) fn violations(&self, answer: &Value) -> Vec<String> {
        self.validator
            .iter_errors(answer)
            .map(|e| {
                format!(
                    "{}: {}",
                    shown_path(&e.instance_path().to_string()),
                    describe(&e)
                )
            })
            .collect()
    }

    /// Ok, or the error result the model gets: every failing path (up to a limit) and
    /// what to do.
    pub(crate) fn check(&self, answer: &Value) -> Result<(), String> {
        let v = self.violations(answer);
        if v.is_empty() {
            return Ok(());
        }
        let mut msg = format!(
            "The answer does not match the output schema ({} violation{}):\n",
            v.len(),
            if v.len() == 1 { "" } else { "s" }
        );
        for line in v.iter().take(MAX_LISTED_VIOLATIONS) {
            msg.push_str("- ");
            msg.push_str(line);
            msg.push('\n');
        }
        if v.len() > MAX_LISTED_VIOLATIONS {
            msg.push_str(&format!(
                "- … and {} more\n",
                v.len() - MAX_LISTED_VIOLATIONS
            ));
        }
        msg.push_str(&format!("Call {TOOL_NAME} again with a corrected answer."));
        Err(msg)
    }
}

/// A JSON pointer as the model reads it: the root is `(root)`.
fn shown_path(pointer: &str) -> String {
    if pointer.is_empty() {
        "(root)".to_string()
    } else {
        pointer.to_string()
    }
}

/// The validator's message, on one line.
fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    e.to_string().replace('\n', " ")
}

/// The user message sent when the model stopped without calling the tool.
pub(crate) fn missing_answer_message() -> String {
    format!(
        "You stopped without giving the final answer. Call the {TOOL_NAME} tool now, with \
         an input that matches its schema."
    )
}

/// The tool the model answers with. Checking is all it does: the loop reads the accepted
/// answer from the call's input.
#[derive(Debug)]
pub(crate) struct AnswerTool {
    schema: OutputSchema,
}

impl AnswerTool {
    pub(crate) fn new(schema: OutputSchema) -> Self {
        AnswerTool { schema }
    }
}

impl Tool for AnswerTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn description(&self) -> &str {
        TOOL_DESCRIPTION
    }
    fn input_schema(&self) -> Value {
        self.schema.tool_input_schema()
    }
    fn is_read_only(&self) -> bool {
        true
    }
    fn is_destructive(&self) -> bool {
        false
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }
    fn category(&self) -> Category {
        Category::Answer
    }
    fn subject_kind(&self) -> SubjectKind {
        SubjectKind::Nothing
    }
    /// It changes nothing.
    fn records_changes(&self) -> bool {
        true
    }
    /// The violation list is already bounded (`MAX_LISTED_VIOLATIONS`).
    fn max_result_chars(&self) -> Option<usize> {
        None
    }
    /// The whole schema is checked here, so that every failing path is listed.
    fn checks_own_schema(&self) -> bool {
        true
    }
    fn prepare<'t>(&'t self, input: &Value) -> Result<Box<dyn PreparedCall + 't>, ToolError> {
        self.schema.check(input).map_err(ToolError::Failed)?;
        Ok(Box::new(Accepted))
    }
}

/// A valid answer: running it only says so.
struct Accepted;

impl PreparedCall for Accepted {
    fn subject(&self) -> Subject {
        Subject::Nothing
    }
    fn execute(&self, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::ok("Answer accepted."))
    }
}

/// Whether every call of a turn is an answer (such a turn may run on the last allowed
/// turn: it runs nothing but the check).
pub(crate) fn only_answers(calls: &[PendingCall]) -> bool {
    !calls.is_empty() && calls.iter().all(|c| c.name == TOOL_NAME)
}

/// What a turn's answers came to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Judged {
    /// The turn made no answer call.
    NoAnswer,
    /// The last valid answer of the turn.
    Accepted(Value),
    /// Every answer was rejected (the results told the model why); corrections are left.
    Rejected,
    /// Rejected, and no correction is left: the run fails with this message.
    Exhausted(String),
}

/// The answers of a run, counted against `--max-schema-retries`: 1 + N in all, where
/// stopping without an answer counts as one.
#[derive(Debug)]
pub(crate) struct Answers {
    max_retries: u32,
    rejected: u32,
}

impl Answers {
    pub(crate) fn new(max_retries: u32) -> Self {
        Answers {
            max_retries,
            rejected: 0,
        }
    }

    /// Judges a turn's answer calls from their results (in the calls' order).
    pub(crate) fn judge(&mut self, calls: &[PendingCall], results: &[&ToolResult]) -> Judged {
        let mut accepted = None;
        let mut last_problem = None;
        for (call, result) in calls.iter().zip(results) {
            if call.name != TOOL_NAME {
                continue;
            }
            match (&call.input, result.is_error) {
                (Ok(v), false) => accepted = Some(v.clone()),
                _ => last_problem = Some(result.content.clone()),
            }
        }
        match (accepted, last_problem) {
            (Some(v), _) => Judged::Accepted(v),
            (None, None) => Judged::NoAnswer,
            (None, Some(problem)) => self.reject(&problem),
        }
    }

    /// The model stopped without an answer: the message asking for one, or the failure.
    pub(crate) fn missing(&mut self) -> Result<Message, String> {
        match self.reject("the model stopped without calling StructuredOutput") {
            Judged::Exhausted(m) => Err(m),
            _ => Ok(Message::user_text(missing_answer_message())),
        }
    }

    fn reject(&mut self, problem: &str) -> Judged {
        self.rejected += 1;
        if self.rejected <= self.max_retries {
            return Judged::Rejected;
        }
        Judged::Exhausted(format!(
            "no answer matching --output-schema in {} attempt{} (--max-schema-retries {}); \
             the last problem: {}",
            self.rejected,
            if self.rejected == 1 { "" } else { "s" },
            self.max_retries,
            problem.replace('\n', " ")
        ))
    }
}

#[cfg(test)]
#[path = "structured_tests.rs"]
mod tests;
