#!/usr/bin/env python3
"""A loopback mock of the Anthropic Messages API for the benchmark suite (std library only;
independent of the Rust test mock in tests/support/).

It plays a scripted model to whichever peer calls it, telling the peers apart by the tools
they offer: `agent` offers ReadFile/Grep (with `path` parameters), Claude Code offers
Read/Grep (with `file_path` / `path`). A request that offers neither (Claude Code's side
calls: titles, quota probes, summaries) gets a short plain answer, streamed or not as asked;
`/v1/messages/count_tokens` gets a token count. Every request is logged as one JSON line.

Scripts (`--script`):
  session  N tool turns, each reading one small file, files/fNNN.txt (NNN = 001..N, all
           distinct: no peer may skip a re-read), then a final answer (turn N+1). The
           turn is derived from the request itself (the number of tool results in it), so
           the server is stateless and any number of runs can reuse it.
  long     the session with bigger results: N tool turns, each reading files/gNNN.txt (~6 KB
           each), then the final answer; usage reports input_tokens of about the request's
           size in tokens (bytes / 4), so a peer sees its context grow as it would for real.
  stream   turn 1 streams one Grep call for --pattern over the workspace, then keeps
           streaming text for --text-seconds before message_stop (a prompt containing
           `text_seconds=S` overrides it for that run); turn 2 ends the run.
  shell    OpenAI's Responses API (`POST …/responses`), for codex exec and `agent
           --provider openai-responses`: N tool turns, each one command or read of
           files/fNNN.txt, then a final answer. The peer is told apart by its tools: codex
           offers `exec_command` (gets `{"cmd": "cat files/fNNN.txt"}`), agent with Bash
           gets `Bash {"command"}`, agent without it `ReadFile {"path"}`; the turn is the
           number of `function_call_output` items in the request.

With `--pid-file F` (a file holding the pid of the process that spawned the peer, e.g.
/usr/bin/time), each model request of the peer is logged with the peer's CPU time so far
(`cpu_ns`: the sum of /proc/PID/task/*/schedstat, nanoseconds) and peak RSS (`hwm_kb`),
sampled while the peer waits for the answer: per-turn CPU without any timer.

Usage: mock_server.py --script session --turns 100 --workspace DIR --port-file F --log F
The server prints nothing; it writes its port to --port-file once it listens."""
import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

MODEL = "claude-sonnet-4-5-20250929"
TEXT_DELTA_SECONDS = 0.02
PID_FILE_WAIT_S = 5.0  # how long a request waits for the bench to name the peer's pid  # the stream script's pace: one text delta this often


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


BYTES_PER_TOKEN = 4  # the long script's usage: a request's size in tokens, roughly


