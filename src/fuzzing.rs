//! The fuzz targets' entry points (issue 43): one function per parser of untrusted input,
//! taking the fuzzer's bytes and asserting the parser's properties (a violated property
//! panics, which the fuzzer reports as a crash). `fuzz/` (cargo-fuzz, nightly) calls
//! them; `fuzzing_tests` replays the committed corpora through them on stable, so
//! `cargo test` is a regression test of every input that ever crashed. The crate's items
//! are `pub(crate)`: this `#[doc(hidden)] pub` module is the one door, and it holds no
//! logic of the agent's own.
// A failed set-up or a violated property panics: that is how a fuzz target reports.
#![allow(clippy::expect_used, clippy::panic)]

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::tools::{Tool, ToolContext};

/// A target: the fuzzer's bytes in, a panic when a property does not hold.
pub type Target = fn(&[u8]);

/// The targets, by name (as in `fuzz/fuzz_targets/NAME.rs` and `fuzz/corpus/NAME/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("shell_words", shell_words),
    ("sse_split", sse_split),
    ("event_stream_split", event_stream_split),
    ("anthropic_turn", anthropic_turn),
    ("apply_patch", apply_patch),
    ("paths", paths),
    ("transcript", transcript),
    ("www_authenticate", www_authenticate),
    ("redaction", redaction),
    ("settings", settings),
    ("html", html),
    ("jsonrpc", jsonrpc),
];

/// Longest input taken: the properties are about structure, and a bounded input keeps
/// each execution's time and memory bounded too.
const MAX_INPUT: usize = 64 * 1024;

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(&data[..data.len().min(MAX_INPUT)]).into_owned()
}

/// The policy's shell splitting: never panics; what it returns is well-formed (no empty
/// command; every opaque command is one of the commands).
pub fn shell_words(data: &[u8]) {
    let src = text(data);
    if let Ok(script) = crate::policy::shell_words::parse(&src) {
        assert!(script.commands.iter().all(|c| !c.is_empty()), "{src:?}");
        for o in &script.opaque {
            assert!(
                script.commands.iter().any(|c| c.join(" ") == o.command),
                "{src:?}: opaque {o:?} is not a command"
            );
        }
    }
}

/// A reader that hands out `data` in pieces whose sizes follow `seed`: the same bytes,
/// split differently.
struct Pieces<'a> {
    data: &'a [u8],
    seed: u64,
}

impl Pieces<'_> {
    fn next_len(&mut self) -> usize {
        // xorshift: cheap, deterministic, covers sizes 1..=16 and the odd big piece.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        match self.seed % 8 {
            0 => 1 + (self.seed >> 8) as usize % 4096,
            _ => 1 + (self.seed >> 8) as usize % 16,
        }
    }
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.next_len().min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

impl BufRead for Pieces<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        let n = self.next_len().min(self.data.len());
        Ok(&self.data[..n])
    }
    fn consume(&mut self, amt: usize) {
        self.data = &self.data[amt..];
    }
}

/// The first byte seeds the split, the rest is the stream.
fn split_input(data: &[u8]) -> (u64, &[u8]) {
    match data.split_first() {
        Some((s, rest)) => (
            u64::from(*s) * 0x9E37_79B9 + 1,
            &rest[..rest.len().min(MAX_INPUT)],
        ),
        None => (1, data),
    }
}

fn sse_events(reader: impl BufRead) -> Vec<Result<crate::model::provider::sse::SseEvent, String>> {
    let mut sse = crate::model::provider::sse::SseReader::new(reader);
    let mut out = Vec::new();
    while out.len() < 10_000 {
        match sse.next_event() {
            Ok(Some(e)) => out.push(Ok(e)),
            Ok(None) => break,
            Err(e) => {
                out.push(Err(e.kind().to_string()));
                break;
            }
        }
    }
    out
}

/// The SSE decoder gives the same events for every split of the same bytes.
pub fn sse_split(data: &[u8]) {
    let (seed, stream) = split_input(data);
    let whole = sse_events(stream);
    let pieces = sse_events(Pieces { data: stream, seed });
    assert_eq!(whole, pieces, "split {seed} of {stream:?}");
}

