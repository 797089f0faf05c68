//! Images and PDFs end to end: `--image` attached to the task and ReadFile's images on
//! the Anthropic, OpenAI chat and Responses wires (the exact blocks each request holds),
//! the transcript naming the file (or holding the bytes with `--transcript-images
//! inline`), bad files refused naming the flag, a server that refuses images turned into
//! an error result the run goes on from, `--no-images`, record then replay with the same
//! image bytes, and `--resume` of a transcript whose image moved.

use std::io::Cursor;

use serde_json::{Value, json};

use crate::support::*;

/// A real PNG of `w`×`h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 7]));
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn put(env: &TestEnv, rel: &str, bytes: &[u8]) -> String {
    let p = env.path(rel);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn read_turn(path: &str) -> Reply {
    Reply::turn(
        Turn::new()
            .tool("r1", "ReadFile", json!({"path": path}))
            .usage(10, 5),
    )
}

fn done() -> Reply {
    Reply::turn(Turn::new().text("It shows a red square.").usage(10, 5))
}

#[test]
fn an_attached_image_comes_first_and_the_transcript_names_the_file() {
    let env = TestEnv::new(vec![done()]);
    let bytes = png(40, 30);
    let path = put(&env, "shot.png", &bytes);
    let out = env.run(&["run", "-i", "shot.png", "--json", "what is in the picture?"]);
    out.assert_code(0);
    env.server.assert_invariants();
    let first = &env.server.requests()[0];
    let content = &first.messages()[0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                           "data": b64(&bytes)}})
    );
    assert_eq!(content[1]["text"], "what is in the picture?");
    let t = out.json();
    let source = &t["messages"][0]["content"][0]["source"];
    assert_eq!(
        *source,
        json!({"type": "reference", "path": path, "sha256": sha256(&bytes),
               "media_type": "image/png", "bytes": bytes.len(), "width": 40, "height": 30})
    );
    assert!(
        !out.stdout.contains(&b64(&bytes)),
        "no base64 in the transcript"
    );

    // --transcript-images inline keeps the bytes as sent.
    let env2 = TestEnv::new(vec![done()]);
    put(&env2, "shot.png", &bytes);
    let out = env2.run(&[
        "run",
        "--image",
        "shot.png",
        "--transcript-images",
        "inline",
        "--json",
        "look",
    ]);
    out.assert_code(0);
    assert_eq!(
        out.json()["messages"][0]["content"][0]["source"]["data"],
        b64(&bytes)
    );
}

#[test]
fn bad_attachments_are_refused_naming_the_flag_before_any_request() {
    let env = TestEnv::new(vec![]);
    env.write("notes.png", "just text, named .png\n");
    put(&env, "zero.png", b"");
    let cut = png(50, 50);
    put(&env, "cut.png", &cut[..cut.len() / 2]);
    for (file, want) in [
        (
            "notes.png",
            "--image notes.png is not a PNG, JPEG, GIF, WebP or PDF file",
        ),
        ("zero.png", "--image zero.png is empty (0 bytes)"),
        ("cut.png", "--image cut.png is not a readable Png image"),
        (
            "missing.png",
            "--image missing.png: cannot read it: No such file",
        ),
    ] {
        let out = env.run(&["run", "-i", file, "look"]);
        out.assert_code(2);
        assert!(out.stderr.contains(want), "{file}: {}", out.stderr);
    }
    let out = env.run(&["run", "-i", "zero.png", "--no-images", "look"]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("--image cannot be used with --no-images"),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.request_count(), 0);
}

#[test]
fn read_file_returns_an_image_by_its_bytes_whatever_its_name() {
    let env = TestEnv::new(vec![read_turn("fail.jpg"), done()]);
    let bytes = png(12, 8);
    put(&env, "fail.jpg", &bytes);
    let out = env.run(&["run", "--json", "why did the UI test fail?"]);
    out.assert_code(0);
    env.server.assert_invariants();
    let result = env.server.requests()[1].last_blocks()[0].clone();
    assert_eq!(result["type"], "tool_result");
    assert!(result["is_error"].is_null());
    let content = result["content"].as_array().unwrap();
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("fail.jpg: image/png image, 12×8 pixels"),
        "{content:?}"
    );
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    assert_eq!(content[1]["source"]["data"], b64(&bytes));
    let t = out.json();
    let kept = &t["messages"][2]["content"][0]["content"][1]["source"];
    assert_eq!(kept["type"], "reference");
    assert_eq!(kept["sha256"], sha256(&bytes));
    assert_eq!(
        kept["path"],
        env.path("fail.jpg")
            .canonicalize()
            .unwrap()
            .to_str()
            .unwrap()
    );
}

#[test]
fn openai_chat_gets_data_urls_and_the_image_of_a_result_in_a_user_message_after_it() {
    let env = TestEnv::new(vec![read_turn("b.png"), done()]);
    let (a, b) = (png(5, 5), png(6, 6));
    put(&env, "a.png", &a);
    put(&env, "b.png", &b);
    let out = env.run_openai("gpt-mock", &["--json", "-i", "a.png", "compare"]);
    out.assert_code(0);
    env.server.assert_invariants();
    let reqs = env.server.requests();
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(
        msgs[1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "compare"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&a))}}]})
    );
    assert_eq!(msgs[3]["role"], "tool");
    assert!(
        msgs[3]["content"]
            .as_str()
            .unwrap()
            .starts_with("b.png: image/png image")
    );
    assert_eq!(
        msgs[4],
        json!({"role": "user", "content": [
            {"type": "text", "text": "The images or documents the tool call r1 returned:"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&b))}}]})
    );
}

