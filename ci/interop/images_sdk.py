"""Images and PDFs on every wire, against the official SDKs' request types.

For each wire (Anthropic Messages, which Bedrock, Vertex AI and Foundry send as is;
OpenAI chat completions; OpenAI Responses) the agent binary runs against a loopback model
server with a real PNG attached (`-i`), and in its first turn the model asks ReadFile for
a JPEG, a GIF, a WebP and a PDF and calls an MCP tool (the test MCP server's `picture`,
a PNG). The second request holds all of them; its JSON is validated with pydantic
against the SDK's own typed params (`anthropic`: MessageCreateParamsStreaming;
`openai`: chat CompletionCreateParamsStreaming, ResponseCreateParamsStreaming), every
lazy iterable forced, and the validated value must equal the JSON (a key the SDK type
does not know would be dropped, and the comparison fails). The images are made here
with Pillow; the PDF by hand.

Usage: python3 images_sdk.py AGENT MCP_TEST_SERVER [--print]
  --print  prints each wire's second request's messages (base64 cut short).
"""

import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pydantic
from PIL import Image

AGENT, MCP_SERVER = sys.argv[1], sys.argv[2]
PRINT = "--print" in sys.argv


def picture(fmt, size, **kw):
    im = Image.new("RGB", size)
    for x in range(size[0]):
        for y in range(size[1]):
            im.putpixel((x, y), ((x * 7) % 256, (y * 13) % 256, (x + y) % 256))
    out = io.BytesIO()
    im.save(out, fmt, **kw)
    return out.getvalue()


def animated_gif():
    frames = [Image.new("RGB", (16, 16), c) for c in [(255, 0, 0), (0, 0, 255)]]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    return out.getvalue()


def pdf(pages=1):
    objs = ["<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [%s] /Count %d >>" % (" ".join(f"{i + 3} 0 R" for i in range(pages)), pages)]
    objs += ["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    out, offsets = b"%PDF-1.4\n", []
    for i, o in enumerate(objs):
        offsets.append(len(out))
        out += f"{i + 1} 0 obj\n{o}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


FILES = {
    "attached.png": picture("PNG", (40, 30)),
    "photo.jpg": picture("JPEG", (64, 48), quality=90),
    "anim.gif": animated_gif(),
    "diagram.webp": picture("WEBP", (32, 32), lossless=True),
    "spec.pdf": pdf(2),
    # A PNG named .jpg: the type comes from the bytes.
    "mislabelled.jpg": picture("PNG", (8, 8)),
}
CALLS = [("ReadFile", {"path": p}) for p in ["photo.jpg", "anim.gif", "diagram.webp", "spec.pdf", "mislabelled.jpg"]]
CALLS.append(("mcp__img__picture", {}))


# --- the model server: turn 1 calls the tools, turn 2 answers --------------------------

def sse(events):
    return "".join(f"event: {e.get('type', 'message')}\ndata: {json.dumps(e)}\n\n" for e in events)


def anthropic_stream(first):
    ev = [{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
           "model": "claude-mock", "content": [], "usage": {"input_tokens": 10, "output_tokens": 0}}}]
    if first:
        for i, (name, args) in enumerate(CALLS):
            ev += [{"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": f"t{i}", "name": name, "input": {}}},
                   {"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}},
                   {"type": "content_block_stop", "index": i}]
        stop = "tool_use"
    else:
        ev += [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "seen"}},
               {"type": "content_block_stop", "index": 0}]
        stop = "end_turn"
    ev += [{"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}},
           {"type": "message_stop"}]
    return sse(ev)


def chat_stream(first):
    def chunk(delta, finish=None):
        return {"id": "c", "object": "chat.completion.chunk", "model": "gpt-mock",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if first:
        calls = [{"index": i, "id": f"t{i}", "type": "function",
                  "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(CALLS)]
        ev = [chunk({"role": "assistant", "tool_calls": calls}), chunk({}, "tool_calls")]
    else:
        ev = [chunk({"role": "assistant", "content": "seen"}), chunk({}, "stop")]
    ev.append({"id": "c", "object": "chat.completion.chunk", "model": "gpt-mock", "choices": [],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in ev) + "data: [DONE]\n\n"


def responses_stream(first):
    resp = {"id": "r", "object": "response", "model": "gpt-mock", "output": []}
    ev = [{"type": "response.created", "response": dict(resp, status="in_progress")}]
    if first:
        for i, (n, a) in enumerate(CALLS):
            item = {"id": f"fc{i}", "type": "function_call", "status": "completed",
                    "call_id": f"t{i}", "name": n, "arguments": json.dumps(a)}
            ev += [{"type": "response.output_item.added", "output_index": i, "item": dict(item, arguments="")},
                   {"type": "response.function_call_arguments.done", "output_index": i,
                    "item_id": f"fc{i}", "arguments": item["arguments"]},
                   {"type": "response.output_item.done", "output_index": i, "item": item}]
    else:
        msg = {"id": "msg", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "seen", "annotations": []}]}
        ev += [{"type": "response.output_item.added", "output_index": 0, "item": dict(msg, content=[])},
               {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg",
                "content_index": 0, "delta": "seen"},
               {"type": "response.output_item.done", "output_index": 0, "item": msg}]
    ev.append({"type": "response.completed", "response": dict(resp, status="completed", usage={
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15})})
    return sse(ev)


class Model(BaseHTTPRequestHandler):
    bodies = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Model.bodies.append((self.path, body))
        text = json.dumps(body)
        first = '"tool_result"' not in text and '"role": "tool"' not in text \
            and '"function_call_output"' not in text
        if self.path.endswith("/messages"):
            out = anthropic_stream(first)
        elif self.path.endswith("/chat/completions"):
            out = chat_stream(first)
        else:
            out = responses_stream(first)
        data = out.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# --- validation ---------------------------------------------------------------------

def listed(tp):
    """`tp` with every `Iterable[X]` in it made `List[X]`."""
    import collections.abc
    import typing
    import typing_extensions
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is None or not args:
        return tp
    if origin is collections.abc.Iterable:
        return typing.List[listed(args[0])]
    if origin in (typing.Annotated, typing_extensions.Annotated):
        return typing_extensions.Annotated[(listed(args[0]), *tp.__metadata__)]
    if origin is typing.Union:
        return typing.Union[tuple(listed(a) for a in args)]
    return tp


def eager(prefix):
    """pydantic validates an `Iterable[...]` lazily, on iteration, so an element of a
    wrong type would pass; in the SDKs' param modules (string annotations resolved in
    the module, and type aliases) each becomes a `List`, validated at once."""
    import typing
    for name, module in list(sys.modules.items()):
        if not name.startswith(prefix):
            continue
        if getattr(module, "Iterable", None) is typing.Iterable:
            module.Iterable = typing.List
        for attr, value in list(vars(module).items()):
            if typing.get_origin(value) is not None:
                setattr(module, attr, listed(value))


def validate(kind, body):
    if kind == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsStreaming as T
        eager("anthropic.types")
    elif kind == "chat":
        from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming as T
        eager("openai.types")
    else:
        from openai.types.responses.response_create_params import ResponseCreateParamsStreaming as T
        eager("openai.types")
    typed = pydantic.TypeAdapter(T).validate_python(body)
    diff = first_difference(body, typed, "$")
    if diff:
        raise AssertionError(f"{kind}: the SDK's type does not hold the request as sent: {diff}")


def first_difference(a, b, at):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                return f"{at}.{k} is not a field of the SDK's type"
            d = first_difference(a[k], b[k], f"{at}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{at}: {len(a)} items, the SDK kept {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{at}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{at}: {a!r:.80} became {b!r:.80}"


def media_count(kind, body):
    """(images, documents) in the request, wherever the wire puts them."""
    text = json.dumps(body)
    if kind == "anthropic":
        return text.count('"type": "image"'), text.count('"type": "document"')
    if kind == "chat":
        return text.count('"type": "image_url"'), text.count('"type": "file"')
    return text.count('"type": "input_image"'), text.count('"type": "input_file"')


def short(v):
    if isinstance(v, dict):
        return {k: short(x) for k, x in v.items()}
    if isinstance(v, list):
        return [short(x) for x in v]
    if isinstance(v, str) and len(v) > 80 and ("base64" in v[:40] or len(v) > 200):
        return v[:60] + f"...({len(v)} chars)"
    return v


def self_check():
    """The oracle can fail: a block the APIs do not take must be refused by each type."""
    bad = {
        "anthropic": {"model": "m", "max_tokens": 1, "stream": True, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "reference", "path": "/x.png"}}]}]},
        "chat": {"model": "m", "stream": True, "messages": [{"role": "tool", "tool_call_id": "t", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]},
        "responses": {"model": "m", "stream": True, "input": [{"type": "function_call_output", "call_id": "t",
            "output": [{"type": "image_url", "image_url": "data:image/png;base64,AA=="}]}]},
    }
    for kind, body in bad.items():
        try:
            validate(kind, body)
        except (AssertionError, pydantic.ValidationError):
            continue
        raise SystemExit(f"FAIL the oracle accepted a bad {kind} request")
    print("ok   the oracle refuses a bad request of each wire")


