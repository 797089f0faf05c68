"""A loopback stand-in for the Anthropic Messages API, for the Harbor trial
(ci/interop/harbor/trial.sh): it plays a fixed script per task, chosen by the task's text,
and streams each answer as Anthropic's SSE events. The container reaches it on the host's
Docker bridge address. Every request is appended to requests.jsonl beside it (the trial
checks that the agent really talked to it).

    python mock_model.py PORT LOGDIR
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# Task (a phrase of its instruction) → the tool calls of the first turn, then the answer.
SCRIPTS = {
    "greeting.txt": (
        [("toolu_edit_1", "EditFile",
          {"path": "greeting.txt", "old_string": "Hello, wrld!", "new_string": "Hello, world!"})],
        "Fixed the typo: greeting.txt now says Hello, world!",
    ),
    "count.txt": (
        [("toolu_bash_1", "Bash", {"command": "wc -l < data.txt | tr -d ' ' > count.txt && cat count.txt"})],
        "Wrote the number of lines of data.txt into count.txt.",
    ),
}


def text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def events(body):
    messages = body.get("messages", [])
    task = text_of(messages[0]) if messages else ""
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    calls, answer = next(((c, a) for k, (c, a) in SCRIPTS.items() if k in task), ([], "I do not know this task."))
    prompt_tokens = 900 + 150 * turn
    yield "message_start", {"type": "message_start", "message": {
        "id": f"msg_mock_{turn}", "type": "message", "role": "assistant", "model": body.get("model", "mock"),
        "content": [], "stop_reason": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": 1, "cache_read_input_tokens": 0,
                  "cache_creation_input_tokens": 0}}}
    blocks = []
    if turn == 0 and calls:
        blocks.append(("text", "Let me do that."))
        blocks += [("tool", c) for c in calls]
        stop = "tool_use"
    else:
        blocks.append(("text", answer))
        stop = "end_turn"
    for i, (kind, value) in enumerate(blocks):
        if kind == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": value}}
        else:
            cid, name, args = value
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 40 + 10 * turn}}
    yield "message_stop", {"type": "message_stop"}


class Handler(BaseHTTPRequestHandler):
    log_dir = Path(".")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with open(self.log_dir / "requests.jsonl", "a") as f:
            f.write(json.dumps({"path": self.path, "messages": len(body.get("messages", []))}) + "\n")
        if not self.path.endswith("/messages"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in events(body):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port, log_dir = int(sys.argv[1]), Path(sys.argv[2])
    log_dir.mkdir(parents=True, exist_ok=True)
    Handler.log_dir = log_dir
    ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