def usage(out=1, input_tokens=100):
    return {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": out}


class Reply:
    """One assistant message, built as content blocks, sent as SSE or as one JSON body."""

    def __init__(self, model, msg_id, input_tokens=100):
        self.model = model
        self.id = msg_id
        self.input_tokens = input_tokens
        self.blocks = []  # ("text", text, seconds) | ("tool_use", id, name, input)
        self.stop_reason = "end_turn"

    def text(self, text, seconds=0.0):
        self.blocks.append(("text", text, seconds))
        return self

    def tool(self, tool_id, name, args):
        self.blocks.append(("tool_use", tool_id, name, args))
        self.stop_reason = "tool_use"
        return self

    def message(self):
        content = []
        for b in self.blocks:
            if b[0] == "text":
                content.append({"type": "text", "text": b[1]})
            else:
                content.append({"type": "tool_use", "id": b[1], "name": b[2], "input": b[3]})
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": content, "stop_reason": self.stop_reason, "stop_sequence": None,
                "usage": usage(20, self.input_tokens)}

    def events(self):
        """Yields SSE frames; a text block with `seconds` is paced over that long."""
        start = {"id": self.id, "type": "message", "role": "assistant", "model": self.model,
                 "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": usage(1, self.input_tokens)}
        yield sse("message_start", {"type": "message_start", "message": start})
        for i, b in enumerate(self.blocks):
            if b[0] == "text":
                yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "text", "text": ""}})
                _, text, seconds = b
                if seconds > 0:
                    deadline = time.monotonic() + seconds
                    k = 0
                    while time.monotonic() < deadline:
                        piece = text[k % len(text)] if text else "."
                        yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                          "delta": {"type": "text_delta", "text": piece}})
                        k += 1
                        time.sleep(TEXT_DELTA_SECONDS)
                else:
                    for j in range(0, len(text), 16):
                        yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                          "delta": {"type": "text_delta",
                                                                    "text": text[j:j + 16]}})
            else:
                _, tool_id, name, args = b
                yield sse("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "tool_use", "id": tool_id,
                                                                    "name": name, "input": {}}})
                payload = json.dumps(args)
                for j in range(0, len(payload), 24):
                    yield sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "input_json_delta",
                                                                "partial_json": payload[j:j + 24]}})
            yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
        yield sse("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                                    "usage": {"output_tokens": 20}})
        yield sse("message_stop", {"type": "message_stop"})


def tool_names(body):
    return [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]


def peer_of(names):
    if "ReadFile" in names:
        return "agent"
    if "Read" in names:
        return "claude"
    return "side"


def results_of(body):
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [b for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out


def tool_results(body):
    return len(results_of(body))


def files_done(body):
    """The session scripts' progress: the highest `toolu_bench_NNNN` answered. Not a count:
    a compacted history (`--context-strategy`) keeps only the latest results."""
    ids = [re.fullmatch(r"toolu_bench_(\d+)", str(b.get("tool_use_id", ""))) for b in results_of(body)]
    return max((int(m.group(1)) for m in ids if m), default=0)


def result_text(block):
    c = block.get("content")
    if isinstance(c, list):
        c = " ".join(b.get("text", "") for b in c if isinstance(b, dict))
    return str(c or "")


def text_seconds(body, args):
    """The stream script's text length: `text_seconds=S` in the first user message, if any."""
    msgs = body.get("messages") or []
    first = msgs[0].get("content") if msgs and isinstance(msgs[0], dict) else ""
    if isinstance(first, list):
        first = " ".join(b.get("text", "") for b in first if isinstance(b, dict))
    m = re.search(r"text_seconds=([0-9.]+)", str(first))
    return float(m.group(1)) if m else args.text_seconds


class Script:
    def __init__(self, args):
        self.args = args

    def reply(self, peer, body, body_bytes=0):
        model = body.get("model") or MODEL
        done = tool_results(body)
        tokens = max(100, body_bytes // BYTES_PER_TOKEN) if self.args.script == "long" else 100
        r = Reply(model, f"msg_bench_{peer}_{done:04d}", tokens)
        if peer == "side":
            return r.text("Benchmark session")
        a = self.args
        if a.script in ("session", "long"):
            done = files_done(body)
            if done >= a.turns:
                return r.text(f"Read {done} files. Done.")
            n = done + 1
            rel = f"files/{'f' if a.script == 'session' else 'g'}{n:03d}.txt"
            if peer == "agent":
                return r.text(f"Reading file {n}.").tool(f"toolu_bench_{n:04d}", "ReadFile", {"path": rel})
            return r.text(f"Reading file {n}.").tool(f"toolu_bench_{n:04d}", "Read",
                                                     {"file_path": os.path.join(a.workspace, rel)})
        # stream
        if done >= 1:
            return r.text("The search is done.")
        args = {"pattern": a.pattern}
        if peer == "claude":
            args["path"] = a.workspace
        r.tool("toolu_bench_grep", "Grep", args)
        r.text("While that runs, here is some more reasoning about the search. ", text_seconds(body, a))
        r.stop_reason = "tool_use"
        return r


def responses_event(data):
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def responses_peer(names):
    if "exec_command" in names or "shell" in names or "shell_command" in names:
        return "codex"
    if "Bash" in names:
        return "agent-bash"
    if "ReadFile" in names:
        return "agent-read"
    return "side"


def responses_done(body):
    return sum(1 for i in body.get("input") or [] if isinstance(i, dict)
               and i.get("type") == "function_call_output")


def responses_reply(peer, body, turns):
    """The events of one Responses turn of the shell script."""
    rid = f"resp_bench_{peer}_{responses_done(body):04d}"
    model = body.get("model") or "gpt-5-codex"
    head = {"id": rid, "object": "response", "status": "in_progress", "model": model, "output": []}
    yield responses_event({"type": "response.created", "response": head})
    done = responses_done(body)
    items = []
    if peer == "side" or done >= turns:
        text = "Benchmark session" if peer == "side" else f"Ran {done} commands. Done."
        items.append({"id": f"msg_{rid}", "type": "message", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]})
    else:
        n = done + 1
        rel = f"files/f{n:03d}.txt"
        name, args = {"codex": ("exec_command", {"cmd": f"cat {rel}"}),
                      "agent-bash": ("Bash", {"command": f"cat {rel}"}),
                      "agent-read": ("ReadFile", {"path": rel})}[peer]
        items.append({"id": f"fc_{rid}", "type": "function_call", "status": "completed",
                      "call_id": f"call_bench_{n:04d}", "name": name, "arguments": json.dumps(args)})
    for i, item in enumerate(items):
        added = dict(item, status="in_progress")
        if item["type"] == "function_call":
            added["arguments"] = ""
        else:
            added["content"] = []
        yield responses_event({"type": "response.output_item.added", "output_index": i, "item": added})
        if item["type"] == "function_call":
            a = item["arguments"]
            for j in range(0, len(a), 24):
                yield responses_event({"type": "response.function_call_arguments.delta", "output_index": i,
                                       "item_id": item["id"], "delta": a[j:j + 24]})
            yield responses_event({"type": "response.function_call_arguments.done", "output_index": i,
                                   "item_id": item["id"], "arguments": a})
        else:
            yield responses_event({"type": "response.content_part.added", "output_index": i,
                                   "item_id": item["id"], "content_index": 0,
                                   "part": {"type": "output_text", "text": "", "annotations": []}})
            yield responses_event({"type": "response.output_text.delta", "output_index": i,
                                   "item_id": item["id"], "content_index": 0,
                                   "delta": item["content"][0]["text"]})
        yield responses_event({"type": "response.output_item.done", "output_index": i, "item": item})
    final = dict(head, status="completed", output=items,
                 usage={"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 120})
    yield responses_event({"type": "response.completed", "response": final})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bench-mock/1"
    # TCP_NODELAY, as API servers set it: with Nagle on, each small SSE frame written on a
    # kept-alive connection waits for the client's delayed ACK (~40 ms a turn on loopback).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # the request log replaces the access log
        pass

    def record(self, entry):
        with self.server.log_lock:
            self.server.log.write(json.dumps(entry) + "\n")
            self.server.log.flush()

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        self.body_bytes = len(raw)
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_bench")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.record({"method": "GET", "path": self.path})
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}})

    def do_HEAD(self):
        self.record({"method": "HEAD", "path": self.path})
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        path = urlsplit(self.path).path
        body = self.body()
        names = tool_names(body)
        peer = peer_of(names)
        if path.endswith("/responses"):
            peer = responses_peer(names)
            results = responses_done(body)
        else:
            results = tool_results(body)
        entry = {"t": time.time(), "method": "POST", "path": self.path, "model": body.get("model"),
                 "stream": bool(body.get("stream")), "peer": peer, "messages": len(body.get("messages") or []),
                 "tool_results": results, "max_tokens": body.get("max_tokens"),
                 "tools": len(names), "ua": self.headers.get("user-agent")}
        if peer in ("agent", "claude") and self.server.pid_file:
            entry.update(sample_peer(self.server.pid_file))
        results = results_of(body)
        if results:  # enough to see that the peer really ran the tool
            entry["tool_errors"] = sum(1 for b in results if b.get("is_error"))
            entry["last_result"] = result_text(results[-1])[:120]
        outputs = [i for i in body.get("input") or [] if isinstance(i, dict)
                   and i.get("type") == "function_call_output"]
        if outputs:
            entry["tool_errors"] = sum(1 for o in outputs if str(o.get("output", "")).startswith("Error: "))
            entry["last_result"] = str(outputs[-1].get("output", ""))[:120]
        self.record(entry)
        if path.endswith("/count_tokens"):
            return self.send_json(200, {"input_tokens": 100})
        if path.endswith("/responses"):
            return self.stream(responses_reply(responses_peer(names), body, self.server.script.args.turns))
        if not path.endswith("/v1/messages"):
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                   "message": f"mock: no {path}"}})
        reply = self.server.script.reply(peer, body, self.body_bytes)
        if not body.get("stream"):
            return self.send_json(200, reply.message())
        return self.stream(reply.events())

    def stream(self, frames):
        """A 200 event stream of `frames`, chunked."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", "req_bench")
        self.end_headers()
        try:
            for frame in frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def sample_peer(pid_file):
    """CPU time (ns, all threads) and peak RSS of the peer: the first child of the pid in
    pid_file (the wrapper that spawned it), or that pid itself when it has no child."""
    # The bench writes the file just after spawning the peer, and removes it after the
    # run: on a loaded machine the peer's first request can come first, so wait for it.
    deadline = time.monotonic() + PID_FILE_WAIT_S
    while not os.path.exists(pid_file) and time.monotonic() < deadline:
        time.sleep(0.001)
    try:
        with open(pid_file) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        if kids:
            pid = int(kids[0])
        cpu = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                cpu += int(f.read().split()[0])
        hwm = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        return {"pid": pid, "cpu_ns": cpu, "hwm_kb": hwm}
    except (OSError, ValueError, IndexError):
        return {}


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A peer closing a kept-alive connection as it exits is normal, not worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--script", choices=["session", "long", "stream", "shell"], required=True)
    p.add_argument("--turns", type=int, default=100)
    p.add_argument("--workspace", required=True)
    p.add_argument("--pattern", default="")
    p.add_argument("--text-seconds", type=float, default=1.0)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--pid-file", default=None, help="sample the CPU time of the peer it names")
    a = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.script = Script(a)
    server.pid_file = a.pid_file
    server.log = open(a.log, "a")
    server.log_lock = threading.Lock()
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, a.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
