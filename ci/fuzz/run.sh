#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ (issue 43) from its committed corpus.
#
#   ci/fuzz/run.sh            replay each corpus once (what .ci/run does): no new inputs
#   ci/fuzz/run.sh 300        fuzz each target 300 seconds, one core, one after another
#   ci/fuzz/run.sh 300 html   only the targets named
#   (hours on a shared machine: ci/fuzz/rotate.sh, one target at a time under nice)
#
# Installs the nightly toolchain and cargo-fuzz when missing. New inputs the fuzzer finds
# go to fuzz/work/TARGET (not committed); a crash is saved under fuzz/artifacts/TARGET and
# fails the script: fix it, then copy the input to fuzz/corpus/TARGET/crash-NAME, where
# `cargo test` (src/fuzzing_tests.rs) replays it on stable from then on. Each timed run
# appends a line to ci/fuzz/ledger.tsv (date, target, seconds, executions, crashes), the
# figures docs/security.md quotes.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-0}
shift || true
case "$seconds" in '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;; esac

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "== installing the nightly toolchain (cargo-fuzz needs -Zsanitizer)"
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd fuzz/fuzz_targets && ls -- *.rs | sed 's/\.rs$//')
fi

# Optimised, with debug assertions (an overflow is a crash, as in a debug build), without
# AddressSanitizer: the parsers are safe Rust, and without it each execution is about twice
# as fast and the build shorter. FUZZ_BUILD overrides (e.g. FUZZ_BUILD="-O" for ASan).
read -r -a build <<< "${FUZZ_BUILD:--O -a -s none}"
echo "== building the fuzz targets (nightly: cargo fuzz build ${build[*]})"
if [ $# -eq 0 ]; then
  (cd fuzz && cargo +nightly fuzz build "${build[@]}")
else
  for t in "${targets[@]}"; do (cd fuzz && cargo +nightly fuzz build "${build[@]}" "$t"); done
fi

failed=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
  log=$(mktemp)
  if [ "$seconds" = 0 ]; then
    args=(-runs=0)
  else
    args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1)
  fi
  echo "-- $t"
  set +e
  (cd fuzz && cargo +nightly fuzz run "${build[@]}" "$t" "work/$t" "corpus/$t" -- "${args[@]}") >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1 || true)
  [ -n "$runs" ] || runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' | tail -n 1 || true)
  crashes=0
  if [ $rc -ne 0 ]; then
    crashes=1
    failed+=("$t")
    grep -E 'panicked|ERROR|Test unit written|SUMMARY' "$log" | head -n 20 || true
  fi
  echo "   exit $rc, ${runs:-?} executions"
  if [ "$seconds" != 0 ]; then
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$seconds" "${runs:-0}" "$crashes" >> ci/fuzz/ledger.tsv
  fi
  rm -f "$log"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "crashed: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
  exit 1
fi
echo "== every target ran clean"
