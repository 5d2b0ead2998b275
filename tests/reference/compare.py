#!/usr/bin/python3
"""compare.py - checks hloscope's forward pass against PyTorch.

    /usr/bin/python3 tests/reference/compare.py MODEL.json [MODEL.json ...] \\
        --hloscope build/hloscope [--loop scan|unrolled] [--tol 1e-5] \\
        [--record VECTOR.npy | --record-dir DIR] [--keep DIR]

For each model: runs `hloscope run MODEL --dump TMP`, builds the torch.nn
equivalent (torch_models.py), loads TMP/params/*.npy into its state_dict
(strict), feeds TMP/input.npy and computes the output in float64 and in
float32. The error metric is

    max relative error = max|a - b| / max|b|

with a = hloscope's TMP/output.npy and b = the torch float64 output. The
float32 torch output is reported the same way, for scale. Exit status 1 when
any model's error exceeds --tol (1e-5), or hloscope fails, or the dump does
not match the torch model; 0 otherwise.

--record VECTOR.npy (one model) or --record-dir DIR (DIR/<model>.npy for
each model) writes the torch float64 output cast to float32: the committed
vectors that tests/reference/check_vector.c compares against.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch_models as tm  # noqa: E402

TOL = 1e-5


def rel_error(a, b):
    """max|a-b| / max|b| in float64 (max|a-b| when b is all zeros); inf when
    a has a NaN or Inf."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        return float("inf"), float("inf"), float(np.max(np.abs(b)))
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return (diff / scale if scale > 0 else diff), diff, scale


def model_name(path):
    """The vector name: the file name without .json."""
    base = os.path.basename(path)
    return base[:-5] if base.endswith(".json") else base


def model_label(path):
    """What the report shows: the name, prefixed by its folder unless that
    is tests/reference/models (examples/mlp vs mlp)."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    name = model_name(path)
    return name if folder == "models" else "%s/%s" % (folder, name)


def run_hloscope(binary, model, dump, loop):
    cmd = [binary, "run", model, "--dump", dump]
    if loop:
        cmd += ["--loop", loop]
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    return p, time.time() - t0, cmd


def check_generator(desc, model, x, arrays):
    """Names of the dumped arrays that differ from the documented generator
    (hs_model.h) reimplemented in numpy: the input is U(-1, 1) from stream
    "input", parameters as torch_models.expected_params. Informational: the
    comparison itself uses whatever was dumped."""
    seed = int(desc.get("seed", 0))
    bad = []
    if not np.array_equal(tm.fill_uniform(seed, "input", -1.0, 1.0, x.size),
                          x.reshape(-1)):
        bad.append("input")
    for name, want in tm.expected_params(model, seed).items():
        if name in arrays and not np.array_equal(want, arrays[name]):
            bad.append(name)
    return bad


def compare_one(path, args):
    """Returns (ok, line) for one model."""
    name = model_label(path)
    desc = tm.load_json(path)
    if tm.has_graph(desc):
        return True, "%-24s skipped: graph blocks have no torch reference" % name
    dump = tempfile.mkdtemp(prefix="hs-ref-%s-" % model_name(path))
    try:
        p, secs, cmd = run_hloscope(args.hloscope, path, dump, args.loop)
        if p.returncode != 0:
            return False, "%s: FAIL: `%s` exited %d\n%s%s" % (
                name, " ".join(cmd), p.returncode, p.stdout, p.stderr)
        out_path = os.path.join(dump, "output.npy")
        if not os.path.exists(out_path):
            return False, "%s: FAIL: no %s (tuple output?)" % (name, out_path)
        got = np.load(out_path)
        x = np.load(os.path.join(dump, "input.npy"))

        model = tm.build(desc)
        try:
            arrays = tm.load_params(model, os.path.join(dump, "params"))
        except ValueError as e:
            return False, "%s: FAIL: %s" % (name, e)
        model.eval()
        with torch.no_grad():
            ref64 = model.double()(torch.from_numpy(x).double()).numpy()
            ref32 = model.float()(torch.from_numpy(x).float()).numpy()
        if list(got.shape) != list(ref64.shape):
            return False, "%s: FAIL: output shape %s, torch %s" % (
                name, list(got.shape), list(ref64.shape))

        err, diff, scale = rel_error(got, ref64)
        err32, _, _ = rel_error(ref32, ref64)
        gen_bad = check_generator(desc, model, x, arrays)
        ok = err <= args.tol
        line = ("%-24s %-14s hloscope %.3e  torch-f32 %.3e  (max|diff| %.3e, "
                "max|ref| %.3e, hloscope %.2fs)  %s" % (
                    name, str(list(got.shape)), err, err32, diff, scale, secs,
                    "ok" if ok else "FAIL"))
        if gen_bad:
            line += ("\n    note: differs from the generator documented in hs_model.h: "
                     + " ".join(gen_bad[:6]) + (" ..." if len(gen_bad) > 6 else ""))
        if args.record or args.record_dir:
            out = args.record or os.path.join(args.record_dir, model_name(path) + ".npy")
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
            np.save(out, ref64.astype(np.float32))
            line += "\n    recorded %s" % out
        if args.keep:
            dst = os.path.join(args.keep, name)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(dump, dst)
        return ok, line
    finally:
        shutil.rmtree(dump, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", metavar="MODEL.json")
    ap.add_argument("--hloscope", required=True, metavar="PATH_TO_BINARY")
    ap.add_argument("--loop", choices=("scan", "unrolled"))
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--record", metavar="VECTOR.npy")
    ap.add_argument("--record-dir", metavar="DIR")
    ap.add_argument("--keep", metavar="DIR", help="keep each dump in DIR/<model>")
    args = ap.parse_args()
    if args.record and len(args.models) != 1:
        ap.error("--record takes one model; use --record-dir for several")
    if args.record_dir:
        names = [model_name(m) for m in args.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            ap.error("--record-dir: several models would write %s"
                     % ", ".join(n + ".npy" for n in dup))
    if not os.access(args.hloscope, os.X_OK):
        ap.error("not an executable: %s" % args.hloscope)

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    print("torch %s, numpy %s, tolerance %g (max|hloscope - torch_f64| / max|torch_f64|)"
          % (torch.__version__, np.__version__, args.tol))
    failed = []
    for path in args.models:
        try:
            ok, line = compare_one(path, args)
        except Exception as e:  # a broken model should not hide the others
            ok, line = False, "%s: FAIL: %s: %s" % (model_label(path), type(e).__name__, e)
        print(line, flush=True)
        if not ok:
            failed.append(model_label(path))
    if failed:
        print("FAILED: %s" % " ".join(failed))
        return 1
    print("all %d models within %g" % (len(args.models), args.tol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
