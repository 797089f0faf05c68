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
    ("openai_chat_turn", openai_chat_turn),
    ("responses_turn", responses_turn),
    ("mcp_http", mcp_http),
    ("mcp_config", mcp_config),
    ("oauth", oauth),
    ("jwt", jwt),
    ("sigv4", sigv4),
    ("aws_credentials", aws_credentials),
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
/// never panics, the same turn or failure for every split, and a decoded turn
/// re-encoded (as cassettes store it) decodes to the same message, usage and stop reason.
pub fn anthropic_turn(data: &[u8]) {
    use crate::model::provider::anthropic::decode::read_turn;
    let (seed, stream) = split_input(data);
    let whole = read_turn(&mut &stream[..], &mut |_| {});
    let pieces = read_turn(&mut Pieces { data: stream, seed }, &mut |_| {});
    assert_eq!(
        format!("{whole:?}"),
        format!("{pieces:?}"),
        "split {seed} of {stream:?}"
    );
    if let Ok(turn) = whole {
        anthropic_round_trip(&turn);
    }
}

/// A turn written as cassettes write a redacted turn of any wire but Responses (a
/// canonical Anthropic stream) reads back as the same message, usage and stop reason.
fn anthropic_round_trip(turn: &crate::model::turn::Turn) {
    use crate::model::provider::anthropic::decode::{encode, read_turn};
    let text = encode(turn);
    let again = read_turn(&mut text.as_bytes(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{turn:?} encoded as {text:?} does not decode: {e:?}"));
    assert_eq!(again.message, turn.message, "{text:?}");
    assert_eq!(again.usage, turn.usage, "{text:?}");
    assert_eq!(again.stop_reason, turn.stop_reason, "{text:?}");
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
        files: Default::default(),
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

/// MCP JSON-RPC messages (a stdio line, an HTTP body, an SSE event's data): the
/// classifier's answer keeps JSON-RPC's rules (below).
pub fn jsonrpc(data: &[u8]) {
    let elicitation = elicitation_of(data.first().copied().unwrap_or(0));
    if let Ok(v) = serde_json::from_slice(&data[..data.len().min(MAX_INPUT)]) {
        classify_checked(v, elicitation);
    }
}

fn elicitation_of(b: u8) -> Option<crate::mcp::client::Elicitation> {
    use crate::mcp::client::Elicitation;
    [
        None,
        Some(Elicitation::Decline),
        Some(Elicitation::Defaults),
    ][usize::from(b % 3)]
}

/// Classifies one message and checks the answer: a request's reply carries the request's
/// own `id`, `"jsonrpc": "2.0"` and exactly one of `result` and `error`; a response is
/// ours (`Some(id)`) only when its id is that number; a notification has no id.
fn classify_checked(
    msg: serde_json::Value,
    elicitation: Option<crate::mcp::client::Elicitation>,
) -> String {
    use crate::mcp::client::Incoming;
    let id = msg.get("id").cloned();
    let got = crate::mcp::client::classify_with(msg.clone(), elicitation);
    match &got {
        Incoming::Request { reply, .. } => {
            assert_eq!(reply.get("id"), id.as_ref(), "{msg} -> {reply}");
            assert_eq!(reply["jsonrpc"], "2.0", "{msg} -> {reply}");
            assert!(
                reply.get("result").is_some() != reply.get("error").is_some(),
                "{msg} -> {reply}"
            );
        }
        Incoming::Response { id: Some(n), .. } => {
            assert_eq!(id.and_then(|i| i.as_u64()), Some(*n), "{msg}");
        }
        Incoming::Notification { .. } => assert!(id.is_none(), "{msg}"),
        Incoming::Response { id: None, .. } | Incoming::Invalid(_) => {}
    }
    format!("{got:?}")
}

/// The messages of one MCP HTTP answer, as the client reads them: a JSON body (a message
/// or a batch) or an SSE stream whose events each carry one; each classified (checked as
/// in `jsonrpc`). An event that is not JSON ends the stream with an error, as it does the
/// call.
fn mcp_http_messages(
    sse: bool,
    mut body: impl BufRead,
    elicitation: Option<crate::mcp::client::Elicitation>,
) -> Vec<String> {
    let mut out = Vec::new();
    let scan = |v: serde_json::Value, out: &mut Vec<String>| {
        let msgs = match v {
            serde_json::Value::Array(a) => a,
            v => vec![v],
        };
        for m in msgs.into_iter().take(1000) {
            out.push(classify_checked(m, elicitation));
        }
    };
    if !sse {
        let mut text = String::new();
        match body.read_to_string(&mut text) {
            Ok(_) => match serde_json::from_str(&text) {
                Ok(v) => scan(v, &mut out),
                Err(e) => out.push(format!("not JSON: {e}")),
            },
            Err(e) => out.push(format!("read: {:?}", e.kind())),
        }
        return out;
    }
    let mut events = crate::model::provider::sse::SseReader::new(body);
    while out.len() < 10_000 {
        match events.next_event() {
            Ok(Some(ev)) if ev.data.trim().is_empty() => out.push(format!("id {:?}", ev.id)),
            Ok(Some(ev)) => match serde_json::from_str(&ev.data) {
                Ok(v) => scan(v, &mut out),
                Err(e) => {
                    out.push(format!("an SSE event is not JSON: {e}"));
                    break;
                }
            },
            Ok(None) => break,
            Err(e) => {
                out.push(format!("read: {:?}", e.kind()));
                break;
            }
        }
    }
    out
}

/// MCP over HTTP: a JSON body or an SSE stream (the first byte chooses, and the split and
/// the elicitation mode): every message keeps JSON-RPC's rules, and the same messages
/// come out of every split of the same bytes.
pub fn mcp_http(data: &[u8]) {
    let (seed, stream) = split_input(data);
    let first = data.first().copied().unwrap_or(0);
    let sse = first & 1 == 1;
    let elicitation = elicitation_of(first >> 1);
    let whole = mcp_http_messages(sse, stream, elicitation);
    let pieces = mcp_http_messages(sse, Pieces { data: stream, seed }, elicitation);
    assert_eq!(whole, pieces, "split {seed} of {stream:?}");
}

/// `debug` with the ids the OpenAI decoders make up for calls that came without one
/// (`call_agent_N`, from a process-wide counter so that they never repeat) made equal:
/// two decodes of the same bytes differ there by design.
fn same_ids(debug: String) -> String {
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug.as_str();
    while let Some(i) = rest.find("call_agent_") {
        out.push_str(&rest[..i + "call_agent_".len()]);
        rest = rest[i + "call_agent_".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('N');
    }
    out.push_str(rest);
    out
}

/// An OpenAI chat-completions stream: the same turn or failure for every split, and a
/// decoded turn written as cassettes write it (a canonical Anthropic stream) reads back
/// as the same message, usage and stop reason.
pub fn openai_chat_turn(data: &[u8]) {
    use crate::model::provider::openai::decode::read_chat_turn;
    let (seed, stream) = split_input(data);
    let whole = read_chat_turn(&mut &stream[..], &mut |_| {});
    let pieces = read_chat_turn(&mut Pieces { data: stream, seed }, &mut |_| {});
    assert_eq!(
        same_ids(format!("{whole:?}")),
        same_ids(format!("{pieces:?}")),
        "split {seed} of {stream:?}"
    );
    if let Ok(turn) = whole {
        anthropic_round_trip(&turn);
    }
}

/// An OpenAI Responses stream: the same turn or failure for every split, and a decoded
/// turn re-encoded (as cassettes store it) decodes to the same message, usage and stop
/// reason.
pub fn responses_turn(data: &[u8]) {
    use crate::model::provider::openai_responses::decode::{encode, read_responses_turn};
    let (seed, stream) = split_input(data);
    let whole = read_responses_turn(&mut &stream[..], &mut |_| {});
    let pieces = read_responses_turn(&mut Pieces { data: stream, seed }, &mut |_| {});
    assert_eq!(
        same_ids(format!("{whole:?}")),
        same_ids(format!("{pieces:?}")),
        "split {seed} of {stream:?}"
    );
    if let Ok(turn) = whole {
        let text = encode(&turn);
        let again = read_responses_turn(&mut text.as_bytes(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{turn:?} encoded as {text:?} does not decode: {e:?}"));
        assert_eq!(again.message, turn.message, "{text:?}");
        assert_eq!(again.usage, turn.usage, "{text:?}");
        assert_eq!(again.stop_reason, turn.stop_reason, "{text:?}");
    }
}

/// `.mcp.json` / `--mcp-config`: never panics, a server's name passes the name check,
/// the same text parses the same twice, and every environment value expanded into an
/// HTTP server's headers is among the values redacted (the value of `${NAME}` here is
/// `tok-NAME-<n>`, set for names starting with an upper-case letter).
pub fn mcp_config(data: &[u8]) {
    let t = text(data);
    let var = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_uppercase())
            .then(|| format!("tok-{name}-{}", name.len()))
    };
    let file = Path::new("fuzz.json");
    let parsed = crate::mcp::config::parse(&t, file, &var);
    assert_eq!(
        format!("{parsed:?}"),
        format!("{:?}", crate::mcp::config::parse(&t, file, &var))
    );
    let Ok(servers) = parsed else { return };
    for s in &servers {
        assert!(
            crate::mcp::config::check_name(&s.name).is_ok(),
            "{:?}",
            s.name
        );
        if let crate::mcp::config::Transport::Http { headers, .. } = &s.transport {
            let redacted = s.redacted_values();
            for (_, v) in headers {
                for word in v.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                {
                    if let Some(name) = word.strip_prefix("tok-").and_then(|w| w.rsplit_once('-'))
                        && var(name.0).as_deref() == Some(word)
                    {
                        assert!(
                            redacted.iter().any(|r| r.contains(word)),
                            "{word:?} expanded into a header of {:?} is not redacted: {redacted:?}",
                            s.name
                        );
                    }
                }
            }
        }
    }
}

/// OAuth's documents and URLs. The first byte chooses: authorization-server metadata,
/// protected-resource metadata, a token response (MCP's and Google's), the URL
/// arithmetic. Properties: an accepted resource covers the server and shares its origin
/// (a token is never sent elsewhere); a token's expiry is never before the time it was
/// issued; encode/decode and with_query/query_param round-trip; well-known locations stay
/// on their URL's origin.
pub fn oauth(data: &[u8]) {
    use crate::mcp::oauth::{discovery, grants, url};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let t = text(rest);
    let json = || serde_json::from_str::<serde_json::Value>(&t).ok();
    let server = "https://mcp.example.com/mcp";
    match mode % 4 {
        0 => {
            if let Some(m) = json() {
                let _ = discovery::issuer_from(
                    &m,
                    "https://as.example.com",
                    "https://as.example.com/.well-known/x",
                );
            }
        }
        1 => {
            if let Some(doc) = json()
                && let Ok((resource, _, _)) = discovery::resource_from(&doc, server)
            {
                assert!(url::resource_covers(&resource, server), "{resource:?}");
                assert!(url::same_origin(&resource, server), "{resource:?}");
            }
        }
        2 => {
            let now = 1_800_000_000;
            if let Some(v) = json()
                && let Ok(tok) = grants::read_token(&v, &["a".into()], Some("old"), now)
            {
                assert!(!tok.access.is_empty());
                assert!(
                    tok.expires_at
                        .is_none_or(|e| e >= now || v.get("expires_in").is_none()),
                    "{v}"
                );
            }
            let _ = grants::jwt_expiry(&t);
            if let Ok((tok, exp)) =
                crate::model::provider::vertex::adc::parse_token(&t, "fuzz", now)
            {
                assert!(!tok.is_empty() && exp >= now, "{t:?}");
            }
        }
        _ => {
            let (a, b) = t.split_once('\n').unwrap_or((&t, ""));
            assert_eq!(url::decode(&url::encode(a)), a);
            if !a.contains('#') && url::query_param(a, b).is_none() && !b.is_empty() {
                let with = url::with_query(a, &[(b, "v a&l=u#e")]);
                assert_eq!(
                    url::query_param(&with, b).as_deref(),
                    Some("v a&l=u#e"),
                    "{with:?}"
                );
            }
            if url::resource_covers(a, b) {
                assert!(url::same_origin(a, b), "{a:?} covers {b:?}");
            }
            for u in url::well_known(a, "oauth-protected-resource", true)
                .into_iter()
                .chain(url::as_metadata_urls(a))
            {
                assert!(url::same_origin(&u, a), "{u:?} from {a:?}");
            }
            let _ = url::resolve(a, b);
        }
    }
}

fn key(name: &str) -> &'static crate::util::jwt::SigningKey {
    use crate::util::jwt::{Alg, SigningKey};
    static KEYS: std::sync::OnceLock<(SigningKey, SigningKey)> = std::sync::OnceLock::new();
    let (rs, es) = KEYS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys");
        let pem = |f: &str| std::fs::read_to_string(dir.join(f)).expect("test key");
        (
            SigningKey::from_pem(&pem("test_rsa_pkcs8.pem"), Alg::Rs256).expect("RSA key"),
            SigningKey::from_pem(&pem("test_ec_p256_pkcs8.pem"), Alg::Es256).expect("EC key"),
        )
    });
    if name == "RS256" { rs } else { es }
}

/// JWT inputs: a PEM key from a config file never panics the reader; base64 in both
/// alphabets round-trips; a JWT signed over any claims is three base64url parts whose
/// header names the algorithm and whose claims are the claims given.
pub fn jwt(data: &[u8]) {
    use crate::util::jwt::{self, Alg, SigningKey};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let t = text(rest);
    let alg = if mode & 1 == 0 {
        Alg::Rs256
    } else {
        Alg::Es256
    };
    let _ = SigningKey::from_pem(&t, alg);
    assert_eq!(
        jwt::base64url_decode(&jwt::base64url(rest)).as_deref(),
        Ok(rest)
    );
    assert_eq!(
        jwt::base64_std_decode(&jwt::base64_std(rest)).as_deref(),
        Ok(rest)
    );
    let _ = jwt::base64url_decode(&t);
    let _ = jwt::base64_std_decode(&t);
    // Signing is slow (RSA): only for short, JSON inputs.
    if mode & 2 == 2
        && rest.len() < 512
        && let Ok(claims) = serde_json::from_str::<serde_json::Value>(&t)
    {
        let kid = (mode & 4 == 4).then_some(t.as_str());
        let token = key(alg.as_str()).sign(kid, &claims).expect("signing");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        let part = |i: usize| -> serde_json::Value {
            serde_json::from_slice(&jwt::base64url_decode(parts[i]).expect("base64url"))
                .expect("JSON")
        };
        assert_eq!(part(0)["alg"], alg.as_str());
        assert_eq!(part(0).get("kid").and_then(|k| k.as_str()), kid);
        assert_eq!(part(1), claims);
    }
}

/// SigV4 over any request (lines: method, URL, region, service, key id, secret, token,
/// then `name: value` headers; the first 8 bytes the time): deterministic; the signed
/// header list is sorted, unique, lower-case, has `host` and `x-amz-date` and never a
/// header a proxy may change; the credential scope names the key, date, region and
/// service; the signature is 64 hex digits; reordering differently named headers changes
/// nothing.
pub fn sigv4(data: &[u8]) {
    use crate::model::provider::bedrock::sigv4::{AwsCredentials, SignInput, amz_date, sign};
    if data.len() < 8 {
        return;
    }
    let time = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
    let t = text(&data[8..]);
    let mut lines = t.split('\n');
    let mut next = || lines.next().unwrap_or("").to_string();
    let (method, url, region, service) = (next(), next(), next(), next());
    let creds = AwsCredentials {
        access_key_id: next(),
        secret_access_key: next(),
        session_token: Some(next()).filter(|s| !s.is_empty()),
    };
    let headers: Vec<(String, String)> = lines
        .take(32)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let input = |headers: &[(String, String)]| {
        sign(
            &creds,
            &SignInput {
                method: &method,
                url: &url,
                headers,
                payload_sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                region: &region,
                service: &service,
                time,
            },
        )
    };
    let added = input(&headers);
    assert_eq!(added, input(&headers), "not deterministic");
    let auth = &added
        .iter()
        .find(|(n, _)| n == "authorization")
        .expect("authorization")
        .1;
    let date = amz_date(time);
    let scope = format!(
        "Credential={}/{}/{region}/{service}/aws4_request, SignedHeaders=",
        creds.access_key_id,
        &date[..8]
    );
    let after = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .and_then(|a| a.strip_prefix(&scope))
        .unwrap_or_else(|| panic!("{auth:?} does not start with {scope:?}"));
    let (signed, signature) = after
        .rsplit_once(", Signature=")
        .unwrap_or_else(|| panic!("{auth:?}"));
    assert!(
        signature.len() == 64
            && signature
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{signature:?}"
    );
    // Header names with `;` or `,` would make the list ambiguous; real names have none.
    if headers.iter().all(|(n, _)| !n.contains([';', ',', ' '])) {
        let names: Vec<&str> = signed.split(';').collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{signed:?}");
        assert!(
            names.contains(&"host") && names.contains(&"x-amz-date"),
            "{signed:?}"
        );
        for n in [
            "user-agent",
            "authorization",
            "expect",
            "connection",
            "x-amzn-trace-id",
        ] {
            assert!(!names.contains(&n), "{n} signed: {signed:?}");
        }
        assert!(
            names.iter().all(|n| *n == n.to_ascii_lowercase()),
            "{signed:?}"
        );
    }
    let lower: Vec<String> = headers
        .iter()
        .map(|(n, _)| n.to_ascii_lowercase())
        .collect();
    let mut unique = lower.clone();
    unique.sort();
    unique.dedup();
    if unique.len() == lower.len() {
        let reversed: Vec<_> = headers.iter().rev().cloned().collect();
        assert_eq!(
            added,
            input(&reversed),
            "header order changed the signature"
        );
    }
    assert_eq!(
        added
            .iter()
            .find(|(n, _)| n == "x-amz-date")
            .map(|(_, v)| v.as_str()),
        Some(date.as_str())
    );
}

/// AWS credential sources' answers: the shared config/credentials files (INI), STS's XML,
/// the JSON of credential_process, the container endpoint and IMDS, and their times.
/// Never panics; a time the parser reads back from its own format is the same time.
pub fn aws_credentials(data: &[u8]) {
    use crate::model::provider::bedrock::{credentials, sigv4};
    let t = text(data);
    let ini = credentials::parse_ini(&t);
    for (section, keys) in &ini {
        assert_eq!(
            section.split_whitespace().collect::<Vec<_>>().join(" "),
            *section
        );
        assert!(
            keys.keys().all(|k| *k == k.to_ascii_lowercase()),
            "{keys:?}"
        );
    }
    if let Ok(timed) = credentials::sts_credentials(&t) {
        assert!(!t.is_empty() && timed.creds.session_token.is_some());
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&t)
        && let Ok(timed) = credentials::json_credentials(&v, "Token")
    {
        assert!(!timed.creds.access_key_id.is_empty() && !timed.creds.secret_access_key.is_empty());
    }
    let _ = sigv4::parse_utc(&t);
    if data.len() >= 8 {
        // Any time up to the year 9999: its RFC 3339 form reads back as itself.
        let secs = u64::from_le_bytes(data[..8].try_into().expect("8 bytes")) % 253_402_300_800;
        let (y, mo, d, h, mi, s) = sigv4::utc(secs);
        let iso = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z");
        assert_eq!(sigv4::parse_utc(&iso), Some(secs), "{iso}");
    }
}

#[cfg(test)]
#[path = "fuzzing_tests.rs"]
mod tests;
