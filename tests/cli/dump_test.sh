#!/usr/bin/env bash
# dump_test.sh BIN MODEL: `run --dump` writes input, output and one file per
# parameter, each a valid .npy file.
set -eu
bin=$1; model=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
"$bin" run "$model" --dump "$dir/out" >/dev/null
for f in input.npy output.npy; do
  [ -s "$dir/out/$f" ] || { echo "missing $f"; exit 1; }
  head -c 6 "$dir/out/$f" | grep -q NUMPY || { echo "$f is not .npy"; exit 1; }
done
n=$(ls "$dir/out/params" | wc -l)
[ "$n" -gt 0 ] || { echo "no parameter files"; exit 1; }
ls "$dir/out/params" | grep -q '^layers\.0\.' || { echo "parameters not named by state_dict"; exit 1; }
echo "ok: $n parameter files"
