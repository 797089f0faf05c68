//! The transcript → ATIF mapping: steps and their ids, tool results, metrics (their sums
//! are the transcript's), clearings, sub-agents, verification rounds, resumed runs.

use serde_json::{Value, json};

use super::*;

fn usage(input: u64, output: u64, cached: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached})
}

fn response(message: Option<u64>, input: u64, output: u64, cached: u64, cost: f64) -> Value {
    json!({"message": message, "model": "m-1", "usage": usage(input, output, cached), "cost_usd": cost})
}

/// A run: system prompt, task, a turn with two calls (one failing), a final answer.
fn two_turns() -> Value {
    json!({
        "version": 1, "status": "success", "session_id": "s-1", "model": "m-1",
        "provider": "anthropic", "num_turns": 2,
        "usage": usage(300, 50, 100), "cost_usd": 0.5,
        "system_prompt": "You are agent.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix it"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "look first", "signature": "x"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "c1", "name": "ReadFile", "input": {"path": "a"}},
                {"type": "tool_use", "id": "c2", "name": "Bash", "input": {"command": "false"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "text of a"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "exit 1", "is_error": true}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
        ],
        "responses": [response(Some(1), 100, 20, 0, 0.2), response(Some(3), 200, 30, 100, 0.3)]
    })
}

fn traj(v: Value) -> Trajectory {
    from_transcript(&Transcript::from_value(&v).unwrap()).unwrap()
}

fn sum(steps: &[Step], f: impl Fn(&Metrics) -> Option<u64>) -> u64 {
    steps
        .iter()
        .filter_map(|s| s.metrics.as_ref())
        .filter_map(f)
        .sum()
}

#[test]
fn steps_are_numbered_from_one_in_the_order_of_the_run() {
    let t = traj(two_turns());
    let sources: Vec<Source> = t.steps.iter().map(|s| s.source).collect();
    assert_eq!(
        sources,
        [Source::System, Source::User, Source::Agent, Source::Agent]
    );
    let ids: Vec<u32> = t.steps.iter().map(|s| s.step_id).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    assert_eq!(t.schema_version, "ATIF-v1.7");
    assert_eq!(t.session_id.as_deref(), Some("s-1"));
    assert_eq!(t.agent.name, "agent");
    assert_eq!(t.agent.model_name.as_deref(), Some("m-1"));
    assert_eq!(t.steps[1].message, Content::Text("Fix it".into()));
    assert_eq!(t.final_metrics.as_ref().unwrap().total_steps, 4);
}

#[test]
fn an_agent_step_has_its_text_reasoning_calls_and_their_results() {
    let t = traj(two_turns());
    let s = &t.steps[2];
    assert_eq!(s.message, Content::Text("Looking.".into()));
    assert_eq!(s.reasoning_content.as_deref(), Some("look first"));
    let calls = s.tool_calls.as_ref().unwrap();
    assert_eq!(calls[0].tool_call_id, "c1");
    assert_eq!(calls[0].function_name, "ReadFile");
    assert_eq!(calls[0].arguments["path"], "a");
    let results = &s.observation.as_ref().unwrap().results;
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].source_call_id.as_deref(), Some("c1"));
    assert_eq!(results[0].content, Some(Content::Text("text of a".into())));
    assert_eq!(results[1].extra.as_ref().unwrap()["is_error"], true);
    // The tool-results message makes no step of its own.
    assert_eq!(t.steps.len(), 4);
}

