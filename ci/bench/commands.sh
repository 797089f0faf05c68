#!/usr/bin/env bash
# Per-command cost of the Bash tool: replays a generated cassette whose one turn asks for
# N Bash calls `true 1` … `true N` (distinct, or the repeated-call guard would refuse
# them; run one after another), then a final answer, and times whole runs. With two
# binaries the runs alternate (A B B A …), so a shared machine's changing load falls on
# both alike; it prints medians of wall time and of CPU time (user + system of the agent
# and every process it and its children waited for, from wait4) and their ratios.
#   ci/bench/commands.sh [AGENT_BIN [BASELINE_BIN]]   (env: N=100, RUNS=31)
# Needs python3. Not part of .ci/run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../target/release/agent}"
base="${2:-}"
n="${N:-100}"
runs="${RUNS:-31}"
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
    sse+="$(ev content_block_delta '{"type":"content_block_delta","index":'"$i"',"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"true '"$i"'\"}"}}')"
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

# Check once per binary that the run really runs N commands, so the timing measures
# what it says.
for b in "$bin" $base; do
  ran="$("$b" run --replay "$cassette" --allow-bash -C "$ws" --json go 2>/dev/null |
    python3 -c 'import json,sys; print(sum(not c["is_error"] for c in json.load(sys.stdin)["tool_calls"]))')"
  [ "$ran" -eq "$n" ] || { echo "commands.sh: $b ran $ran of $n Bash calls" >&2; exit 1; }
done
python3 - "$cassette" "$ws" "$n" "$runs" "$bin" $base <<'PY'
import os, statistics, subprocess, sys, time
cassette, ws, n, runs, bins = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
wall = {b: [] for b in bins}
cpu = {b: [] for b in bins}
def once(b):
    t = time.perf_counter()
    p = subprocess.Popen([b, "run", "--replay", cassette, "--allow-bash", "-C", ws, "--json", "go"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, f"{b} exited {p.returncode}"
    wall[b].append(time.perf_counter() - t)
    cpu[b].append(ru.ru_utime + ru.ru_stime)
for b in bins:  # warm-up, not counted
    once(b); wall[b].clear(); cpu[b].clear()
for i in range(runs):
    for b in (bins if i % 2 == 0 else bins[::-1]):
        once(b)
med = lambda xs: statistics.median(xs) * 1e3
for b in bins:
    print(f"{b}: median wall {med(wall[b]):.1f} ms ({med(wall[b]) / n:.3f} ms per command), "
          f"median CPU {med(cpu[b]):.1f} ms ({med(cpu[b]) / n:.3f} ms per command), {runs} runs")
if len(bins) == 2:
    a, z = bins
    print(f"ratio {a} / {z}: wall {med(wall[a]) / med(wall[z]):.3f}, CPU {med(cpu[a]) / med(cpu[z]):.3f}")
PY
