#!/usr/bin/env bash
# Per-turn instruction counts of the long session (100 turns of ~6 KB ReadFile results, then
# the answer) under callgrind: a count, not a time, so it repeats on a loaded machine.
# `--dump-before` on the provider's `stream_turn` writes one profile per model request;
# profile k+1 holds turn k (from request k to request k+1). Prints the first and last
# 20 turns' instructions per turn and their ratio, and the functions whose cost grew most
# from turn 10 to turn 90 (callgrind_annotate, inclusive).
#   ci/bench/growth.sh [AGENT_BIN] [extra agent flags, e.g. -o out/t.json --jsonl]
# Needs valgrind and python3. Not part of .ci/run; a few minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(realpath "${1:-$here/../../target/release/agent}")"
shift || true
out="$here/out/growth${GROWTH_TAG:+-$GROWTH_TAG}"
rm -rf "$out"
mkdir -p "$out/ws/files"
python3 - "$out/ws/files" <<'PY'
import os, sys
line = "long session line of about sixty characters, numbered: "
for n in range(1, 101):  # as bench.py's long session
    text, i = f"long file {n}\n", 0
    while len(text) < 6000:
        i += 1
        text += f"{line}{n}.{i}\n"
    open(os.path.join(sys.argv[1], f"g{n:03d}.txt"), "w").write(text)
PY
python3 "$here/mock_server.py" --script long --turns 100 --workspace "$out/ws" \
  --port-file "$out/port" --log "$out/mock.jsonl" &
mock=$!
trap 'kill $mock 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$out/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$out/port")"
ANTHROPIC_API_KEY=sk-ant-bench-not-a-real-key valgrind --tool=callgrind \
  --dump-before='*stream_turn*' --callgrind-out-file="$out/cg.out" \
  "$bin" run "Read the files one by one." -C "$out/ws" --max-turns 110 --base-url "$url" -q "$@" \
  >"$out/stdout" 2>"$out/valgrind.log"
python3 - "$out" <<'PY'
import glob, os, re, subprocess, sys
out = sys.argv[1]
def part(p):
    m = re.search(r"\.(\d+)$", p)
    return int(m.group(1)) if m else 10**9  # the last profile (no number) is the exit
files = sorted(glob.glob(os.path.join(out, "cg.out*")), key=part)
tot = []
for f in files:
    for line in open(f):
        if line.startswith("totals:") or line.startswith("summary:"):
            tot.append(int(line.split()[1]))
            break
# files[0]: start-up to request 1; files[k]: turn k (request k to k+1); the last: exit.
turns = tot[1:101]
first, last = sum(turns[:20]) / 20, sum(turns[80:100]) / 20
print(f"start-up to request 1: {tot[0]:,} instructions; exit after request 101: {tot[-1]:,}")
print(f"turns 1-20: {first:,.0f} instructions a turn; turns 81-100: {last:,.0f}; growth {last / first:.3f}x")
print("per turn:", " ".join(f"{t // 1000}k" for t in turns))
def incl(f):
    r = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", f],
                       capture_output=True, text=True).stdout
    d = {}
    for line in r.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(?:\*\s+)?(.+)$", line)
        if m:
            d[m.group(2).strip()] = int(m.group(1).replace(",", ""))
    return d
a, b = incl(files[10]), incl(files[90])
grew = sorted(((b.get(k, 0) - a.get(k, 0), k) for k in set(a) | set(b)), reverse=True)[:25]
print("grew most from turn 10 to turn 90 (inclusive instructions, turn 10 -> turn 90):")
for d, k in grew:
    print(f"  {a.get(k, 0):>10,} -> {b.get(k, 0):>10,}  {k[:150]}")
PY
