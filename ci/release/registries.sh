#!/usr/bin/env bash
# The package channels through real registries on loopback: the npm packages (npm.sh)
# published to a Verdaccio registry with `npm publish` (the platform packages before the
# launcher, as the release workflow does), the wheels (pypi.sh) uploaded to a pypiserver
# index with `twine upload`; then each install a user would type, in a fresh HOME and from
# an empty directory to `agent --version`, timed:
#   npx ci-coding-agent --version          (nothing installed before)
#   npm i -g ci-coding-agent; agent --version
#   pipx install ci-coding-agent; agent --version
#   uvx --from ci-coding-agent agent --version
# (the package names from names.env). Verdaccio 6.8 (npm), pypiserver, twine, pipx and uv
# (PyPI) are installed by this script into a scratch directory, kept between runs.
#   ci/release/registries.sh RELEASE_DIR [TOOLS_DIR]   (default TOOLS_DIR:
#                                                      $TMPDIR/agent-registries)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -ge 1 ] || { echo "usage: ci/release/registries.sh RELEASE_DIR [TOOLS_DIR]" >&2; exit 2; }
rel=$(cd "$1" && pwd)
tools=${2:-${TMPDIR:-/tmp}/agent-registries}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
now() { python3 -c 'import time; print(time.monotonic())'; }
t0=$(now)

# The tools, once: Verdaccio from npm; pypiserver, twine, pipx and uv from PyPI (a venv).
mkdir -p "$tools"
if [ ! -f "$tools/npm/node_modules/verdaccio/package.json" ]; then
  echo "== installing verdaccio@6.8 (npm)" >&2
  npm install --prefix "$tools/npm" --no-save --no-audit --no-fund --silent verdaccio@6.8 >&2
fi
if [ ! -x "$tools/venv/bin/uvx" ] || [ ! -x "$tools/venv/bin/pypi-server" ]; then
  echo "== installing pypiserver, twine, pipx, uv (PyPI)" >&2
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check \
    'pypiserver>=2,<3' 'twine>=5' 'pipx>=1.5' 'uv>=0.4' >&2
fi
t_tools=$(now)

scratch=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {
  for _ in $(seq 300); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "registries.sh: $2 did not start; its log:" >&2; cat "$3" >&2; exit 1
}

# The packages, as the release workflow makes them.
echo "== packing (npm.sh, pypi.sh)" >&2
"$here/npm.sh" "$rel" "$scratch/npm-out"
"$here/pypi.sh" "$rel" "$scratch/wheels" >/dev/null

# Verdaccio: no uplink (nothing is fetched from the real registry), a user to publish as.
npm_port=$(free_port)
mkdir -p "$scratch/verdaccio/storage"
cat > "$scratch/verdaccio/config.yaml" <<YAML
storage: $scratch/verdaccio/storage
auth:
  htpasswd:
    file: $scratch/verdaccio/htpasswd
    max_users: 1
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$authenticated
max_body_size: 200mb
log: { type: stdout, format: pretty, level: warn }
YAML
node "$tools/npm/node_modules/verdaccio/bin/verdaccio" --config "$scratch/verdaccio/config.yaml" \
  --listen "127.0.0.1:$npm_port" >"$scratch/verdaccio.log" 2>&1 &
