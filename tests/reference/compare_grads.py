#!/usr/bin/python3
"""compare_grads.py - checks hloscope's training step against PyTorch
autograd and torch.optim.

    /usr/bin/python3 tests/reference/compare_grads.py MODEL.json [...] \\
        --driver build/tests/reference/train_dump \\
        [--loss mse|cross_entropy] [--optimizer sgd|adam] [--lr 0.01] \\
        [--steps 10] [--target random|zeros] [--tol 1e-4] \\
        [--param-tol X] [--keep DIR]

For each model description (without a "train" section of its own, e.g.
tests/reference/models/*.json) a copy with

    "train": {"loss", "target", "optimizer": {"type", "lr"}, "steps"}

is written to a temporary directory and trained by the driver (train_dump,
which writes the same files as `hloscope run --dump DIR` after training:
input.npy, params/, target.npy, loss.npy, grads/, updated/). Then the torch
equivalent (torch_models.py) is loaded with the dumped initial parameters
and, in float64:

  * the loss and the gradient of every parameter (loss.backward()) are
    compared with step 1's loss and DIR/grads/<name>.npy;
  * the same number of optimizer steps (torch.optim.SGD(lr) or
    torch.optim.Adam(lr), same input and target every step) gives a loss
    per step, compared with DIR/loss.npy, and final parameters, compared
    with DIR/updated/<name>.npy.

Error metric, per array: max|a - b| / max|b| (a = hloscope, b = torch);
a gradient that is analytically zero (below 1e-6 of the model's largest
gradient entry) is measured against that largest entry instead.
Exit status 1 when any gradient or per-step loss error exceeds --tol
(1e-4), a final parameter error exceeds --param-tol, or the driver fails;
0 otherwise. --param-tol defaults to --tol for SGD and to 1e-3 for Adam:
Adam divides each gradient entry by its own running magnitude, so an entry
whose gradient is at the f32 rounding floor (|g| ~ 1e-9, where f32 and the
float64 reference differ by a few percent) still takes an lr-sized step
whose size depends on that rounding. The loss does not notice (it is
checked at 1e-4 all the same), the parameter itself does. mse is
F.mse_loss(out, target); cross_entropy is F.cross_entropy over the last axis
(logits reshaped to [-1, classes], targets to [-1]).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_models as tm  # noqa: E402

TOL = 1e-4


def rel_error(a, b, floor=0.0):
    """max|a-b| / max(max|b|, floor) in float64; inf when a is not
    finite."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        return float("inf")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = max(float(np.max(np.abs(b))) if b.size else 0.0, floor)
    return diff / scale if scale > 0 else diff


def grad_errors(ours, ref):
    """{name: error} for every gradient. A parameter whose gradient is
    analytically zero (a bias before a softmax over the axis it is constant
    along) gets f32 rounding noise where float64 gets ~1e-18, so its own
    scale means nothing: gradients below 1e-6 of the largest gradient entry
    of the model are measured against that largest entry instead."""
    top = max((float(np.max(np.abs(g))) for g in ref.values() if g.size),
              default=0.0)
    out = {}
    for n, g in ref.items():
        own = float(np.max(np.abs(g))) if g.size else 0.0
        floor = top if own < 1e-6 * top else 0.0
        out[n] = rel_error(ours[n], g, floor) if n in ours else float("inf")
    return out


def loss_fn(kind, out, target):
    if kind == "mse":
        return F.mse_loss(out, target)
    classes = out.shape[-1]
    return F.cross_entropy(out.reshape(-1, classes), target.reshape(-1).long())


def load_target(path, kind):
    t = np.load(path)
    if kind == "mse":
        return torch.from_numpy(t.astype(np.float64))
    return torch.from_numpy(t.astype(np.int64))


def torch_reference(desc, dump, kind, optimizer, lr, steps):
    """(initial loss, {name: grad}, [loss per step], {name: final value}),
    all float64."""
    torch.manual_seed(0)
    model = tm.build(desc)
    tm.load_params(model, os.path.join(dump, "params"))
    model = model.double()
    x = tm.load_input(os.path.join(dump, "input.npy")).double()
    target = load_target(os.path.join(dump, "target.npy"), kind)

    loss = loss_fn(kind, model(x), target)
    model.zero_grad()
    loss.backward()
    grads = {n: p.grad.detach().numpy().copy() for n, p in model.named_parameters()}
    loss0 = float(loss)

    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(kind, model(x), target)
        loss.backward()
        losses.append(float(loss))
        opt.step()
    final = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return loss0, grads, losses, final


