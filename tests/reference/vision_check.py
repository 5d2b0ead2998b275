#!/usr/bin/python3
"""vision_check.py - the model format's vision blocks against torch.nn.

    /usr/bin/python3 tests/reference/vision_check.py --hloscope build/hloscope

Each case is a small model description (conv2d in the configurations
torchvision uses: strides, padding, dilation, groups and depthwise, 1x1,
with and without bias; batchnorm2d with running and with batch
statistics; max, average and adaptive average pooling; flatten, dropout,
relu6, hardswish; a residual with a strided shortcut) plus
examples/cnn_resnet_tiny.json. For each: `hloscope run --dump`, the same
network built from torch.nn modules, the dumped parameters loaded into
its state_dict (strict: the names are PyTorch's), the dumped input fed,
and the outputs compared as max|a - b| / max|b| against PyTorch in
float64:

  f32 cases:  <= 1e-5 (REFERENCE.md's f32 bound)
  bf16 cases: the same module after .to(torch.bfloat16) on the dumped
              (bf16-exact) parameters and input, <= 2^-7 * 4 = 3.1e-2 of
              the output's scale: bf16 keeps 8 significant bits (unit
              roundoff 2^-8), and each block rounds its output once, so a
              few blocks in sequence differ from PyTorch's bf16 kernels
              (which round at other points) by a few units of 2^-8.
Exit status 1 when a case fails."""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True
F32_TOL = 1e-5
BF16_TOL = 4 * 2.0 ** -7


# ---- the model format's vision blocks as torch.nn modules ---------------------

class Residual(nn.Module):
    """act(blocks(x) + shortcut(x)), children "0", "1", ... and
    "shortcut.<j>" as the model format names them."""

    def __init__(self, blocks, shortcut, relu):
        super().__init__()
        for i, m in enumerate(blocks):
            self.add_module(str(i), m)
        self.n = len(blocks)
        self.shortcut = nn.Sequential(*shortcut) if shortcut else None
        self.relu = relu

    def forward(self, x):
        y = x
        for i in range(self.n):
            y = getattr(self, str(i))(y)
        y = y + (self.shortcut(x) if self.shortcut is not None else x)
        return torch.relu(y) if self.relu else y


def pair(v):
    return tuple(v) if isinstance(v, list) else (v, v)


def build(b, shape):
    """(module, output shape) of block b on an input of shape."""
    t = b["type"]
    if t == "conv2d":
        m = nn.Conv2d(shape[1], b["out_channels"], pair(b["kernel_size"]),
                      stride=pair(b.get("stride", 1)),
                      padding=pair(b.get("padding", 0)),
                      dilation=pair(b.get("dilation", 1)),
                      groups=b.get("groups", 1), bias=b.get("bias", True))
    elif t == "batchnorm2d":
        m = nn.BatchNorm2d(shape[1], eps=b.get("eps", 1e-5),
                           track_running_stats=not b.get("training", False))
        m.train(b.get("training", False))
    elif t == "maxpool2d":
        m = nn.MaxPool2d(pair(b["kernel_size"]), b.get("stride"),
                         pair(b.get("padding", 0)),
                         pair(b.get("dilation", 1)))
    elif t == "avgpool2d":
        m = nn.AvgPool2d(pair(b["kernel_size"]), b.get("stride"),
                         pair(b.get("padding", 0)),
                         count_include_pad=b.get("count_include_pad", True))
    elif t == "adaptive_avgpool2d":
        m = nn.AdaptiveAvgPool2d(pair(b.get("output_size", 1)))
    elif t == "flatten":
        m = nn.Flatten(b.get("start_dim", 1))
    elif t == "dropout":
        m = nn.Dropout(b.get("p", 0.5)).eval()
    elif t == "relu":
        m = nn.ReLU()
    elif t == "relu6":
        m = nn.ReLU6()
    elif t == "hardswish":
        m = nn.Hardswish()
    elif t == "linear":
        m = nn.Linear(shape[-1], b["features"], bias=b.get("bias", True))
    elif t == "residual":
        body, s = [], shape
        for sub in b["blocks"]:
            mm, s = build(sub, s)
            body.append(mm)
        short, s2 = [], shape
        for sub in b.get("shortcut", []):
            mm, s2 = build(sub, s2)
            short.append(mm)
        m = Residual(body, short, b.get("activation", "none") == "relu")
    else:
        raise ValueError("no torch module for block type %r" % t)
    with torch.no_grad():
        out = m(torch.zeros(shape)).shape
    return m, list(out)


