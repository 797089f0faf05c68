//! Test support for the integration tests: the one loopback mock model server (`mock`),
//! which speaks both wire formats, the builders of what it streams (`sse` for
//! Anthropic frames and the wire-neutral `Turn`, `chat` for OpenAI chunks), the request
//! invariants it checks (`invariants`), the mock REST APIs of `agent github` and
//! `agent gitlab` (`github`, `gitlab`, sharing their route-table checks in `routes`), and
//! `TestEnv`, which runs the real `agent` binary in a temporary workspace against the
//! mock with a clean environment and a hang guard, so that tests drive the product as a
//! CI job would.
//!
//! The vocabulary, for either provider:
//! - A script is a `Vec<Reply>`, one reply per request, in order. The request's path picks
//!   the wire (`/v1/messages` or `…/chat/completions`, see `Wire`); `Reply::turn`,
//!   `Reply::api_error` and `Reply::Silent` are rendered in it, so one script serves both.
//! - A model turn: `Reply::turn(Turn::new().text("…").tool("id", "ReadFile",
//!   json!({…})).stop_reason("…").usage(in, out).cache(created, read).model(id))`
//!   (`model`: the id the stream claims, default `sse::MOCK_MODEL` / `chat::CHAT_MODEL`).
//!   `Turn::tool_raw` streams malformed input, `Turn::cut_tool` a call cut by max_tokens.
//! - Faults on a turn: `.with_fault(Fault::DropAfter(n) | DropBeforeEnd | HangAfter(n) |
//!   ErrorBeforeEnd {…})`; chunking and pings: `.with_opts(SseOpts {…})`.
//! - Raw frames: `Reply::Sse(frames)`, `SseWith`, `DropAfter(frames, n)`, `Hang(frames)`
//!   (`sse::*` builds Anthropic frames, `chat::*` OpenAI chunks, or write your own).
//! - Recorded streams of real servers: `Reply::recorded("llama_server_text.sse")` replays
//!   a file of `tests/fixtures/servers/` byte for byte (see its README).
//! - Errors: `Reply::api_error(code, kind, msg)`, `overloaded()`, `bad_request(msg)`,
//!   `rate_limited(secs)` and `rate_limited_until(SystemTime)` (`retry-after` in seconds
//!   or as an HTTP date, see `mock::http_date`); `.with_header(name, value)` adds any.
//! - Anything else: `Reply::raw(code, content_type, body)` (a 200 `text/html` login page,
//!   a 500 with a huge body), `Reply::redirect(code, location)`.
//! - Stalls: `Reply::silence()` (200 and headers, then nothing) and
//!   `Reply::ping_then_silence()` (200, one ping, then nothing); both hold until the
//!   server is dropped.
//! - What the server saw: `server.requests()` (method, path, `header(name)`, body, the
//!   wire, and which TCP connection each came on), `server.connections()` (accepted TCP
//!   connections: fewer than requests proves reuse; `MockServer::start_keep_alive` keeps
//!   them open), `wait_for_requests(n)`, `assert_invariants()` (headers, body shape and
//!   tool call/result pairing of every request, either wire), `assert_script_consumed()`.
//! - Running: `TestEnv::new(script)` (or `keep_alive`), `env.run(args)`,
//!   `run_with_env(args, vars)`, `spawn`, `command` + `spawn_command`. Every run has a
//!   scrubbed environment (only PATH, HOME, NO_COLOR, `ANTHROPIC_BASE_URL` and the test
//!   key `API_KEY`) and is killed after `RUN_LIMIT`. For `--provider openai`, pass
//!   `--base-url {env.server.openai_url()}` and set `OPENAI_API_KEY` to `OPENAI_KEY`.
//!   `assert_no_secret` checks stdout and stderr for both keys, `read_json` and
//!   `assert_file_has_no_secret` check files.
//! - The binary: cargo's, or the one `AGENT_TEST_BINARY` names (`agent_bin`).
#![allow(dead_code, unused_imports)] // not every test module uses every helper