#[test]
fn step_metrics_add_up_to_the_transcripts_usage_and_cost() {
    let v = two_turns();
    let t = traj(v.clone());
    let agent: Vec<&Step> = t
        .steps
        .iter()
        .filter(|s| s.source == Source::Agent)
        .collect();
    assert_eq!(agent[0].metrics.as_ref().unwrap().prompt_tokens, Some(100));
    // Prompt tokens include the cached ones.
    assert_eq!(agent[1].metrics.as_ref().unwrap().prompt_tokens, Some(300));
    assert_eq!(agent[1].metrics.as_ref().unwrap().cached_tokens, Some(100));
    let u = &v["usage"];
    let prompt =
        u["input_tokens"].as_u64().unwrap() + u["cache_read_input_tokens"].as_u64().unwrap();
    assert_eq!(sum(&t.steps, |m| m.prompt_tokens), prompt);
    assert_eq!(sum(&t.steps, |m| m.completion_tokens), 50);
    assert_eq!(sum(&t.steps, |m| m.cached_tokens), 100);
    let cost: f64 = t
        .steps
        .iter()
        .filter_map(|s| s.metrics.as_ref()?.cost_usd)
        .sum();
    assert!((cost - 0.5).abs() < 1e-9, "{cost}");
    let f = t.final_metrics.unwrap();
    assert_eq!(f.total_prompt_tokens, Some(prompt));
    assert_eq!(f.total_completion_tokens, Some(50));
    assert_eq!(f.total_cost_usd, Some(0.5));
}

#[test]
fn only_agent_steps_carry_agent_fields() {
    let text = traj(two_turns()).to_json();
    let v: Value = serde_json::from_str(&text).unwrap();
    for s in v["steps"].as_array().unwrap() {
        if s["source"] != "agent" {
            for k in ["model_name", "reasoning_content", "tool_calls", "metrics"] {
                assert!(s.get(k).is_none(), "{k} on a {} step", s["source"]);
            }
        }
    }
    // None is left out, never written as null (the validator's models forbid nothing
    // there, but nulls are noise for a reader).
    assert!(!text.contains("null"), "{text}");
}

#[test]
fn a_response_cut_off_silently_is_billed_with_the_next_one() {
    let mut v = two_turns();
    v["responses"] = json!([
        response(Some(1), 100, 20, 0, 0.2),
        response(None, 50, 0, 0, 0.05),
        response(Some(3), 200, 30, 100, 0.3)
    ]);
    let t = traj(v);
    let last = &t.steps[3];
    assert_eq!(last.llm_call_count, Some(2));
    assert_eq!(last.metrics.as_ref().unwrap().prompt_tokens, Some(350));
    assert_eq!(t.steps[2].llm_call_count, Some(1));
}

#[test]
fn a_trailing_silent_response_is_billed_to_the_last_agent_step() {
    let mut v = two_turns();
    v["responses"] = json!([
        response(Some(1), 100, 20, 0, 0.2),
        response(Some(3), 200, 30, 100, 0.3),
        response(None, 7, 0, 0, 0.0)
    ]);
    let t = traj(v);
    assert_eq!(t.steps[3].llm_call_count, Some(2));
    assert_eq!(sum(&t.steps, |m| m.prompt_tokens), 407);
}

