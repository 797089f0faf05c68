#!/usr/bin/env bash
# Harbor's own ATIF validator (`python -m harbor.utils.trajectory_validator`, PyPI
# `harbor`, Python 3.12) over every trajectory agent writes in the integration suite (the
# end, --timeout, SIGTERM, a converted SIGKILLed run, sub-agents, a clearing, a
# verification round, structured output, agent batch, each shipped cassette), and over
# `agent export atif` of each previous-release transcript in tests/fixtures/transcripts.
#
#     ci/interop/atif.sh          # exit 1 if any trajectory is refused
#
# The Python environment is ci/interop/harbor/setup.sh's (`setup.sh venv`: no Docker).
# Not part of .ci/run: it needs PyPI. AGENT=path skips `cargo build`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
"$here/harbor/setup.sh" venv
py=${HARBOR_LOCAL_DIR:-${TMPDIR:-/tmp}/agent-harbor-local}/venv/bin/python
dir=$here/.work/atif
rm -rf "$dir" && mkdir -p "$dir"
cd "$root"
AGENT_ATIF_DIR=$dir cargo test -q --test integration atif:: >&2
agent=${AGENT:-$root/target/debug/agent}
for t in tests/fixtures/transcripts/*.json; do
  name=$(basename "$t" .json)
  # killed.sessions.json is the --continue index, not a transcript.
  [ "$name" = killed.sessions ] && continue
  "$agent" export atif "$t" -o "$dir/previous-release-$name.json"
done
pass=0 fail=0
for f in "$dir"/*.json; do
  if out=$("$py" -m harbor.utils.trajectory_validator "$f" 2>&1); then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); printf 'REFUSED %s\n%s\n' "$f" "$out"
  fi
done
# The oracle can fail: a copy with its first step renumbered must be refused.
"$py" - "$dir/finished.json" "$here/.work/atif-broken.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); t["steps"][0]["step_id"] = 7
json.dump(t, open(sys.argv[2], "w"))
PY
if "$py" -m harbor.utils.trajectory_validator "$here/.work/atif-broken.json" >/dev/null 2>&1; then
  echo "the validator accepted a broken trajectory: it checks nothing"; fail=$((fail + 1))
fi
echo "harbor trajectory_validator: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
