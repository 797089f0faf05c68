#!/usr/bin/env bash
# The cloud providers' oracles (issue 22), against the official clients: botocore's
# SigV4Auth on the signing cases of tests/fixtures/sigv4/botocore.json, and, per
# provider, the request `agent` sends next to the one the Python SDK's AnthropicBedrock
# (AnthropicVertex, AnthropicFoundry) sends for the same input, both captured by one
# loopback server. Needs PyPI (installs into a scratch venv); not part of .ci/run.
#
#     ci/interop/cloud_sdk.sh            # exit 1 if any check failed
#     ci/interop/cloud_sdk.sh --write    # regenerate the botocore signatures
#
# AGENT=path skips `cargo build`; VENV=dir reuses a venv; ANTHROPIC_SDK_VERSION pins.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${VENV:-$(mktemp -d)/venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "anthropic${ANTHROPIC_SDK_VERSION:+==$ANTHROPIC_SDK_VERSION}" botocore boto3 google-auth
fi
"$venv/bin/pip" list 2>/dev/null | grep -iE '^(anthropic|botocore|boto3|google-auth) ' || true
agent=${AGENT:-}
if [ -z "$agent" ]; then
    (cd "$root" && cargo build -q)
    agent=$root/target/debug/agent
fi
status=0
"$venv/bin/python" "$here/cloud_sdk.py" sigv4 "$root/tests/fixtures/sigv4/botocore.json" "$@" || status=1
(cd "$here" && "$venv/bin/python" cloud_sdk.py requests "$agent") || status=1
exit $status