#[test]
fn a_clearing_is_a_system_step_before_the_turn_it_changed() {
    let mut v = two_turns();
    v["context_clearings"] = json!([
        {"turn": 2, "results_cleared": 3, "tokens_before": 9000, "tokens_after_estimate": 4000}
    ]);
    let t = traj(v);
    assert_eq!(t.steps.len(), 5);
    let s = &t.steps[3];
    assert_eq!(s.source, Source::System);
    let cm = &s.extra.as_ref().unwrap()["context_management"];
    assert_eq!(cm["type"], "clearing");
    assert_eq!(cm["results_cleared"], 3);
    assert_eq!(t.steps[4].source, Source::Agent);
    let ids: Vec<u32> = t.steps.iter().map(|s| s.step_id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
}

#[test]
fn a_verification_round_is_a_user_step_that_says_so() {
    let mut v = two_turns();
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "user", "content": [{"type": "text",
        "text": "The verification command `make test` failed (exit 1):\n<output>x</output>"}]}));
    msgs.push(json!({"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}));
    v["responses"]
        .as_array_mut()
        .unwrap()
        .push(response(Some(5), 1, 1, 0, 0.0));
    let t = traj(v);
    let s = &t.steps[4];
    assert_eq!(s.source, Source::User);
    assert_eq!(s.extra.as_ref().unwrap()["verification_round"], 1);
    assert_eq!(t.steps[1].extra.as_ref().unwrap()["kind"], "task");
    assert_eq!(t.steps.len(), 6);
}

#[test]
fn a_subagent_is_embedded_and_referenced_from_its_task_call() {
    let mut v = two_turns();
    v["messages"][1]["content"][2] =
        json!({"type": "tool_use", "id": "c1", "name": "Task", "input": {"prompt": "look"}});
    v["subagents"] = json!([{
        "id": "task-1", "tool_use_id": "c1", "subagent_type": "explore",
        "description": "look around", "status": "success", "num_turns": 1,
        "usage": usage(10, 5, 0), "cost_usd": 0.01,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "seen"}]}
        ],
        "tool_calls": []
    }]);
    let t = traj(v);
    assert_eq!(t.subagent_trajectories.len(), 1);
    let sub = &t.subagent_trajectories[0];
    assert_eq!(sub.trajectory_id.as_deref(), Some("task-1"));
    assert_eq!(sub.steps.len(), 2);
    assert_eq!(sub.steps[0].step_id, 1);
    assert_eq!(
        sub.final_metrics.as_ref().unwrap().total_prompt_tokens,
        Some(10)
    );
    let r = &t.steps[2].observation.as_ref().unwrap().results[0];
    assert_eq!(r.source_call_id.as_deref(), Some("c1"));
    let refs = r.subagent_trajectory_ref.as_ref().unwrap();
    assert_eq!(refs[0].trajectory_id, "task-1");
    assert!(t.notes.is_some());
}

#[test]
fn an_interrupted_subagent_gets_a_result_holding_its_reference() {
    let mut v = two_turns();
    v["messages"][1]["content"][3] =
        json!({"type": "tool_use", "id": "c9", "name": "Task", "input": {}});
    v["subagents"] = json!([{"id": "task-9", "tool_use_id": "c9", "status": "interrupted"}]);
    let t = traj(v);
    let results = &t.steps[2].observation.as_ref().unwrap().results;
    let r = results
        .iter()
        .find(|r| r.source_call_id.as_deref() == Some("c9"))
        .unwrap();
    assert_eq!(
        r.subagent_trajectory_ref.as_ref().unwrap()[0].trajectory_id,
        "task-9"
    );
    // A sub-agent with no messages still has a step (ATIF wants at least one).
    assert_eq!(t.subagent_trajectories[0].steps.len(), 1);
}

#[test]
fn a_resumed_runs_earlier_turns_are_copied_context() {
    let mut v = two_turns();
    v["resumed_from"] =
        json!({"path": "/x/old.json", "num_turns": 1, "status": "max_turns", "usage": null});
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs.push(json!({"role": "user", "content": [{"type": "text", "text": "go on"}]}));
    msgs.push(json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}));
    v["responses"] = json!([response(Some(5), 10, 1, 0, 0.0)]);
    let t = traj(v);
    let copied: Vec<bool> = t
        .steps
        .iter()
        .map(|s| s.is_copied_context.unwrap_or(false))
        .collect();
    // system, task, turn 1, turn 2 (old); the new prompt and its answer are this run's.
    assert_eq!(copied, [false, true, true, true, false, false]);
    assert!(t.steps[5].metrics.is_some());
    assert!(t.steps[3].metrics.is_none());
}

#[test]
fn structured_output_and_status_are_in_the_root_extra() {
    let mut v = two_turns();
    v["structured_output"] = json!({"ok": true});
    v["status"] = json!("budget");
    let t = traj(v);
    let e = t.extra.unwrap();
    assert_eq!(e["structured_output"], json!({"ok": true}));
    assert_eq!(e["status"], "budget");
}

#[test]
fn a_run_without_messages_still_has_a_step() {
    let t = traj(json!({"version": 1, "status": "interrupted", "session_id": "s"}));
    assert_eq!(t.steps.len(), 1);
    assert_eq!(t.steps[0].source, Source::System);
}

