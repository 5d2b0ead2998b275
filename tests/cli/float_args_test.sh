#!/usr/bin/env bash
# float_args_test.sh BIN: an HLO module with bf16, f16 and f64 parameters
# runs on drawn arguments (not zeros), its summary reads every output type,
# and `run --dump` then `run --args DUMP/params` replays the same run: bf16,
# which NumPy lacks, goes through the f32 files --dump writes for it.
set -eu
bin=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/m.hlo" <<'HLO'
HloModule mixed
ENTRY e {
  a = bf16[4,8] parameter(0)
  b = f16[4,8] parameter(1)
  c = f64[4,8] parameter(2)
  b2 = bf16[4,8] convert(b)
  s = bf16[4,8] add(a, b2)
  c2 = f64[4,8] convert(s)
  ROOT t = (bf16[4,8], f64[4,8]) tuple(s, c2)
}
HLO
"$bin" run "$dir/m.hlo" --dump "$dir/one" > "$dir/one.txt"
"$bin" run "$dir/m.hlo" --args "$dir/one/params" --dump "$dir/two" > "$dir/two.txt"
/usr/bin/python3 - "$dir" <<'PY'
import re, sys
import numpy as np
d = sys.argv[1]
one, two = (open("%s/%s.txt" % (d, k)).read() for k in ("one", "two"))
sums = re.findall(r"output \d+: +\S+ +sum=(\S+)", one)
if len(sums) != 2 or float(sums[0]) == 0.0:
    sys.exit("expected a non-zero sum for both outputs:\n" + one)
if sums != re.findall(r"output \d+: +\S+ +sum=(\S+)", two):
    sys.exit("the replay's outputs differ:\n%s\n%s" % (one, two))
a = np.load(d + "/one/params/a.npy")   # bf16 written as its f32 values
b = np.load(d + "/one/params/b.npy")
c = np.load(d + "/one/params/c.npy")
if a.dtype != np.float32 or b.dtype != np.float16 or c.dtype != np.float64:
    sys.exit("dumped dtypes %s %s %s" % (a.dtype, b.dtype, c.dtype))
if not (np.abs(a).max() > 0 and np.abs(b).max() > 0 and np.abs(c).max() > 0):
    sys.exit("a drawn float argument is all zeros")
# bf16 values: the low 16 bits of their f32 pattern are zero.
if np.any(a.view(np.uint32) & 0xFFFF):
    sys.exit("the bf16 argument holds values bf16 cannot")
for k in ("a", "b", "c"):
    if not np.array_equal(np.load("%s/one/params/%s.npy" % (d, k)),
                          np.load("%s/two/params/%s.npy" % (d, k))):
        sys.exit("replayed argument %s differs" % k)
PY
echo ok
