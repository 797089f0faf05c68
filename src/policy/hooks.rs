//! PreToolUse / PostToolUse hooks (SPEC §6) and PreCompact / PostCompact: their settings
//! entries, which tools they apply to, and running one with the call's JSON on stdin: exit 0 continues, exit 2
//! blocks with its stderr, anything else is a failure (and hooks fail closed).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::rules::{check_tool, names};
use crate::otel;
use crate::process::{self, CommandSpec, Stderr};
use crate::tools::KnownTool;
use crate::util::output;

/// A hook runs at most this long unless its `timeout` says otherwise (SPEC §6).
const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HooksSection {
    #[serde(rename = "PreToolUse", default)]
    pub(super) pre_tool_use: Vec<HookFile>,
    #[serde(rename = "PostToolUse", default)]
    pub(super) post_tool_use: Vec<HookFile>,
    #[serde(rename = "PreCompact", default)]
    pub(super) pre_compact: Vec<HookFile>,
    #[serde(rename = "PostCompact", default)]
    pub(super) post_compact: Vec<HookFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HookFile {
    #[serde(default)]
    matcher: Option<String>,
    command: String,
    #[serde(default)]
    timeout: Option<TimeoutValue>,
}

/// `"10s"` (humantime) or a number of seconds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TimeoutValue {
    Text(String),
    /// Any JSON number; checked (positive, finite) where the hook is built, so that a
    /// bad value gets a message naming the hook's `timeout`, not serde's.
    Seconds(f64),
    /// Anything else (`true`, `[]`): refused with the same clear message.
    Other(Value),
}

/// One hook command and the tools it applies to.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// `None`: every tool (`*`).
    pub tools: Option<Vec<String>>,
    pub command: String,
    pub timeout: Duration,
}

impl Hook {
    /// A PreCompact or PostCompact hook: its matcher names the trigger, and a run nobody
    /// watches has one, `auto` (Claude Code's name; its `manual` is `/compact`, which a
    /// headless run has not).
    pub(super) fn compaction_from_file(h: HookFile) -> Result<Hook, String> {
        match h.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") | Some("auto") => {}
            Some(m) => {
                return Err(format!(
                    "matcher {m:?}: a compaction hook matches `auto` (or `*`): compactions \
                     of a headless run are all automatic"
                ));
            }
        }
        Hook::from_file(HookFile { matcher: None, ..h }, &[])
    }

    pub(super) fn from_file(h: HookFile, known: &[KnownTool]) -> Result<Hook, String> {
        if h.command.trim().is_empty() {
            return Err("a hook has an empty `command`".into());
        }
        let tools = match h.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") => None,
            Some(m) => {
                let names: Vec<String> = m.split('|').map(|s| s.trim().to_string()).collect();
                for n in &names {
                    check_tool(n, known).map_err(|e| format!("matcher {m:?}: {e}"))?;
                }
                Some(names)
            }
        };
        let timeout = match h.timeout {
            None => DEFAULT_HOOK_TIMEOUT,
            Some(TimeoutValue::Seconds(s)) => Duration::try_from_secs_f64(s).map_err(|_| {
                format!(
                    "hook timeout {s}: give a positive number of seconds or a duration like \"10s\""
                )
            })?,
            Some(TimeoutValue::Other(v)) => {
                return Err(format!(
                    "hook timeout {v}: give a number of seconds or a duration like \"10s\""
                ));
            }
            Some(TimeoutValue::Text(t)) => humantime::parse_duration(&t)
                .map_err(|e| format!("hook timeout {t:?}: {e} (examples: 10s, 2m)"))?,
        };
        if timeout.is_zero() {
            return Err("a hook timeout must be longer than 0s".into());
        }
        Ok(Hook {
            tools,
            command: h.command,
            timeout,
        })
    }

    pub(super) fn applies_to(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|n| names(n, tool)))
    }
}

/// What a hook said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HookVerdict {
    Continue,
    /// Exit 2: its stderr, for the model.
    Block(String),
    /// Any other exit, a timeout, a failure to start: the message saying so.
    Failed(String),
}

/// The places a hook runs from: the workspace, the scrubbed child environment.
#[derive(Debug, Clone)]
pub(super) struct HookRunner {
    pub(super) workspace: PathBuf,
    pub(super) env: Arc<Vec<(String, String)>>,
    pub(super) spill_dir: PathBuf,
}

impl HookRunner {
    pub(super) fn run(&self, event: &str, hook: &Hook, payload: &Value) -> HookVerdict {
        let mut spec = CommandSpec::new(
            hook.command.clone(),
            &self.workspace,
            self.env.clone(),
            hook.timeout,
            &self.spill_dir,
        );
        spec.stdin = Some(payload.to_string().into_bytes());
        spec.stderr = Stderr::Separate;
        let who = format!("{event} hook `{}`", hook.command);
        // Its own span under the tool call's, which the command gets as TRACEPARENT.
        let mut span = otel::Span::start_here(format!("hook {event}"), otel::SpanKind::Internal);
        span.set("agent.hook.event", event.to_string());
        span.set("agent.hook.command", output::redact(&hook.command));
        let ran = {
            let _in = otel::context::enter(span.context());
            process::run(&spec)
        };
        if let Ok(Some(code)) = ran.as_ref().map(|o| o.exit_code) {
            span.set("process.exit.code", i64::from(code));
        }
        let verdict = verdict(&who, hook, ran);
        match &verdict {
            HookVerdict::Continue => span.succeed(),
            HookVerdict::Block(why) => {
                span.set("agent.hook.blocked", true);
                span.fail("blocked", why);
            }
            HookVerdict::Failed(why) => span.fail("hook_failed", why),
        }
        verdict
    }
}

/// What a hook's run says.
fn verdict(who: &str, hook: &Hook, ran: Result<process::CommandOutput, String>) -> HookVerdict {
    let out = match ran {
        Ok(o) => o,
        Err(e) => return HookVerdict::Failed(format!("{who} could not run: {e}")),
    };
    let stderr = out
        .stderr
        .as_ref()
        .map(|c| c.text.trim().to_string())
        .unwrap_or_default();
    if !out.output.text.trim().is_empty() {
        output::debug(&format!("{who} printed: {}", out.output.text.trim()));
    }
    if out.timed_out {
        return HookVerdict::Failed(format!(
            "{who} timed out after {}",
            crate::util::duration::human(hook.timeout)
        ));
    }
    if out.interrupted {
        return HookVerdict::Failed(format!("{who} was stopped: the run is ending"));
    }
    match out.exit_code {
        Some(0) => HookVerdict::Continue,
        Some(2) if stderr.is_empty() => {
            HookVerdict::Block(format!("blocked by {who} (exit 2, no message)"))
        }
        Some(2) => HookVerdict::Block(stderr),
        _ => {
            let how = match (out.exit_code, out.signal) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(s)) => format!("killed by signal {s}"),
                (None, None) => "ended abnormally".to_string(),
            };
            let tail = if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            };
            HookVerdict::Failed(format!("{who} failed ({how}){tail}"))
        }
    }
}
