"""Differential check of agent's Responses stream decoder against the official `openai`
Python SDK's Responses stream accumulation (`client.responses.stream`).

Generates seeded random Responses event streams (reasoning items with summary parts
and encrypted content, messages in random text deltas, parallel function calls with
random argument deltas, unknown events, comments, CRLF or LF framing, multi-line data,
`response.completed` with or without `output`, `response.incomplete` cutting a call),
feeds each to the SDK through an httpx mock transport, and replays it through the
agent binary as a one-turn cassette (`agent run --replay … --jsonl`). The first
`assistant.message` event (the decoded turn: blocks, stop reason, usage) must agree
with the SDK's final response: the same items in the same order, text, call ids, names
and arguments, reasoning items equal (and byte for byte as streamed), the token counts.

Usage: python3 responses_sdk.py AGENT_BINARY [STREAMS] [SEED]
"""

import json
import os
import random
import subprocess
import sys
import tempfile

try:  # the SDK's HTTP client: httpx2 in openai 3.x, httpx before
    import httpx2 as httpx
except ImportError:
    import httpx
import openai

AGENT = sys.argv[1]
STREAMS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 20261201

WORDS = ["fix", "the", "naïve", "tests", "“quoted”", "back\\slash", "line\nbreak",
         "tab\there", "emoji 🦀", "\"q\"", "{json}", "ünïcödé", " ", "\u2028", "ok"]


def text(rng, n):
    # Starts with a word: an answer of whitespace alone would be no answer to the agent.
    return "w" + "".join(rng.choice(WORDS) + rng.choice(["", " ", ", "]) for _ in range(n))


def pieces(rng, s):
    """`s` cut at random places (never on a lone surrogate: Python strings are code points)."""
    if not s:
        return [s]
    cuts = sorted(rng.sample(range(1, len(s) + 1), k=min(len(s), rng.randint(1, 6))))
    out, start = [], 0
    for c in cuts:
        out.append(s[start:c])
        start = c
    if start < len(s):
        out.append(s[start:])
    return [p for p in out if p]


def random_args(rng):
    obj = {}
    for k in range(rng.randint(0, 4)):
        obj[rng.choice(["path", "pattern", "n", "deep", "list", "x"]) + str(k)] = rng.choice([
            text(rng, 2), rng.randint(-10**12, 10**12), rng.random() * 100, True, None,
            [1, "two", {"three": 3}], {"nested": text(rng, 1)}])
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5)


def dumps_item(rng, item):
    """An item's JSON with a key order and spacing of its own: what must go back as is."""
    keys = list(item)
    rng.shuffle(keys)
    sep = rng.choice([(",", ":"), (", ", ": "), (",", ": ")])
    body = sep[0].join(json.dumps(k) + sep[1] + json.dumps(item[k], ensure_ascii=rng.random() < 0.5,
                                                           separators=(",", ":"))
                       for k in keys)
    return "{" + body + "}"


