#!/usr/bin/env bash
# Builds the PyPI wheel of one target with maturin's `bindings = "bin"` (as ruff and uv
# ship): the `agent` binary in the wheel's scripts, so `pip install`, `pipx run` and
# `uvx` put `agent` on PATH. The distribution name is PYPI_NAME (names.env); the
# pyproject.toml is written here from it. maturin builds the binary itself (with zig as
# the linker: `--zig`), without the default feature `test-server`, so that the crate's
# other binary (the integration tests' MCP server) is not in the wheel.
#   ci/release/pypi.sh TARGET OUT       e.g. x86_64-unknown-linux-musl (a wheel tagged
#                                       manylinux2014 and musllinux_1_2: the binary is static)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -eq 2 ] || { echo "usage: ci/release/pypi.sh TARGET OUT" >&2; exit 2; }
target=$1 out=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! command -v maturin >/dev/null 2>&1 || ! python3 -c 'import ziglang' 2>/dev/null; then
  python3 -m pip install --quiet --user 'maturin>=1.5,<2' ziglang >&2 \
    || python3 -m pip install --quiet --user --break-system-packages 'maturin>=1.5,<2' ziglang >&2
  export PATH="$(python3 -m site --user-base)/bin:$PATH"
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cat > "$stage/pyproject.toml" <<TOML
[build-system]
requires = ["maturin>=1.5,<2"]
build-backend = "maturin"

[project]
name = "$PYPI_NAME"
version = "$version"
description = "A synchronous, single-binary, non-interactive coding agent for CI and scripts"
license = { text = "MIT" }
requires-python = ">=3.8"

[tool.maturin]
bindings = "bin"
manifest-path = "$root/Cargo.toml"
TOML
cd "$stage"
compat=()
# A static musl binary needs no glibc: tagged manylinux too, so pip on glibc systems takes it.
case "$target" in *-linux-musl) compat=(--compatibility manylinux2014 musllinux_1_2) ;; esac
maturin build --release --locked --no-default-features --target "$target" --zig "${compat[@]}" --out "$out" \
  --target-dir "${CARGO_TARGET_DIR:-$root/target}" >&2
ls "$out"/*.whl
