#!/usr/bin/env bash
# Makes the PyPI wheels from a release directory (ci/release/local.sh DIR), one per
# archive there, with ci/release/wheel.py: the release's own binary as the wheel's `agent`
# script (maturin's `bindings = "bin"` layout), named PYPI_NAME (names.env). No second
# build: the wheel ships the very binary the archives, npm and the image ship.
#   ci/release/pypi.sh RELEASE_DIR OUT       (prints each wheel's path)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -eq 2 ] || { echo "usage: ci/release/pypi.sh RELEASE_DIR OUT" >&2; exit 2; }
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
python3 "$here/wheel.py" "$1" "$2" "$PYPI_NAME" "$version" "$root/README.md"
