#!/usr/bin/env bash
# The figures of ci/fuzz/ledger.tsv per target, as the Markdown table docs/security.md
# quotes: wall seconds, CPU seconds (where recorded), executions, crashes, and how far each
# target is from the 30 minutes the issue asks.
#
#   ci/fuzz/ledger.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=$(cd fuzz/fuzz_targets && ls -- *.rs | sed 's/\.rs$//')
awk -F'\t' -v targets="$targets" '
  NR == 1 { next }
  { s[$2] += $3; e[$2] += $4; c[$2] += $5; cpu[$2] += $6; if ($6 != "") withcpu[$2] += $3 }
  END {
    n = split(targets, t, "\n")
    print "| target | seconds | CPU seconds (of the seconds recorded with it) | executions | crashes | to 30 min |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
      k = t[i]; left = 1800 - s[k]; if (left < 0) left = 0
      printf "| `%s` | %d | %d (of %d) | %d | %d | %d s |\n", k, s[k], cpu[k], withcpu[k], e[k], c[k], left
      S += s[k]; E += e[k]; C += c[k]; CPU += cpu[k]
    }
    printf "| **%d targets** | **%d** | **%d** | **%d** | **%d** | |\n", n, S, CPU, E, C
  }' ci/fuzz/ledger.tsv
