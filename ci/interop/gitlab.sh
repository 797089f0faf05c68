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
#
#     ci/interop/gitlab.sh      # one line per check; exit 1 on a mismatch
#
# Installs python-gitlab, jsonschema and pyyaml into ci/interop/.venv-gitlab and
# gitlab-ci-local into ci/interop/.work/gitlab-ci-local (both gitignored); needs python3,
# node and npm (the registries, the first time).
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
  # --ignore-scripts: only its schema is used here, not its native modules.
  (cd "$work" && npm install --silent --no-audit --no-fund --ignore-scripts --prefix . "gitlab-ci-local@$gcl_version" >&2)
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
exit $status
