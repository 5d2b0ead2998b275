#!/usr/bin/python3
"""sort_topk_check.py - topk (the opcode and the TopK custom-call), and
the gradients of sort, topk and scatter with a non-add update
computation, on hloscope's device against PyTorch (docs/REFERENCE.md).

    /usr/bin/python3 tests/reference/sort_topk_check.py --pool-run build/tests/reference/pool_run
        [--keep DIR]

Each case is an HLO module written as XLA spells the op (topk as XLA's
opcode, and as the TopK custom-call of the Mixtral dump in
../shared/hlo-real; sort with the comparators JAX and torch_xla emit;
scatter as index_copy, index_reduce and index_add lower) and the PyTorch
call it stands for. hloscope runs the module (pool_run) and its VJP
(pool_run --grad: the gradient of sum(f(x) * g) for a random cotangent g,
which is torch.autograd.grad(f(x), x, g)). Values and indices move, so
they must match bit for bit; gradients within compare.py's max relative
error 1e-6 (each is a cotangent moved, or summed where windows meet).

Ties and NaN: XLA orders equal keys by index and floats by the total order
(-NaN first, +NaN last; -0 before +0); PyTorch leaves the order of ties
open and calls -0 and +0 equal, so those cases are checked against XLA's
rule (stated below) and the PyTorch cases have distinct values and +NaN
only. Exit 1 on any mismatch.
"""

import argparse
import struct
import sys
import tempfile
import warnings

import numpy as np

sys.dont_write_bytecode = True
import torch  # noqa: E402

from gather_check import module, rel_error, same_bits  # noqa: E402
from pool_check import run  # noqa: E402

# index_reduce (the reference of a multiply scatter) is beta in PyTorch 1.13
warnings.filterwarnings("ignore", message="index_reduce")

COMPUTATIONS = """
lt_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}
gt_total {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
lt_pair {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
compare_greater_than.bf16 {
  p.1.lhs = s32[] parameter(2)
  p.1.rhs = s32[] parameter(3)
  p.0.lhs = bf16[] parameter(0)
  p.0.rhs = bf16[] parameter(1)
  ROOT compare = pred[] compare(p.0.lhs, p.0.rhs), direction=GT, type=TOTALORDER
}
lt_swapped {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(b, a), direction=LT
}
overwrite {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(b, a)
}
"""


def hlo(params, body, out_dims, with_loss):
    """gather_check's module (its computations: add, assign,
    lt_by_key_then_index, ...) with this file's too."""
    text = module(params, body, out_dims, with_loss)
    return text.replace("HloModule gather_check\n",
                        "HloModule sort_topk_check\n" + COMPUTATIONS, 1)


def distinct(rng, shape):
    """Values without ties (a permutation of spaced values), exact in
    bf16, so that every order is decided by value alone."""
    n = int(np.prod(shape))
    v = (np.arange(n, dtype=np.float32) - n / 2) / 8
    return rng.permutation(v).reshape(shape).astype(np.float32)


