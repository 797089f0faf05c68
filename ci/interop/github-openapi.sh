#!/usr/bin/env bash
# Checks the REST calls of `agent github` against GitHub's own OpenAPI description (the
# npm package @octokit/openapi, the description GitHub publishes): every route of
# tests/fixtures/github/routes.json, the table the mock API of the tests accepts and
# checks each request of the agent against, must be an operation of api.github.com (and
# of the newest GitHub Enterprise Server in the package) with that method and path
# template; its query keys must be parameters of the operation; the body keys it sends
# must be properties of the request body, including every required one; the keys of an
# array's items likewise; and its success status must be a documented response.
#
#     ci/interop/github-openapi.sh      # prints one line per route; exit 1 on a mismatch
#
# Installs @octokit/openapi under ci/interop/.work/octokit-openapi (gitignored); needs
# node and npm (the registry, the first time). OCTOKIT_OPENAPI_VERSION picks the version.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$here/.work/octokit-openapi
version=${OCTOKIT_OPENAPI_VERSION:-23.0.2}
mkdir -p "$work"
pkg=$work/node_modules/@octokit/openapi
if [ ! -f "$pkg/package.json" ] || ! grep -q "\"version\": \"$version\"" "$pkg/package.json"; then
  (cd "$work" && npm install --silent --no-audit --no-fund --prefix . "@octokit/openapi@$version" >&2)
fi

node - "$pkg/generated" "$root/tests/fixtures/github/routes.json" <<'JS'
const fs = require("fs");
const path = require("path");
const [dir, tablePath] = process.argv.slice(2);
const table = JSON.parse(fs.readFileSync(tablePath, "utf8")).routes;
const ghes = fs.readdirSync(dir).filter((f) => /^ghes-[\d.]+\.deref\.json$/.test(f))
  .sort((a, b) => a.localeCompare(b, undefined, { numeric: true })).pop();
const specs = ["api.github.com.deref.json", ghes].map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"))]);

// The schema's properties and required keys, through allOf/oneOf/anyOf.
function shape(schema) {
  const props = new Set(), required = new Set();
  const walk = (s) => {
    if (!s) return;
    Object.keys(s.properties || {}).forEach((k) => props.add(k));
    (s.required || []).forEach((k) => required.add(k));
    [...(s.allOf || []), ...(s.oneOf || []), ...(s.anyOf || [])].forEach(walk);
  };
  walk(schema);
  return { props, required, schema };
}

let failures = 0;
for (const [file, spec] of specs) {
  for (const r of table) {
    const problems = [];
    const op = (spec.paths[r.path] || {})[r.method.toLowerCase()];
    if (!op) {
      problems.push("no such operation");
    } else {
      const params = [...(spec.paths[r.path].parameters || []), ...(op.parameters || [])];
      for (const m of r.path.matchAll(/\{(\w+)\}/g)) {
        if (!params.some((p) => p.in === "path" && p.name === m[1])) problems.push(`path parameter ${m[1]} undocumented`);
      }
      for (const q of r.query || []) {
        if (!params.some((p) => p.in === "query" && p.name === q)) problems.push(`query key ${q} undocumented`);
      }
      const keys = r.keys || [];
      const body = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
      if (keys.length && !body) problems.push("sends a body the operation does not take");
      if (body) {
        const { props, required, schema } = shape(body.schema);
        keys.filter((k) => !props.has(k)).forEach((k) => problems.push(`body key ${k} undocumented`));
        [...required].filter((k) => !(r.required || []).includes(k)).forEach((k) => problems.push(`required body key ${k} not always sent`));
        for (const [field, item] of Object.entries(r.items || {})) {
          const arr = shape(schema).schema.properties[field];
          const it = shape(arr && arr.items);
          item.keys.filter((k) => !it.props.has(k)).forEach((k) => problems.push(`${field}[] key ${k} undocumented`));
          [...it.required].filter((k) => !item.required.includes(k)).forEach((k) => problems.push(`required ${field}[] key ${k} not always sent`));
        }
      }
      if (!(String(r.status) in (op.responses || {}))) problems.push(`status ${r.status} undocumented (${Object.keys(op.responses || {}).join(", ")})`);
    }
    const where = `${file.replace(".deref.json", "")}: ${r.method} ${r.path}`;
    console.log(problems.length ? `FAIL ${where}: ${problems.join("; ")}` : `ok   ${where}${op ? ` (${op.operationId})` : ""}`);
    failures += problems.length ? 1 : 0;
  }
}
console.log(failures ? `${failures} route(s) do not match` : `all ${table.length} routes match both descriptions`);
process.exit(failures ? 1 : 0);
JS
