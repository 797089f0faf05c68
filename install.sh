#!/bin/sh
# Installs the `agent` release binary for this machine, without sudo:
#   curl -fsSL https://raw.githubusercontent.com/OWNER/agent/main/install.sh | sh
#
# Environment:
#   AGENT_VERSION       the version to install (default: the latest release)
#   AGENT_DOWNLOAD_URL  where releases live (default: this repository's GitHub releases);
#                       a version's files are $AGENT_DOWNLOAD_URL/v$VERSION/agent-$VERSION-
#                       <target>.tar.gz, $AGENT_DOWNLOAD_URL/v$VERSION/SHA256SUMS and its
#                       signature SHA256SUMS.minisig, and (for a server other than GitHub)
#                       the latest version is the text of $AGENT_DOWNLOAD_URL/latest
#   AGENT_INSTALL_DIR   where `agent` goes (default: ~/.local/bin)
#   AGENT_BIN_NAME      the installed command's name (default: agent), for a machine where
#                       another program is already called `agent` (Cursor's CLI is)
#   AGENT_FORCE=1       replace an `agent` in AGENT_INSTALL_DIR that is another program
#   AGENT_REQUIRE_SIGNATURE=1  fail when minisign is not installed (default: say so, go on)
#   AGENT_MINISIGN_PUBKEY      the key SHA256SUMS must be signed with (default: the
#                       project's, below; a mirror that re-signs gives its own)
#
# It picks the static musl build on Linux; verifies SHA256SUMS's minisign signature with
# the project's public key when `minisign` is installed (and says that it did not when it
# is not), then the archive's SHA-256 against SHA256SUMS, and fails closed; it never
# replaces an `agent` that is another program; it installs atomically (a rename in the
# install directory, so a failure never leaves a broken `agent`). Exit codes: 0 installed,
# 2 unsupported platform or a bad setting, 3 download failed (HTTP error or no network),
# 4 no checksum for the archive, 5 checksum mismatch, 6 the archive or the install failed,
# 7 a required tool is missing, 8 the signature does not verify (or is missing), 9 the
# install directory's `agent` is another program.
set -eu

repo_releases="https://github.com/OWNER/agent/releases"
download_url=${AGENT_DOWNLOAD_URL:-$repo_releases/download}
download_url=${download_url%/}
install_dir=${AGENT_INSTALL_DIR:-${HOME:-}/.local/bin}
bin_name=${AGENT_BIN_NAME:-agent}
# The project's minisign key (ci/release/names.env MINISIGN_PUBKEY; a test keeps them equal).
project_pubkey="RWSWqGRrpqjO4+Txz/vbm9NKmZjk0H2M6qoOoaTG908YKfufwJvnkvtS"
pubkey=${AGENT_MINISIGN_PUBKEY:-$project_pubkey}

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

case "$bin_name" in
  "" | */* | .*) fail 2 "AGENT_BIN_NAME must be a plain file name, not '$bin_name'" ;;
esac
# SHA256SUMS's signature, with the project's key: a release server (or a man in the
# middle) that swaps an archive must also swap SHA256SUMS, and cannot sign it.
verify_signature() {
  if ! command -v minisign >/dev/null 2>&1; then
    if [ "${AGENT_REQUIRE_SIGNATURE:-}" = 1 ]; then
      fail 7 "AGENT_REQUIRE_SIGNATURE=1 but minisign is not installed (apt-get install minisign, brew install minisign)"
    fi
    say "minisign is not installed: the signature of SHA256SUMS was not checked (the archive's SHA-256 is); install minisign to check it"
    return 0
  fi
  (fetch "$base/SHA256SUMS.minisig" "$tmp/SHA256SUMS.minisig") \
    || fail 8 "no signature for $base/SHA256SUMS (above); minisign is installed, so an unsigned release is refused"
  minisign -V -q -P "$pubkey" -m "$tmp/SHA256SUMS" -x "$tmp/SHA256SUMS.minisig" >"$tmp/minisign.out" 2>&1 \
    || fail 8 "the signature of $base/SHA256SUMS does not verify with the key $pubkey ($(tr '\n' ' ' <"$tmp/minisign.out")); nothing was installed"
  say "signature of SHA256SUMS verified (minisign, key $pubkey)"
}

# Whether FILE is an `agent` of ours (any version): it says `agent X.Y.Z`. Another
# program of that name (Cursor's CLI installs ~/.local/bin/agent) is never replaced.
is_ours() {
  [ -f "$1" ] && [ -x "$1" ] || return 1
  first=$("$1" --version 2>/dev/null </dev/null | head -n 1) || return 1
  case "$first" in
    "agent "[0-9]*) return 0 ;;
    *) return 1 ;;
  esac
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
verify_signature
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

dest="$install_dir/$bin_name"
if [ -e "$dest" ] || [ -L "$dest" ]; then
  if ! is_ours "$dest" && [ "${AGENT_FORCE:-}" != 1 ]; then
    other=$("$dest" --version 2>/dev/null </dev/null | head -n 1 || true)
    fail 9 "$dest is another program (its --version says '${other:-nothing}'), not replaced; install under another name (AGENT_BIN_NAME=ci-coding-agent), into another directory (AGENT_INSTALL_DIR=...), or replace it (AGENT_FORCE=1)"
  fi
fi

mkdir -p "$install_dir" || fail 6 "cannot create $install_dir"
# Copied next to the destination, then renamed over it: the rename is atomic, so `agent`
# is the old binary or the new one, never a partial file.
staged="$install_dir/.agent.install.$$"
cp "$bin" "$staged" || fail 6 "cannot write to $install_dir"
chmod 755 "$staged"
mv -f "$staged" "$dest" || fail 6 "cannot install $dest"
staged=""

say "installed $dest"
"$dest" --version
case ":${PATH:-}:" in
  *":$install_dir:"*)
    # Another `agent` earlier on PATH wins over this one: say which.
    found=$(command -v "$bin_name" 2>/dev/null || true)
    if [ -n "$found" ] && [ "$found" != "$dest" ]; then
      say "note: \`$bin_name\` on PATH is $found, not $dest; run $dest, or put $install_dir first on PATH"
    fi
    ;;
  *) say "note: $install_dir is not on PATH; add it, e.g. export PATH=\"$install_dir:\$PATH\"" ;;
esac