def build_model(desc):
    root = nn.Module()
    shape = list(desc["input"]["shape"])
    order = []
    for k, b in enumerate(desc["layers"]):
        m, shape = build(b, shape)
        name = b.get("module", "layers_%d" % k)
        root.add_module(name, m)
        order.append(name)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            for n in order:
                self.add_module(n, getattr(root, n))

        def forward(self, x):
            for n in order:
                x = getattr(self, n)(x)
            return x
    return Net()


# ---- running and comparing ----------------------------------------------------

def run_case(hloscope, name, desc, tmp):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(desc, f)
    dump = os.path.join(tmp, name)
    p = subprocess.run([hloscope, "run", path, "--dump", dump],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        return "hloscope failed: " + p.stderr.strip()
    model = build_model(desc)
    pdir = os.path.join(dump, "params")
    sd = {fn[:-4]: torch.from_numpy(np.load(os.path.join(pdir, fn)))
          for fn in os.listdir(pdir)} if os.path.isdir(pdir) else {}
    # num_batches_tracked is a counter PyTorch keeps; it is no parameter.
    want = {k for k in model.state_dict() if not k.endswith("tracked")}
    if set(sd) != want:
        return "state_dict names differ: dump %s, torch %s" % (
            sorted(set(sd) - want), sorted(want - set(sd)))
    model.load_state_dict(sd, strict=False)
    x = torch.from_numpy(np.load(os.path.join(dump, "input.npy")))
    got = np.load(os.path.join(dump, "output.npy")).astype(np.float64)
    bf16 = desc.get("dtype") == "bf16"
    with torch.no_grad():
        if bf16:
            ref = model.to(torch.bfloat16)(x.to(torch.bfloat16)).double()
        else:
            ref = model.double()(x.double())
    ref = ref.numpy()
    err = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))
    tol = BF16_TOL if bf16 else F32_TOL
    print("  %-28s %-5s max rel error %.3g (bound %.3g)"
          % (name, "bf16" if bf16 else "f32", err, tol))
    return None if err <= tol else "error %.3g above %.3g" % (err, tol)


def model(layers, shape=(2, 8, 12, 12), seed=5):
    return {"name": "vision", "seed": seed, "input": {"shape": list(shape)},
            "layers": [dict(b, module="m%d" % k)
                       for k, b in enumerate(layers)]}


CASES = {
    "conv_stride_pad": model([{"type": "conv2d", "out_channels": 16,
                               "kernel_size": 3, "stride": 2,
                               "padding": 1}]),
    "conv_7x7_stem": model([{"type": "conv2d", "out_channels": 8,
                             "kernel_size": 7, "stride": 2, "padding": 3,
                             "bias": False}], (1, 3, 20, 20)),
    "conv_dilation_rect": model([{"type": "conv2d", "out_channels": 6,
                                  "kernel_size": [3, 1], "padding": [2, 0],
                                  "dilation": [2, 1]}]),
    "conv_groups": model([{"type": "conv2d", "out_channels": 12,
                           "kernel_size": 3, "groups": 4, "padding": 1}]),
    "conv_depthwise_1x1": model([
        {"type": "conv2d", "out_channels": 8, "kernel_size": 3,
         "groups": 8, "padding": 1, "stride": 2, "bias": False},
        {"type": "conv2d", "out_channels": 16, "kernel_size": 1}]),
    "batchnorm_eval": model([{"type": "conv2d", "out_channels": 8,
                              "kernel_size": 1},
                             {"type": "batchnorm2d", "eps": 1e-3}]),
    "batchnorm_train": model([{"type": "batchnorm2d", "training": True}]),
    "maxpool": model([{"type": "maxpool2d", "kernel_size": 3, "stride": 2,
                       "padding": 1}]),
    "maxpool_dilated": model([{"type": "maxpool2d", "kernel_size": 2,
                               "dilation": 2}]),
    "avgpool_pad": model([{"type": "avgpool2d", "kernel_size": 3,
                           "stride": 2, "padding": 1}]),
    "avgpool_no_pad_count": model([{"type": "avgpool2d", "kernel_size": 3,
                                    "stride": 2, "padding": 1,
                                    "count_include_pad": False}]),
    "adaptive_head": model([{"type": "relu6"}, {"type": "hardswish"},
                            {"type": "adaptive_avgpool2d",
                             "output_size": 2},
                            {"type": "flatten"}, {"type": "dropout"},
                            {"type": "linear", "features": 5}]),
    "residual": model([{"type": "residual", "activation": "relu",
                        "blocks": [{"type": "conv2d", "out_channels": 16,
                                    "kernel_size": 3, "stride": 2,
                                    "padding": 1, "bias": False},
                                   {"type": "batchnorm2d"},
                                   {"type": "relu"}],
                        "shortcut": [{"type": "conv2d", "out_channels": 16,
                                      "kernel_size": 1, "stride": 2,
                                      "bias": False}]}]),
}


