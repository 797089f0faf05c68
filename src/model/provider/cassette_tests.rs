//! Unit tests of `cassette.rs`.

use super::*;
use serde_json::json;

const SSE_TOOL: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"ReadFile\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"/rec/ws/a\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".txt\\\"}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

fn request<'a>(tools: &'a [Value]) -> TurnRequest<'a> {
    TurnRequest {
        model: "m",
        max_tokens: 10,
        system: "s",
        messages: &[],
        tools,
    }
}

#[test]
fn record_then_replay_rewrites_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let tools = vec![json!({"name": "ReadFile"})];
    let mut w = CassetteWriter::create(
        &path,
        "anthropic",
        "m",
        Path::new("/rec/ws"),
        &["ReadFile".to_string()],
        "sess-1",
        vec!["sk-ant-secret-value".into()],
    )
    .unwrap();
    w.append(&request(&tools), SSE_TOOL.as_bytes()).unwrap();
    drop(w);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["session_id"], "sess-1");
    let mut p = ReplayProvider::open(&path, Path::new("/new/place")).unwrap();
    let turn = p.stream_turn(&request(&tools), &mut |_| {}).unwrap();
    assert_eq!(turn.calls[0].input, Ok(json!({"path": "/new/place/a.txt"})));
    match &turn.message.content[0] {
        ContentBlock::ToolUse { input, .. } => assert_eq!(input["path"], "/new/place/a.txt"),
        other => panic!("{other:?}"),
    }
    let e = p.stream_turn(&request(&tools), &mut |_| {}).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Cassette);
    assert!(e.message.contains("ran out after 1 turns"), "{}", e.message);
}

#[test]
fn replay_names_the_model_that_answered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let tools: Vec<Value> = Vec::new();
    let mut w =
        CassetteWriter::create(&path, "anthropic", "m", Path::new("/w"), &[], "s", vec![]).unwrap();
    let unnamed = SSE_TOOL.replace(",\"model\":\"m\"", "");
    assert!(!unnamed.contains("\"model\""));
    // The request went to the fallback; the first stream names no model.
    let to_fallback = TurnRequest {
        model: "fallback-1",
        ..request(&tools)
    };
    w.append(&to_fallback, unnamed.as_bytes()).unwrap();
    w.append(&to_fallback, SSE_TOOL.as_bytes()).unwrap();
    drop(w);
    let text = std::fs::read_to_string(&path).unwrap();
    let line: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(line["request"]["model"], "fallback-1");
    // A line from before the model was recorded: the replay's own model.
    let old = text
        .lines()
        .nth(1)
        .unwrap()
        .replace(",\"model\":\"fallback-1\"", "");
    std::fs::write(&path, format!("{text}{old}\n")).unwrap();
    let mut p = ReplayProvider::open(&path, Path::new("/w")).unwrap();
    let asked = TurnRequest {
        model: "asked",
        ..request(&tools)
    };
    let models: Vec<String> = (0..3)
        .map(|_| p.stream_turn(&asked, &mut |_| {}).unwrap().model)
        .collect();
    assert_eq!(
        models,
        ["fallback-1", "m", "asked"],
        "recorded, reported, asked"
    );
}

#[test]
fn secrets_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let secret = "sk-ant-secret-value-123";
    let mut w = CassetteWriter::create(
        &path,
        "anthropic",
        "m",
        Path::new("/w"),
        &[],
        "sess-2",
        vec![secret.into()],
    )
    .unwrap();
    let sse = SSE_TOOL.replace("/rec/ws", secret);
    w.append(&request(&[]), sse.as_bytes()).unwrap();
    assert!(!std::fs::read_to_string(&path).unwrap().contains(secret));
}

/// A stream that does not decode again (here: cut before its end) with a secret
/// split across two deltas: redacting the line cannot see it, so the turn, and the
/// turns after it, are not recorded.
#[test]
fn an_undecodable_turn_with_a_split_secret_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    let secret = "sk-ant-secret-value-123";
    let mut w = CassetteWriter::create(
        &path,
        "anthropic",
        "m",
        Path::new("/w"),
        &[],
        "sess-4",
        vec![secret.into()],
    )
    .unwrap();
    let split = SSE_TOOL
        .replace("/rec/ws/a", "sk-ant-secret")
        .replace(".txt", "-value-123");
    let cut = &split[..split.find("event: message_stop").unwrap()];
    assert!(
        decode("anthropic", cut).is_err(),
        "the test needs an undecodable turn"
    );
    w.append(&request(&[]), cut.as_bytes()).unwrap();
    w.append(&request(&[]), SSE_TOOL.as_bytes()).unwrap();
    drop(w);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(!written.contains("sk-ant-secret"), "{written}");
    assert_eq!(written.lines().count(), 1, "only the header: {written}");
    // Without secrets there is nothing to remove: the raw stream is kept.
    let mut w =
        CassetteWriter::create(&path, "anthropic", "m", Path::new("/w"), &[], "s", vec![]).unwrap();
    w.append(&request(&[]), cut.as_bytes()).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
}

