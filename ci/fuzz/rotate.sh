#!/usr/bin/env bash
# Long fuzzing on a shared machine: one target at a time, the one with the least time in
# ci/fuzz/ledger.tsv first, SECONDS per turn, until the UTC time UNTIL (HH:MM), under
# `nice -n 19`. Runs the binaries `ci/fuzz/run.sh` (or `cargo fuzz build`) left in
# fuzz/target, without building: rebuilding is a separate step, so editing the sources
# while this runs cannot stop it; a rebuilt binary is picked up at its next turn.
#
#   ci/fuzz/rotate.sh 300 23:30            every target in turn, 5 minutes a turn
#   ci/fuzz/rotate.sh 300 23:30 html paths only these
#
# Each turn appends a ledger line (date, target, seconds run, executions, crashes, CPU
# seconds; the lines before 2026-12-07T22 have no CPU column: ci/fuzz/run.sh's). A crash
# leaves its input in fuzz/artifacts/TARGET/ and the target out of later turns: fix it,
# copy the input to fuzz/corpus/TARGET/crash-NAME, rebuild, run again.
set -uo pipefail
cd "$(dirname "$0")/../.."
per=${1:?usage: $0 SECONDS_PER_TURN UNTIL_HH:MM [TARGET...]}
until_hm=${2:?usage: $0 SECONDS_PER_TURN UNTIL_HH:MM [TARGET...]}
shift 2
bin=fuzz/target/x86_64-unknown-linux-gnu/release
end=$(date -u -d "$until_hm" +%s)
crashed=()

# Seconds in the ledger for a target.
spent() { awk -F'\t' -v t="$1" '$2 == t { s += $3 } END { print s + 0 }' ci/fuzz/ledger.tsv; }

while :; do
  now=$(date -u +%s)
  left=$((end - now))
  [ "$left" -ge 30 ] || break
  if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cd fuzz/fuzz_targets && ls -- *.rs | sed 's/\.rs$//'); fi
  best=
  for t in "${targets[@]}"; do
    [ -x "$bin/$t" ] || continue
    case " ${crashed[*]-} " in *" $t "*) continue ;; esac
    if [ -z "$best" ] || [ "$(spent "$t")" -lt "$(spent "$best")" ]; then best=$t; fi
  done
  [ -n "$best" ] || { echo "no target left to run" >&2; break; }
  secs=$((per < left ? per : left))
  mkdir -p "fuzz/work/$best" "fuzz/artifacts/$best"
  log=fuzz/work/$best.log
  start=$(date -u +%s)
  echo "-- $(date -u +%T) $best ${secs}s (had $(spent "$best")s)"
  # CPU seconds too: on a shared machine a niced fuzzer gets a fraction of its wall time.
  TIMEFORMAT='%U %S'
  cpu=$( { time nice -n 19 "$bin/$best" "fuzz/work/$best" "fuzz/corpus/$best" \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$best/" >"$log" 2>&1; echo "rc $?" >"$log.rc"; } 2>&1 )
  rc=$(cut -d' ' -f2 "$log.rc")
  cpu=$(echo "$cpu" | awk '{ printf "%d", $1 + $2 }')
  ran=$(($(date -u +%s) - start))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)
  [ -n "$runs" ] || runs=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -n 1)
  crashes=0
  if [ $rc -ne 0 ]; then
    crashes=1
    crashed+=("$best")
    echo "   CRASH (exit $rc):" >&2
    grep -E 'panicked|ERROR|Test unit written|SUMMARY' "$log" | head -n 20 >&2
  fi
  echo "   ${ran}s (${cpu} s CPU), ${runs:-0} executions, exit $rc"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$best" "$ran" "${runs:-0}" "$crashes" "$cpu" >> ci/fuzz/ledger.tsv
done
echo "== stopped at $(date -u +%T); crashed: ${crashed[*]:-none}"
