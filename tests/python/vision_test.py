"""Vision export tests (issue 16's leftovers): adaptive average and max
pooling to sizes that do not divide the input, forward against PyTorch
eager and one training step against autograd, and a torchvision ResNet's
`--dump` loaded strictly into a fresh torchvision ResNet.

usage: vision_test.py HLOSCOPE_BIN SOURCE_DIR TEST_NAME
Runs with /usr/bin/python3 (Debian's torch 1.13); the harness (run_dump,
forward_matches, load and compare) is export_test.py's."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import export_test as h  # reads the same argv: BIN SOURCE_DIR TEST_NAME
from export_test import Fail, check, rel_err

import hloscope  # noqa: E402 (export_test put python/ on the path)
from hloscope.ops_vision import adaptive_bins  # noqa: E402


class Pooled(nn.Module):
    """A convolution (so that there are parameters to load and to
    differentiate) followed by one pooling, a module or a function."""

    def __init__(self, pool):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = pool

    def forward(self, x):
        return self.pool(self.conv(x))


# (what, pooling, input shape, how it lowers: "window" one reduce-window
# and no slice, "bins" per-bin slices)
POOLS = [
    ("avg 7x10 to 3x4", nn.AdaptiveAvgPool2d((3, 4)), (2, 3, 7, 10), "bins"),
    ("max 7x10 to 3x4", nn.AdaptiveMaxPool2d((3, 4)), (2, 3, 7, 10), "bins"),
    ("avg 5x5 to 7x7", lambda x: F.adaptive_avg_pool2d(x, 7), (2, 3, 5, 5),
     "bins"),
    ("max 5x6 to 7xNone", lambda x: F.adaptive_max_pool2d(x, (7, None)),
     (1, 3, 5, 6), "bins"),
    ("avg 10x7 to 4xNone", nn.AdaptiveAvgPool2d((4, None)), (1, 3, 10, 7),
     "bins"),
    ("max 10x9 to 4x3", nn.AdaptiveMaxPool2d((4, 3)), (1, 3, 10, 9), "bins"),
    ("avg 7x7 to 3x3", nn.AdaptiveAvgPool2d(3), (2, 3, 7, 7), "window"),
    ("max 7x7 to 3x3", nn.AdaptiveMaxPool2d(3), (2, 3, 7, 7), "window"),
    ("avg 9x6 to 3x2", lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
     (1, 3, 9, 6), "window"),
    ("max 5x7 to 1x1", nn.AdaptiveMaxPool2d(1), (2, 3, 5, 7), "reduce"),
]


def _ops(model):
    return [o["op"] for blk in model["layers"] for o in blk.get("ops", [])]


def test_adaptive_bins_are_pytorchs():
    """adaptive_bins against PyTorch itself: pooling an index ramp with
    adaptive max gives each bin's last index, with adaptive min (max of
    the negated ramp) its first."""
    for n, out in ((7, 3), (10, 4), (5, 7), (1, 3), (6, 6), (13, 5)):
        ramp = torch.arange(float(n)).reshape(1, 1, n)
        last = F.adaptive_max_pool1d(ramp, out).reshape(-1).long().tolist()
        first = (-F.adaptive_max_pool1d(-ramp, out)).reshape(-1).long()
        want = [(s, e + 1) for s, e in zip(first.tolist(), last)]
        check(adaptive_bins(n, out) == want,
              f"{n} to {out}: {adaptive_bins(n, out)} vs PyTorch's {want}")
    print("bins equal PyTorch's for 6 sizes")


def test_adaptive_pooling_matches_pytorch():
    """Adaptive average and max pooling to sizes that do and do not divide
    the input (7 to 3, 10 to 4, 5 to 7, None entries, non-square), as
    modules and as functions: after a run on the emulated device within
    1e-5 of PyTorch eager, lowered as the bins allow."""
    for i, (what, pool, shape, how) in enumerate(POOLS):
        torch.manual_seed(40 + i)
        m = Pooled(pool)
        model, _ = h.forward_matches(m, torch.randn(*shape),
                                     tag=what.replace(" ", "_"))
        ops = _ops(model)
        lowered = {"bins": "slice" in ops and "concatenate" in ops,
                   "window": "reduce-window" in ops and "slice" not in ops,
                   "reduce": "reduce" in ops and "slice" not in ops}[how]
        check(lowered, f"{what}: lowered as {how}: {sorted(set(ops))}")


def test_adaptive_pooling_bf16_matches_pytorch_bf16():
    """The uneven cases exported with dtype="bf16" against PyTorch's own
    bf16 forward, within export_test's bound (3e against PyTorch bf16, 2e
    against f32, e PyTorch's bf16 error)."""
    for what, pool, shape, how in POOLS:
        if how == "bins":
            h._vision_bf16(lambda: Pooled(pool),
                           what.replace(" ", "_") + "_bf16", shape)


def test_torchvision_adaptive_pooling_matches_pytorch():
    """torchvision's AlexNet features and avgpool (AdaptiveAvgPool2d((6,
    6))) on inputs whose feature map is 8x8 and 4x4 (300 and 160 pixels):
    pooled down and up to 6x6 by bins of two sizes."""
    import torchvision
    for side, fmap in ((300, 8), (160, 4)):
        torch.manual_seed(side)
        a = torchvision.models.alexnet(weights=None)
        m = nn.Sequential(a.features, a.avgpool)
        x = torch.randn(1, 3, side, side)
        with torch.no_grad():
            check(a.features(x).shape[-1] == fmap,
                  f"alexnet's feature map at {side}: {fmap}")
        model, _ = h.forward_matches(m, x, tag=f"alexnet_{side}")
        check("slice" in _ops(model), f"{fmap} to 6 pooled by bins")