pub(crate) mod acp;
pub(crate) mod chat;
pub(crate) mod eventstream;
pub(crate) mod files;
pub(crate) mod github;
pub(crate) mod gitlab;
pub(crate) mod invariants;
pub(crate) mod mock;
pub(crate) mod otlp;
pub(crate) mod responses;
pub(crate) mod routes;
pub(crate) mod schema;
pub(crate) mod slug;
pub(crate) mod sse;
pub(crate) mod token_server;

pub(crate) use mock::{Fault, MockServer, Recorded, Reply, Rng, SseOpts, ToolResultSeen, Wire};
pub(crate) use sse::{Turn, turn_max_tokens_cut_tool, turn_raw_tool, turn_text, turn_tools};

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::Duration;
use wait_timeout::ChildExt;

/// The API key every run gets; it must never show up in any output.
pub(crate) const API_KEY: &str = "sk-ant-test-DO-NOT-LEAK-0123456789";
/// The key OpenAI-provider tests set as OPENAI_API_KEY; it must never show up either.
pub(crate) const OPENAI_KEY: &str = "sk-openai-test-DO-NOT-LEAK-9876543210";
/// Every key a run may hold.
const SECRETS: [&str; 2] = [API_KEY, OPENAI_KEY];
/// A run that takes longer than this is hung: it is killed and the test fails (rather
/// than the CI job timing out).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Points the suite at a built binary instead of the one cargo built with the tests (a
/// release or cross build: `AGENT_TEST_BINARY=target/x86_64-unknown-linux-musl/release/agent
/// cargo test --test integration`).
pub(crate) const TEST_BINARY_ENV: &str = "AGENT_TEST_BINARY";

/// The `agent` binary every test runs: `AGENT_TEST_BINARY` when set, else cargo's build.
pub(crate) fn agent_bin() -> PathBuf {
    match std::env::var_os(TEST_BINARY_ENV) {
        Some(p) if !p.is_empty() => std::path::absolute(PathBuf::from(p)).unwrap(),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_agent")),
    }
}

/// A temporary workspace, a mock server and the means to run the binary against it.
/// Layout: `<tmp>/ws` is the workspace (the binary's cwd), `<tmp>/home` its HOME,
/// `<tmp>/out` a place for `-o` files outside the workspace.
pub(crate) struct TestEnv {
    pub server: MockServer,
    root: tempfile::TempDir,
}

impl TestEnv {
    /// A mock that closes the connection after each response.
    pub(crate) fn new(script: Vec<Reply>) -> TestEnv {
        TestEnv::with_server(MockServer::start(script))
    }

    /// A mock that keeps connections alive between responses.
    pub(crate) fn keep_alive(script: Vec<Reply>) -> TestEnv {
        TestEnv::with_server(MockServer::start_keep_alive(script))
    }

    /// A keep-alive server whose script needs the workspace path (absolute tool paths).
    pub(crate) fn keep_alive_for(script: impl FnOnce(&str) -> Vec<Reply>) -> TestEnv {
        let mut env = TestEnv::with_server(MockServer::start_keep_alive(vec![]));
        let ws = env.ws().to_str().unwrap().to_string();
        env.server = MockServer::start_keep_alive(script(&ws));
        env
    }

    pub(crate) fn with_server(server: MockServer) -> TestEnv {
        TestEnv::with_server_in(server, tempfile::tempdir().unwrap())
    }

    /// A mock like `new`, with the directories outside the temp directory (under
    /// `dir_outside_temp(tag)`): `--sandbox workspace-write` allows writes in the temp
    /// directory, so a test of its confinement needs a workspace elsewhere.
    pub(crate) fn outside_temp(tag: &str, script: Vec<Reply>) -> TestEnv {
        let root = tempfile::tempdir_in(dir_outside_temp(tag)).unwrap();
        TestEnv::with_server_in(MockServer::start(script), root)
    }

    fn with_server_in(server: MockServer, root: tempfile::TempDir) -> TestEnv {
        for d in ["ws", "home", "out"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        TestEnv { server, root }
    }

    /// The workspace root (canonical, so that it compares with the transcript's).
    pub(crate) fn ws(&self) -> PathBuf {
        self.root.path().join("ws").canonicalize().unwrap()
    }

    /// A path inside the workspace.
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.ws().join(rel)
    }