fn event_stream_text(reader: impl Read) -> Result<Vec<u8>, String> {
    let mut r = crate::model::provider::bedrock::eventstream::EventStreamReader::new(reader);
    let mut out = Vec::new();
    r.read_to_end(&mut out)
        .map(|_| out)
        .map_err(|e| format!("{:?}: {e}", e.kind()))
}

/// The AWS event-stream decoder gives the same text for every split of the same bytes.
pub fn event_stream_split(data: &[u8]) {
    let (seed, stream) = split_input(data);
    let whole = event_stream_text(stream);
    let pieces = event_stream_text(Pieces { data: stream, seed });
    assert_eq!(whole, pieces, "split {seed} of {stream:?}");
}

/// A whole turn from an Anthropic SSE body (the wire every provider's turn ends up in):
/// never panics, and the same turn or failure for every split.
pub fn anthropic_turn(data: &[u8]) {
    let (seed, stream) = split_input(data);
    let read = |r: &mut dyn BufRead| {
        format!(
            "{:?}",
            crate::model::provider::anthropic::decode::read_turn(r, &mut |_| {})
        )
    };
    let whole = read(&mut &stream[..]);
    let pieces = read(&mut Pieces { data: stream, seed });
    assert_eq!(whole, pieces, "split {seed} of {stream:?}");
}

/// A scratch tree for the file tools: a workspace with files, a symlink out of it, and a
/// file beside it that no call may touch. One per process (fuzzers run one input at a
/// time); reset before each input.
struct Scratch {
    ctx: ToolContext,
    outside: PathBuf,
}

