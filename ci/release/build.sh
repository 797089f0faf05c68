#!/usr/bin/env bash
# Cross-builds the release binary for one target with cargo-zigbuild (zig as the C
# compiler and linker: ring's C and the final link, no SDK needed for macOS), installing
# what is missing: the Rust target, `ziglang` and `cargo-zigbuild` (both from PyPI, into
# the user's Python; a prebuilt wheel each, seconds instead of a cargo install).
#   ci/release/build.sh TARGET [cargo args...]   -> target/TARGET/release/agent
# `ci/release/build.sh T check` and `… clippy` run those commands for T instead (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/../.."
target=$1; shift
if ! rustup target list --installed | grep -qx "$target"; then
  rustup target add "$target" >&2
fi
if ! command -v cargo-zigbuild >/dev/null 2>&1 || ! python3 -c 'import ziglang' 2>/dev/null; then
  python3 -m pip install --quiet --user ziglang cargo-zigbuild >&2 \
    || python3 -m pip install --quiet --user --break-system-packages ziglang cargo-zigbuild >&2
  export PATH="$(python3 -m site --user-base)/bin:$PATH"
fi
case "${1:-}" in
  check | clippy)
    cmd=$1; shift
    exec cargo-zigbuild "$cmd" --target "$target" "$@"
    ;;
esac
exec cargo-zigbuild build --release --locked --target "$target" --bin agent "$@"