# Descriptions the loader refuses, the JSON path its error names and a
# piece of its message.
ERRORS = [
    (model([{"type": "conv2d", "out_channels": 4, "kernel_size": 3}],
           (2, 8)), "/layers/0", "needs a 4-D input"),
    (model([{"type": "conv2d", "out_channels": 6, "kernel_size": 3,
             "groups": 4}]), "/layers/0/groups", "must divide"),
    (model([{"type": "conv2d", "out_channels": 4, "kernel_size": 5,
             "dilation": 4}]), "/layers/0/kernel_size", "does not fit"),
    (model([{"type": "maxpool2d", "kernel_size": 2, "padding": 2}]),
     "/layers/0/padding", "at most half"),
    (model([{"type": "adaptive_avgpool2d", "output_size": 5}]),
     "/layers/0/output_size", "multiples"),
    (model([{"type": "conv2d", "out_channels": 4, "kernel_size": [3, 3, 3]}]),
     "/layers/0/kernel_size", "[height, width]"),
    (model([{"type": "conv2d", "out_channel": 4, "kernel_size": 3}]),
     "/layers/0/out_channel", "did you mean 'out_channels'"),
    (model([{"type": "residual", "blocks": [
        {"type": "conv2d", "out_channels": 4, "kernel_size": 1,
         "stride": 2}]}]), "/layers/0", "shortcut gives"),
    (dict(model([{"type": "relu6"}]), dtype="bf8"), "/dtype", "bf16"),
]


def check_errors(hloscope, tmp):
    failed = 0
    for k, (desc, path, piece) in enumerate(ERRORS):
        f = os.path.join(tmp, "error%d.json" % k)
        with open(f, "w") as out:
            json.dump(desc, out)
        p = subprocess.run([hloscope, "compile", f], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        msg = p.stderr.strip()
        ok = p.returncode != 0 and (": %s: " % path) in msg and piece in msg
        print("  error %-24s %s" % (path, "ok" if ok else "WRONG: " + msg))
        failed += not ok
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hloscope", required=True)
    args = ap.parse_args()
    src = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    with open(os.path.join(src, "examples", "cnn_resnet_tiny.json")) as f:
        cases = dict(CASES, cnn_resnet_tiny=json.load(f))
    for name in ("conv_depthwise_1x1", "residual", "cnn_resnet_tiny",
                 "avgpool_pad", "adaptive_head", "batchnorm_eval"):
        d = copy.deepcopy(cases[name])
        d["dtype"] = "bf16"
        cases[name + "_bf16"] = d
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, desc in cases.items():
            why = run_case(args.hloscope, name, desc, tmp)
            if why:
                print("FAIL %s: %s" % (name, why))
                failed.append(name)
        n_errors = check_errors(args.hloscope, tmp)
    print("%d of %d cases pass, %d of %d refusals name their path"
          % (len(cases) - len(failed), len(cases),
             len(ERRORS) - n_errors, len(ERRORS)))
    return 1 if failed or n_errors else 0


if __name__ == "__main__":
    sys.exit(main())
