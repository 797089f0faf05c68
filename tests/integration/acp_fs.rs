//! `agent acp` with a client that offers `fs`: the file tools read the client's buffers
//! (`fs/read_text_file`) and write through it (`fs/write_text_file`), never the disk; the
//! client's error, or its silence past `--acp-fs-timeout`, is the tool's error result;
//! a client that offers nothing leaves the disk to the tools. Every request agent sends
//! is checked against the ACP schema (`support::acp`).

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::json;

use crate::support::acp::{AcpClient, text_prompt};
use crate::support::{Reply, TestEnv, turn_text, turn_tools};

/// `initialize` offering `fs` as given, then `session/new`: the session id.
fn open(c: &mut AcpClient, env: &TestEnv, read: bool, write: bool) -> String {
    let (r, _) = c.call(
        "initialize",
        json!({"protocolVersion": 1,
               "clientCapabilities": {"fs": {"readTextFile": read, "writeTextFile": write}}}),
    );
    assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    let (r, _) = c.call("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
    r["result"]["sessionId"].as_str().unwrap().to_string()
}

fn ws(env: &TestEnv) -> PathBuf {
    env.ws().canonicalize().unwrap()
}

#[test]
fn the_file_tools_read_the_clients_buffers_and_write_through_it_not_to_disk() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[("r1", "ReadFile", json!({"path": "a.txt"}))])),
        Reply::Sse(turn_tools(&[(
            "w1",
            "WriteFile",
            json!({"path": "new.txt", "content": "from the model\n"}),
        )])),
        Reply::Sse(turn_tools(&[(
            "e1",
            "EditFile",
            json!({"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    std::fs::write(env.path("a.txt"), "saved text on disk\n").unwrap();
    let a = ws(&env).join("a.txt").display().to_string();
    let new = ws(&env).join("new.txt").display().to_string();
    let mut buffers: HashMap<String, String> =
        HashMap::from([(a.clone(), "unsaved text in the editor\n".to_string())]);
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    let sid = open(&mut c, &env, true, true);
    let id = c.send("session/prompt", text_prompt(&sid, "edit"));
    let mut asked = Vec::new();
    let (r, _) = c.until_response(id, |c, req| {
        let p = &req["params"];
        assert_eq!(p["sessionId"], sid.as_str(), "{req}");
        let path = p["path"].as_str().unwrap().to_string();
        asked.push(format!("{} {path}", req["method"].as_str().unwrap()));
        match req["method"].as_str().unwrap() {
            "fs/read_text_file" => {
                let text = buffers.get(&path).cloned().unwrap();
                c.reply(&req["id"], json!({"content": text}));
            }
            "fs/write_text_file" => {
                buffers.insert(path, p["content"].as_str().unwrap().to_string());
                c.reply(&req["id"], json!({}));
            }
            other => panic!("unexpected request {other}: {req}"),
        }
    });
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(
        asked,
        [
            format!("fs/read_text_file {a}"),
            format!("fs/write_text_file {new}"),
            format!("fs/read_text_file {a}"),
            format!("fs/write_text_file {a}"),
        ]
    );
    // The model saw the buffer, not the disk.
    let read = &env.server.requests()[1].tool_results()[0];
    assert!(!read.is_error, "{}", read.content);
    assert!(
        read.content.contains("1\tunsaved text in the editor"),
        "{}",
        read.content
    );
    assert!(!read.content.contains("on disk"), "{}", read.content);
    // The writes went to the client; the disk is as it was.
    assert_eq!(buffers[&new], "from the model\n");
    assert_eq!(buffers[&a], "edited text in the editor\n");
    assert!(!env.path("new.txt").exists());
    assert_eq!(env.read("a.txt"), "saved text on disk\n");
    let edit = &env.server.requests()[3].tool_results()[0];
    assert!(
        edit.content.contains("edited text in the editor"),
        "{}",
        edit.content
    );
    let (code, _) = c.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn the_clients_error_is_a_tool_error_the_model_reads() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[("r1", "ReadFile", json!({"path": "a.txt"}))])),
        Reply::Sse(turn_tools(&[(
            "w1",
            "WriteFile",
            json!({"path": "b.txt", "content": "b\n"}),
        )])),
        Reply::Sse(turn_text("understood")),
    ]);
    std::fs::write(env.path("a.txt"), "disk\n").unwrap();
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    let sid = open(&mut c, &env, true, true);
    let id = c.send("session/prompt", text_prompt(&sid, "read"));
    let (r, _) = c.until_response(id, |c, req| {
        let msg = json!({"jsonrpc": "2.0", "id": req["id"],
                         "error": {"code": -32002, "message": "the buffer is gone"}});
        c.send_raw(msg.to_string().as_bytes());
    });
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    for (i, method) in [(1, "fs/read_text_file"), (2, "fs/write_text_file")] {
        let result = &env.server.requests()[i].tool_results()[0];
        assert!(result.is_error, "{}", result.content);
        assert!(
            result.content.contains(method) && result.content.contains("the buffer is gone"),
            "{}",
            result.content
        );
    }
    assert!(
        !env.path("b.txt").exists(),
        "a refused write is not made on disk"
    );
}

#[test]
fn a_client_that_does_not_answer_in_time_fails_the_call() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[("r1", "ReadFile", json!({"path": "a.txt"}))])),
        Reply::Sse(turn_text("understood")),
    ]);
    std::fs::write(env.path("a.txt"), "disk\n").unwrap();
    let mut c = AcpClient::start(
        &env,
        &[
            "--acp-fs-timeout",
            "1s",
            "--acp-permissions",
            "allow-all",
            "--",
            "--full-auto",
        ],
    );
    let sid = open(&mut c, &env, true, false);
    let id = c.send("session/prompt", text_prompt(&sid, "read"));
    let mut late = Vec::new();
    let (r, _) = c.until_response(id, |_, req| late.push(req["id"].clone()));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let result = &env.server.requests()[1].tool_results()[0];
    assert!(result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains("no answer to fs/read_text_file within --acp-fs-timeout 1s"),
        "{}",
        result.content
    );
    // A late answer is ignored; agent goes on serving.
    c.reply(&late[0], json!({"content": "too late"}));
    let (code, _) = c.finish();
    assert_eq!(code, Some(0));
}

