#!/usr/bin/env bash
# The Harbor adapter (integrations/harbor/ci_coding_agent.py) tested with Harbor's own
# classes (ci/interop/harbor/test_adapter.py, pytest in Harbor's Python 3.12 environment
# from setup.sh venv): commands rendered for an environment object, the connection/MCP/
# skills mapping, populate_context_post_run on a real output directory. No Docker.
#
#     ci/interop/harbor/adapter.sh        # AGENT=path skips `cargo build`
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
"$here/setup.sh" venv
venv=${HARBOR_LOCAL_DIR:-${TMPDIR:-/tmp}/agent-harbor-local}/venv
"$venv/bin/python" -m pytest --version >/dev/null 2>&1 || "$venv/bin/pip" install -q pytest
if [ -z "${AGENT:-}" ]; then (cd "$root" && cargo build -q); fi
cd "$root"
LITELLM_LOCAL_MODEL_COST_MAP=True "$venv/bin/python" -m pytest -q ci/interop/harbor/test_adapter.py
