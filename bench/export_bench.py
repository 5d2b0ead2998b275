"""Export time of torchvision's resnet18 and mobilenet_v2 (1x3x224x224,
f32 and bf16) with hloscope's run time of each export on the emulated
device (`hloscope run`: the process's wall clock and the host time of its
execute step) and PyTorch's eager forward of the same model for scale;
then issue 16's table: the export time of torchvision's resnet18 and
vit_b_16 (1x3x224x224) and of a 32-layer decoder (tests/python/models.py:
FxDecoder, which torch.fx traces symbolically, and the Llama-style
decoder, which needs the concrete trace), beside torch.fx.symbolic_trace
and torch.jit.trace of the same module in the same run, and hloscope's
compile time of each export (`hloscope compile`, wall clock of the
process).

usage: /usr/bin/python3 bench/export_bench.py [build/hloscope] [--repeats N]
       [--vision-only | --traces-only]
"""
import argparse
import warnings
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import torch  # noqa: E402
import torch.fx  # noqa: E402

import hloscope  # noqa: E402
import models  # noqa: E402


def timed(fn, repeats):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times), min(times)


def fmt(s):
    return f"{s * 1e3:8.1f} ms"


def compile_time(bin_, model, path, repeats):
    """Writes model to path; the median wall clock of `hloscope compile`."""
    with open(path, "w") as f:
        json.dump(model, f)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([bin_, "compile", path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def run_wall(bin_, path, repeats):
    """Median wall clock of `hloscope run` and of its execute step."""
    walls, execs = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = subprocess.run([bin_, "run", path], check=True,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True)
        walls.append(time.perf_counter() - t0)
        line = [ln for ln in r.stdout.splitlines()
                if ln.startswith("execute:")][0]
        execs.append(float(line.split(",")[1].split()[0]) / 1e3)
    return statistics.median(walls), statistics.median(execs)


def vision(a, tmp):
    import torchvision
    x = torch.randn(1, 3, 224, 224)
    print(f"vision: input {list(x.shape)}, median of {a.repeats} runs, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'model':22} {'hloscope.export':>12} {'fx.symbolic_trace':>18} "
          f"{'hloscope compile':>17} {'hloscope run':>13} "
          f"{'(execute)':>10} {'torch eager':>12}")
    for name in ("resnet18", "mobilenet_v2"):
        m = getattr(torchvision.models, name)(weights=None).eval()
        for dtype in ("f32", "bf16"):
            model, med, _ = timed(lambda: hloscope.export(m, x, dtype=dtype),
                                  a.repeats)
            _, fx, _ = timed(lambda: torch.fx.symbolic_trace(m), a.repeats)
            path = os.path.join(tmp, f"{name}_{dtype}.json")
            comp = compile_time(a.bin, model, path, a.repeats)
            wall, ex = run_wall(a.bin, path, a.repeats)
            mm = m if dtype == "f32" else m.to(torch.bfloat16)
            xx = x if dtype == "f32" else x.to(torch.bfloat16)
            with torch.no_grad():
                _, eager, _ = timed(lambda: mm(xx), a.repeats)
            m.float()
            print(f"{name + ' ' + dtype:22} {fmt(med):>12} {fmt(fx):>18} "
                  f"{fmt(comp):>17} {fmt(wall):>13} "
                  f"{fmt(ex):>10} {fmt(eager):>12}")


def traces(a):
    """Issue 16's table: hloscope.export beside torch.fx.symbolic_trace
    and torch.jit.trace of the same module, and hloscope compile of the
    export."""
    import torchvision
    image, seq = torch.randn(1, 3, 224, 224), torch.randn(1, 128, 256)
    cases = [
        ("resnet18", torchvision.models.resnet18(weights=None), image,
         "unrolled"),
        ("vit_b_16", torchvision.models.vit_b_16(weights=None), image,
         "unrolled"),
        ("fx-decoder 32x256", models.FxDecoder(256, 8, 32), seq,
         "unrolled"),
        ("fx-decoder 32x256 scan_layers",
         models.FxDecoder(256, 8, 32, scan=True), seq, "scan"),
        ("llama 32x256", models.Llama(256, 8, 688, 32), seq, "unrolled"),
        ("llama 32x256 scan_layers",
         models.Llama(256, 8, 688, 32, scan=True), seq, "scan"),
    ]
    print(f"inputs {list(image.shape)} and {list(seq.shape)}, median (min) "
          f"of {a.repeats} runs, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} cpus")
    print(f"{'model':32} {'hloscope.export':>22} {'fx.symbolic_trace':>22} "
          f"{'jit.trace':>22} {'hloscope compile':>18}  ops  trace")
    tmp = tempfile.mkdtemp(prefix="hs-export-bench-")
    for name, m, x, loop in cases:
        m.eval()
        model, med, lo = timed(lambda: hloscope.export(m, x, loop=loop),
                               a.repeats)
        cols = [f"{fmt(med)} ({fmt(lo).strip()})"]
        for fn in (lambda: torch.fx.symbolic_trace(m),
                   lambda: torch.jit.trace(m, x, check_trace=False)):
            try:
                with torch.no_grad():
                    _, fm, fl = timed(fn, a.repeats)
                cols.append(f"{fmt(fm)} ({fmt(fl).strip()})")
            except Exception as e:  # a trace that cannot handle the module
                cols.append(f"{'fails: ' + type(e).__name__:>22}")
        path = os.path.join(tmp, name.replace(" ", "_") + ".json")
        comp = compile_time(a.bin, model, path, a.repeats)
        ops = sum(len(b.get("ops", b.get("block", {}).get("ops", [])))
                  for b in model["layers"])
        how = "concrete" if "concrete" in model["description"] else \
            "symbolic"
        print(f"{name:32} {cols[0]:>22} {cols[1]:>22} {cols[2]:>22} "
              f"{fmt(comp):>18} {ops:5d}  {how}")


def main():
    warnings.simplefilter("ignore")  # jit.trace warns about the structure check
    ap = argparse.ArgumentParser()
    ap.add_argument("bin", nargs="?", default=os.path.join(HERE, "..",
                                                           "build",
                                                           "hloscope"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vision-only", action="store_true",
                    help="only the vision table (export, run, eager)")
    ap.add_argument("--traces-only", action="store_true",
                    help="only the table of traces and compiles")
    a = ap.parse_args()
    torch.manual_seed(0)
    if not a.traces_only:
        vision(a, tempfile.mkdtemp(prefix="hs-export-bench-"))
    if not a.vision_only:
        traces(a)


if __name__ == "__main__":
    main()