    /// A path outside the workspace, for `-o` files.
    pub(crate) fn out(&self, name: &str) -> PathBuf {
        self.root.path().join("out").join(name)
    }

    /// Writes a workspace file, creating parent directories.
    pub(crate) fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    /// Lays the demo project into the workspace, as the README's demo commands use it.
    pub(crate) fn copy_demo_project(&self) {
        copy_tree(&demo_dir().join("project"), &self.ws());
    }

    /// Runs the demo project's own tests (`sh tests/run.sh`) in the workspace.
    pub(crate) fn run_demo_tests(&self) -> std::process::Output {
        Command::new("sh")
            .arg("tests/run.sh")
            .current_dir(self.ws())
            .output()
            .unwrap()
    }

    /// Runs git in the workspace with a throwaway identity (and no signing), asserting success.
    pub(crate) fn git(&self, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(self.ws())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// The command with a clean environment: PATH, HOME, the mock's URL and the test key;
    /// cwd is the workspace; stdin is null.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(agent_bin());
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.path().join("home"))
            .env("NO_COLOR", "1")
            .env("ANTHROPIC_BASE_URL", self.server.url())
            .env("ANTHROPIC_API_KEY", API_KEY)
            .current_dir(self.ws())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs the binary to completion.
    pub(crate) fn run(&self, args: &[&str]) -> RunOutput {
        Running::start(self.command(args), false).wait()
    }

    /// Runs the binary to completion with these variables added to its environment.
    pub(crate) fn run_with_env(&self, args: &[&str], vars: &[(&str, &str)]) -> RunOutput {
        let mut c = self.command(args);
        c.envs(vars.iter().copied());
        Running::start(c, false).wait()
    }

    /// `agent run --provider openai` at the mock's chat endpoint with `model` and the test
    /// key, then `args` (flags and the prompt).
    pub(crate) fn run_openai(&self, model: &str, args: &[&str]) -> RunOutput {
        let url = self.server.openai_url();
        let mut all = vec![
            "run",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "-m",
            model,
        ];
        all.extend_from_slice(args);
        self.run_with_env(&all, &[("OPENAI_API_KEY", OPENAI_KEY)])
    }

    /// Runs the binary with `input` on stdin (then closed).
    pub(crate) fn run_with_stdin(&self, args: &[&str], input: &str) -> RunOutput {
        let mut c = self.command(args);
        c.stdin(Stdio::piped());
        let mut r = Running::start(c, true);
        {
            use std::io::Write;
            let mut stdin = r.stdin.take().unwrap();
            // A binary that exits before reading (a usage error) closes the pipe first.
            if let Err(e) = stdin.write_all(input.as_bytes()) {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
            }
        }
        r.wait()
    }

    /// Starts the binary with a stdin pipe left open (the test owns its end).
    pub(crate) fn spawn(&self, args: &[&str]) -> Running {
        let mut c = self.command(args);
        c.stdin(Stdio::piped());
        Running::start(c, true)
    }

    /// Starts a prepared command (stdin as configured on it).
    pub(crate) fn spawn_command(&self, c: Command) -> Running {
        Running::start(c, false)
    }
}

