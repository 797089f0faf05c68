//! Unit tests of the MCP client protocol: message classification, answers to the
//! server's requests, and the handshake over a scripted transport.

use super::*;
use std::collections::VecDeque;
use std::sync::Mutex;

#[test]
fn request_id_zero_is_a_request_not_a_notification() {
    let m = classify(
        json!({"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage",
                            "params": {}}),
    );
    let Incoming::Request { method, reply } = m else {
        panic!("{m:?}")
    };
    assert_eq!(method, "sampling/createMessage");
    assert_eq!(reply["id"], json!(0));
    assert_eq!(reply["error"]["code"], json!(METHOD_NOT_FOUND));
    // String ids are echoed as they are.
    let Incoming::Request { reply, .. } =
        classify(json!({"jsonrpc": "2.0", "id": "abc", "method": "roots/list"}))
    else {
        panic!()
    };
    assert_eq!(reply["id"], json!("abc"));
    assert_eq!(reply["error"]["code"], json!(METHOD_NOT_FOUND));
    let Incoming::Request { reply, .. } =
        classify(json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create"}))
    else {
        panic!()
    };
    assert!(reply.get("result").is_none());
}

#[test]
fn ping_is_answered_with_an_empty_result() {
    let Incoming::Request { reply, .. } =
        classify(json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}))
    else {
        panic!()
    };
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
}

#[test]
fn responses_and_notifications() {
    assert_eq!(
        classify(json!({"jsonrpc": "2.0", "id": 0, "result": {"x": 1}})),
        Incoming::Response {
            id: Some(0),
            outcome: Ok(json!({"x": 1}))
        }
    );
    assert_eq!(
        classify(json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}})),
        Incoming::Response {
            id: Some(3),
            outcome: Err(CallError::Rpc {
                code: -32602,
                message: "bad".into()
            })
        }
    );
    assert_eq!(
        classify(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progress": 1}})),
        Incoming::Notification {
            method: "notifications/progress".into(),
            params: json!({"progress": 1})
        }
    );
    assert!(matches!(classify(json!([1])), Incoming::Invalid(_)));
    assert!(matches!(classify(json!({"id": 1})), Incoming::Invalid(_)));
    assert!(matches!(
        classify(json!({"jsonrpc": "2.0"})),
        Incoming::Invalid(_)
    ));
}

#[test]
fn notification_log_lines() {
    let d = describe_notification(
        "notifications/message",
        &json!({"level": "warning", "data": "disk almost full"}),
    );
    assert_eq!(d, "notifications/message [warning] disk almost full");
    let long = "x".repeat(5_000);
    assert!(describe_notification("n", &json!(long)).chars().count() < 600);
    assert_eq!(
        notification_message("notifications/initialized", Value::Null),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
}

/// Answers requests from a script, recording what was asked.
struct Scripted {
    answers: Mutex<VecDeque<Result<Value, CallError>>>,
    asked: Mutex<Vec<(String, Value)>>,
    version: Mutex<Option<String>>,
}

impl Scripted {
    fn new(answers: Vec<Result<Value, CallError>>) -> Self {
        Scripted {
            answers: Mutex::new(answers.into()),
            asked: Mutex::new(Vec::new()),
            version: Mutex::new(None),
        }
    }
}

impl Transport for Scripted {
    fn request(&self, method: &str, params: Value, _t: Duration) -> Result<Value, CallError> {
        self.asked.lock().unwrap().push((method.into(), params));
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .expect("scripted answer")
    }
    fn notify(&self, method: &str, params: Value) -> Result<(), CallError> {
        self.asked.lock().unwrap().push((method.into(), params));
        Ok(())
    }
    fn set_protocol_version(&self, v: &str) {
        *self.version.lock().unwrap() = Some(v.into());
    }
}

fn later() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

#[test]
fn handshake_follows_cursors_and_accepts_an_older_revision() {
    let t = Scripted::new(vec![
        Ok(json!({"protocolVersion": "2025-03-26", "capabilities": {},
                  "serverInfo": {"name": "s", "version": "1"}})),
        Ok(json!({"tools": [{"name": "a"}], "nextCursor": "p2"})),
        Ok(json!({"tools": [{"name": "b"}, {"name": "c"}]})),
    ]);
    let h = handshake(&t, later(), None).unwrap();
    assert_eq!(h.protocol_version, "2025-03-26");
    assert_eq!(h.server_info["name"], "s");
    let names: Vec<_> = h.tools.iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, vec![json!("a"), json!("b"), json!("c")]);
    let asked = t.asked.lock().unwrap().clone();
    let methods: Vec<_> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        vec![
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list"
        ]
    );
    assert_eq!(asked[0].1["protocolVersion"], PROTOCOL_VERSION);
    assert_eq!(
        asked[0].1["capabilities"],
        json!({}),
        "no roots, sampling, elicitation"
    );
    assert_eq!(asked[3].1, json!({"cursor": "p2"}));
    assert_eq!(t.version.lock().unwrap().as_deref(), Some("2025-03-26"));
}