def generate(n, rng):
    """(events as (payload dict or raw data text), the raw reasoning items, expected cut)."""
    rid = f"resp_{n}"
    model = rng.choice(["gpt-5-codex", "o4-mini", "gpt-5"])
    seq = [0]
    events = []

    def ev(payload, raw=None):
        payload["sequence_number"] = seq[0]
        seq[0] += 1
        events.append((payload, raw))

    head = {"id": rid, "object": "response", "created_at": 1764000000, "status": "in_progress",
            "model": model, "output": [], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "store": False}
    ev({"type": "response.created", "response": dict(head)})
    if rng.random() < 0.5:
        ev({"type": "response.in_progress", "response": dict(head)})
    kinds = [rng.choice(["reasoning", "message", "function_call"]) for _ in range(rng.randint(1, 5))]
    if all(k == "reasoning" for k in kinds):
        kinds.append("message")
    incomplete = rng.random() < 0.2
    raws = []
    final_items = []
    for i, kind in enumerate(kinds):
        last = i == len(kinds) - 1
        cut = incomplete and last and kind != "reasoning"
        if rng.random() < 0.2:
            ev({"type": "response.future_event", "output_index": i, "detail": {"x": 1}})
        if kind == "reasoning":
            iid = f"rs_{n}_{i}"
            ev({"type": "response.output_item.added", "output_index": i,
                "item": {"id": iid, "type": "reasoning", "summary": []}})
            parts = [text(rng, rng.randint(1, 5)) for _ in range(rng.randint(0, 2))]
            for j, part in enumerate(parts):
                ev({"type": "response.reasoning_summary_part.added", "item_id": iid, "output_index": i,
                    "summary_index": j, "part": {"type": "summary_text", "text": ""}})
                for p in pieces(rng, part):
                    ev({"type": "response.reasoning_summary_text.delta", "item_id": iid,
                        "output_index": i, "summary_index": j, "delta": p})
                ev({"type": "response.reasoning_summary_text.done", "item_id": iid, "output_index": i,
                    "summary_index": j, "text": part})
                ev({"type": "response.reasoning_summary_part.done", "item_id": iid, "output_index": i,
                    "summary_index": j, "part": {"type": "summary_text", "text": part}})
            item = {"id": iid, "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": p} for p in parts],
                    "encrypted_content": "gAAAA" + "".join(rng.choice("ABCxyz019+/=é") for _ in range(40))}
            raw = dumps_item(rng, item)
            raws.append(raw)
            ev({"type": "response.output_item.done", "output_index": i, "item": item},
               raw='{"type":"response.output_item.done","sequence_number":%d,"output_index":%d,"item":%s}'
                   % (seq[0], i, raw))
            final_items.append(item)
        elif kind == "message":
            iid = f"msg_{n}_{i}"
            ev({"type": "response.output_item.added", "output_index": i,
                "item": {"id": iid, "type": "message", "role": "assistant", "status": "in_progress",
                         "content": []}})
            parts = [text(rng, rng.randint(1, 8)) for _ in range(rng.randint(1, 2))]
            for j, part in enumerate(parts):
                ev({"type": "response.content_part.added", "item_id": iid, "output_index": i,
                    "content_index": j,
                    "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}})
                for p in pieces(rng, part):
                    ev({"type": "response.output_text.delta", "item_id": iid, "output_index": i,
                        "content_index": j, "delta": p, "logprobs": []})
                if cut:
                    break
                ev({"type": "response.output_text.done", "item_id": iid, "output_index": i,
                    "content_index": j, "text": part, "logprobs": []})
                ev({"type": "response.content_part.done", "item_id": iid, "output_index": i,
                    "content_index": j,
                    "part": {"type": "output_text", "text": part, "annotations": [], "logprobs": []}})
            if not cut:
                item = {"id": iid, "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": p, "annotations": [], "logprobs": []}
                                    for p in parts]}
                ev({"type": "response.output_item.done", "output_index": i, "item": item})
                final_items.append(item)
        else:
            iid = f"fc_{n}_{i}"
            call_id = f"call_{n}_{i}"
            name = rng.choice(["lookup_thing", "run_step", "no_such_tool"])
            ev({"type": "response.output_item.added", "output_index": i,
                "item": {"id": iid, "type": "function_call", "status": "in_progress", "arguments": "",
                         "call_id": call_id, "name": name}})
            args = random_args(rng)
            if cut:
                args = args[: max(1, len(args) // 2)] if len(args) > 2 else '{"cut'
            for p in pieces(rng, args):
                ev({"type": "response.function_call_arguments.delta", "item_id": iid, "output_index": i,
                    "delta": p})
            if not cut:
                ev({"type": "response.function_call_arguments.done", "item_id": iid, "output_index": i,
                    "arguments": args})
                item = {"id": iid, "type": "function_call", "status": "completed", "arguments": args,
                        "call_id": call_id, "name": name}
                ev({"type": "response.output_item.done", "output_index": i, "item": item})
                final_items.append(item)
    inp = rng.randint(10, 5000)
    out = rng.randint(1, 900)
    usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": rng.randint(0, inp)},
             "output_tokens": out, "output_tokens_details": {"reasoning_tokens": rng.randint(0, out)},
             "total_tokens": inp + out}
    end = dict(head, usage=usage)
    if incomplete:
        end["status"] = "incomplete"
        end["incomplete_details"] = {"reason": "max_output_tokens"}
        end.pop("output")
        ev({"type": "response.incomplete", "response": end})
    else:
        end["status"] = "completed"
        if rng.random() < 0.5:
            end.pop("output")  # the SDK recovers the items from their .done events
        else:
            end["output"] = final_items
        ev({"type": "response.completed", "response": end})
    return events, raws, model


def frame(rng, payload, raw, style):
    data = raw if raw is not None else json.dumps(payload, ensure_ascii=rng.random() < 0.5)
    nl = style["nl"]
    lines = []
    if rng.random() < 0.1:
        lines.append(": keep-alive")
    if style["event_lines"]:
        lines.append("event: " + payload["type"])
    if style["ids"]:
        lines.append("id: %d" % payload["sequence_number"])
    if raw is None and rng.random() < 0.2:
        # One data line per line of an indented dump: joined with \n, the same JSON.
        data = json.dumps(payload, indent=1, ensure_ascii=False)
    for line in data.split("\n"):
        lines.append(style["data"] + line)
    return nl.join(lines) + nl + nl


def sse_text(rng, events):
    style = {"nl": rng.choice(["\n", "\r\n"]), "event_lines": rng.random() < 0.8,
             "ids": rng.random() < 0.2, "data": rng.choice(["data: ", "data:"])}
    return "".join(frame(rng, p, raw, style) for p, raw in events)


def sdk_final(body):
    """The SDK's accumulated result of `body`: the final response's items and usage."""
    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=body.encode())
    client = openai.OpenAI(api_key="sk-test", base_url="http://mock.invalid/v1",
                           http_client=httpx.Client(transport=httpx.MockTransport(handler)),
                           max_retries=0)
    last = None
    with client.responses.stream(model="m", input="hi") as stream:
        for event in stream:
            if event.type in ("response.completed", "response.incomplete"):
                last = event.response
    return last


