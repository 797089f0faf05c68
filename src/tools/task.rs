//! The Task tool: hands a self-contained job to a sub-agent, a nested agent loop with a
//! fresh history, and returns its answer as the result. The loop sits above the tools
//! (DESIGN.md's layers), so the tool cannot run one itself: the run lends it a
//! `Subagents` runner through `ToolContext` (`None` inside a sub-agent, which therefore
//! cannot start another).
//!
//! `explore` (the default) gets only the parent's read-only search tools and is
//! concurrency-safe, so several in one turn run in parallel; `general` gets the parent's
//! tools and runs alone, like any call that is not safe. It is offered only when the run
//! may write or run commands.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Category, PreparedCall, Subject, SubjectKind, Tool, ToolContext, ToolError, ToolResult,
    parse_input,
};

/// Characters of a `description` (a few words, for logs and the transcript).
const MAX_DESCRIPTION_CHARS: usize = 200;

/// Which kind of sub-agent a call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SubagentKind {
    /// Read-only search tools; runs in parallel with its neighbours.
    Explore,
    /// The parent's tools; runs alone.
    General,
}

impl SubagentKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SubagentKind::Explore => "explore",
            SubagentKind::General => "general",
        }
    }
}

/// One Task call, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubagentCall {
    pub(crate) description: String,
    pub(crate) prompt: String,
    pub(crate) kind: SubagentKind,
}

/// What runs a sub-agent: the loop's, lent by `agent run` (`run::agent::subagent`).
pub(crate) trait Subagents: Send + Sync + std::fmt::Debug {
    /// Runs the sub-agent to its end; `Ok` is its answer, `Err` why it has none.
    fn run(&self, call: &SubagentCall) -> Result<String, ToolError>;
}

/// Task's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskInput {
    description: String,
    prompt: String,
    #[serde(default)]
    subagent_type: Option<SubagentKind>,
}

const DESCRIPTION: &str = "\
Starts a sub-agent: a fresh model conversation with its own context that does one job and \
returns its final answer to you as this tool's result. Use it to keep your own context small: \
a broad search (\"where is X handled, and how?\"), reading many files to answer one question, or \
a review.

- `explore` (default): the sub-agent has only read-only tools (ReadFile, Glob, Grep and \
read-only MCP tools). Several explore Tasks in one turn run in parallel: start independent \
searches together.{GENERAL}
- The sub-agent cannot see this conversation: `prompt` must say everything it needs (the goal, \
the paths or names you know, what to report). It cannot start sub-agents itself.
- Its turns, tool calls and cost count against this run's budgets. Its answer is text for you, \
not for the user: read it and act.";

const GENERAL: &str = "\n- `general`: the sub-agent has the same tools as you (writing files, \
Bash) and runs alone, one at a time. Use it for a self-contained piece of work.";

/// The tool; `general` tells whether the `general` kind is offered.
pub(crate) struct Task {
    general: bool,
    description: String,
}

impl Task {
    pub(crate) fn new(general: bool) -> Self {
        let description = DESCRIPTION.replace("{GENERAL}", if general { GENERAL } else { "" });
        Task {
            general,
            description,
        }
    }

    fn kinds(&self) -> Vec<&'static str> {
        if self.general {
            vec!["explore", "general"]
        } else {
            vec!["explore"]
        }
    }

    fn parse(&self, input: &Value) -> Result<SubagentCall, ToolError> {
        let input: TaskInput = parse_input(input)?;
        let kind = input.subagent_type.unwrap_or(SubagentKind::Explore);
        if kind == SubagentKind::General && !self.general {
            return Err(ToolError::failed(
                "`subagent_type` \"general\" is not available in this run (it may not write \
                 files or run commands); use \"explore\"",
            ));
        }
        if input.prompt.trim().is_empty() {
            return Err(ToolError::failed(
                "`prompt` is empty: say what the sub-agent is to do and report",
            ));
        }
        if input.description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(ToolError::failed(format!(
                "`description` is over {MAX_DESCRIPTION_CHARS} characters: a few words; the \
                 job goes in `prompt`"
            )));
        }
        Ok(SubagentCall {
            description: input.description,
            prompt: input.prompt,
            kind,
        })
    }
}

impl Tool for Task {
    fn name(&self) -> &str {
        "Task"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A few words saying what the sub-agent does (for the logs)."},
                "prompt": {"type": "string", "description": "The whole job: goal, what you know, what to report."},
                "subagent_type": {"type": "string", "enum": self.kinds(), "description": "explore (default): read-only, parallel."}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }
    /// On like any read-only tool: an explore sub-agent can do only what the parent's
    /// read-only tools can; a general one only what the parent's own tools can.
    fn is_read_only(&self) -> bool {
        true
    }
    fn is_destructive(&self) -> bool {
        false
    }
    fn is_concurrency_safe(&self, input: &Value) -> bool {
        input.get("subagent_type").and_then(Value::as_str) != Some("general")
    }
    fn category(&self) -> Category {
        Category::Agent
    }
    fn subject_kind(&self) -> SubjectKind {
        SubjectKind::Nothing
    }
    /// A sub-agent's file tools report their changes in its own record; a general one
    /// with Bash makes the run scan anyway (the parent has Bash then).
    fn records_changes(&self) -> bool {
        true
    }
    fn max_result_chars(&self) -> Option<usize> {
        Some(super::DEFAULT_MAX_RESULT_CHARS)
    }
    fn prepare<'t>(&'t self, input: &Value) -> Result<Box<dyn PreparedCall + 't>, ToolError> {
        Ok(Box::new(Prepared(self.parse(input)?)))
    }
}

struct Prepared(SubagentCall);

impl PreparedCall for Prepared {
    fn subject(&self) -> Subject {
        Subject::Nothing
    }
    fn execute(&self, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let Some(runner) = &ctx.subagents else {
            return Err(ToolError::failed(
                "Task is not available here: a sub-agent cannot start sub-agents",
            ));
        };
        let answer = runner.run(&self.0)?;
        Ok(ToolResult::ok(answer).with_meta("subagent_type", self.0.kind.as_str()))
    }
}

#[cfg(test)]
#[path = "task_tests.rs"]
mod tests;
