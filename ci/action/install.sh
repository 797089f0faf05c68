#!/usr/bin/env bash
# The GitHub Action's install steps (ci/action.yml), runnable anywhere: tests drive it with
# RUNNER_OS, RUNNER_ARCH, GITHUB_OUTPUT and HOME pointed at temporary places and
# AGENT_DOWNLOAD_URL at a loopback release server.
#
#   ci/action/install.sh key       writes mode=release|source, version= and key= (the
#                                  actions/cache key) to $GITHUB_OUTPUT
#   ci/action/install.sh install   puts agent in $AGENT_CACHE_DIR/bin (default
#                                  ~/.agent-action/bin), unless that holds this version
#
# Inputs (environment): AGENT_VERSION_INPUT, the `version` input: empty for the Action's
# own version (the version in its Cargo.toml: the release of the ref the workflow uses;
# a ref whose version has no release yet builds from source), a version (`0.2.0` or
# `v0.2.0`: that release, or a failure), or `source` (cargo install from the Action's
# checkout, as before releases existed). A release is installed by the repository's
# install.sh: SHA-256 verified against the release's SHA256SUMS, fail-closed; only a
# missing release (HTTP 404) of the default version falls back to building.
set -euo pipefail

action_dir="$(cd "$(dirname "$0")/.." && pwd)"
repo_dir="$(cd "$action_dir/.." && pwd)"
cache_dir=${AGENT_CACHE_DIR:-$HOME/.agent-action}
outputs=${GITHUB_OUTPUT:-/dev/null}
input=${AGENT_VERSION_INPUT:-}
input=${input#v}

own_version() {
  sed -n 's/^version = "\(.*\)"$/\1/p' "$repo_dir/Cargo.toml" | head -n 1
}

source_key() {
  cd "$repo_dir"
  hash=$(find Cargo.toml Cargo.lock build.rs src -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
  # build.rs links for the build machine's glibc: a binary from a newer runner image
  # may not start on an older one, so the glibc version is part of the key.
  libc=$(getconf GNU_LIBC_VERSION 2>/dev/null | tr -c 'a-z0-9.\n' - || true)
  echo "agent-${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}-${libc:-nolibc}-${hash}"
}

build_from_source() {
  echo "agent: building from source (cargo install); a release installs in seconds" >&2
  cargo install --locked --path "$repo_dir" --root "$cache_dir" --bin agent
}

case "${1:-}" in
  key)
    if [ "$input" = source ]; then
      { echo "mode=source"; echo "version="; echo "key=$(source_key)"; } >> "$outputs"
    else
      version=${input:-$(own_version)}
      # The release binaries are static (musl) or macOS's: the OS and arch are the key.
      {
        echo "mode=release"
        echo "version=$version"
        echo "key=agent-release-$version-${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}"
      } >> "$outputs"
    fi
    ;;
  install)
    if [ "$input" = source ]; then
      build_from_source
      exit 0
    fi
    version=${input:-$(own_version)}
    bin="$cache_dir/bin/agent"
    if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" = "agent $version" ]; then
      echo "agent $version is already installed (cached): $bin" >&2
      exit 0
    fi
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    set +e
    AGENT_VERSION="$version" AGENT_INSTALL_DIR="$cache_dir/bin" sh "$repo_dir/install.sh" 2>"$log"
    code=$?
    set -e
    cat "$log" >&2
    if [ "$code" -eq 3 ] && [ -z "$input" ] && grep -q 'HTTP 404' "$log"; then
      echo "agent: version $version has no release (yet); building this ref from source" >&2
      build_from_source
      exit 0
    fi
    if [ "$code" -ne 0 ]; then
      echo "::error::installing agent $version failed (install.sh exit $code); see the log above" >&2
    fi
    exit "$code"
    ;;
  *)
    echo "usage: ci/action/install.sh key|install" >&2
    exit 2
    ;;
esac
