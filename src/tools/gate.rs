//! Where hooks and permission rules plug into dispatch (SPEC §5, §6): the `Gate` trait,
//! the call it judges and its `Denial`. It lives beside the `Tool` trait so that policy
//! (which implements it) and dispatch (which calls it) both stand above it.

use serde_json::Value;

use super::{Subject, Tool, ToolResult};

/// Why a call was refused before it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// The message the model gets (e.g. `denied by policy: Bash(rm:*)`).
    pub reason: String,
}

/// One valid call as a gate sees it.
pub(crate) struct GateCall<'a> {
    pub tool: &'a dyn Tool,
    pub id: &'a str,
    /// The input as the model sent it (hooks get it verbatim).
    pub input: &'a Value,
    /// What permission rules are matched against, as the tool said.
    pub subject: &'a Subject,
}

/// Who answers a call the permission rules leave to a person (an `ask` rule): `Ok` runs
/// it, a `Denial` refuses it as a rule would. Blocks until answered.
pub(crate) trait Asker: Send + Sync {
    /// `why` names the rule (or setting) that asks.
    fn ask(&self, call: &GateCall<'_>, why: &str) -> Result<(), Denial>;
}

/// The default lets everything through.
pub(crate) trait Gate: Send + Sync {
    /// Runs after the input is known to be valid, before the tool executes.
    fn before(&self, _call: &GateCall<'_>) -> Result<(), Denial> {
        Ok(())
    }
    /// Runs after the tool; may amend the result the model sees.
    fn after(&self, _call: &GateCall<'_>, _result: &mut ToolResult) {}
    /// `--on-deny fail`: a denial ends the run (no later call of the turn runs).
    fn ends_run_on_denial(&self) -> bool {
        false
    }
    /// PreCompact hooks, before a summary is asked for: `Err(why)` vetoes the compaction
    /// (the loop then clears old tool results, or the run ends `context_exceeded`).
    /// `payload` is what the hooks get on stdin, `hook_event_name` and `cwd` aside.
    fn pre_compact(&self, _payload: &Value) -> Result<(), String> {
        Ok(())
    }
    /// PostCompact hooks, after a compaction: told, not asked.
    fn post_compact(&self, _payload: &Value) {}
}

/// The gate that allows every call of an enabled tool (the loop's and dispatch's tests).
#[cfg(test)]
pub(crate) struct OpenGate;
#[cfg(test)]
impl Gate for OpenGate {}
