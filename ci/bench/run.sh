#!/usr/bin/env bash
# The benchmark suite in one command, from a clean clone: installs what it needs
# (hyperfine, ripgrep, fd-find from Debian; Claude Code and codex from npm, each pinned and in
# its own prefix under ci/bench/peers/), builds the release binary, runs ci/bench/bench.py,
# prints the table and writes it into docs/performance.md. About ten minutes; not part of .ci/run.
# Exits non-zero, naming the peer and why, when a peer cannot be installed or measured, and
# when a target is missed.
#   ci/bench/run.sh [--tree DIR] [--runs N] [--no-readme] [--only session,long,...]
#   (env: BENCH_TREE, BENCH_RUNS, BENCH_ONLY; CLAUDE_CODE_VERSION, CODEX_VERSION override the pins)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."

# The peers' versions are pinned, so two runs compare the same programs; bench.py prints them.
claude_version="${CLAUDE_CODE_VERSION:-2.1.337}"
codex_version="${CODEX_VERSION:-0.171.0}"

need_apt=()
command -v hyperfine >/dev/null || need_apt+=(hyperfine)
command -v rg >/dev/null || need_apt+=(ripgrep)
command -v fd >/dev/null || command -v fdfind >/dev/null || need_apt+=(fd-find)
command -v strace >/dev/null || need_apt+=(strace) # syscalls per turn
[ -x /usr/bin/time ] || need_apt+=(time) # GNU time: each peer's own peak RSS (%M)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}" >&2
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need_apt[@]}" >&2
fi

# One npm prefix per peer: installing a second package into the same prefix with --no-save
# removes the first ("added 2 packages, and removed 2 packages").
install_peer() { # name package version prefix installed-version-file
  local name="$1" pkg="$2" version="$3" prefix="$4" manifest="$4/node_modules/$2/package.json"
  if [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
    return 0
  fi
  echo "== npm install $pkg@$version (into ${prefix#"$PWD"/})" >&2
  command -v npm >/dev/null || { echo "bench: FAILED: $name cannot be measured: npm is not installed" >&2; exit 1; }
  rm -rf "$prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund "$pkg@$version" >&2 ||
    { echo "bench: FAILED: $name cannot be measured: npm install $pkg@$version failed" >&2; exit 1; }
}
claude_prefix="$here/peers/claude-code"
codex_prefix="$here/peers/codex"
install_peer "claude -p" @anthropic-ai/claude-code "$claude_version" "$claude_prefix"
install_peer "codex exec" @openai/codex "$codex_version" "$codex_prefix"

echo "== cargo build --release" >&2
cargo build --release >&2

exec python3 "$here/bench.py" --agent target/release/agent \
  --claude "$claude_prefix/node_modules/.bin/claude" --claude-version "$claude_version" \
  --codex "$codex_prefix/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" \
  --codex-version "$codex_version" "$@"
