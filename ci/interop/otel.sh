#!/usr/bin/env bash
# The OTLP export checked with the official decoder: installs opentelemetry-proto (and
# protobuf) from PyPI into a venv in a scratch directory, starts a small Python OTLP/HTTP
# receiver (otel_receiver.py), runs the demo cassette (a scripted run: reads, edits, Bash,
# then --verify) with export on in http/protobuf under a TRACEPARENT, and prints the span
# tree and metrics as the official package decoded them (otel_tree.py), checked against
# the run's transcript. Needs PyPI, so it is not part of .ci/run:
#
#     ci/interop/otel.sh        # exit 1 if a check failed
#
# AGENT=path skips `cargo build --release`; OTEL_PROTO_VERSION pins the package.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d)
trap 'kill "${receiver_pid:-}" 2>/dev/null || true; rm -rf "$scratch"' EXIT
log() { printf 'otel interop: %s\n' "$*" >&2; }

python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q "opentelemetry-proto${OTEL_PROTO_VERSION:+==$OTEL_PROTO_VERSION}" protobuf
log "$("$scratch/venv/bin/pip" list 2>/dev/null | grep -Ei '^(opentelemetry-proto|protobuf) ' | tr -s ' ' | paste -sd ',')"

agent=${AGENT:-}
if [ -z "$agent" ]; then
  (cd "$root" && cargo build --release -q)
  agent=$root/target/release/agent
fi

received=$scratch/received.jsonl
"$scratch/venv/bin/python" "$here/otel_receiver.py" "$received" > "$scratch/port" &
receiver_pid=$!
for _ in $(seq 100); do [ -s "$scratch/port" ] && break; sleep 0.1; done
port=$(cat "$scratch/port")

ws=$scratch/project
cp -r "$root/fixtures/demo/project/." "$ws"
trace=4bf92f3577b34da6a3ce929d0e0e4736
parent=00f067aa0ba902b7
env -i PATH="$PATH" HOME="$scratch" \
  OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port" \
  OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
  OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20interop-token" \
  TRACEPARENT="00-$trace-$parent-01" \
  GITHUB_ACTIONS=true GITHUB_WORKFLOW=interop GITHUB_RUN_ID=1 GITHUB_REPOSITORY=octo/agent GITHUB_REF_NAME=main \
  "$agent" run --replay "$root/fixtures/demo/demo.cassette.jsonl" --full-auto -C "$ws" \
    --verify "sh tests/run.sh" -o "$scratch/transcript.json" -v \
    "Fix the failing tests" > /dev/null 2> "$scratch/stderr" || { cat "$scratch/stderr" >&2; exit 1; }
grep 'telemetry:' "$scratch/stderr" >&2 || true
"$scratch/venv/bin/python" "$here/otel_tree.py" "$received" "$scratch/transcript.json" "$trace" "$parent"