#[test]
fn bad_cassettes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "").unwrap();
    assert!(
        ReplayProvider::open(&p, dir.path())
            .err()
            .unwrap()
            .contains("empty")
    );
    std::fs::write(
        &p,
        "{\"type\":\"turn\",\"index\":1,\"request\":{\"messages\":1,\"tools\":[]},\"sse\":\"\"}\n",
    )
    .unwrap();
    assert!(
        ReplayProvider::open(&p, dir.path())
            .err()
            .unwrap()
            .contains("header")
    );
    let missing = dir.path().join("missing.jsonl");
    assert!(
        ReplayProvider::open(&missing, dir.path())
            .err()
            .unwrap()
            .contains("--replay")
    );
}
#[test]
fn an_openai_cassette_replays_through_the_chat_decoder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.jsonl");
    let tools = vec![json!({"name": "ReadFile"})];
    let mut w = CassetteWriter::create(
        &path,
        "openai",
        "qwen",
        Path::new("/rec/ws"),
        &["ReadFile".to_string()],
        "sess-3",
        vec![],
    )
    .unwrap();
    let sse = "data: {\"id\":\"chatcmpl-1\",\"model\":\"qwen\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"ReadFile\",\"arguments\":\"{\\\"path\\\": \\\"/rec/ws/a.txt\\\"}\"}}]},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: [DONE]\n\n";
    w.append(&request(&tools), sse.as_bytes()).unwrap();
    drop(w);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["provider"], "openai");
    let mut p = ReplayProvider::open(&path, Path::new("/new/place")).unwrap();
    let mut ready = Vec::new();
    let turn = p
        .stream_turn(&request(&tools), &mut |n| {
            if let StreamNotice::ToolReady(c) = n {
                ready.push(c.id.clone());
            }
        })
        .unwrap();
    assert_eq!(
        turn.stop_reason,
        crate::model::protocol::StopReason::ToolUse
    );
    assert_eq!(turn.calls[0].input, Ok(json!({"path": "/new/place/a.txt"})));
    assert_eq!(ready, ["call_1"]);
    // The same text under an anthropic header does not decode as a turn.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"openai\"", "\"anthropic\"")).unwrap();
    let mut p = ReplayProvider::open(&path, Path::new("/new/place")).unwrap();
    let e = p.stream_turn(&request(&tools), &mut |_| {}).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Cassette);
}

#[test]
fn an_unknown_provider_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.jsonl");
    CassetteWriter::create(&path, "gemini", "m", Path::new("/w"), &[], "s", vec![]).unwrap();
    let e = ReplayProvider::open(&path, dir.path()).err().unwrap();
    assert!(e.contains("\"gemini\""), "{e}");
}

#[test]
fn thinking_signatures_and_redacted_thinking_survive_record_and_replay() {
    let secret = "sk-ant-secret-value-456";
    let sse = |text: &str| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_t\",\"model\":\"m\",\"usage\":{{\"input_tokens\":5,\"output_tokens\":1}}}}}}\n\n\
event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}}}\n\n\
event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"thinking_delta\",\"thinking\":\"Read \\\"a\\\" \\u00e9\"}}}}\n\n\
event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"signature_delta\",\"signature\":\"EqQBCg+/sig==\"}}}}\n\n\
event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{{\"type\":\"redacted_thinking\",\"data\":\"RWFzdGVy+/==\"}}}}\n\n\
event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":1}}\n\n\
event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n\
event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":2}}\n\n\
event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":9}}}}\n\n\
event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    };
    let thinking = ContentBlock::Thinking {
        thinking: "Read \"a\" é".into(),
        signature: "EqQBCg+/sig==".into(),
    };
    let redacted = ContentBlock::RedactedThinking {
        data: "RWFzdGVy+/==".into(),
    };
    // Recorded raw, and re-encoded because the answer echoed a secret.
    for (text, encoding) in [("done", None), (secret, Some("anthropic"))] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut w = CassetteWriter::create(
            &path,
            "anthropic",
            "m",
            Path::new("/w"),
            &[],
            "s",
            vec![secret.into()],
        )
        .unwrap();
        w.append(&request(&[]), sse(text).as_bytes()).unwrap();
        drop(w);
        let written = std::fs::read_to_string(&path).unwrap();
        let line: Value = serde_json::from_str(written.lines().nth(1).unwrap()).unwrap();
        assert_eq!(line["encoding"].as_str(), encoding);
        assert!(!written.contains(secret));
        let mut p = ReplayProvider::open(&path, Path::new("/w")).unwrap();
        let turn = p.stream_turn(&request(&[]), &mut |_| {}).unwrap();
        assert_eq!(
            turn.message.content[..2],
            [thinking.clone(), redacted.clone()]
        );
    }
}

#[test]
fn a_responses_turn_echoing_a_secret_is_re_encoded_as_responses_with_its_reasoning_bytes() {
    let secret = "sk-openai-secret-value-789";
    let item =
        r#"{"type":"reasoning", "id":"rs_1","summary":[],"encrypted_content":"enc\u00e9=="}"#;
    let sse = |text: &str| {
        format!(
            "event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{item}}}\n\n\
event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"output_index\":1,\"item_id\":\"msg_1\",\"delta\":\"{text}\"}}\n\n\
event: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"id\":\"resp_1\",\"model\":\"gpt-5\",\"usage\":{{\"input_tokens\":9,\"output_tokens\":2}}}}}}\n\n"
        )
    };
    for (text, encoding) in [("done", None), (secret, Some("openai-responses"))] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut w = CassetteWriter::create(
            &path,
            "openai-responses",
            "gpt-5",
            Path::new("/w"),
            &[],
            "s",
            vec![secret.into()],
        )
        .unwrap();
        w.append(&request(&[]), sse(text).as_bytes()).unwrap();
        drop(w);
        let written = std::fs::read_to_string(&path).unwrap();
        let line: Value = serde_json::from_str(written.lines().nth(1).unwrap()).unwrap();
        assert_eq!(line["encoding"].as_str(), encoding);
        assert!(!written.contains(secret));
        let mut p = ReplayProvider::open(&path, Path::new("/w")).unwrap();
        let turn = p.stream_turn(&request(&[]), &mut |_| {}).unwrap();
        assert_eq!(
            turn.message.content[0],
            ContentBlock::Reasoning {
                summary: String::new(),
                item: item.into()
            }
        );
        assert_eq!(turn.model, "gpt-5");
    }
}
