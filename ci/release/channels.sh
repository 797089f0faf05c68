#!/usr/bin/env bash
# Every install channel, offline, against a release directory (ci/release/local.sh DIR):
# each starts from an empty directory, installs, and must then answer `agent --version`
# and run the README's demo (its `cargo run -q --` replaced by the installed command). The
# time from the empty directory to `agent --version` is printed per channel (the goal:
# under 10 s). The release is served by `python3 -m http.server` on loopback; npm and
# PyPI install from the packages npm.sh and pypi.sh make (packed before the clock starts,
# as a registry would hold them), with no network (`npm --offline`, `pip --no-index`).
# ci/release/registries.sh does the same through real registries on loopback.
#   ci/release/channels.sh RELEASE_DIR [--cargo]
#   (--cargo also times `cargo install --path .` into an empty target directory;
#   CHANNELS="install.sh tarball npm pip" picks channels)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -ge 1 ] || { echo "usage: ci/release/channels.sh RELEASE_DIR [--cargo]" >&2; exit 2; }
rel=$(cd "$1" && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=x86_64-unknown-linux-musl npm_suffix=linux-x64 ;;
  Linux-aarch64) target=aarch64-unknown-linux-musl npm_suffix=linux-arm64 ;;
  Darwin-x86_64) target=x86_64-apple-darwin npm_suffix=darwin-x64 ;;
  Darwin-arm64) target=aarch64-apple-darwin npm_suffix=darwin-arm64 ;;
  *) echo "channels.sh: no release target for $(uname -sm)" >&2; exit 2 ;;
esac
[ -f "$rel/v$version/agent-$version-$target.tar.gz" ] \
  || { echo "channels.sh: no $target archive in $rel/v$version (run ci/release/local.sh first)" >&2; exit 1; }

scratch=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$rel" "$port" >"$scratch/http.log" 2>&1 &
server_pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 50); do curl -fsS -o /dev/null "$url/latest" 2>/dev/null && break; sleep 0.1; done

demo=$(awk '/<!-- demo-command -->/ {m=1; next} m && /^```/ {if (inside) exit; inside=1; next} inside {print}' "$root/README.md")
[ -n "$demo" ] || { echo "channels.sh: no demo command in README.md" >&2; exit 1; }

now() { python3 -c 'import time; print(time.monotonic())'; }
results=()
# channel NAME AGENT_COMMAND START: checks --version, runs the demo, records the time.
finish() {
  local name=$1 cmd=$2 start=$3 end
  got=$($cmd --version)
  end=$(now)
  [ "$got" = "agent $version" ] || { echo "channels.sh: $name: --version said '$got'" >&2; exit 1; }
  echo "== $name: the README demo through $cmd" >&2
  (cd "$root" && bash -c "${demo//cargo run -q --/$cmd}") >"$scratch/$name.demo" 2>&1 \
    || { cat "$scratch/$name.demo" >&2; echo "channels.sh: $name: the demo failed" >&2; exit 1; }
  grep -q 'agent: success' "$scratch/$name.demo" \
    || { cat "$scratch/$name.demo" >&2; echo "channels.sh: $name: the demo did not succeed" >&2; exit 1; }
  results+=("$(printf '%-28s %6.2f s' "$name" "$(python3 -c "print($end - $start)")")")
}

want() { case " ${CHANNELS:-install.sh tarball npm pip} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

if want install.sh; then
echo "== install.sh" >&2
d="$scratch/install-sh"; mkdir "$d"
start=$(now)
AGENT_DOWNLOAD_URL="$url" AGENT_INSTALL_DIR="$d/bin" sh "$root/install.sh" >/dev/null
finish "install.sh" "$d/bin/agent" "$start"
fi

if want tarball; then
echo "== release tarball (curl | tar)" >&2
d="$scratch/tarball"; mkdir "$d"
start=$(now)
(cd "$d" && curl -fsSLO "$url/v$version/agent-$version-$target.tar.gz" \
  && curl -fsSL "$url/v$version/SHA256SUMS" | grep " agent-$version-$target.tar.gz\$" | sha256sum -c --quiet - \
  && tar -xzf "agent-$version-$target.tar.gz")
finish "tarball" "$d/agent-$version-$target/agent" "$start"
fi

if want npm; then
echo "== npm (packs first: not timed)" >&2
"$here/npm.sh" "$rel" "$scratch/npm-out"
d="$scratch/npm"; mkdir "$d"
start=$(now)
(cd "$d" && npm install --offline --no-audit --no-fund --silent --cache "$d/.npm-cache" \
  "$scratch/npm-out/$NPM_NAME-$npm_suffix-$version.tgz" "$scratch/npm-out/$NPM_NAME-$version.tgz")
# `npx NAME` from the directory it was installed in, as a project would.
npx_agent() { (cd "$d" && npx --offline "$NPM_NAME" "$@"); }
npx_ver=$(npx_agent --version)
[ "$npx_ver" = "agent $version" ] || { echo "channels.sh: npx $NPM_NAME --version said '$npx_ver'" >&2; exit 1; }
finish "npm (npx $NPM_NAME)" "$d/node_modules/.bin/agent" "$start"
fi

if want pip; then
echo "== PyPI wheels (packed first: not timed)" >&2
"$here/pypi.sh" "$rel" "$scratch/wheels" >/dev/null
d="$scratch/pip"; mkdir "$d"
start=$(now)
python3 -m venv "$d/venv"
# pip picks the wheel of this platform among them, as it would from PyPI.
"$d/venv/bin/pip" install --quiet --no-index --disable-pip-version-check \
  --find-links "$scratch/wheels" "$PYPI_NAME"
finish "pip (venv + wheel)" "$d/venv/bin/agent" "$start"
if [ -x "$d/venv/bin/mcp-test-server" ]; then
  echo "channels.sh: the wheel ships the tests' mcp-test-server" >&2; exit 1
fi
fi

if [ "${2:-}" = --cargo ]; then
  echo "== cargo install --path . (empty target directory)" >&2
  d="$scratch/cargo"; mkdir "$d"
  start=$(now)
  CARGO_TARGET_DIR="$d/target" cargo install --quiet --locked --path "$root" --root "$d" --bin agent
  finish "cargo install" "$d/bin/agent" "$start"
fi

echo
echo "From an empty directory to \`agent --version\` ($target, agent $version, offline):"
printf '  %s\n' "${results[@]}"
