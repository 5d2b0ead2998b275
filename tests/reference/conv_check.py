#!/usr/bin/python3
"""conv_check.py - checks hloscope's convolution and both of its gradients
against PyTorch (docs/REFERENCE.md, "Convolution").

    /usr/bin/python3 tests/reference/conv_check.py --conv-run build/tests/reference/conv_run \\
        [--tol 1e-5] [--only NAME] [--keep DIR]

For every case below: draws x, w and the cotangent gy (normal, fixed seed)
in NumPy, writes them as .npy in the case's HLO layout, writes the case's
HLO module (one `convolution` with its window, dim_labels and group
counts), and runs conv_run, which computes y = conv(x, w) and the VJP
(gx, gw) on the emulated device. PyTorch computes the same three in
float64 from the same numbers, with XLA's semantics written out in torch
ops: lhs_dilate inserts zeros into the input, padding (of either sign) is
F.pad, window reversal flips the kernel, feature_group_count is conv's
groups and batch_group_count splits the batch and the output features.

Error metric, per array: max|a - b| / max|b| (a: hloscope, b: torch
float64). Exit 1 when any array of any case exceeds --tol (1e-5).

The cases cover what torchvision's models use (ResNet-18's and
MobileNetV2's layers: strides 1 and 2, padding, 1x1, 7x7, depthwise,
inverted-residual expansions; dilation as in the segmentation models;
groups as in ResNeXt) and the rest of XLA's semantics (NHWC and
unusual dim_labels, 1-D and 3-D, transposed convolution through
lhs_dilate, negative padding, reversal, batch_group_count, a depthwise
channel multiplier).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np

sys.dont_write_bytecode = True
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TOL = 1e-5


def case(name, n, c, o, sp, k, stride=None, pad=None, lhs_dil=None,
         rhs_dil=None, rev=None, fgc=1, bgc=1, labels=None):
    """One convolution. sp/k: spatial sizes of input and kernel; pad: a
    (lo, hi) per spatial dimension; labels: dim_labels (channels first by
    default). c: input features; o: output features."""
    r = len(sp)
    digits = "".join(str(d) for d in range(r))
    return dict(
        name=name, n=n, c=c, o=o, sp=list(sp), k=list(k),
        stride=list(stride or [1] * r), pad=list(pad or [(0, 0)] * r),
        lhs_dil=list(lhs_dil or [1] * r), rhs_dil=list(rhs_dil or [1] * r),
        rev=list(rev or [0] * r), fgc=fgc, bgc=bgc,
        labels=labels or "bf%s_oi%s->bf%s" % (digits, digits, digits))


def same(k, d=1):
    """PyTorch's padding=k//2 style: (p, p) with p = d*(k-1)//2."""
    p = d * (k - 1) // 2
    return (p, p)


