#!/usr/bin/env bash
# Checks `agent gitlab` against GitLab's own client and schema:
#
# 1. The route table tests/fixtures/gitlab/routes.json (exactly the calls the mock of the
#    tests accepts) against the requests the official python-gitlab client sends for
#    the same operations, and the body attributes its managers declare
#    (gitlab_record.py; the recording is tests/fixtures/gitlab/python-gitlab-requests.json,
#    GITLAB_RECORD_WRITE=1 rewrites it).
# 2. ci/examples/gitlab-mention.yml and gitlab-review.yml against GitLab's CI JSON
#    schema (app/assets/javascripts/editor/schema/ci.json of gitlab-org/gitlab, as the
#    npm package gitlab-ci-local ships it: its `pattern`s removed), with python
#    jsonschema.
# 3. gitlab-mention.yml's job run by gitlab-ci-local in shell-executor mode, in a fresh
#    project whose origin is a bare repository: the job's rules, variables and script as
#    written (only the release download of before_script is replaced by the built
#    binary on PATH, and `image:` dropped, since gitlab-ci-local runs a job that has one
#    in docker; the model is --replay of ci/interop/gitlab/answer.cassette.jsonl for the
#    model), a trigger pipeline whose TRIGGER_PAYLOAD is tests/fixtures/gitlab/
#    note.issue.json, against gitlab_mock.py (the route table again). The job must pass
#    and leave one progress note, replaced by the answer, with no violation.
#
#     ci/interop/gitlab.sh      # one line per check; exit 1 on a mismatch
#
# Installs python-gitlab, jsonschema and pyyaml into ci/interop/.venv-gitlab and
# gitlab-ci-local into ci/interop/.work/gitlab-ci-local (both gitignored); needs python3,
# node and npm (the registries, the first time), node's headers (its native re2 module
# is built; Debian's nodejs has them in /usr/include/node), rsync (gitlab-ci-local copies
# the project with it) and a built target/debug/agent. gitlab-ci-local 4.56.2 is the
# newest that runs on Node 20 (later ones call Set.prototype.union, Node 22).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$here/.venv-gitlab
work=$here/.work/gitlab-ci-local
pg_version=${PYTHON_GITLAB_VERSION:-8.6.0}
gcl_version=${GITLAB_CI_LOCAL_VERSION:-4.56.2}

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q "python-gitlab==$pg_version" jsonschema pyyaml >&2

write=()
if [ "${GITLAB_RECORD_WRITE:-}" = 1 ]; then write=(--write); fi
status=0
"$venv/bin/python" "$here/gitlab_record.py" \
  "$root/tests/fixtures/gitlab/python-gitlab-requests.json" \
  "$root/tests/fixtures/gitlab/routes.json" "${write[@]}" || status=1

mkdir -p "$work"
pkg=$work/node_modules/gitlab-ci-local
if [ ! -f "$pkg/package.json" ] || ! grep -q "\"version\": \"$gcl_version\"" "$pkg/package.json"; then
  (cd "$work" && npm install --silent --no-audit --no-fund --prefix . "gitlab-ci-local@$gcl_version" >&2)
fi
if [ ! -f "$work/node_modules/re2/build/Release/re2.node" ]; then
  (cd "$work" && npm rebuild --silent re2 >&2)
fi
schema=$work/ci-schema.json
node --input-type=module -e "
import { schema } from '$pkg/src/schema/schema.js';
import { writeFileSync } from 'node:fs';
writeFileSync('$schema', JSON.stringify(schema));
"

"$venv/bin/python" - "$schema" "$root"/ci/examples/gitlab-mention.yml "$root"/ci/examples/gitlab-review.yml <<'PY' || status=1
import json, sys, yaml
from jsonschema import Draft7Validator
schema = json.load(open(sys.argv[1]))
validator = Draft7Validator(schema)
failed = 0
for path in sys.argv[2:]:
    doc = yaml.safe_load(open(path))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    name = path.split("/ci/examples/")[-1]
    if errors:
        failed = 1
        for e in errors:
            print(f"ci.json: {name}: {'/'.join(map(str, e.path))}: {e.message[:200]}")
    else:
        jobs = [k for k, v in doc.items() if isinstance(v, dict) and "script" in v]
        print(f"ci.json: {name}: valid ({', '.join(jobs)})")
    # A job that does not run agent gitlab, or a rule that never matches, is a mistake
    # the schema cannot see.
    for job in [v for v in doc.values() if isinstance(v, dict) and "script" in v]:
        if not any("agent gitlab" in line for line in job["script"]):
            failed = 1
            print(f"{name}: a job without agent gitlab")