/// A running binary whose stdout/stderr are drained by threads (so it never blocks on a
/// full pipe).
pub(crate) struct Running {
    child: Child,
    /// The open stdin pipe, if any; kept open until `wait` returns.
    pub stdin: Option<ChildStdin>,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
    /// Set once reaped; a `Running` dropped before (a failed test) kills its process.
    reaped: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// What a drain thread read (empty when there was no pipe).
fn joined(h: Option<JoinHandle<String>>) -> String {
    h.map(|h| h.join().unwrap()).unwrap_or_default()
}

impl Running {
    fn start(mut c: Command, keep_stdin: bool) -> Running {
        let mut child = c.spawn().unwrap();
        let stdin = if keep_stdin { child.stdin.take() } else { None };
        let out = child.stdout.take().map(drain);
        let err = child.stderr.take().map(drain);
        Running {
            child,
            stdin,
            out,
            err,
            reaped: false,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal (libc::SIGTERM, SIGINT …) to the process.
    pub(crate) fn signal(&self, sig: i32) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on our own child's pid; it has not been reaped yet (we hold it).
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
    }

    /// Waits for the exit (killing it after `RUN_LIMIT`, which fails the test), then
    /// closes stdin and collects the output.
    pub(crate) fn wait(mut self) -> RunOutput {
        let status = match self.child.wait_timeout(RUN_LIMIT).unwrap() {
            Some(s) => s,
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                self.reaped = true;
                drop(self.stdin.take());
                let stderr = joined(self.err.take());
                panic!("agent did not exit within {RUN_LIMIT:?}; stderr:\n{stderr}");
            }
        };
        self.reaped = true;
        drop(self.stdin.take());
        let stdout = joined(self.out.take());
        let stderr = joined(self.err.take());
        schema::check_stdout(&stdout);
        schema::check_stdout_summary(&stdout);
        RunOutput {
            status,
            stdout,
            stderr,
        }
    }
}

/// What a finished run left behind.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl RunOutput {
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Asserts the exit code, showing everything on failure.
    pub(crate) fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.status.code(),
            Some(code),
            "unexpected exit ({:?})\n--- stdout:\n{}\n--- stderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// stdout parsed as exactly one JSON document (the `--json` transcript).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e})\n--- stdout:\n{}\n--- stderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// No key (`API_KEY`, `OPENAI_KEY`) appears in stdout or stderr.
    pub(crate) fn assert_no_secret(&self) -> &Self {
        for key in SECRETS {
            assert!(!self.stdout.contains(key), "API key {key} in stdout");
            assert!(!self.stderr.contains(key), "API key {key} in stderr");
        }
        self
    }
}

/// A JSON file (an `-o` transcript).
pub(crate) fn read_json(path: &Path) -> Value {
    let text = assert_file_has_no_secret(path);
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e}):\n{text}", path.display()));
    schema::check_transcript(&v, &path.display().to_string());
    schema::check_batch_summary(&v, &path.display().to_string());
    v
}

/// Asserts that no key (`API_KEY`, `OPENAI_KEY`) is in the file; returns its text.
pub(crate) fn assert_file_has_no_secret(path: &Path) -> String {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    for key in SECRETS {
        assert!(!text.contains(key), "API key {key} in {}", path.display());
    }
    text
}

/// Asserts `version` is the first key of a transcript's raw text.
pub(crate) fn assert_version_first(raw: &str) {
    let after_brace = raw.trim_start().strip_prefix('{').unwrap_or("");
    assert!(
        after_brace.trim_start().starts_with("\"version\""),
        "version is not the first key: {}",
        raw.chars().take(80).collect::<String>()
    );
}

/// A copy of `v` without any `cache_control` key: prompt-cache breakpoints (SPEC §9)
/// move with the newest message, so requests are compared without them.
pub(crate) fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

/// A base directory for test files that must lie outside the temp directory (which
/// `--sandbox workspace-write` allows): the build's target dir, unless the checkout itself
/// is under the temp dir (CI may clone there), then /var/tmp or $HOME.
pub(crate) fn dir_outside_temp(tag: &str) -> std::path::PathBuf {
    let temp = std::env::temp_dir()
        .canonicalize()
        .unwrap_or_else(|_| std::env::temp_dir());
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let candidates = [
        Some(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target")),
        Some(std::path::PathBuf::from("/var/tmp")),
        home,
    ];
    for c in candidates.into_iter().flatten() {
        let base = c.join(tag);
        if std::fs::create_dir_all(&base).is_ok()
            && let Ok(canon) = base.canonicalize()
            && !canon.starts_with(&temp)
        {
            return canon;
        }
    }
    panic!("no writable directory outside {}", temp.display());
}

/// Copies a directory tree (files and directories only), as the demo fixtures are laid out.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The shipped demo: `fixtures/demo` of this repository (project, cassettes, schema).
pub(crate) fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo")
}
