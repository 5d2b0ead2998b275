#!/usr/bin/python3
"""conv_mobilenet.py - MobileNetV2's forward pass as an HLO module: run on
the emulated device, checked against PyTorch, and its FLOPs counted.

    /usr/bin/python3 tests/reference/conv_mobilenet.py --hloscope build/hloscope \\
        [--batch 1] [--tol 1e-5] [--keep DIR]

Writes the network of torchvision's mobilenet_v2 (width 1.0, 224x224,
NCHW; the inverted-residual table of the paper, as torchvision builds it)
as HLO text: every convolution (stem, 1x1 expansions, depthwise 3x3 with
stride 1 and 2, 1x1 projections, the last 1x1), ReLU6 as clamp, the
residual adds, global average pooling as reduce and the classifier as
dot. Batch norms are left out (in inference they fold into the
convolutions); instead each kernel is scaled by sqrt(6 / fan_in) (sqrt(3 /
fan_in) before a linear output), in f32 on both sides, so that the
activations keep their size through the 52 layers. Parameters are named as torchvision's state_dict names
them. torchvision itself is not needed: the table is below.

`hloscope run FILE --dump DIR` executes it with its U(-1, 1) arguments and
dumps them; PyTorch computes the same network in float64 from the dumped
numbers (F.conv2d with groups, clamp, adaptive average pooling, linear).
Checks:
  - output: max|a - b| / max|b| <= --tol (1e-5);
  - FLOPs: hloscope's count for the run is within 5% above the
    convolutions' and the classifier's 2 x multiply-adds (the rest is
    element-wise work); the convolutions alone as 2 x output elements (a
    dot without its window, the former cost rule) are printed for scale.
Exit 1 when a check fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# torchvision's inverted_residual_setting: expansion t, channels c,
# repeats n, first stride s.
SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
           (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def layers():
    """The convolutions in order: (kind, name, cin, cout, k, stride,
    groups, relu6) and ('res_begin',) / ('res_end',) markers."""
    out = [("conv", "features.0.0.weight", 3, 32, 3, 2, 1, True)]
    cin, idx = 32, 1
    for t, c, n, s in SETTING:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            res = stride == 1 and cin == c
            p = "features.%d.conv." % idx
            if res:
                out.append(("res_begin",))
            j = 0
            if t != 1:
                out.append(("conv", p + "0.0.weight", cin, hidden, 1, 1, 1,
                            True))
                j = 1
            out.append(("conv", p + "%d.0.weight" % j, hidden, hidden, 3,
                        stride, hidden, True))
            out.append(("conv", p + "%d.weight" % (j + 1), hidden, c, 1, 1,
                        1, False))
            if res:
                out.append(("res_end",))
            cin, idx = c, idx + 1
    out.append(("conv", "features.18.0.weight", cin, 1280, 1, 1, 1, True))
    return out


def weight_scale(item):
    """sqrt(6 / fan_in) before ReLU6, sqrt(3 / fan_in) before a linear
    output: unit variance in, unit variance out, for U(-1, 1) weights."""
    _, _, cin, _, k, _, groups, relu = item
    fan_in = cin // groups * k * k
    return float(np.float32(np.sqrt((6.0 if relu else 3.0) / fan_in)))


def hlo_text(batch):
    params, body = [], []
    shape = [batch, 3, 224, 224]

    def sh(s):
        return "f32[%s]" % ",".join(str(d) for d in s)

    params.append(("x", shape))
    cur, n, res_stack = "x", 0, []
    conv_flops, conv_outputs = 0, 0
    for item in layers():
        if item[0] == "res_begin":
            res_stack.append((cur, list(shape)))
            continue
        if item[0] == "res_end":
            skip, _ = res_stack.pop()
            n += 1
            body.append("  v%d = %s add(%s, %s)" % (n, sh(shape), cur, skip))
            cur = "v%d" % n
            continue
        _, name, cin, cout, k, stride, groups, relu = item
        params.append((name, [cout, cin // groups, k, k]))
        pad = k // 2
        hw = (shape[2] + 2 * pad - k) // stride + 1
        shape = [batch, cout, hw, hw]
        n += 1
        attrs = "window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d}, " \
                "dim_labels=bf01_oi01->bf01" % (k, k, stride, stride, pad,
                                                pad, pad, pad)
        if groups > 1:
            attrs += ", feature_group_count=%d" % groups
        # He-style scaling of the U(-1, 1) arguments (in f32 on both
        # sides), so that activations keep their size through 52 layers
        # as batch norm would keep them.
        wshape = [cout, cin // groups, k, k]
        body += ["  s%d = f32[] constant(%r)" % (n, weight_scale(item)),
                 "  b%d = %s broadcast(s%d), dimensions={}" % (n, sh(wshape),
                                                              n),
                 "  w%d = %s multiply(%s, b%d)" % (n, sh(wshape), name, n)]
        body.append("  v%d = %s convolution(%s, w%d), %s" % (
            n, sh(shape), cur, n, attrs))
        conv_flops += 2 * batch * cout * hw * hw * (cin // groups) * k * k
        conv_outputs += batch * cout * hw * hw
        cur = "v%d" % n
        if relu:
            n += 1
            body.append("  v%d = %s clamp(zero, %s, six)" % (n, sh(shape),
                                                             cur))
            cur = "v%d" % n
    params.append(("classifier.1.weight", [1000, 1280]))
    params.append(("classifier.1.bias", [1000]))
    hw = shape[2]
    body += [
        "  sum = f32[%d,1280] reduce(%s, zero), dimensions={2,3}, "
        "to_apply=add_f32" % (batch, cur),
        "  inv = f32[] constant(%r)" % (1.0 / (hw * hw)),
        "  scale = f32[%d,1280] broadcast(inv), dimensions={}" % batch,
        "  mean = f32[%d,1280] multiply(sum, scale)" % batch,
        "  logits = f32[%d,1000] dot(mean, classifier.1.weight), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={1}" % batch,
        "  bias = f32[%d,1000] broadcast(classifier.1.bias), "
        "dimensions={1}" % batch,
        "  ROOT out = f32[%d,1000] add(logits, bias)" % batch]
    lines = ["HloModule mobilenet_v2", "",
             "add_f32 {", "  a = f32[] parameter(0)",
             "  b = f32[] parameter(1)", "  ROOT s = f32[] add(a, b)", "}",
             "", "ENTRY main {"]
    for k, (name, s) in enumerate(params):
        lines.append("  %s = %s parameter(%d)" % (name, sh(s), k))
    lines += ["  zero = f32[] constant(0)", "  six = f32[] constant(6)"]
    lines += body + ["}", ""]
    dense = 2 * batch * 1280 * 1000
    return "\n".join(lines), conv_flops + dense, conv_outputs


def torch_forward(x, p):
    """The same network in torch ops, float64."""
    res_stack = []
    for item in layers():
        if item[0] == "res_begin":
            res_stack.append(x)
            continue
        if item[0] == "res_end":
            x = x + res_stack.pop()
            continue
        _, name, cin, cout, k, stride, groups, relu = item
        w = (p[name].to(torch.float32) *
             np.float32(weight_scale(item))).to(torch.float64)
        x = F.conv2d(x, w, stride=stride, padding=k // 2, groups=groups)
        if relu:
            x = torch.clamp(x, 0, 6)
    x = F.adaptive_avg_pool2d(x, 1).flatten(1)
    return F.linear(x, p["classifier.1.weight"], p["classifier.1.bias"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hloscope", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--keep")
    a = ap.parse_args()
    torch.set_num_threads(1)
    work = a.keep or tempfile.mkdtemp(prefix="conv_mobilenet.")
    os.makedirs(work, exist_ok=True)
    ok = True
    try:
        text, want_flops, conv_outputs = hlo_text(a.batch)
        path = os.path.join(work, "mobilenet_v2.hlo")
        with open(path, "w") as f:
            f.write(text)
        dump = os.path.join(work, "dump")
        p = subprocess.run([a.hloscope, "run", path, "--dump", dump],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 0:
            print("FAIL: hloscope run: %s" % p.stderr.strip())
            return 1
        m = re.search(r"^flops:\s+(\S+)", p.stdout, re.M)
        got_flops = float(m.group(1)) if m else float("nan")
        params = {}
        for fn in os.listdir(os.path.join(dump, "params")):
            arr = np.load(os.path.join(dump, "params", fn))
            params[fn[:-4]] = torch.tensor(arr, dtype=torch.float64)
        x = params.pop("x")
        ref = torch_forward(x, params).numpy()
        got = np.load(os.path.join(dump, "output.npy")).astype(np.float64)
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        flops_ok = want_flops <= got_flops <= 1.05 * want_flops
        print("mobilenet_v2 batch %d: output error %.2e (tol %.0e) %s" % (
            a.batch, err, a.tol, "ok" if err <= a.tol else "FAIL"))
        print("flops: hloscope %.4g, convolutions + classifier %.4g "
              "(ratio %.4f) %s; as dots without the window %.4g "
              "(%.0fx low)" % (got_flops, want_flops, got_flops / want_flops,
                               "ok" if flops_ok else "FAIL",
                               2.0 * conv_outputs,
                               want_flops / (2.0 * conv_outputs)))
        ok = err <= a.tol and flops_ok
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