#[test]
fn the_responses_api_gets_input_images_in_the_message_and_the_call_output() {
    let env = TestEnv::new(vec![read_turn("b.png"), done()]);
    let b = png(6, 6);
    put(&env, "b.png", &b);
    let url = env.server.openai_url();
    let out = env.run_with_env(
        &[
            "run",
            "--provider",
            "openai-responses",
            "--base-url",
            &url,
            "-m",
            "gpt-mock",
            "--json",
            "-i",
            "b.png",
            "look",
        ],
        &[("OPENAI_API_KEY", OPENAI_KEY)],
    );
    out.assert_code(0);
    let reqs = env.server.requests();
    let input = reqs[1].body["input"].as_array().unwrap();
    let data_url = format!("data:image/png;base64,{}", b64(&b));
    assert_eq!(
        input[0]["content"][1],
        json!({"type": "input_image", "image_url": data_url, "detail": "auto"})
    );
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["output"][0]["type"], "input_text");
    assert_eq!(
        output["output"][1],
        json!({"type": "input_image", "image_url": data_url, "detail": "auto"})
    );
}

#[test]
fn a_server_that_refuses_images_gets_an_error_result_and_the_run_goes_on() {
    let env = TestEnv::new(vec![
        read_turn("shot.png"),
        Reply::api_error(400, "invalid_request_error", "image input is not supported"),
        done(),
    ]);
    put(&env, "shot.png", &png(4, 4));
    let out = env.run(&["run", "--json", "look at shot.png"]);
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("the server refused the request's images"),
        "{}",
        out.stderr
    );
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[1].body.to_string().contains("\"image\""));
    let retried = reqs[2].tool_results();
    assert!(retried[0].is_error);
    assert!(
        retried[0]
            .content
            .contains("was not sent: the server refused it (HTTP 400 invalid_request_error: image input is not supported)"),
        "{}",
        retried[0].content
    );
    assert!(!reqs[2].body.to_string().contains("\"image\""));
    assert_eq!(out.json()["status"], "success");

    // --no-images: the result is an error from the start, no request refused.
    let env = TestEnv::new(vec![read_turn("shot.png"), done()]);
    put(&env, "shot.png", &png(4, 4));
    env.run(&["run", "--no-images", "--json", "look"])
        .assert_code(0);
    let r = env.server.requests()[1].tool_results();
    assert!(
        r[0].is_error && r[0].content.contains("(--no-images)"),
        "{:?}",
        r[0]
    );
}

#[test]
fn a_replay_sends_the_recorded_image_bytes_and_names_a_changed_file() {
    let env = TestEnv::new(vec![read_turn("shot.png"), done()]);
    let bytes = png(9, 9);
    put(&env, "shot.png", &bytes);
    let cassette = env.out("c.jsonl");
    let c = cassette.to_str().unwrap();
    env.run(&["run", "--json", "--record", c, "look"])
        .assert_code(0);
    let text = std::fs::read_to_string(&cassette).unwrap();
    let turn2: Value = serde_json::from_str(text.lines().nth(2).unwrap()).unwrap();
    assert_eq!(
        turn2["request"]["media"],
        json!([sha256(b64(&bytes).as_bytes())])
    );
    assert!(
        !text.contains(&b64(&bytes)),
        "the cassette holds digests, not base64"
    );

    let replay = |env: &TestEnv| {
        let mut cmd = env.command(&["run", "--json", "--replay", c, "look"]);
        cmd.env_remove("ANTHROPIC_API_KEY");
        env.spawn_command(cmd).wait()
    };
    replay(&env).assert_code(0);
    put(&env, "shot.png", &png(9, 10));
    let out = replay(&env);
    assert_ne!(out.code(), Some(0));
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains("the request's images or PDFs differ from the recorded ones"),
        "{said}"
    );
}

#[test]
fn resume_reads_the_image_again_and_fails_clearly_when_it_moved() {
    let env = TestEnv::keep_alive(vec![done(), done()]);
    let bytes = png(8, 8);
    let path = put(&env, "shot.png", &bytes);
    let t = env.out("t.json");
    let ts = t.to_str().unwrap();
    env.run(&["run", "-i", "shot.png", "-o", ts, "look"])
        .assert_code(0);
    env.run(&["run", "--resume", ts, "and now?"]).assert_code(0);
    let again = &env.server.requests()[1];
    assert_eq!(
        again.messages()[0]["content"][0]["source"]["data"],
        b64(&bytes)
    );

    std::fs::rename(&path, env.path("moved.png")).unwrap();
    let out = env.run(&["run", "--resume", ts, "and now?"]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains(&format!("the image {path} the transcript names is gone")),
        "{}",
        out.stderr
    );
}
