#!/usr/bin/env bash
# The container image, IMAGE_NAME (names.env): the static Linux binary of each musl archive
# in a release directory on `scratch` (/agent, an empty /tmp, nothing else; the entrypoint
# is /agent, the user nobody), one image per architecture (linux/amd64, linux/arm64) under
# one multi-arch manifest list, tagged <version> and latest. Built with buildah and the vfs
# storage driver: no Docker daemon, no privileges beyond a writable directory, and no RUN
# step (so no emulation for the other architecture). Then checked: the list names both
# platforms, each image's /agent is the archive's binary byte for byte, and the one this
# machine can run says `agent <version>`.
#   ci/release/image.sh RELEASE_DIR [OUT]   writes OUT/image.oci.tar (an OCI archive of
#                                           the list; default OUT: RELEASE_DIR/v<version>)
#   ci/release/image.sh RELEASE_DIR --push  pushes the list and its images to IMAGE_NAME
#                                           (the release workflow; REGISTRY_AUTH_FILE or
#                                           `buildah login` first)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=names.env
. "$here/names.env"
[ $# -ge 1 ] || { echo "usage: ci/release/image.sh RELEASE_DIR [OUT | --push]" >&2; exit 2; }
command -v buildah >/dev/null 2>&1 || { echo "image.sh: buildah is not installed (apt-get install buildah)" >&2; exit 1; }
rel=$(cd "$1" && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
push=""
out="$rel/v$version"
case "${2:-}" in
  --push) push=1 ;;
  "") ;;
  *) out=$2 ;;
esac

scratch=$(mktemp -d)
bh=(buildah --root "$scratch/storage" --runroot "$scratch/run" --storage-driver vfs)
cleanup() {
  "${bh[@]}" rm --all >/dev/null 2>&1 || true
  # vfs layers are plain directories; some are read-only.
  chmod -R u+w "$scratch" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

# names.env's OWNER is the repository's owner (GITHUB_REPOSITORY_OWNER in the workflow);
# image references are lower case.
image=${IMAGE_NAME//OWNER/${GITHUB_REPOSITORY_OWNER:-OWNER}}
image=$(printf '%s' "$image" | tr 'A-Z' 'a-z')
list="$image:$version"
"${bh[@]}" manifest create "$list" >/dev/null
built=()
for target in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
  archive="$rel/v$version/agent-$version-$target.tar.gz"
  case "$target" in x86_64-*) arch=amd64 ;; aarch64-*) arch=arm64 ;; esac
  [ -f "$archive" ] || { echo "image.sh: no $archive; no linux/$arch image" >&2; continue; }
  mkdir -p "$scratch/$arch"
  tar -xzf "$archive" -C "$scratch/$arch"
  bin="$scratch/$arch/agent-$version-$target/agent"
  ctr=$("${bh[@]}" from --arch "$arch" --os linux scratch)
  mnt=$("${bh[@]}" mount "$ctr")
  install -m 0755 "$bin" "$mnt/agent"
  mkdir -m 1777 "$mnt/tmp"
  "${bh[@]}" umount "$ctr" >/dev/null
  "${bh[@]}" config --arch "$arch" --os linux --entrypoint '["/agent"]' --cmd '["--help"]' \
    --user 65534:65534 --workingdir / --env TMPDIR=/tmp \
    --label "org.opencontainers.image.title=$image" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.source=https://github.com/OWNER/agent" \
    --label "org.opencontainers.image.licenses=MIT" \
    --label "org.opencontainers.image.description=agent $version, the static binary (/agent) on scratch" \
    "$ctr"
  "${bh[@]}" commit --quiet --format oci --rm "$ctr" "$image:$version-$arch" >/dev/null
  "${bh[@]}" manifest add "$list" "$image:$version-$arch" >/dev/null

  # The check: the image's /agent is the archive's binary, and runs where it can.
  ctr=$("${bh[@]}" from --arch "$arch" "$image:$version-$arch")
  mnt=$("${bh[@]}" mount "$ctr")
  cmp -s "$bin" "$mnt/agent" || { echo "image.sh: linux/$arch: /agent is not the archive's binary" >&2; exit 1; }
  ran="not run here"
  case "$arch-$(uname -m)" in
    amd64-x86_64 | arm64-aarch64) ran=$("$mnt/agent" --version) ;;
    arm64-*) command -v qemu-aarch64 >/dev/null && ran=$(qemu-aarch64 "$mnt/agent" --version) ;;
  esac
  case "$ran" in "agent $version" | "not run here") ;; *) echo "image.sh: linux/$arch: --version said '$ran'" >&2; exit 1 ;; esac
  "${bh[@]}" umount "$ctr" >/dev/null
  "${bh[@]}" rm "$ctr" >/dev/null
  echo "ok $image:$version linux/$arch: /agent = the archive's binary; --version: $ran" >&2
  built+=("linux/$arch")
done
[ ${#built[@]} -gt 0 ] || { echo "image.sh: no linux archive in $rel/v$version" >&2; exit 1; }

platforms=$("${bh[@]}" manifest inspect "$list" \
  | python3 -c 'import json, sys; print(" ".join(sorted(m["platform"]["os"] + "/" + m["platform"]["architecture"] for m in json.load(sys.stdin)["manifests"])))')
want=$(printf '%s\n' "${built[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
[ "$platforms" = "$want" ] || { echo "image.sh: the list has '$platforms', not '$want'" >&2; exit 1; }

if [ -n "$push" ]; then
  for tag in "$version" latest; do
    "${bh[@]}" manifest push --all --format oci --digestfile "$scratch/digest" "$list" "docker://$image:$tag" >&2
  done
  echo "pushed $image:$version and :latest ($platforms), $(cat "$scratch/digest")" >&2
  # The release workflow attests the pushed list by name and digest.
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    { echo "name=$image"; echo "digest=$(cat "$scratch/digest")"; } >> "$GITHUB_OUTPUT"
  fi
else
  mkdir -p "$out"
  rm -f "$out/image.oci.tar"
  "${bh[@]}" manifest push --all --quiet --format oci "$list" "oci-archive:$out/image.oci.tar:$version" >&2
  echo "wrote $out/image.oci.tar: $list ($platforms)" >&2
fi