def cases(rng):
    """(name, params, body, out dims, torch fn, indexes to differentiate,
    n_out of the forward). The forward's outputs are compared bit for bit,
    the gradients within the tolerance."""
    x = distinct(rng, (6, 20))
    x[2, 7] = np.nan  # +NaN: the largest for XLA and PyTorch alike
    yield ("topk_largest", [("x", x)],
           ["t = (f32[6,5], s32[6,5]) topk(x), k=5, largest=true",
            "out = f32[6,5] get-tuple-element(t), index=0",
            "ix = s32[6,5] get-tuple-element(t), index=1",
            "res = (f32[6,5], s32[6,5]) tuple(out, ix)"],
           [6, 5], lambda x: torch.topk(x, 5, dim=-1), [0])
    y = distinct(rng, (3, 4, 10))
    yield ("topk_smallest_rank3", [("y", y)],
           ["t = (f32[3,4,3], s32[3,4,3]) topk(y), k=3, largest=false",
            "out = f32[3,4,3] get-tuple-element(t), index=0",
            "ix = s32[3,4,3] get-tuple-element(t), index=1",
            "res = (f32[3,4,3], s32[3,4,3]) tuple(out, ix)"],
           [3, 4, 3], lambda y: torch.topk(y, 3, dim=-1, largest=False), [0])
    # Mixtral's router: the TopK custom-call on bf16 logits, k=2 of 8
    r = distinct(rng, (16, 8))
    yield ("topk_custom_call_bf16", [("r", r)],
           ["rb = bf16[16,8] convert(r)",
            "t = (bf16[16,2], s32[16,2]) custom-call(rb), custom_call_target=\"TopK\", "
            "called_computations={compare_greater_than.bf16}",
            "v = bf16[16,2] get-tuple-element(t), index=0",
            "out = f32[16,2] convert(v)",
            "ix = s32[16,2] get-tuple-element(t), index=1",
            "res = (f32[16,2], s32[16,2]) tuple(out, ix)"],
           [16, 2], lambda r: (lambda t: (t[0].float(), t[1]))(
               torch.topk(r.bfloat16(), 2, dim=-1)), [])
    # the same call at f32 with the comparator's operands swapped
    # (compare(p1, p0) LT is GT), differentiated (autodiff runs f32 only)
    yield ("topk_custom_call_f32_grad", [("r", r)],
           ["t = (f32[16,3], s32[16,3]) custom-call(r), custom_call_target=\"TopK\", "
            "called_computations={lt_swapped}",
            "out = f32[16,3] get-tuple-element(t), index=0",
            "ix = s32[16,3] get-tuple-element(t), index=1",
            "res = (f32[16,3], s32[16,3]) tuple(out, ix)"],
           [16, 3], lambda r: torch.topk(r, 3, dim=-1), [0])
    s = distinct(rng, (4, 33))
    yield ("sort_grad_dim1", [("s", s)],
           ["out = f32[4,33] sort(s), dimensions={1}, to_apply=lt_f32"],
           [4, 33], lambda s: torch.sort(s, dim=1).values, [0])
    z = rng.standard_normal((3, 5, 4)).astype(np.float32)
    z[:, 3, :] = z[:, 1, :]  # ties: the stable order decides who gets which
    yield ("sort_grad_descending_ties", [("z", z)],
           ["out = f32[3,5,4] sort(z), dimensions={1}, is_stable=true, "
            "to_apply=gt_total"],
           [3, 5, 4], lambda z: torch.sort(z, dim=1, descending=True, stable=True).values,
           [0])
    k = distinct(rng, (5, 9))
    v = rng.standard_normal((5, 9)).astype(np.float32)

    def sort_pair(k, v):
        sk, i = torch.sort(k, dim=1, stable=True)
        return sk + torch.take_along_dim(v, i, 1)
    yield ("sort_grad_two_operands", [("k", k), ("v", v)],
           ["p = (f32[5,9], f32[5,9]) sort(k, v), dimensions={1}, "
            "is_stable=true, to_apply=lt_pair",
            "sk = f32[5,9] get-tuple-element(p), index=0",
            "sv = f32[5,9] get-tuple-element(p), index=1",
            "out = f32[5,9] add(sk, sv)"],
           [5, 9], sort_pair, [0, 1])
    w = rng.standard_normal((9, 3)).astype(np.float32)
    w[4:8, :] = w[0:4, :]
    yield ("sort_grad_comparator_interpreted", [("w", w)],
           ["io = s32[9,3] iota(), iota_dimension=0",
            "p = (f32[9,3], s32[9,3]) sort(w, io), dimensions={0}, "
            "to_apply=lt_by_key_then_index",
            "out = f32[9,3] get-tuple-element(p), index=0"],
           [9, 3], lambda w: torch.sort(w, dim=0, stable=True).values, [0])
    # scatter overwrite: index_copy (distinct rows, one out of range: XLA
    # skips it, so it gets no gradient; PyTorch on the rows in range)
    e = rng.standard_normal((10, 6)).astype(np.float32)
    ids = np.array([8, 1, 12, 4], dtype=np.int32)
    u = rng.standard_normal((4, 6)).astype(np.float32)
    keep = [0, 1, 3]
    yield ("scatter_overwrite_grad", [("e", e), ("ids", ids), ("u", u)],
           ["out = f32[10,6] scatter(e, ids, u), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=overwrite"],
           [10, 6], lambda e, ids, u: e.index_copy(0, ids[keep].long(), u[keep]),
           [0, 2])
    # torch.scatter (dim 1, distinct positions per row) with batching dims
    x5 = rng.standard_normal((5, 7)).astype(np.float32)
    pos = np.stack([rng.permutation(7)[:4] for _ in range(5)]).astype(np.int32)
    src = rng.standard_normal((5, 4)).astype(np.float32)
    yield ("scatter_overwrite_dim1_batched", [("x", x5), ("i", pos), ("u", src)],
           ["out = f32[5,7] scatter(x, i, u), update_window_dims={}, "
            "inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, "
            "input_batching_dims={0}, scatter_indices_batching_dims={0}, "
            "index_vector_dim=2, to_apply=overwrite"],
           [5, 7], lambda x, i, u: torch.scatter(x, 1, i.long(), u), [0, 2])
    # index_reduce 'prod' with unique rows
    ur = rng.standard_normal((3, 6)).astype(np.float32)
    rows = np.array([7, 2, 5], dtype=np.int32)
    yield ("scatter_multiply_grad", [("e", e), ("ids", rows), ("u", ur)],
           ["out = f32[10,6] scatter(e, ids, u), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, unique_indices=true, to_apply=mul"],
           [10, 6], lambda e, ids, u: e.index_reduce(0, ids.long(), u, "prod"),
           [0, 2])
    # maximum / minimum with ties between the operand and several updates
    # (small integers), duplicate rows and a row out of range (7 of 6)
    em = rng.integers(-2, 3, (6, 4)).astype(np.float32)
    um = rng.integers(-2, 3, (6, 4)).astype(np.float32)
    dup = np.array([0, 2, 0, 5, 7, 2], dtype=np.int32)
    inr = [0, 1, 2, 3, 5]
    for op, red in (("max", "amax"), ("min", "amin")):
        yield ("scatter_%s_ties_grad" % op, [("e", em), ("ids", dup), ("u", um)],
               ["out = f32[6,4] scatter(e, ids, u), update_window_dims={1}, "
                "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                "index_vector_dim=1, to_apply=%s" % op],
               [6, 4], lambda e, ids, u, red=red: e.index_reduce(
                   0, ids[inr].long(), u[inr], red), [0, 2])
    # multiply with repeated rows and one out of range: the operand's
    # gradient (the updates' needs unique indices)
    rep = np.array([7, 2, 7, 11], dtype=np.int32)
    u4 = rng.standard_normal((4, 6)).astype(np.float32)
    yield ("scatter_multiply_repeated_rows", [("e", e), ("ids", rep), ("u", u4)],
           ["out = f32[10,6] scatter(e, ids, u), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=mul"],
           [10, 6], lambda e, ids, u: e.index_reduce(0, ids[:3].long(), u[:3], "prod"),
           [0])
    # scatter-add whose windows 1 and 2 do not fit: skipped forward, so
    # their updates get no gradient (before: the clamped window's)
    bad = np.array([2, 10, -1, 4, 9], dtype=np.int32)
    r5 = rng.standard_normal((5, 6)).astype(np.float32)
    ok = [0, 3, 4]
    yield ("scatter_add_skipped_windows_grad", [("e", e), ("ids", bad), ("r", r5)],
           ["out = f32[10,6] scatter(e, ids, r), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
            "index_vector_dim=1, to_apply=add"],
           [10, 6], lambda e, ids, r: e.index_add(0, ids[ok].long(), r[ok]), [0, 2])
    # 2-wide windows along dimension 1 starting at 3, 5 (does not fit in 6)
    # and -1: only the first is applied
    m = rng.standard_normal((4, 6)).astype(np.float32)
    st = np.array([3, 5, -1], dtype=np.int32)
    uw = rng.standard_normal((4, 3, 2)).astype(np.float32)

    def windows_added(m, st, uw):
        out = m.clone()
        out[:, 3:5] = out[:, 3:5] + uw[:, 0, :]
        return out
    yield ("scatter_add_window_grad", [("m", m), ("st", st), ("uw", uw)],
           ["out = f32[4,6] scatter(m, st, uw), update_window_dims={0,2}, "
            "inserted_window_dims={}, scatter_dims_to_operand_dims={1}, "
            "index_vector_dim=1, to_apply=add"],
           [4, 6], windows_added, [0, 2])


def total_key(v):
    """XLA's total order of an f32 as an integer (-NaN < -inf < ... < -0 <
    +0 < ... < inf < +NaN)."""
    b = struct.unpack("<i", struct.pack("<f", v))[0]
    return b ^ 0x7fffffff if b < 0 else b


def rule_cases():
    """topk on ties, signed zeros and NaNs of both signs, against XLA's
    rule: total order, largest (smallest) first, equal keys by index."""
    neg_nan = struct.unpack("<f", struct.pack("<I", 0xffc00000))[0]
    row = np.array([1, np.nan, 3, neg_nan, 2, 3, 0.0, -0.0, 3, -np.inf, 1],
                   dtype=np.float32)
    for largest in (True, False):
        order = sorted(range(len(row)),
                       key=lambda j: ((-1 if largest else 1) * total_key(row[j]), j))
        yield ("topk_rule_%s" % ("largest" if largest else "smallest"), row,
               largest, np.array(order[:7], dtype=np.int32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool-run", required=True)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--keep")
    args = ap.parse_args()
    rng = np.random.default_rng(13)
    work = args.keep or tempfile.mkdtemp(prefix="sort_topk_check.")
    failed = False

    def report(ok, name, what, detail):
        nonlocal failed
        failed |= not ok
        print("%-4s %-34s %-10s %s" % ("ok" if ok else "FAIL", name, what, detail))

    for name, params, body, out_dims, fn, wrt in cases(rng):
        arrays = [a for _, a in params]
        ts = [torch.tensor(a, requires_grad=k in wrt) for k, a in enumerate(arrays)]
        want = fn(*ts)
        pair = isinstance(want, tuple)
        try:
            got = run(args.pool_run, work, name,
                      hlo(params, body, out_dims, False), arrays,
                      n_out=2 if pair else 1)
            if pair:
                report(same_bits(got[0], want[0].detach().numpy()), name,
                       "values", "bit for bit")
                report(np.array_equal(got[1], want[1].numpy().astype(np.int32)),
                       name, "indices", "equal")
                want = want[0]
                body = body[:-1]  # the loss reads `out`
            else:
                err = rel_error(got[0], want.detach().numpy())
                report(err == 0, name, "forward", "max rel error %.3g" % err)
            if not wrt:
                continue
            g = rng.standard_normal(out_dims).astype(np.float32)
            want_grads = torch.autograd.grad(want, [ts[k] for k in wrt],
                                             torch.tensor(g))
            grads = run(args.pool_run, work, name + ".grad",
                        hlo(params, body, out_dims, True), arrays + [g], wrt)
            for k, a, b in zip(wrt, grads, want_grads):
                err = rel_error(a, b.numpy())
                report(err <= args.tol, name, "d/d" + params[k][0],
                       "max rel error %.3g" % err)
        except RuntimeError as e:
            report(False, name, "run", str(e))

    for name, row, largest, want in rule_cases():
        n = len(row)
        body = ["t = (f32[7], s32[7]) topk(x), k=7, largest=%s" %
                ("true" if largest else "false"),
                "v = f32[7] get-tuple-element(t), index=0",
                "ix = s32[7] get-tuple-element(t), index=1",
                "out = (f32[7], s32[7]) tuple(v, ix)"]
        try:
            got = run(args.pool_run, work, name,
                      hlo([("x", row)], body, None, False), [row], n_out=2)
        except RuntimeError as e:
            report(False, name, "run", str(e))
            continue
        report(np.array_equal(got[1], want), name, "indices",
               "XLA's order %s" % want.tolist())
        report(same_bits(got[0], row[want]), name, "values", "bit for bit")
        assert n == 11
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
