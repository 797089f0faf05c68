//! Unit tests of `mod.rs`.

use super::*;
use crate::tools::gate::OpenGate;
use crate::tools::registry::ToolSelection;
use crate::tools::{SubjectKind, Traits, TypedTool};
use serde_json::json;
use std::sync::Arc;

struct Fake {
    out: String,
    panic: bool,
}
#[derive(serde::Deserialize)]
struct FakeInput {
    n: i64,
}
impl TypedTool for Fake {
    type Input = FakeInput;
    const TRAITS: Traits = Traits {
        records_changes: false,
        subject_kind: SubjectKind::Nothing,
        ..Traits::FILE_READ
    };
    fn name(&self) -> &str {
        "Fake"
    }
    fn description(&self) -> &str {
        "fake"
    }
    fn input_schema(&self) -> Value {
        json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],
                   "additionalProperties":false})
    }
    fn validate(&self, input: &FakeInput) -> Result<(), ToolError> {
        if input.n == 13 {
            Err(ToolError::failed("n must not be 13"))
        } else {
            Ok(())
        }
    }
    fn execute(&self, _: &ToolContext, _: &FakeInput) -> Result<ToolResult, ToolError> {
        if self.panic {
            panic!("boom");
        }
        Ok(ToolResult::ok(self.out.clone()))
    }
}

struct DenyAll;
impl Gate for DenyAll {
    fn before(&self, _: &GateCall<'_>) -> Result<(), Denial> {
        Err(Denial {
            reason: "denied by policy: Fake".into(),
        })
    }
}

fn setup(out: &str, panic: bool) -> (Registry, ToolContext, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Registry::builtin(&ToolSelection::default());
    r.register(Arc::new(Fake {
        out: out.into(),
        panic,
    }));
    let mut ctx = ToolContext::for_workspace(dir.path().canonicalize().unwrap());
    ctx.spill_dir = dir.path().join("spill");
    (r, ctx, dir)
}

fn call(name: &str, input: Result<Value, String>) -> PendingCall {
    PendingCall {
        id: "toolu_1".into(),
        name: name.into(),
        input,
    }
}

fn run(r: &Registry, ctx: &ToolContext, gate: &dyn Gate, c: &PendingCall) -> CallOutcome {
    Dispatcher {
        registry: r,
        ctx,
        gate,
        run_start: Instant::now(),
        watch: None,
        repeats: Default::default(),
    }
    .dispatch(c)
}

#[test]
fn unknown_tool_lists_enabled() {
    let (r, ctx, _d) = setup("x", false);
    let o = run(&r, &ctx, &OpenGate, &call("Nope", Ok(json!({}))));
    assert!(o.result.is_error);
    assert!(
        o.result.content.contains("Fake, Glob, Grep, ReadFile"),
        "{}",
        o.result.content
    );
}

#[test]
fn schema_errors_name_the_field() {
    let (r, ctx, _d) = setup("x", false);
    let o = run(&r, &ctx, &OpenGate, &call("Fake", Ok(json!({}))));
    assert!(
        o.result.is_error && o.result.content.contains("`n`"),
        "{}",
        o.result.content
    );
    let o = run(&r, &ctx, &OpenGate, &call("Fake", Ok(json!({"n": "x"}))));
    assert!(
        o.result.content.contains("`n` must be an integer"),
        "{}",
        o.result.content
    );
    let o = run(&r, &ctx, &OpenGate, &call("Fake", Ok(json!({"n": 13}))));
    assert!(
        o.result.content.contains("must not be 13"),
        "{}",
        o.result.content
    );
}

#[test]
fn unparsed_input_is_reported() {
    let (r, ctx, _d) = setup("x", false);
    let o = run(
        &r,
        &ctx,
        &OpenGate,
        &call("Fake", Err("bad json: EOF".into())),
    );
    assert!(o.result.is_error && o.result.content == "bad json: EOF");
}

#[test]
fn panic_becomes_error_result() {
    let (r, ctx, _d) = setup("x", true);
    let o = run(&r, &ctx, &OpenGate, &call("Fake", Ok(json!({"n": 1}))));
    assert!(o.result.is_error && o.result.content.contains("panicked (boom)"));
    assert!(o.fatal.is_none());
}

#[test]
fn gate_denial_is_recorded() {
    let (r, ctx, _d) = setup("x", false);
    let o = run(&r, &ctx, &DenyAll, &call("Fake", Ok(json!({"n": 1}))));
    assert!(o.result.is_error);
    assert_eq!(o.denial.unwrap().reason, "denied by policy: Fake");
}

#[test]
fn large_result_spills_with_preview() {
    let big = "é".repeat(40_000);
    let (r, ctx, _d) = setup(&big, false);
    let o = run(&r, &ctx, &OpenGate, &call("Fake", Ok(json!({"n": 1}))));
    assert!(!o.result.is_error);
    assert!(
        o.result
            .content
            .starts_with(&"é".repeat(SPILL_PREVIEW_CHARS))
    );
    assert!(o.result.content.contains("of 40000 characters"));
    let path = o.result.metadata["full_result_path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), big);
    assert!(o.result.content.contains(path));
}

#[test]
fn result_at_limit_is_kept() {
    let exact = "a".repeat(crate::tools::DEFAULT_MAX_RESULT_CHARS);
    let (r, ctx, _d) = setup(&exact, false);
    let o = run(&r, &ctx, &OpenGate, &call("Fake", Ok(json!({"n": 1}))));
    assert_eq!(o.result.content, exact);
}

/// The guard is dispatch's own: with no observer at all, the fifth identical call in a
/// row is refused without running, and a refused call reaches no gate.
#[test]
fn repeated_calls_are_refused_by_dispatch_itself() {
    let (r, ctx, _d) = setup("ran", false);
    let d = Dispatcher::new(&r, &ctx, &DenyAll, Instant::now(), None);
    let calls: Vec<PendingCall> = (1..=5)
        .map(|i| PendingCall {
            id: format!("t{i}"),
            name: "Fake".into(),
            input: Ok(json!({"n": 1})),
        })
        .collect();
    d.turn_complete(&calls);
    for c in &calls[..4] {
        assert!(d.dispatch(c).denial.is_some(), "{} reached the gate", c.id);
    }
    let o = d.dispatch(&calls[4]);
    assert!(o.denial.is_none());
    assert_eq!(
        o.result.content,
        "you have made this exact call 5 times; change approach"
    );
}
