#!/usr/bin/env bash
# Makes the npm packages from a release directory (ci/release/local.sh DIR): one package
# per platform archive found there (NPM_NAME-<os>-<cpu>, with `os` and `cpu` set so npm
# installs only the matching one; no `libc`: the Linux binaries are static musl and run on
# glibc and musl systems alike) and the launcher package NPM_NAME (bins `agent` and
# NPM_NAME, for a machine where another program owns `agent`; `npx NAME` runs the bin
# named like the package; the platform packages as optionalDependencies). `npm pack`s
# each into OUT. The repository field is what npm's provenance checks the workflow against.
#   ci/release/npm.sh RELEASE_DIR OUT        (the version from Cargo.toml)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -eq 2 ] || { echo "usage: ci/release/npm.sh RELEASE_DIR OUT" >&2; exit 2; }
rel=$1 out=$2
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

optional=""
for target in x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin; do
  archive="$rel/v$version/agent-$version-$target.tar.gz"
  case "$target" in
    x86_64-unknown-linux-musl) os=linux cpu=x64 ;;
    aarch64-unknown-linux-musl) os=linux cpu=arm64 ;;
    x86_64-apple-darwin) os=darwin cpu=x64 ;;
    aarch64-apple-darwin) os=darwin cpu=arm64 ;;
  esac
  pkg="$NPM_NAME-$os-$cpu"
  optional="$optional${optional:+,}
    \"$pkg\": \"$version\""
  [ -f "$archive" ] || { echo "npm.sh: no $archive; $pkg not packed" >&2; continue; }
  dir="$stage/$pkg"
  mkdir -p "$dir/bin"
  tar -xzf "$archive" -C "$stage"
  mv "$stage/agent-$version-$target/agent" "$dir/bin/agent"
  rm -rf "$stage/agent-$version-$target"
  cat > "$dir/package.json" <<JSON
{
  "name": "$pkg",
  "version": "$version",
  "description": "The agent binary for $os-$cpu (installed by $NPM_NAME)",
  "license": "MIT",
  "repository": { "type": "git", "url": "git+https://github.com/OWNER/agent.git" },
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/agent"],
  "preferUnplugged": true
}
JSON
  (cd "$out" && npm pack --silent "$dir" >/dev/null)
  echo "packed $out/$pkg-$version.tgz" >&2
done

dir="$stage/$NPM_NAME"
mkdir -p "$dir/bin"
cp "$here/npm/agent.js" "$dir/bin/agent.js"
chmod 755 "$dir/bin/agent.js"
cp "$root/README.md" "$dir/README.md"
cat > "$dir/package.json" <<JSON
{
  "name": "$NPM_NAME",
  "version": "$version",
  "description": "A synchronous, single-binary, non-interactive coding agent for CI and scripts",
  "license": "MIT",
  "repository": { "type": "git", "url": "git+https://github.com/OWNER/agent.git" },
  "bin": { "agent": "bin/agent.js", "$NPM_NAME": "bin/agent.js" },
  "files": ["bin/agent.js", "README.md"],
  "engines": { "node": ">=16" },
  "optionalDependencies": {$optional
  }
}
JSON
(cd "$out" && npm pack --silent "$dir" >/dev/null)
echo "packed $out/$NPM_NAME-$version.tgz" >&2