CASES = [
    # ResNet-18 (torchvision.models.resnet18): stem, basic blocks, the
    # strided 3x3 and the 1x1 downsample of each stage, the last stage.
    case("resnet18.conv1_7x7s2", 2, 3, 64, (64, 64), (7, 7), (2, 2),
         [(3, 3)] * 2),
    case("resnet18.layer1_3x3", 2, 64, 64, (28, 28), (3, 3), None,
         [(1, 1)] * 2),
    case("resnet18.layer2_3x3s2", 2, 64, 128, (28, 28), (3, 3), (2, 2),
         [(1, 1)] * 2),
    case("resnet18.layer2_downsample_1x1s2", 2, 64, 128, (28, 28), (1, 1),
         (2, 2)),
    case("resnet18.layer4_3x3", 2, 512, 512, (7, 7), (3, 3), None,
         [(1, 1)] * 2),
    # MobileNetV2 (torchvision.models.mobilenet_v2): stem, depthwise 3x3
    # (stride 1 and 2), expansion and projection 1x1s, the last 1x1.
    case("mobilenetv2.stem_3x3s2", 2, 3, 32, (64, 64), (3, 3), (2, 2),
         [(1, 1)] * 2),
    case("mobilenetv2.dw_3x3", 2, 32, 32, (32, 32), (3, 3), None,
         [(1, 1)] * 2, fgc=32),
    case("mobilenetv2.dw_3x3s2", 2, 96, 96, (28, 28), (3, 3), (2, 2),
         [(1, 1)] * 2, fgc=96),
    case("mobilenetv2.expand_1x1", 2, 24, 144, (14, 14), (1, 1)),
    case("mobilenetv2.project_1x1", 2, 144, 24, (14, 14), (1, 1)),
    case("mobilenetv2.last_1x1", 2, 320, 1280, (7, 7), (1, 1)),
    # Dilation (torchvision's DeepLabV3 / FCN backbones), ResNeXt's groups.
    case("atrous_3x3_d2", 2, 16, 16, (20, 20), (3, 3), None,
         [same(3, 2)] * 2, rhs_dil=(2, 2)),
    case("grouped_3x3_g4", 2, 32, 64, (14, 14), (3, 3), (2, 2),
         [(1, 1)] * 2, fgc=4),
    case("depthwise_multiplier_2", 2, 8, 16, (12, 12), (3, 3), None,
         [(1, 1)] * 2, fgc=8),
    # Layouts: NHWC (JAX/Flax), and labels in unusual orders.
    case("nhwc_3x3s2", 2, 8, 16, (15, 15), (3, 3), (2, 2), [(1, 1)] * 2,
         labels="b01f_01io->b01f"),
    case("nhwc_depthwise", 2, 16, 16, (13, 13), (3, 3), None,
         [(1, 1)] * 2, fgc=16, labels="b01f_01io->b01f"),
    case("nhwc_depthwise_multiplier_3", 2, 4, 12, (9, 10), (3, 3), (2, 1),
         [(1, 1)] * 2, fgc=4, labels="b01f_01io->b01f"),
    case("nhwc_1x1", 3, 16, 8, (6, 5), (1, 1), labels="b01f_01io->b01f"),
    case("odd_labels", 2, 6, 10, (9, 11), (3, 2), (1, 2), [(1, 0), (0, 1)],
         labels="f0b1_1o0i->0fb1"),
    case("odd_labels_grouped", 4, 6, 4, (7, 8), (2, 3), None, None, fgc=2,
         labels="1fb0_i01o->b1f0"),
    # Other ranks.
    case("conv1d_k5s2", 2, 4, 6, (17,), (5,), (2,), [(2, 2)]),
    case("conv3d_3x3x3", 1, 3, 4, (6, 7, 5), (3, 3, 3), (1, 2, 1),
         [(1, 1)] * 3),
    # The rest of XLA's window: transposed convolution (lhs_dilate),
    # padding of either sign, reversal, batch_group_count.
    case("transposed_lhs_dilate2", 2, 4, 6, (7, 7), (3, 3), None,
         [(2, 2)] * 2, lhs_dil=(2, 2)),
    case("negative_padding", 2, 3, 5, (12, 12), (3, 3), (2, 1),
         [(-1, 2), (1, -2)]),
    case("reversal", 2, 3, 5, (8, 8), (3, 2), None, [(1, 1), (0, 1)],
         rev=(1, 0)),
    case("batch_group_count_2", 4, 6, 8, (9, 9), (3, 3), None,
         [(1, 1)] * 2, bgc=2),
    case("everything", 2, 4, 6, (7, 9), (3, 2), (2, 1), [(0, 2), (-1, 1)],
         lhs_dil=(1, 2), rhs_dil=(2, 1), rev=(0, 1), fgc=2),
]


def window_text(cs):
    def join(v):
        return "x".join(str(a) for a in v)
    parts = ["size=" + join(cs["k"]), "stride=" + join(cs["stride"]),
             "pad=" + "x".join("%d_%d" % p for p in cs["pad"]),
             "lhs_dilate=" + join(cs["lhs_dil"]),
             "rhs_dilate=" + join(cs["rhs_dil"]),
             "rhs_reversal=" + join(cs["rev"])]
    return "{" + " ".join(parts) + "}"


def out_extent(cs, d):
    n = cs["sp"][d]
    padded = (n - 1) * cs["lhs_dil"][d] + 1 + sum(cs["pad"][d])
    win = (cs["k"][d] - 1) * cs["rhs_dil"][d] + 1
    return 0 if padded < win else (padded - win) // cs["stride"][d] + 1


def to_layout(a, label, canon):
    """canonical-order array -> the order of label."""
    return np.ascontiguousarray(np.transpose(a, [canon.index(ch)
                                                 for ch in label]))


def from_layout(a, label, canon):
    return np.transpose(a, [label.index(ch) for ch in canon])


def shape_text(shape):
    return "f32[%s]" % ",".join(str(d) for d in shape)


