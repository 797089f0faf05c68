//! The TodoWrite tool: the model's plan for the task, a list of items each pending, in
//! progress or completed, which every call replaces whole. It has no side effects (always
//! on, concurrency-safe); the run's `Plan` (in `ToolContext`) keeps the current list and
//! tells its observer of each change, which `agent run` turns into the transcript's
//! `plan`/`plan_history`, the `plan.updated` event and the CI log's lines.

use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Category, SubjectKind, ToolContext, ToolError, ToolResult, Traits, TypedTool};
use crate::util::sync::Locked;

/// Items a plan may hold: a plan, not a backlog.
const MAX_TODOS: usize = 100;
/// Characters of one item's `content` or `activeForm`: a line, not a document.
const MAX_TODO_CHARS: usize = 500;

const DESCRIPTION: &str = "\
Writes your plan for the task: a list of steps, each pending, in_progress or completed. Each call \
replaces the whole list, so always send every item.

Use it for tasks of three steps or more: write the plan before you start, mark a step \
in_progress when you begin it (one at a time) and completed as soon as it is done, and add steps \
you discover. It is how the people watching the CI job follow your progress. Skip it for a \
single simple step.

Each item: `content` (the step, imperative: \"Run the tests\"), `status`, and optionally \
`activeForm` (the same step while it runs: \"Running the tests\").";

/// One step of the plan, as the model writes it and the transcript keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Todo {
    pub(crate) content: String,
    pub(crate) status: TodoStatus,
    #[serde(
        default,
        rename = "activeForm",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) active_form: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl Todo {
    /// `[x] Run the tests`, `[>] Running the tests`, `[ ] Fix the bug`: the CI log's line.
    pub(crate) fn line(&self) -> String {
        match self.status {
            TodoStatus::Completed => format!("[x] {}", self.content),
            TodoStatus::InProgress => format!(
                "[>] {}",
                self.active_form.as_deref().unwrap_or(&self.content)
            ),
            TodoStatus::Pending => format!("[ ] {}", self.content),
        }
    }
}

/// TodoWrite's input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodoWriteInput {
    todos: Vec<Todo>,
}

type Observer = Box<dyn Fn(&[Todo]) + Send + Sync>;

/// The run's plan: the current list, and who hears of each change.
#[derive(Default)]
pub(crate) struct Plan {
    todos: Mutex<Vec<Todo>>,
    observer: OnceLock<Observer>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan").finish_non_exhaustive()
    }
}

impl Plan {
    /// Who hears of each change (`agent run`: the record, `--jsonl`, the log). Once.
    pub(crate) fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    /// The current list.
    #[cfg(test)]
    pub(crate) fn todos(&self) -> Vec<Todo> {
        self.todos.locked().clone()
    }

    /// Replaces the list; true when it changed (the observer is told only then). The
    /// lock is held while the observer runs, so that changes are told in their order.
    fn replace(&self, todos: Vec<Todo>) -> bool {
        let mut current = self.todos.locked();
        if *current == todos {
            return false;
        }
        *current = todos;
        if let Some(o) = self.observer.get() {
            o(&current);
        }
        true
    }
}

pub(crate) struct TodoWrite;

impl TypedTool for TodoWrite {
    type Input = TodoWriteInput;
    /// No side effects: always on, runs in parallel, rules name the tool only.
    const TRAITS: Traits = Traits {
        read_only: true,
        destructive: false,
        concurrency_safe: true,
        category: Category::Plan,
        subject_kind: SubjectKind::Nothing,
        records_changes: true,
        companion_of: None,
        edit_style: super::EditStyle::Any,
    };

    fn name(&self) -> &str {
        "TodoWrite"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole plan, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "The step, imperative."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "description": "The step while it runs."}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    fn validate(&self, input: &TodoWriteInput) -> Result<(), ToolError> {
        if input.todos.len() > MAX_TODOS {
            return Err(ToolError::failed(format!(
                "the plan has {} items; at most {MAX_TODOS} are kept: merge small steps",
                input.todos.len()
            )));
        }
        for (i, t) in input.todos.iter().enumerate() {
            if t.content.trim().is_empty() {
                return Err(ToolError::failed(format!(
                    "todos[{i}].content is empty: say what the step is"
                )));
            }
            for (field, text) in [
                ("content", Some(&t.content)),
                ("activeForm", t.active_form.as_ref()),
            ] {
                if let Some(text) = text
                    && text.chars().count() > MAX_TODO_CHARS
                {
                    return Err(ToolError::failed(format!(
                        "todos[{i}].{field} is over {MAX_TODO_CHARS} characters: one line per step"
                    )));
                }
            }
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &TodoWriteInput) -> Result<ToolResult, ToolError> {
        // One line per item, so a newline in the model's text cannot forge a log line.
        let todos: Vec<Todo> = input
            .todos
            .iter()
            .map(|t| Todo {
                content: one_line(&t.content),
                status: t.status,
                active_form: t.active_form.as_deref().map(one_line),
            })
            .collect();
        let count = |s| todos.iter().filter(|t| t.status == s).count();
        let summary = format!(
            "{} completed, {} in progress, {} pending",
            count(TodoStatus::Completed),
            count(TodoStatus::InProgress),
            count(TodoStatus::Pending)
        );
        let changed = ctx.plan.replace(todos);
        let content = if changed {
            format!("The plan is updated ({summary}). Keep it current as you work.")
        } else {
            format!("The plan is unchanged ({summary}).")
        };
        Ok(ToolResult::ok(content).with_meta("changed", changed))
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "todo_write_tests.rs"]
mod tests;
