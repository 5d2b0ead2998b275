#!/usr/bin/python3
"""narrow_conv_check.py - convolution and batch norm at bf16 and f16 on
hloscope's device against PyTorch (docs/REFERENCE.md, "bf16 and f16
convolution and batch norm").

    /usr/bin/python3 tests/reference/narrow_conv_check.py --pool-run build/tests/reference/pool_run

Each case converts f32 parameters to the narrow type inside the module,
runs the op in that type and converts the result back to f32 (exact), as a
bf16/f16 model's HLO does. XLA's CPU backend computes these ops in f32 and
rounds once when the result is stored; the reference is PyTorch computing
the op in float64 on the same narrow inputs, rounded once to the narrow
type. The f32 sum differs from the float64 one by far less than half a
bf16/f16 ulp, so an element can differ from the reference only where the
exact value lies that close to a rounding boundary, and then by one ulp:
the check is "at most 1 ulp everywhere, and at most 1% of the elements
off by one". PyTorch's own bf16/f16 CPU results are printed next to it
(same ulp measure) for information.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from pool_check import run  # noqa: E402  (pool_run on .npy arguments)

TYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def shape(dims, t="f32"):
    return "%s[%s]" % (t, ",".join(str(d) for d in dims))


def conv_case(rng, t):
    x = rng.standard_normal((2, 8, 10, 10)).astype(np.float32)
    w = (rng.standard_normal((16, 8, 3, 3)) / 8).astype(np.float32)
    out = [2, 16, 5, 5]
    text = """HloModule narrow_conv
ENTRY e {
  x = %s parameter(0)
  w = %s parameter(1)
  xn = %s convert(x)
  wn = %s convert(w)
  y = %s convolution(xn, wn), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  ROOT out = %s convert(y)
}
""" % (shape(x.shape), shape(w.shape), shape(x.shape, t), shape(w.shape, t),
       shape(out, t), shape(out))
    return ("conv3x3_s2_" + t, text, [x, w],
            lambda x, w: F.conv2d(x, w, stride=2, padding=1))


def depthwise_case(rng, t):
    x = rng.standard_normal((1, 12, 9, 9)).astype(np.float32)
    w = (rng.standard_normal((12, 1, 3, 3)) / 3).astype(np.float32)
    out = [1, 12, 9, 9]
    text = """HloModule narrow_depthwise
ENTRY e {
  x = %s parameter(0)
  w = %s parameter(1)
  xn = %s convert(x)
  wn = %s convert(w)
  y = %s convolution(xn, wn), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=12
  ROOT out = %s convert(y)
}
""" % (shape(x.shape), shape(w.shape), shape(x.shape, t), shape(w.shape, t),
       shape(out, t), shape(out))
    return ("depthwise3x3_" + t, text, [x, w],
            lambda x, w: F.conv2d(x, w, padding=1, groups=12))


def batch_norm_case(rng, t):
    x = (3 + 2 * rng.standard_normal((4, 6, 5, 5))).astype(np.float32)
    s = (1 + 0.3 * rng.standard_normal(6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    text = """HloModule narrow_bn
ENTRY e {
  x = %s parameter(0)
  s = f32[6] parameter(1)
  b = f32[6] parameter(2)
  xn = %s convert(x)
  sn = %s[6] convert(s)
  bn = %s[6] convert(b)
  r = (%s, %s[6], %s[6]) batch-norm-training(xn, sn, bn), epsilon=1e-05, feature_index=1
  y = %s get-tuple-element(r), index=0
  ROOT out = %s convert(y)
}
""" % (shape(x.shape), shape(x.shape, t), t, t, shape(x.shape, t), t, t,
       shape(x.shape, t), shape(x.shape))
    return ("batch_norm_training_" + t, text, [x, s, b],
            lambda x, s, b: F.batch_norm(x, None, None, s, b, training=True,
                                         eps=1e-5))


def ulps(a, b, t):
    """|a - b| in units of the narrow type's ulp at b (both exact in t)."""
    a = torch.tensor(a, dtype=torch.float64)
    b = torch.tensor(b, dtype=torch.float64)
    info = torch.finfo(TYPES[t])
    mag = torch.clamp(b.abs(), min=info.tiny)
    ulp = torch.pow(2.0, torch.floor(torch.log2(mag)) - (info.bits - 1 - (
        8 if t == "bf16" else 5)))
    return ((a - b).abs() / ulp).numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool-run", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    rng = np.random.default_rng(17)
    work = args.keep or tempfile.mkdtemp(prefix="narrow_conv_check.")
    failed = False
    for t in ("bf16", "f16"):
        for make in (conv_case, depthwise_case, batch_norm_case):
            name, text, arrays, fn = make(rng, t)
            try:
                got = run(args.pool_run, work, name, text, arrays)[0]
            except RuntimeError as e:
                print("FAIL %s" % e)
                failed = True
                continue
            narrow = [torch.tensor(a).to(TYPES[t]) for a in arrays]
            want = fn(*[n.double() for n in narrow]).to(TYPES[t]).float().numpy()
            u = ulps(got, want, t)
            off = float(np.mean(u > 0))
            ok = float(u.max()) <= 1 and off <= 0.01
            failed |= not ok
            try:
                theirs = fn(*narrow).float().numpy()
                tu = ulps(theirs, want, t)
                torch_note = "PyTorch %s: max %.0f ulp, %.2f%% off" % (
                    t, tu.max(), 100 * np.mean(tu > 0))
            except RuntimeError as e:  # an op PyTorch's CPU lacks at t
                torch_note = "PyTorch %s: %s" % (t, str(e).split("\n")[0][:60])
            print("%-4s %-26s max %.0f ulp, %.2f%% of elements off by one "
                  "(%s)" % ("ok" if ok else "FAIL", name, u.max(), 100 * off,
                            torch_note))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