fn scratch() -> Scratch {
    let base = std::env::temp_dir().join(format!("agent-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("dir")).expect("scratch workspace");
    std::fs::create_dir_all(base.join("outside")).expect("scratch outside");
    std::fs::write(ws.join("a.txt"), "one\ntwo\nthree\n").expect("scratch file");
    std::fs::write(ws.join("dir/b.txt"), "alpha\nbeta\n").expect("scratch file");
    std::fs::write(base.join("outside/secret.txt"), "secret\n").expect("scratch file");
    let _ = std::os::unix::fs::symlink(base.join("outside"), ws.join("out"));
    let ws = ws.canonicalize().expect("canonical workspace");
    let ctx = ToolContext {
        workspace: ws.clone(),
        extra_dirs: Vec::new(),
        read_only_dirs: Vec::new(),
        spill_dir: base.join("spill"),
        child_env: Arc::new(Vec::new()),
        sandbox: None,
        background: Arc::new(crate::tools::background::Jobs::new(
            1,
            std::time::Instant::now(),
        )),
        plan: Arc::default(),
        subagents: None,
    };
    Scratch {
        ctx,
        outside: base.join("outside"),
    }
}

/// Every file under `dir` (symlinks not followed) with its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p.clone());
                out.push((p, None));
            } else {
                let bytes = std::fs::read(&p).ok().or_else(|| {
                    std::fs::read_link(&p)
                        .ok()
                        .map(|l| l.into_os_string().into_encoded_bytes())
                });
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// apply_patch on a scratch tree: a failed patch changes nothing, and no patch changes
/// anything outside the workspace.
pub fn apply_patch(data: &[u8]) {
    let patch = text(data);
    let s = scratch();
    let before = snapshot(&s.ctx.workspace);
    let outside = snapshot(&s.outside);
    let tool = crate::tools::apply_patch::ApplyPatch;
    let result = tool
        .prepare(&json!({"input": patch}))
        .and_then(|call| call.execute(&s.ctx));
    if result.is_err() {
        assert_eq!(
            before,
            snapshot(&s.ctx.workspace),
            "a failed patch changed the workspace: {patch:?}"
        );
    }
    assert_eq!(
        outside,
        snapshot(&s.outside),
        "a patch wrote outside: {patch:?}"
    );
}

/// A path the model names, resolved for reading or writing, never leaves the workspace
/// (`..`, absolute paths, a symlink pointing out).
pub fn paths(data: &[u8]) {
    let path = text(&data[..data.len().min(4096)]);
    let s = scratch();
    let ws = &s.ctx.workspace;
    for resolved in [
        crate::tools::paths::resolve_for_read(&s.ctx, &path),
        crate::tools::paths::resolve_for_write(&s.ctx, &path),
        crate::tools::paths::resolve_for_search(&s.ctx, &path),
    ]
    .into_iter()
    .flatten()
    {
        let real = resolved
            .canonicalize()
            .ok()
            .or_else(|| resolved.parent()?.canonicalize().ok());
        assert!(
            resolved.starts_with(ws) && real.is_none_or(|r| r.starts_with(ws)),
            "{path:?} resolved to {resolved:?}, outside {ws:?}"
        );
    }
}

/// Transcripts and journals (`agent summary`, `--resume`, `agent batch merge`) never
/// panic on any text.
pub fn transcript(data: &[u8]) {
    let t = text(data);
    let _ = crate::commands::summary::parse_transcript(&t, "fuzz.json");
    let _ = crate::record::journal::rebuild(&t);
    let _ = crate::record::journal::read(&t);
}

/// `WWW-Authenticate` headers from MCP servers never panic the challenge parser.
pub fn www_authenticate(data: &[u8]) {
    let _ = crate::mcp::oauth::Challenge::parse(&text(data));
}

/// Redaction never lets a configured secret through, whole or in pieces, as it is or
/// JSON-escaped. Input: the secret's length (first byte), the secret, then the text.
pub fn redaction(data: &[u8]) {
    let (seed, rest) = split_input(data);
    let len = 8 + (seed as usize % 24);
    if rest.len() < len {
        return;
    }
    let secret = String::from_utf8_lossy(&rest[..len]).into_owned();
    let body = String::from_utf8_lossy(&rest[len..]).into_owned();
    // A secret that is part of the marker could reappear by the replacement itself.
    if "[REDACTED]".contains(secret.as_str()) || secret.contains("REDACTED") {
        return;
    }
    let secrets = vec![secret.clone()];
    let once = crate::util::secrets::redact(&body, &secrets);
    assert!(!once.contains(&secret), "{secret:?} in {once:?}");
    let mut r = crate::util::secrets::StreamRedactor::new(&secrets);
    let mut streamed = String::new();
    let mut cut = Pieces {
        data: body.as_bytes(),
        seed,
    };
    let mut rest = body.as_str();
    while !rest.is_empty() {
        let mut n = cut.next_len().min(rest.len());
        while !rest.is_char_boundary(n) {
            n += 1;
        }
        streamed.push_str(&r.push(&rest[..n]));
        rest = &rest[n..];
    }
    streamed.push_str(&r.finish());
    assert!(!streamed.contains(&secret), "{secret:?} in {streamed:?}");
}

/// Settings files (permissions, hooks) and their rules never panic the reader.
pub fn settings(data: &[u8]) {
    let t = text(data);
    let mut files = crate::config::settings::SettingsFiles::default();
    if files.push_str(&t, "fuzz.json").is_ok() {
        let known = crate::tools::registry::Registry::builtin(&Default::default()).known();
        let _ = crate::policy::Settings::from_files(&files, &known);
    }
    let known = crate::tools::registry::Registry::builtin(&Default::default()).known();
    for line in t.lines().take(64) {
        let _ = crate::policy::Rule::parse(line, &known);
    }
}

/// WebFetch's HTML to Markdown never panics.
pub fn html(data: &[u8]) {
    let _ = htmd::convert(&text(data));
}

/// MCP JSON-RPC messages (a stdio line, an HTTP body, an SSE event's data) never panic
/// the classifier.
pub fn jsonrpc(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice(&data[..data.len().min(MAX_INPUT)]) {
        let _ = crate::mcp::client::classify_with(v, None);
    }
}

#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;
