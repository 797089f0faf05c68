use super::*;
use serde_json::json;

fn person() -> OutputSchema {
    OutputSchema::compile(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    }))
    .unwrap()
}

#[test]
fn a_valid_answer_passes() {
    let s = person();
    assert_eq!(
        s.check(&json!({"name": "Ada", "age": 36, "tags": ["x"]})),
        Ok(())
    );
    assert!(s.violations(&json!({"name": "Ada", "age": 36})).is_empty());
}

#[test]
fn every_failing_path_is_listed() {
    let s = person();
    let answer = json!({"name": 7, "age": -1, "tags": ["ok", 3], "extra": true});
    let v = s.violations(&answer);
    assert_eq!(v.len(), 4, "{v:#?}");
    let msg = s.check(&answer).unwrap_err();
    for path in ["/name", "/age", "/tags/1", "(root)"] {
        assert!(
            msg.contains(&format!("- {path}: ")),
            "{path} missing in:\n{msg}"
        );
    }
    assert!(msg.starts_with("The answer does not match the output schema (4 violations)"));
    assert!(msg.ends_with("Call StructuredOutput again with a corrected answer."));
    // A missing required field is reported at the object that lacks it.
    let msg = s.check(&json!({"age": 3})).unwrap_err();
    assert!(msg.contains("(1 violation)"), "{msg}");
    assert!(
        msg.contains("(root): \"name\" is a required property"),
        "{msg}"
    );
}

#[test]
fn a_long_list_of_violations_is_cut() {
    let s = OutputSchema::compile(json!({
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}
    }))
    .unwrap();
    let xs: Vec<Value> = (0..25).map(|i| json!(format!("s{i}"))).collect();
    let msg = s.check(&json!({ "xs": xs })).unwrap_err();
    assert!(msg.contains("(25 violations)"), "{msg}");
    assert!(msg.contains("- /xs/19: "), "{msg}");
    assert!(!msg.contains("- /xs/20: "), "{msg}");
    assert!(msg.contains("… and 5 more"), "{msg}");
}

#[test]
fn drafts_2020_12_and_07_are_told_apart_by_schema() {
    // Draft-07 tuples are `items: [..]`; 2020-12 spells them `prefixItems`.
    let d7 = OutputSchema::compile(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}
    }))
    .unwrap();
    assert!(d7.check(&json!({"pair": ["a", 1]})).is_ok());
    assert!(d7.check(&json!({"pair": [1, "a"]})).is_err());
    let d2020 = OutputSchema::compile(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}
    }))
    .unwrap();
    assert!(d2020.check(&json!({"pair": ["a", 1]})).is_ok());
    assert!(d2020.check(&json!({"pair": [1, "a"]})).is_err());
    // Without `$schema` the default is 2020-12: `prefixItems` applies.
    let default = OutputSchema::compile(json!({
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}
    }))
    .unwrap();
    assert!(default.check(&json!({"pair": [1]})).is_err());
}

#[test]
fn bad_schemas_are_refused_with_the_reason() {
    for (schema, needle) in [
        (json!([1]), "must be a JSON object"),
        (json!({"type": "array"}), "\"type\": \"object\""),
        (json!({"properties": {}}), "\"type\": \"object\""),
        (
            json!({"type": "object", "properties": {"a": {"type": "strnig"}}}),
            "invalid JSON Schema",
        ),
        (
            json!({"type": "object", "minProperties": -1}),
            "invalid JSON Schema",
        ),
        (
            json!({"$schema": "https://example.com/my-schema", "type": "object"}),
            "unknown $schema",
        ),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
            "invalid JSON Schema",
        ),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}),
            "invalid JSON Schema",
        ),
    ] {
        let e = OutputSchema::compile(schema.clone()).unwrap_err();
        assert!(e.contains(needle), "{schema}: {e}");
    }
}

