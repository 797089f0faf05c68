//! The run's typed events as ACP `session/update` notifications: a `Sink` of the event
//! stream (`run::events`), so that what a prompt's run does reaches the client in the order
//! it happened. The model's text and thinking become message and thought chunks, each
//! tool call a `tool_call` when it starts (`pending`: kind, title, locations, a diff for
//! file edits), a `tool_call_update` `in_progress` when it passed the gate (a permission
//! request comes between the two) and one when it ends, the TodoWrite plan a `plan`. A Task sub-agent's
//! tool calls are shown too (their ids are their own); its messages are not (the Task
//! call's result says what it found).
//!
//! `available_commands_update`: `AcpUpdates::available_commands` is the hook a source of
//! slash commands (Agent Skills) calls; agent itself has none to advertise yet.

use std::path::Path;

use serde_json::{Value, json};

use super::wire::Out;
use crate::model::protocol::{ContentBlock, Message};
use crate::run::event::RunEvent;
use crate::run::events::{Emitted, Sink};

/// The `session/update` notifications of one session.
pub(crate) struct AcpUpdates {
    pub(crate) out: Out,
    pub(crate) session_id: String,
    /// The session's workspace: relative paths in tool inputs are shown under it.
    pub(crate) cwd: std::path::PathBuf,
    /// The turn's text already went out piece by piece (`assistant.delta`): its
    /// `assistant.message` then adds only the thinking.
    pub(crate) streamed: bool,
}

impl AcpUpdates {
    fn send(&self, update: Value) {
        self.out.notify(
            "session/update",
            json!({"sessionId": self.session_id, "update": update}),
        );
    }

    /// The commands the client may offer as `/name` (ACP `AvailableCommand`), when there
    /// are any (`available_commands`).
    pub(crate) fn announce_commands(&self, commands: &[(String, String)]) {
        if commands.is_empty() {
            return;
        }
        let list: Vec<Value> = commands
            .iter()
            .map(|(name, description)| {
                json!({"name": name, "description": description, "input": {"hint": "arguments"}})
            })
            .collect();
        self.send(json!({"sessionUpdate": "available_commands_update", "availableCommands": list}));
    }
}

/// The slash commands a session in `cwd` offers (`available_commands_update`): the Agent
/// Skills a prompt's run there would load (`/name args` runs one), discovered with the run
/// flags' skill options. None when discovery fails (the prompt's run says why).
pub(crate) fn available_commands(
    run: &crate::config::cli::RunArgs,
    cwd: &Path,
) -> Vec<(String, String)> {
    match crate::config::skills::SkillsConfig::discover(
        &run.skills,
        cwd,
        &crate::config::ProcessEnv,
    ) {
        Ok(found) => crate::skills::available_commands(&found),
        Err(_) => Vec::new(),
    }
}

impl Sink for AcpUpdates {
    fn event(&mut self, e: &Emitted<'_>) {
        let subagent = e.subagent_id.is_some();
        match e.event {
            RunEvent::TurnStarted(_) if !subagent => self.streamed = false,
            RunEvent::AssistantDelta(d) if !subagent && !d.text.is_empty() => {
                self.streamed = true;
                self.send(json!({"sessionUpdate": "agent_message_chunk",
                                 "content": {"type": "text", "text": d.text}}));
                return;
            }
            RunEvent::AssistantMessage(m) if !subagent && self.streamed => {
                if let Ok(mut message) = serde_json::from_str::<Message>(&m.message.0) {
                    message
                        .content
                        .retain(|b| matches!(b, ContentBlock::Thinking { .. }));
                    for u in message_chunks(&message, "agent") {
                        self.send(u);
                    }
                }
                return;
            }
            _ => {}
        }
        for u in updates(e.event, subagent, &self.cwd) {
            self.send(u);
        }
    }
}

