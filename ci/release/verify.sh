#!/usr/bin/env bash
# Checks a release directory (ci/release/local.sh DIR): SHA256SUMS matches every archive;
# each archive unpacks to agent-<version>-<target>/agent; the musl binaries are static
# (`file` says so and `readelf` finds no dynamic section or interpreter) and the macOS
# ones are Mach-O of the right CPU; a binary this machine can run says `agent <version>`
# (aarch64 through qemu-aarch64 when installed: Debian's qemu-user).
#   ci/release/verify.sh DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -eq 1 ] || { echo "usage: ci/release/verify.sh DIR" >&2; exit 2; }
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
rel="$1/v$version"
(cd "$rel" && sha256sum -c --quiet SHA256SUMS)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for archive in "$rel"/agent-"$version"-*.tar.gz; do
  name=$(basename "$archive" .tar.gz)
  target=${name#agent-"$version"-}
  grep -q " $name.tar.gz\$" "$rel/SHA256SUMS" || { echo "verify: $name has no checksum line" >&2; exit 1; }
  tar -xzf "$archive" -C "$scratch"
  bin="$scratch/$name/agent"
  [ -x "$bin" ] || { echo "verify: $archive holds no executable $name/agent" >&2; exit 1; }
  kind=$(file -b "$bin")
  case "$target" in
    *-linux-musl)
      arch=${target%%-*}
      case "$arch" in x86_64) want="x86-64" ;; aarch64) want="ARM aarch64" ;; esac
      case "$kind" in *"$want"*"statically linked"*) ;; *) echo "verify: $target: not a static $want ELF: $kind" >&2; exit 1 ;; esac
      if readelf -lW "$bin" | grep -q 'INTERP\|DYNAMIC'; then
        echo "verify: $target: has a program interpreter or a dynamic section" >&2; exit 1
      fi
      ;;
    x86_64-apple-darwin) case "$kind" in *Mach-O*x86_64*) ;; *) echo "verify: $target: $kind" >&2; exit 1 ;; esac ;;
    aarch64-apple-darwin) case "$kind" in *Mach-O*arm64*) ;; *) echo "verify: $target: $kind" >&2; exit 1 ;; esac ;;
  esac
  ran="not run here"
  runner=()
  case "$target-$(uname -s)-$(uname -m)" in
    x86_64-unknown-linux-musl-Linux-x86_64 | aarch64-unknown-linux-musl-Linux-aarch64) runner=("$bin") ;;
    aarch64-unknown-linux-musl-Linux-*) command -v qemu-aarch64 >/dev/null && runner=(qemu-aarch64 "$bin") ;;
    x86_64-apple-darwin-Darwin-* | aarch64-apple-darwin-Darwin-arm64) runner=("$bin") ;;
  esac
  if [ ${#runner[@]} -gt 0 ]; then
    got=$("${runner[@]}" --version)
    [ "$got" = "agent $version" ] || { echo "verify: $target --version said '$got'" >&2; exit 1; }
    ran="'$got'${runner[1]:+ (through ${runner[0]})}"
  fi
  echo "ok $name.tar.gz: $kind; --version: $ran"
done
