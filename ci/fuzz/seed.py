#!/usr/bin/env python3
"""Writes the seed inputs of fuzz/corpus/ from the repository's fixtures, cassettes and
test cases (issue 43). Run once when a target is added; the corpus is committed, and the
fuzzers add to it. Seeds are named `seed-*`; inputs that once crashed, `crash-*`."""

import base64
import glob
import json
import os
import random
import struct
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "ci/interop/shell_diff"))


def write(target, name, data):
    d = os.path.join(ROOT, "fuzz/corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def frame(headers, payload):
    """One AWS event-stream message."""
    h = b""
    for k, v in headers.items():
        kb, vb = k.encode(), v.encode()
        h += bytes([len(kb)]) + kb + b"\x07" + struct.pack(">H", len(vb)) + vb
    total = 12 + len(h) + len(payload) + 4
    prelude = struct.pack(">II", total, len(h))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    msg = prelude + h + payload
    return msg + struct.pack(">I", zlib.crc32(msg))


def main():
    sse = sorted(glob.glob(os.path.join(ROOT, "fixtures/sse/*.sse")))
    for i, path in enumerate(sse):
        data = open(path, "rb").read()
        name = os.path.basename(path)
        write("sse_split", name, bytes([i * 37 % 256]) + data)
        if not name.startswith(("openai", "responses")):
            write("anthropic_turn", name, bytes([i * 53 % 256]) + data)
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role":
                                              "assistant", "model": "c", "content": [],
                                              "usage": {"input_tokens": 1,
                                                        "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    stream = b""
    for e in events:
        payload = json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode()})
        stream += frame({":event-type": "chunk", ":content-type": "application/json",
                         ":message-type": "event"}, payload.encode())
    write("event_stream_split", "turn", b"\x05" + stream)
    write("event_stream_split", "exception", b"\x09" + frame(
        {":exception-type": "throttlingException", ":content-type": "application/json",
         ":message-type": "exception"}, b'{"message":"slow down"}'))
    write("event_stream_split", "cut", b"\x02" + stream[:40])

    import diff  # ci/interop/shell_diff/diff.py: the generated commands
    rng = random.Random(1)
    for i in range(40):
        write("shell_words", f"gen{i:02}", diff.generate(rng))
    for i, c in enumerate(["bash <<'EOF'\nrm -f f\nEOF", "env -S 'rm -f' f",
                           "find . -exec rm {} \\;", "x=rm; $x -f f", "git \\\n push",
                           "case $a in (x) ls;; esac", "f() { rm x; }; f",
                           "echo $'\\x72m' `ls` $(( 1 << 2 )) <(cat) >&2 2>>log"]):
        write("shell_words", f"case{i}", c)

    patches = [
        "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n three\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Delete File: dir/b.txt\n"
        "*** End Patch\n",
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: dir/c.txt\n@@\n-one\n+1\n"
        "*** Update File: dir/b.txt\n@@\n-gamma\n+delta\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: out/x.txt\n+escape\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: ../outside/secret.txt\n@@\n-secret\n+x\n"
        "*** End Patch\n",
    ]
    for i, p in enumerate(patches):
        write("apply_patch", f"p{i}", p)
    for i, p in enumerate(["a.txt", "../outside/secret.txt", "out/secret.txt", "/etc/passwd",
                           "dir/../a.txt", "new/deep/file", "out", "./dir/./b.txt", "~/x",
                           "a.txt/../../outside"]):
        write("paths", f"p{i}", p)
    for i, path in enumerate(sorted(glob.glob(os.path.join(ROOT, "fixtures/demo/*.jsonl")))):
        write("transcript", os.path.basename(path), open(path, "rb").read()[:20000])
    write("transcript", "doc", json.dumps({"type": "result", "status": "success",
                                           "session_id": "s", "messages": [
                                               {"role": "user", "content": "hi"}],
                                           "usage": {"input_tokens": 1}}))
    write("transcript", "journal", '{"journal":1,"session_id":"s"}\n{"seq":1}\n')
    for i, h in enumerate([
        'Bearer resource_metadata="https://x/.well-known/oauth-protected-resource"',
        'Bearer error="insufficient_scope", scope="a b", realm="r"',
        'Basic realm="x", Bearer scope=unquoted, error_description="a \\"q\\""']):
        write("www_authenticate", f"h{i}", h)
    write("redaction", "json", b"\x07" + b"sk-12345678abc" + b'{"k":"sk-12345678abc"} sk-1234')
    write("redaction", "split", b"\x03" + b"hunter2hunter" + b"xxhunter2hunterhunter2")
    write("settings", "full", json.dumps({
        "permissions": {"allow": ["Bash(cargo test:*)", "ReadFile(src/**)"],
                        "deny": ["Bash(rm:*)", "WebFetch(domain:*.x.com)"],
                        "denyOpaque": True},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "command": "true", "timeout": 5}]}}))
    write("settings", "rules", "Bash(git push:*)\nReadFile(../x)\nBash(\nmcp__s__t\n")
    write("html", "doc", "<html><head><title>t</title><script>x()</script></head><body>"
          "<h1>A</h1><p>b <a href='/x'>c</a></p><pre><code>d</code></pre><table><tr>"
          "<td>e</td></tr></table><ul><li>f<ul><li>g</li></ul></li></ul></body></html>")
    for i, m in enumerate([
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
        {"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "id": "a", "method": "elicitation/create",
         "params": {"message": "m", "requestedSchema": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage"}]):
        write("jsonrpc", f"m{i}", json.dumps(m))
    more()


def more():
    """The seeds of the second set of targets (OpenAI wires, MCP HTTP and configuration,
    OAuth, JWT, SigV4, AWS credentials)."""
    streams = sorted(glob.glob(os.path.join(ROOT, "fixtures/sse/*.sse")) +
                     glob.glob(os.path.join(ROOT, "tests/fixtures/servers/*.sse")))
    for i, path in enumerate(streams):
        name = os.path.basename(path)
        data = open(path, "rb").read()
        if "openai" in name or "chat" in name or "llama" in name:
            write("openai_chat_turn", name, bytes([i * 41 % 256]) + data)
        if name.startswith("responses"):
            write("responses_turn", name, bytes([i * 43 % 256]) + data)
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {}}]}},
        [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
         {"jsonrpc": "2.0", "id": 9, "method": "ping"},
         {"jsonrpc": "2.0", "id": 1, "result": {}}],
        {"jsonrpc": "2.0", "id": "e", "method": "elicitation/create",
         "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {
             "a": {"type": "string", "default": "x"}}, "required": ["a"]}}},
    ]
    for i, m in enumerate(msgs):
        write("mcp_http", f"body{i}", bytes([i * 2 * 3 % 256]) + json.dumps(m).encode())
        sse = f"id: e{i}\nretry: 10\ndata:\n\nevent: message\nid: e{i}b\ndata: {json.dumps(m)}\n\n"
        write("mcp_http", f"sse{i}", bytes([(i * 2 + 1) * 5 % 256]) + sse.encode())
    write("mcp_http", "sse_not_json", b"\x01data: {no\n\n")
    write("mcp_config", "full", json.dumps({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "srv", "${HOME:-/h}"],
                  "env": {"TOKEN": "${GH_TOKEN}"}, "cwd": "sub"},
        "web": {"type": "http", "url": "https://mcp.example.com/${PATH_X:-mcp}",
                "headers": {"Authorization": "Bearer ${API_KEY}", "X-Two": "${A}${B}"},
                "oauth": {"client_id": "c", "client_secret": "${SECRET}",
                          "scopes": ["a", "b"], "grant_type": "client_credentials",
                          "token_endpoint_auth_method": "client_secret_post"}},
        "off": {"url": "https://x.example.com", "oauth": False}}}))
    write("mcp_config", "bad", '{"mcpServers": {"a__b": {"command": "x"}, "c": {"url": 1}}}')
    write("oauth", "as_metadata", b"\x00" + json.dumps({
        "issuer": "https://as.example.com", "authorization_endpoint": "https://as/authorize",
        "token_endpoint": "https://as/token", "registration_endpoint": "https://as/register",
        "scopes_supported": ["a"], "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": True}).encode())
    write("oauth", "resource", b"\x01" + json.dumps({
        "resource": "https://mcp.example.com/mcp", "authorization_servers": ["https://as"],
        "scopes_supported": ["a", "b"]}).encode())
    write("oauth", "resource_root", b"\x01" + json.dumps({
        "resource": "https://MCP.example.com/", "authorization_servers": ["https://as"]}).encode())
    write("oauth", "token", b"\x02" + json.dumps({
        "access_token": "at", "refresh_token": "rt", "expires_in": 3600, "scope": "a b",
        "token_type": "Bearer"}).encode())
    claims = base64.urlsafe_b64encode(b'{"exp":1900000000}').decode().rstrip("=")
    write("oauth", "token_jwt", b"\x02" + json.dumps({
        "access_token": "eyJhbGciOiJub25lIn0." + claims + ".x"}).encode())
    write("oauth", "token_str", b"\x02" + json.dumps({"access_token": "a", "expires_in": "60"}).encode())
    write("oauth", "urls", b"\x03https://h.example.com/a/b?x=1\nstate")
    write("oauth", "urls2", b"\x03https://h.example.com/mcp/\n../x?y=%41+b")
    keys = sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/keys/*.pem")))
    for i, k in enumerate(keys):
        write("jwt", f"pem{i}", bytes([i]) + open(k, "rb").read())
    write("jwt", "claims_rs", b"\x06" + json.dumps({"iss": "a", "exp": 1, "n": [1.5, None]}).encode())
    write("jwt", "claims_es", b"\x03" + json.dumps({"sub": "\u00e9"}).encode())
    cases = json.load(open(os.path.join(ROOT, "tests/fixtures/sigv4/botocore.json")))
    cases = cases if isinstance(cases, list) else cases.get("cases", [])
    for i, c in enumerate(cases[:6]):
        lines = [c.get("method", "POST"), c.get("url", "https://bedrock.us-east-1.amazonaws.com/"),
                 c.get("region", "us-east-1"), c.get("service", "bedrock"),
                 c.get("access_key_id", "AKID"), c.get("secret_access_key", "secret"),
                 c.get("session_token") or ""]
        hs = c.get("headers", {})
        hs = hs.items() if isinstance(hs, dict) else hs
        lines += [f"{k}: {v}" for k, v in hs]
        write("sigv4", f"botocore{i}", struct.pack("<Q", int(c.get("time", 1_700_000_000))) +
              "\n".join(lines).encode())
    write("sigv4", "plain", struct.pack("<Q", 1_765_000_000) + b"POST\nhttps://h:443/model/a%2Fb/invoke?b=2&a=1\n"
          b"us-east-1\nbedrock\nAKID\nsecret\ntoken\ncontent-type: application/json\n"
          b"User-Agent: x\nX-Amz-Meta:  a   b ")
    write("aws_credentials", "ini", "[default]\naws_access_key_id = A\n[profile  dev]\n"
          "role_arn=arn:aws:iam::1:role/r\nsource_profile = default\n  nested = x\n; c\n")
    write("aws_credentials", "sts", "<AssumeRoleResponse><Credentials><AccessKeyId>A</AccessKeyId>"
          "<SecretAccessKey>S&amp;x</SecretAccessKey><SessionToken>T</SessionToken>"
          "<Expiration>2026-12-07T23:00:00Z</Expiration></Credentials></AssumeRoleResponse>")
    write("aws_credentials", "json", json.dumps({"AccessKeyId": "A", "SecretAccessKey": "S",
                                                 "Token": "T",
                                                 "Expiration": "2026-12-07T23:00:00.123+01:00"}))


if __name__ == "__main__":
    main()
