#!/usr/bin/env bash
# The benchmark suite in one command, from a clean clone: installs what it needs
# (hyperfine, ripgrep, fd-find from Debian; Claude Code and codex from npm into ci/bench/node_modules),
# builds the release binary, runs ci/bench/bench.py, prints the table and writes it into
# docs/performance.md. Takes several minutes; not part of .ci/run.
#   ci/bench/run.sh [--tree DIR] [--runs N] [--no-readme] [--only session,long,...]
#   (env: BENCH_TREE, BENCH_RUNS, BENCH_ONLY)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."

need_apt=()
command -v hyperfine >/dev/null || need_apt+=(hyperfine)
command -v rg >/dev/null || need_apt+=(ripgrep)
command -v fd >/dev/null || command -v fdfind >/dev/null || need_apt+=(fd-find)
[ -x /usr/bin/time ] || need_apt+=(time) # GNU time: each peer's own peak RSS (%M)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}" >&2
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need_apt[@]}" >&2
fi

if [ ! -x "$here/node_modules/.bin/claude" ]; then
  echo "== npm install @anthropic-ai/claude-code (into ci/bench/node_modules)" >&2
  if command -v npm >/dev/null; then
    npm install --prefix "$here" --no-save --no-audit --no-fund @anthropic-ai/claude-code >&2 \
      || echo "bench: npm install failed; claude -p will be reported as not measured" >&2
  else
    echo "bench: npm is not installed; claude -p will be reported as not measured" >&2
  fi
fi

if [ ! -x "$here/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" ]; then
  echo "== npm install @openai/codex (into ci/bench/node_modules; its native binary is run directly)" >&2
  if command -v npm >/dev/null; then
    npm install --prefix "$here" --no-save --no-audit --no-fund @openai/codex >&2 \
      || echo "bench: npm install failed; codex exec will be reported as not measured" >&2
  fi
fi

echo "== cargo build --release" >&2
cargo build --release >&2

exec python3 "$here/bench.py" --agent target/release/agent --claude "$here/node_modules/.bin/claude" "$@"
