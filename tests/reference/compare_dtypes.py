#!/usr/bin/python3
"""compare_dtypes.py - bf16 and f16 element-wise ops and converts against
PyTorch's own bf16 and f16 results.

    /usr/bin/python3 tests/reference/compare_dtypes.py --hloscope build/hloscope

Runs one HLO module (below) with `hloscope run --dump`: two f32 parameters
(hloscope's deterministic uniform [-1, 1) draws, dumped), converted to bf16
and f16 and combined. PyTorch recomputes every output from the dumped f32
parameters with its bf16/f16 tensors. Exact ops (convert, add, multiply,
divide, maximum, negate) must match bit for bit; exp and tanh (hloscope's
f32 exp is a polynomial within 1 ulp, PyTorch calls Sleef) within one
bf16 ulp. s8 and u8 converts (saturating, as XLA) are checked against
numpy's clip-and-truncate. Exit status 1 on any mismatch.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

N = 4096

HLO = """HloModule dtypes

ENTRY e {
  x = f32[%(n)d] parameter(0)
  y = f32[%(n)d] parameter(1)
  xb = bf16[%(n)d] convert(x)
  yb = bf16[%(n)d] convert(y)
  add_b = bf16[%(n)d] add(xb, yb)
  mul_b = bf16[%(n)d] multiply(xb, yb)
  div_b = bf16[%(n)d] divide(xb, yb)
  max_b = bf16[%(n)d] maximum(xb, yb)
  neg_b = bf16[%(n)d] negate(xb)
  exp_b = bf16[%(n)d] exponential(xb)
  tanh_b = bf16[%(n)d] tanh(xb)
  xh = f16[%(n)d] convert(x)
  yh = f16[%(n)d] convert(y)
  add_h = f16[%(n)d] add(xh, yh)
  mul_h = f16[%(n)d] multiply(xh, yh)
  div_h = f16[%(n)d] divide(xh, yh)
  b2h = f16[%(n)d] convert(div_b)
  h2b = bf16[%(n)d] convert(div_h)
  c = f32[] constant(300)
  cb = f32[%(n)d] broadcast(c), dimensions={}
  big = f32[%(n)d] multiply(x, cb)
  s8 = s8[%(n)d] convert(big)
  u8 = u8[%(n)d] convert(big)
  ROOT t = (bf16[%(n)d], bf16[%(n)d], bf16[%(n)d], bf16[%(n)d],
            bf16[%(n)d], bf16[%(n)d], bf16[%(n)d], f16[%(n)d], f16[%(n)d],
            f16[%(n)d], f16[%(n)d], bf16[%(n)d], s8[%(n)d], u8[%(n)d],
            bf16[%(n)d], f16[%(n)d])
    tuple(add_b, mul_b, div_b, max_b, neg_b, exp_b, tanh_b, add_h, mul_h,
          div_h, b2h, h2b, s8, u8, xb, xh)
}
""" % {"n": N}

NAMES = ["add_b", "mul_b", "div_b", "max_b", "neg_b", "exp_b", "tanh_b",
         "add_h", "mul_h", "div_h", "b2h", "h2b", "s8", "u8", "xb", "xh"]
APPROX = {"exp_b", "tanh_b"}


def torch_outputs(x, y):
    xb, yb = x.to(torch.bfloat16), y.to(torch.bfloat16)
    xh, yh = x.to(torch.float16), y.to(torch.float16)
    div_b, div_h = xb / yb, xh / yh
    big = (x * 300.0).numpy()
    return {
        "add_b": xb + yb, "mul_b": xb * yb, "div_b": div_b,
        "max_b": torch.maximum(xb, yb), "neg_b": -xb,
        "exp_b": torch.exp(xb), "tanh_b": torch.tanh(xb),
        "add_h": xh + yh, "mul_h": xh * yh, "div_h": div_h,
        "b2h": div_b.to(torch.float16), "h2b": div_h.to(torch.bfloat16),
        # XLA's float -> integer convert saturates (C would be undefined).
        "s8": torch.from_numpy(np.trunc(np.clip(big, -128, 127)).astype(np.int8)),
        "u8": torch.from_numpy(np.trunc(np.clip(big, 0, 255)).astype(np.uint8)),
        "xb": xb, "xh": xh,
    }


def bf16_bits(a):
    """The bf16 bit patterns of float32 values that are bf16 values."""
    return (np.asarray(a, dtype=np.float32).view(np.uint32) >> 16).astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hloscope", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hlo = os.path.join(tmp, "dtypes.hlo")
        with open(hlo, "w") as f:
            f.write(HLO)
        dump = os.path.join(tmp, "dump")
        r = subprocess.run([args.hloscope, "run", hlo, "--dump", dump],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("hloscope failed:", r.stderr)
            return 1
        x = torch.from_numpy(np.load(os.path.join(dump, "params", "x.npy")))
        y = torch.from_numpy(np.load(os.path.join(dump, "params", "y.npy")))
        want = torch_outputs(x, y)
        bad = 0
        for k, name in enumerate(NAMES):
            got = np.load(os.path.join(dump, "output.%d.npy" % k))
            ref = want[name]
            if ref.dtype == torch.bfloat16:
                # hloscope writes bf16 as its exact f32 values.
                g, w = bf16_bits(got), bf16_bits(ref.float().numpy())
            elif ref.dtype == torch.float16:
                assert got.dtype == np.float16, (name, got.dtype)
                g = got.view(np.uint16).astype(np.int64)
                w = ref.numpy().view(np.uint16).astype(np.int64)
            else:
                assert got.dtype == ref.numpy().dtype, (name, got.dtype)
                g, w = got.astype(np.int64), ref.numpy().astype(np.int64)
            # Same-sign bit patterns are ordered like the values: their
            # difference counts ulps.
            ulps = np.abs(g - w)
            limit = 1 if name in APPROX else 0
            worst = int(ulps.max())
            status = "ok" if worst <= limit else "MISMATCH"
            print("%-7s %-9s max %d ulp, %d of %d differ" %
                  (name, status, worst, int((ulps > 0).sum()), N))
            if worst > limit:
                i = int(ulps.argmax())
                print("  first worst at %d: hloscope %r, torch %r" %
                      (i, got[i], ref[i].item()))
                bad += 1
        print("%d passed, %d failed" % (len(NAMES) - bad, bad))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