/// The updates one event gives (none for most).
pub(crate) fn updates(event: &RunEvent, subagent: bool, cwd: &Path) -> Vec<Value> {
    match event {
        RunEvent::AssistantMessage(m) if !subagent => {
            match serde_json::from_str::<Message>(&m.message.0) {
                Ok(message) => message_chunks(&message, "agent"),
                Err(_) => Vec::new(),
            }
        }
        // `pending` until the call passed the gate (a permission request may come
        // first), then `in_progress` (the runs of `agent acp` announce `tool.running`).
        RunEvent::ToolStarted(t) => {
            let input = t.input.clone().unwrap_or(Value::Null);
            let mut call = tool_call(&t.id, &t.name, &input, cwd);
            call["status"] = json!("pending");
            vec![call]
        }
        RunEvent::ToolRunning(t) => vec![json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": t.id,
            "status": "in_progress",
        })],
        RunEvent::ToolFinished(t) => vec![json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": t.id,
            "status": if t.is_error || t.denied { "failed" } else { "completed" },
            "content": [text_content(&t.content)],
        })],
        RunEvent::PlanUpdated(p) if !subagent => vec![json!({
            "sessionUpdate": "plan",
            "entries": p.todos.iter().map(|t| {
                let v = serde_json::to_value(t).unwrap_or(Value::Null);
                json!({
                    "content": v["content"],
                    "priority": "medium",
                    "status": v["status"],
                })
            }).collect::<Vec<_>>(),
        })],
        _ => Vec::new(),
    }
}

/// A message's text and thinking blocks as chunks (`who`: `agent` or `user`); tool
/// blocks are left to the tool events.
pub(crate) fn message_chunks(message: &Message, who: &str) -> Vec<Value> {
    let chunk = |kind: &str, text: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                Some(chunk(&format!("{who}_message_chunk"), text))
            }
            ContentBlock::Thinking { thinking, .. } if who == "agent" && !thinking.is_empty() => {
                Some(chunk("agent_thought_chunk", thinking))
            }
            _ => None,
        })
        .collect()
}

fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// A `tool_call` (status `in_progress`; a call that waits at the gate is sent `pending`).
pub(crate) fn tool_call(id: &str, name: &str, input: &Value, cwd: &Path) -> Value {
    let mut call = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": title(name, input),
        "kind": kind(name),
        "status": "in_progress",
        "rawInput": input,
    });
    if let Some(path) = input["path"].as_str() {
        let abs = cwd.join(path).display().to_string();
        call["locations"] = json!([{"path": abs}]);
        if let Some(diff) = diff(name, input, &abs) {
            call["content"] = json!([diff]);
        }
    }
    call
}

/// The file change a call makes, as ACP's `diff` content.
fn diff(name: &str, input: &Value, abs: &str) -> Option<Value> {
    match name {
        "EditFile" => Some(json!({"type": "diff", "path": abs,
            "oldText": input["old_string"].as_str()?, "newText": input["new_string"].as_str()?})),
        "WriteFile" => Some(json!({"type": "diff", "path": abs, "oldText": null,
            "newText": input["content"].as_str()?})),
        _ => None,
    }
}

/// ACP's category of a tool (the client picks an icon by it).
pub(crate) fn kind(name: &str) -> &'static str {
    match name {
        "ReadFile" => "read",
        "WriteFile" | "EditFile" | "apply_patch" => "edit",
        "Glob" | "Grep" => "search",
        "Bash" | "BashOutput" | "KillBash" => "execute",
        "WebFetch" => "fetch",
        "TodoWrite" | "Task" => "think",
        _ => "other",
    }
}

/// A short human title: the command, the path, the pattern.
pub(crate) fn title(name: &str, input: &Value) -> String {
    let s = |k: &str| {
        input[k]
            .as_str()
            .map(|v| crate::util::text::ellipsis(v, 120))
    };
    let detail = match name {
        "Bash" => s("command"),
        "Glob" | "Grep" => s("pattern"),
        "WebFetch" => s("url"),
        "Task" => s("description"),
        _ => s("path"),
    };
    match detail {
        Some(d) => format!("{name} {d}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
#[path = "updates_tests.rs"]
mod tests;
