#!/usr/bin/python3
"""pool_check.py - pooling and batch norm on hloscope's device against
PyTorch (docs/REFERENCE.md).

    /usr/bin/python3 tests/reference/pool_check.py --pool-run build/tests/reference/pool_run
        [--tol 1e-5] [--keep DIR]

Each case is an HLO module written the way torch_xla lowers the op
(reduce-window, batch-norm-training, batch-norm-inference) and the
torch.nn.functional call it stands for. Inputs are random f32 (seeded);
hloscope runs the module and, for the gradients, its VJP (pool_run --grad:
the gradient of sum(f(x) * g) for a random cotangent g, which is
torch.autograd.grad(f(x), x, g)). PyTorch computes in float64 from the same
f32 inputs. The error is compare.py's

    max relative error = max|a - b| / max|b|

and every output must be within --tol (1e-5). Exit 1 otherwise.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

COMPUTATIONS = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
"""


def shape(t):
    return "f32[%s]" % ",".join(str(d) for d in t)


def module(params, body, root_shape, with_loss):
    """An entry over params [(name, dims)] whose value is `pool` (shape
    root_shape); with_loss appends a cotangent parameter g and returns
    sum(pool * g)."""
    lines = ["  %s = %s parameter(%d)" % (n, shape(d), k)
             for k, (n, d) in enumerate(params)]
    lines += ["  " + l for l in body]
    if with_loss:
        n = len(root_shape)
        lines += [
            "  g = %s parameter(%d)" % (shape(root_shape), len(params)),
            "  prod = %s multiply(out, g)" % shape(root_shape),
            "  zero = f32[] constant(0)",
            "  ROOT loss = f32[] reduce(prod, zero), dimensions={%s}, "
            "to_apply=add" % ",".join(str(d) for d in range(n)),
        ]
    else:
        lines[-1] = "  ROOT " + lines[-1].lstrip()
    return "HloModule pool_check\n" + COMPUTATIONS + "ENTRY e {\n" + \
        "\n".join(lines) + "\n}\n"


def pool_body(x, kind, k, s, p, out):
    """reduce-window over H, W of NCHW x, as torch_xla lowers pooling."""
    window = "window={size=1x1x%dx%d stride=1x1x%dx%d pad=0_0x0_0x%d_%dx%d_%d}" % (
        k, k, s, s, p, p, p, p)
    if kind == "max":
        return ["ninf = f32[] constant(-inf)",
                "out = %s reduce-window(x, ninf), %s, to_apply=max" % (shape(out), window)]
    return ["z = f32[] constant(0)",
            "sum = %s reduce-window(x, z), %s, to_apply=add" % (shape(out), window),
            "n = f32[] constant(%d)" % (k * k),
            "nb = %s broadcast(n), dimensions={}" % shape(out),
            "out = %s divide(sum, nb)" % shape(out)]


def bn_body(x, training, eps):
    c = x[1]
    attrs = "epsilon=%g, feature_index=1" % eps
    if training:
        return ["t = (%s, f32[%d], f32[%d]) batch-norm-training(x, w, b), %s"
                % (shape(x), c, c, attrs),
                "out = %s get-tuple-element(t), index=0" % shape(x)]
    return ["out = %s batch-norm-inference(x, w, b, rm, rv), %s" % (shape(x), attrs)]


