#!/usr/bin/env bash
# Makes a release directory from what this machine can build: for each target, the
# release binary (cross-built with cargo-zigbuild, which needs the `ziglang` Python package
# and `rustup target add T`), packed as DIR/v<version>/agent-<version>-<target>.tar.gz,
# then DIR/v<version>/SHA256SUMS over every archive there and DIR/latest (the version).
# The release workflow (.github/workflows/release.yml) publishes exactly this directory;
# install.sh, the npm and PyPI scripts and the Action's tests read it offline.
#
#   ci/release/local.sh DIR [TARGET...]      (default: the four release targets)
#
# Environment: AGENT_RELEASE_STRICT=1 fails when any target cannot be built (the
# workflow); otherwise a target that fails to build is skipped with a message and the
# script fails only when none was built. AGENT_RELEASE_PREBUILT=1 packs the binaries
# already in target/<target>/release/agent without building (the workflow's build jobs
# hand them over as artifacts).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

[ $# -ge 1 ] || { echo "usage: ci/release/local.sh DIR [TARGET...]" >&2; exit 2; }
out=$1; shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin)

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
[ -n "$version" ] || { echo "local.sh: no version in Cargo.toml" >&2; exit 1; }

built=()
for target in "${targets[@]}"; do
  bin="${CARGO_TARGET_DIR:-$root/target}/$target/release/agent"
  if [ "${AGENT_RELEASE_PREBUILT:-}" != 1 ]; then
    echo "== cargo zigbuild --release --target $target" >&2
    if ! (cd "$root" && "$here/build.sh" "$target") >&2; then
      if [ "${AGENT_RELEASE_STRICT:-}" = 1 ]; then
        echo "local.sh: $target did not build" >&2; exit 1
      fi
      echo "local.sh: $target did not build; skipped" >&2
      continue
    fi
  fi
  if [ ! -x "$bin" ]; then
    [ "${AGENT_RELEASE_STRICT:-}" = 1 ] && { echo "local.sh: no $bin" >&2; exit 1; }
    echo "local.sh: no $bin; $target skipped" >&2
    continue
  fi
  "$here/pack.sh" "$out" "$version" "$target" "$bin"
  built+=("$target")
done

[ ${#built[@]} -gt 0 ] || { echo "local.sh: no target was built" >&2; exit 1; }
echo "release $version in $out/v$version: ${built[*]}" >&2