class PoolHead(nn.Module):
    """Two adaptive poolings of one convolution, each to a size that does
    not divide the 7x10 map, concatenated into a linear head."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.maxpool = nn.AdaptiveMaxPool2d((3, 4))
        self.avgpool = nn.AdaptiveAvgPool2d((5, 7))
        self.fc = nn.Linear(4 * (12 + 35), 6)

    def forward(self, x):
        y = self.conv(x)
        z = torch.cat([torch.flatten(self.maxpool(y), 1),
                       torch.flatten(self.avgpool(y), 1)], 1)
        return self.fc(z)


def test_adaptive_pooling_gradients_match_autograd():
    """One SGD step through uneven adaptive max and average pooling: the
    loss and every parameter's gradient within 1e-4 of torch autograd on
    the weights and input hloscope drew."""
    torch.manual_seed(47)
    m = PoolHead()
    x = torch.randn(2, 3, 7, 10)
    train = {"loss": "mse", "target": "random",
             "optimizer": {"type": "sgd", "lr": 0.01}, "steps": 1}
    model = hloscope.export(m, x, train=train)
    d0 = h.run_dump({k: v for k, v in model.items() if k != "train"},
                    "pool-init")
    hloscope.load_dump(m, d0)
    d = h.run_dump(model, "pool-train", "--train")
    xin = torch.from_numpy(np.load(os.path.join(d0, "input.npy")))
    target = torch.from_numpy(np.load(os.path.join(d, "target.npy")))
    m.zero_grad()
    loss = F.mse_loss(m(xin), target)
    loss.backward()
    got = float(np.load(os.path.join(d, "loss.npy")).reshape(-1)[0])
    err = abs(got - float(loss)) / abs(float(loss))
    grads = {n: rel_err(p.grad.numpy(),
                        np.load(os.path.join(d, "grads", n + ".npy")))
             for n, p in m.named_parameters()}
    print(f"loss rel err {err:.3g}, gradients {grads}")
    check(err <= 1e-4, f"loss relative error {err}")
    check(max(grads.values()) <= 1e-4, f"gradient relative errors {grads}")


class PooledWithIndices(Pooled):
    def forward(self, x):
        return self.pool(self.conv(x))[0]


def test_adaptive_pooling_refusals_are_listed():
    """return_indices=True (a second output) is listed with its module
    path, not exported without it."""
    m = PooledWithIndices(nn.AdaptiveMaxPool2d((3, 4), return_indices=True))
    try:
        hloscope.export(m, torch.randn(1, 3, 7, 10))
    except hloscope.ExportError as e:
        print(e)
        check(any(path == "pool" and "adaptive_max_pool2d" in op
                  for op, path, n in e.unsupported) and
              "return_indices=True" in str(e), f"listed: {e.unsupported}")
        return
    raise Fail("export with return_indices=True did not fail")


def test_resnet18_dump_loads_into_a_fresh_resnet18():
    """torchvision's resnet18 exported, run with --dump: the files are
    the state_dict's names (the projection shortcut's
    layer2.0.downsample.0.weight and downsample.1.running_mean included),
    load_state_dict(strict=True) puts them into a freshly built resnet18
    (only the integer num_batches_tracked counters, which eval never
    reads, are not in the dump), and the fresh module's output equals the
    device's within 1e-5."""
    import torchvision
    torch.manual_seed(51)
    m = h._with_running_stats(torchvision.models.resnet18(weights=None),
                              (2, 3, 64, 64), 52)
    d = h.run_dump(hloscope.export(m, torch.randn(1, 3, 64, 64)),
                   "resnet18_fresh")
    pdir = os.path.join(d, "params")
    sd = {f[:-4]: torch.from_numpy(np.load(os.path.join(pdir, f)))
          for f in os.listdir(pdir)}
    fresh = torchvision.models.resnet18(weights=None).eval()
    want = fresh.state_dict()
    for name in ("layer2.0.downsample.0.weight",
                 "layer2.0.downsample.1.running_mean",
                 "layer4.0.downsample.1.running_var"):
        check(name in sd and sd[name].shape == want[name].shape,
              f"{name} dumped under the state_dict's name and shape")
    extra = set(sd) - set(want)
    missing = set(want) - set(sd)
    check(not extra, f"dumped names outside the state_dict: {sorted(extra)}")
    check(all(k.endswith(".num_batches_tracked") for k in missing),
          f"state the dump lacks: {sorted(missing)[:5]}")
    hloscope.load_dump(fresh, d, strict=True)
    fresh.eval()
    check(torch.equal(fresh.layer2[0].downsample[1].running_mean,
                      m.layer2[0].downsample[1].running_mean),
          "running statistics come from the dump, not the fresh module")
    xin = torch.from_numpy(np.load(os.path.join(d, "input.npy")))
    with torch.no_grad():
        out = fresh(xin).numpy()
    err = rel_err(out, np.load(os.path.join(d, "output.npy")))
    print(f"{len(sd)} tensors loaded strictly, output rel err {err:.3g}")
    check(err <= 1e-5, f"relative error {err} > 1e-5")


if __name__ == "__main__":
    # export_test's runner (it finds test_NAME in its own module, and
    # removes its temporary directory) with these tests added to it.
    for k, v in list(globals().items()):
        if k.startswith("test_"):
            setattr(h, k, v)
    sys.exit(h.main())