#[test]
fn an_unknown_transcript_version_is_refused() {
    let mut v = two_turns();
    v["version"] = json!(7);
    let e = from_transcript(&Transcript::from_value(&v).unwrap()).unwrap_err();
    assert!(e.contains("version 7"), "{e}");
}

#[test]
fn a_message_that_is_not_one_is_refused_by_its_number() {
    let mut v = two_turns();
    v["messages"][2] = json!({"role": "user"});
    let e = from_transcript(&Transcript::from_value(&v).unwrap()).unwrap_err();
    assert!(e.contains("message 3"), "{e}");
}

#[test]
fn unknown_blocks_are_counted_not_refused() {
    let mut v = two_turns();
    v["messages"][0]["content"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "image", "source": {"type": "base64", "data": "x"}}));
    let t = traj(v);
    assert_eq!(t.steps[1].extra.as_ref().unwrap()["unmapped_blocks"], 1);
}

#[test]
fn the_trajectory_reads_back_as_written() {
    let t = traj(two_turns());
    let back: Trajectory = serde_json::from_str(&t.to_json()).unwrap();
    assert_eq!(back, t);
}

#[test]
fn a_compaction_is_a_system_step_with_its_summary_and_a_failed_one_is_none() {
    use crate::run::compaction::{Compaction, Reason};
    let made = |summary: Option<&str>| Compaction {
        turn: 2,
        reason: Reason::Threshold,
        model: "m".into(),
        tokens_before: 18_000,
        tokens_after_estimate: 3_000,
        messages_summarized: 2,
        messages_kept: 1,
        messages_left_out: 0,
        summary: summary.map(String::from),
        usage: Default::default(),
        cost_usd: None,
        error: summary.is_none().then(|| "HTTP 500".to_string()),
    };
    let mut v = two_turns();
    v["context_compactions"] =
        serde_json::to_value(vec![made(None), made(Some("Done: A. Next: B."))]).unwrap();
    let t = traj(v);
    assert_eq!(
        t.steps.len(),
        5,
        "one step for the compaction, none for the failure"
    );
    let s = &t.steps[3];
    assert_eq!(s.source, Source::System);
    let cm = &s.extra.as_ref().unwrap()["context_management"];
    assert_eq!(cm["type"], "compaction");
    assert_eq!(cm["boundary"], "replace");
    assert_eq!(cm["reason"], "threshold");
    assert_eq!(cm["tokens_before"], 18_000);
    assert!(
        serde_json::to_string(&s.message)
            .unwrap()
            .contains("Done: A. Next: B.")
    );
    assert_eq!(t.steps[4].source, Source::Agent);
}

#[test]
fn referenced_images_are_image_parts_of_the_task_and_of_a_tool_result() {
    let image = |path: &str| {
        json!({"type": "image", "source": {"type": "reference", "path": path,
            "sha256": "ab", "media_type": "image/png", "bytes": 10, "width": 2, "height": 2}})
    };
    let mut v = two_turns();
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs[0]["content"]
        .as_array_mut()
        .unwrap()
        .push(image("/w/shot.png"));
    msgs[0]["content"].as_array_mut().unwrap().push(
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}),
    );
    msgs[2]["content"][0]["content"] =
        json!([{"type": "text", "text": "an image"}, image("/w/a.png")]);
    let t = traj(v);
    let task = &t.steps[1];
    let Content::Parts(parts) = &task.message else {
        panic!("the task's image is a part: {:?}", task.message)
    };
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].text.as_deref(), Some("Fix it"));
    assert_eq!(parts[1].kind, PartKind::Image);
    assert_eq!(parts[1].source.as_ref().unwrap().path, "/w/shot.png");
    assert_eq!(
        task.extra.as_ref().unwrap()["unmapped_blocks"],
        1,
        "an inline image names no file"
    );
    let result = &t.steps[2].observation.as_ref().unwrap().results[0];
    let Some(Content::Parts(parts)) = &result.content else {
        panic!("the result's image is a part: {:?}", result.content)
    };
    assert_eq!(parts[0].text.as_deref(), Some("an image"));
    assert_eq!(parts[1].source.as_ref().unwrap().media_type, "image/png");
}