def main():
    self_check()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    failures = 0
    with tempfile.TemporaryDirectory() as ws:
        for name, data in FILES.items():
            with open(os.path.join(ws, name), "wb") as f:
                f.write(data)
        mcp = os.path.join(ws, ".mcp-images.json")
        with open(mcp, "w") as f:
            json.dump({"mcpServers": {"img": {"type": "stdio", "command": MCP_SERVER, "args": []}}}, f)
        env = {"PATH": os.environ["PATH"], "HOME": ws, "ANTHROPIC_API_KEY": "sk-ant-test",
               "ANTHROPIC_BASE_URL": url, "OPENAI_API_KEY": "sk-test"}
        wires = [("anthropic", []),
                 ("chat", ["--provider", "openai", "--base-url", url + "/v1", "-m", "gpt-mock"]),
                 ("responses", ["--provider", "openai-responses", "--base-url", url + "/v1", "-m", "gpt-mock"])]
        for kind, flags in wires:
            Model.bodies.clear()
            cmd = [AGENT, "run", *flags, "--json", "--allow-mcp", "--mcp-config", mcp,
                   "-i", "attached.png", "what do these show?"]
            p = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                print(f"FAIL {kind}: agent exited {p.returncode}: {p.stderr[-2000:]}")
                failures += 1
                continue
            _, body = Model.bodies[-1]
            images, documents = media_count(kind, body)
            try:
                validate(kind, body)
                # attached PNG, JPEG, GIF (first frame, as PNG), WebP, mislabelled PNG, MCP PNG
                assert (images, documents) == (6, 1), f"{images} images and {documents} documents"
                print(f"ok   {kind}: the SDK's types accept the request ({images} images, {documents} PDF)")
            except (AssertionError, pydantic.ValidationError) as e:
                print(f"FAIL {kind}: {e}")
                failures += 1
            if PRINT:
                # The conversation only (the tools and the system prompt are no news),
                # one message or item a line.
                items = body.get("messages") or body.get("input") or []
                print(f"--- {kind}: the second request's {'input' if kind == 'responses' else 'messages'}")
                for item in items:
                    if item.get("role") != "system":
                        print(json.dumps(short(item), ensure_ascii=False))
    server.shutdown()
    sys.exit(1 if failures else 0)


main()