def cases(rng):
    """(name, params [(name, array)], body, output dims, torch fn of the
    float64 params, indexes of the params to differentiate)."""
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    big = rng.standard_normal((2, 4, 7, 7)).astype(np.float32)
    w = (1 + 0.5 * rng.standard_normal(3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    rm = rng.standard_normal(3).astype(np.float32)
    rv = (0.5 + rng.random(3)).astype(np.float32)
    eps = 1e-5
    xs = list(x.shape)
    yield ("max_pool2d_k3_s2_p1", [("x", x)], pool_body(xs, "max", 3, 2, 1, [2, 3, 5, 5]),
           [2, 3, 5, 5], lambda x: F.max_pool2d(x, 3, 2, 1), [0])
    yield ("avg_pool2d_k2_s2", [("x", x)], pool_body(xs, "avg", 2, 2, 0, [2, 3, 4, 4]),
           [2, 3, 4, 4], lambda x: F.avg_pool2d(x, 2, 2), [0])
    yield ("avg_pool2d_k3_s2_p1", [("x", x)], pool_body(xs, "avg", 3, 2, 1, [2, 3, 5, 5]),
           [2, 3, 5, 5], lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=True), [0])
    yield ("adaptive_avg_pool2d_1x1", [("x", big)],
           pool_body(list(big.shape), "avg", 7, 1, 0, [2, 4, 1, 1]),
           [2, 4, 1, 1], lambda x: F.adaptive_avg_pool2d(x, 1), [0])
    yield ("batch_norm_training", [("x", x), ("w", w), ("b", b)], bn_body(xs, True, eps), xs,
           lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=eps),
           [0, 1, 2])
    yield ("batch_norm_eval", [("x", x), ("w", w), ("b", b), ("rm", rm), ("rv", rv)],
           bn_body(xs, False, eps), xs,
           lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=False, eps=eps),
           [0, 1, 2])


def rel_error(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not np.all(np.isfinite(a)):
        return float("inf")
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    return diff / scale if scale > 0 else diff


def run(pool_run, work, name, text, arrays, grad=None, n_out=None):
    """Runs pool_run on text with arrays as .npy arguments (the gradient
    w.r.t. params `grad`); returns its n_out outputs (default: one per
    gradient, or one)."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "module.hlo")
    with open(path, "w") as f:
        f.write(text)
    files = []
    for k, a in enumerate(arrays):
        files.append(os.path.join(d, "arg%d.npy" % k))
        np.save(files[-1], a)
    out = os.path.join(d, "out")
    cmd = [pool_run, path, out]
    if grad is not None:
        cmd += ["--grad", ",".join(str(k) for k in grad)]
    r = subprocess.run(cmd + files, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (name, r.stderr.strip()))
    n = n_out or (len(grad) if grad is not None else 1)
    return [np.load(os.path.join(out, "out%d.npy" % k)) for k in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool-run", required=True)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--keep")
    args = ap.parse_args()
    rng = np.random.default_rng(13)
    work = args.keep or tempfile.mkdtemp(prefix="pool_check.")
    worst, failed = 0.0, False
    for name, params, body, out_dims, fn, wrt in cases(rng):
        arrays = [a for _, a in params]
        dims = [(n, list(a.shape)) for n, a in params]
        t64 = [torch.tensor(a, dtype=torch.float64, requires_grad=k in wrt)
               for k, a in enumerate(arrays)]
        want = fn(*t64)
        g = rng.standard_normal(out_dims).astype(np.float32)
        want_grads = torch.autograd.grad(want, [t64[k] for k in wrt],
                                         torch.tensor(g, dtype=torch.float64))
        checks = []
        try:
            got = run(args.pool_run, work, name, module(dims, body, out_dims, False), arrays)
            checks.append(("forward", got[0], want.detach().numpy()))
            got = run(args.pool_run, work, name + ".grad",
                      module(dims, body, out_dims, True), arrays + [g], wrt)
            for k, gk in zip(wrt, got):
                checks.append(("d/d%s" % params[k][0], gk, want_grads[wrt.index(k)].numpy()))
        except RuntimeError as e:
            print("FAIL %s" % e)
            failed = True
            continue
        for what, a, b in checks:
            err = rel_error(a, b)
            worst = max(worst, err)
            ok = err <= args.tol
            failed |= not ok
            print("%-4s %-24s %-8s max rel error %.3g" % ("ok" if ok else "FAIL", name, what, err))
    print("worst %.3g (tolerance %g)" % (worst, args.tol))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
