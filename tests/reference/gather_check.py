#!/usr/bin/python3
"""gather_check.py - gather, scatter and sort on hloscope's device against
PyTorch (docs/REFERENCE.md).

    /usr/bin/python3 tests/reference/gather_check.py --pool-run build/tests/reference/pool_run
        [--keep DIR]

Each case is an HLO module written as XLA spells the op (torch_xla and JAX
lower torch.gather, index_select, embedding, take_along_dim, scatter_add,
index_add, index_copy and sort to these) and the PyTorch call it stands for.
hloscope runs the module (pool_run) and, for gathers and scatter-adds, its
VJP (pool_run --grad: the gradient of sum(f(x) * g) for a random cotangent
g, which is torch.autograd.grad(f(x), x, g)). Gathers, sorts and
permutations move values, so they must match PyTorch bit for bit (f32 and
bf16); sums of scattered values are compared with compare.py's max relative
error, within 1e-6 (f32: the order of additions differs from PyTorch's
atomics at most in the last bit). Exit 1 on any mismatch.
"""

import argparse
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from pool_check import run  # noqa: E402  (pool_run on .npy arguments)

COMPUTATIONS = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
assign {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
lt_stable {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
gt_stable {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
lt_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}
lt_by_key_then_index {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT
  eq = pred[] compare(a, b), direction=EQ
  ilt = pred[] compare(c, d), direction=LT
  tie = pred[] and(eq, ilt)
  ROOT r = pred[] or(lt, tie)
}
"""


def ty(a):
    return {np.float32: "f32", np.int32: "s32", np.int64: "s64"}[a.dtype.type]


def shape(dims, t="f32"):
    return "%s[%s]" % (t, ",".join(str(d) for d in dims))


def module(params, body, out_dims, with_loss):
    """An entry over params [(name, array or (type, dims))] ending in
    `out`; with_loss appends a cotangent g and returns sum(out * g)."""
    lines = []
    for k, (n, a) in enumerate(params):
        t, d = (ty(a), a.shape) if isinstance(a, np.ndarray) else a
        lines.append("  %s = %s parameter(%d)" % (n, shape(d, t), k))
    lines += ["  " + l for l in body]
    if with_loss:
        n = len(out_dims)
        lines += [
            "  g = %s parameter(%d)" % (shape(out_dims), len(params)),
            "  prod = %s multiply(out, g)" % shape(out_dims),
            "  zero = f32[] constant(0)",
            "  ROOT loss = f32[] reduce(prod, zero), dimensions={%s}, "
            "to_apply=add" % ",".join(str(d) for d in range(n)),
        ]
    else:
        lines[-1] = "  ROOT " + lines[-1].lstrip()
    return "HloModule gather_check\n" + COMPUTATIONS + "ENTRY e {\n" + \
        "\n".join(lines) + "\n}\n"


def gather_cases(rng):
    """(name, params, body, out dims, torch fn, indexes to differentiate)."""
    x = rng.standard_normal((5, 7)).astype(np.float32)
    # torch.gather(x, 1, i): XLA's gather with batching dimensions (how
    # torch_xla and JAX write take_along_axis today)
    i = rng.integers(0, 7, (5, 4)).astype(np.int32)
    yield ("torch_gather_dim1", [("x", x), ("i", i)],
           ["out = f32[5,4] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, "
            "start_index_map={1}, operand_batching_dims={0}, "
            "start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}"],
           [5, 4], lambda x, i: torch.gather(x, 1, i.long()), [0])
    # embedding / index_select along 0 (duplicates: the gradient adds them)
    e = rng.standard_normal((10, 6)).astype(np.float32)
    ids = np.array([3, 0, 9, 3, 3, 7, 1], dtype=np.int32)
    yield ("embedding", [("e", e), ("ids", ids)],
           ["out = f32[7,6] gather(e, ids), offset_dims={1}, collapsed_slice_dims={0}, "
            "start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}"],
           [7, 6], lambda e, ids: F.embedding(ids.long(), e), [0])
    yield ("index_select_dim1", [("x", x), ("j", np.array([6, 2, 2, 0], np.int32))],
           ["out = f32[5,4] gather(x, j), offset_dims={0}, collapsed_slice_dims={1}, "
            "start_index_map={1}, index_vector_dim=1, slice_sizes={5,1}"],
           [5, 4], lambda x, j: torch.index_select(x, 1, j.long()), [0])
    # x[i0, :, i2]: two indexed dimensions, s64 indices
    y = rng.standard_normal((3, 4, 5)).astype(np.float32)
    pairs = np.stack([rng.integers(0, 3, 6), rng.integers(0, 5, 6)], 1).astype(np.int64)
    yield ("advanced_index_0_2", [("y", y), ("p", pairs)],
           ["out = f32[6,4] gather(y, p), offset_dims={1}, collapsed_slice_dims={0,2}, "
            "start_index_map={0,2}, index_vector_dim=1, slice_sizes={1,4,1}"],
           [6, 4], lambda y, p: y[p[:, 0], :, p[:, 1]], [0])
    # take_along_dim over the last dimension of a rank-3 array
    z = rng.standard_normal((2, 3, 6)).astype(np.float32)
    t = rng.integers(0, 6, (2, 3, 2)).astype(np.int32)
    yield ("take_along_dim2", [("z", z), ("t", t)],
           ["out = f32[2,3,2] gather(z, t), offset_dims={}, collapsed_slice_dims={2}, "
            "start_index_map={2}, operand_batching_dims={0,1}, "
            "start_indices_batching_dims={0,1}, index_vector_dim=3, slice_sizes={1,1,1}"],
           [2, 3, 2], lambda z, t: torch.take_along_dim(z, t.long(), 2), [0])
    # windows of 3x2 whose starts XLA clamps into range: torch.narrow of the
    # clamped start is the reference
    w = rng.standard_normal((8, 6)).astype(np.float32)
    starts = np.array([[0, 0], [6, 5], [-3, 2], [7, -1]], dtype=np.int32)

    def windows(w, s):
        out = []
        for a, b in s.tolist():
            a = min(max(a, 0), 8 - 3)
            b = min(max(b, 0), 6 - 2)
            out.append(w[a:a + 3, b:b + 2])
        return torch.stack(out)
    yield ("clamped_windows", [("w", w), ("s", starts)],
           ["out = f32[4,3,2] gather(w, s), offset_dims={1,2}, collapsed_slice_dims={}, "
            "start_index_map={0,1}, index_vector_dim=1, slice_sizes={3,2}"],
           [4, 3, 2], windows, [0])


def scatter_cases(rng):
    """(name, params, body, out dims, torch fn, indexes to differentiate)."""
    x = rng.standard_normal((5, 7)).astype(np.float32)
    src = rng.standard_normal((5, 4)).astype(np.float32)
    i = rng.integers(0, 7, (5, 4)).astype(np.int32)
    yield ("torch_scatter_add_dim1", [("x", x), ("i", i), ("u", src)],
           ["out = f32[5,7] scatter(x, i, u), update_window_dims={}, "
            "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
            "input_batching_dims={0}, scatter_indices_batching_dims={0}, "
            "index_vector_dim=2, to_apply=add"],
           [5, 7], lambda x, i, u: torch.scatter_add(x, 1, i.long(), u), [0, 2])
    # index_add along 0 with repeated rows (embedding backward's shape)
    e = rng.standard_normal((10, 6)).astype(np.float32)
    rows = rng.standard_normal((7, 6)).astype(np.float32)
    ids = np.array([3, 0, 9, 3, 3, 7, 1], dtype=np.int32)
    yield ("index_add_dim0", [("e", e), ("ids", ids), ("r", rows)],
           ["out = f32[10,6] scatter(e, ids, r), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=add"],
           [10, 6], lambda e, ids, r: e.index_add(0, ids.long(), r), [0, 2])
    # out-of-range rows are skipped (XLA's CPU backend): torch on the rows
    # in range is the reference
    bad = np.array([2, 10, -1, 4, 9], dtype=np.int32)
    r5 = rng.standard_normal((5, 6)).astype(np.float32)
    keep = [k for k, v in enumerate(bad.tolist()) if 0 <= v < 10]
    yield ("index_add_skips_out_of_range", [("e", e), ("ids", bad), ("r", r5)],
           ["out = f32[10,6] scatter(e, ids, r), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=add"],
           [10, 6], lambda e, ids, r: e.index_add(0, ids[keep].long(), r[keep]), [0])
    # assignment (index_copy with distinct rows)
    distinct = np.array([8, 1, 4], dtype=np.int32)
    r3 = rng.standard_normal((3, 6)).astype(np.float32)
    yield ("index_copy_dim0", [("e", e), ("ids", distinct), ("r", r3)],
           ["out = f32[10,6] scatter(e, ids, r), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=assign"],
           [10, 6], lambda e, ids, r: e.index_copy(0, ids.long(), r), [])


def sort_cases(rng):
    """(name, params, body, torch fn giving (values, indices))."""
    x = rng.standard_normal((4, 33)).astype(np.float32)
    x[:, 5:12] = x[:, :7]          # ties: stability decides their order
    x[1, 3] = np.nan
    x[2, 4] = -0.0
    x[2, 6] = 0.0
    iota = "io = s32[4,33] iota(), iota_dimension=1"
    yield ("sort_dim1_stable", [("x", x)],
           [iota, "out = (f32[4,33], s32[4,33]) sort(x, io), dimensions={1}, "
            "is_stable=true, to_apply=lt_stable"],
           lambda x: torch.sort(x, dim=1, stable=True))
    # TOTALORDER puts +0 before -0 going down; PyTorch calls them equal
    # and keeps their order, so the descending case has no signed zeros
    xd = x.copy()
    xd[2, 4] = 0.0
    yield ("sort_dim1_descending", [("x", xd)],
           [iota, "out = (f32[4,33], s32[4,33]) sort(x, io), dimensions={1}, "
            "is_stable=true, to_apply=gt_stable"],
           lambda x: torch.sort(x, dim=1, descending=True, stable=True))
    y = rng.standard_normal((9, 3)).astype(np.float32)
    y[4:8, :] = y[0:4, :]
    yield ("sort_dim0_comparator_interpreted", [("y", y)],
           ["io = s32[9,3] iota(), iota_dimension=0",
            "out = (f32[9,3], s32[9,3]) sort(y, io), dimensions={0}, "
            "to_apply=lt_by_key_then_index"],
           lambda y: torch.sort(y, dim=0, stable=True))
    b = rng.standard_normal((3, 20)).astype(np.float32)
    yield ("sort_bf16", [("b", b)],
           ["bb = bf16[3,20] convert(b)", "io = s32[3,20] iota(), iota_dimension=1",
            "s = (bf16[3,20], s32[3,20]) sort(bb, io), dimensions={1}, "
            "is_stable=true, to_apply=lt_bf16",
            "v = bf16[3,20] get-tuple-element(s), index=0",
            "vf = f32[3,20] convert(v)",
            "ix = s32[3,20] get-tuple-element(s), index=1",
            "out = (f32[3,20], s32[3,20]) tuple(vf, ix)"],
           lambda b: (lambda r: (r[0].float(), r[1]))(
               torch.sort(b.bfloat16(), dim=1, stable=True)))


def rel_error(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not np.all(np.isfinite(a) == np.isfinite(b)):
        return float("inf")
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    return diff / scale if scale > 0 else diff


def same_bits(a, b):
    a = np.asarray(a)
    b = np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and \
        a.tobytes() == b.tobytes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool-run", required=True)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--keep")
    args = ap.parse_args()
    rng = np.random.default_rng(13)
    work = args.keep or tempfile.mkdtemp(prefix="gather_check.")
    failed = False

    def report(ok, name, what, detail):
        nonlocal failed
        failed |= not ok
        print("%-4s %-34s %-10s %s" % ("ok" if ok else "FAIL", name, what, detail))

    for kind, gen in (("gather", gather_cases), ("scatter", scatter_cases)):
        for name, params, body, out_dims, fn, wrt in gen(rng):
            arrays = [a for _, a in params]
            ts = [torch.tensor(a, requires_grad=k in wrt) for k, a in enumerate(arrays)]
            want = fn(*ts)
            try:
                got = run(args.pool_run, work, name,
                          module(params, body, out_dims, False), arrays)[0]
                if kind == "gather":
                    report(same_bits(got, want.detach().numpy()), name, "forward",
                           "bit for bit")
                else:
                    err = rel_error(got, want.detach().numpy())
                    report(err <= args.tol, name, "forward", "max rel error %.3g" % err)
                if not wrt:
                    continue
                g = rng.standard_normal(out_dims).astype(np.float32)
                want_grads = torch.autograd.grad(want, [ts[k] for k in wrt],
                                                 torch.tensor(g))
                grads = run(args.pool_run, work, name + ".grad",
                            module(params, body, out_dims, True), arrays + [g],
                            wrt)
                for k, a, b in zip(wrt, grads, want_grads):
                    err = rel_error(a, b.numpy())
                    report(err <= args.tol, name, "d/d" + params[k][0],
                           "max rel error %.3g" % err)
            except RuntimeError as e:
                report(False, name, "run", str(e))

    for name, params, body, fn in sort_cases(rng):
        arrays = [a for _, a in params]
        values, indices = fn(*[torch.tensor(a) for a in arrays])
        try:
            got = run(args.pool_run, work, name, module(params, body, None, False),
                      arrays, n_out=2)
        except RuntimeError as e:
            report(False, name, "run", str(e))
            continue
        report(same_bits(got[0], values.numpy()), name, "values", "bit for bit")
        report(np.array_equal(got[1], indices.numpy().astype(np.int32)), name,
               "indices", "equal (stable order of ties)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
