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


if __name__ == "__main__":
    main()