#[test]
fn a_client_without_fs_leaves_the_files_to_the_disk() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[("r1", "ReadFile", json!({"path": "a.txt"}))])),
        Reply::Sse(turn_tools(&[(
            "w1",
            "WriteFile",
            json!({"path": "b.txt", "content": "on disk\n"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    std::fs::write(env.path("a.txt"), "disk text\n").unwrap();
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    let sid = open(&mut c, &env, false, false);
    let id = c.send("session/prompt", text_prompt(&sid, "go"));
    let (r, _) = c.until_response(id, |_, req| panic!("no request expected: {req}"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let read = &env.server.requests()[1].tool_results()[0];
    assert!(read.content.contains("1\tdisk text"), "{}", read.content);
    assert_eq!(env.read("b.txt"), "on disk\n");
}

/// A path outside the workspace is refused as on disk: the client is never asked.
#[test]
fn confinement_is_the_disks_and_the_client_is_not_asked_outside() {
    let env = TestEnv::keep_alive(vec![
        Reply::Sse(turn_tools(&[(
            "r1",
            "ReadFile",
            json!({"path": "/etc/hostname"}),
        )])),
        Reply::Sse(turn_text("done")),
    ]);
    let mut c = AcpClient::start(
        &env,
        &["--acp-permissions", "allow-all", "--", "--full-auto"],
    );
    let sid = open(&mut c, &env, true, true);
    let id = c.send("session/prompt", text_prompt(&sid, "go"));
    let (r, _) = c.until_response(id, |_, req| panic!("no request expected: {req}"));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let read = &env.server.requests()[1].tool_results()[0];
    assert!(
        read.is_error && read.content.contains("outside"),
        "{}",
        read.content
    );
}