#[test]
fn handshake_failures_say_which_step() {
    let t = Scripted::new(vec![Ok(json!({"protocolVersion": "1999-01-01"}))]);
    assert!(
        handshake(&t, later(), None)
            .unwrap_err()
            .contains("1999-01-01")
    );
    let t = Scripted::new(vec![Err(CallError::Rpc {
        code: -32600,
        message: "no".into(),
    })]);
    assert!(
        handshake(&t, later(), None)
            .unwrap_err()
            .starts_with("initialize: error -32600")
    );
    let t = Scripted::new(vec![
        Ok(json!({"protocolVersion": PROTOCOL_VERSION})),
        Ok(json!({"tools": [], "nextCursor": "same"})),
        Ok(json!({"tools": [], "nextCursor": "same"})),
    ]);
    assert!(
        handshake(&t, later(), None)
            .unwrap_err()
            .contains("repeated the cursor")
    );
    let t = Scripted::new(vec![
        Ok(json!({"protocolVersion": PROTOCOL_VERSION})),
        Ok(json!({"items": []})),
    ]);
    assert!(
        handshake(&t, later(), None)
            .unwrap_err()
            .contains("no \"tools\"")
    );
}

#[test]
fn elicitation_is_decided_ahead_of_time() {
    let params = json!({"message": "Which?", "requestedSchema": {"type": "object",
        "properties": {"a": {"type": "string", "default": "x"}, "n": {"type": "integer", "default": 3},
                       "free": {"type": "string"}},
        "required": ["a"]}});
    assert_eq!(
        elicit(&params, Elicitation::Defaults),
        json!({"action": "accept", "content": {"a": "x", "n": 3}})
    );
    assert_eq!(
        elicit(&params, Elicitation::Decline),
        json!({"action": "decline"})
    );
    let mut missing = params.clone();
    missing["requestedSchema"]["required"] = json!(["a", "free"]);
    assert_eq!(
        elicit(&missing, Elicitation::Defaults),
        json!({"action": "decline"})
    );
    let url = json!({"mode": "url", "url": "https://x", "message": "open"});
    assert_eq!(
        elicit(&url, Elicitation::Defaults),
        json!({"action": "decline"})
    );
    // Without the flag: method not found, as for sampling.
    let req = json!({"jsonrpc": "2.0", "id": 4, "method": "elicitation/create", "params": params});
    match classify_with(req.clone(), None) {
        Incoming::Request { reply, .. } => assert_eq!(reply["error"]["code"], METHOD_NOT_FOUND),
        other => panic!("{other:?}"),
    }
    match classify_with(req, Some(Elicitation::Defaults)) {
        Incoming::Request { reply, .. } => assert_eq!(reply["result"]["action"], "accept"),
        other => panic!("{other:?}"),
    }
}