#[test]
fn from_arg_reads_inline_json_or_a_file() {
    let s = OutputSchema::from_arg(r#" {"type": "object", "required": ["a"]}"#).unwrap();
    assert_eq!(s.tool_input_schema()["required"], json!(["a"]));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.json");
    std::fs::write(
        &f,
        r#"{"type": "object", "properties": {"ok": {"type": "boolean"}}}"#,
    )
    .unwrap();
    let s = OutputSchema::from_arg(f.to_str().unwrap()).unwrap();
    assert!(s.check(&json!({"ok": "yes"})).is_err());

    let e = OutputSchema::from_arg("/no/such/schema.json").unwrap_err();
    assert!(
        e.starts_with("--output-schema /no/such/schema.json: "),
        "{e}"
    );
    std::fs::write(&f, "{not json").unwrap();
    let e = OutputSchema::from_arg(f.to_str().unwrap()).unwrap_err();
    assert!(e.contains("not valid JSON"), "{e}");
    let e = OutputSchema::from_arg(r#"{"type": "object", "required": "a"}"#).unwrap_err();
    assert!(
        e.starts_with("--output-schema the inline schema: invalid JSON Schema"),
        "{e}"
    );
    let huge = format!(
        r#"{{"type": "object", "description": "{}"}}"#,
        "x".repeat(MAX_SCHEMA_BYTES)
    );
    assert!(OutputSchema::from_arg(&huge).unwrap_err().contains("bytes"));
}

#[test]
fn the_tool_carries_the_schema_without_its_draft_and_checks_answers() {
    let s = OutputSchema::compile(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"]
    }))
    .unwrap();
    let tool = AnswerTool::new(s);
    assert_eq!(tool.name(), TOOL_NAME);
    assert_eq!(
        tool.input_schema(),
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    );
    assert!(tool.description().contains("final answer"));
    assert!(tool.checks_own_schema() && tool.is_read_only());
    let ctx = ToolContext::for_workspace(std::env::temp_dir());
    let ready = tool.prepare(&json!({"n": 3})).ok().unwrap();
    assert_eq!(ready.subject(), Subject::Nothing);
    assert_eq!(ready.execute(&ctx).unwrap().content, "Answer accepted.");
    let Err(ToolError::Failed(m)) = tool.prepare(&json!({"n": "3"})).map(|_| ()) else {
        panic!("an invalid answer must fail");
    };
    assert!(m.contains("/n: \"3\" is not of type \"integer\""), "{m}");
    assert!(SYSTEM_PROMPT_NOTE.contains(TOOL_NAME));
    assert!(missing_answer_message().contains(TOOL_NAME));
}

fn call(id: &str, name: &str, input: Value) -> PendingCall {
    PendingCall {
        id: id.into(),
        name: name.into(),
        input: Ok(input),
    }
}

#[test]
fn answers_are_judged_and_counted() {
    let ok = ToolResult::ok("Answer accepted.");
    let bad = ToolResult::error("The answer does not match");
    let read = ToolResult::ok("file text");
    let mut a = Answers::new(2);
    // No answer call at all: nothing to judge, nothing counted.
    let calls = [call("r", "ReadFile", json!({}))];
    assert_eq!(a.judge(&calls, &[&read]), Judged::NoAnswer);
    // A rejected answer, then a valid one in the same turn: the valid one counts.
    let calls = [
        call("a1", TOOL_NAME, json!({"n": "x"})),
        call("r", "ReadFile", json!({})),
        call("a2", TOOL_NAME, json!({"n": 1})),
    ];
    assert_eq!(
        a.judge(&calls, &[&bad, &read, &ok]),
        Judged::Accepted(json!({"n": 1}))
    );
    // Rejections: 1 + 2 answers in all.
    let calls = [call("a", TOOL_NAME, json!({}))];
    assert_eq!(a.judge(&calls, &[&bad]), Judged::Rejected);
    assert!(
        a.missing().is_ok(),
        "stopping without an answer is the second"
    );
    let Judged::Exhausted(m) = a.judge(&calls, &[&bad]) else {
        panic!("the third rejection ends the run");
    };
    assert!(
        m.contains("3 attempts") && m.contains("--max-schema-retries 2"),
        "{m}"
    );
    assert!(m.contains("The answer does not match"), "{m}");
    // With no retries, stopping without an answer fails at once.
    let e = Answers::new(0).missing().unwrap_err();
    assert!(
        e.contains("stopped without calling StructuredOutput"),
        "{e}"
    );
    assert!(only_answers(&[call("a", TOOL_NAME, json!({}))]));
    assert!(!only_answers(&[
        call("a", TOOL_NAME, json!({})),
        call("r", "ReadFile", json!({}))
    ]));
    assert!(!only_answers(&[]));
}
