#!/usr/bin/env bash
# Signs a release directory's SHA256SUMS with minisign (DIR/v<version>/SHA256SUMS.minisig,
# what install.sh verifies), then checks the signature with the public key install.sh
# carries, so a release signed with any other key (a rotated secret, a wrong secret)
# fails here instead of on every user's machine.
#   ci/release/sign.sh DIR
# Environment: MINISIGN_SECRET_KEY (the secret key file's text: the release workflow's
# secret) or MINISIGN_SECRET_KEY_FILE (a file); the key has no password (`minisign -G -W`).
# MINISIGN_PUBKEY overrides names.env's key (the tests sign with a key of their own).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
want_pubkey=${MINISIGN_PUBKEY:-}
# shellcheck source=names.env
. "$here/names.env"
[ -n "$want_pubkey" ] && MINISIGN_PUBKEY=$want_pubkey
[ $# -eq 1 ] || { echo "usage: ci/release/sign.sh DIR" >&2; exit 2; }
command -v minisign >/dev/null 2>&1 || { echo "sign.sh: minisign is not installed" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
sums="$1/v$version/SHA256SUMS"
[ -f "$sums" ] || { echo "sign.sh: no $sums" >&2; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
key=${MINISIGN_SECRET_KEY_FILE:-}
if [ -z "$key" ]; then
  [ -n "${MINISIGN_SECRET_KEY:-}" ] || { echo "sign.sh: set MINISIGN_SECRET_KEY or MINISIGN_SECRET_KEY_FILE" >&2; exit 1; }
  key="$scratch/minisign.key"
  (umask 077 && printf '%s\n' "$MINISIGN_SECRET_KEY" > "$key")
fi
minisign -S -s "$key" -m "$sums" -x "$sums.minisig" \
  -t "agent $version SHA256SUMS" </dev/null >&2
minisign -V -q -P "$MINISIGN_PUBKEY" -m "$sums" -x "$sums.minisig" \
  || { echo "sign.sh: the signature does not verify with names.env's MINISIGN_PUBKEY ($MINISIGN_PUBKEY): wrong secret key?" >&2; exit 1; }
echo "signed $sums (key $MINISIGN_PUBKEY)" >&2
