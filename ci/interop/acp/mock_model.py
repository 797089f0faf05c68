"""A loopback Anthropic Messages API for the ACP interop clients: it answers each POST to
/v1/messages with the next turn of a script (text, or tool calls) as an SSE stream, keeps
every request body, and serves them at GET /requests. Usage:
mock_model.py SCRIPT.json PORT_FILE (it writes its port to PORT_FILE once listening)."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

script = json.load(open(sys.argv[1]))
lock = threading.Lock()
requests = []


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream(turn, n):
    out = [sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "mock-model",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1}}})]
    blocks = []
    if "text" in turn:
        blocks.append(("text", turn["text"]))
    for call in turn.get("tools", []):
        blocks.append(("tool", call))
    for i, (kind, b) in enumerate(blocks):
        if kind == "text":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": b}}))
        else:
            cid, name, inp = b
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}}}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(inp)}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = "tool_use" if turn.get("tools") else "end_turn"
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 20}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        with lock:
            body = json.dumps(requests).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        with lock:
            requests.append(json.loads(raw))
            n = len(requests)
        if n > len(script):
            body = json.dumps({"type": "error", "error": {
                "type": "invalid_request_error", "message": f"script exhausted at request {n}"}}).encode()
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = stream(script[n - 1], n)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
