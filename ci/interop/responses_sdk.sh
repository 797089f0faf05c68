#!/usr/bin/env bash
# The differential check of the Responses stream decoder against the official `openai`
# Python SDK (ci/interop/responses_sdk.py): seeded random streams, the SDK's
# `client.responses.stream` accumulation against what `agent --replay` decodes. Needs
# PyPI (it installs `openai` into a venv in a scratch directory), so it is not part of
# .ci/run; cargo test covers the decoder offline.
#
#     ci/interop/responses_sdk.sh [STREAMS] [SEED]    # exit 1 if any stream differs
#
# OPENAI_SDK_VERSION pins the SDK (default: the newest); AGENT=path skips `cargo build`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/agent-responses-sdk.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

python=${PYTHON:-python3}
"$python" -m venv "$scratch/venv"
spec=openai${OPENAI_SDK_VERSION:+==$OPENAI_SDK_VERSION}
"$scratch/venv/bin/pip" install --quiet --disable-pip-version-check "$spec"

agent=${AGENT:-}
if [ -z "$agent" ]; then
    cargo build --quiet --manifest-path "$root/Cargo.toml" --bin agent
    agent=$root/target/debug/agent
fi
"$scratch/venv/bin/python" "$here/responses_sdk.py" "$agent" "${1:-200}" "${2:-20261201}"