def read_dir(path):
    return {fn[:-4]: np.load(os.path.join(path, fn))
            for fn in sorted(os.listdir(path)) if fn.endswith(".npy")}


def check_model(path, args, tmp):
    desc = tm.load_json(path)
    desc["train"] = {"loss": args.loss, "target": args.target,
                     "optimizer": {"type": args.optimizer, "lr": args.lr},
                     "steps": args.steps}
    name = os.path.basename(path)[:-5]
    label = "%s %s/%s" % (name, args.loss, args.optimizer)
    model_json = os.path.join(tmp, name + ".json")
    with open(model_json, "w") as f:
        json.dump(desc, f)
    dump = os.path.join(tmp, name)
    cmd = [args.driver, model_json, dump, "--loop", "unrolled"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        print("FAIL %-34s driver failed: %s" % (label, p.stderr.strip()))
        return False

    loss0, grads, losses, final = torch_reference(
        desc, dump, args.loss, args.optimizer, args.lr, args.steps)
    ours_grads = read_dir(os.path.join(dump, "grads"))
    ours_final = read_dir(os.path.join(dump, "updated"))
    ours_losses = np.load(os.path.join(dump, "loss.npy"))

    problems = []
    if set(ours_grads) != set(grads):
        problems.append("gradient names differ: %s" %
                        sorted(set(ours_grads) ^ set(grads)))
    errs = grad_errors(ours_grads, grads)
    worst = max(errs, key=errs.get)
    g_err = errs[worst]
    l0_err = rel_error(ours_losses[0], loss0)
    step_err = max(rel_error(a, b) for a, b in zip(ours_losses, losses))
    last_err = rel_error(ours_losses[-1], losses[-1])
    # Final parameters, but for those whose gradient is analytically zero:
    # under Adam their f32 rounding noise is normalized into real steps
    # (see --param-tol), while float64's 1e-18 stays below eps.
    top = max(float(np.max(np.abs(g))) for g in grads.values())
    p_err = max((rel_error(ours_final[n], final[n]) for n in final
                 if n in ours_final
                 and float(np.max(np.abs(grads[n]))) >= 1e-6 * top),
                default=0.0)
    if len(ours_losses) != len(losses):
        problems.append("%d losses, expected %d" % (len(ours_losses), len(losses)))
    param_tol = args.param_tol
    if param_tol is None:
        param_tol = args.tol if args.optimizer == "sgd" else 1e-3
    for what, err, tol in (("gradient", g_err, args.tol),
                           ("step-1 loss", l0_err, args.tol),
                           ("per-step loss", step_err, args.tol),
                           ("final parameters", p_err, param_tol)):
        if not err <= tol:
            problems.append("%s error %.3g > %.0e" % (what, err, tol))
    status = "ok  " if not problems else "FAIL"
    print("%s %-34s grads %.2e (worst %s)  loss@1 %.2e  loss@%d %.2e "
          "(%.6g -> %.6g)  params %.2e"
          % (status, label, g_err, worst, l0_err, args.steps, last_err,
             losses[0], losses[-1], p_err))
    for msg in problems:
        print("     " + msg)
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--driver", required=True,
                    help="the train_dump binary (tests/reference/train_dump.c)")
    ap.add_argument("--loss", default="mse", choices=["mse", "cross_entropy"])
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--target", default="random", choices=["random", "zeros"])
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--param-tol", type=float, default=None,
                    help="final parameters (default: --tol for sgd, 1e-3 "
                         "for adam)")
    ap.add_argument("--keep", help="keep the dumps in this directory")
    args = ap.parse_args()
    torch.set_num_threads(1)

    tmp = args.keep or tempfile.mkdtemp(prefix="hs_grads_")
    os.makedirs(tmp, exist_ok=True)
    try:
        ok = all([check_model(m, args, tmp) for m in args.models])
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
