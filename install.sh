#!/bin/sh
# Installs the `agent` release binary for this machine, without sudo:
#   curl -fsSL https://raw.githubusercontent.com/OWNER/agent/main/install.sh | sh
#
# Environment:
#   AGENT_VERSION       the version to install (default: the latest release)
#   AGENT_DOWNLOAD_URL  where releases live (default: this repository's GitHub releases);
#                       a version's files are $AGENT_DOWNLOAD_URL/v$VERSION/agent-$VERSION-
#                       <target>.tar.gz and $AGENT_DOWNLOAD_URL/v$VERSION/SHA256SUMS, and
#                       (for a server other than GitHub) the latest version is the text of
#                       $AGENT_DOWNLOAD_URL/latest
#   AGENT_INSTALL_DIR   where `agent` goes (default: ~/.local/bin)
#
# It picks the static musl build on Linux; verifies the archive's SHA-256 against
# SHA256SUMS and fails closed; installs atomically (a rename in the install directory, so
# a failure never leaves a broken `agent`). Exit codes: 0 installed, 2 unsupported
# platform, 3 download failed (HTTP error or no network), 4 no checksum for the archive,
# 5 checksum mismatch, 6 the archive or the install failed, 7 a required tool is missing.
set -eu

repo_releases="https://github.com/OWNER/agent/releases"
download_url=${AGENT_DOWNLOAD_URL:-$repo_releases/download}
download_url=${download_url%/}
install_dir=${AGENT_INSTALL_DIR:-${HOME:-}/.local/bin}

fail() {
  code=$1
  shift
  echo "install.sh: error: $*" >&2
  exit "$code"
}

say() {
  echo "install.sh: $*" >&2
}

# The release target of this machine: the musl build on Linux, either Mac's build.
detect_target() {
  os=$(uname -s 2>/dev/null || echo unknown)
  arch=$(uname -m 2>/dev/null || echo unknown)
  case "$os" in
    Linux) os_part=unknown-linux-musl ;;
    Darwin)
      os_part=apple-darwin
      # An x86_64 shell under Rosetta on an Apple silicon Mac: take the native build.
      if [ "$arch" = x86_64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then
        arch=arm64
      fi
      ;;
    *) fail 2 "unsupported operating system: $os (releases exist for Linux and macOS; build from source with cargo install)" ;;
  esac
  case "$arch" in
    x86_64 | amd64) arch_part=x86_64 ;;
    aarch64 | arm64) arch_part=aarch64 ;;
    *) fail 2 "unsupported architecture: $arch on $os (releases exist for x86_64 and aarch64; build from source with cargo install)" ;;
  esac
  echo "$arch_part-$os_part"
}

# fetch URL FILE: downloads URL to FILE; an HTTP error or a failed connection exits 3.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    status=$(curl -sSL --proto '=http,https' --retry 2 -o "$2" -w '%{http_code}' "$1" 2>"$tmp/curl.err") || {
      fail 3 "cannot download $1: $(cat "$tmp/curl.err")"
    }
    case "$status" in
      2??) ;;
      *) fail 3 "cannot download $1: HTTP $status" ;;
    esac
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" 2>"$tmp/wget.err" || {
      fail 3 "cannot download $1: HTTP error or no connection (wget exit $?)"
    }
  else
    fail 7 "neither curl nor wget is installed"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1
  else
    fail 7 "no SHA-256 tool (sha256sum, shasum or openssl) to verify the download"
  fi
}

# The latest version: GitHub redirects releases/latest to .../tag/vX.Y.Z; another
# server says it in a file named `latest`.
latest_version() {
  if [ -z "${AGENT_DOWNLOAD_URL:-}" ]; then
    command -v curl >/dev/null 2>&1 || fail 7 "curl is needed to find the latest release (or set AGENT_VERSION)"
    url=$(curl -sSLI -o /dev/null -w '%{url_effective}' "$repo_releases/latest") \
      || fail 3 "cannot find the latest release at $repo_releases/latest"
    v=${url##*/tag/}
    [ "$v" != "$url" ] || fail 3 "cannot find the latest release at $repo_releases/latest (no release yet?)"
  else
    fetch "$download_url/latest" "$tmp/latest"
    v=$(head -n 1 "$tmp/latest" | tr -d ' \r\t')
  fi
  echo "${v#v}"
}

target=$(detect_target)
tmp=$(mktemp -d 2>/dev/null || mktemp -d -t agent-install)
staged=""
cleanup() {
  rm -rf "$tmp"
  if [ -n "$staged" ]; then rm -f "$staged"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

version=${AGENT_VERSION:-}
version=${version#v}
if [ -z "$version" ] || [ "$version" = latest ]; then
  version=$(latest_version)
  [ -n "$version" ] || fail 3 "the latest release has no version"
fi

archive="agent-$version-$target.tar.gz"
base="$download_url/v$version"
say "downloading agent $version for $target from $base"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS"
fetch "$base/$archive" "$tmp/$archive"

want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/SHA256SUMS")
[ -n "$want" ] || fail 4 "$base/SHA256SUMS has no checksum for $archive; refusing to install an unverified binary"
got=$(sha256_of "$tmp/$archive")
[ "$(echo "$want" | tr 'A-F' 'a-f')" = "$got" ] \
  || fail 5 "checksum mismatch for $archive: SHA256SUMS says $want, the download is $got; nothing was installed"

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" || fail 6 "cannot unpack $archive"
bin="$tmp/x/agent-$version-$target/agent"
[ -f "$bin" ] || fail 6 "$archive holds no agent-$version-$target/agent"
chmod 755 "$bin"
"$bin" --version >/dev/null 2>&1 || fail 6 "the downloaded agent does not run on this machine ($target)"

mkdir -p "$install_dir" || fail 6 "cannot create $install_dir"
# Copied next to the destination, then renamed over it: the rename is atomic, so `agent`
# is the old binary or the new one, never a partial file.
staged="$install_dir/.agent.install.$$"
cp "$bin" "$staged" || fail 6 "cannot write to $install_dir"
chmod 755 "$staged"
mv -f "$staged" "$install_dir/agent" || fail 6 "cannot install $install_dir/agent"
staged=""

say "installed $install_dir/agent"
"$install_dir/agent" --version
case ":${PATH:-}:" in
  *":$install_dir:"*) ;;
  *) say "note: $install_dir is not on PATH; add it, e.g. export PATH=\"$install_dir:\$PATH\"" ;;
esac
