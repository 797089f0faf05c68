#!/usr/bin/env bash
# Packs one built binary as DIR/v<version>/agent-<version>-<target>.tar.gz (a directory
# agent-<version>-<target>/ holding `agent` and README.md; owner, times and order fixed,
# so the same binary packs to the same bytes), then rewrites DIR/v<version>/SHA256SUMS
# (`sha256sum` format) over every archive there and DIR/latest.
#   ci/release/pack.sh DIR VERSION TARGET BINARY
# AGENT_PACK_GZIP_LEVEL (default 9): the tests pack a debug binary at level 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -eq 4 ] || { echo "usage: ci/release/pack.sh DIR VERSION TARGET BINARY" >&2; exit 2; }
out=$1 version=$2 target=$3 bin=$4
name="agent-$version-$target"
rel="$out/v$version"
mkdir -p "$rel"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$bin" "$stage/$name/agent"
chmod 755 "$stage/$name/agent"
cp "$root/README.md" "$stage/$name/README.md"
chmod 644 "$stage/$name/README.md"
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
fixed=()
# GNU tar fixes order, owner and times; bsdtar (macOS) has no --sort, and packs as is.
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
  fixed=(--sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch")
fi
tar -C "$stage" "${fixed[@]}" -cf - "$name" | gzip "-${AGENT_PACK_GZIP_LEVEL:-9}" -n > "$rel/$name.tar.gz.part"
mv -f "$rel/$name.tar.gz.part" "$rel/$name.tar.gz"
(
  cd "$rel"
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum agent-*.tar.gz
  else
    shasum -a 256 agent-*.tar.gz
  fi
) > "$rel/SHA256SUMS.part"
mv -f "$rel/SHA256SUMS.part" "$rel/SHA256SUMS"
printf '%s\n' "$version" > "$out/latest"
echo "packed $rel/$name.tar.gz" >&2
