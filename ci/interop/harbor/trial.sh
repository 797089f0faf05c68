#!/usr/bin/env bash
# A real Harbor trial on this machine: Harbor 0.26 runs the two tasks in
# ci/interop/harbor/tasks (one needs a file edited, one a command's output) in Docker, with
# agent installed in each container by the adapter (integrations/harbor) from a local
# release archive (ci/release/local.sh's layout, served over HTTP from the host, checked by
# install.sh against its SHA256SUMS), talking to a loopback model mock
# (ci/interop/harbor/mock_model.py) on the host's Docker bridge address. It prints each
# trial's reward and runs Harbor's validator over each trajectory.json.
#
#     ci/interop/harbor/trial.sh        # as root; AGENT=path skips `cargo build`
#
# Needs what setup.sh installs (run first, idempotent): Docker, the base image, Harbor.
# The release holds the binary built here, packed under the musl target's name that
# install.sh asks for: the base image is the same Debian as this machine, so it runs there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
"$here/setup.sh" >&2
eval "$("$here/setup.sh" env)"
work=$here/../.work/harbor-trial
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
log() { printf 'trial: %s\n' "$*" >&2; }

agent=${AGENT:-}
if [ -z "$agent" ]; then (cd "$root" && cargo build -q); agent=$root/target/debug/agent; fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
target=x86_64-unknown-linux-musl
mkdir -p "$work/tgt/$target/release"
cp "$agent" "$work/tgt/$target/release/agent"
CARGO_TARGET_DIR=$work/tgt AGENT_RELEASE_PREBUILT=1 "$root/ci/release/local.sh" "$work/release" "$target" >&2

host=$(ip -4 addr show docker0 | awk '/inet /{sub(/\/.*/, "", $2); print $2; exit}')
[ -n "$host" ] || { log "no docker0 address"; exit 1; }
rport=${TRIAL_RELEASE_PORT:-18731}
mport=${TRIAL_MODEL_PORT:-18732}
python3 -m http.server "$rport" --bind 0.0.0.0 --directory "$work/release" >"$work/release-server.log" 2>&1 &
rpid=$!
python3 "$here/mock_model.py" "$mport" "$work/mock" >"$work/mock.log" 2>&1 &
mpid=$!
trap 'kill $rpid $mpid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -fsS -o /dev/null "http://$host:$rport/latest" 2>/dev/null && break; sleep 0.2
done

log "harbor run: 2 tasks, agent from http://$host:$rport, model mock on http://$host:$mport"
cd "$work"
PYTHONPATH=$root/integrations/harbor harbor run -y -q \
  -p "$here/tasks" \
  --agent-import-path ci_coding_agent:CiCodingAgent \
  -m anthropic/claude-sonnet-4-5 \
  --base-url "http://$host:$mport" \
  --ae ANTHROPIC_API_KEY=mock-key \
  --ak "download_url=http://$host:$rport" \
  --ak "version=$version" \
  --ak max_turns=10 \
  --allow-agent-host "$host" \
  -n 2 -o "$work/jobs" --job-name trial >&2 || log "harbor run exited $?"

fail=0
for result in "$work"/jobs/trial/*/result.json; do
  dir=$(dirname "$result")
  reward=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); v=(r.get("verifier_result") or {}).get("rewards") or {}; print(v.get("reward"))' "$result")
  traj=$dir/agent/trajectory.json
  if [ -f "$traj" ] && python -m harbor.utils.trajectory_validator "$traj" >/dev/null 2>&1; then valid=valid; else valid=INVALID; fi
  printf '%s reward=%s trajectory=%s\n' "$(basename "$dir")" "$reward" "$valid"
  [ "$reward" = 1 ] || [ "$reward" = 1.0 ] || fail=1
  [ "$valid" = valid ] || fail=1
done
requests=$(wc -l <"$work/mock/requests.jsonl" 2>/dev/null || echo 0)
printf 'model mock requests: %s\n' "$requests"
[ "$requests" -ge 4 ] || fail=1
exit $fail