sys.exit(failed)
PY

# 3. The mention job under gitlab-ci-local.
agent=$root/target/debug/agent
[ -x "$agent" ] || (cd "$root" && cargo build -q)
run=$(mktemp -d)
trap 'kill "$(cat "$run/mock.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$run"' EXIT
git init -q --bare -b main "$run/origin.git"
mkdir "$run/bin" "$run/proj"
printf '#!/bin/sh\nexec "%s" "$@" --replay "%s"\n' "$agent" "$here/gitlab/answer.cassette.jsonl" > "$run/bin/agent"
chmod +x "$run/bin/agent"
"$venv/bin/python" - "$root/ci/examples/gitlab-mention.yml" "$run/proj/.gitlab-ci.yml" "$run/bin" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc.pop(".install-agent", None)
job = doc["agent-mention"]
job["before_script"] = [f'export PATH="{sys.argv[3]}:$PATH"']
# gitlab-ci-local runs a job with an image in docker; without one, in the shell.
job.pop("image")
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PY
(
  cd "$run/proj"
  echo hello > README.md
  printf '.gitlab-ci-local/\n' > .gitignore
  git init -q -b main
  git add -A
  git -c user.name=t -c user.email=t@t commit -qm init
  git remote add origin "$run/origin.git"
  git push -q origin main
)
token=glpat-interop-token
python3 "$here/gitlab_mock.py" "$root/tests/fixtures/gitlab/routes.json" "$token" "$run/port" "$run/mock.json" &
echo $! > "$run/mock.pid"
for _ in $(seq 50); do [ -s "$run/port" ] && break; sleep 0.1; done
port=$(cat "$run/port")
gcl_status=0
(cd "$run/proj" && "$pkg/../.bin/gitlab-ci-local" --shell-executor-no-image --no-color \
  --variable CI_PIPELINE_SOURCE=trigger \
  --variable TRIGGER_PAYLOAD="$root/tests/fixtures/gitlab/note.issue.json" \
  --variable CI_API_V4_URL="http://127.0.0.1:$port/api/v4" \
  --variable CI_SERVER_URL=https://gitlab.example \
  --variable CI_PROJECT_ID=7 --variable CI_PROJECT_PATH=group/hello \
  --variable CI_JOB_URL=https://gitlab.example/group/hello/-/jobs/1 \
  --variable GITLAB_TOKEN="$token" agent-mention) > "$run/gcl.log" 2>&1 || gcl_status=$?
kill -TERM "$(cat "$run/mock.pid")"
for _ in $(seq 50); do [ -s "$run/mock.json" ] && break; sleep 0.1; done
python3 - "$run/mock.json" "$gcl_status" "$run/gcl.log" <<'PY' || status=1
import json, sys
mock = json.load(open(sys.argv[1]))
log = open(sys.argv[3]).read()
calls = [f"{r['method']} {r['path']}" for r in mock["requests"]]
final = list(mock["notes"].values())[-1] if mock["notes"] else ""
problems = []
if sys.argv[2] != "0":
    problems.append(f"gitlab-ci-local exited {sys.argv[2]}:\n{log[-3000:]}")
problems += [f"violation: {v}" for v in mock["violations"]]
if len(mock["notes"]) != 1:
    problems.append(f"{len(mock['notes'])} notes, not one progress note")
if "nothing to change" not in final or "agent: \u2705 `success`" not in final:
    problems.append(f"the final note is not the answer: {final[:500]}")
for p in problems:
    print(f"gitlab-ci-local: MISMATCH: {p}")
if not problems:
    print(f"gitlab-ci-local: gitlab-mention.yml's job passed; {len(calls)} calls ({', '.join(calls)}); "
          "the note ends with the answer")
sys.exit(1 if problems else 0)
PY
exit $status
