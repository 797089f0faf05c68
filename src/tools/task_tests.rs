//! Unit tests of the Task tool: its input, its kinds, its safety, and that it needs a
//! runner (a sub-agent's context has none, so sub-agents cannot nest).

use std::sync::{Arc, Mutex};

use super::*;
use crate::tools::test_support::{call, call_err, ctx};

#[derive(Debug, Default)]
struct Echo(Mutex<Vec<SubagentCall>>);

impl Subagents for Echo {
    fn run(&self, call: &SubagentCall) -> Result<String, ToolError> {
        self.0.lock().unwrap().push(call.clone());
        Ok(format!("did: {}", call.prompt))
    }
}

#[test]
fn explore_is_the_default_and_safe_general_runs_alone() {
    let t = Task::new(true);
    assert!(t.is_concurrency_safe(&json!({"description": "d", "prompt": "p"})));
    assert!(t.is_concurrency_safe(&json!({"subagent_type": "explore"})));
    assert!(!t.is_concurrency_safe(&json!({"subagent_type": "general"})));
    assert_eq!(
        t.input_schema()["properties"]["subagent_type"]["enum"],
        json!(["explore", "general"])
    );
    assert!(t.description().contains("`general`"));
    let ro = Task::new(false);
    assert_eq!(
        ro.input_schema()["properties"]["subagent_type"]["enum"],
        json!(["explore"])
    );
    assert!(!ro.description().contains("`general`"));
}

#[test]
fn the_runner_gets_the_parsed_call_and_its_answer_is_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    let echo = Arc::new(Echo::default());
    c.subagents = Some(echo.clone());
    let r = call(
        &Task::new(true),
        &c,
        &json!({"description": "d", "prompt": "find x", "subagent_type": "general"}),
    )
    .unwrap();
    assert_eq!(r.content, "did: find x");
    assert_eq!(r.metadata["subagent_type"], "general");
    assert_eq!(echo.0.lock().unwrap()[0].kind, SubagentKind::General);
}

#[test]
fn bad_calls_are_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    // No runner (a sub-agent's context): no nesting.
    let e = call_err(
        &Task::new(true),
        &c,
        &json!({"description": "d", "prompt": "p"}),
    );
    assert!(e.contains("cannot start sub-agents"), "{e}");
    c.subagents = Some(Arc::new(Echo::default()));
    let e = call_err(
        &Task::new(false),
        &c,
        &json!({"description": "d", "prompt": "p", "subagent_type": "general"}),
    );
    assert!(e.contains("\"general\" is not available"), "{e}");
    let e = call_err(
        &Task::new(true),
        &c,
        &json!({"description": "d", "prompt": "  "}),
    );
    assert!(e.contains("`prompt` is empty"), "{e}");
    let e = call_err(
        &Task::new(true),
        &c,
        &json!({"description": "d", "prompt": "p", "subagent_type": "boss"}),
    );
    assert!(e.contains("boss"), "{e}");
}

#[test]
fn general_is_offered_only_when_the_run_may_write_or_run_commands() {
    use crate::tools::registry::{Registry, ToolSelection};
    let offered = |sel: &ToolSelection| {
        Registry::builtin(sel)
            .get("Task")
            .expect("Task is on by default")
            .input_schema()["properties"]["subagent_type"]["enum"]
            .clone()
    };
    assert_eq!(offered(&ToolSelection::default()), json!(["explore"]));
    let bash = ToolSelection {
        allow_bash: true,
        ..Default::default()
    };
    assert_eq!(offered(&bash), json!(["explore", "general"]));
}
