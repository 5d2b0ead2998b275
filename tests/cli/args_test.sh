#!/usr/bin/env bash
# args_test.sh BIN SAMPLES: `run --args DIR` runs an HLO module on given
# arguments, one .npy file per leaf of its parameters (the tupled sample's
# arg_tuple.0 and arg_tuple.1), and its output is what NumPy computes from
# them; a file of the wrong shape is refused naming the leaf.
set -eu
bin=$1; samples=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 - "$dir/args" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d)
rng = np.random.default_rng(13)
for k in range(2):
    np.save(os.path.join(d, "arg_tuple.%d.npy" % k), rng.standard_normal((2, 2)).astype(np.float32))
PY
"$bin" run "$samples/single_device_tupled.hlo" --args "$dir/args" --dump "$dir/out" >/dev/null
/usr/bin/python3 - "$dir" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
a, b = (np.load("%s/args/arg_tuple.%d.npy" % (d, k)) for k in range(2))
out = np.load(d + "/out/output.npy")
if not np.array_equal(out, a + b):
    sys.exit("output %s != a + b %s" % (out, a + b))
# --dump writes the arguments it ran with under the same names.
for k in range(2):
    if not np.array_equal(np.load("%s/out/params/arg_tuple.%d.npy" % (d, k)), (a, b)[k]):
        sys.exit("dumped argument %d differs from the given one" % k)
np.save(d + "/args/arg_tuple.1.npy", np.zeros((3, 2), np.float32))
PY
if msg=$("$bin" run "$samples/single_device_tupled.hlo" --args "$dir/args" 2>&1); then
  echo "a (3,2) file for an f32[2,2] leaf was accepted"; exit 1
fi
grep -q "argument arg_tuple.1: .*holds f32\[3,2\], the parameter needs f32\[2,2\]" <<<"$msg" ||
  { echo "unexpected refusal: $msg"; exit 1; }
echo "ok: given tuple leaves run, output = a + b"