def cassette(path, sse, model):
    header = {"type": "header", "format": 1, "provider": "openai-responses", "model": model,
              "agent_version": "interop", "workspace": "/w", "tools": []}
    ok = ("event: response.completed\ndata: " + json.dumps(
        {"type": "response.completed", "response": {"id": "resp_ok", "status": "completed",
         "usage": {"input_tokens": 0, "output_tokens": 0}, "output": []}}) + "\n\n")
    ok = ("event: response.output_item.done\ndata: " + json.dumps(
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "message", "id": "m", "role": "assistant",
                  "content": [{"type": "output_text", "text": "ok"}]}}) + "\n\n" + ok)
    with open(path, "w") as f:
        f.write(json.dumps(header) + "\n")
        for i, s in enumerate([sse] + [ok] * 4):
            f.write(json.dumps({"type": "turn", "index": i + 1,
                                "request": {"messages": 1, "tools": []}, "sse": s}) + "\n")


def agent_turn(path, work):
    out = subprocess.run([AGENT, "run", "--replay", path, "--jsonl", "--max-turns", "6", "go"],
                         cwd=work, capture_output=True, text=True, timeout=60,
                         env={"PATH": os.environ.get("PATH", ""), "HOME": work})
    events = [json.loads(l) for l in out.stdout.split("\n") if l.strip()]
    for e in events:
        if e.get("type") == "assistant.message":
            return e
    raise AssertionError(f"no assistant.message (exit {out.returncode}): {out.stderr[-2000:]}")


def expected_blocks(final):
    """The SDK's items in the agent's block vocabulary."""
    blocks = []
    for item in final.output:
        d = item.to_dict()
        if d["type"] == "message":
            t = "".join(c.get("text") or c.get("refusal") or "" for c in d.get("content", []))
            if t:
                blocks.append(("text", t))
        elif d["type"] == "function_call":
            try:
                args = json.loads(d["arguments"])
            except ValueError:
                args = None  # cut: the history holds {} and the call an error
            blocks.append(("tool_use", d["call_id"], d["name"], args))
        elif d["type"] == "reasoning":
            if d.get("encrypted_content") is not None:
                blocks.append(("reasoning", d))
    return blocks


def agent_blocks(message):
    blocks = []
    for b in message["content"]:
        if b["type"] == "text":
            blocks.append(("text", b["text"]))
        elif b["type"] == "tool_use":
            blocks.append(("tool_use", b["id"], b["name"], b["input"]))
        elif b["type"] == "reasoning":
            blocks.append(("reasoning", json.loads(b["item"])))
    return blocks


def main():
    rng = random.Random(SEED)
    failures = 0
    checked = {"reasoning": 0, "tool_use": 0, "text": 0, "incomplete": 0, "cut_calls": 0}
    with tempfile.TemporaryDirectory() as work:
        for n in range(STREAMS):
            events, raws, model = generate(n, rng)
            body = sse_text(rng, events)
            final = sdk_final(body)
            path = os.path.join(work, f"s{n}.jsonl")
            cassette(path, body, model)
            turn = agent_turn(path, work)
            want = expected_blocks(final)
            got = agent_blocks(turn["message"])
            problems = []
            # A cut call: the SDK has the partial arguments, the agent `{}` in the history.
            want = [("tool_use", w[1], w[2], {}) if w[0] == "tool_use" and w[3] is None else w
                    for w in want]
            if got != want:
                problems.append(f"blocks differ:\n  sdk   {want}\n  agent {got}")
            item_texts = [b["item"] for b in turn["message"]["content"] if b["type"] == "reasoning"]
            if item_texts != raws:
                problems.append(f"reasoning items not byte for byte:\n  {raws}\n  {item_texts}")
            u, au = final.usage, turn["usage"]
            cached = u.input_tokens_details.cached_tokens
            if (au["input_tokens"] + au["cache_read_input_tokens"], au["cache_read_input_tokens"],
                au["output_tokens"], au.get("reasoning_output_tokens", 0)) != (
                    u.input_tokens, cached, u.output_tokens, u.output_tokens_details.reasoning_tokens):
                problems.append(f"usage differs: sdk {u} agent {au}")
            want_stop = ("max_tokens" if final.status == "incomplete"
                         else "tool_use" if any(w[0] == "tool_use" for w in want) else "end_turn")
            if turn["stop_reason"] != want_stop:
                problems.append(f"stop reason {turn['stop_reason']}, want {want_stop}")
            if turn["model"] != model and final.model != turn["model"]:
                problems.append(f"model {turn['model']}, want {final.model}")
            if problems:
                failures += 1
                print(f"stream {n} (seed {SEED}):", *problems, sep="\n  ")
                if failures >= 5:
                    break
            for w in want:
                checked[w[0]] += 1
            checked["incomplete"] += final.status == "incomplete"
            checked["cut_calls"] += sum(1 for w in expected_blocks(final) if w[0] == "tool_use" and w[3] is None)
    print(f"openai {openai.__version__}: {STREAMS} streams (seed {SEED}), {failures} differing; "
          f"compared {checked}")
    sys.exit(1 if failures else 0)


main()