def xla_conv_torch(x, w, cs):
    """XLA's convolution in torch ops; x: [N, C, *sp], w: [O, C/G, *k]."""
    r = len(cs["sp"])
    if any(d > 1 for d in cs["lhs_dil"]):
        shape = [x.shape[0], x.shape[1]] + [
            (n - 1) * d + 1 for n, d in zip(cs["sp"], cs["lhs_dil"])]
        z = x.new_zeros(shape)
        idx = [slice(None), slice(None)] + [slice(None, None, d)
                                             for d in cs["lhs_dil"]]
        z[tuple(idx)] = x
        x = z
    pads = []
    for lo, hi in reversed(cs["pad"]):
        pads += [lo, hi]
    x = F.pad(x, pads)
    flip = [2 + d for d in range(r) if cs["rev"][d]]
    if flip:
        w = torch.flip(w, flip)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[r]
    kw = dict(stride=cs["stride"], dilation=cs["rhs_dil"])
    if cs["bgc"] == 1:
        return conv(x, w, groups=cs["fgc"], **kw)
    b = cs["bgc"]
    xs = torch.chunk(x, b, dim=0)
    ws = torch.chunk(w, b, dim=0)
    return torch.cat([conv(xi, wi, **kw) for xi, wi in zip(xs, ws)], dim=1)


def rel_error(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not np.all(np.isfinite(a)):
        return float("inf")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return diff / scale if scale > 0 else diff


def run_case(cs, conv_run, work, tol):
    r = len(cs["sp"])
    digits = "".join(str(d) for d in range(r))
    lhs_l, rest = cs["labels"].split("_")
    rhs_l, out_l = rest.split("->")
    lhs_c, rhs_c, out_c = "bf" + digits, "oi" + digits, "bf" + digits
    rng = np.random.default_rng(zlib.crc32(cs["name"].encode()))
    x = rng.standard_normal([cs["n"], cs["c"]] + cs["sp"]).astype(np.float32)
    w = rng.standard_normal([cs["o"], cs["c"] // cs["fgc"] if cs["bgc"] == 1
                             else cs["c"]] + cs["k"]).astype(np.float32)
    out_sp = [out_extent(cs, d) for d in range(r)]
    gy = rng.standard_normal([cs["n"] // cs["bgc"], cs["o"]] +
                             out_sp).astype(np.float32)
    d = os.path.join(work, cs["name"])
    os.makedirs(d, exist_ok=True)
    arrays = {"x": to_layout(x, lhs_l, lhs_c), "w": to_layout(w, rhs_l, rhs_c),
              "gy": to_layout(gy, out_l, out_c)}
    for k, v in arrays.items():
        np.save(os.path.join(d, k + ".npy"), v)
    attrs = "window=%s, dim_labels=%s" % (window_text(cs), cs["labels"])
    if cs["fgc"] > 1:
        attrs += ", feature_group_count=%d" % cs["fgc"]
    if cs["bgc"] > 1:
        attrs += ", batch_group_count=%d" % cs["bgc"]
    hlo = ("HloModule conv_check\n\nENTRY e {\n"
           "  x = %s parameter(0)\n  w = %s parameter(1)\n"
           "  ROOT y = %s convolution(x, w), %s\n}\n") % (
        shape_text(arrays["x"].shape), shape_text(arrays["w"].shape),
        shape_text(arrays["gy"].shape), attrs)
    path = os.path.join(d, "case.hlo")
    with open(path, "w") as f:
        f.write(hlo)
    p = subprocess.run([conv_run, path, d], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        print("%-34s FAIL: conv_run: %s" % (cs["name"], p.stderr.strip()))
        return False
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    yt = xla_conv_torch(xt, wt, cs)
    yt.backward(torch.tensor(gy, dtype=torch.float64))
    want = {"y": (yt.detach().numpy(), out_l, out_c),
            "gx": (xt.grad.numpy(), lhs_l, lhs_c),
            "gw": (wt.grad.numpy(), rhs_l, rhs_c)}
    errs = {}
    for k, (ref, label, canon) in want.items():
        got = from_layout(np.load(os.path.join(d, k + ".npy")), label, canon)
        errs[k] = rel_error(got, ref)
    ok = all(e <= tol for e in errs.values())
    print("%-34s %-6s y %.2e  gx %.2e  gw %.2e" % (
        cs["name"], "ok" if ok else "FAIL", errs["y"], errs["gx"],
        errs["gw"]))
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conv-run", required=True)
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--only")
    ap.add_argument("--keep")
    a = ap.parse_args()
    torch.set_num_threads(1)
    work = a.keep or tempfile.mkdtemp(prefix="conv_check.")
    bad = 0
    try:
        for cs in CASES:
            if a.only and a.only not in cs["name"]:
                continue
            if not run_case(cs, a.conv_run, work, a.tol):
                bad += 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("%d case(s) over the tolerance %.0e (max|a-b|/max|b| against "
          "torch float64)" % (bad, a.tol))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
