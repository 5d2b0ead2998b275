#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ with clang (ASan+UBSan,
# build-fuzz/) and runs each for SECONDS, one after the other, one job each
# (docs/FUZZING.md).
#   scripts/fuzz.sh [SECONDS] [HARNESS...]   default: 60 s, all four
#   FUZZ_RUNS=N scripts/fuzz.sh ...          also stop a harness after N inputs
# The growing corpus is kept in build-fuzz/corpus/<harness>/ (the seeds in
# tests/fuzz/corpus/ are read, never written); a crash, leak, timeout or
# broken invariant is written to build-fuzz/findings/<harness>/ and makes
# the script fail once every harness has run. Save a finding as
# tests/fuzz/regressions/<harness>/<name> so that CTest replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(hlo_text model run router)

# Debian 12's clang 14 and its sanitizer and libFuzzer runtimes.
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "fuzz: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
bash scripts/deps.sh

dir=build-fuzz
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DHS_FUZZ=ON -DHS_BENCH=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$dir" -j2 --target "${targets[@]}"

src=tests/fuzz
cat "$src/json.dict" "$src/http.dict" > "$dir/router.dict"
dict_of() {
  case "$1" in
    hlo_text|run) echo "$src/hlo.dict" ;;
    model) echo "$src/json.dict" ;;
    router) echo "$dir/router.dict" ;;
  esac
}
max_len_of() {
  case "$1" in
    model) echo 4096 ;;
    *) echo 8192 ;;
  esac
}

failed=()
summary="$dir/fuzz-summary.txt"
: > "$summary"
for h in "${harnesses[@]}"; do
  mkdir -p "$dir/corpus/$h" "$dir/findings/$h"
  log="$dir/fuzz-$h.log"
  echo "== fuzz_$h for ${secs}s (log $log)"
  rc=0
  "$dir/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
      -max_len="$(max_len_of "$h")" -dict="$(dict_of "$h")" -print_final_stats=1 \
      ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} \
      -artifact_prefix="$dir/findings/$h/" "$dir/corpus/$h" "$src/corpus/$h" \
      >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  line="fuzz_$h: ${execs:-?} executions in ${took:-$secs}s (${rate:-?}/s), corpus $(ls "$dir/corpus/$h" | wc -l) files, exit $rc"
  echo "$line" | tee -a "$summary"
  if [ "$rc" -ne 0 ]; then
    failed+=("$h")
    grep -E 'ERROR|invariant broken|SUMMARY|Test unit written' "$log" | head -20 || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (inputs in $dir/findings/)" >&2
  exit 1
fi
