#!/usr/bin/env bash
# Per-command cost of the Bash tool: replays a generated cassette whose one turn asks for
# N Bash calls of `true` (run one after another), then a final answer, and times the
# whole run with hyperfine. Pass two binaries to compare them in one hyperfine run (it
# prints the ratio of their means, and the JSON export has the medians).
#   ci/bench/commands.sh [AGENT_BIN [BASELINE_BIN]]   (env: N=100, RUNS=15)
# Needs hyperfine. Not part of .ci/run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../target/release/agent}"
base="${2:-}"
n="${N:-100}"
runs="${RUNS:-15}"
out="$here/out"
mkdir -p "$out"
ws="$(mktemp -d)"
trap 'rm -rf "$ws"' EXIT
cassette="$out/commands-$n.cassette.jsonl"

tools='["Bash","EditFile","Glob","Grep","ReadFile","WriteFile"]'
# One SSE event: "event: NAME\ndata: JSON\n\n", escaped for a JSON string.
ev() { printf 'event: %s\\ndata: %s\\n\\n' "$1" "$(printf '%s' "$2" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
start() {
  ev message_start '{"type":"message_start","message":{"model":"bench","id":"msg_'"$1"'","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}'
}
{
  printf '{"type":"header","format":1,"provider":"anthropic","model":"bench","agent_version":"0.1.0","workspace":"/bench","tools":%s}\n' "$tools"
  sse="$(start 1)"
  for i in $(seq 0 $((n - 1))); do
    sse+="$(ev content_block_start '{"type":"content_block_start","index":'"$i"',"content_block":{"type":"tool_use","id":"toolu_'"$i"'","name":"Bash","input":{}}}')"
    sse+="$(ev content_block_delta '{"type":"content_block_delta","index":'"$i"',"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"true\"}"}}')"
    sse+="$(ev content_block_stop '{"type":"content_block_stop","index":'"$i"'}')"
  done
  sse+="$(ev message_delta '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":10}}')"
  sse+="$(ev message_stop '{"type":"message_stop"}')"
  printf '{"type":"turn","index":1,"request":{"messages":1,"tools":%s},"sse":"%s"}\n' "$tools" "$sse"
  sse="$(start 2)"
  sse+="$(ev content_block_start '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}')"
  sse+="$(ev content_block_delta '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}')"
  sse+="$(ev content_block_stop '{"type":"content_block_stop","index":0}')"
  sse+="$(ev message_delta '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}')"
  sse+="$(ev message_stop '{"type":"message_stop"}')"
  printf '{"type":"turn","index":2,"request":{"messages":3,"tools":%s},"sse":"%s"}\n' "$tools" "$sse"
} >"$cassette"

run() { printf '%q run --replay %q --allow-bash -C %q --json go' "$1" "$cassette" "$ws"; }
# Check once that the run really makes N calls, so the timing measures what it says.
calls="$("$bin" run --replay "$cassette" --allow-bash -C "$ws" --json go 2>/dev/null | grep -o '"toolu_[0-9]*"' | sort -u | wc -l)"
[ "$calls" -eq "$n" ] || { echo "commands.sh: expected $n Bash calls, the run made $calls" >&2; exit 1; }
cmds=("$(run "$bin")")
[ -n "$base" ] && cmds+=("$(run "$base")")
hyperfine -N --warmup 2 --runs "$runs" --export-json "$out/commands-$n.json" "${cmds[@]}"
# Medians (hyperfine's summary shows means).
for i in "${!cmds[@]}"; do
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][int(sys.argv[2])]; print("median %.1f ms, %.3f ms per command: %s" % (r["median"]*1e3, r["median"]*1e3/int(sys.argv[3]), r["command"].split()[0]))' \
    "$out/commands-$n.json" "$i" "$n"
done