pids+=($!)
npm_url="http://127.0.0.1:$npm_port/"
wait_for "${npm_url}-/ping" verdaccio "$scratch/verdaccio.log"
token=$(curl -fsS -X PUT -H 'content-type: application/json' \
  -d '{"name":"release","password":"release-check"}' "${npm_url}-/user/org.couchdb.user:release" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
publisher_rc="$scratch/publisher.npmrc"
printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\n' "$npm_url" "$npm_port" "$token" > "$publisher_rc"
echo "== npm publish to $npm_url (platform packages first, then the launcher)" >&2
for tgz in "$scratch/npm-out/$NPM_NAME"-*-*-"$version".tgz "$scratch/npm-out/$NPM_NAME-$version.tgz"; do
  npm publish --userconfig "$publisher_rc" --registry "$npm_url" --access public "$tgz" >"$scratch/publish.log" 2>&1 \
    || { cat "$scratch/publish.log" >&2; echo "registries.sh: npm publish $tgz failed" >&2; exit 1; }
  echo "published $(basename "$tgz")" >&2
done
got=$(npm view --registry "$npm_url" "$NPM_NAME" version --userconfig /dev/null)
[ "$got" = "$version" ] || { echo "registries.sh: the registry has $NPM_NAME '$got', not $version" >&2; exit 1; }

# pypiserver: uploads without authentication (-a . -P .), the index at /simple/.
pypi_port=$(free_port)
mkdir -p "$scratch/pypi"
"$tools/venv/bin/pypi-server" run -i 127.0.0.1 -p "$pypi_port" -a . -P . "$scratch/pypi" \
  >"$scratch/pypiserver.log" 2>&1 &
pids+=($!)
pypi_url="http://127.0.0.1:$pypi_port"
wait_for "$pypi_url/simple/" pypiserver "$scratch/pypiserver.log"
echo "== twine upload to $pypi_url" >&2
"$tools/venv/bin/twine" check --strict "$scratch"/wheels/*.whl >&2
"$tools/venv/bin/twine" upload --non-interactive --disable-progress-bar \
  --repository-url "$pypi_url/" -u release -p release-check "$scratch"/wheels/*.whl >&2
t_ready=$(now)

results=()
# check NAME START COMMAND...: the command prints `agent VERSION`; the time is recorded.
check() {
  local name=$1 start=$2 got end
  shift 2
  got=$("$@")
  end=$(now)
  [ "$got" = "agent $version" ] || { echo "registries.sh: $name: --version said '$got'" >&2; exit 1; }
  results+=("$(printf '%-44s %6.2f s' "$name" "$(python3 -c "print($end - $start)")")")
}
# A fresh HOME and an empty working directory per channel; nothing of the registries'
# own caches, the user's npm or pip configuration, or the scratch tools' PATH leaks in.
fresh() {
  local d="$scratch/home-$1"
  mkdir -p "$d/home" "$d/empty"
  printf 'registry=%s\n' "$npm_url" > "$d/home/.npmrc"
  echo "$d"
}
clean_env=(env -i "PATH=/usr/local/bin:/usr/bin:/bin" "LANG=C.UTF-8")

d=$(fresh npx)
echo "== npx $NPM_NAME --version (fresh HOME)" >&2
start=$(now)
check "npx $NPM_NAME --version" "$start" \
  bash -c 'cd "$1/empty" && "${@:2}"' _ "$d" "${clean_env[@]}" "HOME=$d/home" npx --yes "$NPM_NAME" --version

d=$(fresh npm-g)
echo "== npm i -g $NPM_NAME (fresh HOME, prefix in it)" >&2
start=$(now)
(cd "$d/empty" && "${clean_env[@]}" "HOME=$d/home" npm i -g --prefix "$d/home/.npm-global" \
  --no-audit --no-fund --silent "$NPM_NAME" >&2)
check "npm i -g $NPM_NAME; agent --version" "$start" "$d/home/.npm-global/bin/agent" --version
second=$("$d/home/.npm-global/bin/$NPM_NAME" --version)
[ "$second" = "agent $version" ] || { echo "registries.sh: the $NPM_NAME bin said '$second'" >&2; exit 1; }

d=$(fresh pipx)
echo "== pipx install $PYPI_NAME (fresh HOME)" >&2
start=$(now)
(cd "$d/empty" && "${clean_env[@]}" "HOME=$d/home" "PIPX_HOME=$d/home/.local/pipx" \
  "PIPX_BIN_DIR=$d/home/.local/bin" "PIPX_MAN_DIR=$d/home/.local/share/man" \
  "$tools/venv/bin/pipx" install --index-url "$pypi_url/simple/" "$PYPI_NAME" >&2)
check "pipx install $PYPI_NAME; agent --version" "$start" "$d/home/.local/bin/agent" --version

d=$(fresh uvx)
echo "== uvx --from $PYPI_NAME agent --version (fresh HOME)" >&2
start=$(now)
check "uvx --from $PYPI_NAME agent --version" "$start" \
  bash -c 'cd "$1/empty" && "${@:2}"' _ "$d" "${clean_env[@]}" "HOME=$d/home" \
  "UV_CACHE_DIR=$d/home/.cache/uv" "UV_TOOL_DIR=$d/home/.local/share/uv/tools" "UV_PYTHON_DOWNLOADS=never" \
  "$tools/venv/bin/uvx" --index-url "$pypi_url/simple/" --from "$PYPI_NAME" agent --version

t_end=$(now)
echo
echo "From an empty directory and a fresh HOME to \`agent --version\`, through local registries"
echo "(Verdaccio for npm, pypiserver for PyPI, on loopback; agent $version, $(uname -m)):"
printf '  %s\n' "${results[@]}"
python3 -c "print('  (tools install %.1f s, packing and publishing %.1f s, installs %.1f s)' % ($t_tools - $t0, $t_ready - $t_tools, $t_end - $t_ready))"
