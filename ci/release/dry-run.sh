#!/usr/bin/env bash
# The release workflow's publishing, dry: every package it publishes is made from a release
# directory and checked by its registry's own client without uploading anything:
#   npm publish --dry-run   on each packed npm package (the platform ones, the launcher)
#   twine check --strict    on each wheel (metadata and README render as PyPI will)
#   cargo publish --dry-run on the crate (--no-verify: its build is .ci/run's cargo test)
# and checks that the names are names.env's (npm's view of each tarball, the wheels' file
# names, Cargo.toml's package).
#   ci/release/dry-run.sh RELEASE_DIR [TOOLS_DIR]     (twine goes into a venv in TOOLS_DIR,
#                                                      default $TMPDIR/agent-registries)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -ge 1 ] || { echo "usage: ci/release/dry-run.sh RELEASE_DIR [TOOLS_DIR]" >&2; exit 2; }
rel=$(cd "$1" && pwd)
tools=${2:-${TMPDIR:-/tmp}/agent-registries}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "-- npm publish --dry-run" >&2
"$here/npm.sh" "$rel" "$scratch/npm" 2>/dev/null
n=0
for tgz in "$scratch/npm"/*.tgz; do
  name=$(tar -xOzf "$tgz" package/package.json | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')
  case "$name" in
    "$NPM_NAME" | "$NPM_NAME"-linux-x64 | "$NPM_NAME"-linux-arm64 | "$NPM_NAME"-darwin-x64 | "$NPM_NAME"-darwin-arm64) ;;
    *) echo "dry-run.sh: $tgz is the package '$name', not one of $NPM_NAME's" >&2; exit 1 ;;
  esac
  # The default registry, without credentials: a dry run uploads nothing and needs none.
  npm publish --dry-run --access public --userconfig /dev/null "$tgz" >"$scratch/npm.log" 2>&1 \
    || { cat "$scratch/npm.log" >&2; echo "dry-run.sh: npm publish --dry-run $tgz failed" >&2; exit 1; }
  grep -q "+ $name@$version" "$scratch/npm.log" \
    || { cat "$scratch/npm.log" >&2; echo "dry-run.sh: npm did not report $name@$version" >&2; exit 1; }
  echo "ok npm publish --dry-run $name@$version" >&2
  n=$((n + 1))
done
[ "$n" -ge 2 ] || { echo "dry-run.sh: fewer than two npm packages (launcher and one platform)" >&2; exit 1; }

echo "-- twine check" >&2
if [ ! -x "$tools/venv/bin/twine" ]; then
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check 'twine>=5' >&2
fi
"$here/pypi.sh" "$rel" "$scratch/wheels" >/dev/null 2>&1
dist=$(echo "$PYPI_NAME" | tr '.-' '__')
for whl in "$scratch"/wheels/*.whl; do
  case "$(basename "$whl")" in
    "$dist-$version-"*) ;;
    *) echo "dry-run.sh: $whl is not $PYPI_NAME $version" >&2; exit 1 ;;
  esac
done
"$tools/venv/bin/twine" check --strict "$scratch"/wheels/*.whl >&2

echo "-- cargo publish --dry-run" >&2
grep -qx "name = \"$CRATE_NAME\"" "$root/Cargo.toml" \
  || { echo "dry-run.sh: Cargo.toml's package is not $CRATE_NAME (names.env)" >&2; exit 1; }
# --allow-dirty only where asked (a developer's tree); .ci/run's clone is clean.
(cd "$root" && cargo publish --dry-run --no-verify --locked ${AGENT_DRY_RUN_ALLOW_DIRTY:+--allow-dirty} >&2)
echo "dry runs passed: npm ($n packages), PyPI ($(ls "$scratch"/wheels/*.whl | wc -l) wheels), crates.io ($CRATE_NAME $version)" >&2
