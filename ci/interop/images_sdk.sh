#!/usr/bin/env bash
# Images and PDFs on every wire against the official SDKs' request types (images_sdk.py):
# the agent's second request on the Anthropic Messages wire (which Bedrock, Vertex AI and
# Foundry send as is), OpenAI chat completions and the Responses API, holding an attached
# PNG, ReadFile's JPEG, animated GIF, WebP, PDF and mislabelled PNG, and an MCP tool's
# PNG, validated with pydantic against `anthropic`'s and `openai`'s typed params.
# Needs PyPI (installs into a venv); not part of .ci/run.
#
#     ci/interop/images_sdk.sh            # exit 1 if a wire's request is refused
#     ci/interop/images_sdk.sh --print    # also print each request (base64 cut short)
#
# AGENT=path skips `cargo build`; VENV=dir reuses a venv (default ci/interop/.venv-images).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${VENV:-$here/.venv-images}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q anthropic openai pillow
fi
"$venv/bin/pip" list 2>/dev/null | grep -iE '^(anthropic|openai|pydantic|pillow) ' || true
agent=${AGENT:-}
if [ -z "$agent" ]; then
    (cd "$root" && cargo build -q)
    agent=$root/target/debug/agent
fi
server=$(dirname "$agent")/mcp-test-server
"$venv/bin/python" "$here/images_sdk.py" "$agent" "$server" "$@"
