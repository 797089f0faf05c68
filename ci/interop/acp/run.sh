#!/bin/sh
# The ACP interop trial: the official TypeScript SDK (@agentclientprotocol/sdk, Node 20)
# and Python SDK (agent-client-protocol) drive `agent acp` through the same scenario
# against a loopback model (mock_model.py). Installs the SDKs into gitignored directories
# here (node/, .venv/); needs npm and PyPI, nothing else of the network.
# Usage: ci/interop/acp/run.sh [ts|py]   (default: both)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root"
cargo build -q --bin agent --bin mcp-test-server
agent="$root/target/debug/agent"
mcp="$root/target/debug/mcp-test-server"
[ -d "$here/node/node_modules/@agentclientprotocol/sdk" ] ||
  npm install --silent --prefix "$here/node" @agentclientprotocol/sdk@2.4.0
[ -x "$here/.venv/bin/python" ] || python3 -m venv "$here/.venv"
"$here/.venv/bin/pip" install -q agent-client-protocol==0.12.1

run_one() { # $1: ts | py
  work=$(mktemp -d)
  mkdir -p "$work/ws" "$work/sessions"
  python3 "$here/mock_model.py" "$here/scenario.json" "$work/port" &
  mock=$!
  while [ ! -s "$work/port" ]; do sleep 0.05; done
  url="http://127.0.0.1:$(cat "$work/port")"
  status=0
  case $1 in
    ts) node "$here/client.mjs" "$agent" "$mcp" "$work/ws" "$work/sessions" "$url" 2>"$work/stderr" || status=$? ;;
    py) "$here/.venv/bin/python" "$here/client.py" "$agent" "$mcp" "$work/ws" "$work/sessions" "$url" 2>"$work/stderr" || status=$? ;;
  esac
  kill "$mock" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    echo "$1 client FAILED (exit $status); agent's stderr:"; tail -40 "$work/stderr"
  fi
  rm -rf "$work"
  return "$status"
}

for which in ${1:-ts py}; do
  echo "== $which client"
  run_one "$which"
done
