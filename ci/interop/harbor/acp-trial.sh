#!/usr/bin/env bash
# Harbor's own ACP agent drives `agent acp` through a real trial on this machine: Harbor 0.26
# runs the edit-file task of ci/interop/harbor/tasks in Docker with its stock ACP runner
# (acp_runner.py on the official Python SDK), agent given as a local distribution through
# `registry_entry_path`, `-m anthropic/claude-sonnet-4-5`, and a loopback model mock
# (mock_model.py) on the host's Docker bridge address. It prints the reward and runs Harbor's
# validator over the trajectory.json Harbor wrote from the ACP session updates.
#
#     ci/interop/harbor/acp-trial.sh        # as root; AGENT=path skips `cargo build`
#
# One step of Harbor's agent is replaced (ci/interop/harbor/acp_local.py, a small subclass,
# hence --agent-import-path instead of --agent acp): the stock install step downloads uv and a
# Python from the internet to build the runner's environment; here Debian's python3 and the SDK's
# wheels downloaded on the host with pip are used. The subclass also uploads the agent binary
# (checked by SHA-256) to the local distribution's path.
# Needs what setup.sh installs (run first, idempotent): Docker, the base image, Harbor.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
"$here/setup.sh" >&2
eval "$("$here/setup.sh" env)"
work=$here/../.work/harbor-acp-trial
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
log() { printf 'acp-trial: %s\n' "$*" >&2; }

agent=${AGENT:-}
if [ -z "$agent" ]; then (cd "$root" && cargo build -q); agent=$root/target/debug/agent; fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)

# The runner's SDK for the container's Python (Debian bookworm: 3.11), as wheels.
mkdir -p "$work/wheels"
pip=$(dirname "$(command -v harbor)")/pip
"$pip" download -q agent-client-protocol==0.12.1 --only-binary=:all: --python-version 3.11 \
  --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$work/wheels" >&2

host=$(ip -4 addr show docker0 | awk '/inet /{sub(/\/.*/, "", $2); print $2; exit}')
[ -n "$host" ] || { log "no docker0 address"; exit 1; }
mport=${TRIAL_MODEL_PORT:-18742}
mkdir -p "$work/mock"
python3 "$here/mock_model.py" "$mport" "$work/mock" >"$work/mock.log" 2>&1 &
mpid=$!
trap 'kill $mpid 2>/dev/null || true' EXIT

# The ACP registry entry (the format of agentclientprotocol/registry): agent as a local command.
# The run flag --model names the model Harbor's -m asks for, so that the session's `model`
# config option offers it and the runner's session/set_config_option is accepted.
cat >"$work/agent.json" <<EOF
{
  "id": "agent",
  "name": "agent",
  "version": "$version",
  "description": "A coding agent for CI, over the Agent Client Protocol",
  "distribution": {
    "local": {
      "cmd": "/opt/agent/bin/agent",
      "args": ["acp", "--acp-permissions", "allow-all", "--", "--full-auto", "--model", "claude-sonnet-4-5", "--max-turns", "10"],
      "env": {"ANTHROPIC_BASE_URL": "http://$host:$mport"}
    }
  }
}
EOF

log "harbor run: edit-file with Harbor's ACP agent, agent from $agent, model mock on http://$host:$mport"
cd "$work"
HARBOR_ACP_WHEELS=$work/wheels HARBOR_ACP_AGENT_BINARY=$agent \
HARBOR_ACP_AGENT_SHA256=$(sha256sum "$agent" | cut -d' ' -f1) \
PYTHONPATH=$here harbor run -y -q \
  -p "$here/tasks" -i edit-file \
  --agent-import-path acp_local:LocalAcpAgent \
  -m anthropic/claude-sonnet-4-5 \
  --ae ANTHROPIC_API_KEY=mock-key \
  --ak "registry_entry_path=$work/agent.json" \
  --ak distribution_preference=local \
  -n 1 -o "$work/jobs" --job-name acp-trial >&2 || log "harbor run exited $?"

fail=0
found=0
for result in "$work"/jobs/acp-trial/*/result.json; do
  [ -f "$result" ] || continue
  found=1
  dir=$(dirname "$result")
  reward=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); v=(r.get("verifier_result") or {}).get("rewards") or {}; print(v.get("reward"))' "$result")
  traj=$dir/agent/trajectory.json
  if [ -f "$traj" ] && python -m harbor.utils.trajectory_validator "$traj" >/dev/null 2>&1; then valid=valid; else valid=INVALID; fi
  model=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s.get("resolved_session_model_id"), s.get("prompt_response", {}).get("stopReason"))' "$dir/agent/acp-summary.json" 2>/dev/null || echo "no summary")
  printf '%s reward=%s trajectory=%s model,stop=%s\n' "$(basename "$dir")" "$reward" "$valid" "$model"
  [ "$reward" = 1 ] || [ "$reward" = 1.0 ] || fail=1
  [ "$valid" = valid ] || fail=1
done
[ "$found" = 1 ] || { log "no trial result"; fail=1; }
requests=$(wc -l <"$work/mock/requests.jsonl" 2>/dev/null || echo 0)
printf 'model mock requests: %s\n' "$requests"
[ "$requests" -ge 2 ] || fail=1
exit $fail
