"""Prints the span tree the receiver decoded (ci/interop/otel.sh) and checks it against
the run's transcript: one trace under the given TRACEPARENT, the run span at its root,
chat / execute_tool / verify spans under it, no unknown fields, and metrics equal to
the transcript's totals. Exit 1 on any failed check."""

import base64
import json
import sys

received, transcript_path, parent_trace, parent_span = sys.argv[1:5]
records = [json.loads(line) for line in open(received)]
t = json.load(open(transcript_path))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def hexid(b64):
    return base64.b64decode(b64).hex() if b64 else ""


def value(v):
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [value(x) for x in v["arrayValue"].get("values", [])]
    return None


def attrs(kvs):
    return {kv["key"]: value(kv["value"]) for kv in kvs or []}


for r in records:
    check("error" not in r, f"{r['path']}: the official decoder refused it: {r.get('error')}")
    check(not r.get("unknown_fields"), f"{r['path']}: unknown fields {r.get('unknown_fields')}")
    check(r["content_type"] == "application/x-protobuf", f"content type {r['content_type']}")

spans = []
resource = {}
for r in records:
    if r["path"] != "/v1/traces" or "body" not in r:
        continue
    for rs in r["body"].get("resourceSpans", []):
        resource = attrs(rs.get("resource", {}).get("attributes"))
        for ss in rs.get("scopeSpans", []):
            spans += ss.get("spans", [])

by_parent = {}
for s in spans:
    by_parent.setdefault(hexid(s.get("parentSpanId")), []).append(s)
STATUS = {None: "UNSET", "STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR"}
SHOWN = ("gen_ai.request.model", "gen_ai.response.model", "gen_ai.usage.input_tokens",
         "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "gen_ai.tool.call.id",
         "agent.tool.batch", "error.type", "agent.run.status", "agent.run.turns",
         "agent.run.cost_usd", "agent.verify.passed", "process.exit.code")


def show(s, depth):
    a = attrs(s.get("attributes"))
    ms = (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e6
    shown = ", ".join(f"{k}={a[k]}" for k in SHOWN if k in a)
    status = STATUS.get(s.get("status", {}).get("code"), s.get("status"))
    print(f"{'  ' * depth}{s['name']}  [{status}, {ms:.1f} ms]  {shown}")
    for e in s.get("events", []):
        print(f"{'  ' * (depth + 1)}event {e['name']} {attrs(e.get('attributes'))}")
    kids = sorted(by_parent.get(hexid(s["spanId"]), []), key=lambda k: int(k["startTimeUnixNano"]))
    for k in kids:
        show(k, depth + 1)


print(f"resource: {json.dumps(resource, sort_keys=True)}")
print(f"trace {parent_trace}, parent span {parent_span} (TRACEPARENT)")
roots = by_parent.get(parent_span, [])
for r in roots:
    show(r, 1)

check(all(hexid(s["traceId"]) == parent_trace for s in spans), "a span outside the parent's trace")
check(len(roots) == 1 and roots[0]["name"] == "invoke_agent agent", "one run span under TRACEPARENT")
if roots:
    run_id = hexid(roots[0]["spanId"])
    kids = by_parent.get(run_id, [])
    chats = [k for k in kids if k["name"].startswith("chat ")]
    tools = [k for k in kids if k["name"].startswith("execute_tool ")]
    check(len(chats) == t["num_turns"], f"{len(chats)} chat spans, {t['num_turns']} turns")
    check(len(tools) == len(t["tool_calls"]), f"{len(tools)} tool spans, {len(t['tool_calls'])} calls")
    check(any(k["name"] == "verify" for k in kids), "a verify span")
    check(len(spans) == 1 + len(kids) + sum(len(by_parent.get(hexid(k["spanId"]), [])) for k in kids),
          "every span is in the tree")

# The metrics against the transcript.
points = {}
for r in records:
    if r["path"] != "/v1/metrics" or "body" not in r:
        continue
    for rm in r["body"].get("resourceMetrics", []):
        for sm in rm.get("scopeMetrics", []):
            for m in sm.get("metrics", []):
                data = m.get("sum") or m.get("histogram")
                points[m["name"]] = data["dataPoints"]
print("metrics:")
for name, ps in sorted(points.items()):
    for p in ps:
        a = attrs(p.get("attributes"))
        v = p.get("asInt", p.get("asDouble", f"count={p.get('count')} sum={p.get('sum')}"))
        print(f"  {name} {json.dumps(a, sort_keys=True)}: {v}")


def total(name, key=None, want=None):
    out = 0.0
    for p in points.get(name, []):
        if key and attrs(p.get("attributes")).get(key) != want:
            continue
        out += float(p.get("sum", p.get("asInt", p.get("asDouble", 0))))
    return out


check(total("gen_ai.client.token.usage", "gen_ai.token.type", "input") == t["usage"]["input_tokens"],
      "input tokens = the transcript's")
check(total("gen_ai.client.token.usage", "gen_ai.token.type", "output") == t["usage"]["output_tokens"],
      "output tokens = the transcript's")
check(total("agent.tool.calls") == len(t["tool_calls"]), "tool calls = the transcript's")
check(total("agent.runs") == 1, "one run")
if t.get("total_cost_usd") is not None:
    check(abs(total("agent.cost") - t["total_cost_usd"]) < 1e-12, "cost = the transcript's")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"ok: {len(spans)} spans and {len(points)} metrics decoded by opentelemetry-proto, "
      "matching the transcript")
