#!/usr/bin/env bash
# whatif_test.sh HLOSCOPE SOURCE_DIR: `hloscope whatif` on a decoder dumped
# unrolled by hloscope itself (compile --emit hlo --stage traced): its 50
# layers reroll into one while, bit-identical when run; --rerolled writes
# HLO text that `compile` accepts with the instruction count the JSON
# gave; --emit text; bad options exit 2.
set -eu
bin=$1; src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" compile "$src/examples/decoder_50x256.json" --loop unrolled --emit hlo \
    --stage traced > "$dir/decoder.hlo" 2>/dev/null
grep -q ' while(' "$dir/decoder.hlo" && fail "the dump is not unrolled"

"$bin" whatif "$dir/decoder.hlo" --rerolled "$dir/rerolled.hlo" > "$dir/w.json"
/usr/bin/python3 - "$dir/w.json" <<'PY' || exit 1
import json, sys
w = json.load(open(sys.argv[1]))
r, s = w["repeats"][0], w["scan"]
assert r["count"] == 50 and r["path"] == "layers.*", r
assert s["analysed"] and s["equivalent"] is True, s
assert s["instructions_after"] * 10 < s["instructions_before"], s
assert set(w) >= {"repeats", "scan", "offload", "sharding"}, list(w)
open(sys.argv[1] + ".after", "w").write(str(s["instructions_after"]))
PY
[ "$(grep -c ' while(' "$dir/rerolled.hlo")" = 1 ] || fail "the rerolled module has one while"
"$bin" compile "$dir/rerolled.hlo" --emit json > "$dir/c.json" 2>/dev/null
/usr/bin/python3 -c "
import json, sys
c = json.load(open('$dir/c.json'))
assert c['instructions']['traced'] == int(open('$dir/w.json.after').read()), c['instructions']
" || fail "the rerolled module compiles with the count the what-if gave"

"$bin" whatif "$dir/decoder.hlo" --no-run --emit text > "$dir/w.txt"
grep -q 'reroll as scan (layers\.\*)' "$dir/w.txt" || fail "text summary: $(cat "$dir/w.txt")"
grep -q 'instructions  3757 -> ' "$dir/w.txt" || fail "text counts: $(cat "$dir/w.txt")"

set +e
"$bin" whatif "$dir/decoder.hlo" --emit svg > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "--emit svg exits 2, not $rc"
"$bin" whatif "$dir/decoder.hlo" --device tpu-v99 > /dev/null 2>&1; rc=$?
[ $rc = 2 ] || fail "an unknown device exits 2, not $rc"
"$bin" whatif --help | grep -q -- '--budget BYTES' || fail "--help lists --budget"
echo ok
